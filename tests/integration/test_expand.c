/*
 * test_expand.c: a volume expanded end to end, with the real three
 * processes and berth-csi-hostpath (strict, as plugins berth did not
 * write) confined by the mounter: expanded through the API and berthctl
 * while a task writes in it, ControllerExpandVolume and NodeExpandVolume
 * as the plugin received them (the publish target, the staging path, the
 * secret named for "expand"), the new capacity kept and shown, an event;
 * and a plugin that expands only offline refused while the volume is
 * claimed, then expanded once it is not. Nothing of berth's is left.
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
#define MIB 1048576
/* The hostpath plugin's root, and the one staging path of a volume. */
#define HP "csi/monolith/hp"
#define USAGE "rw-file-system-single-node-writer"

/* The sample plugin as a monolith that may mount, with args, and the
 * config's secrets_dir. */
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
	    "cap CAP_SYS_ADMIN\ncap CAP_CHOWN\n", harness_bin("berth-csi-hostpath"), b->dir,
	    args);
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s/defs\", "
	    "\"secrets_dir\": \"%s/secrets\"", b->dir, b->dir);
	berth_reconfig(b, "1s", extra);
	/* The plugin's notes of what it received (tests only). */
	snprintf(path, sizeof(path), "%s/hpstate", b->dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/hpstate/received", b->dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
}

/* A volume made through the plugin, its "expand" secret named. */
static void
create_volume(struct berth *b, const char *id)
{
	char path[1024], text[512], out[4096];

	snprintf(path, sizeof(path), "%s/%s.vol.json", b->dir, id);
	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"plugin_id\": \"hp\", "
	    "\"access_mode\": \"single-node-writer\", \"attachment_mode\": "
	    "\"file-system\", \"capacity_min\": %d, \"secrets\": "
	    "{\"expand\": \"resize\"}}", id, MIB);
	harness_write(path, text);
	ck_assert_msg(sv_ctl(b, out, sizeof(out), "--json", "volume",
	    "create", path, NULL) == 0, "volume create %s: %s", id, out);
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

/* Wait until the task's stdout.log holds text. */
static void
wait_stdout(struct berth *b, const char *alloc, const char *text)
{
	char path[1024], buf[4096], err[4096];
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "%s/data/shim/%s/t/stdout.log", b->dir,
	    alloc);
	for (i = 0; i < 100; i++) {
		buf[0] = '\0';
		if ((fd = open(path, O_RDONLY)) >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			buf[n > 0 ? n : 0] = '\0';
			close(fd);
		}
		if (strstr(buf, text) != NULL)
			return;
		usleep(100000);
	}
	snprintf(path, sizeof(path), "%s/data/shim/%s/t/stderr.log", b->dir,
	    alloc);
	err[0] = '\0';
	if ((fd = open(path, O_RDONLY)) >= 0) {
		n = read(fd, err, sizeof(err) - 1);
		err[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	ck_abort_msg("no \"%s\" in \"%s\"; stderr \"%s\"; log:\n%s", text,
	    buf, err, b->sv.log);
}

static void
nothing_left(struct berth *b)
{
	char path[1024];

	ck_assert_msg(berth_mounts(b, NULL) == 0, "%d mounts left; log:\n%s", berth_mounts(b, NULL),
	    b->sv.log);
	snprintf(path, sizeof(path), "%s/data/" HP, b->dir);
	ck_assert_msg(access(path, F_OK) < 0, "%s is left", path);
}

/* The plugin's note of rpc for volume vol ("" when there is none). */
static void
received(struct berth *b, const char *rpc, const char *vol, char *buf,
    size_t n)
{
	char path[1024];
	ssize_t got = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/hpstate/received/%s.%s", b->dir, rpc,
	    vol);
	buf[0] = '\0';
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		got = read(fd, buf, n - 1);
		close(fd);
	}
	buf[got > 0 ? got : 0] = '\0';
}

static int
lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* PUT /v1/volume/<vol>/expand with body: the status; the answer in out. */
static int
expand(struct berth *b, const char *vol, const char *body, char *out,
    size_t n)
{
	char path[256], *text;
	int status;
	json_t *j;

	snprintf(path, sizeof(path), "/v1/volume/%s/expand", vol);
	j = sv_api(b, "PUT", path, body, &status);
	text = j != NULL ? json_dumps(j, 0) : NULL;
	snprintf(out, n, "%s", text != NULL ? text : "(not JSON)");
	free(text);
	json_decref(j);
	return status;
}

