/*
 * test_plugins.c: the plugin supervisor, the task driver and the CSI
 * manager, end to end: the real three processes in spawn mode, the real
 * sample plugin (berth-csi-hostpath) run as exec and as privileged tasks
 * from allocation files, judged from what the supervisor's API reports:
 * its typed events (task and plugin events) and the CSI manager's view of
 * the registry (GET /v1/plugin/<id>).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "svtest.h"

/* A string field of a JSON object, "" when absent. */
static const char *
jstr(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : "";
}

/* An alloc running berth-csi-hostpath as an exec task. */
static void
hostpath_alloc(struct berth *b, const char *file, const char *alloc,
    const char *id, const char *type, const char *timeout, const char *faults)
{
	char text[4096];

	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"%s\", \"args\": [\"--node-id\", \"n1\", \"--state-dir\", "
	    "\"state\", \"--mode\", \"%s\"%s]}, \"csi_plugin\": {\"id\": "
	    "\"%s\", \"type\": \"%s\", \"health_timeout\": \"%s\"}}]}", alloc,
	    harness_bin("berth-csi-hostpath"), type, faults ? faults : "", id,
	    type, timeout);
	/* Renamed into place, as an operator's tool would. */
	berth_alloc(b, file, text);
}

/* Optional fields left out, unknown capability types: healthy anyway. */
START_TEST(minimal_plugin_is_healthy_and_fingerprinted)
{
	struct berth b;
	json_t *in;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "minimal", "monolith", "10s",
	    ", \"--fault-minimal\"");
	wait_event(&b, "PluginHealthy", "a1/plugin", "plugin minimal "
	    "(hostpath.csi.berth.dev (no version)) registered as controller "
	    "and node", 10000);
	in = wait_instance(&b, "minimal", "node", "a1", true, 10000);
	ck_assert_str_eq(jstr(in, "health"), "healthy: node id n1, max "
	    "volumes unlimited, topology {}, stages volumes");
	json_decref(in);
	json_decref(wait_instance(&b, "minimal", "controller", "a1", true,
	    10000));
	ck_assert_int_eq(count_events(&b, "PluginUnhealthy", NULL, NULL), 0);
	berth_stop(&b);
}
END_TEST

/* No socket ever: after health_timeout the task is restarted, with why. */
START_TEST(health_timeout_restarts_the_task)
{
	struct berth b;
	char path[1024], text[1024];

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	snprintf(path, sizeof(path), "%s/mute.json", b.allocs);
	snprintf(text, sizeof(text), "{\"id\": \"mute\", \"tasks\": [{"
	    "\"name\": \"plugin\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/sleep\", \"args\": [\"600\"]}, "
	    "\"kill_timeout\": \"1s\", \"csi_plugin\": {\"id\": \"mute\", "
	    "\"type\": \"node\", \"health_timeout\": \"1s\"}}]}");
	harness_write(path, text);
	wait_event(&b, "PluginUnhealthy", "mute/plugin", "plugin mute was not "
	    "healthy within 1s (health_timeout); the last probe: no socket at ",
	    10000);
	wait_event(&b, "Terminated", "mute/plugin", "was killed by signal 15 "
	    "(SIGTERM) (restarted by berth)", 10000);
	ck_assert_int_ge(task_pids(&b, NULL), 1);
	/* Started again after the restart backoff. */
	for (int i = 0; i < 50 && task_pids(&b, NULL) < 2; i++)
		usleep(100000);
	ck_assert_int_ge(task_pids(&b, NULL), 2);
	remove_alloc(&b, "mute.json");
	wait_event(&b, "AllocStopped", "mute", NULL, 10000);
	wait_alloc(&b, "mute", NULL, 5000);
	berth_stop(&b);
}
END_TEST

/*
 * One probe slower than its deadline is logged, not reported; steady
 * failures are reported once, as one PluginUnhealthy event.
 */
