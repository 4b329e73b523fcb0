/*
 * test_drain.c: draining a node with the real processes and the sample
 * CSI plugin (a privileged monolith): a node plugin is not stopped under
 * the volumes it publishes; `berthctl node drain --wait` stops the
 * workloads before the plugin, refuses new allocations while it holds,
 * and ends with nothing of berth's mounted (controllers last, for a split
 * plugin); a drain outlives a killed supervisor, and its end does too.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <check.h>

#include "svtest.h"

/* Root's definition name.conf: the sample plugin in mode. */
static void
def(struct berth *b, const char *name, const char *mode)
{
	char path[1024], text[4096];

	snprintf(path, sizeof(path), "%s/defs/%s.conf", b->dir, name);
	snprintf(text, sizeof(text), "exec %s\narg --strict\narg --endpoint="
	    "{csi_endpoint}\narg --node-id\narg n1\narg --state-dir\narg "
	    "%s/hpstate\narg --mode\narg %s\ncap CAP_SYS_ADMIN\n"
	    "cap CAP_CHOWN\n", harness_bin("berth-csi-hostpath"), b->dir,
	    mode);
	harness_write(path, text);
}

static void
setup(struct berth *b)
{
	struct passwd *pw = getpwnam("berth");
	char path[1024], extra[1200];

	ck_assert_ptr_nonnull(pw);
	berth_config(b, "1s", NULL);
	/* The API writes allocation documents here as the supervisor. */
	ck_assert_int_eq(chown(b->allocs, pw->pw_uid, pw->pw_gid), 0);
	snprintf(path, sizeof(path), "%s/defs", b->dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	def(b, "hostpath", "monolith");
	def(b, "hp-node", "node");
	def(b, "hp-controller", "controller");
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s/defs\"",
	    b->dir);
	berth_reconfig(b, "1s", extra);
}

/* Through the API, as an operator would: PUT /v1/allocations. */
static void
submit(struct berth *b, const char *doc, int want)
{
	int status, i;

	/* 503 while the supervisor is still starting its managers. */
	for (i = 0; i < 100; i++) {
		json_decref(sv_api(b, "PUT", "/v1/allocations", doc, &status));
		if (status != 503)
			break;
		usleep(100000);
	}
	ck_assert_msg(status == want, "PUT %s: %d, not %d; log:\n%s", doc,
	    status, want, b->sv.log);
}

static void
task(struct berth *b, const char *id, const char *vol, bool ro)
{
	char doc[2048];

	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", \"volumes\": {\"data\": "
	    "{\"type\": \"csi\", \"source\": \"%s\", \"access_mode\": "
	    "\"multi-node-single-writer\", \"attachment_mode\": "
	    "\"file-system\", \"read_only\": %s}}, \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sleep\", \"args\": [\"600\"]}, \"kill_timeout\": \"1s\", "
	    "\"volume_mounts\": [{\"volume\": \"data\", \"destination\": "
	    "\"data\", \"read_only\": %s}]}]}", id, vol, ro ? "true" : "false",
	    ro ? "true" : "false");
	submit(b, doc, 200);
}

