/*
 * test_plugins.c: the plugin supervisor, the task driver and the CSI
 * manager, end to end: the real three processes in spawn mode, the real
 * sample plugin (berth-csi-hostpath) run as exec and as privileged tasks
 * from allocation files, judged from what the supervisor's API reports:
 * its typed events (task and plugin events), the CSI manager's view of
 * the registry (GET /v1/plugin/<id>, /v1/plugins), /v1/health and
 * /v1/metrics.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "http.h"
#include "svtest.h"

/* A string field of a JSON object, "" when absent. */
static const char *
jstr(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : "";
}

/*
 * An alloc running berth-csi-hostpath as an exec task, sandboxed, strict
 * (its endpoint from --endpoint, one staging path per volume, no
 * optional reply field); faults: more args (", \"--x\"") or NULL.
 */
static void
hostpath_alloc(struct berth *b, const char *file, const char *alloc,
    const char *id, const char *type, const char *timeout, const char *faults)
{
	char text[4096];

	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"%s\", \"args\": [\"--node-id\", \"n1\", \"--state-dir\", "
	    "\"state\", \"--mode\", \"%s\", \"--strict\", "
	    "\"--endpoint={csi_endpoint}\"%s]}, \"csi_plugin\": {\"id\": "
	    "\"%s\", \"type\": \"%s\", \"health_timeout\": \"%s\"}, "
	    "\"restart\": {\"delay\": \"1s\"}}]}", alloc,
	    sv_sandbox_bin("berth-csi-hostpath"), type, faults ? faults : "",
	    id, type, timeout);
	/* Renamed into place, as an operator's tool would. */
	berth_alloc(b, file, text);
}

/* GET /v1/metrics: its text, or "" when it does not answer 200. */
static void
metrics_text(struct berth *b, char *buf, size_t n)
{
	struct http_response resp;
	char why[600];

	buf[0] = '\0';
	if (http_request(b->sock, "GET", "/v1/metrics", NULL, 0, 5000, &resp,
	    why, sizeof(why)) != 0)
		return;
	if (resp.status == 200)
		snprintf(buf, n, "%s", resp.body);
	http_response_free(&resp);
}

/* Plugin id in GET /v1/plugins, or NULL (json_decref the list). */
static json_t *
listed_plugin(struct berth *b, const char *id, json_t **list)
{
	json_t *p;
	size_t i;

	*list = sv_get(b, "/v1/plugins");
	ck_assert_ptr_nonnull(*list);
	json_array_foreach(json_object_get(*list, "plugins"), i, p)
		if (strcmp(jstr(p, "id"), id) == 0)
			return p;
	return NULL;
}

/*
 * What an operator sees of plugin hp (a monolith of alloc a1) within ms:
 * /v1/plugins, /v1/plugin/hp with both instances, /v1/health and
 * berth_plugin_healthy all agree on healthy, and say why when not.
 */
static void
wait_seen(struct berth *b, bool healthy, int ms)
{
	char metrics[65536], line[200];
	json_t *list, *p, *h;
	int i, status = 0;
	size_t k;
	bool ok = false;

	snprintf(line, sizeof(line), "berth_plugin_healthy{plugin=\"hp\","
	    "type=\"node\",alloc=\"a1\"} %d\n", healthy);
	for (i = 0; i < ms / 100 && !ok; i++) {
		if (i > 0)
			usleep(100000);
		p = listed_plugin(b, "hp", &list);
		ok = p != NULL && json_is_true(json_object_get(p, "healthy")) ==
		    healthy;
		json_decref(list);
		h = sv_api(b, "GET", "/v1/health", NULL, &status);
		ok = ok && status == (healthy ? 200 : 503) && (healthy ||
		    strstr(jstr(h, "error"), "plugin hp (alloc a1) is "
		    "unhealthy: its heartbeat failed: 2 probes in a row "
		    "failed") != NULL);
		json_decref(h);
		metrics_text(b, metrics, sizeof(metrics));
		ok = ok && strstr(metrics, line) != NULL;
	}
	ck_assert_msg(ok, "plugin hp not seen %s within %d ms: health %d, "
	    "metrics:\n%s", healthy ? "healthy" : "unhealthy", ms, status,
	    metrics);
	json_decref(wait_instance(b, "hp", "node", "a1", healthy, 1));
	json_decref(wait_instance(b, "hp", "controller", "a1", healthy, 1));
	p = sv_get(b, "/v1/plugin/hp");
	ck_assert_ptr_nonnull(p);
	ck_assert(json_is_true(json_object_get(p, "healthy")) == healthy);
	json_array_foreach(json_object_get(p, "instances"), k, h)
		ck_assert_msg(healthy ? strncmp(jstr(h, "health"), "healthy: ",
		    9) == 0 : strstr(jstr(h, "health"), "its heartbeat "
		    "failed") != NULL, "%s", jstr(h, "health"));
	/* What GetPluginInfo said, whatever the health. */
	ck_assert_str_eq(jstr(p, "provider"), "hostpath.csi.berth.dev");
	ck_assert_str_eq(jstr(p, "version"), "0.1.0");
	json_decref(p);
}

