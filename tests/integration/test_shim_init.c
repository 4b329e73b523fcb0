/*
 * test_shim_init.c: berth-shim -I, the real binary, started as the
 * mounter's launcher starts it (pid 1 of a new pid namespace, as an
 * ordinary uid, no_new_privs, its status directory on descriptor 3 and
 * its channel on 4), and driven over its channel as the supervisor drives
 * it: the command, arguments and environment; the started and exit
 * reports; logs and the status file; a stop with a grace that kills every
 * process of the task; orphans killed with the task; a supervisor that
 * comes back through ctl.sock, which serves its uid only. The supervisor's
 * side is its own code, supervisor/drivers/shimchan.c; a few malformed
 * requests, which shimchan refuses to send, go raw.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>

#include "harness.h"
#include "shimchan.h"

struct shim {
	pid_t outer;		/* outside the namespace: the shim's parent */
	int chan;		/* the supervisor's end */
	char *dir;		/* the status directory */
	char *cwd;		/* the task's working directory */
	uid_t uid;
};

/* As crun would: a new pid namespace whose init is the shim. */
static void
shim_start(struct shim *s, uid_t uid)
{
	int sp[2], d, st;
	pid_t p;

	s->uid = uid;
	s->dir = harness_tmpdir("shim-status");
	s->cwd = harness_tmpdir("shim-cwd");
	ck_assert_int_eq(chown(s->dir, uid, 0), 0);
	ck_assert_int_eq(chmod(s->dir, 0750), 0);
	ck_assert_int_eq(chown(s->cwd, uid, uid), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sp), 0);
	ck_assert_int_ge(s->outer = fork(), 0);
	if (s->outer == 0) {
		if (unshare(CLONE_NEWPID) < 0 || (p = fork()) < 0)
			_exit(120);
		if (p == 0) {
			if (dup2(sp[1], 100) < 0 ||
			    (d = open(s->dir, O_PATH | O_DIRECTORY)) < 0 ||
			    dup2(d, 101) < 0 ||
			    dup2(100, SHIM_CHAN_FD) < 0 ||
			    dup2(101, SHIM_DIR_FD) < 0 || chdir("/") < 0 ||
			    setgroups(0, NULL) < 0 || setgid(uid) < 0 ||
			    setuid(uid) < 0 ||
			    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
				_exit(121);
			/* Root's template runs it with no argument. */
			execl(harness_bin("berth-shim"), "berth-shim",
			    uid % 2 ? "-I" : (char *)NULL, (char *)NULL);
			_exit(122);
		}
		close(sp[1]);
		if (waitpid(p, &st, 0) < 0)
			_exit(123);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	harness_track_pid(s->outer);
	close(sp[1]);
	s->chan = sp[0];
}

static void
send_str(int fd, uint32_t type, const char *str)
{
	char buf[4096];
	size_t len = strlen(str);

	memcpy(buf, &type, sizeof(type));
	memcpy(buf + 4, str, len);
	ck_assert_int_eq(send(fd, buf, 4 + len, 0), (ssize_t)(4 + len));
}

static void
send_run(struct shim *s, uint64_t run_id, uid_t sv_uid)
{
	struct shim_run r = { SHIM_MSG_RUN, sv_uid, run_id, 1 << 20, 3, 0 };

	ck_assert_int_eq(send(s->chan, &r, sizeof(r), 0), sizeof(r));
}

/* sh -c script, run as run_id, as the supervisor sends it. */
static void
run_sh_as(struct shim *s, const char *script, uint64_t run_id, bool plugin)
{
	char *args[] = { "-c", (char *)script };
	char *env[] = { "X=hello there", "PATH=/usr/bin:/bin" };
	struct shimchan_spec sp = { "/bin/sh", args, 2, env, 2, s->cwd,
		run_id, 0, 1 << 20, 3, plugin };

	ck_assert_int_eq(shimchan_send_spec(s->chan, &sp), 0);
}

static void
run_sh(struct shim *s, const char *script, uint64_t run_id)
{
	run_sh_as(s, script, run_id, false);
}

/* One report within ms. */
static struct shimchan_msg
recv_msg(int fd, int ms)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	struct shimchan_msg m;

	ck_assert_msg(poll(&pfd, 1, ms) == 1, "nothing from the shim in %d "
	    "ms", ms);
	ck_assert_int_eq(shimchan_recv(fd, &m), 1);
	return m;
}

