/*
 * launcher.c: the process that starts privileged plugins and tasks' crun.
 * A seccomp filter is inherited and survives exec, so it is forked before
 * the mounter locks itself: same capabilities and no_new_privs, and the
 * plugin filter (sandbox.c), which all it starts inherit. It reads
 * fixed-size requests from the mounter only, checks they are well formed,
 * and starts each (cloned as the mounter's child, so the mounter learns
 * how it ends); a plugin in a new mount namespace (a slave copy of the
 * host but for its mount root and socket directory, which stay in the
 * host's peer groups) and, unless root's definition keeps the host's, new
 * UTS, IPC and cgroup namespaces; with only the granted capabilities;
 * its stdout and stderr pipes to its log writer, berth-shim -L, started
 * first as the user the mounter named, with no capability.
 * Must not: read anything else, or decide anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>

#include "mounter.h"
#include "privdrop.h"

#define SOCK_FD 3
#define DATA_FD 4
#define LAUNCH_TIMEOUT_MS 10000

/* Launcher to mounter; with the plugin's pidfd when err is 0. */
struct launch_msg {
	int32_t pid;
	int32_t err;			/* errno of the step that failed */
	char what[64];			/* that step */
};

/* One datagram with nfd (at most 3) descriptors; 0 or -errno. */
static int
fdmsg_send(int sock, const void *buf, size_t len, const int *fds, int nfd)
{
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(3 * sizeof(int))];
	} cm = { 0 };
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (nfd > 0) {
		mh.msg_control = cm.space;
		mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* len bytes: how many fds came (<= nfd), -EPIPE, -EBADMSG or -errno. */
static int
fdmsg_recv(int sock, void *buf, size_t len, int *fds, int nfd, int flags)
{
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(3 * sizeof(int))];
	} cm;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cm.space, .msg_controllen = sizeof(cm.space) };
	struct cmsghdr *c;
	int got = 0, i, f;
	ssize_t n;

	if ((n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC)) <= 0)
		return n < 0 ? -errno : -EPIPE;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		for (i = 0; c->cmsg_type == SCM_RIGHTS &&
		    i < (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int)); i++) {
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < nfd)
				fds[got++] = f;
			else
				close(f);
		}
	if ((size_t)n == len && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return got;
	while (got > 0)
		close(fds[--got]);
	return -EBADMSG;
}

