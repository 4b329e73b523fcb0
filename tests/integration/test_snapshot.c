/*
 * test_snapshot.c: snapshots end to end, with the real three processes
 * and berth-csi-hostpath (strict, as plugins berth did not write)
 * confined by the mounter: a task writes in its volume, a snapshot is
 * taken through the API (again through berthctl: the same one), the
 * volume is changed, the plugin restarts, a volume is created from the
 * snapshot and a second task reads from it what was there when it was
 * taken; the snapshot is listed, deleted, and gone from the list; the
 * "snapshot" secret reaches the plugin; each change is an event. A
 * plugin that does not advertise snapshots is refused with the
 * capability's name and is asked nothing. Nothing of berth's is left
 * mounted.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <check.h>

#include "svtest.h"

#define STRICT "arg --strict\narg --endpoint={csi_endpoint}\n"
#define HP "csi/monolith/hp"

/* The sample plugin as a monolith that may mount, with args, and the
 * config's secrets_dir; the plugin notes what it receives. */
static void
berth_setup(struct berth *b, const char *args)
{
	char path[1024], text[4096], extra[1200];

	berth_config(b, "1s", NULL);
	snprintf(path, sizeof(path), "%s/defs", b->dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/defs/hostpath.conf", b->dir);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n1\n"
	    "arg --state-dir\narg %s/hpstate\narg --mode\narg monolith\n%s"
	    "cap CAP_SYS_ADMIN\ncap CAP_CHOWN\n",
	    harness_bin("berth-csi-hostpath"), b->dir, args);
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s/defs\", "
	    "\"secrets_dir\": \"%s/secrets\"", b->dir, b->dir);
	berth_reconfig(b, "1s", extra);
	snprintf(path, sizeof(path), "%s/hpstate", b->dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/hpstate/received", b->dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
}

/* A volume made through the plugin (from snapshot, unless NULL), its
 * "snapshot" secret named; berthctl's exit code, its output in out. */
static int
create_volume(struct berth *b, const char *id, const char *snapshot,
    char *out, size_t n)
{
	char path[1024], text[512], from[160] = "";

	if (snapshot != NULL)
		snprintf(from, sizeof(from), ", \"snapshot_id\": \"%s\"",
		    snapshot);
	snprintf(path, sizeof(path), "%s/%s.vol.json", b->dir, id);
	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"plugin_id\": \"hp\", "
	    "\"access_mode\": \"single-node-writer\", \"attachment_mode\": "
	    "\"file-system\", \"secrets\": {\"snapshot\": \"snapsec\"}%s}",
	    id, from);
	harness_write(path, text);
	return sv_ctl(b, out, n, "--json", "volume", "create", path, NULL);
}

/* An alloc of one exec task that mounts vol at "data" and runs script. */
static void
task_alloc(struct berth *b, const char *id, const char *vol,
    const char *script)
{
	char doc[4096];

	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", \"volumes\": {\"data\": "
	    "{\"type\": \"csi\", \"source\": \"%s\", \"access_mode\": "
	    "\"single-node-writer\", \"attachment_mode\": \"file-system\"}}, "
	    "\"tasks\": [{\"name\": \"t\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/sh\", \"args\": [\"-c\", \"%s\"]}, "
	    "\"kill_timeout\": \"1s\", \"volume_mounts\": [{\"volume\": "
	    "\"data\", \"destination\": \"data\"}]}]}", id, vol, script);
	sv_put_alloc(b, id, doc);
}

/* The task's stdout.log, into buf. */
static void
read_stdout(struct berth *b, const char *alloc, char *buf, size_t n)
{
	char path[1024];
	ssize_t got = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/data/shim/%s/t/stdout.log", b->dir,
	    alloc);
	buf[0] = '\0';
	if ((fd = open(path, O_RDONLY)) >= 0) {
		got = read(fd, buf, n - 1);
		close(fd);
	}
	buf[got > 0 ? got : 0] = '\0';
}