START_TEST(one_slow_probe_does_not_flap)
{
	struct berth b;

	berth_config(&b, "300ms", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "slow", "node", "10s",
	    ", \"--fault-slow-probe\", \"4:1300\", "
	    "\"--fault-probe-fail-after\", \"10\"");
	wait_event(&b, "PluginHealthy", "a1/plugin", NULL, 10000);
	/*
	 * Log wording kept: a slow probe is logged and deliberately not an
	 * event, so the log line is the feature under test here.
	 */
	wait_log(&b, "probe failed (1 in a row, unhealthy at 2)", 10000);
	/* Not reported: no event when the slow probe is logged. */
	ck_assert_int_eq(count_events(&b, "PluginUnhealthy", "a1/plugin",
	    NULL), 0);
	wait_event(&b, "PluginUnhealthy", "a1/plugin", "plugin slow: 2 probes "
	    "in a row failed", 15000);
	usleep(1500000);
	ck_assert_int_eq(count_events(&b, "PluginUnhealthy", "a1/plugin",
	    NULL), 1);
	ck_assert_int_eq(count_events(&b, "PluginHealthy", "a1/plugin", NULL),
	    1);
	berth_stop(&b);
}
END_TEST

/* A crash: an event, deregistered, started again, healthy again. */
START_TEST(crash_gives_event_and_restart)
{
	struct berth b;
	pid_t first, second;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "hp", "node", "10s", NULL);
	json_decref(wait_instance(&b, "hp", "node", "a1", true, 10000));
	ck_assert_int_eq(task_pids(&b, &first), 1);
	ck_assert_int_eq(kill(first, SIGKILL), 0);
	wait_event(&b, "Terminated", "a1/plugin", "was killed by signal 9 "
	    "(SIGKILL)", 5000);
	/* Deregistered: the CSI manager follows no instance of it. */
	ck_assert_ptr_null(wait_instance(&b, "hp", "node", NULL, false, 5000));
	for (int i = 0; i < 50 && task_pids(&b, &second) < 2; i++)
		usleep(100000);
	ck_assert_int_eq(task_pids(&b, &second), 2);
	ck_assert_int_ne(first, second);
	for (int i = 0; i < 50 && count_events(&b, "PluginHealthy",
	    "a1/plugin", NULL) < 2; i++)
		usleep(100000);
	ck_assert_int_eq(count_events(&b, "PluginHealthy", "a1/plugin", NULL),
	    2);
	json_decref(wait_instance(&b, "hp", "node", "a1", true, 10000));
	berth_stop(&b);
}
END_TEST

/* Two allocs of one plugin: the newer is active; stop it, the older is. */
START_TEST(newer_alloc_stopped_older_active_at_once)
{
	struct berth b;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "old.json", "old", "hp", "monolith", "10s", NULL);
	json_decref(wait_instance(&b, "hp", "node", "old", true, 10000));
	hostpath_alloc(&b, "new.json", "new", "hp", "monolith", "10s", NULL);
	json_decref(wait_instance(&b, "hp", "node", "new", false, 10000));
	json_decref(wait_instance(&b, "hp", "controller", "new", false,
	    10000));
	remove_alloc(&b, "new.json");
	json_decref(wait_instance(&b, "hp", "node", "old", false, 10000));
	json_decref(wait_instance(&b, "hp", "controller", "old", false,
	    10000));
	wait_event(&b, "AllocStopped", "new", NULL, 10000);
	/* A monolith deregisters both: then no instance is left of either. */
	remove_alloc(&b, "old.json");
	ck_assert_ptr_null(wait_instance(&b, "hp", "node", NULL, false,
	    10000));
	ck_assert_ptr_null(wait_instance(&b, "hp", "controller", NULL, false,
	    10000));
	wait_event(&b, "AllocStopped", "old", NULL, 10000);
	berth_stop(&b);
}
END_TEST

/*
 * The supervisor killed with SIGKILL and started again: the plugin is
 * adopted, not restarted; it is registered once more, with no new task
 * event.
 */
