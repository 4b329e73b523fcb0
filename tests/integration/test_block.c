/*
 * test_block.c: a block volume end to end, with the real three processes
 * and berth-csi-hostpath --block (strict, as plugins berth did not
 * write) confined by the mounter. A task, not root, writes the device
 * with dd and reads it back; the device is the loop device the plugin
 * attached to the volume's backing file; the block bind alone goes
 * without nodev, a file-system volume of the same allocation keeps it;
 * a block request of a file-system volume is refused at submit, with
 * the reason. Afterwards nothing is mounted and no loop device is left
 * attached; a failed test's loop devices are detached by the runner.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <check.h>

#include "svtest.h"

#define DEFS "arg --strict\narg --endpoint={csi_endpoint}\narg --block\n"
#define WORD "berth-block-ok"
/* Where each test names its directory, for the runner (runner_detach). */
#define NOTE "/tmp/berth-test-block-%ld"

/* The sample plugin as a monolith with --block, and its state dir. */
static void
berth_setup(struct berth *b)
{
	char path[1024], text[4096], extra[1200];
	FILE *f;

	berth_config(b, "1s", NULL);
	snprintf(path, sizeof(path), NOTE, (long)getppid());
	if ((f = fopen(path, "a")) != NULL) {
		fprintf(f, "%s\n", b->dir);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/defs", b->dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/defs/hostpath.conf", b->dir);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n1\n"
	    "arg --state-dir\narg %s/hpstate\narg --mode\narg monolith\n%s"
	    "cap CAP_SYS_ADMIN\ncap CAP_CHOWN\n",
	    harness_bin("berth-csi-hostpath"), b->dir, DEFS);
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s/defs\"",
	    b->dir);
	berth_reconfig(b, "1s", extra);
	snprintf(path, sizeof(path), "%s/hpstate", b->dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	berth_start(b);
	sv_put_alloc(b, "plugin", "{\"id\": \"plugin\", \"tasks\": [{\"name\": "
	    "\"hostpath\", \"driver\": \"privileged\", \"config\": {"
	    "\"plugin\": \"hostpath\"}, \"csi_plugin\": {\"id\": \"hp\", "
	    "\"type\": \"monolith\"}}]}");
	json_decref(wait_instance(b, "hp", "node", "plugin", true, 15000));
	json_decref(wait_instance(b, "hp", "controller", "plugin", true,
	    15000));
	task_pids(b, NULL);
}

static void
create_volume(struct berth *b, const char *id, const char *attachment)
{
	char path[1024], text[512], out[4096];

	snprintf(path, sizeof(path), "%s/%s.vol.json", b->dir, id);
	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"plugin_id\": \"hp\", "
	    "\"access_mode\": \"single-node-writer\", \"attachment_mode\": "
	    "\"%s\"}", id, attachment);
	harness_write(path, text);
	ck_assert_msg(sv_ctl(b, out, sizeof(out), "--json", "volume",
	    "create", path, NULL) == 0, "volume create %s: %s", id, out);
}

