/*
 * test_attack_hostpath.c: attacks on berth-csi-hostpath, the sample
 * plugin, which runs as root and is berth's embedded default. A hostile
 * task (uid nobody) can write into a volume; it swaps a directory of the
 * volume with a symlink to root's files while DeleteVolume walks it,
 * stacks mounts inside a volume, plants symlinks where a volume is to be
 * published or swaps one in there while it is, and builds a tree deeper
 * than a path can name, and leaves links, fifos and mounts in a volume
 * that is snapshotted. Root's files
 * must survive every round, and the plugin must stay within its memory.
 *
 * Each test starts the real plugin as root in a private mount namespace
 * and drives it with the supervisor's CSI client. The suite's directory
 * is made and removed by the parent, so a failed test (whose forked
 * child ends without its teardown; check kills its process group, the
 * plugin and the task with it) leaves nothing behind. The suite ends
 * with "N attacks tried, M succeeded": any failed test is an attack that
 * succeeded.
 *
 * A second suite, hostpath_strict, holds the plugin's --strict mode to
 * what plugins berth did not write do: one staging path per volume,
 * remembered across a crash; volume directories 0755 of its own user;
 * its endpoint from --endpoint only; no optional field in any reply.
 * Its failures are counted with the attacks' for the exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <event2/event.h>

#include "csi_client.h"
#include "harness.h"

#define NOBODY		65534
#define ROUNDS		200
#define ROUNDS_MS	120000	/* the race stops early after this long */
#define FILES		24	/* files per directory, in both trees */
#define DIRS		3	/* subdirectories of each tree's top */
#define CHAIN		12	/* a chain of directories in the volume */
#define DEEP		1500	/* levels of the deep tree (a path's limit) */
#define WIDE		20000	/* files in one directory of it */
#define HWM_SLACK_KB	(4 * 1024)	/* peak memory a removal may add */

static char *suite_dir;

static struct {
	char *dir;
	char endpoint[300];
	char decoy[300];		/* CSI_ENDPOINT for a strict plugin */
	char state[300];
	char victim[300];
	char voldir[320];
	struct proc plugin;
	bool started;
	pid_t task;
	struct event_base *base;
	struct csi_client *client;
	struct csi_conn *conn;
} fx;

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* FILES files f<i> holding `text`, and DIRS directories d<i> with as many. */
static void
fill(int dirfd, const char *text, mode_t fmode, bool subdirs)
{
	char name[16];
	int i, fd;

	for (i = 0; i < FILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		if ((fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC |
		    O_NOFOLLOW | O_CLOEXEC, fmode)) < 0)
			continue;
		if (write(fd, text, strlen(text)) < 0)
			(void)0;
		close(fd);
	}
	for (i = 0; subdirs && i < DIRS; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		mkdirat(dirfd, name, 0755);
		if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) < 0)
			continue;
		fill(fd, text, fmode, false);
		close(fd);
	}
}

/* How many of root's files and directories in the victim are missing. */
static int
victim_losses(void)
{
	char name[32];
	struct stat st;
	int top, sub, i, j, lost = 0;

	if ((top = open(fx.victim, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) < 0)
		return 1 + DIRS + FILES * (DIRS + 1);
	for (j = -1; j < DIRS; j++) {
		snprintf(name, sizeof(name), "d%d", j);
		sub = j < 0 ? dup(top) : openat(top, name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW);
		if (sub < 0) {
			lost += 1 + FILES;
			continue;
		}
		for (i = 0; i < FILES; i++) {
			snprintf(name, sizeof(name), "f%d", i);
			if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode) || st.st_uid != 0 ||
			    st.st_size != 5)
				lost++;
		}
		close(sub);
	}
	close(top);
	return lost;
}

static bool
is_mount(const char *path)
{
	struct statx stx;

	return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS,
	    &stx) == 0 && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

static void
task_stop(void)
{
	if (fx.task > 0) {
		kill(fx.task, SIGKILL);
		waitpid(fx.task, NULL, 0);
	}
	fx.task = 0;
}

/*
 * Lenient, the plugin reads CSI_ENDPOINT; strict, it gets --endpoint and
 * a CSI_ENDPOINT naming another socket, which it must not make.
 */
static void
plugin_start(bool strict)
{
	char *lenient[] = { (char *)harness_bin("berth-csi-hostpath"),
	    "--node-id", "node-1", "--state-dir", fx.state, NULL };
	char *spec[] = { (char *)harness_bin("berth-csi-hostpath"),
	    "--strict", "--endpoint", fx.endpoint, "--node-id", "node-1",
	    "--state-dir", fx.state, NULL };

	setenv("CSI_ENDPOINT", strict ? fx.decoy : fx.endpoint, 1);
	proc_start(&fx.plugin, strict ? spec : lenient, -1);
	fx.started = true;
	ck_assert_msg(proc_wait_log(&fx.plugin, "listening on", 10000),
	    "plugin did not start: %s", fx.plugin.log);
}

static void
fixture(bool strict)
{
	char tmpl[512];
	int fd;

	harness_private_mounts();
	memset(&fx, 0, sizeof(fx));
	snprintf(tmpl, sizeof(tmpl), "%s/t-XXXXXX", suite_dir);
	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	chmod(tmpl, 0755);
	ck_assert_ptr_nonnull(fx.dir = strdup(tmpl));
	snprintf(fx.endpoint, sizeof(fx.endpoint), "unix://%s/csi.sock",
	    fx.dir);
	snprintf(fx.decoy, sizeof(fx.decoy), "unix://%s/env.sock", fx.dir);
	snprintf(fx.state, sizeof(fx.state), "%s/state", fx.dir);
	snprintf(fx.voldir, sizeof(fx.voldir), "%s/volumes/vol", fx.state);
	/* Root's files, outside the plugin's state directory. */
	snprintf(fx.victim, sizeof(fx.victim), "%s/victim", fx.dir);
	ck_assert_int_eq(mkdir(fx.victim, 0755), 0);
	ck_assert_int_ge(fd = open(fx.victim, O_RDONLY | O_DIRECTORY), 0);
	fill(fd, "root\n", 0600, true);
	close(fd);
	ck_assert_int_eq(victim_losses(), 0);
	plugin_start(strict);
	ck_assert_ptr_nonnull(fx.base = event_base_new());
	ck_assert_ptr_nonnull(fx.client = csi_client_new(fx.base));
	ck_assert_ptr_nonnull(fx.conn = csi_conn_open(fx.client,
	    fx.endpoint));
}