START_TEST(supervisor_sigkill_readopts_plugins)
{
	struct berth b;
	json_t *a, *t;
	pid_t pid, again;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "hp", "monolith", "10s", NULL);
	json_decref(wait_instance(&b, "hp", "node", "a1", true, 10000));
	ck_assert_int_eq(task_pids(&b, &pid), 1);
	berth_kill(&b);
	ck_assert(pid_alive(pid));
	berth_start(&b);
	/*
	 * Log wording kept: a re-registration after adoption is deliberately
	 * no event (that is what is tested), so only the log shows it.
	 */
	wait_log(&b, "re-registered as controller and node after adoption",
	    10000);
	json_decref(wait_instance(&b, "hp", "node", "a1", true, 10000));
	json_decref(wait_instance(&b, "hp", "controller", "a1", true, 10000));
	/* Adopted: the same pid, not started again, no restart. */
	a = sv_get(&b, "/v1/allocation/a1");
	ck_assert_ptr_nonnull(a);
	t = json_array_get(json_object_get(a, "tasks"), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(t, "pid")), pid);
	ck_assert_int_eq(json_integer_value(json_object_get(t, "restarts")),
	    0);
	ck_assert_str_eq(jstr(t, "state"), "running");
	json_decref(a);
	ck_assert_int_eq(task_pids(&b, &again), 0);
	ck_assert_int_eq(count_events(&b, "PluginHealthy", "a1/plugin", NULL),
	    0);
	ck_assert_int_eq(count(&b, "re-registered"), 1);
	usleep(2500000);	/* a resync later, still once */
	ck_assert_int_eq(count(&b, "re-registered"), 1);
	ck_assert_int_eq(count_events(&b, "PluginUnhealthy", NULL, NULL), 0);
	json_decref(wait_instance(&b, "hp", "node", "a1", true, 1));
	json_decref(wait_instance(&b, "hp", "controller", "a1", true, 1));
	ck_assert(pid_alive(pid));
	harness_track_pid(pid);
	remove_alloc(&b, "a1.json");
	wait_event(&b, "AllocStopped", "a1", NULL, 10000);
	ck_assert(pid_wait_gone(pid, 3000));
	berth_stop(&b);
}
END_TEST

/* A privileged plugin, defined by root, started by the mounter. */
START_TEST(privileged_plugin_through_the_mounter)
{
	struct berth b;
	char extra[600], path[1024], text[2048];
	json_t *in;
	/* Root's plugin definitions, in a directory of their own. */
	char *defs = harness_tmpdir("plugindefs");

	snprintf(path, sizeof(path), "%s/hostpath.conf", defs);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n9\n"
	    "arg --state-dir\narg %s/state\narg --mode\narg node\n",
	    harness_bin("berth-csi-hostpath"), defs);
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s\"", defs);
	berth_config(&b, "1s", extra);
	berth_start(&b);
	snprintf(path, sizeof(path), "%s/p.json", b.allocs);
	harness_write(path, "{\"id\": \"p\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hostpath\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"node\"}}]}");
	wait_event(&b, "PluginHealthy", "p/plugin", "plugin hp "
	    "(hostpath.csi.berth.dev", 10000);
	in = wait_instance(&b, "hp", "node", "p", true, 10000);
	ck_assert_msg(strncmp(jstr(in, "health"), "healthy: node id n9, ",
	    21) == 0, "%s", jstr(in, "health"));
	json_decref(in);
	task_pids(&b, NULL);
	remove_alloc(&b, "p.json");
	wait_event(&b, "AllocStopped", "p", NULL, 10000);
	berth_stop(&b);
	harness_rmtree(defs);
	free(defs);
}
END_TEST

/*
 * The endpoint as a flag, as most plugins take it: strict mode reads it
 * from --endpoint only, so health proves {csi_endpoint} became the socket
 * the plugin supervisor watches. $CSI_ENDPOINT is refused, with why.
 */