static struct shim_started
expect_started(int fd, int err)
{
	struct shimchan_msg m = recv_msg(fd, 10000);

	ck_assert_uint_eq(m.type, SHIM_MSG_STARTED);
	ck_assert_int_eq(m.started.err, err);
	return m.started;
}

static struct shim_exit
expect_exit(int fd)
{
	struct shimchan_msg m = recv_msg(fd, 15000);

	ck_assert_uint_eq(m.type, SHIM_MSG_EXIT);
	return m.exit;
}

/* The outer process's exit code (crun's, which is the shim's). */
static int
outer_exit(struct shim *s)
{
	int st;

	ck_assert_int_eq(waitpid(s->outer, &st, 0), s->outer);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Processes of uid on the host, by /proc. */
static int
procs_of(uid_t uid)
{
	char path[300];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int n = 0;

	ck_assert_ptr_nonnull(d = opendir("/proc"));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		/* /proc/<pid>'s owner is the process's uid, unless it is
		 * undumpable (the shim): then ask its status. */
		if (stat(path, &st) < 0)
			continue;
		if (st.st_uid == uid)
			n++;
		else if (st.st_uid == 0) {
			char buf[128], want[64];
			pid_t pid = (pid_t)atoi(de->d_name);

			snprintf(want, sizeof(want), "%u\t", uid);
			if (proc_status_field(pid, "Uid", buf, sizeof(buf)) !=
			    NULL && strncmp(buf, want, strlen(want)) == 0)
				n++;
		}
	}
	closedir(d);
	return n;
}

static char *
slurp(const char *dir, const char *name)
{
	static char buf[4096];
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY)) < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void
shim_done(struct shim *s)
{
	close(s->chan);
	harness_rmtree(s->dir);
	harness_rmtree(s->cwd);
	free(s->dir);
	free(s->cwd);
}

START_TEST(runs_the_command_it_is_sent_and_reports_its_exit)
{
	struct shim s;
	struct shim_started st;
	struct shim_exit ex;

	shim_start(&s, 70101);
	run_sh(&s, "echo out; echo \"$X\" >&2; pwd; id -u; umask; exit 3",
	    41);
	st = expect_started(s.chan, 0);
	/* The shim is pid 1; its task the next one. */
	ck_assert_int_eq(st.task_pid, 2);
	ck_assert_uint_eq(st.run_id, 41);
	ex = expect_exit(s.chan);
	ck_assert_int_eq(ex.signaled, 0);
	ck_assert_int_eq(ex.code, 3);
	ck_assert_uint_eq(ex.run_id, 41);
	ck_assert_int_eq(outer_exit(&s), 0);
	ck_assert_str_eq(slurp(s.dir, SHIM_STATUS_FILE), "run 41 exited 3\n");
	{
		bool sig = true;
		int code = 0;

		ck_assert_int_eq(shimchan_read_status(s.dir, 41, &sig, &code),
		    1);
		ck_assert(!sig);
		ck_assert_int_eq(code, 3);
		/* Another run's status is not this one's. */
		ck_assert_int_eq(shimchan_read_status(s.dir, 40, &sig, &code),
		    0);
	}
	{
		char want[600];

		snprintf(want, sizeof(want), "out\n%s\n70101\n0022\n",
		    s.cwd);
		ck_assert_str_eq(slurp(s.dir, SHIM_STDOUT_LOG), want);
	}
	ck_assert_str_eq(slurp(s.dir, SHIM_STDERR_LOG), "hello there\n");
	ck_assert_int_eq(procs_of(s.uid), 0);
	shim_done(&s);
}
END_TEST

/* A CSI plugin's umask lets its socket dir's group (berth) connect. */
START_TEST(a_plugin_runs_with_umask_007)
{
	struct shim s;

	shim_start(&s, 70106);
	run_sh_as(&s, "umask", 43, true);
	expect_started(s.chan, 0);
	ck_assert_int_eq(expect_exit(s.chan).code, 0);
	ck_assert_int_eq(outer_exit(&s), 0);
	ck_assert_str_eq(slurp(s.dir, SHIM_STDOUT_LOG), "0007\n");
	shim_done(&s);
}
END_TEST

