/*
 * api_logs.c: GET /v1/allocation/<id>/logs?task=T[&stream=stderr]
 * [&offset=N]: a task's log, as text, from byte N of its current file.
 *
 * The answer is the file's bytes from offset (at most API_LOG_CHUNK of
 * them), text/plain, with headers that say where they are:
 * X-Berth-Log-Offset (where this answer starts: 0 when the file was
 * rotated since, and so is shorter than offset), X-Berth-Log-Next (the
 * offset to ask for next), X-Berth-Log-Size (the file's size now) and
 * X-Berth-Log-Running (1 while the allocation runs and more may come).
 * A follower asks again with the next offset; an answer is never held.
 * A task whose file is not there yet answers empty. Errors are JSON, as
 * everywhere. Logs of an allocation that has stopped are served for
 * log_retention (alloc_logs.h). Must not: write anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <event2/buffer.h>

#include "alloc_logs.h"
#include "api_int.h"
#include "ident.h"
#include "xalloc.h"

#define API_LOG_CHUNK	(1024 * 1024)

static void
header_ll(struct evkeyvalq *h, const char *name, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	evhttp_add_header(h, name, buf);
}

/* offset's value: 0 when absent; -1 when not a whole number. */
static long long
parse_offset(const char *s)
{
	long long v;
	char *end;

	if (s == NULL)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0)
		return -1;
	return v;
}

/* Up to API_LOG_CHUNK bytes of fd from *start (0 when past its end). */
static int
read_chunk(int fd, long long size, long long *start, struct evbuffer *out)
{
	size_t want, got = 0;
	ssize_t r;
	char *buf;

	if (*start > size)
		*start = 0;	/* rotated: a new file, shorter than offset */
	want = (size_t)(size - *start) > API_LOG_CHUNK ? API_LOG_CHUNK :
	    (size_t)(size - *start);
	buf = xmalloc(want + 1);
	while (got < want && (r = pread(fd, buf + got, want - got,
	    (off_t)(*start + (long long)got))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return -1;
		}
		got += (size_t)r;
	}
	evbuffer_add(out, buf, got);
	free(buf);
	return (int)(got > 0);
}

void
api_alloc_logs(struct api_call *c)
{
	const char *task = api_param(c, "task"), *stream = api_param(c,
	    "stream"), *bad;
	struct evbuffer *out = evhttp_request_get_output_buffer(c->req);
	struct evkeyvalq *h = evhttp_request_get_output_headers(c->req);
	long long offset = parse_offset(api_param(c, "offset")), size = 0;
	struct alloc_log l;
	struct stat st;
	char why[512];
	int fd;

	if (task == NULL) {
		api_error(c, 400, "which task's log: give ?task=NAME");
		return;
	}
	if ((bad = ident_problem(task, strlen(task))) != NULL) {
		api_error(c, 400, "task \"%s\" is not an identifier (1 to %d "
		    "of A-Z a-z 0-9 . _ -): %s", task, BERTH_IDENT_MAX, bad);
		return;
	}
	if (stream != NULL && strcmp(stream, "stdout") != 0 && strcmp(stream,
	    "stderr") != 0) {
		api_error(c, 400, "stream is stdout or stderr, not \"%s\"",
		    stream);
		return;
	}
	if (offset < 0) {
		api_error(c, 400, "offset is a whole number of bytes, not "
		    "\"%s\"", api_param(c, "offset"));
		return;
	}
	if (allocs_log(c->d->allocs, c->id, task, stream != NULL &&
	    strcmp(stream, "stderr") == 0, &l, why, sizeof(why)) < 0) {
		api_error(c, 404, "%s", why);
		return;
	}
	if ((fd = open(l.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0 && errno != ENOENT) {
		api_error(c, 500, "cannot read the log of task %s: %s", task,
		    strerror(errno));
		return;
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    read_chunk(fd, size = st.st_size, &offset, out) < 0)) {
		close(fd);
		evbuffer_drain(out, evbuffer_get_length(out));
		api_error(c, 500, "cannot read the log of task %s: not a "
		    "regular file, or %s", task, strerror(errno));
		return;
	}
	if (fd >= 0)
		close(fd);
	if (offset > size)
		offset = 0;
	evhttp_add_header(h, "Content-Type", "text/plain");
	header_ll(h, "X-Berth-Log-Offset", offset);
	header_ll(h, "X-Berth-Log-Next", offset +
	    (long long)evbuffer_get_length(out));
	header_ll(h, "X-Berth-Log-Size", size);
	header_ll(h, "X-Berth-Log-Running", l.running);
	if (evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD) {
		header_ll(h, "Content-Length",
		    (long long)evbuffer_get_length(out));
		evbuffer_drain(out, evbuffer_get_length(out));
	}
	evhttp_send_reply(c->req, 200, "OK", NULL);
}
