/*
 * test_hostpath_tree.c: the sample plugin's descriptor-based lookups and
 * tree removal (plugins/hostpath/tree.c), on scratch trees: a tree far
 * deeper than the descriptors it may hold, symlinks to a directory
 * outside at every depth, a name that is itself a symlink, mounts inside
 * the tree and on it (in a private mount namespace), and the CO's paths
 * split at their parent without following a symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <check.h>

#include "harness.h"
#include "hostpath.h"

#define DEPTH	300	/* well past the walk's 32 open directories */

static char *dir, outside[512];
static int top;

static int
open_fds(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		n++;
	closedir(d);
	return n;
}

static void
setup(void)
{
	harness_private_mounts();
	dir = harness_tmpdir("hptree");
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	snprintf(outside + strlen(outside), sizeof(outside) - strlen(outside),
	    "/keep");
	harness_write(outside, "keep\n");
	*strrchr(outside, '/') = '\0';
	ck_assert_int_ge(top = open(dir, O_PATH | O_DIRECTORY), 0);
}

static void
teardown(void)
{
	close(top);
	harness_rmtree(dir);
	free(dir);
}

static void
outside_intact(void)
{
	char keep[600];

	snprintf(keep, sizeof(keep), "%s/keep", outside);
	ck_assert_msg(access(keep, F_OK) == 0, "%s is gone", keep);
}

START_TEST(deep_tree_with_symlinks_in_bounded_descriptors)
{
	char why[256];
	int cur, next, i, fds, fd;

	ck_assert_int_eq(mkdirat(top, "t", 0755), 0);
	ck_assert_int_ge(cur = openat(top, "t", O_RDONLY | O_DIRECTORY), 0);
	for (i = 0; i < DEPTH; i++) {
		ck_assert_int_eq(symlinkat(outside, cur, "link"), 0);
		ck_assert_int_ge(fd = openat(cur, "file", O_WRONLY | O_CREAT,
		    0644), 0);
		close(fd);
		/* A name the walk lifts to: taken already, tried again. */
		if (i == 0)
			ck_assert_int_eq(mkdirat(cur, ".hostpath-lifted-0",
			    0755), 0);
		ck_assert_int_eq(mkdirat(cur, "d", 0755), 0);
		ck_assert_int_ge(next = openat(cur, "d", O_RDONLY |
		    O_DIRECTORY), 0);
		close(cur);
		cur = next;
	}
	close(cur);
	fds = open_fds();
	ck_assert_int_eq(tree_remove(top, "t", why, sizeof(why)), 0);
	ck_assert_int_eq(open_fds(), fds);
	ck_assert_int_eq(faccessat(top, "t", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	ck_assert_int_eq(errno, ENOENT);
	outside_intact();
}
END_TEST

START_TEST(a_symlink_is_removed_not_followed)
{
	char why[256];

	ck_assert_int_eq(symlinkat(outside, top, "t"), 0);
	ck_assert_int_eq(tree_remove(top, "t", why, sizeof(why)), 0);
	ck_assert_int_eq(faccessat(top, "t", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	outside_intact();
	/* Gone already: nothing to do, and no error. */
	ck_assert_int_eq(tree_remove(top, "t", why, sizeof(why)), 0);
}
END_TEST

START_TEST(mounts_are_not_entered)
{
	char why[256], path[600];

	ck_assert_int_eq(mkdirat(top, "t", 0755), 0);
	snprintf(path, sizeof(path), "%s/t/a", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/t/a/b", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	/* A bind of the same file system: st_dev alone would not tell. */
	ck_assert_int_eq(mount(outside, path, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(tree_remove(top, "t", why, sizeof(why)), -EBUSY);
	ck_assert_msg(strstr(why, "t/a/b: a mount") != NULL, "why: %s", why);
	outside_intact();
	ck_assert_int_eq(umount2(path, 0), 0);

	/* A mount on the tree itself. */
	snprintf(path, sizeof(path), "%s/t", dir);
	ck_assert_int_eq(mount(outside, path, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(tree_remove(top, "t", why, sizeof(why)), -EBUSY);
	outside_intact();
	ck_assert_int_eq(umount2(path, 0), 0);
	ck_assert_int_eq(tree_remove(top, "t", why, sizeof(why)), 0);
	outside_intact();
}
END_TEST

START_TEST(paths_split_at_the_parent_without_symlinks)
{
	char name[256], path[600];
	int fd;

	ck_assert_int_eq(tree_parent("relative/x", name, sizeof(name)),
	    -EINVAL);
	ck_assert_int_eq(tree_parent("/a/", name, sizeof(name)), -EINVAL);
	ck_assert_int_eq(tree_parent("/a/..", name, sizeof(name)), -EINVAL);
	ck_assert_int_eq(tree_parent("/a/.", name, sizeof(name)), -EINVAL);
	ck_assert_int_eq(tree_parent("noslash", name, sizeof(name)), -EINVAL);
	ck_assert_int_ge(fd = tree_parent("/x", name, sizeof(name)), 0);
	ck_assert_str_eq(name, "x");
	close(fd);
	snprintf(path, sizeof(path), "%s/outside/new", dir);
	ck_assert_int_ge(fd = tree_parent(path, name, sizeof(name)), 0);
	ck_assert_str_eq(name, "new");
	close(fd);
	/* Through a symlink: refused, whatever it points to. */
	ck_assert_int_eq(symlinkat(outside, top, "link"), 0);
	snprintf(path, sizeof(path), "%s/link/new", dir);
	fd = tree_parent(path, name, sizeof(name));
	/* The last name of the parent is opened, not followed: no dir. */
	ck_assert_msg(fd == -ELOOP || fd == -ENOTDIR, "got %d", fd);
	snprintf(path, sizeof(path), "%s/link/keep/new", dir);
	ck_assert_int_eq(tree_parent(path, name, sizeof(name)), -ELOOP);
	/* Beneath a directory: no way out, absolute or by "..". */
	ck_assert_int_eq(tree_open(top, "outside/../../x", O_PATH, 0),
	    -EXDEV);
	ck_assert_int_eq(tree_open(top, "link", O_RDONLY, 0), -ELOOP);
	ck_assert_int_eq(tree_open(top, "link/keep", O_PATH, 0), -ELOOP);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("hostpath_tree");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, deep_tree_with_symlinks_in_bounded_descriptors);
	tcase_add_test(tc, a_symlink_is_removed_not_followed);
	tcase_add_test(tc, mounts_are_not_entered);
	tcase_add_test(tc, paths_split_at_the_parent_without_symlinks);
	return harness_run("hostpath_tree", tc);
}