/* The task's stdout.log, once it holds text (or the test fails). */
static void
wait_stdout(struct berth *b, const char *alloc, const char *text,
    char *buf, size_t len)
{
	char path[1024], err[4096], *state;
	ssize_t n;
	int fd, i;
	json_t *j;

	snprintf(path, sizeof(path), "%s/data/shim/%s/t/stdout.log", b->dir,
	    alloc);
	for (i = 0; i < 300; i++) {
		buf[0] = '\0';
		if ((fd = open(path, O_RDONLY)) >= 0) {
			n = read(fd, buf, len - 1);
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
	proc_drain(&b->sv);
	snprintf(path, sizeof(path), "/v1/allocation/%s", alloc);
	j = sv_get(b, path);
	state = j != NULL ? json_dumps(j, 0) : NULL;
	snprintf(path, sizeof(path), "%s", state != NULL ? state : "?");
	free(state);
	json_decref(j);
	ck_abort_msg("no \"%s\" in \"%s\"; stderr \"%s\"; alloc %s; log:\n%s",
	    text, buf, err, path, b->sv.log);
}

/* The value after "key " on its own line of out, into v. */
static void
line_of(const char *out, const char *key, char *v, size_t n)
{
	const char *p = strstr(out, key);
	size_t k = 0;

	v[0] = '\0';
	if (p == NULL)
		return;
	for (p += strlen(key); *p != '\n' && *p != '\0' && k + 1 < n; p++)
		v[k++] = *p;
	v[k] = '\0';
}

/*
 * The loop devices attached to a file beneath dir, by calling fn on
 * each (its name, "loop3"); how many there are.
 */
static int
loops_under(const char *dir, void (*fn)(const char *name))
{
	char path[600], file[4096];
	struct dirent *de;
	int n = 0, fd;
	ssize_t got;
	DIR *d;

	if ((d = opendir("/sys/block")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file",
		    de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		got = read(fd, file, sizeof(file) - 1);
		close(fd);
		file[got > 0 ? got : 0] = '\0';
		if (strncmp(file, dir, strlen(dir)) != 0 ||
		    file[strlen(dir)] != '/')
			continue;
		n++;
		if (fn != NULL)
			fn(de->d_name);
	}
	closedir(d);
	return n;
}

static void
detach(const char *name)
{
	char path[300];
	int fd;

	snprintf(path, sizeof(path), "/dev/%s", name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (ioctl(fd, LOOP_CLR_FD) < 0)
		fprintf(stderr, "detach %s: %s\n", path, strerror(errno));
	close(fd);
}

/* A task's (shell) script: who it is, the device, written and read,
 * and the options of both its volumes' binds. */
#define SCRIPT "echo uid $(id -u); echo dev $(stat -c %t:%T volumes/blk); " \
	"printf " WORD " | dd of=volumes/blk conv=notrunc 2>&1 && " \
	"echo read $(dd if=volumes/blk bs=14 count=1 2>/dev/null); " \
	"echo blkopts $(grep ' [^ ]*/volumes/blk ' /proc/self/mountinfo | " \
	"cut -d' ' -f6); echo fsopts $(grep ' [^ ]*/volumes/files ' " \
	"/proc/self/mountinfo | cut -d' ' -f6); echo DONE; sleep 600"

static void
block_alloc(struct berth *b, const char *id)
{
	char doc[4096];

	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", \"volumes\": {"
	    "\"blk\": {\"type\": \"csi\", \"source\": \"dev\", "
	    "\"access_mode\": \"single-node-writer\", \"attachment_mode\": "
	    "\"block-device\"}, \"files\": {\"type\": \"csi\", \"source\": "
	    "\"fs\", \"access_mode\": \"single-node-writer\", "
	    "\"attachment_mode\": \"file-system\"}}, "
	    "\"tasks\": [{\"name\": \"t\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/sh\", \"args\": [\"-c\", \"%s\"]}, "
	    "\"kill_timeout\": \"1s\", \"volume_mounts\": [{\"volume\": "
	    "\"blk\", \"destination\": \"blk\"}, {\"volume\": \"files\", "
	    "\"destination\": \"files\"}]}]}", id, SCRIPT);
	sv_put_alloc(b, id, doc);
}

/*
 * The task writes the device and reads it back; the device is the loop
 * device attached to the volume's file, whose first bytes the test reads
 * too; only the block bind lacks nodev. Deleting the volume detaches the
 * loop device and removes its file.
 */
START_TEST(a_task_writes_a_block_volume)
{
	char out[8192], v[256], want[64], path[1024], dev[64], word[32];
	struct stat st;
	struct berth b;
	int fd;

	berth_setup(&b);
	create_volume(&b, "dev", "block-device");
	create_volume(&b, "fs", "file-system");
	block_alloc(&b, "a");
	wait_stdout(&b, "a", "DONE", out, sizeof(out));
	task_pids(&b, NULL);

	line_of(out, "uid ", v, sizeof(v));
	ck_assert_msg(v[0] != '\0' && strcmp(v, "0") != 0, "%s", out);
	line_of(out, "read ", v, sizeof(v));
	ck_assert_msg(strcmp(v, WORD) == 0, "the task read \"%s\":\n%s", v,
	    out);
	line_of(out, "blkopts ", v, sizeof(v));
	ck_assert_msg(v[0] != '\0' && strstr(v, "nodev") == NULL &&
	    strstr(v, "nosuid") != NULL, "the block bind: %s", out);
	line_of(out, "fsopts ", v, sizeof(v));
	ck_assert_msg(strstr(v, "nodev") != NULL, "the file-system bind: %s",
	    out);

	/* The plugin's one loop device, on the volume's backing file. */
	snprintf(path, sizeof(path), "%s/hpstate/blocks", b.dir);
	ck_assert_int_eq(loops_under(path, NULL), 1);
	snprintf(path, sizeof(path), "%s/hpstate/blocks/dev", b.dir);
	ck_assert_int_eq(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/data/allocs/a/t/volumes/blk", b.dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISBLK(st.st_mode));
	ck_assert_int_eq(major(st.st_rdev), 7);
	snprintf(want, sizeof(want), "%x:%x", major(st.st_rdev),
	    minor(st.st_rdev));
	line_of(out, "dev ", v, sizeof(v));
	ck_assert_str_eq(v, want);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/loop/backing_file",
	    major(st.st_rdev), minor(st.st_rdev));
	ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
	memset(v, 0, sizeof(v));
	ck_assert_int_gt(read(fd, v, sizeof(v) - 1), 0);
	close(fd);
	snprintf(want, sizeof(want), "/hpstate/blocks/dev\n");
	ck_assert_msg(strstr(v, b.dir) == v && strstr(v, want) != NULL,
	    "loop %u backs %s", minor(st.st_rdev), v);
	/* What the task wrote, read from the loop device itself. */
	snprintf(dev, sizeof(dev), "/dev/loop%u", minor(st.st_rdev));
	ck_assert_int_ge(fd = open(dev, O_RDONLY), 0);
	memset(word, 0, sizeof(word));
	ck_assert_int_eq(read(fd, word, strlen(WORD)), (int)strlen(WORD));
	close(fd);
	ck_assert_str_eq(word, WORD);

	sv_stop_alloc(&b, "a");
	snprintf(path, sizeof(path), "%s/hpstate/blocks", b.dir);
	ck_assert_int_eq(loops_under(path, NULL), 0);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "volume", "delete",
	    "dev", NULL), 0);
	snprintf(path, sizeof(path), "%s/hpstate/blocks/dev", b.dir);
	ck_assert_int_lt(stat(path, &st), 0);
	sv_stop_alloc(&b, "plugin");
	ck_assert_msg(berth_mounts(&b, NULL) == 0, "%d mounts left; log:\n%s",
	    berth_mounts(&b, NULL), b.sv.log);
	berth_stop(&b);
}
END_TEST

/* PUT /v1/allocations: its status, its error in err. */
static int
submit(struct berth *b, const char *id, const char *vol, char *err,
    size_t n)
{
	char doc[2048];
	const char *e;
	json_t *j;
	int status;

	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", \"volumes\": {\"blk\": "
	    "{\"type\": \"csi\", \"source\": \"%s\", \"access_mode\": "
	    "\"single-node-writer\", \"attachment_mode\": \"block-device\"}}, "
	    "\"tasks\": [{\"name\": \"t\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/true\"}, \"volume_mounts\": [{\"volume\": "
	    "\"blk\", \"destination\": \"blk\"}]}]}", id, vol);
	j = sv_api(b, "PUT", "/v1/allocations", doc, &status);
	e = json_string_value(json_object_get(j, "error"));
	snprintf(err, n, "%s", e != NULL ? e : "");
	json_decref(j);
	return status;
}

