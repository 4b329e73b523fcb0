/*
 * http.c: the tests' HTTP/1.1 client over a unix socket (see http.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "http.h"

int64_t
http_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for fd to be ready for ev until the deadline; 0 or -ETIMEDOUT. */
static int
wait_fd(int fd, short ev, int64_t deadline)
{
	struct pollfd p = { fd, ev, 0 };
	int64_t left;
	int r;

	for (;;) {
		if ((left = deadline - http_now_ms()) <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int
send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	ssize_t w;
	int r;

	while (len > 0) {
		if ((r = wait_fd(fd, POLLOUT, deadline)) < 0)
			return r;
		if ((w = send(fd, buf, len, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The status code and where the body starts; -1 if not HTTP/1.x. */
static int
parse_head(char *buf, size_t len, int *status, size_t *body_off,
    long long *clen)
{
	char *end = memmem(buf, len, "\r\n\r\n", 4), *line, *next;

	if (end == NULL || strncmp(buf, "HTTP/1.", 7) != 0 || len < 12)
		return -1;
	*end = '\0';
	*status = atoi(buf + 9);
	*body_off = (size_t)(end - buf) + 4;
	*clen = -1;
	for (line = strstr(buf, "\r\n"); line != NULL; line = next) {
		line += 2;
		next = strstr(line, "\r\n");
		if (strncasecmp(line, "Content-Length:", 15) == 0)
			*clen = atoll(line + 15);
	}
	return *status >= 100 && *status <= 599 ? 0 : -1;
}

int
http_request(const char *sock, const char *method, const char *path,
    const char *body, size_t body_len, int timeout_ms,
    struct http_response *resp, char *why, size_t whylen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int64_t deadline = http_now_ms() + timeout_ms;
	char head[2048], *buf = NULL;
	size_t len = 0, cap = 0, off;
	long long clen;
	ssize_t n;
	int fd, r;

	memset(resp, 0, sizeof(*resp));
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock) >=
	    sizeof(sun.sun_path)) {
		snprintf(why, whylen, "socket path %s is too long", sock);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		snprintf(why, whylen, "cannot connect to %s: %s", sock,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: berth\r\n"
	    "User-Agent: berthctl\r\nAccept: application/json\r\n"
	    "Connection: close\r\n%s%zu\r\n\r\n", method, path,
	    body != NULL ? "Content-Type: application/json\r\n"
	    "Content-Length: " : "Content-Length: ", body != NULL ? body_len :
	    0);
	if ((r = send_all(fd, head, strlen(head), deadline)) < 0 ||
	    (body != NULL && (r = send_all(fd, body, body_len,
	    deadline)) < 0)) {
		/* A refusal may close early: read what it said first. */
		if (r != -EPIPE && r != -ECONNRESET)
			goto fail;
	}
	for (;;) {
		if (cap - len < 4096) {
			char *nb;

			cap = cap == 0 ? 16384 : cap * 2;
			if (cap > HTTP_MAX_RESPONSE + 4096 ||
			    (nb = realloc(buf, cap + 1)) == NULL) {
				r = -EFBIG;
				goto fail;
			}
			buf = nb;
		}
		if ((r = wait_fd(fd, POLLIN, deadline)) < 0)
			goto fail;
		if ((n = recv(fd, buf + len, cap - len, 0)) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (errno == ECONNRESET && len > 0)
				break;
			r = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf == NULL || parse_head(buf, len, &resp->status, &off,
	    &clen) < 0) {
		snprintf(why, whylen, "%s answered %s", sock, len == 0 ?
		    "nothing (closed the connection)" : "something that is "
		    "not HTTP/1.1");
		free(buf);
		return -1;
	}
	if (clen >= 0 && (size_t)clen < len - off)
		len = off + (size_t)clen;
	if ((resp->head = strdup(buf)) == NULL) {
		snprintf(why, whylen, "out of memory");
		free(buf);
		return -1;
	}
	memmove(buf, buf + off, len - off);
	resp->len = len - off;
	buf[resp->len] = '\0';
	resp->body = buf;
	return 0;
fail:
	close(fd);
	free(buf);
	snprintf(why, whylen, "talking to %s: %s", sock, r == -ETIMEDOUT ?
	    "no answer in time" : strerror(-r));
	return -1;
}

const char *
http_header(const struct http_response *resp, const char *name, char *buf,
    size_t n)
{
	const char *line, *end;
	size_t len = strlen(name);

	for (line = strstr(resp->head, "\r\n"); line != NULL;
	    line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, name, len) != 0 || line[len] != ':')
			continue;
		line += len + 1;
		while (*line == ' ')
			line++;
		end = strstr(line, "\r\n");
		snprintf(buf, n, "%.*s", (int)(end != NULL ? end - line :
		    (long)strlen(line)), line);
		return buf;
	}
	return NULL;
}

void
http_response_free(struct http_response *resp)
{
	free(resp->body);
	free(resp->head);
	resp->body = resp->head = NULL;
}
