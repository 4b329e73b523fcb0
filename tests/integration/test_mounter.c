/*
 * test_mounter.c: berth-mounter's verbs, end to end: the real binary as
 * root in a private mount namespace, driven as the supervisor drives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "mclient.h"

#define T "hostpath"
#define P "hp"
#define A "alloc-1"

START_TEST(prepare_bind_unbind_cleanup)
{
	struct mclient c;
	struct statvfs sv;
	char *before, what[1024];
	bool mounted = true;
	int fd;

	harness_private_mounts();
	before = mounts_snapshot();
	mc_start(&c, NULL);
	mc_publish(&c, T, P, A, "vol1");
	ck_assert(is_mountpoint(mc_path(&c, "csi/" T "/" P)));
	ck_assert(is_mountpoint(mc_path(&c, "csi/plugins/" A)));
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol1",
	    &mounted), 0);
	ck_assert(!mounted);
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, "vol1",
	    &mounted), 0);
	ck_assert(mounted);
	/* Read-write, then read-only with nosuid and nodev from the start. */
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false), 0);
	ck_assert(is_mountpoint(mc_path(&c, "allocs/" A "/web/volumes/data")));
	fd = open(mc_path(&c, "allocs/" A "/web/volumes/data/f"),
	    O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(statvfs(mc_path(&c, "allocs/" A "/web/volumes/data"),
	    &sv), 0);
	ck_assert(sv.f_flag & ST_NOSUID);
	ck_assert(sv.f_flag & ST_NODEV);
	ck_assert(!(sv.f_flag & ST_RDONLY));
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false),
	    BERTH__ERROR_CODE__ERROR_CONFLICT);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "db", "ro", true), 0);
	ck_assert_int_eq(statvfs(mc_path(&c, "allocs/" A "/db/volumes/ro"),
	    &sv), 0);
	ck_assert(sv.f_flag & ST_RDONLY);
	ck_assert(access(mc_path(&c, "allocs/" A "/db/volumes/ro/f"), F_OK) ==
	    0);
	/* Not published: nothing to bind. */
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, "vol2", NULL), 0);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol2", "web", "v2", false),
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND);
	ck_assert_int_eq(mc_unbind(&c, A, "web", "data"), 0);
	ck_assert(access(mc_path(&c, "allocs/" A "/web/volumes/data"), F_OK) <
	    0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	ck_assert(access(mc_path(&c, "allocs/" A), F_OK) < 0);
	ck_assert(access(mc_path(&c, "csi/plugins/" A), F_OK) < 0);
	ck_assert(access(mc_path(&c, "csi/" T "/" P "/per-alloc/" A), F_OK) <
	    0);
	mc_release_plugin(&c, T, P);
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	mc_stop(&c);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("mounter");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, prepare_bind_unbind_cleanup);
	return harness_run("mounter", tc);
}
