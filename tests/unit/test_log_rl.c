/*
 * test_log_rl.c: rate-limited log lines. A burst passes, the rest are
 * counted, not written, and the count is reported once the window is
 * past: with the site's next line, or by log_rl_flush().
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "harness.h"
#include "log.h"

static int saved_err = -1, rd = -1;

static void
capture(void)
{
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	saved_err = dup(STDERR_FILENO);
	ck_assert_int_eq(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	rd = p[0];
	log_init("test-log", 0);
}

static char *
captured(void)
{
	static char buf[65536];
	size_t len = 0;
	ssize_t n;

	dup2(saved_err, STDERR_FILENO);
	close(saved_err);
	while ((n = read(rd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(rd);
	buf[len] = '\0';
	return buf;
}

static int
count(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)) != NULL; s += strlen(what))
		n++;
	return n;
}

START_TEST(a_burst_then_counted)
{
	struct log_rl rl = { 0 };
	char *out;
	int i;

	capture();
	for (i = 0; i < 1000; i++)
		log_rl_warnx(&rl, "peer %d refused", i);
	/* The window is over: the next line reports the 990 first. */
	rl.window_ms -= LOG_RL_WINDOW_MS;
	log_rl_warnx(&rl, "peer %d refused", 1000);
	out = captured();
	/* The burst, the report (which quotes the last), the new one. */
	ck_assert_int_eq(count(out, "refused\n"), LOG_RL_BURST + 2);
	ck_assert_int_eq(count(out, "\n"), LOG_RL_BURST + 2);
	ck_assert_ptr_nonnull(strstr(out, "<4>test-log["));
	ck_assert_ptr_nonnull(strstr(out, "990 similar messages suppressed "
	    "in 10 s, the last: peer 999 refused\n"));
}
END_TEST

START_TEST(flush_reports_a_quiet_site)
{
	char *out;
	int i;

	capture();
	for (i = 0; i < 50; i++)
		log_info_limited("closed %d", i);
	/* Within the window, flush has nothing to say yet. */
	log_rl_flush();
	out = captured();
	ck_assert_int_eq(count(out, "\n"), LOG_RL_BURST);
	ck_assert_int_eq(count(out, "suppressed"), 0);
}
END_TEST

START_TEST(flush_after_the_window)
{
	struct log_rl rl = { 0 };
	char *out;
	int i;

	capture();
	for (i = 0; i < 25; i++)
		log_rl_info(&rl, "closed %d", i);
	rl.window_ms -= LOG_RL_WINDOW_MS;
	log_rl_flush();
	log_rl_flush();
	out = captured();
	ck_assert_int_eq(count(out, "15 similar messages suppressed"), 1);
	ck_assert_ptr_nonnull(strstr(out, "the last: closed 24\n"));
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("log_rl");

	tcase_add_test(tc, a_burst_then_counted);
	tcase_add_test(tc, flush_reports_a_quiet_site);
	tcase_add_test(tc, flush_after_the_window);
	return harness_run("log_rl", tc);
}
