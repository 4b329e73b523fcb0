/*
 * test_privdrop.c: dropping to a user, and keeping only some capabilities,
 * read back from /proc/self/status as an auditor would. Each test runs in
 * check's forked child, so the drop does not outlive it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

#include <check.h>

#include "harness.h"
#include "privdrop.h"

static void
expect_field(const char *field, const char *want)
{
	char buf[256];

	ck_assert_ptr_nonnull(proc_status_field(getpid(), field, buf,
	    sizeof(buf)));
	ck_assert_msg(strcmp(buf, want) == 0, "%s is '%s', want '%s'", field,
	    buf, want);
}

START_TEST(drop_to_user_leaves_nothing)
{
	struct priv_user u;
	char err[256], uid[64];

	ck_assert_int_eq(geteuid(), 0);
	ck_assert_int_eq(priv_lookup_user("berth", &u, err, sizeof(err)), 0);
	ck_assert_int_eq(priv_drop_to_user(&u), 0);
	snprintf(uid, sizeof(uid), "%u\t%u\t%u\t%u", u.uid, u.uid, u.uid,
	    u.uid);
	expect_field("Uid", uid);
	expect_field("CapEff", "0000000000000000");
	expect_field("CapPrm", "0000000000000000");
	expect_field("CapInh", "0000000000000000");
	expect_field("CapAmb", "0000000000000000");
	expect_field("CapBnd", "0000000000000000");
	expect_field("NoNewPrivs", "1");
	expect_field("Groups", "");
	ck_assert_int_ne(setuid(0), 0);
}
END_TEST

START_TEST(keep_only_sys_admin)
{
	static const cap_value_t keep[] = { CAP_SYS_ADMIN };

	ck_assert_int_eq(priv_keep_only(keep, 1), 0);
	expect_field("CapEff", "0000000000200000");
	expect_field("CapPrm", "0000000000200000");
	expect_field("CapBnd", "0000000000200000");
	expect_field("CapInh", "0000000000000000");
	expect_field("CapAmb", "0000000000000000");
	expect_field("NoNewPrivs", "1");
	/* Still uid 0, but without CAP_CHOWN a chown must fail. */
	{
		char tmpl[] = "/tmp/berth-test-privdrop-XXXXXX";
		int fd = mkstemp(tmpl);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(fchown(fd, 1, 1), -1);
		ck_assert_int_eq(errno, EPERM);
		close(fd);
		unlink(tmpl);
	}
}
END_TEST

START_TEST(unknown_and_root_users_are_refused)
{
	struct priv_user u;
	char err[256];

	ck_assert_int_eq(priv_lookup_user("no-such-user-berth", &u, err,
	    sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "useradd"));
	ck_assert_int_eq(priv_lookup_user("root", &u, err, sizeof(err)),
	    -EPERM);
}
END_TEST

START_TEST(die_with_parent_notices_a_dead_parent)
{
	ck_assert_int_eq(priv_die_with_parent(getppid()), 0);
	ck_assert_int_eq(priv_die_with_parent(getppid() + 100000), -ESRCH);
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
}
END_TEST

/*
 * Root's path walk: the trusted directories it goes through, and those
 * it refuses, under a fresh root-owned directory in /tmp (sticky).
 */
static char *
walk_scene(void)
{
	char *d = harness_tmpdir("trusted"), p[512];

	snprintf(p, sizeof(p), "%s/root", d);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/root/f", d);
	harness_write(p, "x");
	ck_assert_int_eq(chmod(p, 0644), 0);
	snprintf(p, sizeof(p), "%s/theirs", d);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(chown(p, 65534, 65534), 0);
	snprintf(p, sizeof(p), "%s/group", d);
	ck_assert_int_eq(mkdir(p, 0775), 0);
	ck_assert_int_eq(chmod(p, 0775), 0);
	snprintf(p, sizeof(p), "%s/sticky", d);
	ck_assert_int_eq(mkdir(p, 01777), 0);
	ck_assert_int_eq(chmod(p, 01777), 0);
	snprintf(p, sizeof(p), "%s/sticky/theirs", d);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(chown(p, 65534, 65534), 0);
	return d;
}

static int
walk(const char *d, const char *rel, char *last, char *err, size_t n)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", d, rel);
	fd = priv_trusted_parent(p, last, 256, err, n);
	if (fd >= 0)
		close(fd);
	return fd < 0 ? fd : 0;
}

START_TEST(root_walks_only_what_root_alone_changes)
{
	char *d = walk_scene(), last[256], err[512], p[512], t[512];
	int fd;

	/* Through /tmp (sticky, root's entries) and root's own directory. */
	ck_assert_int_eq(walk(d, "root/new", last, err, sizeof(err)), 0);
	ck_assert_str_eq(last, "new");
	ck_assert_int_eq(walk(d, "sticky/new", last, err, sizeof(err)), 0);
	/* Another user's directory, or one its group can write: refused. */
	ck_assert_int_eq(walk(d, "theirs/x", last, err, sizeof(err)),
	    -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "theirs on the way is not root's"));
	ck_assert_int_eq(walk(d, "group/x", last, err, sizeof(err)), -EPERM);
	ck_assert_int_eq(walk(d, "sticky/theirs/x", last, err, sizeof(err)),
	    -EPERM);
	/* "." and "..": refused. */
	ck_assert_int_eq(walk(d, "root/../root/x", last, err, sizeof(err)),
	    -EINVAL);
	ck_assert_int_eq(walk(d, "./root/x", last, err, sizeof(err)),
	    -EINVAL);
	/* Root's symlink is followed; another user's is not. */
	snprintf(p, sizeof(p), "%s/root/link", d);
	snprintf(t, sizeof(t), "%s/root", d);
	ck_assert_int_eq(symlink(t, p), 0);
	ck_assert_int_eq(walk(d, "root/link/x", last, err, sizeof(err)), 0);
	ck_assert_int_eq(lchown(p, 65534, 65534), 0);
	ck_assert_int_eq(walk(d, "root/link/x", last, err, sizeof(err)),
	    -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "symlink that root does not own"));
	/* A root symlink that leads into another user's directory. */
	ck_assert_int_eq(unlink(p), 0);
	snprintf(t, sizeof(t), "%s/theirs", d);
	ck_assert_int_eq(symlink(t, p), 0);
	ck_assert_int_eq(walk(d, "root/link/x", last, err, sizeof(err)),
	    -EPERM);
	/* The file: root's and not writable by others, never a symlink. */
	snprintf(p, sizeof(p), "%s/root/f", d);
	fd = priv_open_trusted(p, O_RDONLY, err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(chmod(p, 0664), 0);
	ck_assert_int_eq(priv_open_trusted(p, O_RDONLY, err, sizeof(err)),
	    -EPERM);
	snprintf(p, sizeof(p), "%s/root/link", d);
	ck_assert_int_lt(priv_open_trusted(p, O_RDONLY, err, sizeof(err)), 0);
	ck_assert_int_eq(priv_trusted_parent("relative/x", last, 256, err,
	    sizeof(err)), -EINVAL);
	harness_rmtree(d);
	free(d);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("privdrop");

	tcase_add_test(tc, root_walks_only_what_root_alone_changes);
	tcase_add_test(tc, drop_to_user_leaves_nothing);
	tcase_add_test(tc, keep_only_sys_admin);
	tcase_add_test(tc, unknown_and_root_users_are_refused);
	tcase_add_test(tc, die_with_parent_notices_a_dead_parent);
	return harness_run("privdrop", tc);
}
