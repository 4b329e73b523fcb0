/*
 * test_attack_blockbind.c: the supervisor asks berth-mounter (the real
 * one, as root in a private mount namespace) for a block device's bind,
 * where the plugin published something else: a char device (a bind of
 * /dev/null) is refused, a directory or a file is bound nodev all the
 * same. A block device asked for as a file system keeps nodev too. Of a
 * block device asked for as one, only a node the plugin made root:root
 * with group rw goes to the task's group (a task id; read-write only);
 * the host's own node keeps its owner and mode. Ends with "N attacks
 * tried, M succeeded" (a failed test is an attack that got through).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "mclient.h"

#define T "hostpath"
#define P "hp"
#define A "alloc-1"
#define PERM BERTH__ERROR_CODE__ERROR_PERMISSION
#define SV 64001		/* the supervisor's uid and gid */
#define TK 64002		/* a task's */
#define VI 64004		/* another user's: not a task id */
#define BLK "rw-block-device-single-node-writer"
#define FS "rw-file-system-single-node-writer"
#define VOL "csi/" T "/" P "/per-alloc/" A "/"
#define HOSTDEV "/dev/loop7"	/* the host's node: never attached here */

static struct mclient c;
static char *before, *outside;
static const char *const ids[] = { "--task-ids", "64002-64003", NULL };

static void
setup(void)
{
	harness_private_mounts();
	before = mounts_snapshot();
	outside = harness_tmpdir("outside");
	mc_start_opts(&c, NULL, ids, SV);
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", TK, TK), 0);
}

static void
teardown(void)
{
	char what[1024];

	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	mc_release_plugin(&c, T, P);
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	harness_rmtree(outside);
	free(before);
	free(outside);
	mc_stop(&c);
}

/* What the plugin's NodePublishVolume would do: src bound at vol/usage. */
static void
publish(const char *vol, const char *usage, const char *src)
{
	char rel[512], path[1200];
	struct stat st;

	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, vol, NULL), 0);
	snprintf(rel, sizeof(rel), VOL "%s/%s", vol, usage);
	snprintf(path, sizeof(path), "%s", mc_path(&c, rel));
	ck_assert_int_eq(stat(src, &st), 0);
	if (S_ISDIR(st.st_mode))
		ck_assert_int_eq(mkdir(path, 0755), 0);
	else
		harness_write(path, "");
	ck_assert_msg(mount(src, path, NULL, MS_BIND, NULL) == 0, "bind %s: "
	    "%s", src, strerror(errno));
}

/* BindVolume of vol as name, block or file-system usage. */
static int
block_bind(const char *vol, const char *name, bool block, bool ro)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__BindVolume r = BERTH__BIND_VOLUME__INIT;
	Berth__VolumeUsage u = BERTH__VOLUME_USAGE__INIT;

	u.attachment = block ?
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE :
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	u.access = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER;
	r.plugin_type = B(T);
	r.plugin_id = B(P);
	r.alloc_id = B(A);
	r.volume_id = B(vol);
	r.usage = &u;
	r.task = B("web");
	r.name = B(name);
	r.read_only = ro;
	r.group = c.group;
	env.body_case = BERTH__ENVELOPE__BODY_BIND_VOLUME;
	env.bind_volume = &r;
	return mc_call(&c, &env, NULL, NULL);
}

static const char *
bound(const char *name)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "allocs/" A "/web/volumes/%s", name);
	return mc_path(&c, rel);
}

/* Whether the bind at name is nodev (-1: nothing mounted there). */
static int
nodev(const char *name)
{
	struct statvfs sv;

	if (!is_mountpoint(bound(name)) || statvfs(bound(name), &sv) < 0)
		return -1;
	return (sv.f_flag & ST_NODEV) != 0;
}

static bool
owned(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	struct stat st;

	return lstat(path, &st) == 0 && st.st_uid == uid && st.st_gid == gid &&
	    (st.st_mode & 07777) == mode;
}