START_TEST(a_command_that_cannot_run_is_reported_and_nothing_stays)
{
	struct shim s;
	struct shim_started st;

	shim_start(&s, 70102);
	{
		struct shimchan_spec sp = { "/nonexistent/task", NULL, 0,
			NULL, 0, NULL, 7, 0, 0, 0, false };

		ck_assert_int_eq(shimchan_send_spec(s.chan, &sp), 0);
	}
	st = expect_started(s.chan, ENOENT);
	ck_assert_int_eq(st.stage, SHIM_STAGE_EXEC);
	ck_assert_int_eq(outer_exit(&s), 1);
	ck_assert_ptr_null(slurp(s.dir, SHIM_STATUS_FILE));
	/* A relative command is refused before anything runs: by the
	 * supervisor's side, and by the shim if it comes anyway. */
	{
		char *env[] = { "JUSTANAME" };
		struct shimchan_spec sp = { "sh", NULL, 0, NULL, 0, NULL, 8, 0,
			0, 0, false };

		ck_assert_int_eq(shimchan_send_spec(s.chan, &sp), -EINVAL);
		sp.command = "/bin/true";
		sp.env = env;
		sp.nenv = 1;
		ck_assert_int_eq(shimchan_send_spec(s.chan, &sp), -EINVAL);
	}
	shim_done(&s);
	shim_start(&s, 70102);
	send_str(s.chan, SHIM_MSG_ARG, "sh");
	send_run(&s, 8, 0);
	st = expect_started(s.chan, EINVAL);
	ck_assert_int_eq(st.stage, SHIM_STAGE_SETUP);
	ck_assert_int_eq(outer_exit(&s), 1);
	/* An environment entry with no '=' too. */
	shim_done(&s);
	shim_start(&s, 70102);
	send_str(s.chan, SHIM_MSG_ARG, "/bin/true");
	send_str(s.chan, SHIM_MSG_ENV, "JUSTANAME");
	st = expect_started(s.chan, EINVAL);
	ck_assert_int_eq(outer_exit(&s), 1);
	ck_assert_int_eq(procs_of(s.uid), 0);
	shim_done(&s);
}
END_TEST

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(a_stop_kills_every_process_of_the_task_after_its_grace)
{
	struct shim s;
	struct shim_exit ex;
	long long t0;
	int i;

	shim_start(&s, 70103);
	run_sh(&s, "trap '' TERM; sleep 300 & (trap '' TERM; sleep 301) & "
	    "echo up; wait", 9);
	expect_started(s.chan, 0);
	for (i = 0; i < 100 && procs_of(s.uid) < 4; i++)
		usleep(20000);
	/* The shim, sh and both sleeps (the subshell may exec its own). */
	ck_assert_int_ge(procs_of(s.uid), 4);
	t0 = now_ms();
	ck_assert_int_eq(shimchan_stop(s.chan, SIGTERM, 400), 0);
	ex = expect_exit(s.chan);
	/* sh ignores SIGTERM: SIGKILL after the grace. */
	ck_assert_int_ge(now_ms() - t0, 350);
	ck_assert_int_eq(ex.signaled, 1);
	ck_assert_int_eq(ex.code, SIGKILL);
	ck_assert_int_eq(outer_exit(&s), 0);
	ck_assert_int_eq(procs_of(s.uid), 0);
	ck_assert_str_eq(slurp(s.dir, SHIM_STATUS_FILE), "run 9 signaled 9\n");
	shim_done(&s);
}
END_TEST

START_TEST(what_the_task_left_behind_dies_with_it)
{
	struct shim s;
	struct shim_exit ex;

	shim_start(&s, 70104);
	run_sh(&s, "setsid sleep 300 & sleep 300 & exit 0", 10);
	expect_started(s.chan, 0);
	ex = expect_exit(s.chan);
	ck_assert_int_eq(ex.signaled, 0);
	ck_assert_int_eq(ex.code, 0);
	ck_assert_int_eq(outer_exit(&s), 0);
	ck_assert_int_eq(procs_of(s.uid), 0);
	shim_done(&s);
}
END_TEST

