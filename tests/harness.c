/*
 * harness.c: shared test plumbing (see harness.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "channel.h"
#include "harness.h"
#include "procstat.h"

/*
 * Each entry remembers which process tracked it: check's forked children
 * inherit the atexit handler, and must not clean up their parent's things.
 */
static struct { pid_t pid, owner; } tracked_pids[64];
static int ntracked_pids;
static struct { char *path; pid_t owner; } tracked_dirs[16];
static int ntracked_dirs;

/*
 * check ends a failed test's process with _exit(): its atexit handler
 * never runs. So each test also writes what it made to a file of its
 * runner's (the process in harness_run), which cleans up after the run.
 */
static pid_t runner;

static void
runner_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
runner_note(const char *fmt, ...)
{
	char path[64];
	va_list ap;
	FILE *f;

	if (runner <= 0)
		return;
	snprintf(path, sizeof(path), "/tmp/berth-test-runner-%ld",
	    (long)runner);
	if ((f = fopen(path, "a")) == NULL)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static void
harness_cleanup(void)
{
	pid_t self = getpid();
	int i;

	for (i = 0; i < ntracked_pids; i++)
		if (tracked_pids[i].owner == self && tracked_pids[i].pid > 0 &&
		    kill(tracked_pids[i].pid, 0) == 0)
			kill(tracked_pids[i].pid, SIGKILL);
	for (i = 0; i < ntracked_dirs; i++)
		if (tracked_dirs[i].owner == self)
			harness_rmtree(tracked_dirs[i].path);
}

static void
track_init(void)
{
	static int done;

	if (!done) {
		done = 1;
		atexit(harness_cleanup);
	}
}

void
harness_track_pid(pid_t pid)
{
	uint64_t start;

	track_init();
	if (ntracked_pids < (int)(sizeof(tracked_pids) /
	    sizeof(tracked_pids[0]))) {
		tracked_pids[ntracked_pids].pid = pid;
		tracked_pids[ntracked_pids++].owner = getpid();
	}
	if (proc_start_time(pid, &start) == 0)
		runner_note("p %ld %llu\n", (long)pid,
		    (unsigned long long)start);
}

/*
 * Whatever still runs from a test's directory: its cwd is in it, or its
 * command line names it (the supervisor and helpers by their config and
 * data dir, a privileged plugin by its state dir, berth-shim by -d).
 */
static void
kill_under(const char *dir)
{
	char path[64], buf[4096];
	size_t len = strlen(dir);
	struct dirent *de;
	ssize_t n;
	DIR *d;
	int fd;

	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atol(de->d_name);

		if (pid <= 1 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cwd", (long)pid);
		n = readlink(path, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		if (strncmp(buf, dir, len) != 0 || (buf[len] != '/' &&
		    buf[len] != '\0')) {
			snprintf(path, sizeof(path), "/proc/%ld/cmdline",
			    (long)pid);
			if ((fd = open(path, O_RDONLY)) < 0)
				continue;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] == '\0')
					buf[i] = ' ';
			buf[n > 0 ? n : 0] = '\0';
			if (strstr(buf, dir) == NULL)
				continue;
		}
		kill(pid, SIGKILL);
	}
	closedir(d);
}

/*
 * Every process in cgroup dir and below gets SIGKILL (a frozen one is
 * thawed first); then the cgroups go, leaves first. Returns how many
 * processes were found.
 */