/*
 * A block device asked of a volume made for a file system: refused when
 * submitted, with the reason; nothing started, no loop device attached.
 */
START_TEST(a_block_request_of_a_file_system_volume_is_refused)
{
	char err[1024], path[1024];
	struct berth b;

	berth_setup(&b);
	create_volume(&b, "fs", "file-system");
	ck_assert_int_eq(submit(&b, "r", "fs", err, sizeof(err)), 400);
	ck_assert_str_eq(err, "volumes.blk: volume default/fs is not a block "
	    "device: it was created or registered for file-system attachment "
	    "only, and plugin hp was never asked to serve it as one; nothing "
	    "started");
	ck_assert_int_eq(count_events(&b, "Started", "r/t", NULL), 0);
	snprintf(path, sizeof(path), "%s/hpstate/blocks", b.dir);
	ck_assert_int_eq(loops_under(path, NULL), 0);
	sv_stop_alloc(&b, "plugin");
	ck_assert_int_eq(berth_mounts(&b, NULL), 0);
	berth_stop(&b);
}
END_TEST

/* After the run: no loop device of any of its tests is left attached. */
static int
runner_detach(void)
{
	char path[64], dir[1024];
	int left = 0;
	FILE *f;

	snprintf(path, sizeof(path), NOTE, (long)getpid());
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(dir, sizeof(dir), f) != NULL) {
		dir[strcspn(dir, "\n")] = '\0';
		loops_under(dir, detach);
		left += loops_under(dir, NULL);
	}
	fclose(f);
	unlink(path);
	return left;
}

int
main(void)
{
	TCase *tc = tcase_create("block");
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_task_writes_a_block_volume);
	tcase_add_test(tc, a_block_request_of_a_file_system_volume_is_refused);
	failed = harness_run("block", tc);
	if (runner_detach() != 0) {
		fprintf(stderr, "loop devices are still attached\n");
		failed = 1;
	}
	return failed;
}
