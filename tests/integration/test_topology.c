/*
 * test_topology.c: where a volume may be mounted, end to end, with the
 * real three processes and berth-csi-hostpath as a privileged plugin
 * told its topology, its max volumes per node and whether it takes the
 * CSI 1.5 access modes: a volume of another zone refused with the
 * reason (at submit, and when the document is written by hand); a third
 * allocation waiting at max_volumes_per_node=2, pending with the reason,
 * and running once one of the others stops; single-node-single-writer
 * refusing a second writer; the CSI 1.5 modes refused with a plugin that
 * does not advertise SINGLE_NODE_MULTI_WRITER. After every case nothing
 * of berth's is left mounted or on disk.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <check.h>

#include "svtest.h"

/* plugin_args: more "arg X" lines for the plugin's definition. */
static void
berth_setup(struct berth *b, const char *plugin_args)
{
	char path[1024], text[4096], extra[1200];
	struct passwd *pw;

	berth_config(b, "1s", NULL);
	snprintf(path, sizeof(path), "%s/defs", b->dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/defs/hostpath.conf", b->dir);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n1\n"
	    "arg --state-dir\narg %s/hpstate\narg --mode\narg monolith\n"
	    "%scap CAP_SYS_ADMIN\ncap CAP_CHOWN\n",
	    harness_bin("berth-csi-hostpath"), b->dir,
	    plugin_args != NULL ? plugin_args : "");
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s/defs\"",
	    b->dir);
	berth_reconfig(b, "1s", extra);
	/* The API writes allocation documents as the supervisor. */
	ck_assert_ptr_nonnull(pw = getpwnam("berth"));
	ck_assert_int_eq(chown(b->allocs, pw->pw_uid, pw->pw_gid), 0);
	berth_start(b);
}

static const char *
field(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : "";
}

/* PUT /v1/volume/<id>[/create] with body: its status, its error in err. */
static int
put_volume(struct berth *b, const char *id, bool create, const char *body,
    char *err, size_t n)
{
	char path[300];
	json_t *j;
	int status;

	snprintf(path, sizeof(path), "/v1/volume/%s%s", id, create ?
	    "/create" : "");
	j = sv_api(b, "PUT", path, body, &status);
	snprintf(err, n, "%s", field(j, "error"));
	json_decref(j);
	return status;
}

/* A volume created with access mode access; topo: its topology_request
 * (JSON) or NULL. */
static void
create_volume(struct berth *b, const char *id, const char *access,
    const char *topo)
{
	char body[1024], err[1024];
	int status;

	snprintf(body, sizeof(body), "{\"plugin_id\": \"hp\", \"access_mode\": "
	    "\"%s\"%s%s}", access, topo != NULL ? ", \"topology_request\": " :
	    "", topo != NULL ? topo : "");
	status = put_volume(b, id, true, body, err, sizeof(err));
	ck_assert_msg(status == 200, "create %s: %d %s", id, status, err);
}

#define WRITER "echo hello > volumes/data/greeting && sleep 600"

static void
alloc_doc(char *doc, size_t n, const char *id, const char *vol,
    const char *access)
{
	snprintf(doc, n, "{\"id\": \"%s\", \"volumes\": {\"data\": "
	    "{\"type\": \"csi\", \"source\": \"%s\", \"access_mode\": \"%s\", "
	    "\"attachment_mode\": \"file-system\"}}, \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sh\", \"args\": [\"-c\", \"%s\"]}, \"kill_timeout\": "
	    "\"1s\", \"volume_mounts\": [{\"volume\": \"data\", "
	    "\"destination\": \"data\"}]}]}", id, vol, access, WRITER);
}

/* An alloc written into alloc_dir by hand, past the API's checks. */
static void
task_alloc(struct berth *b, const char *id, const char *vol,
    const char *access)
{
	char doc[4096];

	alloc_doc(doc, sizeof(doc), id, vol, access);
	sv_put_alloc(b, id, doc);
}

/* Submitted through the API: its status, its error in err. */
static int
api_alloc(struct berth *b, const char *id, const char *vol,
    const char *access, char *err, size_t n)
{
	char doc[4096];
	json_t *j;
	int status;

	alloc_doc(doc, sizeof(doc), id, vol, access);
	j = sv_api(b, "PUT", "/v1/allocations", doc, &status);
	snprintf(err, n, "%s", field(j, "error"));
	json_decref(j);
	return status;
}

static void
running(struct berth *b, const char *id)
{
	char task[160];

	snprintf(task, sizeof(task), "%s/t", id);
	wait_event(b, "Started", task, NULL, 45000);
	task_pids(b, NULL);
	wait_alloc(b, id, "running", 5000);
}

static json_t *
get_alloc(struct berth *b, const char *id)
{
	char path[300];
	json_t *a;

	snprintf(path, sizeof(path), "/v1/allocation/%s", id);
	ck_assert_msg((a = sv_get(b, path)) != NULL, "GET %s failed", path);
	return a;
}

