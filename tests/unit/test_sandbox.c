/*
 * test_sandbox.c: the mounter's seccomp allow-list kills what it does not
 * allow, and lets the event loop's system calls through. Each test runs
 * the filter in a forked child and reads how it ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "mounter.h"
#include "harness.h"
/* check.h's old fail() alias; the mounter has a fail() of its own. */
#undef fail

/* Run fn in a child under a filter; return its wait status. */
static int
under(int (*filter)(void), void (*fn)(void))
{
	pid_t pid;
	int status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (filter() != 0)
			_exit(100);
		fn();
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static int
under_filter(void (*fn)(void))
{
	return under(sandbox_seccomp, fn);
}

/* Opened before the filter, in a directory made for the test. */
static char dir[64];
static int file_fd = -1, dir_fd = -1;

static void
make_files(void)
{
	char path[128];

	snprintf(dir, sizeof(dir), "/tmp/berth-test-sandbox-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/file", dir);
	ck_assert_int_ge(file_fd = open(path, O_RDWR | O_CREAT, 0644), 0);
	ck_assert_int_ge(dir_fd = open(dir, O_RDONLY | O_DIRECTORY), 0);
}

static void
remove_files(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	close(file_fd);
	close(dir_fd);
}

/* Exits with the number of the first step that went wrong. */
#define STEP(n, call, want_errno) do { errno = 0; \
	if ((call) != ((want_errno) ? -1 : 0) || errno != (want_errno)) \
		_exit(n); } while (0)

static void
do_mode_bits(void)
{
	STEP(1, fchmod(file_fd, 04755), EPERM);
	STEP(2, fchmod(file_fd, 06755), EPERM);
	STEP(3, fchmod(file_fd, 0755), 0);
	STEP(4, mkdirat(dir_fd, "d", 02755), EPERM);
	STEP(5, mkdirat(dir_fd, "d", 04755), EPERM);
	STEP(6, mkdirat(dir_fd, "d", 0755), 0);
	/* The socket directory's one setgid mode (see SECURITY.md). */
	STEP(7, fchmod(dir_fd, 02750), 0);
	STEP(8, fchmod(dir_fd, 0755), 0);
}

static void
do_setgid_other_than_the_socket_dir(void)
{
	fchmod(file_fd, 02755);
}

START_TEST(setuid_and_setgid_bits_refused)
{
	struct stat st;
	int s;

	make_files();
	s = under_filter(do_mode_bits);
	ck_assert_msg(WIFEXITED(s) && WEXITSTATUS(s) == 0, "mode bits: "
	    "status 0x%x (exit n: step n went wrong)", s);
	ck_assert_int_eq(fstat(file_fd, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	s = under_filter(do_setgid_other_than_the_socket_dir);
	ck_assert_msg(WIFSIGNALED(s) && WTERMSIG(s) == SIGSYS, "fchmod 02755 "
	    "was not killed (status 0x%x)", s);
	ck_assert_int_eq(fstat(file_fd, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	remove_files();
}
END_TEST

static void
do_plugin_calls(void)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/file", dir);
	STEP(1, chmod(path, 04755), EPERM);
	STEP(2, fchmodat(AT_FDCWD, path, 02755, 0), EPERM);
	STEP(3, fchmod(file_fd, 04700), EPERM);
	STEP(4, mkdirat(dir_fd, "d", 04755), EPERM);
	STEP(5, mknodat(dir_fd, "n", S_IFREG | 02644, 0), EPERM);
	errno = 0;
	if (openat(dir_fd, "new", O_WRONLY | O_CREAT, 04755) != -1 ||
	    errno != EPERM)
		_exit(6);
	if (openat(dir_fd, "new", O_WRONLY | O_CREAT, 0644) < 0)
		_exit(7);
	/* Without O_CREAT a mode means nothing and is not looked at. */
	if ((fd = openat(dir_fd, "new", O_RDONLY, 04755)) < 0)
		_exit(8);
	close(fd);
	STEP(9, chmod(path, 0700), 0);
	STEP(10, unshare(CLONE_NEWUSER), EPERM);
	STEP(11, setns(dir_fd, 0), EPERM);
	STEP(12, (int)syscall(SYS_bpf, 0, NULL, 0), EPERM);
	STEP(13, (int)syscall(SYS_ptrace, 0, 0, 0, 0), EPERM);
}

START_TEST(plugin_filter_refuses_escapes_and_mode_bits)
{
	int s;

	make_files();
	s = under(sandbox_plugin_filter, do_plugin_calls);
	ck_assert_msg(WIFEXITED(s) && WEXITSTATUS(s) == 0, "plugin filter: "
	    "status 0x%x (exit n: step n went wrong)", s);
	remove_files();
}
END_TEST

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
	static const cap_value_t crun[] = { CAP_SETUID, CAP_SETGID,
		CAP_SETPCAP, CAP_MKNOD, CAP_DAC_OVERRIDE, CAP_NET_ADMIN };
	int i;

	ck_assert_int_eq(MOUNTER_NCAPS, 2);
	ck_assert_int_eq(mounter_caps[0], CAP_SYS_ADMIN);
	ck_assert_int_eq(mounter_caps[1], CAP_CHOWN);
	/* The launcher's, for crun, and no other. */
	ck_assert_int_eq(mounter_ncaps, 2 + sizeof(crun) / sizeof(crun[0]));
	for (i = 2; i < mounter_ncaps; i++)
		ck_assert_int_eq(mounter_caps[i], crun[i - 2]);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("sandbox");

	tcase_add_test(tc, forbidden_calls_kill);
	tcase_add_test(tc, allowed_calls_pass);
	tcase_add_test(tc, setuid_and_setgid_bits_refused);
	tcase_add_test(tc, plugin_filter_refuses_escapes_and_mode_bits);
	tcase_add_test(tc, only_the_documented_caps_are_kept);
	return harness_run("sandbox", tc);
}
