/*
 * test_privdrop.c: dropping to a user, and keeping only some capabilities,
 * read back from /proc/self/status as an auditor would. Each test runs in
 * check's forked child, so the drop does not outlive it.
 */
#include <errno.h>
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

int
main(void)
{
	TCase *tc = tcase_create("privdrop");

	tcase_add_test(tc, drop_to_user_leaves_nothing);
	tcase_add_test(tc, keep_only_sys_admin);
	tcase_add_test(tc, unknown_and_root_users_are_refused);
	tcase_add_test(tc, die_with_parent_notices_a_dead_parent);
	return harness_run("privdrop", tc);
}