static int
cgroup_kill_tree(const char *dir, int depth)
{
	char path[1024], line[32];
	struct dirent *de;
	int n = 0;
	FILE *f;
	DIR *d;

	if (depth > 8 || (d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (de->d_type == DT_DIR && de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			n += cgroup_kill_tree(path, depth + 1);
		}
	closedir(d);
	snprintf(path, sizeof(path), "%s/freezer.state", dir);
	if ((f = fopen(path, "w")) != NULL) {
		fputs("THAWED", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((f = fopen(path, "r")) != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			kill((pid_t)atol(line), SIGKILL);
			n++;
		}
		fclose(f);
	}
	return n;
}

static void
cgroup_rm_tree(const char *dir, int depth)
{
	char path[1024];
	struct dirent *de;
	DIR *d;

	if (depth > 8 || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (de->d_type == DT_DIR && de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			cgroup_rm_tree(path, depth + 1);
		}
	closedir(d);
	rmdir(dir);
}

void
harness_cgroup_remove(const char *cgroup)
{
	char path[1024];
	struct dirent *de;
	DIR *d;
	int i, n;

	for (i = 0; i < 50; i++) {
		n = 0;
		if ((d = opendir("/sys/fs/cgroup")) == NULL)
			return;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s",
			    de->d_name, cgroup);
			n += cgroup_kill_tree(path, 0);
		}
		closedir(d);
		/* Ours to reap: the tasks' crun came to this subreaper. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (n == 0)
			break;
		usleep(100000);
	}
	/*
	 * crun removes its leaves as it exits, after its processes are
	 * gone: a parent can be busy for a moment yet. Again until none is
	 * left in any hierarchy (a pure v2 host's included), 5 s at most.
	 */
	for (i = 0, n = 1; i < 50 && n > 0; i++) {
		if (i > 0)
			usleep(100000);
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s", cgroup);
		cgroup_rm_tree(path, 0);
		n = access(path, F_OK) == 0;
		if ((d = opendir("/sys/fs/cgroup")) == NULL)
			return;
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.') {
				snprintf(path, sizeof(path),
				    "/sys/fs/cgroup/%s%s", de->d_name, cgroup);
				cgroup_rm_tree(path, 0);
				n += access(path, F_OK) == 0;
			}
		closedir(d);
	}
}

void
harness_track_cgroup(const char *cgroup)
{
	runner_note("c %s\n", cgroup);
}

/* After the run: what each test recorded, killed and removed. */
static void
runner_cleanup(void)
{
	char path[64], line[512];
	unsigned long long start;
	uint64_t now;
	long pid;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/berth-test-runner-%ld",
	    (long)runner);
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		/* Only if its start time still matches: never a reused pid. */
		if (line[0] == 'p' && sscanf(line + 2, "%ld %llu", &pid,
		    &start) == 2 && pid > 1 && proc_start_time((pid_t)pid,
		    &now) == 0 && now == start)
			kill((pid_t)pid, SIGKILL);
		else if (line[0] == 'd')
			harness_rmtree(line + 2);
		else if (line[0] == 'c')
			harness_cgroup_remove(line + 2);
	}
	fclose(f);
	unlink(path);
}

static int
run_case(const char *name, TCase *tc, int *run)
{
	Suite *s = suite_create(name);
	SRunner *sr;
	int failed;

	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	*run = srunner_ntests_run(sr);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed;
}

int
harness_run(const char *name, TCase *tc)
{
	int run, failed;

	runner = getpid();
	failed = run_case(name, tc, &run);
	runner_cleanup();
	return failed == 0 ? 0 : 1;
}

int
harness_run_attacks(const char *name, TCase *tc, int (*extra_failed)(void))
{
	int run, failed;

	failed = run_case(name, tc, &run);
	if (extra_failed != NULL)
		failed += extra_failed();
	printf("%d attacks tried, %d succeeded\n", run, failed);
	return failed == 0 ? 0 : 1;
}

