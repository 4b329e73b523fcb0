/*
 * test_metrics.c: the supervisor's counters and histograms in
 * Prometheus' text format: labels escaped, series bounded, buckets
 * cumulative, plugin labels, a bind kept not an error, and the process'
 * own metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	metrics_csi_rpc_error("hp", "Probe", "UNAVAILABLE");
	metrics_csi_rpc_error("hp", "Probe", "UNAVAILABLE");
	metrics_csi_rpc_error("other-plugin", "Probe", "UNAVAILABLE");
	metrics_csi_rpc_error("hp", "NodeGetInfo", "INTERNAL");
	metrics_mount_op("prepare_task", "ok");
	/* A bind found in place (after a restart) is kept, not failed. */
	metrics_mount_op("bind_volume", "ERROR_CONFLICT");
	metrics_mount_op("bind_volume", "ERROR_PERMISSION");
	metrics_mount_op("bind \"x\"\\\n", "ok");
	text = page();
	ck_assert_ptr_nonnull(strstr(text, "# TYPE berth_csi_rpc_errors_total "
	    "counter\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_csi_rpc_errors_total{plugin="
	    "\"hp\",method=\"Probe\",code=\"UNAVAILABLE\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_csi_rpc_errors_total{plugin="
	    "\"other-plugin\",method=\"Probe\",code=\"UNAVAILABLE\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_csi_rpc_errors_total{plugin="
	    "\"hp\",method=\"NodeGetInfo\",code=\"INTERNAL\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_mount_operations_total{verb="
	    "\"bind_volume\",result=\"kept\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_mount_operations_total{verb="
	    "\"bind_volume\",result=\"ERROR_PERMISSION\"} 1\n"));
	ck_assert_ptr_null(strstr(text, "ERROR_CONFLICT"));
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
	metrics_probe_latency("hp", 0.2);		/* 0.0002 s */
	metrics_probe_latency("hp", 30);		/* 0.03 s */
	metrics_probe_latency("hp", 60000);	/* over every bound */
	metrics_probe_latency("other", 1);
	metrics_registry_write("put_handle", 3);
	text = page();
	ck_assert_ptr_nonnull(strstr(text, "# TYPE "
	    "berth_plugin_probe_duration_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"0.0005\",plugin="
	    "\"hp\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"0.025\",plugin="
	    "\"hp\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"0.05\",plugin="
	    "\"hp\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"10\",plugin="
	    "\"hp\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_bucket{le=\"+Inf\",plugin="
	    "\"hp\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_count{plugin=\"hp\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "berth_plugin_probe_duration_seconds_count{plugin=\"other\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_registry_write_duration_"
	    "seconds_bucket{le=\"0.005\",verb=\"put_handle\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "berth_registry_write_duration_"
	    "seconds_sum{verb=\"put_handle\"} 0.003\n"));
	free(text);
}
END_TEST

/* A number after "\nname " in text; -1 when the line is not there. */
static double
value(const char *text, const char *name)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "\n%s ", name);
	if ((p = strstr(text, key)) == NULL)
		return -1;
	return strtod(p + strlen(key), NULL);
}

START_TEST(process_metrics_are_this_process)
{
	struct evbuffer *b = evbuffer_new();
	volatile double spin = 0;
	struct timespec ts;
	char *text;
	size_t len;
	int fd, i;

	for (i = 0; i < 50000000; i++)		/* some CPU time */
		spin += i;
	(void)spin;
	ck_assert_int_ge(fd = dup(0), 0);
	metrics_write_process(b);
	len = evbuffer_get_length(b);
	ck_assert_ptr_nonnull(text = malloc(len + 1));
	evbuffer_remove(b, text, len);
	text[len] = '\0';
	evbuffer_free(b);
	ck_assert_ptr_nonnull(strstr(text, "# TYPE process_cpu_seconds_total "
	    "counter\n"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE "
	    "process_resident_memory_bytes gauge\n"));
	ck_assert_double_gt(value(text, "process_cpu_seconds_total"), 0);
	/* More than a megabyte, less than a gigabyte. */
	ck_assert_double_gt(value(text, "process_resident_memory_bytes"),
	    1 << 20);
	ck_assert_double_lt(value(text, "process_resident_memory_bytes"),
	    1 << 30);
	/* Started in the last minute, by the wall clock. */
	clock_gettime(CLOCK_REALTIME, &ts);
	ck_assert_double_le(value(text, "process_start_time_seconds"),
	    (double)ts.tv_sec + 2);
	ck_assert_double_gt(value(text, "process_start_time_seconds"),
	    (double)ts.tv_sec - 60);
	/* stdin..stderr and the dup, at least. */
	ck_assert_double_ge(value(text, "process_open_fds"), fd + 1);
	ck_assert_double_gt(value(text, "process_max_fds"), 0);
	close(fd);
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
	tcase_add_test(tc, process_metrics_are_this_process);
	return harness_run("metrics", tc);
}
