/*
 * test_privsep.c: the three real processes, started as root in spawn mode
 * inside a private mount namespace, judged from /proc the way an auditor
 * would; then each one killed in turn, to prove that a dead helper stops
 * the supervisor (naming it) and a dead supervisor leaves no helper.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <check.h>

#include "svtest.h"

/* A minimal config (no alloc_dir, no plugin settings), then started. */
static void
privsep_up(struct berth *b)
{
	char text[1024];

	harness_private_mounts();
	b->dir = harness_tmpdir("privsep");
	berth_paths(b);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\"}", b->dir, b->dir);
	harness_write(b->cfg, text);
	berth_start(b);
}

static void
privsep_down(struct berth *b)
{
	proc_kill(&b->sv);
	ck_assert(pid_wait_gone(b->mounter, 2000));
	ck_assert(pid_wait_gone(b->registry, 2000));
	harness_rmtree(b->dir);
	free(b->dir);
}

static void
expect(pid_t pid, const char *field, const char *want)
{
	char buf[256];

	ck_assert_msg(proc_status_field(pid, field, buf, sizeof(buf)) != NULL,
	    "pid %ld has no %s", (long)pid, field);
	ck_assert_msg(strcmp(buf, want) == 0, "pid %ld %s is '%s', want '%s'",
	    (long)pid, field, buf, want);
}

static void
expect_unprivileged(pid_t pid)
{
	char buf[256];

	ck_assert_ptr_nonnull(proc_status_field(pid, "Uid", buf, sizeof(buf)));
	ck_assert_msg(atoi(buf) != 0, "pid %ld runs as uid 0", (long)pid);
	ck_assert_ptr_null(strstr(buf, "\t0"));
	expect(pid, "CapEff", "0000000000000000");
	expect(pid, "CapPrm", "0000000000000000");
	expect(pid, "CapInh", "0000000000000000");
	expect(pid, "CapAmb", "0000000000000000");
	expect(pid, "CapBnd", "0000000000000000");
	expect(pid, "NoNewPrivs", "1");
	expect(pid, "Groups", "");
}

/* No descriptor of pid points at path. */
static void
expect_not_open(pid_t pid, const char *path)
{
	char dir[64], link[512], target[512];
	struct dirent *de;
	ssize_t n;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		if ((n = readlink(link, target, sizeof(target) - 1)) < 0)
			continue;
		target[n] = '\0';
		ck_assert_msg(strcmp(target, path) != 0,
		    "pid %ld inherited descriptor %s on %s", (long)pid,
		    de->d_name, path);
	}
	closedir(d);
}

static void
expect_empty_environment(pid_t pid)
{
	char path[64], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	ck_assert_msg(n == 0, "pid %ld has an environment (%zd bytes)",
	    (long)pid, n);
}

