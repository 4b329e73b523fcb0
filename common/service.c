/*
 * service.c: the sockets of service mode (see service.h).
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
#include <sys/socket.h>
#include <sys/un.h>

#include <systemd/sd-daemon.h>

#include "helper.h"
#include "log.h"
#include "privdrop.h"
#include "service.h"

int
service_accept(uid_t peer_uid, pid_t *peer_pid, char *err, size_t errlen)
{
	struct ucred cred;
	socklen_t len;
	int n, lfd, fd;

	if ((n = sd_listen_fds(1)) != 1) {
		snprintf(err, errlen, "service mode needs exactly one socket "
		    "from systemd, got %d%s (start the .socket unit, or let "
		    "berth-supervisor start us with --spawned)",
		    n < 0 ? 0 : n, n < 0 ? " (LISTEN_FDS is malformed)" : "");
		return -1;
	}
	lfd = SD_LISTEN_FDS_START;
	if (sd_is_socket_unix(lfd, SOCK_SEQPACKET, 1, NULL, 0) <= 0) {
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
		len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			log_warn("service_accept: SO_PEERCRED");
			close(fd);
			continue;
		}
		if (cred.uid == peer_uid)
			break;
		log_warnx("service_accept: connection refused: peer_pid=%ld "
		    "peer_uid=%ld allowed_uid=%ld (only the supervisor's user "
		    "may connect)", (long)cred.pid, (long)cred.uid,
		    (long)peer_uid);
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
service_helper_peer(int spawned, const char *peer_user, pid_t *peer_pid,
    char *err, size_t errlen)
{
	struct priv_user u;

	if (spawned)
		*peer_pid = getppid();
	else if (priv_lookup_user(peer_user, &u, err, errlen) < 0 ||
	    service_accept(u.uid, peer_pid, err, errlen) < 0)
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