/* GET /v1/volume/<vol>'s capacity_bytes (-1 when absent). */
static long long
capacity(struct berth *b, const char *vol)
{
	char path[256];
	long long c;
	json_t *j;

	snprintf(path, sizeof(path), "/v1/volume/%s", vol);
	ck_assert_ptr_nonnull(j = sv_get(b, path));
	c = json_is_integer(json_object_get(j, "capacity_bytes")) ?
	    (long long)json_integer_value(json_object_get(j,
	    "capacity_bytes")) : -1;
	json_decref(j);
	return c;
}

/*
 * A task writes in its volume; the volume is expanded under it through
 * the API, then through berthctl. The controller gets the range and the
 * secret; the node gets the publish target and the staging path, with
 * the secret; the capacity is kept, shown and an event; the task's
 * mount still works afterwards.
 */
START_TEST(a_volume_in_use_expands)
{
	char out[8192], got[8192], want[2048], sec[128];
	struct berth b;
	json_t *j;

	berth_setup(&b, STRICT);
	snprintf(sec, sizeof(sec), "secret key=expand-%d", (int)getpid());
	snprintf(want, sizeof(want), "key=expand-%d\n", (int)getpid());
	sv_secret(&b, "resize", want);
	berth_start(&b);
	sv_plugin_up(&b);
	create_volume(&b, "ex");
	ck_assert_int_eq(capacity(&b, "ex"), 0);	/* not said yet */
	/* Strict, the plugin makes it root's 0755; the alloc's group, as
	 * volume_mount_group, lets its task write. */
	task_alloc(&b, "a", "ex", "echo one > volumes/data/one && echo ONE && "
	    "while [ ! -e volumes/data/go ]; do sleep 0.1; done; "
	    "echo two > volumes/data/two && echo TWO && sleep 600");
	wait_stdout(&b, "a", "ONE");
	task_pids(&b, NULL);

	ck_assert_msg(expand(&b, "ex", "{\"capacity_min\": 2097152}", out,
	    sizeof(out)) == 200, "expand: %s; log:\n%s", out, b.sv.log);
	ck_assert_msg(strstr(out, "\"expanded\"") != NULL, "%s", out);
	ck_assert_int_eq(capacity(&b, "ex"), 2 * MIB);
	wait_event(&b, "VolumeExpanded", NULL, "volume default/ex expanded to "
	    "2097152 bytes", 5000);

	received(&b, "ControllerExpandVolume", "ex", got, sizeof(got));
	ck_assert_msg(strstr(got, "expand required_bytes 2097152 limit_bytes "
	    "0") != NULL && strstr(got, sec) != NULL, "controller got:\n%s",
	    got);
	received(&b, "NodeExpandVolume", "ex", got, sizeof(got));
	snprintf(want, sizeof(want), "volume_path %s/data/" HP "/per-alloc/a/"
	    "ex/" USAGE " staging_target_path %s/data/" HP "/staging/default/"
	    "ex required_bytes 2097152", b.dir, b.dir);
	ck_assert_msg(strstr(got, want) != NULL && strstr(got, sec) != NULL &&
	    lines(got) == 1, "node got:\n%s\nwanted:\n%s", got, want);

	/* berthctl: a size with a unit, the capacity in its answer. */
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "expand",
	    "ex", "3M", NULL), 0);
	ck_assert_msg(strstr(out, "volume default/ex expanded: capacity "
	    "3145728 bytes") != NULL, "%s", out);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "status",
	    "ex", NULL), 0);
	ck_assert_msg(strstr(out, "Capacity") != NULL && strstr(out,
	    "3145728") != NULL, "%s", out);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "--json", "volume",
	    "expand", "ex", "4194304", NULL), 0);
	ck_assert_ptr_nonnull(j = json_loads(out, 0, NULL));
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")),
	    "expanded");
	json_decref(j);
	ck_assert_int_eq(capacity(&b, "ex"), 4 * MIB);
	received(&b, "NodeExpandVolume", "ex", got, sizeof(got));
	ck_assert_msg(lines(got) == 3, "node got:\n%s", got);
	ck_assert_int_eq(count_events(&b, "VolumeExpanded", NULL, NULL), 3);
	/* A size that is not one never reaches the API. */
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "expand",
	    "ex", "3X", NULL), 2);

	/* The task's mount was not disturbed. */
	snprintf(want, sizeof(want), "%s/hpstate/volumes/ex/go", b.dir);
	harness_write(want, "go\n");
	wait_stdout(&b, "a", "TWO");

	sv_stop_alloc(&b, "a");
	sv_stop_alloc(&b, "plugin");
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