START_TEST(a_drain_stops_workloads_then_plugins_and_leaves_nothing)
{
	char path[1024], out[8192];
	json_t *j, *vols;
	struct berth b;
	uint64_t w, r, p;
	int status;

	setup(&b);
	berth_start(&b);
	submit(&b, "{\"id\": \"plugin\", \"tasks\": [{\"name\": \"hostpath\", "
	    "\"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hostpath\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"monolith\"}}]}", 200);
	json_decref(wait_instance(&b, "hp", "node", "plugin", true, 15000));
	json_decref(wait_instance(&b, "hp", "controller", "plugin", true,
	    15000));
	snprintf(path, sizeof(path), "%s/shared.vol.json", b.dir);
	harness_write(path, "{\"id\": \"shared\", \"plugin_id\": \"hp\", "
	    "\"access_mode\": \"multi-node-single-writer\", "
	    "\"attachment_mode\": \"file-system\"}");
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "create",
	    path, NULL), 0);
	task(&b, "w", "shared", false);
	task(&b, "r", "shared", true);
	wait_alloc(&b, "w", "running", 30000);
	wait_alloc(&b, "r", "running", 30000);
	task_pids(&b, NULL);
	ck_assert_int_gt(berth_mounts(&b, NULL), 0);

	/* The plugin alone is refused, naming the volume; nothing stops. */
	j = sv_api(&b, "DELETE", "/v1/allocation/plugin", NULL, &status);
	ck_assert_msg(status == 409, "DELETE plugin: %d", status);
	vols = json_object_get(j, "volumes");
	ck_assert_int_eq(json_array_size(vols), 1);
	ck_assert_str_eq(json_string_value(json_array_get(vols, 0)),
	    "default/shared");
	json_decref(j);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "stop",
	    "plugin", NULL), 1);
	wait_alloc(&b, "plugin", "running", 1000);

	/* The drain, as an operator runs it. */
	event_mark(&b);
	ck_assert_msg(sv_ctl(&b, out, sizeof(out), "node", "drain", "--wait",
	    "--timeout", "90s", NULL) == 0, "node drain: %s; log:\n%s", out,
	    b.sv.log);
	ck_assert_msg(strstr(out, "drained: 3 allocations stopped; 0 volumes "
	    "staged, 0 published") != NULL, "%s", out);
	w = event_index(&b, "AllocStopped", "w", NULL);
	r = event_index(&b, "AllocStopped", "r", NULL);
	p = event_index(&b, "AllocStopped", "plugin", NULL);
	ck_assert_msg(w > 0 && r > 0 && p > w && p > r, "stopped: w %llu, "
	    "r %llu, plugin %llu", (unsigned long long)w,
	    (unsigned long long)r, (unsigned long long)p);
	/* The take-back went to a live plugin: no unpublish failed. */
	ck_assert_int_eq(count_events(&b, "AllocPending", NULL, NULL), 0);
	ck_assert_msg(berth_mounts(&b, NULL) == 0, "%d mounts left; log:\n%s", berth_mounts(&b, NULL),
	    b.sv.log);
	ck_assert_int_eq(count_events(&b, "Drained", NULL, NULL), 1);

	/* Drained: new allocations are refused until it is ended. */
	task_pids(&b, NULL);
	j = sv_api(&b, "PUT", "/v1/allocations", "{\"id\": \"late\", "
	    "\"tasks\": [{\"name\": \"t\", \"driver\": \"exec\", \"config\": "
	    "{\"command\": \"/bin/true\"}}]}", &status);
	ck_assert_int_eq(status, 409);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j,
	    "error")), "draining or drained"));
	json_decref(j);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "node", "drain",
	    "--disable", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "not draining"));
	submit(&b, "{\"id\": \"late\", \"tasks\": [{\"name\": \"t\", "
	    "\"driver\": \"exec\", \"config\": {\"command\": \"/bin/sleep\", "
	    "\"args\": [\"600\"]}, \"kill_timeout\": \"1s\"}]}", 200);
	wait_alloc(&b, "late", "running", 30000);
	task_pids(&b, NULL);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "stop", "late",
	    NULL), 0);
	wait_alloc(&b, "late", NULL, 30000);
	berth_stop(&b);
}
END_TEST

