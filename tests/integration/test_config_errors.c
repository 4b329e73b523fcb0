/*
 * test_config_errors.c: what an operator sees when the set-up is wrong.
 * Each mistake is one line on stderr that says what to do, and exit code
 * 78 (EX_CONFIG), before any helper starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <check.h>

#include "harness.h"

static char *dir;

static void
setup(void)
{
	dir = harness_tmpdir("cfgerr");
}

static void
teardown(void)
{
	harness_rmtree(dir);
	free(dir);
}

/*
 * Run the supervisor on cfg; check exit 78 and one line containing want.
 * Log wording kept on purpose: the one-line message to the operator is
 * the feature under test (the supervisor never serves its API here).
 */
static void
expect_config_error(const char *cfg, const char *want)
{
	char *argv[] = { (char *)harness_bin("berth-supervisor"), "-c",
		(char *)cfg, NULL };
	struct proc p;
	char *nl;

	proc_start(&p, argv, -1);
	ck_assert(proc_wait_exit(&p, 5000));
	ck_assert_msg(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 78,
	    "status 0x%x, want exit 78 (log: %s)", p.status, p.log);
	ck_assert_msg(strstr(p.log, want) != NULL, "log '%s' lacks '%s'",
	    p.log, want);
	nl = strchr(p.log, '\n');
	ck_assert_msg(nl != NULL && nl[1] == '\0', "not exactly one line: %s",
	    p.log);
	ck_assert_ptr_null(strstr(p.log, "berth-mounter["));
	proc_kill(&p);
}

static const char *
config(const char *text)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/berth.json", dir);
	harness_write(path, text);
	return path;
}

START_TEST(missing_config)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/none.json", dir);
	expect_config_error(path, "cannot read config");
}
END_TEST

START_TEST(unreadable_config)
{
	expect_config_error(config("{\"data_dir\": "), "line 1");
}
END_TEST

START_TEST(unknown_key)
{
	expect_config_error(config("{\"datadir\": \"/x\"}"),
	    "unknown key \"datadir\": remove it");
}
END_TEST

START_TEST(missing_user)
{
	expect_config_error(config("{\"user\": \"no-such-berth-user\"}"),
	    "user 'no-such-berth-user' does not exist: create it (useradd");
}
END_TEST

START_TEST(missing_registry_user)
{
	expect_config_error(config("{\"registry_user\": \"nobody-berth\"}"),
	    "user 'nobody-berth' does not exist");
}
END_TEST

START_TEST(socket_path_too_long)
{
	char text[512], longdir[120];

	memset(longdir, 'r', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	snprintf(text, sizeof(text), "{\"run_dir\": \"%s\"}", longdir);
	expect_config_error(config(text), "over the 107-byte limit of unix "
	    "sockets: choose a shorter \"run_dir\"");
}
END_TEST

START_TEST(missing_api_group)
{
	expect_config_error(config("{\"api_group\": \"no-such-berth-group\"}"),
	    "\"api_group\" names group no-such-berth-group, which does not "
	    "exist");
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("config_errors");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, missing_config);
	tcase_add_test(tc, unreadable_config);
	tcase_add_test(tc, unknown_key);
	tcase_add_test(tc, missing_user);
	tcase_add_test(tc, missing_registry_user);
	tcase_add_test(tc, socket_path_too_long);
	tcase_add_test(tc, missing_api_group);
	return harness_run("config_errors", tc);
}