/* Wait until the task's stdout.log holds text. */
static void
wait_stdout(struct berth *b, const char *alloc, const char *text)
{
	char buf[4096];
	int i;

	for (i = 0; i < 100; i++) {
		read_stdout(b, alloc, buf, sizeof(buf));
		if (strstr(buf, text) != NULL)
			return;
		usleep(100000);
	}
	ck_abort_msg("no \"%s\" in \"%s\"; log:\n%s", text, buf, b->sv.log);
}

static void
nothing_left(struct berth *b)
{
	char path[1024];

	ck_assert_msg(berth_mounts(b, NULL) == 0, "%d mounts left; log:\n%s",
	    berth_mounts(b, NULL), b->sv.log);
	snprintf(path, sizeof(path), "%s/data/" HP, b->dir);
	ck_assert_msg(access(path, F_OK) < 0, "%s is left", path);
}

/* The plugin's notes of rpc for name ("" when there are none). */
static void
received(struct berth *b, const char *rpc, const char *name, char *buf,
    size_t n)
{
	char path[1024];
	ssize_t got = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/hpstate/received/%s.%s", b->dir, rpc,
	    name);
	buf[0] = '\0';
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		got = read(fd, buf, n - 1);
		close(fd);
	}
	buf[got > 0 ? got : 0] = '\0';
}

/* An API call: its status, its answer's JSON in out. */
static int
api(struct berth *b, const char *method, const char *path, const char *body,
    char *out, size_t n)
{
	char *text;
	int status;
	json_t *j;

	j = sv_api(b, method, path, body, &status);
	text = j != NULL ? json_dumps(j, JSON_SORT_KEYS) : NULL;
	snprintf(out, n, "%s", text != NULL ? text : "(not JSON)");
	free(text);
	json_decref(j);
	return status;
}

/* The ids a list answer holds, joined by ' '. */
static void
listed(struct berth *b, const char *path, char *ids, size_t n)
{
	json_t *j, *s;
	size_t i;

	ck_assert_ptr_nonnull(j = sv_get(b, path));
	ids[0] = '\0';
	json_array_foreach(json_object_get(j, "snapshots"), i, s)
		snprintf(ids + strlen(ids), n - strlen(ids), "%s%s", i > 0 ?
		    " " : "", json_string_value(json_object_get(s,
		    "snapshot_id")));
	json_decref(j);
}

