/*
 * test_config.c: the JSON config: defaults, every refusal, one line each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "config.h"
#include "harness.h"

static char *dir;
static char path[512];

static void
setup(void)
{
	dir = harness_tmpdir("config");
	snprintf(path, sizeof(path), "%s/berth.json", dir);
}

static void
teardown(void)
{
	harness_rmtree(dir);
	free(dir);
}

/* Load text as the config; return 0 or -1 and the error in err. */
static int
load(const char *text, struct berth_config *cfg, char *err, size_t n)
{
	harness_write(path, text);
	return config_load(path, cfg, err, n);
}

START_TEST(defaults_and_overrides)
{
	struct berth_config cfg;
	char err[512];

	ck_assert_int_eq(load("{}", &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.data_dir, "/var/lib/berth");
	ck_assert_str_eq(cfg.run_dir, "/run/berth");
	ck_assert_str_eq(cfg.user, "berth");
	ck_assert_str_eq(cfg.registry_user, "berth-registry");
	config_free(&cfg);
	ck_assert_int_eq(load("{\"data_dir\": \"/srv/b\", \"user\": \"u1\", "
	    "\"log_level\": \"debug\"}", &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.data_dir, "/srv/b");
	ck_assert_str_eq(cfg.user, "u1");
	ck_assert_str_eq(cfg.log_level, "debug");
	config_free(&cfg);
}
END_TEST

START_TEST(durations_and_lists)
{
	struct berth_config cfg;
	char err[512];

	ck_assert_int_eq(load("{}", &cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.plugin_heartbeat_ms, 30000);
	ck_assert_int_eq(cfg.plugin_retry_initial_ms, 5000);
	ck_assert_int_eq(cfg.plugin_retry_max_ms, 120000);
	ck_assert_int_eq(cfg.device_stats_interval_ms, 1000);
	ck_assert_int_eq(cfg.volume_stats_interval_ms, 60000);
	ck_assert_int_eq(cfg.volume_wait_ms, 120000);
	ck_assert_ptr_nonnull(cfg.driver_allow);
	ck_assert_ptr_null(cfg.driver_allow[0]);
	config_free(&cfg);
	ck_assert_int_eq(load("{\"plugin_heartbeat\": \"1m30s\", "
	    "\"driver_block\": [\"exec\", \"raw\"]}", &cfg, err,
	    sizeof(err)), 0);
	ck_assert_int_eq(cfg.plugin_heartbeat_ms, 90000);
	ck_assert_str_eq(cfg.driver_block[0], "exec");
	ck_assert_str_eq(cfg.driver_block[1], "raw");
	ck_assert_ptr_null(cfg.driver_block[2]);
	config_free(&cfg);
}
END_TEST

static void
refused(const char *text, const char *expect)
{
	struct berth_config cfg;
	char err[512];

	ck_assert_int_eq(load(text, &cfg, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, expect) != NULL, "error '%s' lacks '%s'",
	    err, expect);
	ck_assert_msg(strchr(err, '\n') == NULL, "error is not one line");
	ck_assert_ptr_null(cfg.data_dir);
}

/*
 * Who may use api.sock: berth-api unless a group is named; not the
 * supervisor's group, which reaches the helpers' sockets too.
 */
START_TEST(api_group)
{
	struct berth_config cfg;
	char err[512];

	ck_assert_int_eq(load("{}", &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.api_group, "berth-api");
	config_free(&cfg);
	ck_assert_int_eq(load("{\"api_group\": \"berth-operators\"}", &cfg,
	    err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.api_group, "berth-operators");
	config_free(&cfg);
	ck_assert_int_eq(load("{\"api_group\": 100}", &cfg, err,
	    sizeof(err)), -1);
	ck_assert_msg(strstr(err, "\"api_group\" must be a string") != NULL,
	    "%s", err);
}
END_TEST

/* Tasks' ids: systemd's DynamicUser range unless root names one. */
START_TEST(task_ids_and_cgroup_parent)
{
	static const char *const bad[] = { "0-10", "10-9", "10", "-5-10",
		"1-2147483648", "1-1000001", "1-10x", "a-b" };
	struct berth_config cfg;
	char err[512], doc[128];
	size_t i;

	ck_assert_int_eq(load("{}", &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.task_ids, "61184-65519");
	ck_assert_uint_eq(cfg.task_id_first, 61184);
	ck_assert_uint_eq(cfg.task_id_count, 65519 - 61184 + 1);
	ck_assert_str_eq(cfg.cgroup_parent, "/berth");
	config_free(&cfg);
	ck_assert_int_eq(load("{\"task_ids\": \"100000-100009\", "
	    "\"cgroup_parent\": \"/workloads/berth\"}", &cfg, err,
	    sizeof(err)), 0);
	ck_assert_uint_eq(cfg.task_id_first, 100000);
	ck_assert_uint_eq(cfg.task_id_count, 10);
	ck_assert_str_eq(cfg.cgroup_parent, "/workloads/berth");
	config_free(&cfg);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc), "{\"task_ids\": \"%s\"}", bad[i]);
		ck_assert_int_eq(load(doc, &cfg, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, "\"task_ids\" must be \"MIN-MAX\"")
		    != NULL, "%s: %s", bad[i], err);
	}
	ck_assert_int_eq(load("{\"cgroup_parent\": \"berth\"}", &cfg, err,
	    sizeof(err)), -1);
	ck_assert_msg(strstr(err, "\"cgroup_parent\" must be an absolute "
	    "path") != NULL, "%s", err);
}
END_TEST

START_TEST(refusals_say_what_to_change)
{
	char longdir[200];

	refused("{\"colour\": \"blue\"}", "unknown key \"colour\"");
	refused("{\"data_dir\": 5}", "\"data_dir\" must be a string");
	refused("{\"data_dir\": \"rel\"}", "must be an absolute path");
	refused("{\"data_dir\": \"/a/../b\"}", "without '..'");
	refused("{\"user\": \"\"}", "must not be empty");
	refused("{\"log_level\": \"loud\"}", "\"info\" or \"debug\"");
	refused("[1]", "top level must be a JSON object");
	refused("{\"user\": \"a\", \"user\": \"b\"}", "line 1");
	refused("{", "line 1");
	refused("{\"plugin_heartbeat\": 30}", "such as \"30s\"");
	refused("{\"plugin_heartbeat\": \"30\"}", "needs a unit");
	refused("{\"plugin_heartbeat\": \"5x\"}", "unknown unit \"x\"");
	refused("{\"plugin_heartbeat\": \"0s\"}", "longer than 0s");
	refused("{\"driver_allow\": \"exec\"}", "must be an array");
	refused("{\"driver_allow\": [\"\"]}", "[0] must be a non-empty");
	refused("{\"driver_allow\": [\"a\", 1]}", "[1] must be a non-empty");
	refused("{\"driver_allow\": [\"a\", \"a\"]}", "names \"a\" twice");
	memset(longdir, 'd', sizeof(longdir));
	longdir[0] = '/';
	memcpy(longdir + sizeof(longdir) - 1, "", 1);
	{
		char text[400];

		snprintf(text, sizeof(text), "{\"run_dir\": \"%.100s\"}",
		    longdir);
		refused(text, "over the 107-byte limit");
		snprintf(text, sizeof(text), "{\"data_dir\": \"%.60s\"}",
		    longdir);
		refused(text, "choose a shorter \"data_dir\"");
	}
}
END_TEST

START_TEST(missing_file_is_named)
{
	struct berth_config cfg;
	char err[512];

	ck_assert_int_eq(config_load("/nonexistent/berth.json", &cfg, err,
	    sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot read config "
	    "/nonexistent/berth.json"));
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("config");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults_and_overrides);
	tcase_add_test(tc, durations_and_lists);
	tcase_add_test(tc, api_group);
	tcase_add_test(tc, task_ids_and_cgroup_parent);
	tcase_add_test(tc, refusals_say_what_to_change);
	tcase_add_test(tc, missing_file_is_named);
	return harness_run("config", tc);
}