/* Connect to the shim's ctl.sock as uid (0: as this process). */
static int
ctl_connect(struct shim *s, uid_t uid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, sp[2];
	pid_t p;
	char c;

	if (uid == 0) {
		ck_assert_int_ge(fd = shimchan_connect(s->dir), 0);
		return fd;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", s->dir,
	    SHIM_CTL_SOCK);
	/* Another uid, given the groups that let it reach and write the
	 * socket: the shim must still refuse it. */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	ck_assert_int_ge(p = fork(), 0);
	if (p == 0) {
		int x = 0;

		gid_t groups[] = { 0, s->uid };

		if (setgroups(2, groups) < 0 || setgid(0) < 0 || setuid(uid) < 0 ||
		    (fd = socket(AF_UNIX, SOCK_SEQPACKET, 0)) < 0 ||
		    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			x = 1;
		else {
			struct pollfd pfd = { fd, POLLIN, 0 };
			char buf[64];

			/* Served: a STARTED report; refused: closed. */
			x = poll(&pfd, 1, 5000) == 1 &&
			    recv(fd, buf, sizeof(buf), 0) > 0 ? 2 : 3;
		}
		c = (char)x;
		(void)!write(sp[1], &c, 1);
		_exit(0);
	}
	close(sp[1]);
	ck_assert_int_eq(read(sp[0], &c, 1), 1);
	close(sp[0]);
	waitpid(p, NULL, 0);
	return c;
}

START_TEST(a_restarted_supervisor_comes_back_through_ctl_sock)
{
	struct shim s;
	struct shim_started st, again;
	struct shim_exit ex;
	struct stat sb;
	char path[600];
	int fd;

	shim_start(&s, 70105);
	run_sh(&s, "exec sleep 300", 11);
	st = expect_started(s.chan, 0);
	snprintf(path, sizeof(path), "%s/%s", s.dir, SHIM_CTL_SOCK);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert(S_ISSOCK(sb.st_mode));
	ck_assert_int_eq(sb.st_mode & 0777, 0660);
	ck_assert_uint_eq(sb.st_uid, 70105);
	/* Undumpable: its /proc files are root's, though it runs as 70105. */
	{
		char buf[64];
		long shim;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children",
		    (long)s.outer, (long)s.outer);
		ck_assert_ptr_nonnull(f = fopen(path, "r"));
		ck_assert_int_eq(fscanf(f, "%ld", &shim), 1);
		fclose(f);
		ck_assert_ptr_nonnull(proc_status_field(shim, "Uid", buf,
		    sizeof(buf)));
		ck_assert_int_eq(strncmp(buf, "70105\t", 6), 0);
		snprintf(path, sizeof(path), "/proc/%ld/fd", shim);
		ck_assert_int_eq(stat(path, &sb), 0);
		ck_assert_uint_eq(sb.st_uid, 0);
	}
	/* The supervisor goes away; the task goes on. */
	close(s.chan);
	usleep(100000);
	ck_assert_int_eq(procs_of(s.uid), 2);
	/* Any uid but the supervisor's is turned away... */
	ck_assert_int_eq(ctl_connect(&s, 70106), 3);
	/* ...and the supervisor's gets the task back. */
	s.chan = fd = ctl_connect(&s, 0);
	again = expect_started(fd, 0);
	ck_assert_int_eq(again.task_pid, st.task_pid);
	ck_assert_uint_eq(again.run_id, 11);
	ck_assert_int_eq(shimchan_stop(fd, SIGTERM, 5000), 0);
	ex = expect_exit(fd);
	ck_assert_int_eq(ex.signaled, 1);
	ck_assert_int_eq(ex.code, SIGTERM);
	ck_assert_int_eq(outer_exit(&s), 0);
	ck_assert_str_eq(slurp(s.dir, SHIM_STATUS_FILE), "run 11 signaled 15\n");
	ck_assert_int_eq(procs_of(s.uid), 0);
	shim_done(&s);
}
END_TEST

START_TEST(only_the_init_of_a_pid_namespace_runs_as_one)
{
	char *argv[] = { (char *)harness_bin("berth-shim"), "-I", NULL };
	struct proc p;

	proc_start(&p, argv, -1);
	ck_assert(proc_wait_exit(&p, 5000));
	ck_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 1);
	ck_assert_ptr_nonnull(strstr(p.log, "not the init of a pid namespace"));
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("shim_init");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, runs_the_command_it_is_sent_and_reports_its_exit);
	tcase_add_test(tc, a_plugin_runs_with_umask_007);
	tcase_add_test(tc,
	    a_command_that_cannot_run_is_reported_and_nothing_stays);
	tcase_add_test(tc,
	    a_stop_kills_every_process_of_the_task_after_its_grace);
	tcase_add_test(tc, what_the_task_left_behind_dies_with_it);
	tcase_add_test(tc, a_restarted_supervisor_comes_back_through_ctl_sock);
	tcase_add_test(tc, only_the_init_of_a_pid_namespace_runs_as_one);
	return harness_run("shim_init", tc);
}
