/*
 * shimchan.c: a sandboxed task's channel, the supervisor's side (see
 * shimchan.h and shim/shim.h).
 *
 * Owns: the encoding of what a task runs into the shim's datagrams, and
 * the reading of its reports and status file. Must not: block on a
 * channel that is not the caller's to block on (it sends only what fits
 * the socket's buffer for a new channel: the spec, and a stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "shimchan.h"

static int
send_all(int fd, const void *buf, size_t len)
{
	ssize_t n;

	do
		n = send(fd, buf, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

static int
send_str(int fd, uint32_t type, const char *s)
{
	static char buf[SHIM_MSG_MAX];
	size_t len = strlen(s);

	if (len + sizeof(type) > sizeof(buf))
		return -E2BIG;
	memcpy(buf, &type, sizeof(type));
	memcpy(buf + sizeof(type), s, len);
	return send_all(fd, buf, len + sizeof(type));
}

/* Checked whole before anything is sent: the shim refuses what is not. */
static int
check(const struct shimchan_spec *s)
{
	size_t i, max = SHIM_MSG_MAX - sizeof(uint32_t);

	if (s->command == NULL || s->command[0] != '/' ||
	    (s->dir != NULL && s->dir[0] != '/') ||
	    s->nargs + 1 > SHIM_MAX_ARGS || s->nenv > SHIM_MAX_ENV)
		return -EINVAL;
	if (strlen(s->command) > max || (s->dir != NULL &&
	    strlen(s->dir) > max))
		return -E2BIG;
	for (i = 0; i < s->nargs; i++)
		if (strlen(s->args[i]) > max)
			return -E2BIG;
	for (i = 0; i < s->nenv; i++) {
		if (strchr(s->env[i], '=') == NULL)
			return -EINVAL;
		if (strlen(s->env[i]) > max)
			return -E2BIG;
	}
	return 0;
}

int
shimchan_send_spec(int fd, const struct shimchan_spec *s)
{
	struct shim_run run = { 0 };
	size_t i;
	int r;

	if ((r = check(s)) < 0 ||
	    (r = send_str(fd, SHIM_MSG_ARG, s->command)) < 0)
		return r;
	for (i = 0; i < s->nargs; i++)
		if ((r = send_str(fd, SHIM_MSG_ARG, s->args[i])) < 0)
			return r;
	for (i = 0; i < s->nenv; i++)
		if ((r = send_str(fd, SHIM_MSG_ENV, s->env[i])) < 0)
			return r;
	if (s->dir != NULL && (r = send_str(fd, SHIM_MSG_DIR, s->dir)) < 0)
		return r;
	run.type = SHIM_MSG_RUN;
	run.sv_uid = (uint32_t)s->sv_uid;
	run.run_id = s->run_id;
	run.max_bytes = s->max_bytes > 0 ? s->max_bytes :
	    SHIM_DEFAULT_MAX_BYTES;
	run.max_files = s->max_files > 0 ? s->max_files :
	    SHIM_DEFAULT_MAX_FILES;
	run.flags = s->plugin ? SHIM_RUN_PLUGIN : 0;
	return send_all(fd, &run, sizeof(run));
}

int
shimchan_stop(int fd, int sig, unsigned grace_ms)
{
	struct shim_stop st = { SHIM_MSG_STOP, sig, grace_ms, 0 };

	return send_all(fd, &st, sizeof(st));
}

int
shimchan_recv(int fd, struct shimchan_msg *m)
{
	union {
		uint32_t type;
		struct shim_started started;
		struct shim_exit exit;
		char max[64];
	} u;
	ssize_t n;

	do
		n = recv(fd, &u, sizeof(u), MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -EAGAIN : -EPROTO;
	if (n == 0)
		return 0;
	memset(m, 0, sizeof(*m));
	m->type = n >= (ssize_t)sizeof(u.type) ? u.type : 0;
	if (m->type == SHIM_MSG_STARTED && n == sizeof(u.started))
		m->started = u.started;
	else if (m->type == SHIM_MSG_EXIT && n == sizeof(u.exit))
		m->exit = u.exit;
	else
		return -EPROTO;
	return 1;
}

int
shimchan_connect(const char *status_dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, len;

	len = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", status_dir,
	    SHIM_CTL_SOCK);
	if (len < 0 || (size_t)len >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		len = -errno;
		close(fd);
		return len;
	}
	return fd;
}

int
shimchan_read_status(const char *status_dir, uint64_t run_id,
    bool *signaled, int *code)
{
	char path[4096], buf[160], how[16];
	unsigned long long id;
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", status_dir,
	    SHIM_STATUS_FILE) >= sizeof(path))
		return -ENAMETOOLONG;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "run %llu %15s %d", &id, how, code) != 3 ||
	    id != run_id || (strcmp(how, "exited") != 0 &&
	    strcmp(how, "signaled") != 0))
		return 0;
	*signaled = strcmp(how, "signaled") == 0;
	return 1;
}