const char *
harness_bin(const char *name)
{
	static char buf[4][1024];
	static int next;
	const char *dir = getenv("BERTH_BUILD_DIR");
	char *b = buf[next++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/%s", dir ? dir : ".", name);
	return b;
}

void
harness_private_mounts(void)
{
	if (unshare(CLONE_NEWNS) < 0)
		ck_abort_msg("unshare(CLONE_NEWNS): %s", strerror(errno));
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		ck_abort_msg("make / private: %s", strerror(errno));
}

char *
harness_tmpdir(const char *tag)
{
	char tmpl[256];
	char *d;

	snprintf(tmpl, sizeof(tmpl), "/tmp/berth-test-%s-XXXXXX", tag);
	if ((d = mkdtemp(tmpl)) == NULL)
		ck_abort_msg("mkdtemp: %s", strerror(errno));
	chmod(d, 0755);
	track_init();
	if (ntracked_dirs < (int)(sizeof(tracked_dirs) /
	    sizeof(tracked_dirs[0]))) {
		tracked_dirs[ntracked_dirs].path = strdup(d);
		tracked_dirs[ntracked_dirs++].owner = getpid();
	}
	runner_note("d %s\n", d);
	return strdup(d);
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/*
 * Detach every mount under path, deepest first (a test's mounts, in its
 * own namespace): plugins and tasks outlive a killed supervisor, and a
 * mount point left in the tree would leave its directory on disk.
 */
static void
detach_under(const char *path)
{
	char line[4096], mp[4096], *mps[512];
	size_t len = strlen(path), n = 0;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	while (f != NULL && n < 512 && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
		    strncmp(mp, path, len) == 0 && (mp[len] == '/' ||
		    mp[len] == '\0') && (mps[n] = strdup(mp)) != NULL)
			n++;
	if (f != NULL)
		fclose(f);
	/* Later lines are mounted on top of or below earlier ones. */
	while (n > 0) {
		umount2(mps[--n], MNT_DETACH);
		free(mps[n]);
	}
}

void
harness_rmtree(const char *path)
{
	if (path != NULL && strncmp(path, "/tmp/berth-test-", 16) == 0) {
		kill_under(path);
		detach_under(path);
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	}
}

bool
harness_rmtree_wait(const char *path, int ms)
{
	int waited;

	for (waited = 0; access(path, F_OK) == 0; waited += 100) {
		harness_rmtree(path);
		if (access(path, F_OK) != 0)
			break;
		if (waited >= ms)
			return false;
		usleep(100 * 1000);
	}
	return true;
}

void
harness_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		ck_abort_msg("open %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static int saved_stderr = -1, capture_fd = -1;

void
harness_capture_stderr(void)
{
	char path[] = "/tmp/berth-test-stderr-XXXXXX";

	if ((capture_fd = mkstemp(path)) < 0)
		ck_abort_msg("mkstemp: %s", strerror(errno));
	unlink(path);
	if ((saved_stderr = dup(STDERR_FILENO)) < 0 ||
	    dup2(capture_fd, STDERR_FILENO) < 0)
		ck_abort_msg("redirecting stderr: %s", strerror(errno));
}

const char *
harness_captured_stderr(void)
{
	static char buf[65536];
	ssize_t n;

	ck_assert_int_ge(capture_fd, 0);
	if (dup2(saved_stderr, STDERR_FILENO) < 0 ||
	    lseek(capture_fd, 0, SEEK_SET) != 0 ||
	    (n = read(capture_fd, buf, sizeof(buf) - 1)) < 0)
		ck_abort_msg("reading captured stderr: %s", strerror(errno));
	buf[n] = '\0';
	close(saved_stderr);
	close(capture_fd);
	saved_stderr = capture_fd = -1;
	fputs(buf, stderr);
	return buf;
}

void
proc_start(struct proc *p, char *const argv[], int extra_fd)
{
	int pipefd[2];

	memset(p, 0, sizeof(*p));
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		ck_abort_msg("pipe: %s", strerror(errno));
	if ((p->pid = fork()) < 0)
		ck_abort_msg("fork: %s", strerror(errno));
	if (p->pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		if (extra_fd >= 0) {
			if (extra_fd == 3)
				fcntl(3, F_SETFD, 0);
			else
				dup2(extra_fd, 3);
		}
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	harness_track_pid(p->pid);
	p->err_fd = pipefd[0];
	fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
}

void
proc_drain(struct proc *p)
{
	ssize_t n;

	while (p->err_fd >= 0 && p->loglen < sizeof(p->log) - 1) {
		n = read(p->err_fd, p->log + p->loglen,
		    sizeof(p->log) - 1 - p->loglen);
		if (n <= 0)
			break;
		/* Echo into the test log, for whoever reads a failure. */
		if (write(STDERR_FILENO, p->log + p->loglen, n) < 0)
			(void)0;
		p->loglen += n;
	}
	p->log[p->loglen] = '\0';
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool
proc_wait_log(struct proc *p, const char *text, int ms)
{
	long end = now_ms() + ms;
	struct pollfd pfd;

	for (;;) {
		proc_drain(p);
		if (strstr(p->log, text) != NULL)
			return true;
		if (now_ms() >= end)
			return false;
		pfd.fd = p->err_fd;
		pfd.events = POLLIN;
		poll(&pfd, 1, 20);
	}
}

bool
proc_wait_exit(struct proc *p, int ms)
{
	long end = now_ms() + ms;
	pid_t r;

	if (p->reaped)
		return true;
	for (;;) {
		proc_drain(p);
		r = waitpid(p->pid, &p->status, WNOHANG);
		if (r == p->pid) {
			p->reaped = true;
			proc_drain(p);
			return true;
		}
		if (now_ms() >= end)
			return false;
		usleep(5000);
	}
}

void
proc_kill(struct proc *p)
{
	if (p->pid <= 0)
		return;
	if (!p->reaped) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &p->status, 0);
		p->reaped = true;
	}
	proc_drain(p);
	if (p->err_fd >= 0)
		close(p->err_fd);
	p->err_fd = -1;
}

char *
proc_status_field(pid_t pid, const char *field, char *buf, size_t n)
{
	char path[64], line[512];
	size_t flen = strlen(field);
	char *v, *e;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, field, flen) != 0 || line[flen] != ':')
			continue;
		v = line + flen + 1;
		v += strspn(v, " \t");
		e = v + strlen(v);
		while (e > v && (e[-1] == '\n' || e[-1] == ' '))
			*--e = '\0';
		snprintf(buf, n, "%s", v);
		fclose(f);
		return buf;
	}
	fclose(f);
	return NULL;
}