/*
 * A plugin that expands only offline: refused (409, the reason) while an
 * allocation claims the volume, and nothing asked of the plugin; once
 * the allocation is gone, expanded. Requests that cannot be right are
 * refused before the volume manager.
 */
START_TEST(an_offline_plugin_is_refused_while_the_volume_is_claimed)
{
	char out[8192], got[4096];
	struct berth b;

	berth_setup(&b, STRICT "arg --expand-offline\n");
	sv_secret(&b, "resize", "key=offline\n");
	berth_start(&b);
	sv_plugin_up(&b);
	create_volume(&b, "off");
	task_alloc(&b, "a", "off", "echo UP && sleep 600");
	wait_stdout(&b, "a", "UP");
	task_pids(&b, NULL);

	ck_assert_int_eq(expand(&b, "off", "{\"capacity_min\": 2097152}", out,
	    sizeof(out)), 409);
	ck_assert_msg(strstr(out, "claimed by alloc a") != NULL &&
	    strstr(out, "only offline") != NULL, "%s", out);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "expand",
	    "off", "2M", NULL), 1);
	received(&b, "ControllerExpandVolume", "off", got, sizeof(got));
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(capacity(&b, "off"), 0);
	ck_assert_int_eq(count_events(&b, "VolumeExpanded", NULL, NULL), 0);

	/* Wrong before any plugin is asked. */
	ck_assert_int_eq(expand(&b, "off", "{\"capacity_min\": 4194304, "
	    "\"capacity_max\": 2097152}", out, sizeof(out)), 400);
	ck_assert_int_eq(expand(&b, "off", "{\"capacity_min\": 0}", out,
	    sizeof(out)), 400);
	ck_assert_int_eq(expand(&b, "off", "{\"capacity_min\": 1, \"size\": 2}",
	    out, sizeof(out)), 400);
	ck_assert_int_eq(expand(&b, "nope", "{\"capacity_min\": 1}", out,
	    sizeof(out)), 404);

	sv_stop_alloc(&b, "a");
	ck_assert_msg(expand(&b, "off", "{\"capacity_min\": 2097152, "
	    "\"capacity_max\": 8388608}", out, sizeof(out)) == 200,
	    "expand: %s; log:\n%s", out, b.sv.log);
	ck_assert_int_eq(capacity(&b, "off"), 2 * MIB);
	received(&b, "ControllerExpandVolume", "off", got, sizeof(got));
	ck_assert_msg(strstr(got, "required_bytes 2097152 limit_bytes "
	    "8388608 secret key=offline") != NULL, "controller got:\n%s", got);
	/* Published nowhere: nothing for the node to do. */
	received(&b, "NodeExpandVolume", "off", got, sizeof(got));
	ck_assert_str_eq(got, "");

	sv_stop_alloc(&b, "plugin");
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

/*
 * A plugin that says the capacity at create (the lenient sample plugin
 * does; strict, it leaves the optional field out): it shows at once,
 * and an expansion of a volume in use nowhere replaces it.
 */
START_TEST(a_created_volume_shows_its_capacity)
{
	char out[8192], got[4096];
	struct berth b;

	berth_setup(&b, "");
	sv_secret(&b, "resize", "key=lenient\n");
	berth_start(&b);
	sv_plugin_up(&b);
	create_volume(&b, "cr");
	ck_assert_int_eq(capacity(&b, "cr"), MIB);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "status",
	    "cr", NULL), 0);
	ck_assert_msg(strstr(out, "1048576") != NULL, "%s", out);
	ck_assert_msg(expand(&b, "cr", "{\"capacity_min\": 5242880}", out,
	    sizeof(out)) == 200, "expand: %s; log:\n%s", out, b.sv.log);
	ck_assert_int_eq(capacity(&b, "cr"), 5 * MIB);
	received(&b, "NodeExpandVolume", "cr", got, sizeof(got));
	ck_assert_str_eq(got, "");
	sv_stop_alloc(&b, "plugin");
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("expand");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_volume_in_use_expands);
	tcase_add_test(tc,
	    an_offline_plugin_is_refused_while_the_volume_is_claimed);
	tcase_add_test(tc, a_created_volume_shows_its_capacity);
	return harness_run("expand", tc);
}