static void
setup(void)
{
	fixture(false);
}

static void
setup_strict(void)
{
	fixture(true);
}

/* Root's files are all there; then stop everything, by pid. */
static void
teardown(void)
{
	int lost;

	task_stop();
	lost = victim_losses();
	if (fx.client != NULL)
		csi_client_free(fx.client);
	if (fx.base != NULL)
		event_base_free(fx.base);
	if (fx.started && !fx.plugin.reaped) {
		kill(fx.plugin.pid, SIGTERM);
		proc_wait_exit(&fx.plugin, 5000);
	}
	proc_kill(&fx.plugin);
	ck_assert_msg(lost == 0, "%d of root's files are gone", lost);
	free(fx.dir);
}

/*
 * Read what the plugin logged, past what proc_drain() keeps: a plugin
 * refused hundreds of times must never block on a full stderr pipe.
 */
static void
plugin_drain(void)
{
	char buf[4096];

	proc_drain(&fx.plugin);
	while (read(fx.plugin.err_fd, buf, sizeof(buf)) > 0)
		;
}

static enum csi_code
call(enum csi_method m, const ProtobufCMessage *req, struct csi_result *res)
{
	struct csi_result local;
	ProtobufCMessage *reply;

	if (res == NULL)
		res = &local;
	plugin_drain();
	csi_call_sync(fx.conn, m, req, 60000, &csi_retry_none, res, &reply);
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
	return res->code;
}

static void
capability(Csi__V1__VolumeCapability *cap,
    Csi__V1__VolumeCapability__MountVolume *mnt,
    Csi__V1__VolumeCapability__AccessMode *mode)
{
	csi__v1__volume_capability__init(cap);
	csi__v1__volume_capability__mount_volume__init(mnt);
	csi__v1__volume_capability__access_mode__init(mode);
	mode->mode =
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER;
	cap->access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
	cap->mount = mnt;
	cap->access_mode = mode;
}

static void
create_volume(void)
{
	Csi__V1__CreateVolumeRequest req = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeCapability cap, *caps[1] = { &cap };
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;
	struct csi_result res;

	capability(&cap, &mnt, &mode);
	req.name = "vol";
	req.n_volume_capabilities = 1;
	req.volume_capabilities = caps;
	ck_assert_msg(call(CSI_CREATE_VOLUME, &req.base, &res) == CSI_OK,
	    "CreateVolume: %s", res.message);
}

static enum csi_code
delete_volume(struct csi_result *res)
{
	Csi__V1__DeleteVolumeRequest req = CSI__V1__DELETE_VOLUME_REQUEST__INIT;

	req.volume_id = "vol";
	return call(CSI_DELETE_VOLUME, &req.base, res);
}

/* The volume is gone now, without an attacker in the way. */
static void
delete_volume_ok(void)
{
	struct csi_result res;

	ck_assert_msg(delete_volume(&res) == CSI_OK, "DeleteVolume: %s",
	    res.message);
	ck_assert_msg(access(fx.voldir, F_OK) < 0 && errno == ENOENT,
	    "%s is still there after DeleteVolume", fx.voldir);
}

/*
 * The hostile task: with a descriptor of the volume (what a bind mount
 * gives it) and uid nobody, it builds `sub` (files and directories named
 * like root's), a chain of directories, and symlinks to the victim, then
 * swaps each directory with its symlink (RENAME_EXCHANGE) until killed.
 */
static void
task_start(void)
{
	int vol, p[2];
	char c;

	ck_assert_int_ge(vol = open(fx.voldir, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_ge(fx.task = fork(), 0);
	if (fx.task == 0) {
		char name[16], other[16];
		int sub, cur, next, i;

		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		    setuid(NOBODY) < 0)
			_exit(1);
		mkdirat(vol, "sub", 0755);
		if ((sub = openat(vol, "sub", O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW)) < 0)
			_exit(2);
		fill(sub, "task\n", 0644, true);
		cur = dup(sub);
		for (i = 0; i < CHAIN; i++) {
			mkdirat(cur, "c", 0755);
			next = openat(cur, "c", O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW);
			close(cur);
			if ((cur = next) < 0)
				_exit(3);
			fill(cur, "task\n", 0644, false);
		}
		if (symlinkat(fx.victim, vol, "link") < 0)
			_exit(4);
		for (i = 0; i < DIRS; i++) {
			snprintf(name, sizeof(name), "link%d", i);
			symlinkat(fx.victim, sub, name);
		}
		if (write(p[1], "r", 1) != 1)
			_exit(5);
		for (i = 0;; i++) {
			renameat2(vol, "sub", vol, "link", RENAME_EXCHANGE);
			snprintf(name, sizeof(name), "d%d", i % DIRS);
			snprintf(other, sizeof(other), "link%d", i % DIRS);
			renameat2(sub, name, sub, other, RENAME_EXCHANGE);
		}
	}
	close(p[1]);
	close(vol);
	harness_track_pid(fx.task);
	{
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };

		ck_assert_msg(poll(&pfd, 1, 10000) == 1 &&
		    read(p[0], &c, 1) == 1, "the task did not build its tree");
	}
	close(p[0]);
}

START_TEST(symlink_swapped_in_during_delete_volume)
{
	struct csi_result res;
	long start = now_ms();
	int round, deleted = 0, refused = 0, lost;

	for (round = 0; round < ROUNDS && now_ms() - start < ROUNDS_MS;
	    round++) {
		create_volume();
		task_start();
		if (delete_volume(&res) == CSI_OK)
			deleted++;
		else if (refused++ == 0)
			fprintf(stderr, "first refusal under the swap: %s\n",
			    res.message);
		task_stop();
		lost = victim_losses();
		ck_assert_msg(lost == 0, "round %d: DeleteVolume (%s: %s) "
		    "removed %d of root's files through the task's symlink",
		    round, csi_code_name(res.code), res.message, lost);
		delete_volume_ok();
	}
	fprintf(stderr, "race: %d rounds, %d deletions done under the swap, "
	    "%d refused, root's files all there\n", round, deleted, refused);
	ck_assert_int_gt(round, 0);
}
END_TEST