/* An RFC 3339 UTC time ("2026-11-24T21:30:00Z"); 0 for NULL or "". */
static time_t
when(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) == NULL)
		return 0;
	return timegm(&tm);
}

/* The alloc is in state, at step volumes, its reason holding text. */
static void
at_volumes(struct berth *b, const char *id, const char *state,
    const char *text)
{
	json_t *a;

	wait_alloc(b, id, state, 15000);
	a = get_alloc(b, id);
	ck_assert_str_eq(field(a, "step"), "volumes");
	ck_assert_msg(strstr(field(a, "reason"), text) != NULL,
	    "%s: reason \"%s\", not \"%s\"", id, field(a, "reason"), text);
	json_decref(a);
}

/* Nothing of berth's mounted under the test's data dir, no plugin root
 * and no alloc directory left. */
static void
nothing_left(struct berth *b)
{
	char path[1024];
	int n = berth_mounts(b, NULL);

	ck_assert_msg(n == 0, "%d mounts left; log:\n%s", n, b->sv.log);
	snprintf(path, sizeof(path), "%s/data/csi/monolith/hp", b->dir);
	ck_assert_msg(access(path, F_OK) < 0, "%s is left", path);
	snprintf(path, sizeof(path), "%s/data/allocs", b->dir);
	ck_assert_msg(rmdir(path) == 0 || errno == ENOENT, "%s is not empty",
	    path);
}

static void
stop_all(struct berth *b, const char *const *ids)
{
	for (; *ids != NULL; ids++)
		sv_stop_alloc(b, *ids);
	sv_stop_alloc(b, "plugin");
	nothing_left(b);
	berth_stop(b);
}

/*
 * The plugin in zone a: a volume created there says so and runs; one
 * asked of zone b only is refused by the plugin; one registered as
 * reachable from zone b only is refused with both topologies, at submit
 * and when written by hand.
 */
START_TEST(a_volume_of_another_zone_is_refused_with_the_reason)
{
	static const char *const ids[] = { "near", "far", NULL };
	struct berth b;
	char err[1024], path[1024];
	json_t *v, *acc;

	berth_setup(&b, "arg --topology\narg zone=a\n");
	sv_plugin_up(&b);
	create_volume(&b, "near", "single-node-writer", "{\"required\": "
	    "[{\"segments\": {\"zone\": \"a\"}}], \"preferred\": "
	    "[{\"segments\": {\"zone\": \"a\"}}]}");
	ck_assert_ptr_nonnull(v = sv_get(&b, "/v1/volume/near"));
	acc = json_array_get(json_object_get(v, "accessible_topology"), 0);
	ck_assert_str_eq(field(json_object_get(acc, "segments"), "zone"), "a");
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(v,
	    "topology_request"), "preferred")), 1);
	json_decref(v);
	ck_assert_int_ne(put_volume(&b, "elsewhere", true, "{\"plugin_id\": "
	    "\"hp\", \"access_mode\": \"single-node-writer\", "
	    "\"topology_request\": {\"required\": [{\"segments\": {\"zone\": "
	    "\"b\"}}]}}", err, sizeof(err)), 200);
	ck_assert_msg(strstr(err, "none of the requisite topologies") != NULL,
	    "%s", err);

	/* Made in zone b by someone else, registered as such. */
	snprintf(path, sizeof(path), "%s/hpstate/volumes/far", b.dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	ck_assert_int_eq(put_volume(&b, "far", false, "{\"plugin_id\": "
	    "\"hp\", \"access_mode\": \"single-node-writer\", "
	    "\"topology_request\": {\"required\": [{\"segments\": {\"zone\": "
	    "\"b\"}}]}}", err, sizeof(err)), 200);
	ck_assert_int_eq(api_alloc(&b, "far", "far", "single-node-writer", err,
	    sizeof(err)), 400);
	ck_assert_str_eq(err, "volumes.data: volume default/far is accessible "
	    "from topology {zone=b}, and this node's (plugin hp) is {zone=a}; "
	    "nothing started");
	task_alloc(&b, "far", "far", "single-node-writer");
	at_volumes(&b, "far", "failed", "volume default/far is accessible "
	    "from topology {zone=b}, and this node's (plugin hp) is {zone=a}");
	ck_assert_int_eq(count_events(&b, "Started", "far/t", NULL), 0);

	ck_assert_int_eq(api_alloc(&b, "near", "near", "single-node-writer",
	    err, sizeof(err)), 200);
	running(&b, "near");
	stop_all(&b, ids);
}
END_TEST

/*
 * max_volumes_per_node = 2: a third volume's alloc is pending, saying
 * why, and runs as soon as one of the two others has stopped, not at its
 * next retry.
 */