/* A plugin's namespaces, mounts and capabilities (see above); errno. */
static int
plugin_setup(const struct launch_req *rq, const char **what)
{
	const char *rel[2] = { rq->root, rq->sockdir };
	int dirs[2], trees[2], i;
	cap_value_t c;
	cap_t caps;

	*what = "entering new namespaces";
	if (fchdir(DATA_FD) < 0 ||
	    unshare(CLONE_NEWNS | (int)(LAUNCH_NS & ~rq->def.hostns)) < 0)
		return errno;
	/* Copies of the two shared mounts, cloned into their peer groups. */
	for (i = 0; i < 2; i++) {
		*what = "opening the plugin's directories";
		if ((dirs[i] = res_open(AT_FDCWD, rel[i], O_PATH | O_DIRECTORY,
		    0)) < 0)
			return -dirs[i];
		*what = "cloning a shared mount";
		if ((trees[i] = open_tree(dirs[i], "", OPEN_TREE_CLONE |
		    AT_RECURSIVE | AT_EMPTY_PATH)) < 0)
			return errno;
	}
	*what = "making the namespace a slave copy";
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return errno;
	*what = "attaching a shared mount";
	for (i = 0; i < 2; i++)
		if (move_mount(trees[i], "", dirs[i], "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return errno;
	umask(007);	/* its socket: the socket dir's group only */
	*what = "setting capabilities";
	if (chdir("/") < 0 || (caps = cap_init()) == NULL)
		return errno;
	for (c = 0; c < 64; c++)
		if ((rq->def.caps & (1ULL << c)) &&
		    (cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET) < 0 ||
		    cap_set_flag(caps, CAP_PERMITTED, 1, &c, CAP_SET) < 0))
			return errno;
	/* With no_new_privs, exec as root keeps no more than this. */
	return cap_set_proc(caps) < 0 ? errno : 0;
}

/* crun's stdio: an empty stdin; crun.log, a regular file in the status
 * dir. Never the mounter's, whose files crun gives to the task's user. */
static int
crun_stdio(int dir)
{
	struct stat st;
	int p[2], fd;

	if (pipe(p) < 0 || close(p[1]) < 0 || (fd = openat(dir, "crun.log",
	    O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK,
	    0640)) < 0)
		return errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return EPERM;
	return dup2(p[0], 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0 ?
	    errno : 0;
}

/*
 * A plugin's log writer: berth-shim (fds[1]) -L, in the data directory,
 * as log_uid and log_gid with no capability, reading the read ends of
 * two new pipes (as its 3 and 4); their write ends into io[1] and io[2].
 * Its first process exits once its directory is open. 0 or errno.
 */
static int
log_writer(const struct launch_req *rq, const int fds[3], int io[3])
{
	char *argv[] = { "berth-shim", "-L", "-d", (char *)rq->logdir, NULL },
	    *envp[] = { NULL };
	int o[2] = { -1, -1 }, e[2] = { -1, -1 }, status = 0, r = 0;
	cap_t none;
	pid_t pid;

	if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0 ||
	    (pid = fork()) < 0)
		r = errno;
	else if (pid == 0) {
		if (fchdir(DATA_FD) < 0 || dup2(o[0], 3) < 0 ||
		    dup2(e[0], 4) < 0 || setgroups(0, NULL) < 0 ||
		    setresgid(rq->log_gid, rq->log_gid, rq->log_gid) < 0 ||
		    setresuid(rq->log_uid, rq->log_uid, rq->log_uid) < 0 ||
		    (none = cap_init()) == NULL || cap_set_proc(none) < 0)
			_exit(126);
		fexecve(fds[1], argv, envp);
		_exit(127);
	} else if (waitpid(pid, &status, 0) != pid || status != 0)
		r = EIO;
	io[1] = o[1];
	io[2] = e[1];
	if (o[0] >= 0)
		close(o[0]);
	if (e[0] >= 0)
		close(e[0]);
	return r;
}

/*
 * In the child: exec fds[0] with fds[1] and fds[2] as a plugin's stdout
 * and stderr, or as crun's 3 and 4 (a task's status dir and channel; crun
 * in the mounter's mount namespace, with the launcher's capabilities).
 * Returns only on failure.
 */
static int
child(const struct launch_req *rq, const int fds[3], const char **what)
{
	char *argv[LAUNCH_ARGS + 1], *envp[] = { (char *)rq->endpoint,
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:"
	    "/bin", NULL };
	int to = rq->task ? 3 : STDOUT_FILENO, i;

	*what = "entering a new session";
	if (setsid() < 0 || (!rq->task && (errno = plugin_setup(rq, what))))
		return errno;
	*what = "crun's stdio";
	if (rq->task && (errno = crun_stdio(fds[1])) != 0)
		return errno;
	*what = "passing descriptors";
	if (dup2(fds[1], to) < 0 || dup2(fds[2], to + 1) < 0 ||
	    close_range(to + 2, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return errno;
	for (i = 0; i < rq->def.nargs; i++)
		argv[i] = (char *)rq->def.args[i];
	argv[i] = NULL;
	*what = "exec";
	fexecve(fds[0], argv, envp + rq->task);
	return errno;
}

static void
launch(const struct launch_req *rq, const int fds[3])
{
	struct launch_msg msg = { 0 };
	const char *what = "starting its log writer";
	int ep[2], pidfd = -1, io[3] = { fds[0], fds[1], fds[2] }, i;
	ssize_t n;
	pid_t pid;

	/* No writer, no plugin: it would write into a pipe nobody reads. */
	if (!rq->task && (msg.err = log_writer(rq, fds, io)) != 0)
		goto out;
	what = "clone";
	/* The mounter's child (it reaps and reports), pinned by a pidfd. */
	if (pipe2(ep, O_CLOEXEC) < 0 || (pid = (pid_t)syscall(SYS_clone,
	    CLONE_PARENT | CLONE_PIDFD | SIGCHLD, NULL, &pidfd, NULL,
	    0)) < 0) {
		msg.err = errno;
		goto out;
	}
	if (pid == 0) {
		close(ep[0]);
		msg.err = child(rq, io, &what);
		snprintf(msg.what, sizeof(msg.what), "%s", what);
		if (write(ep[1], &msg, sizeof(msg)) < 0)
			_exit(126);
		_exit(127);
	}
	close(ep[1]);
	msg.pid = pid;
	/* End of file once it has exec'd; else why it could not. */
	if ((n = read(ep[0], &msg, sizeof(msg))) != 0) {
		close(pidfd);
		pidfd = -1;
		what = n == sizeof(msg) ? NULL : "exec";
		msg.err = n == sizeof(msg) ? msg.err : EIO;
	}
	close(ep[0]);
out:
	/* Only the plugin (and what it starts) holds the pipes' write ends. */
	for (i = 1; !rq->task && i < 3; i++)
		if (io[i] >= 0)
			close(io[i]);
	if (what != NULL)
		snprintf(msg.what, sizeof(msg.what), "%s", what);
	if (fdmsg_send(SOCK_FD, &msg, sizeof(msg), &pidfd, pidfd >= 0) < 0)
		_exit(1);
	if (pidfd >= 0)
		close(pidfd);
}

#define TERMINATED(a) (memchr((a), '\0', sizeof(a)) != NULL)

static void __attribute__((noreturn))
launcher_main(pid_t mounter)
{
	static struct launch_req rq;
	struct launch_msg msg = { .err = EINVAL,
	    .what = "a malformed request" };
	int fds[3] = { -1, -1, -1 }, nfd, i;
	bool ok;

	prctl(PR_SET_NAME, "berth-launcher", 0, 0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getppid() != mounter || priv_keep_only(mounter_caps,
	    mounter_ncaps) < 0 || sandbox_plugin_filter() < 0)
		_exit(1);
	/* One request at a time, until the mounter closes its end. */
	for (;;) {
		nfd = fdmsg_recv(SOCK_FD, &rq, sizeof(rq), fds, 3, 0);
		if (nfd == -EINTR)
			continue;
		if (nfd < 0 && nfd != -EBADMSG)
			_exit(nfd == -EPIPE ? 0 : 1);
		ok = nfd == (rq.task ? 3 : 2) && rq.def.nargs >= 1 &&
		    rq.def.nargs <= LAUNCH_ARGS &&
		    (rq.def.hostns & ~(uint32_t)LAUNCH_NS) == 0 &&
		    TERMINATED(rq.root) && TERMINATED(rq.sockdir) &&
		    TERMINATED(rq.endpoint) && TERMINATED(rq.logdir);
		for (i = 0; ok && i < rq.def.nargs; i++)
			ok = TERMINATED(rq.def.args[i]);
		if (ok)
			launch(&rq, fds);
		else if (fdmsg_send(SOCK_FD, &msg, sizeof(msg), NULL, 0) < 0)
			_exit(1);
		for (i = 0; i < nfd; i++)
			close(fds[i]);
	}
}

int
launcher_spawn(int data_fd)
{
	pid_t mounter = getpid(), pid;
	int sp[2], s, d;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	if ((pid = fork()) < 0) {
		close(sp[0]);
		close(sp[1]);
		return -errno;
	}
	if (pid == 0) {
		/* Only the mounter's socket and the data directory stay. */
		if ((s = fcntl(sp[1], F_DUPFD_CLOEXEC, 100)) < 0 ||
		    (d = fcntl(data_fd, F_DUPFD_CLOEXEC, 100)) < 0 ||
		    dup3(s, SOCK_FD, O_CLOEXEC) < 0 ||
		    dup3(d, DATA_FD, O_CLOEXEC) < 0 ||
		    close_range(DATA_FD + 1, ~0U, 0) < 0)
			_exit(1);
		launcher_main(mounter);
	}
	close(sp[1]);
	return sp[0];
}

Berth__ErrorCode
launcher_run(struct mounter *m, struct launch_req *lr, const int fds[3],
    struct mreply *out, char *why)
{
	struct pollfd pfd = { .fd = m->launcher_fd, .events = POLLIN };
	struct launch_msg msg;
	int r, pidfd;

	if ((r = fdmsg_send(m->launcher_fd, lr, sizeof(*lr), fds, lr->task ?
	    3 : 2)) < 0)
		return fail_errno(why, -r, "asking the launcher", "");
	if (poll(&pfd, 1, LAUNCH_TIMEOUT_MS) != 1 || (r = fdmsg_recv(
	    m->launcher_fd, &msg, sizeof(msg), &pidfd, 1, MSG_DONTWAIT)) < 0)
		fatalx("launch: the launcher is gone or did not answer; "
		    "exiting (its plugins keep running and can be adopted)");
	if (msg.err == 0 && r == 1)
		return plugin_keep(m, msg.pid, 0, lr->task, pidfd, out, why);
	if (r == 1)
		close(pidfd);
	msg.what[sizeof(msg.what) - 1] = '\0';
	return fail(why, BERTH__ERROR_CODE__ERROR_INTERNAL, "starting "
	    "failed at %s: %s", msg.what, strerror(msg.err));
}
