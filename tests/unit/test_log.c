/*
 * test_log.c: every log line is one line with a journald priority prefix,
 * whatever the message holds, and one write(2) each.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>

#include "harness.h"
#include "log.h"

static int saved_err = -1;
static int rd = -1;

/* Point stderr at a pipe whose read end the test holds. */
static void
capture(void)
{
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	saved_err = dup(STDERR_FILENO);
	ck_assert_int_ge(saved_err, 0);
	ck_assert_int_eq(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
	close(p[1]);
	rd = p[0];
	log_init("test-log", 0);
}

/* Everything written since capture(), NUL-terminated; restores stderr. */
static char *
captured(void)
{
	static char buf[16384];
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
count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

START_TEST(priority_prefixes)
{
	char want[128], *out;

	capture();
	log_errx("e %d", 1);
	log_warnx("w");
	log_info("i");
	log_debug("hidden");
	log_init("test-log", 1);
	log_debug("d");
	out = captured();
	snprintf(want, sizeof(want), "<3>test-log[%ld]: e 1\n"
	    "<4>test-log[%ld]: w\n<6>test-log[%ld]: i\n<7>test-log[%ld]: d\n",
	    (long)getpid(), (long)getpid(), (long)getpid(), (long)getpid());
	ck_assert_str_eq(out, want);
}
END_TEST

/*
 * Under journald (stderr is the stream JOURNAL_STREAM names) the journal
 * adds "name[pid]: "; berth's own would make it twice. A JOURNAL_STREAM
 * that names another stream (inherited, stale) keeps the prefix.
 */
START_TEST(journal_stream_drops_name)
{
	char js[64], want[64], *out;
	struct stat st;

	capture();
	ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
	ck_assert_int_eq(setenv("JOURNAL_STREAM", js, 1), 0);
	log_init("test-log", 0);
	log_warnx("w");
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino + 1);
	ck_assert_int_eq(setenv("JOURNAL_STREAM", js, 1), 0);
	log_init("test-log", 0);
	log_info("i");
	unsetenv("JOURNAL_STREAM");
	out = captured();
	snprintf(want, sizeof(want), "<4>w\n<6>test-log[%ld]: i\n",
	    (long)getpid());
	ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(errno_text_appended)
{
	char *out;

	capture();
	errno = ENOENT;
	log_warn("opening %s", "/nowhere");
	out = captured();
	ck_assert_ptr_nonnull(strstr(out, "<4>"));
	ck_assert_ptr_nonnull(strstr(out,
	    "opening /nowhere: No such file or directory\n"));
	ck_assert_int_eq(count_lines(out), 1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/* A plugin's error text cannot forge a line of its own. */
START_TEST(control_characters_escaped)
{
	char *out;

	capture();
	log_warnx("plugin said: %s", "bad\n<0>test-log[1]: forged\r\x1b[2J");
	out = captured();
	ck_assert_int_eq(count_lines(out), 1);
	ck_assert_ptr_null(strstr(out, "\n<0>"));
	ck_assert_ptr_nonnull(strstr(out,
	    "plugin said: bad\\x0a<0>test-log[1]: forged\\x0d\\x1b[2J\n"));
}
END_TEST

START_TEST(long_message_stays_one_line)
{
	static char big[8192];
	char *out;

	memset(big, 'x', sizeof(big) - 1);
	memset(big + 100, '\n', 200);
	capture();
	errno = EACCES;
	log_err("%s", big);
	out = captured();
	ck_assert_int_eq(count_lines(out), 1);
	ck_assert_uint_le(strlen(out), 2048);
	ck_assert_ptr_nonnull(strstr(out, ": Permission denied\n"));
}
END_TEST

START_TEST(escape_bounds)
{
	char small[8];

	ck_assert_uint_eq(log_escape(small, sizeof(small), "abc"), 3);
	ck_assert_str_eq(small, "abc");
	/* An escape that does not fit whole is left out, never cut. */
	ck_assert_uint_eq(log_escape(small, sizeof(small), "abcd\n"), 4);
	ck_assert_str_eq(small, "abcd");
	ck_assert_uint_eq(log_escape(small, sizeof(small), "\t"), 4);
	ck_assert_str_eq(small, "\\x09");
	ck_assert_uint_eq(log_escape(small, sizeof(small), "abcdefghij"), 7);
	ck_assert_str_eq(small, "abcdefg");
}
END_TEST

START_TEST(fatal_is_critical_and_exits)
{
	char buf[256] = "", want[128];
	int p[2], status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		dup2(p[1], STDERR_FILENO);
		log_init("test-log", 0);
		fatalx("cannot go on");
	}
	ck_assert_int_gt(pid, 0);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	ck_assert_int_gt(n, 0);
	snprintf(want, sizeof(want), "<2>test-log[%ld]: cannot go on\n",
	    (long)pid);
	ck_assert_str_eq(buf, want);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("log");

	tcase_add_test(tc, priority_prefixes);
	tcase_add_test(tc, journal_stream_drops_name);
	tcase_add_test(tc, errno_text_appended);
	tcase_add_test(tc, control_characters_escaped);
	tcase_add_test(tc, long_message_stays_one_line);
	tcase_add_test(tc, escape_bounds);
	tcase_add_test(tc, fatal_is_critical_and_exits);
	return harness_run("log", tc);
}
