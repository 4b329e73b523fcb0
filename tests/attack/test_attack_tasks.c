/*
 * test_attack_tasks.c: attacks from inside a task. Each task is a shell
 * script, run as an exec task runs: the real berth-mounter starts its
 * sandbox under the real crun (StartTask), with the real berth-shim as
 * its init, and the test, standing in for the supervisor, sends the
 * command over the shim's channel. The script tries one door and prints
 * "OPEN <door>" if it opens; the test also checks from outside.
 *
 * Doors: api.sock, mounter.sock and registry.sock; signalling, tracing or
 * reading /proc of berth's processes (and of the shim); another
 * allocation's directory and status files, and its mounts (the task
 * directory's bind receives mounts, rslave); leaving the pid namespace;
 * going past the memory or the pids limit; leaving a process behind after
 * a stop; forging the exit status.
 *
 * As root, in a private mount namespace. The suite ends with "N attacks
 * tried, M succeeded".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "mclient.h"
#include "shim.h"

#define PEER 70050		/* the supervisor, as the mounter sees it */
#define MB (1024 * 1024)

static struct mclient c;
static char *conf, cg[64];

struct run {
	const char *alloc, *task;
	int pidfd, chan;
	uint64_t run_id;
	struct shim_exit ex;
	char out[16384];
	char err[4096];
};

