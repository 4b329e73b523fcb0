/*
 * launcher.c: the process that starts privileged plugins.
 *
 * Why a process of its own: a seccomp filter is inherited by every child
 * and survives exec, so a plugin forked by the locked mounter would run
 * under the mounter's allow-list. The launcher is forked before the lock,
 * keeps the mounter's capabilities (and no_new_privs) but no filter, and
 * listens to nobody but the mounter, on a socketpair: it reads fixed-size
 * requests, checks they are well formed, and starts each plugin in a new
 * mount namespace where everything is a slave copy of the host except the
 * plugin's mount root and socket directory, which stay in the host's peer
 * groups. The plugin keeps only the capabilities its definition grants.
 * The launcher reaps its plugins and reports each exit to the mounter.
 * Must not: read anything but the mounter's socket; decide anything the
 * mounter has not validated.
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
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "launcher.h"
#include "mounter.h"
#include "privdrop.h"
#include "sandbox.h"

#define SOCK_FD 3
#define DATA_FD 4

struct failure {
	int err;
	char what[64];
};

static struct {
	pid_t pid;
	int pidfd;
} kids[PLUGIN_MAX];

static void
reply(const struct launch_msg *msg, int fd)
{
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { (void *)msg, sizeof(*msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd >= 0) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.space;
		mh.msg_controllen = sizeof(cm.space);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(SOCK_FD, &mh, MSG_NOSIGNAL) < 0)
		_exit(1);
}

/* In the child: set the plugin up and exec it; returns only on failure. */
static int
plugin_child(const struct launch_req *rq, const int fds[3], const char **what)
{
	const char *rel[2] = { rq->root, rq->sockdir };
	char *argv[LAUNCH_ARGS + 1], *envp[3];
	int dirs[2], trees[2], i;
	cap_value_t c;
	cap_t caps;

	*what = "setsid";
	if (setsid() < 0)
		return errno;
	*what = "unshare(CLONE_NEWNS)";
	if (fchdir(DATA_FD) < 0 || unshare(CLONE_NEWNS) < 0)
		return errno;
	/* The copies of the two shared mounts, cloned into their peer groups. */
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
	for (i = 0; i < 2; i++) {
		*what = "attaching a shared mount";
		if (move_mount(trees[i], "", dirs[i], "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return errno;
	}
	*what = "redirecting output";
	if (chdir("/") < 0 || dup2(fds[1], STDOUT_FILENO) < 0 ||
	    dup2(fds[2], STDERR_FILENO) < 0 ||
	    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return errno;
	*what = "setting capabilities";
	if ((caps = cap_init()) == NULL)
		return errno;
	for (c = 0; c < 64; c++)
		if ((rq->caps & (1ULL << c)) &&
		    (cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET) < 0 ||
		    cap_set_flag(caps, CAP_PERMITTED, 1, &c, CAP_SET) < 0))
			return errno;
	/* With no_new_privs, exec as root keeps no more than this. */
	if (cap_set_proc(caps) < 0)
		return errno;
	for (i = 0; i < (int)rq->nargs; i++)
		argv[i] = (char *)rq->args[i];
	argv[i] = NULL;
	envp[0] = (char *)rq->endpoint;
	envp[1] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	    "/sbin:/bin";
	envp[2] = NULL;
	*what = "exec";
	fexecve(fds[0], argv, envp);
	return errno;
}

static void
launch(const struct launch_req *rq, const int fds[3])
{
	struct launch_msg msg = { .type = LAUNCH_FAILED };
	struct failure f = { 0 };
	const char *what = "";
	int ep[2], slot, pidfd;
	ssize_t n;
	pid_t pid;

	for (slot = 0; slot < PLUGIN_MAX && kids[slot].pid != 0; slot++)
		;
	if (slot == PLUGIN_MAX) {
		msg.err = EAGAIN;
		snprintf(msg.what, sizeof(msg.what), "too many plugins");
		reply(&msg, -1);
		return;
	}
	if (pipe2(ep, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		msg.err = errno;
		snprintf(msg.what, sizeof(msg.what), "fork");
		reply(&msg, -1);
		return;
	}
	if (pid == 0) {
		close(ep[0]);
		f.err = plugin_child(rq, fds, &what);
		snprintf(f.what, sizeof(f.what), "%s", what);
		if (write(ep[1], &f, sizeof(f)) < 0)
			_exit(126);
		_exit(127);
	}
	close(ep[1]);
	/* End of file: the exec closed the pipe, the plugin runs. */
	while ((n = read(ep[0], &f, sizeof(f))) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (n > 0 || (pidfd = pidfd_open(pid, 0)) < 0) {
		msg.err = n > 0 ? f.err : errno;
		snprintf(msg.what, sizeof(msg.what), "%s",
		    n > 0 ? f.what : "pidfd_open");
		waitpid(pid, NULL, 0);
		reply(&msg, -1);
		return;
	}
	kids[slot].pid = pid;
	kids[slot].pidfd = pidfd;
	msg.type = LAUNCH_STARTED;
	msg.pid = pid;
	reply(&msg, pidfd);
}

static bool
terminated(const char *s)
{
	return memchr(s, '\0', LAUNCH_STR) != NULL;
}

/* One request from the mounter; false at end of file. */
static bool
serve_one(void)
{
	static struct launch_req rq;
	struct launch_msg msg = { .type = LAUNCH_FAILED, .err = EINVAL };
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(3 * sizeof(int))];
	} cm;
	struct iovec iov = { &rq, sizeof(rq) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cm.space, .msg_controllen = sizeof(cm.space) };
	struct cmsghdr *c;
	int fds[3] = { -1, -1, -1 }, nfd = 0, i;
	bool ok;
	ssize_t n;

	if ((n = recvmsg(SOCK_FD, &mh, MSG_CMSG_CLOEXEC)) <= 0)
		return n < 0 && errno == EINTR;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(3 * sizeof(int))) {
			memcpy(fds, CMSG_DATA(c), sizeof(fds));
			nfd = 3;
		}
	ok = n == sizeof(rq) && nfd == 3 && !(mh.msg_flags & (MSG_TRUNC |
	    MSG_CTRUNC)) && rq.nargs >= 1 && rq.nargs <= LAUNCH_ARGS &&
	    terminated(rq.root) && terminated(rq.sockdir) &&
	    terminated(rq.endpoint);
	for (i = 0; ok && i < (int)rq.nargs; i++)
		ok = terminated(rq.args[i]);
	if (ok) {
		launch(&rq, fds);
	} else {
		snprintf(msg.what, sizeof(msg.what), "malformed request");
		reply(&msg, -1);
	}
	for (i = 0; i < nfd; i++)
		close(fds[i]);
	return true;
}

static void __attribute__((noreturn))
launcher_main(pid_t mounter)
{
	struct pollfd pfd[1 + PLUGIN_MAX];
	struct launch_msg msg = { .type = LAUNCH_EXITED };
	int i, status;

	prctl(PR_SET_NAME, "berth-launcher", 0, 0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getppid() != mounter || priv_keep_only(mounter_caps,
	    mounter_ncaps) < 0)
		_exit(1);
	for (;;) {
		pfd[0].fd = SOCK_FD;
		pfd[0].events = POLLIN;
		for (i = 0; i < PLUGIN_MAX; i++) {
			pfd[1 + i].fd = kids[i].pid != 0 ? kids[i].pidfd : -1;
			pfd[1 + i].events = POLLIN;
		}
		if (poll(pfd, 1 + PLUGIN_MAX, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pfd[0].revents != 0 && !serve_one())
			_exit(0);
		for (i = 0; i < PLUGIN_MAX; i++) {
			if (kids[i].pid == 0 || pfd[1 + i].revents == 0 ||
			    waitpid(kids[i].pid, &status, WNOHANG) <= 0)
				continue;
			msg.pid = kids[i].pid;
			msg.status = status;
			close(kids[i].pidfd);
			kids[i].pid = 0;
			reply(&msg, -1);
		}
	}
}

int
launcher_spawn(int data_fd, pid_t *pid)
{
	pid_t mounter = getpid();
	int sp[2], s, d;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	if ((*pid = fork()) < 0) {
		close(sp[0]);
		close(sp[1]);
		return -errno;
	}
	if (*pid == 0) {
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