START_TEST(privileges_as_seen_in_proc)
{
	struct berth b;
	char leak[512], uid_sv[64], uid_reg[64];
	int leakfd;

	/* An inheritable descriptor and a variable no helper may keep. */
	setenv("BERTH_TEST_SECRET", "must-not-reach-helpers", 1);
	snprintf(leak, sizeof(leak), "/tmp/berth-test-leak-%ld",
	    (long)getpid());
	leakfd = open(leak, O_CREAT | O_RDWR, 0600);
	ck_assert_int_ge(leakfd, 0);
	privsep_up(&b);

	expect_unprivileged(b.sv.pid);
	expect_unprivileged(b.registry);
	proc_status_field(b.sv.pid, "Uid", uid_sv, sizeof(uid_sv));
	proc_status_field(b.registry, "Uid", uid_reg, sizeof(uid_reg));
	ck_assert_msg(strcmp(uid_sv, uid_reg) != 0,
	    "supervisor and registry share a uid");

	expect(b.mounter, "Uid", "0\t0\t0\t0");
	expect(b.mounter, "CapEff", "0000000000200001");	/* SYS_ADMIN, CHOWN */
	expect(b.mounter, "CapPrm", "0000000000200001");
	expect(b.mounter, "CapBnd", "0000000000200001");
	expect(b.mounter, "CapInh", "0000000000000000");
	expect(b.mounter, "CapAmb", "0000000000000000");
	expect(b.mounter, "NoNewPrivs", "1");
	expect(b.mounter, "Seccomp", "2");

	expect_not_open(b.mounter, leak);
	expect_not_open(b.registry, leak);
	expect_empty_environment(b.mounter);
	expect_empty_environment(b.registry);

	/* SIGTERM: mounter, then registry, then the supervisor, cleanly. */
	kill(b.sv.pid, SIGTERM);
	ck_assert(proc_wait_exit(&b.sv, 10000));
	ck_assert_msg(WIFEXITED(b.sv.status) && WEXITSTATUS(b.sv.status) == 0,
	    "supervisor status 0x%x after SIGTERM", b.sv.status);
	ck_assert(!pid_alive(b.mounter));
	ck_assert(!pid_alive(b.registry));
	/*
	 * Log wording kept: the order of a shutdown and its clean end are
	 * told as the supervisor exits, when its API is gone.
	 */
	{
		const char *m = strstr(b.sv.log, "peer_reaped: berth-mounter");
		const char *r = strstr(b.sv.log, "peer_reaped: berth-registry");

		ck_assert_ptr_nonnull(m);
		ck_assert_ptr_nonnull(r);
		ck_assert_msg(m < r, "registry stopped before the mounter");
	}
	ck_assert_ptr_nonnull(strstr(b.sv.log, "stopped cleanly"));
	close(leakfd);
	unlink(leak);
	privsep_down(&b);
}
END_TEST

/* Kill one helper: the supervisor names it, exits non-zero, and the other
 * helper is gone within a second. */
static void
kill_helper(int which)
{
	struct berth b;
	char want[128];
	pid_t victim, other;

	privsep_up(&b);
	victim = which == 0 ? b.mounter : b.registry;
	other = which == 0 ? b.registry : b.mounter;
	ck_assert_int_eq(kill(victim, SIGKILL), 0);
	ck_assert_msg(proc_wait_exit(&b.sv, 3000),
	    "supervisor still running after its helper died");
	ck_assert_msg(WIFEXITED(b.sv.status) && WEXITSTATUS(b.sv.status) != 0,
	    "supervisor status 0x%x, want a non-zero exit", b.sv.status);
	/* Log wording kept: the supervisor names the helper as it exits. */
	snprintf(want, sizeof(want), "%s (pid %ld) was killed by signal 9 "
	    "(SIGKILL)", which == 0 ? "berth-mounter" : "berth-registry",
	    (long)victim);
	ck_assert_msg(strstr(b.sv.log, want) != NULL, "log lacks '%s'", want);
	ck_assert_msg(pid_wait_gone(other, 1000),
	    "the other helper outlived the supervisor by over a second");
	privsep_down(&b);
}

START_TEST(mounter_killed)
{
	kill_helper(0);
}
END_TEST

START_TEST(registry_killed)
{
	kill_helper(1);
}
END_TEST

START_TEST(supervisor_killed)
{
	struct berth b;

	privsep_up(&b);
	ck_assert_int_eq(kill(b.sv.pid, SIGKILL), 0);
	ck_assert(proc_wait_exit(&b.sv, 2000));
	ck_assert_msg(pid_wait_gone(b.mounter, 1000),
	    "berth-mounter (root) outlived its supervisor by over a second");
	ck_assert_msg(pid_wait_gone(b.registry, 1000),
	    "berth-registry outlived its supervisor by over a second");
	privsep_down(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("privsep");

	tcase_add_test(tc, privileges_as_seen_in_proc);
	tcase_add_test(tc, mounter_killed);
	tcase_add_test(tc, registry_killed);
	tcase_add_test(tc, supervisor_killed);
	return harness_run("privsep", tc);
}
