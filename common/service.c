/*
 * service.c: the sockets of service mode (see service.h).
 *
 * systemd's socket passing (LISTEN_PID, LISTEN_FDS, from fd 3, see
 * sd_listen_fds(3)) is read here without libsystemd, which the root-run
 * mounter must not link.
 *
 * Must not: serve more than one peer. A helper takes one connection, then
 * closes its copy of the listener; systemd holds the socket and starts
 * the helper again for the next supervisor.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "helper.h"
#include "log.h"
#include "privdrop.h"
#include "service.h"

/* Fds systemd passed start here (sd_listen_fds(3)). */
#define LISTEN_FDS_START 3
/* Linux 6.5's; older kernels answer ENOPROTOOPT and pidfd_open is used. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#define PROCS_MAX 65536

/*
 * How many fds systemd passed to this process: 0 when LISTEN_PID names
 * another one (they were meant for a parent), -1 when malformed. The
 * variables are unset so that no child takes the fds for its own.
 */
static int
listen_fds(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	char *end;
	long p, n = 0;
	int i;

	if (pid != NULL && fds != NULL) {
		errno = 0;
		p = strtol(pid, &end, 10);
		if (errno != 0 || end == pid || *end != '\0')
			n = -1;
		else if (p == (long)getpid()) {
			n = strtol(fds, &end, 10);
			if (errno != 0 || end == fds || *end != '\0' ||
			    n < 0 || n > 1024)
				n = -1;
		}
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	for (i = 0; i < n; i++)
		if (fcntl(LISTEN_FDS_START + i, F_SETFD, FD_CLOEXEC) < 0)
			return -1;
	return (int)n;
}

/* fd is a listening unix socket of type type. */
static bool
listening_unix(int fd, int type)
{
	struct sockaddr_storage ss;
	struct stat st;
	socklen_t len;
	int v;

	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != type)
		return false;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) < 0 || !v)
		return false;
	len = sizeof(ss);
	return getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
	    ss.ss_family == AF_UNIX;
}

/*
 * Is pid in the cgroup v2 directory dir? Its cgroup.procs lists it (read
 * from the cgroup file system, which needs no view of the peer's /proc),
 * and the pidfd, pinned before the read, still names a live process after
 * it, so the pid cannot have been another's meanwhile (a pid is reused
 * only once its process has ended).
 */
static bool
in_cgroup(const char *dir, pid_t pid, int pidfd)
{
	static char buf[PROCS_MAX + 1];
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	char path[4096], *p, *end;
	ssize_t n, got = 0;
	bool found = false;
	int fd;

	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >=
	    (int)sizeof(path) || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	while (got < PROCS_MAX && (n = read(fd, buf + got, PROCS_MAX -
	    got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	for (p = buf; !found && *p != '\0'; p = end + (*end != '\0'))
		found = strtol(p, &end, 10) == pid && (*end == '\n' ||
		    *end == '\0') && end != p;
	/* A pidfd is readable once its process has ended. */
	return found && poll(&pfd, 1, 0) == 0;
}

/*
 * The connection fd is the supervisor's: a process of peer_uid and, when
 * peer_cgroup is set, one in that cgroup, which no process outside the
 * supervisor's service can join (its delegated subtree is reached only
 * through root's cgroups). Logs why not.
 */
static bool
peer_ok(int fd, uid_t peer_uid, const char *peer_cgroup, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);
	int pidfd = -1;
	bool ok;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) < 0) {
		log_warn("service_accept: SO_PEERCRED");
		return false;
	}
	if (cred->uid != peer_uid) {
		log_warnx("service_accept: connection refused: peer_pid=%ld "
		    "peer_uid=%ld allowed_uid=%ld (only the supervisor's user "
		    "may connect)", (long)cred->pid, (long)cred->uid,
		    (long)peer_uid);
		return false;
	}
	if (peer_cgroup == NULL)
		return true;
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = pidfd_open(cred->pid, 0);
	ok = pidfd >= 0 && in_cgroup(peer_cgroup, cred->pid, pidfd);
	if (pidfd >= 0)
		close(pidfd);
	if (!ok)
		log_warnx("service_accept: connection refused: peer_pid=%ld "
		    "peer_uid=%ld is not in cgroup %s (only the supervisor, "
		    "in its own leaf, may connect)", (long)cred->pid,
		    (long)cred->uid, peer_cgroup);
	return ok;
}

int
service_accept(uid_t peer_uid, const char *peer_cgroup, pid_t *peer_pid,
    char *err, size_t errlen)
{
	struct ucred cred;
	int n, lfd, fd;

	if ((n = listen_fds()) != 1) {
		snprintf(err, errlen, "service mode needs exactly one socket "
		    "from systemd, got %d%s (start the .socket unit, or let "
		    "berth-supervisor start us with --spawned)",
		    n < 0 ? 0 : n, n < 0 ? " (LISTEN_FDS is malformed)" : "");
		return -1;
	}
	lfd = LISTEN_FDS_START;
	if (!listening_unix(lfd, SOCK_SEQPACKET)) {
		snprintf(err, errlen, "the socket systemd passed is not a "
		    "listening unix SOCK_SEQPACKET socket (check "
		    "ListenSequentialPacket= in the .socket unit)");
		return -1;
	}
	for (;;) {
		if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
			/* A unit with NonBlocking=yes passes it that way. */
			if (errno == EAGAIN) {
				struct pollfd pfd = { .fd = lfd,
					.events = POLLIN };

				(void)poll(&pfd, 1, -1);
				continue;
			}
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			snprintf(err, errlen, "accept on the socket systemd "
			    "passed: %s", strerror(errno));
			return -1;
		}
		if (peer_ok(fd, peer_uid, peer_cgroup, &cred))
			break;
		close(fd);
	}
	/* lfd is BERTH_HELPER_FD: the connection takes its place. */
	if (dup3(fd, BERTH_HELPER_FD, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "dup3: %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	*peer_pid = cred.pid;
	return 0;
}

int
service_helper_peer(int spawned, const char *peer_user,
    const char *peer_cgroup, pid_t *peer_pid, char *err, size_t errlen)
{
	struct priv_user u;

	if (spawned)
		*peer_pid = getppid();
	else if (priv_lookup_user(peer_user, &u, err, errlen) < 0 ||
	    service_accept(u.uid, peer_cgroup, peer_pid, err, errlen) < 0)
		return -1;
	return helper_check_socket(BERTH_HELPER_FD, *peer_pid, err, errlen);
}

int
service_connect(const char *run_dir, const char *name, char *err,
    size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, r;

	r = snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s", run_dir,
	    name);
	if (r < 0 || (size_t)r >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s/%s is too long for a unix socket",
		    run_dir, name);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s (is %s.socket "
		    "started? berth-supervisor runs in spawn mode only when "
		    "started as root)", sun.sun_path, strerror(errno),
		    strcmp(name, SERVICE_MOUNTER_SOCKET) == 0 ?
		    "berth-mounter" : "berth-registry");
		close(fd);
		return -1;
	}
	return fd;
}
