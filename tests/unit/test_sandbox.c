/*
 * test_sandbox.c: the mounter's seccomp allow-list kills what it does not
 * allow, and lets the event loop's system calls through. Each test runs
 * the filter in a forked child and reads how it ended.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <check.h>

#include "harness.h"
#include "sandbox.h"

/* Run fn in a child under the filter; return its wait status. */
static int
under_filter(void (*fn)(void))
{
	pid_t pid;
	int status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (sandbox_seccomp() != 0)
			_exit(100);
		fn();
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void
do_socket(void)
{
	syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
}

static void
do_execve(void)
{
	char *argv[] = { "/bin/true", NULL };

	syscall(SYS_execve, "/bin/true", argv, NULL);
}

static void
do_chroot(void)
{
	syscall(SYS_chroot, "/");
}

static void
do_ptrace_like(void)
{
	syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0);
}

static void
do_allowed(void)
{
	char b[8];
	int p[2] = { -1, -1 };
	void *m;

	/* What the event loop and the channel use. */
	m = malloc(1 << 20);
	free(m);
	(void)getpid();
	if (write(STDERR_FILENO, "", 0) < 0)
		_exit(3);
	(void)read(-1, b, 0);
	(void)close(p[0]);
}

START_TEST(forbidden_calls_kill)
{
	void (*forbidden[])(void) = { do_socket, do_execve, do_chroot,
		do_ptrace_like };
	size_t i;
	int st;

	for (i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
		st = under_filter(forbidden[i]);
		ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
		    "call %zu was not killed with SIGSYS (status 0x%x)", i, st);
	}
}
END_TEST

START_TEST(allowed_calls_pass)
{
	int st = under_filter(do_allowed);

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "allowed calls did not pass (status 0x%x)", st);
}
END_TEST

START_TEST(only_the_documented_caps_are_kept)
{
	/* SECURITY.md names each one; a new one must be argued there. */
	ck_assert_int_eq(mounter_ncaps, 2);
	ck_assert_int_eq(mounter_caps[0], CAP_SYS_ADMIN);
	ck_assert_int_eq(mounter_caps[1], CAP_CHOWN);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("sandbox");

	tcase_add_test(tc, forbidden_calls_kill);
	tcase_add_test(tc, allowed_calls_pass);
	tcase_add_test(tc, only_the_documented_caps_are_kept);
	return harness_run("sandbox", tc);
}