START_TEST(a_volume_made_from_a_snapshot_holds_what_was_taken)
{
	char out[8192], got[4096], sec[128], path[1024];
	struct berth b;
	json_t *j;

	berth_setup(&b, STRICT);
	snprintf(sec, sizeof(sec), "secret key=snap-%d", (int)getpid());
	snprintf(got, sizeof(got), "key=snap-%d\n", (int)getpid());
	sv_secret(&b, "snapsec", got);
	berth_start(&b);
	sv_plugin_up(&b);
	ck_assert_msg(create_volume(&b, "src", NULL, out, sizeof(out)) == 0,
	    "volume create: %s", out);
	ck_assert_msg(create_volume(&b, "other", NULL, out, sizeof(out)) == 0,
	    "volume create: %s", out);
	task_alloc(&b, "w", "src", "echo taken > volumes/data/f && "
	    "mkdir volumes/data/d && echo deep > volumes/data/d/g && "
	    "echo WROTE && while [ ! -e volumes/data/go ]; do sleep 0.1; "
	    "done; echo later > volumes/data/f && echo CHANGED && sleep 600");
	wait_stdout(&b, "w", "WROTE");

	/* Taken through the API, while the task has the volume. */
	ck_assert_msg(api(&b, "PUT", "/v1/volume/src/snapshot",
	    "{\"name\": \"s1\"}", out, sizeof(out)) == 200, "snapshot: %s; "
	    "log:\n%s", out, b.sv.log);
	ck_assert_ptr_nonnull(j = json_loads(out, 0, NULL));
	ck_assert_str_eq(json_string_value(json_object_get(j, "snapshot_id")),
	    "s1");
	ck_assert_str_eq(json_string_value(json_object_get(j,
	    "source_volume_id")), "src");
	ck_assert(json_is_true(json_object_get(j, "ready_to_use")));
	json_decref(j);
	wait_event(&b, "SnapshotCreated", NULL, "volume default/src snapshot "
	    "s1 created", 5000);
	received(&b, "CreateSnapshot", "s1", got, sizeof(got));
	ck_assert_msg(strstr(got, "src") != NULL && strstr(got, sec) != NULL,
	    "the plugin got: %s", got);
	/* Again, by berthctl: the same snapshot. Another volume's: no. */
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "snapshot",
	    "create", "src", "s1", NULL), 0);
	ck_assert_msg(strstr(out, "snapshot s1 of volume default/src "
	    "created") != NULL, "%s", out);
	ck_assert_msg(api(&b, "PUT", "/v1/volume/other/snapshot",
	    "{\"name\": \"s1\"}", out, sizeof(out)) == 409, "%s", out);
	ck_assert_msg(strstr(out, "ALREADY_EXISTS") != NULL, "%s", out);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "snapshot",
	    "create", "src", "s2", NULL), 0);

	/* The volume changes after it was taken. */
	snprintf(path, sizeof(path), "%s/hpstate/volumes/src/go", b.dir);
	harness_write(path, "go\n");
	wait_stdout(&b, "w", "CHANGED");
	sv_stop_alloc(&b, "w");

	/* The snapshot outlives the plugin's process. */
	sv_stop_alloc(&b, "plugin");
	sv_plugin_up(&b);
	listed(&b, "/v1/volume/src/snapshots", got, sizeof(got));
	ck_assert_str_eq(got, "s1 s2");
	listed(&b, "/v1/volume/other/snapshots", got, sizeof(got));
	ck_assert_str_eq(got, "");
	listed(&b, "/v1/snapshots?plugin=hp", got, sizeof(got));
	ck_assert_str_eq(got, "s1 s2");
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "snapshot",
	    "list", "src", NULL), 0);
	ck_assert_msg(strstr(out, "SNAPSHOT") != NULL && strstr(out, "s1") !=
	    NULL && strstr(out, "s2") != NULL, "%s", out);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "plugin", "snapshots",
	    "hp", NULL), 0);
	ck_assert_msg(strstr(out, "s1") != NULL, "%s", out);

	/* A volume from it: a task reads what was there when it was taken. */
	ck_assert_msg(create_volume(&b, "back", "s1", out, sizeof(out)) == 0,
	    "volume create from s1: %s; log:\n%s", out, b.sv.log);
	ck_assert_ptr_nonnull(j = sv_get(&b, "/v1/volume/back"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "snapshot_id")),
	    "s1");
	json_decref(j);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "status",
	    "back", NULL), 0);
	ck_assert_msg(strstr(out, "From snapshot") != NULL && strstr(out,
	    "s1") != NULL, "%s", out);
	task_alloc(&b, "r", "back", "echo F=$(cat volumes/data/f) "
	    "G=$(cat volumes/data/d/g) READ && sleep 600");
	wait_stdout(&b, "r", "READ");
	read_stdout(&b, "r", got, sizeof(got));
	ck_assert_msg(strstr(got, "F=taken G=deep READ") != NULL, "the "
	    "reader saw: %s", got);

	/* Deleted: gone from the plugin and the list; the volume made from
	 * it stays. */
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "snapshot",
	    "delete", "src", "s1", NULL), 0);
	ck_assert_msg(strstr(out, "snapshot s1 of volume default/src "
	    "deleted") != NULL, "%s", out);
	wait_event(&b, "SnapshotDeleted", NULL, "volume default/src snapshot "
	    "s1 deleted", 5000);
	received(&b, "DeleteSnapshot", "s1", got, sizeof(got));
	ck_assert_msg(strstr(got, sec) != NULL, "the plugin got: %s", got);
	snprintf(path, sizeof(path), "%s/hpstate/snapshots/s1", b.dir);
	ck_assert_int_lt(access(path, F_OK), 0);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "--json", "volume",
	    "snapshot", "list", "src", NULL), 0);
	ck_assert_ptr_nonnull(j = json_loads(out, 0, NULL));
	ck_assert_uint_eq(json_array_size(json_object_get(j, "snapshots")), 1);
	json_decref(j);
	ck_assert_int_eq(api(&b, "DELETE", "/v1/volume/src/snapshot?"
	    "snapshot_id=s2", NULL, out, sizeof(out)), 200);
	ck_assert_int_eq(count_events(&b, "SnapshotCreated", NULL, NULL), 3);
	ck_assert_int_eq(count_events(&b, "SnapshotDeleted", NULL, NULL), 2);
	wait_stdout(&b, "r", "READ");

	/* Wrong before any plugin is asked. */
	ck_assert_int_eq(api(&b, "PUT", "/v1/volume/src/snapshot",
	    "{\"name\": \"a/b\"}", out, sizeof(out)), 400);
	ck_assert_int_eq(api(&b, "PUT", "/v1/volume/src/snapshot",
	    "{\"name\": \"x\", \"size\": 1}", out, sizeof(out)), 400);
	ck_assert_msg(api(&b, "PUT", "/v1/volume/nope/snapshot",
	    "{\"name\": \"x\"}", out, sizeof(out)) == 404, "%s", out);
	ck_assert_int_eq(api(&b, "GET", "/v1/snapshots", NULL, out,
	    sizeof(out)), 400);

	sv_stop_alloc(&b, "r");
	sv_stop_alloc(&b, "plugin");
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