/*
 * A frozen plugin fails its heartbeats: unhealthy everywhere an operator
 * looks (plugin list and status, /v1/health, the metrics), and volume
 * work waits for it with a clear error, at once; healthy again
 * everywhere once it runs again, and volume work goes through.
 */
#define VOLUME "{\"plugin_id\": \"hp\", \"access_mode\": " \
    "\"single-node-writer\", \"attachment_mode\": \"file-system\"}"

START_TEST(frozen_plugin_unhealthy_everywhere)
{
	struct berth b;
	int64_t t0;
	json_t *j;
	int status;
	pid_t pid;

	berth_config(&b, "300ms", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "hp", "monolith", "10s", NULL);
	json_decref(wait_instance(&b, "hp", "node", "a1", true, 10000));
	json_decref(wait_instance(&b, "hp", "controller", "a1", true, 10000));
	wait_seen(&b, true, 1000);
	ck_assert_int_eq(task_pids(&b, &pid), 1);
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	wait_event(&b, "PluginUnhealthy", "a1/plugin", "2 probes in a row "
	    "failed", 10000);
	wait_seen(&b, false, 2000);
	/* Volume work waits for it, saying why, instead of calling it. */
	t0 = http_now_ms();
	j = sv_api(&b, "PUT", "/v1/volume/v9/create", VOLUME, &status);
	ck_assert_int_eq(status, 503);
	ck_assert_msg(strstr(jstr(j, "error"), "plugin hp: its controller "
	    "instance (alloc a1) is unhealthy: its heartbeat failed") != NULL,
	    "%s", jstr(j, "error"));
	json_decref(j);
	ck_assert_int_lt(http_now_ms() - t0, 2000);
	/* Resyncs come and go (2 s here): still unhealthy. */
	usleep(2500000);
	wait_seen(&b, false, 100);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	wait_event(&b, "PluginHealthy", "a1/plugin", "healthy again", 10000);
	wait_seen(&b, true, 10000);
	j = sv_api(&b, "PUT", "/v1/volume/v9/create", VOLUME, &status);
	ck_assert_msg(status == 200, "%d %s", status, jstr(j, "error"));
	json_decref(j);
	j = sv_api(&b, "DELETE", "/v1/volume/v9", NULL, &status);
	ck_assert_msg(status == 200, "%d %s", status, jstr(j, "error"));
	json_decref(j);
	remove_alloc(&b, "a1.json");
	wait_event(&b, "AllocStopped", "a1", NULL, 10000);
	berth_stop(&b);
}
END_TEST

/*
 * An allocation whose volume's plugin is frozen waits for it no longer
 * than volume_wait: then it fails, saying that it gave up, which plugin
 * and that it is unhealthy; its task never starts.
 */