bool
pid_alive(pid_t pid)
{
	char st[64];

	if (kill(pid, 0) < 0)
		return false;
	/* A zombie is dead for our purposes. */
	if (proc_status_field(pid, "State", st, sizeof(st)) == NULL)
		return false;
	return st[0] != 'Z' && st[0] != 'X';
}

bool
pid_wait_gone(pid_t pid, int ms)
{
	long end = now_ms() + ms;

	while (pid_alive(pid)) {
		if (now_ms() >= end)
			return false;
		usleep(5000);
	}
	return true;
}

int
uid_procs(uid_t uid)
{
	char buf[128];
	struct dirent *de;
	int n = 0;
	DIR *d;

	ck_assert_ptr_nonnull(d = opendir("/proc"));
	while ((de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atol(de->d_name);

		if (pid > 0 && proc_status_field(pid, "Uid", buf,
		    sizeof(buf)) != NULL && (uid_t)atol(buf) == uid &&
		    proc_status_field(pid, "State", buf, sizeof(buf)) !=
		    NULL && buf[0] != 'Z')
			n++;
	}
	closedir(d);
	return n;
}

void
harness_send(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	struct msghdr msg = { 0 };
	struct iovec iov = { (void *)buf, len };
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	struct cmsghdr *cm;

	ck_assert_int_le(nfds, 3);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfds > 0) {
		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	ck_assert_int_eq(sendmsg(sock, &msg, MSG_NOSIGNAL), (ssize_t)len);
}

void
harness_send_env(int sock, const void *envp, const int *fds, int nfds)
{
	const Berth__Envelope *env = envp;
	size_t len = berth__envelope__get_packed_size(env);
	uint8_t *buf = malloc(len + 1);

	berth__envelope__pack(env, buf);
	harness_send(sock, buf, len, fds, nfds);
	free(buf);
}

void *
harness_recv_env(int sock, int ms)
{
	static uint8_t buf[BERTH_IPC_MAX];
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	ssize_t n;

	if (poll(&pfd, 1, ms) <= 0)
		return NULL;
	if ((n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT)) <= 0)
		return NULL;
	return berth__envelope__unpack(NULL, n, buf);
}