/* A block node of the test's own, as a plugin makes one: root:root. */
static const char *
own_node(const char *name, mode_t mode)
{
	static char path[4][1100];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", outside, name);
	ck_assert_int_eq(mknod(p, S_IFBLK | mode, makedev(7, 250)), 0);
	ck_assert_int_eq(chmod(p, mode), 0);
	return p;
}

/* A char device published for a block request: refused, nothing bound. */
START_TEST(a_char_device_is_no_block_device)
{
	setup();
	c.group = TK;
	publish("vol1", BLK, "/dev/null");
	ck_assert_int_eq(block_bind("vol1", "c", true, false), PERM);
	ck_assert_int_eq(nodev("c"), -1);
	ck_assert(owned("/dev/null", 0, 0, 0666));
	teardown();
}
END_TEST

/* A directory or a file published for a block request: nodev still. */
START_TEST(a_directory_or_file_is_bound_nodev)
{
	char dir[1100], file[1100];

	setup();
	c.group = TK;
	snprintf(dir, sizeof(dir), "%s/dir", outside);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/file", outside);
	harness_write(file, "x");
	publish("vol2", BLK, dir);
	publish("vol3", BLK, file);
	ck_assert_int_eq(block_bind("vol2", "d", true, false), 0);
	ck_assert_int_eq(block_bind("vol3", "f", true, false), 0);
	ck_assert_int_eq(nodev("d"), 1);
	ck_assert_int_eq(nodev("f"), 1);
	ck_assert(owned(file, 0, 0, 0644));
	teardown();
}
END_TEST

/*
 * Block devices: asked for as a file system, nodev and no group; as a
 * block device, without nodev; the group only for a node the plugin
 * made root:root with group rw, read-write, a task id. The host's own
 * node keeps its owner and mode.
 */
START_TEST(only_a_published_block_device_goes_without_nodev)
{
	struct stat host, st;
	const char *mine, *ro, *fs;

	setup();
	ck_assert_int_eq(stat(HOSTDEV, &host), 0);
	ck_assert(S_ISBLK(host.st_mode));
	mine = own_node("mine", 0660);
	ro = own_node("ro", 0660);
	fs = own_node("fs", 0660);
	publish("vol4", BLK, HOSTDEV);
	publish("vol5", BLK, mine);
	publish("vol6", BLK, ro);
	publish("vol7", FS, fs);
	c.group = TK;
	ck_assert_int_eq(block_bind("vol7", "fs", false, false), 0);
	ck_assert_int_eq(nodev("fs"), 1);
	ck_assert(owned(fs, 0, 0, 0660));
	c.group = VI;
	ck_assert_int_eq(block_bind("vol5", "vi", true, false), PERM);
	ck_assert_int_eq(nodev("vi"), -1);
	c.group = SV;
	ck_assert_int_eq(block_bind("vol5", "sv", true, false), PERM);
	ck_assert(owned(mine, 0, 0, 0660));
	c.group = TK;
	ck_assert_int_eq(block_bind("vol4", "host", true, false), 0);
	ck_assert_int_eq(nodev("host"), 0);
	ck_assert_int_eq(stat(HOSTDEV, &st), 0);
	ck_assert(st.st_uid == host.st_uid && st.st_gid == host.st_gid &&
	    st.st_mode == host.st_mode);
	ck_assert_int_eq(block_bind("vol6", "ro", true, true), 0);
	ck_assert_int_eq(nodev("ro"), 0);
	ck_assert(owned(ro, 0, 0, 0660));
	ck_assert_int_eq(block_bind("vol5", "mine", true, false), 0);
	ck_assert_int_eq(nodev("mine"), 0);
	ck_assert(owned(mine, 0, TK, 0660));
	teardown();
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("attack_blockbind");

	mc_host_mounts_before();
	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, mc_track_init, mc_track_cleanup);
	tcase_add_test(tc, a_char_device_is_no_block_device);
	tcase_add_test(tc, a_directory_or_file_is_bound_nodev);
	tcase_add_test(tc, only_a_published_block_device_goes_without_nodev);
	return harness_run_attacks("attack_blockbind", tc,
	    mc_host_mounts_gained);
}