START_TEST(exec_plugin_endpoint_placeholder)
{
	struct berth b;
	char path[1024], text[1024];
	json_t *in;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "strict", "node", "10s",
	    ", \"--strict\", \"--endpoint={csi_endpoint}\"");
	wait_event(&b, "PluginHealthy", "a1/plugin", "plugin strict "
	    "(hostpath.csi.berth.dev", 10000);
	in = wait_instance(&b, "strict", "node", "a1", true, 10000);
	ck_assert_msg(strncmp(jstr(in, "health"), "healthy: node id n1, ",
	    21) == 0, "%s", jstr(in, "health"));
	json_decref(in);
	snprintf(path, sizeof(path), "%s/v.json", b.allocs);
	snprintf(text, sizeof(text), "{\"id\": \"v\", \"tasks\": [{"
	    "\"name\": \"plugin\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"%s\", \"args\": [\"--strict\", "
	    "\"--endpoint=$CSI_ENDPOINT\"]}, \"csi_plugin\": {\"id\": "
	    "\"v\", \"type\": \"node\"}}]}",
	    harness_bin("berth-csi-hostpath"));
	harness_write(path, text);
	wait_log(&b, "tasks[0].config.args[1]: \"--endpoint=$CSI_ENDPOINT\" "
	    "would reach the plugin as written: nothing expands variables; "
	    "for its socket write {csi_endpoint} (unix://PATH) or "
	    "{csi_socket} (PATH)", 10000);
	ck_assert_int_eq(count_events(&b, NULL, "v/plugin", NULL), 0);
	remove_alloc(&b, "a1.json");
	wait_event(&b, "AllocStopped", "a1", NULL, 10000);
	berth_stop(&b);
}
END_TEST

/* The same for a privileged plugin: root's definition, the mounter's path. */
START_TEST(privileged_plugin_endpoint_placeholder)
{
	struct berth b;
	char extra[600], path[1024], text[2048];
	json_t *in;
	char *defs = harness_tmpdir("plugindefs");

	snprintf(path, sizeof(path), "%s/strict.conf", defs);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n9\n"
	    "arg --state-dir\narg %s/state\narg --mode\narg node\n"
	    "arg --strict\narg --endpoint={csi_endpoint}\n",
	    harness_bin("berth-csi-hostpath"), defs);
	harness_write(path, text);
	snprintf(path, sizeof(path), "%s/var.conf", defs);
	snprintf(text, sizeof(text), "exec %s\narg --strict\n"
	    "arg --endpoint=${CSI_ENDPOINT}\n",
	    harness_bin("berth-csi-hostpath"));
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s\"", defs);
	berth_config(&b, "1s", extra);
	berth_start(&b);
	snprintf(path, sizeof(path), "%s/p.json", b.allocs);
	harness_write(path, "{\"id\": \"p\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"strict\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"node\"}}]}");
	wait_event(&b, "PluginHealthy", "p/plugin", "plugin hp "
	    "(hostpath.csi.berth.dev", 10000);
	in = wait_instance(&b, "hp", "node", "p", true, 10000);
	ck_assert_msg(strncmp(jstr(in, "health"), "healthy: node id n9, ",
	    21) == 0, "%s", jstr(in, "health"));
	json_decref(in);
	snprintf(path, sizeof(path), "%s/q.json", b.allocs);
	harness_write(path, "{\"id\": \"q\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"var\"}, \"csi_plugin\": {\"id\": \"q\", \"type\": "
	    "\"node\"}}]}");
	wait_event(&b, NULL, "q/plugin", "plugin definition var.conf line 3: "
	    "'--endpoint=${CSI_ENDPOINT}': nothing expands variables; write "
	    "{csi_endpoint} or {csi_socket}", 10000);
	remove_alloc(&b, "q.json");
	remove_alloc(&b, "p.json");
	wait_event(&b, "AllocStopped", "p", NULL, 10000);
	berth_stop(&b);
	harness_rmtree(defs);
	free(defs);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("plugins");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, minimal_plugin_is_healthy_and_fingerprinted);
	tcase_add_test(tc, health_timeout_restarts_the_task);
	tcase_add_test(tc, one_slow_probe_does_not_flap);
	tcase_add_test(tc, crash_gives_event_and_restart);
	tcase_add_test(tc, newer_alloc_stopped_older_active_at_once);
	tcase_add_test(tc, supervisor_sigkill_readopts_plugins);
	tcase_add_test(tc, privileged_plugin_through_the_mounter);
	tcase_add_test(tc, exec_plugin_endpoint_placeholder);
	tcase_add_test(tc, privileged_plugin_endpoint_placeholder);
	return harness_run("plugins", tc);
}
