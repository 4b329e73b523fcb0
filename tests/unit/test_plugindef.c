/*
 * test_plugindef.c: the privileged plugin definition format, which root
 * writes and the mounter parses (mounter/plugindef.c).
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>

#include "mounter.h"
#include "harness.h"
/* check.h's old fail() alias; the mounter has a fail() of its own. */
#undef fail

/* What the mounter derives for a plugin: "unix://" and its socket path. */
#define SOCK "/var/lib/berth/csi/plugins/a-1/csi.sock"
#define EP "unix://" SOCK

static int
parse(const char *text, struct plugindef *d, char *why)
{
	return plugindef_parse(text, strlen(text), EP, d, why, 256);
}

START_TEST(accepts_a_definition)
{
	struct plugindef d;
	char why[256];

	ck_assert_int_eq(parse("# hostpath\n\nexec /usr/bin/hp\narg --v=5\n"
	    "arg two words\narg \ncap CAP_SYS_ADMIN\n", &d, why), 0);
	ck_assert_str_eq(d.args[0], "/usr/bin/hp");
	ck_assert_int_eq(d.nargs, 4);
	ck_assert_str_eq(d.args[1], "--v=5");
	ck_assert_str_eq(d.args[2], "two words");
	ck_assert_str_eq(d.args[3], "");
	ck_assert(d.caps == 1ULL << CAP_SYS_ADMIN);
	/* No final newline, no capability. */
	ck_assert_int_eq(parse("exec /bin/true", &d, why), 0);
	ck_assert(d.caps == 0);
	ck_assert_int_eq(d.hostns, 0);
}
END_TEST

START_TEST(host_namespaces_only_by_name)
{
	static const char *bad[] = {
		"hostns net\n", "hostns pid\n", "hostns mnt\n", "hostns user\n",
		"hostns\n", "hostns \n", "hostns uts \n", "hostns UTS\n",
		"hostns uts,ipc\n", "hostns  uts\n",
	};
	struct plugindef d;
	char why[256], text[128];
	size_t i;

	/* By default a plugin gets its own: the launcher unshares these. */
	ck_assert_int_eq(parse("exec /a\n", &d, why), 0);
	ck_assert_int_eq(d.hostns, 0);
	ck_assert_int_eq(parse("exec /a\nhostns uts\n", &d, why), 0);
	ck_assert_int_eq(d.hostns, CLONE_NEWUTS);
	ck_assert_int_eq(parse("exec /a\nhostns ipc\nhostns cgroup\n"
	    "hostns ipc\n", &d, why), 0);
	ck_assert_int_eq(d.hostns, CLONE_NEWIPC | CLONE_NEWCGROUP);
	ck_assert_int_eq(d.hostns & ~(uint32_t)LAUNCH_NS, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "exec /a\n%s", bad[i]);
		ck_assert_msg(parse(text, &d, why) < 0, "accepted '%s'", bad[i]);
		ck_assert_msg(strncmp(why, "line 2: ", 8) == 0 &&
		    strstr(why, "hostns") != NULL, "why: %s", why);
	}
}
END_TEST

START_TEST(refuses_what_it_does_not_know)
{
	static const char *bad[] = {
		"", "# only a comment\n", "arg x\n", "exec bin/true\n",
		"exec /usr/../bin/sh\n", "exec /usr/bin/..\n",
		"exec /a\nexec /b\n", "exec /a\ncap CAP_NET_ADMIN\n",
		"exec /a\ncap CAP_SETUID\n", "exec /a\ncap sys_admin\n",
		"exec /a\ncap 21\n", "exec /a\nenv X=1\n", " exec /a\n",
		"exec /a\r\n", "exec /a\narg caf\xc3\xa9\n", "exec /a\targ\n",
		"EXEC /a\n", "exec /a\narg\n",
	};
	struct plugindef d;
	char why[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse(bad[i], &d, why) < 0, "accepted '%s'",
		    bad[i]);
	ck_assert_int_eq(plugindef_parse("exec /a\0b\n", 10, EP, &d, why,
	    256), -1);
	ck_assert_str_eq(why, "line 1: byte 0x00 is not printable ASCII");
}
END_TEST