/* A split plugin: the workload, then the node plugin, then the controller. */
START_TEST(controllers_are_stopped_last)
{
	char path[1024], out[8192];
	struct berth b;
	uint64_t w, n, c;

	setup(&b);
	berth_start(&b);
	submit(&b, "{\"id\": \"ctl\", \"tasks\": [{\"name\": \"c\", "
	    "\"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hp-controller\"}, \"csi_plugin\": {\"id\": \"hp\", "
	    "\"type\": \"controller\"}}]}", 200);
	submit(&b, "{\"id\": \"node\", \"tasks\": [{\"name\": \"n\", "
	    "\"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hp-node\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"node\"}}]}", 200);
	json_decref(wait_instance(&b, "hp", "node", "node", true, 15000));
	json_decref(wait_instance(&b, "hp", "controller", "ctl", true, 15000));
	snprintf(path, sizeof(path), "%s/shared.vol.json", b.dir);
	harness_write(path, "{\"id\": \"shared\", \"plugin_id\": \"hp\", "
	    "\"access_mode\": \"multi-node-single-writer\", "
	    "\"attachment_mode\": \"file-system\"}");
	ck_assert_msg(sv_ctl(&b, out, sizeof(out), "volume", "create", path,
	    NULL) == 0, "volume create: %s; log:\n%s", out, b.sv.log);
	task(&b, "w", "shared", false);
	wait_alloc(&b, "w", "running", 30000);
	task_pids(&b, NULL);
	ck_assert_int_gt(berth_mounts(&b, NULL), 0);

	event_mark(&b);
	ck_assert_msg(sv_ctl(&b, out, sizeof(out), "node", "drain", "--wait",
	    "--timeout", "90s", NULL) == 0, "node drain: %s; log:\n%s", out,
	    b.sv.log);
	ck_assert_msg(strstr(out, "drained: 3 allocations stopped; 0 volumes "
	    "staged, 0 published") != NULL, "%s", out);
	w = event_index(&b, "AllocStopped", "w", NULL);
	n = event_index(&b, "AllocStopped", "node", NULL);
	c = event_index(&b, "AllocStopped", "ctl", NULL);
	ck_assert_msg(w > 0 && n > w && c > n, "stopped: w %llu, node %llu, "
	    "ctl %llu", (unsigned long long)w, (unsigned long long)n,
	    (unsigned long long)c);
	ck_assert_int_eq(count_events(&b, "AllocPending", NULL, NULL), 0);
	ck_assert_int_eq(berth_mounts(&b, NULL), 0);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "node", "drain",
	    "--disable", NULL), 0);
	berth_stop(&b);
}
END_TEST

/* GET /v1/node/drain's "state". */
static void
drain_state(struct berth *b, const char *want, const char *since)
{
	json_t *j = sv_get(b, "/v1/node/drain");
	const char *st;

	ck_assert_ptr_nonnull(j);
	st = json_string_value(json_object_get(j, "state"));
	ck_assert_msg(st != NULL && strcmp(st, want) == 0, "drain state %s, "
	    "not %s", st, want);
	if (since != NULL)
		ck_assert_str_eq(json_string_value(json_object_get(j, "since")),
		    since);
	json_decref(j);
}

START_TEST(a_drain_outlives_a_killed_supervisor)
{
	char out[8192], since[64];
	const char *late = "{\"id\": \"late\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sleep\", \"args\": [\"600\"]}, \"kill_timeout\": "
	    "\"1s\"}]}";
	struct berth b;
	json_t *j;
	int status, i;

	setup(&b);
	berth_start(&b);
	submit(&b, "{\"id\": \"w\", \"tasks\": [{\"name\": \"t\", "
	    "\"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sleep\", \"args\": [\"600\"]}, \"kill_timeout\": "
	    "\"1s\"}]}", 200);
	wait_alloc(&b, "w", "running", 30000);
	task_pids(&b, NULL);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "node", "drain",
	    "--wait", "--timeout", "60s", NULL), 0);
	wait_alloc(&b, "w", NULL, 1000);
	j = sv_get(&b, "/v1/node/drain");
	snprintf(since, sizeof(since), "%s",
	    json_string_value(json_object_get(j, "since")));
	json_decref(j);

	/* Killed while drained: the next supervisor is drained too, from
	 * its start, with the drain's own start time, and refuses. */
	berth_kill(&b);
	berth_start(&b);
	for (i = 0; i < 100; i++) {
		json_decref(sv_api(&b, "PUT", "/v1/allocations", late,
		    &status));
		if (status != 503)
			break;
		usleep(100000);
	}
	ck_assert_msg(status == 409, "PUT late after a restart: %d; log:\n%s",
	    status, b.sv.log);
	wait_event(&b, "DrainResumed", NULL, NULL, 5000);
	wait_event(&b, "Drained", NULL, NULL, 10000);
	drain_state(&b, "drained", since);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "node", "drain",
	    "--disable", NULL), 0);

	/* Ended, then killed: the next supervisor is not draining. */
	berth_kill(&b);
	berth_start(&b);
	drain_state(&b, "off", NULL);
	submit(&b, late, 200);
	wait_alloc(&b, "late", "running", 30000);
	task_pids(&b, NULL);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "stop", "late",
	    NULL), 0);
	wait_alloc(&b, "late", NULL, 30000);
	berth_stop(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("drain");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, a_drain_stops_workloads_then_plugins_and_leaves_nothing);
	tcase_add_test(tc, controllers_are_stopped_last);
	tcase_add_test(tc, a_drain_outlives_a_killed_supervisor);
	return harness_run("drain", tc);
}
