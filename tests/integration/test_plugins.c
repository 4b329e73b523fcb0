/*
 * test_plugins.c: the plugin supervisor, the task driver and the CSI
 * manager, end to end: the real three processes in spawn mode, the real
 * sample plugin (berth-csi-hostpath) run as exec and as privileged tasks
 * from allocation files, judged from the supervisor's log lines (task
 * events, registrations, the CSI manager's view of the registry).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <check.h>

#include "harness.h"

struct berth {
	char *dir;
	char cfg[512], allocs[512];
	struct proc sv;
	pid_t mounter, registry;
};

static void
berth_config(struct berth *b, const char *heartbeat, const char *extra)
{
	char text[2048];

	harness_private_mounts();
	/* Tasks outlive a killed supervisor: they come to us, and we reap. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	b->dir = harness_tmpdir("plugins");
	snprintf(b->cfg, sizeof(b->cfg), "%s/berth.json", b->dir);
	snprintf(b->allocs, sizeof(b->allocs), "%s/allocs", b->dir);
	ck_assert_int_eq(mkdir(b->allocs, 0755), 0);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\", \"alloc_dir\": \"%s\", "
	    "\"plugin_heartbeat\": \"%s\", \"plugin_resync\": \"2s\"%s}",
	    b->dir, b->dir, b->allocs, heartbeat, extra ? extra : "");
	harness_write(b->cfg, text);
}

static void
berth_start(struct berth *b)
{
	harness_start_berth(&b->sv, b->cfg, &b->mounter, &b->registry);
}

/* Every task pid the log names, tracked so that it dies with the test. */
static pid_t
task_pids(struct berth *b, pid_t *last)
{
	const char *p = b->sv.log, *key = "type=Started message=\"pid ";
	pid_t pid = 0;
	int n = 0;

	proc_drain(&b->sv);
	while ((p = strstr(p, key)) != NULL) {
		p += strlen(key);
		pid = (pid_t)atol(p);
		harness_track_pid(pid);
		n++;
	}
	if (last != NULL)
		*last = pid;
	return n;
}

static int
count(struct berth *b, const char *text)
{
	const char *p = b->sv.log;
	int n = 0;

	proc_drain(&b->sv);
	while ((p = strstr(p, text)) != NULL) {
		n++;
		p += strlen(text);
	}
	return n;
}

static void
wait_log(struct berth *b, const char *text, int ms)
{
	ck_assert_msg(proc_wait_log(&b->sv, text, ms), "no \"%s\" in:\n%s",
	    text, b->sv.log);
}

static void
berth_stop(struct berth *b)
{
	pid_t pid;

	task_pids(b, &pid);
	proc_kill(&b->sv);
	ck_assert(pid_wait_gone(b->mounter, 3000));
	ck_assert(pid_wait_gone(b->registry, 3000));
	harness_rmtree(b->dir);
	free(b->dir);
}

/* An alloc running berth-csi-hostpath as an exec task. */
static void
hostpath_alloc(struct berth *b, const char *file, const char *alloc,
    const char *id, const char *type, const char *timeout, const char *faults)
{
	char path[1024], text[4096];

	snprintf(path, sizeof(path), "%s/.%s.tmp", b->allocs, file);
	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"%s\", \"args\": [\"--node-id\", \"n1\", \"--state-dir\", "
	    "\"state\", \"--mode\", \"%s\"%s]}, \"csi_plugin\": {\"id\": "
	    "\"%s\", \"type\": \"%s\", \"health_timeout\": \"%s\"}}]}", alloc,
	    harness_bin("berth-csi-hostpath"), type, faults ? faults : "", id,
	    type, timeout);
	harness_write(path, text);
	/* Renamed into place, as an operator's tool would. */
	snprintf(text, sizeof(text), "%s/%s", b->allocs, file);
	ck_assert_int_eq(rename(path, text), 0);
}

static void
remove_alloc(struct berth *b, const char *file)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", b->allocs, file);
	ck_assert_int_eq(unlink(path), 0);
}