static char *
slurp(const char *path)
{
	static char buf[16384];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void
setup(void)
{
	static const char *args[10];
	char path[1024], *tpl;

	harness_private_mounts();
	conf = harness_tmpdir("conf");
	snprintf(path, sizeof(path), "%s/contrib/sandbox/task-sandbox.json",
	    getenv("BERTH_SOURCE_DIR"));
	ck_assert_ptr_nonnull(tpl = slurp(path));
	snprintf(path, sizeof(path), "%s/task-sandbox.json", conf);
	harness_write(path, tpl);
	snprintf(path, sizeof(path), "%s/users.allow", conf);
	harness_write(path, "# NAME UID GID\n");
	snprintf(cg, sizeof(cg), "/berth-test-%ld", (long)getpid());
	args[0] = "--task-conf";
	args[1] = conf;
	args[2] = "--task-ids";
	args[3] = "70000-70099";
	args[4] = "--shim";
	args[5] = harness_bin("berth-shim");
	args[6] = "--cgroup-parent";
	args[7] = cg;
	args[8] = NULL;
	mc_start_opts(&c, NULL, args, PEER);
}

/* crun makes the cgroup parent in every hierarchy: remove it from all. */
static void
teardown(void)
{
	char path[600];
	struct dirent *de;
	DIR *d;

	mc_stop(&c);
	harness_rmtree(conf);
	free(conf);
	if ((d = opendir("/sys/fs/cgroup")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s", de->d_name,
		    cg);
		rmdir(path);
	}
	closedir(d);
}

static void
send_str(int fd, uint32_t type, const char *str)
{
	static char buf[SHIM_MSG_MAX];
	size_t len = strlen(str);

	ck_assert_uint_lt(len + 4, sizeof(buf));
	memcpy(buf, &type, sizeof(type));
	memcpy(buf + 4, str, len);
	ck_assert_int_eq(send(fd, buf, 4 + len, 0), (ssize_t)(4 + len));
}

static const char *
task_dir(const char *alloc, const char *task)
{
	static char rel[512];

	snprintf(rel, sizeof(rel), "allocs/%s/%s", alloc, task);
	return mc_path(&c, rel);
}

/* Start script as the task alloc/task, uid, with the limits given. */
static void
start(struct run *r, const char *alloc, const char *task, unsigned uid,
    uint64_t memory, uint32_t pids, const char *script)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *rep = NULL;
	Berth__StartTask st = BERTH__START_TASK__INIT;
	struct shim_run run = { SHIM_MSG_RUN, 0, 0, 1 << 20, 2, 0 };
	struct shim_started started;
	struct pollfd pfd;
	int fds[2] = { -1, -1 };

	memset(r, 0, sizeof(*r));
	r->alloc = alloc;
	r->task = task;
	r->run_id = run.run_id = 1000 + uid;
	ck_assert_int_eq(mc_prepare_task(&c, alloc, task, uid, uid), 0);
	st.alloc_id = B(alloc);
	st.task = B(task);
	st.uid = st.gid = uid;
	st.memory_bytes = memory;
	st.pids_max = pids;
	env.body_case = BERTH__ENVELOPE__BODY_START_TASK;
	env.start_task = &st;
	ck_assert_int_eq(mc_call(&c, &env, fds, &rep), 0);
	berth__envelope__free_unpacked(rep, NULL);
	r->pidfd = fds[0];
	r->chan = fds[1];
	send_str(r->chan, SHIM_MSG_ARG, "/bin/sh");
	send_str(r->chan, SHIM_MSG_ARG, "-c");
	send_str(r->chan, SHIM_MSG_ARG, script);
	send_str(r->chan, SHIM_MSG_ENV, "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
	send_str(r->chan, SHIM_MSG_DIR, task_dir(alloc, task));
	ck_assert_int_eq(send(r->chan, &run, sizeof(run), 0), sizeof(run));
	pfd = (struct pollfd){ r->chan, POLLIN, 0 };
	ck_assert_msg(poll(&pfd, 1, 20000) == 1, "no word from the shim");
	ck_assert_int_eq(recv(r->chan, &started, sizeof(started), 0),
	    sizeof(started));
	ck_assert_uint_eq(started.type, SHIM_MSG_STARTED);
	ck_assert_msg(started.err == 0, "the task did not start: %s (stage "
	    "%d)", strerror(started.err), started.stage);
}

/* Its exit report, then its stdout; crun ends with it. */
static void
wait_end(struct run *r)
{
	struct pollfd pfd = { r->chan, POLLIN, 0 };
	char path[600];
	const char *out;
	int i;

	ck_assert_msg(poll(&pfd, 1, 60000) == 1, "the task did not end");
	ck_assert_int_eq(recv(r->chan, &r->ex, sizeof(r->ex), 0),
	    sizeof(r->ex));
	ck_assert_uint_eq(r->ex.type, SHIM_MSG_EXIT);
	ck_assert_uint_eq(r->ex.run_id, r->run_id);
	pfd = (struct pollfd){ r->pidfd, POLLIN, 0 };
	ck_assert_msg(poll(&pfd, 1, 20000) == 1, "crun did not end");
	close(r->pidfd);
	close(r->chan);
	snprintf(path, sizeof(path), "shim/%s/%s/" SHIM_STDOUT_LOG, r->alloc,
	    r->task);
	for (i = 0; i < 50 && (out = slurp(mc_path(&c, path))) == NULL; i++)
		usleep(20000);
	ck_assert_ptr_nonnull(out);
	snprintf(r->out, sizeof(r->out), "%s", out);
	snprintf(path, sizeof(path), "shim/%s/%s/" SHIM_STDERR_LOG, r->alloc,
	    r->task);
	out = slurp(mc_path(&c, path));
	snprintf(r->err, sizeof(r->err), "%.4000s", out != NULL ? out : "");
}

static void
closed(const struct run *r)
{
	const char *p = strstr(r->out, "OPEN ");

	ck_assert_msg(p == NULL, "a door opened: %s", p);
	ck_assert_msg(strstr(r->out, "DONE\n") != NULL, "the script did not "
	    "finish: stdout: %s; stderr: %s", r->out, r->err);
}

/* Processes of uid on the host. */
static int
procs_of(uid_t uid)
{
	char path[300], buf[256], want[32];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(want, sizeof(want), "%u\t", (unsigned)uid);
	ck_assert_ptr_nonnull(d = opendir("/proc"));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s", de->d_name);
		if (proc_status_field((pid_t)atoi(path), "Uid", buf,
		    sizeof(buf)) != NULL && strncmp(buf, want,
		    strlen(want)) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static int
listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	ck_assert_int_ge(fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(chmod(path, 0666), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	return fd;
}

START_TEST(berths_sockets_are_out_of_reach)
{
	static const char *const names[] = { "api.sock", "mounter.sock",
		"registry.sock" };
	char script[4096], path[600];
	int fds[3], own;
	struct run r;
	size_t i;

	/* Open to all, as a careless operator might leave them. */
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", c.run, names[i]);
		fds[i] = listen_at(path);
	}
	/* And one the task may reach, in its own directory: the control
	 * that shows the attempts are real. */
	ck_assert_int_eq(mc_prepare_task(&c, "a", "web", 70001, 70001), 0);
	snprintf(path, sizeof(path), "%s/own.sock", task_dir("a", "web"));
	own = listen_at(path);
	snprintf(script, sizeof(script),
	    "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX);"
	    " s.connect(sys.argv[1])' %s && echo REACHED own.sock; "
	    "for s in api mounter registry; do "
	    "  [ -e %s/$s.sock ] && echo \"OPEN sees $s.sock\"; "
	    "  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX);"
	    " s.connect(sys.argv[1])' %s/$s.sock 2>/dev/null && "
	    "  echo \"OPEN connects to $s.sock\"; "
	    "done; "
	    "[ -e %s ] && echo 'OPEN sees run_dir'; echo DONE",
	    path, c.run, c.run, c.run);
	start(&r, "a", "web", 70001, 64 * MB, 64, script);
	wait_end(&r);
	closed(&r);
	ck_assert_msg(strstr(r.out, "REACHED own.sock\n") != NULL, "%s", r.out);
	ck_assert_int_ge(accept(own, NULL, NULL), 0);
	close(own);
	for (i = 0; i < 3; i++) {
		ck_assert_msg(accept(fds[i], NULL, NULL) < 0 && errno ==
		    EAGAIN, "%s was connected to", names[i]);
		close(fds[i]);
	}
}
END_TEST

START_TEST(berths_processes_and_the_shim_are_out_of_reach)
{
	char script[4096];
	struct run r;

	/* The mounter and this test (the supervisor's stand-in). */
	snprintf(script, sizeof(script),
	    "for p in %ld %ld; do "
	    "  kill -0 $p 2>/dev/null && echo \"OPEN signals $p\"; "
	    "  cat /proc/$p/environ >/dev/null 2>&1 && echo \"OPEN reads "
	    "/proc/$p/environ\"; "
	    "  [ -e /proc/$p/cmdline ] && grep -q berth /proc/$p/cmdline && "
	    "  echo \"OPEN sees $p\"; "
	    "done; "
	    /* Its init: the shim, of its own uid. */
	    "cat /proc/1/environ >/dev/null 2>&1 && echo 'OPEN reads the "
	    "environ of the shim'; "
	    "ls /proc/1/fd >/dev/null 2>&1 && echo 'OPEN lists the fds of the shim'; "
	    "python3 -c 'import ctypes,sys; l=ctypes.CDLL(None); "
	    "sys.exit(0 if l.ptrace(16, 1, 0, 0) == 0 else 1)' && "
	    "echo 'OPEN ptraces the shim'; "
	    "kill -KILL 1 2>/dev/null; kill -TERM 1 2>/dev/null; "
	    "kill -STOP 1 2>/dev/null; sleep 0.2; "
	    "n=$(ls /proc | grep -c '^[0-9]'); "
	    "[ $n -gt 8 ] && echo \"OPEN sees $n processes\"; echo DONE",
	    (long)c.proc.pid, (long)getpid());
	start(&r, "a", "web", 70002, 64 * MB, 64, script);
	wait_end(&r);
	closed(&r);
	/* The shim outlived the signals: it reported a clean exit. */
	ck_assert_int_eq(r.ex.signaled, 0);
	ck_assert_int_eq(r.ex.code, 0);
}
END_TEST

START_TEST(another_allocations_files_are_out_of_reach)
{
	char script[4096], path[600];
	struct run r;

	/* Alloc b's task, with a secret in its directory. */
	ck_assert_int_eq(mc_prepare_task(&c, "b", "db", 70004, 70004), 0);
	snprintf(path, sizeof(path), "%s/secret", task_dir("b", "db"));
	harness_write(path, "b's secret\n");
	snprintf(script, sizeof(script),
	    "cat %s 2>/dev/null && echo 'OPEN reads the secret of b'; "
	    "touch %s/x 2>/dev/null && echo 'OPEN writes in the dir of b'; "
	    "ls %s >/dev/null 2>&1 && echo 'OPEN sees allocs/b'; "
	    "ls %s >/dev/null 2>&1 && echo 'OPEN sees shim/'; "
	    "ls %s >/dev/null 2>&1 && echo 'OPEN sees the registry'; "
	    "ls %s 2>/dev/null | grep -v '^a$' | grep -q . && "
	    "echo 'OPEN sees other allocations'; "
	    "echo DONE",
	    path, task_dir("b", "db"), mc_path(&c, "allocs/b"),
	    mc_path(&c, "shim"), mc_path(&c, "registry"),
	    mc_path(&c, "allocs"));
	start(&r, "a", "web", 70003, 64 * MB, 64, script);
	wait_end(&r);
	closed(&r);
	snprintf(path, sizeof(path), "%s/x", task_dir("b", "db"));
	ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

/* The task dir made a shared self-bind, as BindVolume makes it, with
 * volumes/<name> in it; returns volumes/<name>'s path. */
static const char *
shared_task_dir(const char *alloc, const char *task, const char *name)
{
	static char path[600];
	const char *dir = task_dir(alloc, task);

	ck_assert_int_eq(mount(dir, dir, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(mount(NULL, dir, NULL, MS_SHARED, NULL), 0);
	snprintf(path, sizeof(path), "%s/volumes/%s", dir, name);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	return path;
}

/*
 * The task directory's bind in the sandbox is rslave (a volume bound
 * again after a plugin restart reaches the running task): a mount made
 * in the task's own directory on the host reaches it; one in another
 * allocation's does not, nor is its own a shared mount (what it could
 * mount would go back to the host), and it cannot mount at all.
 */
START_TEST(mounts_reach_a_task_only_from_its_own_directory)
{
	char script[4096], own[600], other[600], mark[700];
	struct run r;

	ck_assert_int_eq(mc_prepare_task(&c, "a", "web", 70005, 70005), 0);
	ck_assert_int_eq(mc_prepare_task(&c, "b", "db", 70006, 70006), 0);
	snprintf(own, sizeof(own), "%s", shared_task_dir("a", "web", "own"));
	snprintf(other, sizeof(other), "%s", shared_task_dir("b", "db", "v"));
	snprintf(script, sizeof(script),
	    "i=0; while [ ! -e volumes/own/mark ] && [ $i -lt 200 ]; do "
	    "sleep 0.05; i=$((i+1)); done; "
	    "[ -e volumes/own/mark ] && echo RECEIVED; "
	    "grep -q allocs/b /proc/self/mountinfo && "
	    "echo 'OPEN sees a mount of allocs/b'; "
	    "grep ' %s ' /proc/self/mountinfo | grep -q shared: && "
	    "echo 'OPEN its directory is a shared mount'; "
	    "grep ' %s ' /proc/self/mountinfo | grep -q master: || "
	    "echo 'OPEN its directory receives nothing'; "
	    "mount -t tmpfs x volumes/own 2>/dev/null && echo 'OPEN mounts'; "
	    "echo DONE", task_dir("a", "web"), task_dir("a", "web"));
	start(&r, "a", "web", 70005, 64 * MB, 64, script);
	ck_assert_int_eq(mount("tmpfs", other, "tmpfs", 0, "size=64k"), 0);
	ck_assert_int_eq(mount("tmpfs", own, "tmpfs", 0, "size=64k"), 0);
	snprintf(mark, sizeof(mark), "%s/mark", own);
	harness_write(mark, "");
	wait_end(&r);
	closed(&r);
	ck_assert_msg(strstr(r.out, "RECEIVED\n") != NULL, "the mount made "
	    "in its directory did not reach the task: %s; %s", r.out, r.err);
	umount2(own, MNT_DETACH);
	umount2(other, MNT_DETACH);
	umount2(task_dir("a", "web"), MNT_DETACH);
	umount2(task_dir("b", "db"), MNT_DETACH);
}
END_TEST

START_TEST(the_pid_namespace_cannot_be_left)
{
	char script[2048], self[64];
	struct run r;
	int n;

	n = (int)readlink("/proc/self/ns/pid", self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	snprintf(script, sizeof(script),
	    "[ \"$(readlink /proc/self/ns/pid)\" = '%s' ] && "
	    "echo 'OPEN in the pid namespace of the host'; "
	    "nsenter -t 1 -p -m -- true 2>/dev/null && echo 'OPEN nsenter'; "
	    "for p in %ld; do [ -e /proc/$p/ns/pid ] && echo 'OPEN sees the "
	    "ns of the host'; done; "
	    "[ $$ -lt 10 ] || echo \"OPEN its pid is $$\"; echo DONE",
	    self, (long)getpid());
	start(&r, "a", "web", 70005, 64 * MB, 64, script);
	wait_end(&r);
	closed(&r);
}
END_TEST

START_TEST(the_memory_limit_holds)
{
	struct run r;

	/* 32 MiB, and a 96 MiB buffer: dd is killed (SIGKILL: 137). */
	start(&r, "a", "web", 70006, 32 * MB, 64,
	    "dd if=/dev/zero of=/dev/null bs=96M count=1 2>/dev/null; "
	    "s=$?; [ $s -eq 0 ] && echo 'OPEN 96M in 32M'; "
	    "echo \"dd $s\"; echo DONE");
	wait_end(&r);
	closed(&r);
	ck_assert_msg(strstr(r.out, "dd 137\n") != NULL, "%s", r.out);
}
END_TEST

START_TEST(the_pids_limit_holds)
{
	struct run r;

	/* The shell that forks dies when a fork fails (dash does): it is
	 * one, and the count is made with builtins alone. */
	start(&r, "a", "web", 70007, 64 * MB, 16,
	    "sh -c 'i=0; while [ $i -lt 40 ]; do sleep 30 & i=$((i+1)); "
	    "done' 2>/dev/null; n=0; for p in /proc/[0-9]*; do n=$((n+1)); "
	    "done; [ $n -gt 16 ] && echo \"OPEN $n processes\"; "
	    "echo \"procs $n\"; echo DONE");
	wait_end(&r);
	closed(&r);
	/* It got as far as the limit, not past it. */
	ck_assert_msg(strstr(r.out, "procs 16\n") != NULL ||
	    strstr(r.out, "procs 15\n") != NULL, "%s", r.out);
	ck_assert_int_eq(procs_of(70007), 0);
}
END_TEST

START_TEST(nothing_is_left_behind_after_a_stop)
{
	struct shim_stop stop = { SHIM_MSG_STOP, SIGTERM, 500, 0 };
	struct run r;
	int i;

	start(&r, "a", "web", 70008, 64 * MB, 64,
	    "trap '' TERM; "
	    "setsid sh -c 'trap \"\" TERM HUP; exec sleep 300' & "
	    "nohup sh -c 'trap \"\" TERM; sleep 301' >/dev/null 2>&1 & "
	    "(sleep 302 &) ; echo DONE; wait");
	for (i = 0; i < 100 && procs_of(70008) < 5; i++)
		usleep(50000);
	ck_assert_int_ge(procs_of(70008), 5);
	ck_assert_int_eq(send(r.chan, &stop, sizeof(stop), 0), sizeof(stop));
	wait_end(&r);
	ck_assert_int_eq(r.ex.signaled, 1);
	ck_assert_int_eq(r.ex.code, SIGKILL);
	ck_assert_int_eq(procs_of(70008), 0);
}
END_TEST

START_TEST(the_exit_status_cannot_be_forged)
{
	char script[4096], path[600], want[64];
	struct run r;

	snprintf(path, sizeof(path), "%s", mc_path(&c, "shim/a/web/"
	    SHIM_STATUS_FILE));
	snprintf(script, sizeof(script),
	    "for f in %s /proc/1/fd/3/" SHIM_STATUS_FILE " /proc/1/cwd/"
	    SHIM_STATUS_FILE "; do "
	    "  echo 'run 1009 exited 0' 2>/dev/null >$f && echo \"OPEN "
	    "writes $f\"; done; "
	    "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX, "
	    "socket.SOCK_SEQPACKET); s.connect(sys.argv[1])' %s 2>/dev/null "
	    "&& echo 'OPEN ctl.sock'; echo DONE; exit 7",
	    path, mc_path(&c, "shim/a/web/" SHIM_CTL_SOCK));
	start(&r, "a", "web", 70009, 64 * MB, 64, script);
	wait_end(&r);
	closed(&r);
	ck_assert_int_eq(r.ex.signaled, 0);
	ck_assert_int_eq(r.ex.code, 7);
	snprintf(want, sizeof(want), "run %llu exited 7\n",
	    (unsigned long long)r.run_id);
	ck_assert_str_eq(slurp(path), want);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("attack_tasks");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, berths_sockets_are_out_of_reach);
	tcase_add_test(tc, berths_processes_and_the_shim_are_out_of_reach);
	tcase_add_test(tc, another_allocations_files_are_out_of_reach);
	tcase_add_test(tc, mounts_reach_a_task_only_from_its_own_directory);
	tcase_add_test(tc, the_pid_namespace_cannot_be_left);
	tcase_add_test(tc, the_memory_limit_holds);
	tcase_add_test(tc, the_pids_limit_holds);
	tcase_add_test(tc, nothing_is_left_behind_after_a_stop);
	tcase_add_test(tc, the_exit_status_cannot_be_forged);
	return harness_run_attacks("attack_tasks", tc, NULL);
}
