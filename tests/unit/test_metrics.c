/*
 * test_metrics.c: the supervisor's counters and histograms in
 * Prometheus' text format: labels escaped, series bounded, buckets
 * cumulative.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <event2/buffer.h>

#include "harness.h"
#include "metrics.h"

/* The page as text; free() it. */
static char *
page(void)
{
	struct evbuffer *b = evbuffer_new();
	size_t len;
	char *text;

	metrics_write(b);
	len = evbuffer_get_length(b);
	ck_assert_ptr_nonnull(text = malloc(len + 1));
	evbuffer_remove(b, text, len);
	text[len] = '\0';
	evbuffer_free(b);
	return text;
}

START_TEST(counters_by_labels)
{
	char *text;

	metrics_reset();
	metrics_csi_rpc_error("Probe", "UNAVAILABLE");
	metrics_csi_rpc_error("Probe", "UNAVAILABLE");
	metrics_csi_rpc_error("NodeGetInfo", "INTERNAL");
	metrics_mount_op("prepare_task", "ok");
	metrics_mount_op("bind \"x\"\\\n", "ok");
	text = page();
	ck_assert_ptr_nonnull(strstr(text, "# TYPE berth_csi_rpc_errors_total "
	    "counter\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_csi_rpc_errors_total{method="
	    "\"Probe\",code=\"UNAVAILABLE\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_csi_rpc_errors_total{method="
	    "\"NodeGetInfo\",code=\"INTERNAL\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_mount_operations_total{verb="
	    "\"prepare_task\",result=\"ok\"} 1\n"));
	/* Quotes, backslashes and newlines escaped as the format says. */
	ck_assert_msg(strstr(text, "{verb=\"bind \\\"x\\\"\\\\\\n\","
	    "result=\"ok\"} 1\n") != NULL, "%s", text);
	free(text);
}
END_TEST

START_TEST(series_are_bounded)
{
	char verb[32], *text, *p;
	int i, n = 0;

	metrics_reset();
	for (i = 0; i < METRICS_SERIES_MAX + 20; i++) {
		snprintf(verb, sizeof(verb), "verb%d", i);
		metrics_mount_op(verb, "ok");
	}
	text = page();
	for (p = text; (p = strstr(p, "berth_mount_operations_total{")) !=
	    NULL; p++)
		n++;
	ck_assert_int_eq(n, METRICS_SERIES_MAX);
	ck_assert_ptr_nonnull(strstr(text, "{verb=\"other\",result=\"other\"} "
	    "21\n"));
	free(text);
}
END_TEST

START_TEST(histograms_are_cumulative)
{
	char *text;

	metrics_reset();
	metrics_probe_latency(0.2);		/* 0.0002 s */
	metrics_probe_latency(30);		/* 0.03 s */
	metrics_probe_latency(60000);		/* over every bound */
	metrics_registry_write("put_handle", 3);
	text = page();
	ck_assert_ptr_nonnull(strstr(text, "# TYPE "
	    "berth_plugin_probe_duration_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"0.0005\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"0.025\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"0.05\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"10\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_count 3\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_registry_write_duration_"
	    "seconds_bucket{le=\"0.005\",verb=\"put_handle\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_registry_write_duration_"
	    "seconds_sum{verb=\"put_handle\"} 0.003\n"));
	free(text);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("metrics");

	tcase_add_test(tc, counters_by_labels);
	tcase_add_test(tc, series_are_bounded);
	tcase_add_test(tc, histograms_are_cumulative);
	return harness_run("metrics", tc);
}