/* Mount points at or under the victim, in this namespace. */
static int
victim_mounts(void)
{
	char line[4096], point[4096];
	size_t n = strlen(fx.victim);
	int count = 0;
	FILE *f;

	if ((f = fopen("/proc/self/mountinfo", "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
		    strncmp(point, fx.victim, n) == 0 &&
		    (point[n] == '/' || point[n] == '\0'))
			count++;
	fclose(f);
	return count;
}

/*
 * A task owns the directory the CO publishes into: it swaps the
 * target's parent with a symlink to root's directory while the plugin
 * publishes and unpublishes, so that a path-based mkdir or mount would
 * land in root's directory.
 */
static void
swapper_start(const char *dir)
{
	int at, p[2];
	char c;

	ck_assert_int_ge(at = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
	    0);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_ge(fx.task = fork(), 0);
	if (fx.task == 0) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		    setuid(NOBODY) < 0 || mkdirat(at, "p", 0755) < 0 ||
		    symlinkat(fx.victim, at, "s") < 0 ||
		    write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			renameat2(at, "p", at, "s", RENAME_EXCHANGE);
	}
	close(p[1]);
	close(at);
	harness_track_pid(fx.task);
	ck_assert_msg(read(p[0], &c, 1) == 1, "the task did not start");
	close(p[0]);
}

START_TEST(publish_target_parent_swapped_for_symlink)
{
	Csi__V1__NodeStageVolumeRequest stage =
	    CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
	Csi__V1__NodePublishVolumeRequest publish =
	    CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;
	Csi__V1__NodeUnpublishVolumeRequest unpublish =
	    CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeCapability cap;
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;
	char staging[400], pub[400], target[420], made[420];
	struct csi_result res;
	int round, published = 0, unpublished = 0;

	create_volume();
	capability(&cap, &mnt, &mode);
	snprintf(staging, sizeof(staging), "%s/staging", fx.dir);
	ck_assert_int_eq(mkdir(staging, 0755), 0);
	stage.volume_id = "vol";
	stage.staging_target_path = staging;
	stage.volume_capability = &cap;
	ck_assert_msg(call(CSI_NODE_STAGE_VOLUME, &stage.base, &res) ==
	    CSI_OK, "NodeStageVolume: %s", res.message);
	snprintf(pub, sizeof(pub), "%s/pub", fx.dir);
	ck_assert_int_eq(mkdir(pub, 0777), 0);
	chmod(pub, 0777);
	snprintf(target, sizeof(target), "%s/p/vol", pub);
	snprintf(made, sizeof(made), "%s/vol", fx.victim);
	swapper_start(pub);

	publish.volume_id = "vol";
	publish.staging_target_path = staging;
	publish.target_path = target;
	publish.volume_capability = &cap;
	unpublish.volume_id = "vol";
	unpublish.target_path = target;
	for (round = 0; round < ROUNDS; round++) {
		published += call(CSI_NODE_PUBLISH_VOLUME, &publish.base,
		    &res) == CSI_OK;
		unpublished += call(CSI_NODE_UNPUBLISH_VOLUME,
		    &unpublish.base, &res) == CSI_OK;
		ck_assert_msg(access(made, F_OK) < 0, "round %d: %s was made "
		    "through the task's symlink", round, made);
		ck_assert_msg(victim_mounts() == 0, "round %d: root's "
		    "directory was mounted on", round);
	}
	task_stop();
	fprintf(stderr, "publish race: %d rounds, %d published, %d "
	    "unpublished, nothing made or mounted in root's directory\n",
	    round, published, unpublished);
	ck_assert_int_gt(published, 0);
}
END_TEST

START_TEST(mounts_inside_a_volume_are_not_crossed)
{
	char bind[400], tmp[400], keep[420];
	struct csi_result res;

	create_volume();
	snprintf(bind, sizeof(bind), "%s/bind", fx.voldir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", fx.voldir);
	snprintf(keep, sizeof(keep), "%s/keep", tmp);
	ck_assert_int_eq(mkdir(bind, 0755), 0);
	ck_assert_int_eq(mkdir(tmp, 0755), 0);
	/* The same file system (st_dev alone cannot tell), and another. */
	ck_assert_int_eq(mount(fx.victim, bind, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(mount("tmpfs", tmp, "tmpfs", 0, "size=1m"), 0);
	harness_write(keep, "keep\n");

	ck_assert_msg(delete_volume(&res) != CSI_OK,
	    "DeleteVolume walked into mounts and said OK");
	fprintf(stderr, "refused: %s: %s\n", csi_code_name(res.code),
	    res.message);
	ck_assert_int_eq(access(keep, F_OK), 0);
	ck_assert(is_mount(bind) && is_mount(tmp));
	ck_assert_int_eq(umount2(bind, 0), 0);
	ck_assert_int_eq(umount2(tmp, 0), 0);
	ck_assert_int_eq(victim_losses(), 0);
	delete_volume_ok();
}
END_TEST

START_TEST(symlink_at_publish_target)
{
	Csi__V1__NodeStageVolumeRequest stage =
	    CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
	Csi__V1__NodePublishVolumeRequest publish =
	    CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;
	Csi__V1__NodeUnstageVolumeRequest unstage =
	    CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeCapability cap;
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;
	char staging[400], parent[400], target[420], made[420];
	struct csi_result res;

	create_volume();
	capability(&cap, &mnt, &mode);
	snprintf(staging, sizeof(staging), "%s/staging", fx.dir);
	ck_assert_int_eq(mkdir(staging, 0755), 0);
	stage.volume_id = "vol";
	stage.staging_target_path = staging;
	stage.volume_capability = &cap;
	ck_assert_msg(call(CSI_NODE_STAGE_VOLUME, &stage.base, &res) ==
	    CSI_OK, "NodeStageVolume: %s", res.message);

	/* A task that can write the target's parent plants a symlink. */
	snprintf(parent, sizeof(parent), "%s/target", fx.dir);
	ck_assert_int_eq(mkdir(parent, 0777), 0);
	snprintf(target, sizeof(target), "%s/vol", parent);
	ck_assert_int_eq(symlink(fx.victim, target), 0);
	publish.volume_id = "vol";
	publish.staging_target_path = staging;
	publish.target_path = target;
	publish.volume_capability = &cap;
	ck_assert_msg(call(CSI_NODE_PUBLISH_VOLUME, &publish.base, &res) !=
	    CSI_OK, "NodePublishVolume followed a symlink at the target");
	fprintf(stderr, "refused: %s: %s\n", csi_code_name(res.code),
	    res.message);
	ck_assert_msg(!is_mount(fx.victim), "the victim was mounted on");

	/* The parent itself a symlink: nothing made or mounted there. */
	snprintf(parent, sizeof(parent), "%s/tlink", fx.dir);
	ck_assert_int_eq(symlink(fx.victim, parent), 0);
	snprintf(target, sizeof(target), "%s/vol", parent);
	snprintf(made, sizeof(made), "%s/vol", fx.victim);
	ck_assert_msg(call(CSI_NODE_PUBLISH_VOLUME, &publish.base, &res) !=
	    CSI_OK, "NodePublishVolume went through a symlinked parent");
	fprintf(stderr, "refused: %s: %s\n", csi_code_name(res.code),
	    res.message);
	ck_assert_msg(access(made, F_OK) < 0, "%s was made", made);
	ck_assert_msg(!is_mount(fx.victim), "the victim was mounted on");

	unstage.volume_id = "vol";
	unstage.staging_target_path = staging;
	ck_assert_msg(call(CSI_NODE_UNSTAGE_VOLUME, &unstage.base, &res) ==
	    CSI_OK, "NodeUnstageVolume: %s", res.message);
	ck_assert(!is_mount(staging));
	delete_volume_ok();
}
END_TEST

/*
 * Expansion's paths are the CO's, as publish targets are: a symlink at
 * volume_path or staging_target_path is never followed, a path that
 * does not show the volume (root's files) is refused, and bad ids and
 * ranges are refused before anything is looked at.
 */
START_TEST(expand_paths_are_not_followed)
{
	Csi__V1__NodeStageVolumeRequest stage =
	    CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
	Csi__V1__NodePublishVolumeRequest publish =
	    CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;
	Csi__V1__NodeUnpublishVolumeRequest unpublish =
	    CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;
	Csi__V1__NodeUnstageVolumeRequest unstage =
	    CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;
	Csi__V1__NodeExpandVolumeRequest nexp =
	    CSI__V1__NODE_EXPAND_VOLUME_REQUEST__INIT;
	Csi__V1__ControllerExpandVolumeRequest cexp =
	    CSI__V1__CONTROLLER_EXPAND_VOLUME_REQUEST__INIT;
	Csi__V1__CapacityRange range = CSI__V1__CAPACITY_RANGE__INIT;
	Csi__V1__VolumeCapability cap;
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;
	char staging[400], parent[400], target[420], link[420];
	struct csi_result res;

	create_volume();
	capability(&cap, &mnt, &mode);
	snprintf(staging, sizeof(staging), "%s/staging", fx.dir);
	ck_assert_int_eq(mkdir(staging, 0755), 0);
	stage.volume_id = "vol";
	stage.staging_target_path = staging;
	stage.volume_capability = &cap;
	ck_assert_msg(call(CSI_NODE_STAGE_VOLUME, &stage.base, &res) ==
	    CSI_OK, "NodeStageVolume: %s", res.message);
	snprintf(parent, sizeof(parent), "%s/target", fx.dir);
	ck_assert_int_eq(mkdir(parent, 0755), 0);
	snprintf(target, sizeof(target), "%s/vol", parent);
	publish.volume_id = "vol";
	publish.staging_target_path = staging;
	publish.target_path = target;
	publish.volume_capability = &cap;
	ck_assert_msg(call(CSI_NODE_PUBLISH_VOLUME, &publish.base, &res) ==
	    CSI_OK, "NodePublishVolume: %s", res.message);

	range.required_bytes = 1048576;
	nexp.volume_id = "vol";
	nexp.capacity_range = &range;
	nexp.volume_path = target;
	nexp.staging_target_path = staging;
	ck_assert_msg(call(CSI_NODE_EXPAND_VOLUME, &nexp.base, &res) ==
	    CSI_OK, "NodeExpandVolume: %s", res.message);
	/* A symlink to the real target: not followed. */
	snprintf(link, sizeof(link), "%s/link", fx.dir);
	ck_assert_int_eq(symlink(target, link), 0);
	nexp.volume_path = link;
	ck_assert_int_eq(call(CSI_NODE_EXPAND_VOLUME, &nexp.base, &res),
	    CSI_PERMISSION_DENIED);
	fprintf(stderr, "refused: %s: %s\n", csi_code_name(res.code),
	    res.message);
	/* Root's files are not the volume, at either path. */
	nexp.volume_path = fx.victim;
	ck_assert_int_eq(call(CSI_NODE_EXPAND_VOLUME, &nexp.base, &res),
	    CSI_NOT_FOUND);
	nexp.volume_path = target;
	nexp.staging_target_path = fx.victim;
	ck_assert_int_eq(call(CSI_NODE_EXPAND_VOLUME, &nexp.base, &res),
	    CSI_NOT_FOUND);
	nexp.staging_target_path = "relative/path";
	ck_assert_int_eq(call(CSI_NODE_EXPAND_VOLUME, &nexp.base, &res),
	    CSI_INVALID_ARGUMENT);

	cexp.volume_id = "vol";
	ck_assert_int_eq(call(CSI_CONTROLLER_EXPAND_VOLUME, &cexp.base, &res),
	    CSI_INVALID_ARGUMENT);		/* no range */
	cexp.capacity_range = &range;
	range.limit_bytes = 1024;
	ck_assert_int_eq(call(CSI_CONTROLLER_EXPAND_VOLUME, &cexp.base, &res),
	    CSI_OUT_OF_RANGE);
	range.limit_bytes = 0;
	cexp.volume_id = "../victim";
	ck_assert_int_eq(call(CSI_CONTROLLER_EXPAND_VOLUME, &cexp.base, &res),
	    CSI_INVALID_ARGUMENT);
	cexp.volume_id = "none";
	ck_assert_int_eq(call(CSI_CONTROLLER_EXPAND_VOLUME, &cexp.base, &res),
	    CSI_NOT_FOUND);
	cexp.volume_id = "vol";
	ck_assert_msg(call(CSI_CONTROLLER_EXPAND_VOLUME, &cexp.base, &res) ==
	    CSI_OK, "ControllerExpandVolume: %s", res.message);

	unpublish.volume_id = "vol";
	unpublish.target_path = target;
	ck_assert_msg(call(CSI_NODE_UNPUBLISH_VOLUME, &unpublish.base, &res) ==
	    CSI_OK, "NodeUnpublishVolume: %s", res.message);
	unstage.volume_id = "vol";
	unstage.staging_target_path = staging;
	ck_assert_msg(call(CSI_NODE_UNSTAGE_VOLUME, &unstage.base, &res) ==
	    CSI_OK, "NodeUnstageVolume: %s", res.message);
	ck_assert(!is_mount(staging));
	delete_volume_ok();
}
END_TEST

/* CreateSnapshot of "vol" named name (from source): its code. */
static enum csi_code
snapshot_of(const char *source, const char *name, struct csi_result *res)
{
	Csi__V1__CreateSnapshotRequest req =
	    CSI__V1__CREATE_SNAPSHOT_REQUEST__INIT;

	req.source_volume_id = (char *)source;
	req.name = (char *)name;
	return call(CSI_CREATE_SNAPSHOT, &req.base, res);
}

/*
 * A task leaves in its volume a symlink to root's files, a fifo, and a
 * bind mount of root's directory; a snapshot (a copy) must copy the
 * symlink as a symlink, skip the fifo without blocking on it, and refuse
 * to copy through the mount; names and sources that leave the plugin's
 * directories are refused. A volume created from the snapshot holds the
 * link, never root's files.
 */
START_TEST(snapshot_copies_follow_no_link_and_cross_no_mount)
{
	Csi__V1__CreateVolumeRequest create =
	    CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeContentSource src = CSI__V1__VOLUME_CONTENT_SOURCE__INIT;
	Csi__V1__VolumeContentSource__SnapshotSource snap =
	    CSI__V1__VOLUME_CONTENT_SOURCE__SNAPSHOT_SOURCE__INIT;
	Csi__V1__VolumeCapability cap, *caps[1] = { &cap };
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;
	char path[600], bind[400];
	struct csi_result res;
	struct stat st;

	create_volume();
	snprintf(path, sizeof(path), "%s/leak", fx.voldir);
	ck_assert_int_eq(symlink(fx.victim, path), 0);
	snprintf(path, sizeof(path), "%s/pipe", fx.voldir);
	ck_assert_int_eq(mkfifo(path, 0666), 0);
	snprintf(path, sizeof(path), "%s/ok", fx.voldir);
	harness_write(path, "data\n");

	ck_assert_msg(snapshot_of("vol", "s1", &res) == CSI_OK,
	    "CreateSnapshot: %s", res.message);
	snprintf(path, sizeof(path), "%s/snapshots/s1/data/leak", fx.state);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	snprintf(path, sizeof(path), "%s/snapshots/s1/data/pipe", fx.state);
	ck_assert_int_lt(lstat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/snapshots/s1/data/ok", fx.state);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode) && st.st_size == 5);

	/* Root's directory bound inside the volume: not copied. */
	snprintf(bind, sizeof(bind), "%s/bind", fx.voldir);
	ck_assert_int_eq(mkdir(bind, 0755), 0);
	ck_assert_int_eq(mount(fx.victim, bind, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(snapshot_of("vol", "s2", &res),
	    CSI_FAILED_PRECONDITION);
	fprintf(stderr, "refused: %s: %s\n", csi_code_name(res.code),
	    res.message);
	snprintf(path, sizeof(path), "%s/snapshots/s2", fx.state);
	ck_assert_int_lt(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/snapshots/.part-s2", fx.state);
	ck_assert_int_lt(access(path, F_OK), 0);
	ck_assert_int_eq(umount2(bind, 0), 0);
	ck_assert_int_eq(rmdir(bind), 0);

	ck_assert_int_eq(snapshot_of("../victim", "s3", &res),
	    CSI_INVALID_ARGUMENT);
	ck_assert_int_eq(snapshot_of("vol", "../s3", &res),
	    CSI_INVALID_ARGUMENT);
	ck_assert_int_eq(snapshot_of("vol", ".part-s1", &res),
	    CSI_INVALID_ARGUMENT);

	capability(&cap, &mnt, &mode);
	create.name = "vol2";
	create.n_volume_capabilities = 1;
	create.volume_capabilities = caps;
	snap.snapshot_id = "../../victim";
	src.type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT;
	src.snapshot = &snap;
	create.volume_content_source = &src;
	ck_assert_int_eq(call(CSI_CREATE_VOLUME, &create.base, &res),
	    CSI_INVALID_ARGUMENT);
	snap.snapshot_id = "s1";
	ck_assert_msg(call(CSI_CREATE_VOLUME, &create.base, &res) == CSI_OK,
	    "CreateVolume from s1: %s", res.message);
	snprintf(path, sizeof(path), "%s/volumes/vol2/leak", fx.state);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(victim_losses(), 0);
}
END_TEST

static long
hwm_kb(pid_t pid)
{
	char buf[64];

	if (proc_status_field(pid, "VmHWM", buf, sizeof(buf)) == NULL)
		return -1;
	return atol(buf);
}

/*
 * A task builds a chain deeper than a path can name in one call (built
 * by descriptor, as a task can) and a very wide directory at its bottom.
 */
START_TEST(deep_and_wide_tree_in_bounded_memory)
{
	char name[16];
	long before, after;
	int cur, next, i, fd;
	pid_t pid;

	create_volume();
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		    (cur = open(fx.voldir, O_RDONLY | O_DIRECTORY)) < 0 ||
		    setuid(NOBODY) < 0)
			_exit(1);
		for (i = 0; i < DEEP; i++) {
			if (mkdirat(cur, "d", 0755) < 0 ||
			    (next = openat(cur, "d", O_RDONLY |
			    O_DIRECTORY)) < 0)
				_exit(2);
			if (i % 100 == 0)
				fill(cur, "task\n", 0644, false);
			close(cur);
			cur = next;
		}
		for (i = 0; i < WIDE; i++) {
			snprintf(name, sizeof(name), "w%d", i);
			if ((fd = openat(cur, name, O_WRONLY | O_CREAT,
			    0644)) < 0)
				_exit(3);
			close(fd);
		}
		_exit(0);
	}
	harness_track_pid(pid);
	ck_assert_int_eq(waitpid(pid, &i, 0), pid);
	ck_assert_msg(WIFEXITED(i) && WEXITSTATUS(i) == 0,
	    "the task could not build its tree: %d", i);

	before = hwm_kb(fx.plugin.pid);
	delete_volume_ok();
	after = hwm_kb(fx.plugin.pid);
	fprintf(stderr, "deep tree: %d levels, %d files: peak memory "
	    "%ld kB before, %ld kB after\n", DEEP, WIDE, before, after);
	ck_assert_int_gt(before, 0);
	ck_assert_msg(after - before < HWM_SLACK_KB, "removing the tree "
	    "took %ld kB more", after - before);
}
END_TEST

/* ---- strict mode: the plugin as those berth did not write ---- */

/* Killed, as a crash would, and started again; a new connection. */
static void
plugin_restart(bool strict)
{
	csi_conn_close(fx.conn);
	fx.conn = NULL;
	proc_kill(&fx.plugin);
	plugin_start(strict);
	ck_assert_ptr_nonnull(fx.conn = csi_conn_open(fx.client,
	    fx.endpoint));
}

/* The reply of a call that must succeed; the caller frees it. */
static void *
call_ok(struct csi_conn *conn, enum csi_method m, const ProtobufCMessage *req)
{
	struct csi_result res;
	ProtobufCMessage *reply;

	plugin_drain();
	csi_call_sync(conn, m, req, 60000, &csi_retry_none, &res, &reply);
	ck_assert_msg(res.code == CSI_OK && reply != NULL, "%s: %s: %s",
	    csi_method_name(m), csi_code_name(res.code), res.message);
	return reply;
}

static enum csi_code
stage_at(const char *path, struct csi_result *res)
{
	Csi__V1__NodeStageVolumeRequest req =
	    CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeCapability cap;
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;

	capability(&cap, &mnt, &mode);
	req.volume_id = "vol";
	req.staging_target_path = (char *)path;
	req.volume_capability = &cap;
	return call(CSI_NODE_STAGE_VOLUME, &req.base, res);
}

static void
unstage_ok(const char *path)
{
	Csi__V1__NodeUnstageVolumeRequest req =
	    CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;
	struct csi_result res;

	req.volume_id = "vol";
	req.staging_target_path = (char *)path;
	ck_assert_msg(call(CSI_NODE_UNSTAGE_VOLUME, &req.base, &res) == CSI_OK,
	    "NodeUnstageVolume %s: %s", path, res.message);
	ck_assert_msg(!is_mount(path), "%s is still a mount", path);
}

static void
second_path_refused(const char *staged, const char *other, const char *when)
{
	struct csi_result res;
	enum csi_code code;

	code = stage_at(other, &res);
	ck_assert_msg(code == CSI_FAILED_PRECONDITION, "%s: staging at a "
	    "second path: %s: %s", when, csi_code_name(code), res.message);
	ck_assert_msg(strstr(res.message, "already staged at") != NULL &&
	    strstr(res.message, staged) != NULL, "%s: the refusal does not "
	    "name %s: %s", when, staged, res.message);
	ck_assert_msg(!is_mount(other), "%s: %s was mounted on", when, other);
}

/*
 * The CSI spec: the CO SHALL ensure one staging_target_path per volume.
 * A second is refused, also after a crash of the plugin; the same path
 * again is success; once unstaged, or unmounted behind the plugin's back
 * (as a reboot does), the volume may be staged elsewhere.
 */
START_TEST(strict_one_staging_path_per_volume)
{
	char a[400], b[400];
	struct csi_result res;

	create_volume();
	snprintf(a, sizeof(a), "%s/stage-a", fx.dir);
	snprintf(b, sizeof(b), "%s/stage-b", fx.dir);
	ck_assert_int_eq(mkdir(a, 0755), 0);
	ck_assert_int_eq(mkdir(b, 0755), 0);
	ck_assert_msg(stage_at(a, &res) == CSI_OK, "NodeStageVolume %s: %s",
	    a, res.message);
	ck_assert_msg(stage_at(a, &res) == CSI_OK, "NodeStageVolume %s again "
	    "(idempotent): %s", a, res.message);
	ck_assert(is_mount(a));
	second_path_refused(a, b, "running");
	plugin_restart(true);
	second_path_refused(a, b, "after a crash");
	ck_assert_msg(stage_at(a, &res) == CSI_OK, "NodeStageVolume %s after "
	    "a crash: %s", a, res.message);

	unstage_ok(a);
	ck_assert_msg(stage_at(b, &res) == CSI_OK, "NodeStageVolume %s once "
	    "%s is unstaged: %s", b, a, res.message);
	ck_assert(is_mount(b));
	ck_assert_int_eq(umount2(b, 0), 0);
	plugin_restart(true);
	ck_assert_msg(stage_at(a, &res) == CSI_OK, "NodeStageVolume %s once "
	    "%s is unmounted: %s", a, b, res.message);
	unstage_ok(a);
	delete_volume_ok();
}
END_TEST

/*
 * Volume directories are 0755 of the plugin's user, whatever umask it
 * was started with, and that umask stays the plugin's (its socket's):
 * a task of another user cannot write, and berth has to see to it.
 */
START_TEST(strict_volume_directory_is_0755_of_its_user)
{
	char mask[32];
	struct stat st;
	mode_t old;
	pid_t pid;
	int vol, status;

	old = umask(077);
	plugin_restart(true);
	umask(old);
	create_volume();
	ck_assert_int_eq(stat(fx.voldir, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0755, "%s is mode %o, not 0755",
	    fx.voldir, (unsigned)(st.st_mode & 07777));
	ck_assert_msg(st.st_uid == geteuid() && st.st_gid == getegid(),
	    "%s is %u:%u, not the plugin's %u:%u", fx.voldir,
	    (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)geteuid(),
	    (unsigned)getegid());
	ck_assert_ptr_nonnull(proc_status_field(fx.plugin.pid, "Umask", mask,
	    sizeof(mask)));
	ck_assert_msg(strcmp(mask, "0077") == 0, "the plugin's umask is %s "
	    "after CreateVolume, not the 0077 it was started with", mask);

	/* Given the directory, as a bind mount gives it, by descriptor. */
	ck_assert_int_ge(vol = open(fx.voldir, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		    setuid(NOBODY) < 0)
			_exit(2);
		_exit(openat(vol, "mine", O_WRONLY | O_CREAT, 0644) < 0 &&
		    errno == EACCES ? 0 : 1);
	}
	close(vol);
	harness_track_pid(pid);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "a task of uid %d could write in a strict volume (%d)", NOBODY,
	    status);
	delete_volume_ok();
}
END_TEST

/* A strict plugin started with these arguments exits, saying `text`. */
static void
strict_refuses(char *endpoint, const char *text)
{
	char state[400];
	char *argv[] = { (char *)harness_bin("berth-csi-hostpath"), "--strict",
	    "--node-id", "node-1", "--state-dir", state, "--endpoint",
	    endpoint, NULL };
	struct proc p;

	snprintf(state, sizeof(state), "%s/state2", fx.dir);
	if (endpoint == NULL)
		argv[6] = NULL;
	proc_start(&p, argv, -1);
	ck_assert_msg(proc_wait_exit(&p, 10000), "it started: %s", p.log);
	ck_assert_msg(WIFEXITED(p.status) && WEXITSTATUS(p.status) != 0,
	    "it exited %d", p.status);
	ck_assert_msg(strstr(p.log, text) != NULL, "it did not say '%s': %s",
	    text, p.log);
	fprintf(stderr, "refused: %s", p.log);
	proc_kill(&p);
}

START_TEST(strict_endpoint_only_from_the_flag)
{
	Csi__V1__GetPluginInfoRequest info =
	    CSI__V1__GET_PLUGIN_INFO_REQUEST__INIT;
	char *argv[] = { (char *)harness_bin("berth-csi-hostpath"), "--strict",
	    "--node-id", "node-1", "--state-dir", NULL, "--endpoint", NULL,
	    NULL };
	char state[400], plain[400], endpoint[420];
	struct csi_conn *conn;
	struct proc p;

	/* The fixture's: on --endpoint, and not on CSI_ENDPOINT's path. */
	ck_assert(access(fx.endpoint + strlen("unix://"), F_OK) == 0);
	ck_assert_msg(access(fx.decoy + strlen("unix://"), F_OK) < 0 &&
	    errno == ENOENT, "a strict plugin made CSI_ENDPOINT's socket");

	strict_refuses(NULL, "--endpoint unix:///path/csi.sock is required");
	ck_assert(access(fx.decoy + strlen("unix://"), F_OK) < 0);
	strict_refuses("$CSI_ENDPOINT", "never expanded");
	ck_assert(access("$CSI_ENDPOINT", F_OK) < 0);
	strict_refuses("csi.sock", "not unix:///absolute/path");

	/* A bare absolute path is an endpoint too. */
	snprintf(state, sizeof(state), "%s/state2", fx.dir);
	snprintf(plain, sizeof(plain), "%s/plain.sock", fx.dir);
	argv[5] = state;
	argv[7] = plain;
	proc_start(&p, argv, -1);
	ck_assert_msg(proc_wait_log(&p, "listening on", 10000),
	    "it did not start: %s", p.log);
	snprintf(endpoint, sizeof(endpoint), "unix://%s", plain);
	ck_assert_ptr_nonnull(conn = csi_conn_open(fx.client, endpoint));
	protobuf_c_message_free_unpacked(call_ok(conn, CSI_GET_PLUGIN_INFO,
	    &info.base), NULL);
	csi_conn_close(conn);
	kill(p.pid, SIGTERM);
	ck_assert(proc_wait_exit(&p, 5000));
	proc_kill(&p);
}
END_TEST

static void
validate(Csi__V1__ValidateVolumeCapabilitiesRequest *req,
    Csi__V1__VolumeCapability *cap, Csi__V1__VolumeCapability **caps)
{
	static Csi__V1__VolumeCapability__MountVolume mnt;
	static Csi__V1__VolumeCapability__AccessMode mode;

	csi__v1__validate_volume_capabilities_request__init(req);
	capability(cap, &mnt, &mode);
	caps[0] = cap;
	req->volume_id = "vol";
	req->n_volume_capabilities = 1;
	req->volume_capabilities = caps;
}

/*
 * Every field csi.proto calls OPTIONAL is left out of every reply, and
 * the REQUIRED ones are there: what a client must cope with.
 */
START_TEST(strict_optional_fields_left_out)
{
	Csi__V1__GetPluginInfoRequest info_rq =
	    CSI__V1__GET_PLUGIN_INFO_REQUEST__INIT;
	Csi__V1__GetPluginCapabilitiesRequest caps_rq =
	    CSI__V1__GET_PLUGIN_CAPABILITIES_REQUEST__INIT;
	Csi__V1__ProbeRequest probe_rq = CSI__V1__PROBE_REQUEST__INIT;
	Csi__V1__CreateVolumeRequest create_rq =
	    CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__CapacityRange range = CSI__V1__CAPACITY_RANGE__INIT;
	Csi__V1__ValidateVolumeCapabilitiesRequest valid_rq;
	Csi__V1__NodeGetInfoRequest node_rq =
	    CSI__V1__NODE_GET_INFO_REQUEST__INIT;
	Csi__V1__NodeGetVolumeStatsRequest stats_rq =
	    CSI__V1__NODE_GET_VOLUME_STATS_REQUEST__INIT;
	Csi__V1__GetPluginInfoResponse *info;
	Csi__V1__GetPluginCapabilitiesResponse *caps;
	Csi__V1__ProbeResponse *probe;
	Csi__V1__CreateVolumeResponse *created;
	Csi__V1__ValidateVolumeCapabilitiesResponse *valid;
	Csi__V1__NodeGetInfoResponse *node;
	Csi__V1__NodeGetVolumeStatsResponse *stats;
	Csi__V1__VolumeCapability cap, *capv[1];

	info = call_ok(fx.conn, CSI_GET_PLUGIN_INFO, &info_rq.base);
	ck_assert_str_eq(info->name, "hostpath.csi.berth.dev");
	ck_assert_msg(info->vendor_version != NULL &&
	    *info->vendor_version != '\0', "vendor_version is REQUIRED");
	ck_assert_msg(info->n_manifest == 0, "a manifest");
	protobuf_c_message_free_unpacked(&info->base, NULL);

	/* The services it has, no topology since it reports none, and
	 * ONLINE expansion. */
	caps = call_ok(fx.conn, CSI_GET_PLUGIN_CAPABILITIES, &caps_rq.base);
	ck_assert_int_eq(caps->n_capabilities, 2);
	ck_assert_int_eq(caps->capabilities[0]->type_case,
	    CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE);
	ck_assert_int_eq(caps->capabilities[0]->service->type,
	    CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__CONTROLLER_SERVICE);
	ck_assert_int_eq(caps->capabilities[1]->type_case,
	    CSI__V1__PLUGIN_CAPABILITY__TYPE_VOLUME_EXPANSION);
	ck_assert_int_eq(caps->capabilities[1]->volume_expansion->type,
	    CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__ONLINE);
	protobuf_c_message_free_unpacked(&caps->base, NULL);

	probe = call_ok(fx.conn, CSI_PROBE, &probe_rq.base);
	ck_assert_msg(probe->ready == NULL, "Probe: a `ready`");
	protobuf_c_message_free_unpacked(&probe->base, NULL);

	validate(&valid_rq, &cap, capv);
	range.required_bytes = 1 << 20;
	create_rq.name = "vol";
	create_rq.capacity_range = &range;
	create_rq.n_volume_capabilities = 1;
	create_rq.volume_capabilities = capv;
	created = call_ok(fx.conn, CSI_CREATE_VOLUME, &create_rq.base);
	ck_assert_ptr_nonnull(created->volume);
	ck_assert_str_eq(created->volume->volume_id, "vol");
	ck_assert_msg(created->volume->capacity_bytes == 0, "a capacity");
	ck_assert_msg(created->volume->n_volume_context == 0 &&
	    created->volume->content_source == NULL &&
	    created->volume->n_accessible_topology == 0,
	    "a context, a source or a topology");
	protobuf_c_message_free_unpacked(&created->base, NULL);

	/* Confirmed, with the capabilities only; refused, without why. */
	valid = call_ok(fx.conn, CSI_VALIDATE_VOLUME_CAPABILITIES,
	    &valid_rq.base);
	ck_assert_ptr_nonnull(valid->confirmed);
	ck_assert_int_eq(valid->confirmed->n_volume_capabilities, 1);
	ck_assert_msg(valid->confirmed->n_volume_context == 0 &&
	    valid->confirmed->n_parameters == 0, "a context or parameters");
	protobuf_c_message_free_unpacked(&valid->base, NULL);
	cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
	valid = call_ok(fx.conn, CSI_VALIDATE_VOLUME_CAPABILITIES,
	    &valid_rq.base);
	ck_assert_msg(valid->confirmed == NULL, "block access confirmed");
	ck_assert_msg(valid->message == NULL || *valid->message == '\0',
	    "a message: %s", valid->message);
	protobuf_c_message_free_unpacked(&valid->base, NULL);

	node = call_ok(fx.conn, CSI_NODE_GET_INFO, &node_rq.base);
	ck_assert_str_eq(node->node_id, "node-1");
	ck_assert_msg(node->max_volumes_per_node == 0 &&
	    node->accessible_topology == NULL, "a limit or a topology");
	protobuf_c_message_free_unpacked(&node->base, NULL);

	stats_rq.volume_id = "vol";
	stats_rq.volume_path = fx.voldir;
	stats = call_ok(fx.conn, CSI_NODE_GET_VOLUME_STATS, &stats_rq.base);
	ck_assert_msg(stats->n_usage == 0, "a usage");
	protobuf_c_message_free_unpacked(&stats->base, NULL);
	delete_volume_ok();
}
END_TEST

static void
suite_setup(void)
{
	suite_dir = harness_tmpdir("hpattack");
}

static void
suite_teardown(void)
{
	if (!harness_rmtree_wait(suite_dir, 5000))
		fprintf(stderr, "suite_teardown: could not remove %s\n",
		    suite_dir);
	free(suite_dir);
}

/* Not attacks: strict mode's promises, as a suite of their own. */
static int
strict_failed(void)
{
	TCase *tc = tcase_create("hostpath_strict");
	Suite *s = suite_create("hostpath_strict");
	SRunner *sr;
	int failed;

	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(tc, setup_strict, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, strict_one_staging_path_per_volume);
	tcase_add_test(tc, strict_volume_directory_is_0755_of_its_user);
	tcase_add_test(tc, strict_endpoint_only_from_the_flag);
	tcase_add_test(tc, strict_optional_fields_left_out);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed;
}

int
main(void)
{
	TCase *tc = tcase_create("attack_hostpath");

	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, symlink_swapped_in_during_delete_volume);
	tcase_add_test(tc, mounts_inside_a_volume_are_not_crossed);
	tcase_add_test(tc, symlink_at_publish_target);
	tcase_add_test(tc, expand_paths_are_not_followed);
	tcase_add_test(tc, snapshot_copies_follow_no_link_and_cross_no_mount);
	tcase_add_test(tc, publish_target_parent_swapped_for_symlink);
	tcase_add_test(tc, deep_and_wide_tree_in_bounded_memory);
	return harness_run_attacks("attack_hostpath", tc, strict_failed);
}
