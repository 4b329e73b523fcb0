/*
 * shim_init.c: berth-shim -I, a task's init inside its sandbox (the
 * protocol is in shim.h).
 *
 * It takes the task's command, arguments, environment and log limits on
 * its channel, starts the task in its working directory, copies the
 * task's output into its status directory, reaps every process of the
 * pid namespace (orphans come to pid 1), and when the task's first
 * process ends, kills what is left, writes the exit status and tells
 * the supervisor, then exits.
 *
 * Holds no privilege: it runs as the task's uid, undumpable, so that the
 * task can neither trace it nor reach its descriptors; as the init of its
 * pid namespace it gets no signal from the task (it installs no handler;
 * SIGCHLD is read from a signalfd). Must not: start anything before the
 * supervisor said run; serve SHIM_CTL_SOCK to any uid but the one the
 * supervisor named; outlive its task, or let any process of it outlive it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "shim.h"
#include "shim_log.h"

static bool in_init;		/* this process is a task's init */

#if defined(__SANITIZE_ADDRESS__)
/*
 * Under ASan (the tests' sanitizer build): LeakSanitizer stops the
 * process's threads with ptrace at exit, which an undumpable process
 * refuses it, and then fails the exit. It is turned off for -I alone;
 * -d, which shares the log code, is still checked.
 */
int __lsan_is_turned_off(void);

int
__lsan_is_turned_off(void)
{
	return in_init;
}
#endif

static int chan = -1;		/* to the supervisor; -1 while none */
static int lfd = -1;		/* SHIM_CTL_SOCK, listening */
static struct shim_run run;
static struct shim_started started;
static char *args[SHIM_MAX_ARGS + 1];
static size_t nargs;
static char *envs[SHIM_MAX_ENV + 1];
static size_t nenvs;
static char *wd;		/* NULL: the shim's own */

static void
chan_send(const void *m, size_t len)
{
	ssize_t n;

	if (chan < 0)
		return;
	do
		n = send(chan, m, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	/* A supervisor that is gone comes back through SHIM_CTL_SOCK. */
	if (n < 0 && errno != EAGAIN) {
		close(chan);
		chan = -1;
	}
}

static void __attribute__((noreturn))
fail(enum shim_stage stage, int e)
{
	started.type = SHIM_MSG_STARTED;
	started.err = e;
	started.stage = stage;
	started.run_id = run.run_id;
	chan_send(&started, sizeof(started));
	exit(1);
}

/* One string of an ARG or ENV datagram, into v. */
static int
take_string(char **v, size_t *n, size_t max, const char *s, size_t len)
{
	if (*n >= max)
		return -E2BIG;
	if (memchr(s, '\0', len) != NULL)
		return -EINVAL;
	if ((v[*n] = malloc(len + 1)) == NULL)
		return -ENOMEM;
	memcpy(v[*n], s, len);
	v[*n][len] = '\0';
	(*n)++;
	return 0;
}

/* What to run, up to SHIM_MSG_RUN; 0 or -errno. */
static int
read_spec(void)
{
	static char buf[SHIM_MSG_MAX + 1];
	uint32_t type;
	ssize_t n;
	int x;

	for (;;) {
		/* A datagram longer than the buffer shows as a full one. */
		if ((n = recv(chan, buf, sizeof(buf), 0)) < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -EPIPE : -errno;
		if (n < (ssize_t)sizeof(type) || n > SHIM_MSG_MAX)
			return -EMSGSIZE;
		memcpy(&type, buf, sizeof(type));
		if (type == SHIM_MSG_ARG)
			x = take_string(args, &nargs, SHIM_MAX_ARGS, buf + 4,
			    (size_t)n - 4);
		else if (type == SHIM_MSG_ENV)
			x = memchr(buf + 4, '=', (size_t)n - 4) == NULL ?
			    -EINVAL : take_string(envs, &nenvs, SHIM_MAX_ENV,
			    buf + 4, (size_t)n - 4);
		else if (type == SHIM_MSG_DIR && wd == NULL) {
			size_t one = 0;

			x = take_string(&wd, &one, 1, buf + 4, (size_t)n - 4);
			if (x == 0 && wd[0] != '/')
				x = -EINVAL;
		} else if (type == SHIM_MSG_RUN && n == sizeof(run)) {
			memcpy(&run, buf, sizeof(run));
			break;
		} else
			x = -EINVAL;
		if (x < 0)
			return x;
	}
	if (nargs == 0 || args[0][0] != '/' || run.max_bytes < 1 ||
	    run.max_files < 1 || run.max_files > SHIM_MAX_FILES ||
	    (run.flags & ~SHIM_RUN_PLUGIN) != 0)
		return -EINVAL;
	max_bytes = run.max_bytes;
	max_files = run.max_files;
	return 0;
}

/* SHIM_CTL_SOCK in the status directory, mode 0660 (group berth). */
static int
ctl_listen(int cwd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, x = 0;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", SHIM_CTL_SOCK);
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0)) < 0)
		return -errno;
	if (fchdir(dfd) < 0 || (unlinkat(dfd, SHIM_CTL_SOCK, 0) < 0 &&
	    errno != ENOENT))
		x = -errno;
	old = umask(0117);
	if (x == 0 && (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0))
		x = -errno;
	umask(old);
	if (fchdir(cwd) < 0 && x == 0)
		x = -errno;
	if (x < 0) {
		close(fd);
		return x;
	}
	return fd;
}