START_TEST(volumes_wait_no_longer_than_volume_wait)
{
	struct berth b;
	const char *why;
	int64_t t0;
	json_t *j;
	int status;
	pid_t pid;

	berth_config(&b, "300ms", ", \"volume_wait\": \"3s\"");
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "hp", "monolith", "10s", NULL);
	json_decref(wait_instance(&b, "hp", "node", "a1", true, 10000));
	json_decref(wait_instance(&b, "hp", "controller", "a1", true, 10000));
	j = sv_api(&b, "PUT", "/v1/volume/v9/create", VOLUME, &status);
	ck_assert_msg(status == 200, "%d %s", status, jstr(j, "error"));
	json_decref(j);
	ck_assert_int_eq(task_pids(&b, &pid), 1);
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	wait_event(&b, "PluginUnhealthy", "a1/plugin", "2 probes in a row "
	    "failed", 10000);
	t0 = http_now_ms();
	berth_alloc(&b, "u.json", "{\"id\": \"u\", \"volumes\": {\"d\": "
	    "{\"type\": \"csi\", \"source\": \"v9\", \"access_mode\": "
	    "\"single-node-writer\", \"attachment_mode\": \"file-system\"}}, "
	    "\"tasks\": [{\"name\": \"t\", \"driver\": \"exec\", "
	    "\"config\": {\"command\": \"/bin/sleep\", \"args\": "
	    "[\"600\"]}, \"volume_mounts\": [{\"volume\": \"d\", "
	    "\"destination\": \"d\"}]}]}");
	wait_event(&b, "AllocFailed", "u", "volumes: waited 3s (volume_wait) "
	    "and gave up: plugin hp: its ", 15000);
	ck_assert_int_ge(http_now_ms() - t0, 2900);
	wait_alloc(&b, "u", "failed", 5000);
	j = sv_get(&b, "/v1/allocation/u");
	ck_assert_ptr_nonnull(j);
	why = jstr(j, "reason");
	ck_assert_msg(strstr(why, "(alloc a1) is unhealthy: its heartbeat "
	    "failed") != NULL, "%s", why);
	json_decref(j);
	ck_assert_int_eq(count_events(&b, "Started", "u/t", NULL), 0);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	wait_event(&b, "PluginHealthy", "a1/plugin", "healthy again", 10000);
	/* Each instance is probed on its own: the delete needs the
	 * controller's, which may answer a probe after the node's. */
	json_decref(wait_instance(&b, "hp", "controller", "a1", true, 10000));
	remove_alloc(&b, "u.json");
	j = sv_api(&b, "DELETE", "/v1/volume/v9", NULL, &status);
	ck_assert_msg(status == 200, "%d %s", status, jstr(j, "error"));
	json_decref(j);
	remove_alloc(&b, "a1.json");
	wait_event(&b, "AllocStopped", "a1", NULL, 10000);
	berth_stop(&b);
}
END_TEST

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
	    "volumes unlimited, topology {}, stages volumes, sets the mount "
	    "group");
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
	    "\"kill_timeout\": \"1s\", \"restart\": {\"delay\": \"1s\"}, "
	    "\"csi_plugin\": {\"id\": \"mute\", "
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

/* Two allocs of one plugin: the newer is active; stop it, the older is,
 * with the provider and version it registered. */
START_TEST(newer_alloc_stopped_older_active_at_once)
{
	struct berth b;
	json_t *p, *list;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "old.json", "old", "hp", "monolith", "10s", NULL);
	json_decref(wait_instance(&b, "hp", "node", "old", true, 10000));
	hostpath_alloc(&b, "new.json", "new", "hp", "monolith", "10s", NULL);
	json_decref(wait_instance(&b, "hp", "node", "new", false, 10000));
	json_decref(wait_instance(&b, "hp", "controller", "new", false,
	    10000));
	p = sv_get(&b, "/v1/plugin/hp");
	ck_assert_str_eq(jstr(p, "provider"), "hostpath.csi.berth.dev");
	ck_assert_str_eq(jstr(p, "version"), "0.1.0");
	json_decref(p);
	remove_alloc(&b, "new.json");
	json_decref(wait_instance(&b, "hp", "node", "old", true, 10000));
	json_decref(wait_instance(&b, "hp", "controller", "old", true,
	    10000));
	wait_event(&b, "AllocStopped", "new", NULL, 10000);
	/* Promoted back: provider and version as the old alloc registered. */
	p = listed_plugin(&b, "hp", &list);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(jstr(p, "provider"), "hostpath.csi.berth.dev");
	ck_assert_str_eq(jstr(p, "version"), "0.1.0");
	json_decref(list);
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
	    "arg --state-dir\narg %s/state\narg --mode\narg node\n"
	    "arg --strict\narg --endpoint={csi_endpoint}\n",
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

/* A small file's text ("" when it cannot be read). */
static void
read_file(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t got = 0;

	if (f != NULL) {
		got = fread(buf, 1, n - 1, f);
		fclose(f);
	}
	buf[got] = '\0';
}

/* The message of the last PluginHealthy event of alloc/task who. */
static void
last_healthy(struct berth *b, const char *who, char *buf, size_t n)
{
	json_t *all = sv_get(b, "/v1/events?index=0"), *e;
	char subject[200];
	size_t i;

	ck_assert_ptr_nonnull(all);
	buf[0] = '\0';
	json_array_foreach(json_object_get(all, "events"), i, e) {
		snprintf(subject, sizeof(subject), "%s/%s", jstr(e, "alloc"),
		    jstr(e, "task"));
		if (strcmp(jstr(e, "type"), "PluginHealthy") == 0 &&
		    strcmp(subject, who) == 0)
			snprintf(buf, n, "%s", jstr(e, "message"));
	}
	json_decref(all);
}

