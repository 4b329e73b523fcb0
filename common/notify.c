/*
 * notify.c: systemd's notification protocol over one socket connected at
 * start (see notify.h). The watchdog settings are read from the
 * environment (WATCHDOG_USEC, WATCHDOG_PID, see sd_watchdog_enabled(3)),
 * without libsystemd: the root-run mounter links this file, and
 * libsystemd would bring libgcrypt, liblzma, libzstd and liblz4 into it
 * for two variables. The datagrams go out with write(2), which every
 * sandbox of berth allows.
 *
 * Must not: block (the socket is non-blocking; a full queue drops a
 * status line, never stalls the event loop), or fail a daemon that runs
 * without a service manager.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "notify.h"

static int notify_fd = -1;
static uint64_t watchdog_usec;
static struct event *watchdog_ev;

static int
notify_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	socklen_t salen;
	int fd;

	/* "@name" is an abstract socket: a leading NUL, no trailing one. */
	if ((path[0] != '/' && path[0] != '@') || len < 2 ||
	    len >= sizeof(sun.sun_path))
		return -EINVAL;
	memcpy(sun.sun_path, path, len);
	if (path[0] == '@')
		sun.sun_path[0] = '\0';
	salen = offsetof(struct sockaddr_un, sun_path) + len +
	    (path[0] == '/' ? 1 : 0);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, salen) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/*
 * The watchdog interval the manager set for this process, in
 * microseconds; 0: none (absent, malformed, or meant for another pid).
 * Both variables are unset: a child must not ping in our name.
 */
static uint64_t
watchdog_from_env(void)
{
	const char *us = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	unsigned long long v = 0;
	char *end;

	if (us != NULL) {
		errno = 0;
		v = strtoull(us, &end, 10);
		if (errno != 0 || end == us || *end != '\0' || us[0] == '-')
			v = 0;
	}
	if (v > 0 && pid != NULL) {
		errno = 0;
		if (strtol(pid, &end, 10) != (long)getpid() || errno != 0 ||
		    end == pid || *end != '\0')
			v = 0;
	}
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return v;
}

int
notify_init(void)
{
	const char *path;
	int fd;

	notify_free();
	watchdog_usec = watchdog_from_env();
	if ((path = getenv("NOTIFY_SOCKET")) == NULL)
		return 0;
	fd = notify_connect(path);
	unsetenv("NOTIFY_SOCKET");
	if (fd < 0) {
		watchdog_usec = 0;
		return fd;
	}
	notify_fd = fd;
	return 0;
}

static void
notify_write(const char *msg, size_t len)
{
	/* A lost status line is not worth stalling or failing for. */
	if (notify_fd >= 0 && write(notify_fd, msg, len) < 0)
		log_debug("notify_write: %.*s: %s", (int)strcspn(msg, "\n"),
		    msg, strerror(errno));
}

static void
notify_send(const char *head, const char *fmt, va_list ap)
{
	char msg[512];
	size_t hlen = strlen(head), n;
	char *p;
	int m;

	if (notify_fd < 0)
		return;
	memcpy(msg, head, hlen);
	if ((m = vsnprintf(msg + hlen, sizeof(msg) - hlen, fmt, ap)) < 0)
		return;
	n = hlen + (size_t)m;
	if (n >= sizeof(msg))
		n = sizeof(msg) - 1;
	/* One status line: a newline would start a field of its own. */
	for (p = msg + hlen; p < msg + n; p++)
		if (*p == '\n')
			*p = ' ';
	notify_write(msg, n);
}

#define NOTIFYFN(fn, head)                \
	void fn(const char *fmt, ...)     \
	{                                 \
		va_list ap;               \
		va_start(ap, fmt);        \
		notify_send(head, fmt, ap); \
		va_end(ap);               \
	}

NOTIFYFN(notify_ready, "READY=1\nSTATUS=")
NOTIFYFN(notify_status, "STATUS=")
NOTIFYFN(notify_stopping, "STOPPING=1\nSTATUS=")

static void
on_watchdog(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	notify_write("WATCHDOG=1", 10);
}

int
notify_watchdog_start(struct event_base *base)
{
	struct timeval tv;
	uint64_t half = watchdog_usec / 2;

	if (notify_fd < 0 || watchdog_usec == 0 || watchdog_ev != NULL)
		return 0;
	watchdog_ev = event_new(base, -1, EV_PERSIST, on_watchdog, NULL);
	if (watchdog_ev == NULL)
		return -ENOMEM;
	tv.tv_sec = half / 1000000;
	tv.tv_usec = half % 1000000;
	event_add(watchdog_ev, &tv);
	notify_write("WATCHDOG=1", 10);
	return 0;
}

uint64_t
notify_watchdog_usec(void)
{
	return watchdog_usec;
}

void
notify_free(void)
{
	if (watchdog_ev != NULL) {
		event_free(watchdog_ev);
		watchdog_ev = NULL;
	}
	if (notify_fd >= 0) {
		close(notify_fd);
		notify_fd = -1;
	}
	watchdog_usec = 0;
}