START_TEST(replaces_the_endpoint_placeholders)
{
	struct plugindef d;
	char why[256];

	ck_assert_int_eq(parse("exec /a\narg --endpoint={csi_endpoint}\n"
	    "arg --csi-address={csi_socket}\narg {csi_endpoint},"
	    "{csi_endpoint}\narg {csi_Endpoint} {csi_socket\n"
	    "arg 50% off #1\narg $\narg a$1 $$ $-\n", &d, why), 0);
	ck_assert_int_eq(d.nargs, 8);
	ck_assert_str_eq(d.args[1], "--endpoint=" EP);
	ck_assert_str_eq(d.args[2], "--csi-address=" SOCK);
	ck_assert_str_eq(d.args[3], EP "," EP);
	/* Only the exact placeholders; other text stays as written. */
	ck_assert_str_eq(d.args[4], "{csi_Endpoint} {csi_socket");
	ck_assert_str_eq(d.args[5], "50% off #1");
	ck_assert_str_eq(d.args[6], "$");
	ck_assert_str_eq(d.args[7], "a$1 $$ $-");
	/* A result over LAUNCH_STR is refused, never cut. */
	ck_assert_int_eq(parse("exec /a\narg {csi_endpoint}{csi_endpoint}"
	    "{csi_endpoint}{csi_endpoint}{csi_endpoint}{csi_endpoint}\n", &d,
	    why), -1);
	ck_assert_msg(strstr(why, "line 2: ") == why &&
	    strstr(why, "once expanded") != NULL, "why: %s", why);
}
END_TEST

START_TEST(refuses_shell_variables)
{
	static const char *bad[] = {
		"arg --endpoint=$CSI_ENDPOINT", "arg --endpoint=${CSI_ENDPOINT}",
		"arg ${X}", "arg $x", "arg $_", "arg a $HOME b", "arg $$ $PWD",
	};
	struct plugindef d;
	char why[256], text[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "exec /a\narg --v=5\n%s\n",
		    bad[i]);
		ck_assert_msg(parse(text, &d, why) < 0, "accepted '%s'", bad[i]);
		ck_assert_msg(strncmp(why, "line 3: '", 9) == 0 &&
		    strstr(why, bad[i] + 4) != NULL &&
		    strstr(why, "nothing expands variables") != NULL &&
		    strstr(why, "{csi_endpoint}") != NULL, "why: %s", why);
	}
	/* The placeholder is not a way around it. */
	ck_assert_int_eq(parse("exec /a\narg {csi_endpoint}$X\n", &d, why),
	    -1);
}
END_TEST

START_TEST(bounds_arguments_and_size)
{
	static char big[PLUGINDEF_MAX + 64];
	struct plugindef d;
	char why[256], *p = big;
	int i;

	p += sprintf(p, "exec /a\n");
	for (i = 0; i < LAUNCH_ARGS - 1; i++)
		p += sprintf(p, "arg %d\n", i);
	ck_assert_int_eq(parse(big, &d, why), 0);
	ck_assert_int_eq(d.nargs, LAUNCH_ARGS);
	sprintf(p, "arg one too many\n");
	ck_assert_int_eq(parse(big, &d, why), -1);
	memset(big, '#', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(parse(big, &d, why), -1);
	ck_assert_str_eq(why, "is over 8192 bytes");
	memset(big, 'x', LAUNCH_STR + 8);
	memcpy(big, "arg ", 4);
	big[LAUNCH_STR + 8] = '\0';
	ck_assert_int_eq(parse(big, &d, why), -1);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("plugindef");

	tcase_add_test(tc, accepts_a_definition);
	tcase_add_test(tc, refuses_what_it_does_not_know);
	tcase_add_test(tc, host_namespaces_only_by_name);
	tcase_add_test(tc, replaces_the_endpoint_placeholders);
	tcase_add_test(tc, refuses_shell_variables);
	tcase_add_test(tc, bounds_arguments_and_size);
	return harness_run("plugindef", tc);
}