/*
 * A plugin whose controller advertises neither CREATE_DELETE_SNAPSHOT
 * nor LIST_SNAPSHOTS: each is refused with 400 naming the capability,
 * a volume from a snapshot too, and the plugin is asked nothing.
 */
START_TEST(a_plugin_without_snapshots_is_refused)
{
	char out[8192], got[4096];
	struct berth b;

	berth_setup(&b, STRICT "arg --no-snapshots\n");
	sv_secret(&b, "snapsec", "key=none\n");
	berth_start(&b);
	sv_plugin_up(&b);
	ck_assert_msg(create_volume(&b, "v", NULL, out, sizeof(out)) == 0,
	    "volume create: %s", out);

	ck_assert_int_eq(api(&b, "PUT", "/v1/volume/v/snapshot",
	    "{\"name\": \"s1\"}", out, sizeof(out)), 400);
	ck_assert_msg(strstr(out, "does not advertise CREATE_DELETE_SNAPSHOT")
	    != NULL, "%s", out);
	ck_assert_int_eq(api(&b, "GET", "/v1/volume/v/snapshots", NULL, out,
	    sizeof(out)), 400);
	ck_assert_msg(strstr(out, "does not advertise LIST_SNAPSHOTS") != NULL,
	    "%s", out);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "snapshot",
	    "delete", "v", "s1", NULL), 1);
	ck_assert_int_eq(api(&b, "PUT", "/v1/volume/w/create",
	    "{\"plugin_id\": \"hp\", \"access_mode\": "
	    "\"single-node-writer\", \"snapshot_id\": \"s1\"}", out,
	    sizeof(out)), 400);
	ck_assert_msg(strstr(out, "does not advertise CREATE_DELETE_SNAPSHOT")
	    != NULL, "%s", out);
	ck_assert_int_eq(api(&b, "GET", "/v1/volume/w", NULL, out,
	    sizeof(out)), 404);
	received(&b, "CreateSnapshot", "s1", got, sizeof(got));
	ck_assert_str_eq(got, "");
	received(&b, "DeleteSnapshot", "s1", got, sizeof(got));
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(count_events(&b, "SnapshotCreated", NULL, NULL), 0);

	sv_stop_alloc(&b, "plugin");
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("snapshot");

	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, a_volume_made_from_a_snapshot_holds_what_was_taken);
	tcase_add_test(tc, a_plugin_without_snapshots_is_refused);
	return harness_run("snapshot", tc);
}