START_TEST(a_third_volume_waits_at_max_volumes_per_node)
{
	static const char *const ids[] = { "a2", "a3", NULL };
	struct berth b;
	char err[1024];
	time_t next;
	json_t *a;
	int i;

	berth_setup(&b, "arg --max-volumes\narg 2\n");
	sv_plugin_up(&b);
	create_volume(&b, "v1", "single-node-writer", NULL);
	create_volume(&b, "v2", "single-node-writer", NULL);
	create_volume(&b, "v3", "single-node-writer", NULL);
	ck_assert_int_eq(api_alloc(&b, "a1", "v1", "single-node-writer", err,
	    sizeof(err)), 200);
	running(&b, "a1");
	ck_assert_int_eq(api_alloc(&b, "a2", "v2", "single-node-writer", err,
	    sizeof(err)), 200);
	running(&b, "a2");
	ck_assert_int_eq(api_alloc(&b, "a3", "v3", "single-node-writer", err,
	    sizeof(err)), 200);
	wait_event(&b, "AllocPending", "a3", "max_volumes_per_node", 15000);
	at_volumes(&b, "a3", "pending", "volume default/v3: plugin hp holds 2 "
	    "volumes on this node, its max_volumes_per_node; waiting for one "
	    "to be released");
	ck_assert_int_eq(count_events(&b, "Started", "a3/t", NULL), 0);
	/* Its retries back off: wait until the next is 4 s away or more. */
	for (i = 0, next = 0; i < 300 && next - time(NULL) < 4; i++) {
		usleep(100000);
		a = get_alloc(&b, "a3");
		next = when(field(a, "next_retry"));
		json_decref(a);
	}
	ck_assert_msg(next - time(NULL) >= 4, "a3's next retry: %lld",
	    (long long)next);
	/* a1's volume going makes room: a3 goes on then, not at that retry. */
	remove_alloc(&b, "a1.json");
	wait_event(&b, "Started", "a3/t", NULL,
	    (int)(next - time(NULL) - 1) * 1000);
	running(&b, "a3");
	wait_alloc(&b, "a1", NULL, 15000);
	stop_all(&b, ids);
}
END_TEST

/* single-node-single-writer: one writer; a second is refused. */
START_TEST(single_node_single_writer_refuses_a_second_writer)
{
	static const char *const ids[] = { "w1", "w2", NULL };
	struct berth b;
	char err[1024];

	berth_setup(&b, NULL);
	sv_plugin_up(&b);
	create_volume(&b, "solo", "single-node-single-writer", NULL);
	ck_assert_int_eq(api_alloc(&b, "w1", "solo",
	    "single-node-single-writer", err, sizeof(err)), 200);
	running(&b, "w1");
	ck_assert_int_eq(api_alloc(&b, "w2", "solo",
	    "single-node-single-writer", err, sizeof(err)), 200);
	at_volumes(&b, "w2", "failed", "volume default/solo is "
	    "single-node-single-writer and alloc w1 already holds its write "
	    "claim");
	ck_assert_int_eq(count_events(&b, "Started", "w2/t", NULL), 0);
	stop_all(&b, ids);
}
END_TEST

/* A plugin that does not advertise SINGLE_NODE_MULTI_WRITER: neither a
 * volume nor an allocation of a CSI 1.5 mode. */
START_TEST(csi15_modes_need_a_plugin_that_takes_them)
{
	static const char *const ids[] = { NULL };
	struct berth b;
	char err[1024];

	berth_setup(&b, "arg --no-single-node-multi-writer\n");
	sv_plugin_up(&b);
	ck_assert_int_eq(put_volume(&b, "m", true, "{\"plugin_id\": \"hp\", "
	    "\"access_mode\": \"single-node-multi-writer\"}", err,
	    sizeof(err)), 400);
	ck_assert_str_eq(err, "volume m: volume default/m: access mode "
	    "single-node-multi-writer needs a node plugin that advertises "
	    "SINGLE_NODE_MULTI_WRITER, and plugin hp does not");
	create_volume(&b, "old", "single-node-writer", NULL);
	ck_assert_int_eq(api_alloc(&b, "a", "old", "single-node-single-writer",
	    err, sizeof(err)), 400);
	ck_assert_str_eq(err, "volumes.data: volume default/old: access mode "
	    "single-node-single-writer needs a node plugin that advertises "
	    "SINGLE_NODE_MULTI_WRITER, and plugin hp does not; nothing "
	    "started");
	stop_all(&b, ids);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("topology");

	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, a_volume_of_another_zone_is_refused_with_the_reason);
	tcase_add_test(tc, a_third_volume_waits_at_max_volumes_per_node);
	tcase_add_test(tc, single_node_single_writer_refuses_a_second_writer);
	tcase_add_test(tc, csi15_modes_need_a_plugin_that_takes_them);
	return harness_run("topology", tc);
}