/* A restarted supervisor: its connection replaces the channel. */
static void
ctl_accept(void)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	int fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 ||
	    uc.uid != run.sv_uid) {
		close(fd);
		return;
	}
	if (chan >= 0)
		close(chan);
	chan = fd;
	chan_send(&started, sizeof(started));
}

static void __attribute__((noreturn))
run_task(int cwd, int o, int e, int report)
{
	sigset_t none;
	int devnull, x;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	umask(run.flags & SHIM_RUN_PLUGIN ? 007 : 022);
	if (setsid() < 0 || fchdir(cwd) < 0 ||
	    (devnull = open("/dev/null", O_RDONLY)) < 0 ||
	    dup2(devnull, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 ||
	    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		goto fail;
	execve(args[0], args, envs);
fail:
	x = errno;
	(void)!write(report, &x, sizeof(x));
	_exit(127);
}

/* The status line, atomically: a reader sees the whole line or none. */
static int
write_status(int status)
{
	char line[128];
	int fd, len;
	bool ok;

	len = snprintf(line, sizeof(line), "run %llu %s %d\n",
	    (unsigned long long)run.run_id, WIFSIGNALED(status) ? "signaled" :
	    "exited", WIFSIGNALED(status) ? WTERMSIG(status) :
	    WEXITSTATUS(status));
	/* One left by an earlier run may be another uid's. */
	(void)unlinkat(dfd, SHIM_STATUS_FILE ".tmp", 0);
	if ((fd = openat(dfd, SHIM_STATUS_FILE ".tmp", O_WRONLY | O_CREAT |
	    O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640)) < 0)
		return -1;
	ok = write(fd, line, (size_t)len) == len && fsync(fd) == 0;
	if (close(fd) < 0)
		ok = false;
	if (!ok || renameat(dfd, SHIM_STATUS_FILE ".tmp", dfd,
	    SHIM_STATUS_FILE) < 0 || fsync(dfd) < 0)
		return -1;
	return 0;
}

/* Start the task; its pid, after SHIM_MSG_STARTED went out. */
static pid_t
start(void)
{
	int cwd, po[2], pe[2], px[2], x;
	ssize_t n;
	pid_t pid;

	if ((cwd = open(wd != NULL ? wd : ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0 ||
	    (unlinkat(dfd, SHIM_STATUS_FILE, 0) < 0 && errno != ENOENT))
		fail(SHIM_STAGE_SETUP, errno);
	if ((x = log_open(&out, false)) < 0 || (x = log_open(&err, false)) < 0
	    || (x = lfd = ctl_listen(cwd)) < 0)
		fail(SHIM_STAGE_SETUP, -x);
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 ||
	    pipe2(px, O_CLOEXEC) < 0 || (pid = fork()) < 0)
		fail(SHIM_STAGE_SETUP, errno);
	if (pid == 0)
		run_task(cwd, po[1], pe[1], px[1]);
	close(cwd);
	close(po[1]);
	close(pe[1]);
	close(px[1]);
	do
		n = read(px[0], &x, sizeof(x));
	while (n < 0 && errno == EINTR);
	close(px[0]);
	if (n == sizeof(x)) {
		waitpid(pid, NULL, 0);
		fail(SHIM_STAGE_EXEC, x);
	}
	out.in = po[0];
	err.in = pe[0];
	if (fcntl(out.in, F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(err.in, F_SETFL, O_NONBLOCK) < 0)
		log_lost(&out, errno);
	started = (struct shim_started){ SHIM_MSG_STARTED, 0, 0, pid,
		run.run_id };
	chan_send(&started, sizeof(started));
	return pid;
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A message from the supervisor; once started, only STOP is one. */
static void
chan_read(long long *deadline)
{
	struct shim_stop st;
	ssize_t n;

	n = recv(chan, &st, sizeof(st), MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(chan);
		chan = -1;
		return;
	}
	if (n != sizeof(st) || st.type != SHIM_MSG_STOP || st.sig < 1 ||
	    st.sig >= NSIG)
		return;
	/* Every process but this one, in this pid namespace only. */
	kill(-1, st.sig);
	if (*deadline < 0 || now_ms() + st.grace_ms < *deadline)
		*deadline = now_ms() + st.grace_ms;
}

/* Reap what ended; true when the task's first process has. */
static bool
reap(pid_t task, int *status)
{
	bool done = false;
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		if (p == task) {
			*status = st;
			done = true;
		}
	return done;
}

/* Run until the task ends; its wait status. */
static int
serve(pid_t task, int sfd)
{
	struct signalfd_siginfo si;
	struct pollfd fds[5];
	long long deadline = -1, left;
	int status = 0, timeout;

	for (;;) {
		fds[0] = (struct pollfd){ out.in, POLLIN, 0 };
		fds[1] = (struct pollfd){ err.in, POLLIN, 0 };
		fds[2] = (struct pollfd){ sfd, POLLIN, 0 };
		fds[3] = (struct pollfd){ lfd, POLLIN, 0 };
		fds[4] = (struct pollfd){ chan, POLLIN, 0 };
		timeout = -1;
		if (deadline >= 0) {
			if ((left = deadline - now_ms()) <= 0) {
				kill(-1, SIGKILL);
				left = 1000;
			}
			timeout = (int)left;
		}
		if (poll(fds, 5, timeout) < 0 && errno != EINTR)
			kill(-1, SIGKILL);
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			;
		if (reap(task, &status))
			return status;
		if (fds[0].revents != 0)
			log_pump(&out, false);
		if (fds[1].revents != 0)
			log_pump(&err, false);
		if (fds[3].revents != 0)
			ctl_accept();
		if (chan >= 0 && fds[4].revents != 0)
			chan_read(&deadline);
	}
}

int
shim_init_main(void)
{
	struct shim_exit ex = { SHIM_MSG_EXIT, 0, 0, 0, 0 };
	struct stat st;
	sigset_t chld;
	int sfd, status;
	pid_t task;

	if (getpid() != 1) {
		/* kill(-1) would reach every process of its uid. */
		fprintf(stderr, "berth-shim: -I: not the init of a pid "
		    "namespace\n");
		return 1;
	}
	in_init = true;
	chan = SHIM_CHAN_FD;
	errno = 0;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    fcntl(chan, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(SHIM_DIR_FD, F_SETFD, FD_CLOEXEC) < 0 ||
	    fstat(SHIM_DIR_FD, &st) < 0 || !S_ISDIR(st.st_mode))
		fail(SHIM_STAGE_SETUP, errno != 0 ? errno : ENOTDIR);
	/* Readable (it may come as O_PATH): fsync needs it. */
	if ((dfd = openat(SHIM_DIR_FD, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0)
		fail(SHIM_STAGE_SETUP, errno);
	close(SHIM_DIR_FD);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0 ||
	    (sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		fail(SHIM_STAGE_SETUP, errno);
	if ((status = read_spec()) < 0)
		fail(SHIM_STAGE_SETUP, -status);
	task = start();
	status = serve(task, sfd);
	/* Nothing of the task outlives it: all of the namespace, reaped. */
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	log_pump(&out, true);
	log_pump(&err, true);
	(void)write_status(status);
	ex.signaled = WIFSIGNALED(status);
	ex.code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
	ex.run_id = run.run_id;
	chan_send(&ex, sizeof(ex));
	return 0;
}