/* Optional fields left out, unknown capability types: healthy anyway. */
START_TEST(minimal_plugin_is_healthy_and_fingerprinted)
{
	struct berth b;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "minimal", "monolith", "10s",
	    ", \"--fault-minimal\"");
	wait_log(&b, "type=PluginHealthy message=\"plugin minimal "
	    "(hostpath.csi.berth.dev (no version)) registered as controller "
	    "and node", 10000);
	wait_log(&b, "csi: plugin=minimal type=node alloc=a1 health=healthy "
	    "fingerprint=\"node id n1, max volumes unlimited, topology {}, "
	    "stages volumes\"", 10000);
	wait_log(&b, "csi: plugin=minimal type=controller alloc=a1 "
	    "health=healthy", 10000);
	ck_assert_int_eq(count(&b, "health=unhealthy"), 0);
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
	wait_log(&b, "type=PluginUnhealthy message=\"plugin mute was not "
	    "healthy within 1s (health_timeout); the last probe: no socket at ",
	    10000);
	wait_log(&b, "was killed by signal 15 (SIGTERM) (restarted by berth)",
	    10000);
	ck_assert_msg(proc_wait_log(&b.sv, "type=Started", 1) &&
	    task_pids(&b, NULL) >= 1, "%s", b.sv.log);
	/* Started again after the restart backoff. */
	for (int i = 0; i < 50 && task_pids(&b, NULL) < 2; i++)
		usleep(100000);
	ck_assert_int_ge(task_pids(&b, NULL), 2);
	remove_alloc(&b, "mute.json");
	wait_log(&b, "alloc mute: stopped", 10000);
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
	wait_log(&b, "type=PluginHealthy", 10000);
	wait_log(&b, "probe failed (1 in a row, unhealthy at 2)", 10000);
	wait_log(&b, "type=PluginUnhealthy message=\"plugin slow: 2 probes in "
	    "a row failed", 15000);
	/* Nothing between the slow probe and the steady failures. */
	{
		const char *slow = strstr(b.sv.log, "probe failed (1 in a row");
		const char *down = strstr(b.sv.log, "type=PluginUnhealthy");

		ck_assert_ptr_nonnull(slow);
		ck_assert(slow < down);
	}
	usleep(1500000);
	ck_assert_int_eq(count(&b, "type=PluginUnhealthy"), 1);
	ck_assert_int_eq(count(&b, "type=PluginHealthy"), 1);
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
	wait_log(&b, "csi: plugin=hp type=node alloc=a1 health=healthy", 10000);
	ck_assert_int_eq(task_pids(&b, &first), 1);
	ck_assert_int_eq(kill(first, SIGKILL), 0);
	wait_log(&b, "was killed by signal 9 (SIGKILL)", 5000);
	wait_log(&b, "csi: plugin=hp type=node has no instance left", 5000);
	for (int i = 0; i < 50 && task_pids(&b, &second) < 2; i++)
		usleep(100000);
	ck_assert_int_eq(task_pids(&b, &second), 2);
	ck_assert_int_ne(first, second);
	for (int i = 0; i < 50 && count(&b, "type=PluginHealthy") < 2; i++)
		usleep(100000);
	ck_assert_int_eq(count(&b, "type=PluginHealthy"), 2);
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
	wait_log(&b, "csi: plugin=hp type=node alloc=old health=healthy",
	    10000);
	hostpath_alloc(&b, "new.json", "new", "hp", "monolith", "10s", NULL);
	wait_log(&b, "csi: plugin=hp type=node now follows alloc new (was old)",
	    10000);
	wait_log(&b, "csi: plugin=hp type=controller now follows alloc new "
	    "(was old)", 10000);
	remove_alloc(&b, "new.json");
	wait_log(&b, "csi: plugin=hp type=node now follows alloc old (was new)",
	    10000);
	wait_log(&b, "csi: plugin=hp type=controller now follows alloc old "
	    "(was new)", 10000);
	wait_log(&b, "alloc new: stopped", 10000);
	/* A monolith deregisters both: then no instance is left of either. */
	remove_alloc(&b, "old.json");
	wait_log(&b, "csi: plugin=hp type=node has no instance left", 10000);
	wait_log(&b, "csi: plugin=hp type=controller has no instance left",
	    10000);
	wait_log(&b, "alloc old: stopped", 10000);
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
	const char *after;
	pid_t pid, again;
	size_t mark;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	hostpath_alloc(&b, "a1.json", "a1", "hp", "monolith", "10s", NULL);
	wait_log(&b, "csi: plugin=hp type=node alloc=a1 health=healthy", 10000);
	ck_assert_int_eq(task_pids(&b, &pid), 1);
	proc_kill(&b.sv);
	ck_assert(pid_wait_gone(b.mounter, 3000));
	ck_assert(pid_wait_gone(b.registry, 3000));
	ck_assert(pid_alive(pid));
	berth_start(&b);
	mark = 0;
	wait_log(&b, "re-registered as controller and node after adoption",
	    10000);
	wait_log(&b, "csi: plugin=hp type=node alloc=a1 health=healthy", 10000);
	after = b.sv.log + mark;
	(void)after;
	ck_assert_int_eq(count(&b, "adopted pid "), 1);
	ck_assert_int_eq(task_pids(&b, &again), 0);
	ck_assert_int_eq(count(&b, "type=PluginHealthy"), 0);
	ck_assert_int_eq(count(&b, "re-registered"), 1);
	usleep(2500000);	/* a resync later, still once */
	ck_assert_int_eq(count(&b, "re-registered"), 1);
	ck_assert_int_eq(count(&b, "follows alloc a1"), 2);
	ck_assert(pid_alive(pid));
	harness_track_pid(pid);
	remove_alloc(&b, "a1.json");
	wait_log(&b, "alloc a1: stopped", 10000);
	ck_assert(pid_wait_gone(pid, 3000));
	berth_stop(&b);
}
END_TEST

/* A privileged plugin, defined by root, started by the mounter. */
START_TEST(privileged_plugin_through_the_mounter)
{
	struct berth b;
	char extra[600], path[1024], text[2048], *defs;

	berth_config(&b, "1s", NULL);
	harness_rmtree(b.dir);
	free(b.dir);
	b.dir = NULL;
	{
		defs = harness_tmpdir("plugindefs");

		snprintf(path, sizeof(path), "%s/hostpath.conf", defs);
		snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n9\n"
		    "arg --state-dir\narg %s/state\narg --mode\narg node\n",
		    harness_bin("berth-csi-hostpath"), defs);
		harness_write(path, text);
		snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s\"",
		    defs);
		berth_config(&b, "1s", extra);
	}
	berth_start(&b);
	snprintf(path, sizeof(path), "%s/p.json", b.allocs);
	harness_write(path, "{\"id\": \"p\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hostpath\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"node\"}}]}");
	wait_log(&b, "type=PluginHealthy message=\"plugin hp "
	    "(hostpath.csi.berth.dev", 10000);
	wait_log(&b, "csi: plugin=hp type=node alloc=p health=healthy "
	    "fingerprint=\"node id n9", 10000);
	task_pids(&b, NULL);
	remove_alloc(&b, "p.json");
	wait_log(&b, "alloc p: stopped", 10000);
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
	return harness_run("plugins", tc);
}