/*
 * A privileged plugin killed (so that it leaves its socket) is started
 * again over no socket: the mounter removed the dead run's before the
 * start (the plugin's wrapper tells on its stderr whether one was
 * there). Its timing counts from the socket the new run made: no more
 * than since the kill.
 */
START_TEST(restarted_plugin_over_no_leftover_socket)
{
	struct berth b;
	char extra[600], path[1024], text[2048], msg[1400], log[4096];
	int64_t killed;
	double sock_ms;
	const char *at;
	pid_t first, second;
	char *defs = harness_tmpdir("plugindefs");

	snprintf(path, sizeof(path), "%s/wrap.sh", defs);
	snprintf(text, sizeof(text), "#!/bin/sh\ns=${CSI_ENDPOINT#unix://}\n"
	    "if [ -e \"$s\" ]; then echo \"start: a socket was left\" >&2; "
	    "else echo \"start: no socket left\" >&2; fi\nexec %s \"$@\"\n",
	    harness_bin("berth-csi-hostpath"));
	harness_write(path, text);
	snprintf(path, sizeof(path), "%s/hostpath.conf", defs);
	/* By the shell: a script cannot be run from a descriptor. */
	snprintf(text, sizeof(text), "exec /bin/sh\narg %s/wrap.sh\n"
	    "arg --node-id\narg n9\narg --state-dir\narg %s/state\n"
	    "arg --mode\narg node\narg --strict\n"
	    "arg --endpoint={csi_endpoint}\n", defs, defs);
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s\"", defs);
	berth_config(&b, "1s", extra);
	berth_start(&b);
	snprintf(path, sizeof(path), "%s/p.json", b.allocs);
	harness_write(path, "{\"id\": \"p\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hostpath\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"node\"}, \"restart\": {\"delay\": \"1s\"}}]}");
	json_decref(wait_instance(&b, "hp", "node", "p", true, 10000));
	ck_assert_int_eq(task_pids(&b, &first), 1);
	killed = http_now_ms();
	ck_assert_int_eq(kill(first, SIGKILL), 0);
	wait_event(&b, "Terminated", "p/plugin", NULL, 5000);
	for (int i = 0; i < 100 && count_events(&b, "PluginHealthy",
	    "p/plugin", NULL) < 2; i++)
		usleep(100000);
	ck_assert_int_eq(count_events(&b, "PluginHealthy", "p/plugin", NULL),
	    2);
	ck_assert_int_eq(task_pids(&b, &second), 2);
	ck_assert_int_ne(first, second);
	snprintf(path, sizeof(path), "%s/data/logs/+live/p/hostpath/"
	    "stderr.log", b.dir);
	read_file(path, log, sizeof(log));
	ck_assert_msg(strstr(log, "a socket was left") == NULL &&
	    strstr(log, "start: no socket left") != NULL && strstr(strstr(log,
	    "start: no socket left") + 1, "start: no socket left") != NULL,
	    "%s", log);
	last_healthy(&b, "p/plugin", msg, sizeof(msg));
	ck_assert_ptr_nonnull(at = strstr(msg, "; healthy "));
	ck_assert_ptr_nonnull(strstr(msg, "ms after its socket appeared"));
	sock_ms = strtod(at + 10, NULL);
	/* The socket is the new run's: younger than the kill. */
	ck_assert_msg(sock_ms <= (double)(http_now_ms() - killed), "%s", msg);
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
	hostpath_alloc(&b, "a1.json", "a1", "strict", "node", "10s", NULL);
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
	    sv_sandbox_bin("berth-csi-hostpath"));
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
	tcase_add_test(tc, volumes_wait_no_longer_than_volume_wait);
	tcase_add_test(tc, health_timeout_restarts_the_task);
	tcase_add_test(tc, one_slow_probe_does_not_flap);
	tcase_add_test(tc, frozen_plugin_unhealthy_everywhere);
	tcase_add_test(tc, crash_gives_event_and_restart);
	tcase_add_test(tc, newer_alloc_stopped_older_active_at_once);
	tcase_add_test(tc, supervisor_sigkill_readopts_plugins);
	tcase_add_test(tc, privileged_plugin_through_the_mounter);
	tcase_add_test(tc, restarted_plugin_over_no_leftover_socket);
	tcase_add_test(tc, exec_plugin_endpoint_placeholder);
	tcase_add_test(tc, privileged_plugin_endpoint_placeholder);
	return harness_run("plugins", tc);
}
