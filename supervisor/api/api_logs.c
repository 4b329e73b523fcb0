/*
 * api_logs.c: GET /v1/allocation/<id>/logs?task=T[&stream=stderr]
 * [&file=F][&offset=N]: a task's log, as text, across its rotated files.
 *
 * A stream is its current file and the older ones its writer rotated it
 * to (name.1, name.2, ..., the oldest last). Without file, the answer
 * starts in the oldest file; with file (an X-Berth-Log-File an earlier
 * answer gave), in that file, wherever rotation has moved it since; in
 * either case at byte offset (0 by default). Once a rotated file has been
 * read to its end, the next newer file is read from its start: a reader
 * that asks again with what the headers say neither loses nor repeats a
 * byte, unless it falls so far behind that its file was dropped (then
 * the answer starts at the oldest file kept, with X-Berth-Log-Lost: 1).
 *
 * The answer is at most API_LOG_CHUNK bytes of one file, text/plain,
 * with headers: X-Berth-Log-File (that file's identity; none while
 * there is no file yet), -Offset (where
 * the answer starts in it: 0 if the file is now shorter than offset, a
 * file truncated by a rotation that keeps one), -Next (the offset to ask
 * for next, with the same file), -Size (the file's size), -Current (1:
 * the file is the current one, so more may only come at its end) and
 * -Running (1 while the allocation runs and more may come). A plain read
 * ends at an answer with Current 1 and Next equal to Size; a follower
 * asks again later from there. An answer is never held. A task whose
 * file is not there yet answers empty. Errors are JSON, as everywhere.
 * Logs of an allocation that has stopped are served for log_retention
 * (alloc_logs.h). Must not: write anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <event2/buffer.h>

#include "alloc_logs.h"
#include "api_int.h"
#include "ident.h"
#include "xalloc.h"

#define API_LOG_CHUNK	(1024 * 1024)
#define API_LOG_FILES	100	/* a stream's files: berth-shim's most */

/* One file of a stream, newest first: the current one is [0]. */
struct lfile {
	int fd;
	unsigned long long id;	/* its inode: renaming keeps it; copying
				 * keeps it too (ALLOC_LOG_ID_XATTR) */
	long long size;
};

static void
header_ll(struct evkeyvalq *h, const char *name, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	evhttp_add_header(h, name, buf);
}

/* A whole number's value: 0 when absent; -1 when it is not one. */
static long long
parse_number(const char *s)
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

/* A file's identity: its inode, or a kept copy's original's. */
static unsigned long long
file_id(int fd, const struct stat *st)
{
	char v[32];
	ssize_t n;

	if ((n = fgetxattr(fd, ALLOC_LOG_ID_XATTR, v, sizeof(v) - 1)) <= 0)
		return (unsigned long long)st->st_ino;
	v[n] = '\0';
	return strtoull(v, NULL, 10);
}

/*
 * The stream's files, current first (path, path.1, ...), each once: a
 * rotation while they are opened moves a file to the next name, never
 * back, so one may be seen twice, or a name be missing once. How many,
 * or -1 with errno set.
 */
static int
open_files(const char *path, struct lfile *f)
{
	char name[BERTH_PATH_BUF + 8];
	int i, j, n = 0, missing = 0, fd;
	struct stat st;

	for (i = 0; i < API_LOG_FILES && missing < 2; i++) {
		snprintf(name, sizeof(name), i ? "%s.%d" : "%s", path, i);
		if ((fd = open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC)) < 0 && errno == ENOENT) {
			missing++;
			continue;
		}
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			while (n > 0)
				close(f[--n].fd);
			errno = fd < 0 ? errno : EINVAL;
			return -1;
		}
		missing = 0;
		f[n].id = file_id(fd, &st);
		for (j = 0; j < n && f[j].id != f[n].id; j++)
			;
		if (j < n) {
			close(fd);
			continue;
		}
		f[n].fd = fd;
		f[n++].size = st.st_size;
	}
	return n;
}

/* Up to API_LOG_CHUNK bytes of f from start into out; -1: cannot. */
static int
read_chunk(const struct lfile *f, long long start, struct evbuffer *out)
{
	size_t want, got = 0;
	ssize_t r;
	char *buf;

	want = (size_t)(f->size - start) > API_LOG_CHUNK ? API_LOG_CHUNK :
	    (size_t)(f->size - start);
	buf = xmalloc(want + 1);
	while (got < want && (r = pread(f->fd, buf + got, want - got,
	    (off_t)(start + (long long)got))) != 0) {
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
	return 0;
}

/* The query's problem, answered; 0 when there is none. */
static int
bad_query(struct api_call *c, const char *task, const char *stream,
    long long offset, long long file)
{
	const char *bad;

	if (task == NULL) {
		api_error(c, 400, "which task's log: give ?task=NAME");
		return -1;
	}
	if ((bad = ident_problem(task, strlen(task))) != NULL) {
		api_error(c, 400, "task \"%s\" is not an identifier (1 to %d "
		    "of A-Z a-z 0-9 . _ -): %s", task, BERTH_IDENT_MAX, bad);
		return -1;
	}
	if (stream != NULL && strcmp(stream, "stdout") != 0 && strcmp(stream,
	    "stderr") != 0) {
		api_error(c, 400, "stream is stdout or stderr, not \"%s\"",
		    stream);
		return -1;
	}
	if (offset < 0 || file < 0) {
		api_error(c, 400, "%s is a whole number, not \"%s\"", offset < 0 ?
		    "offset" : "file", api_param(c, offset < 0 ? "offset" :
		    "file"));
		return -1;
	}
	return 0;
}

static void
log_headers(struct evkeyvalq *h, const struct lfile *f, long long offset,
    long long len, bool current, bool lost, bool running)
{
	evhttp_add_header(h, "Content-Type", "text/plain");
	if (f != NULL)
		header_ll(h, "X-Berth-Log-File", (long long)f->id);
	header_ll(h, "X-Berth-Log-Offset", offset);
	header_ll(h, "X-Berth-Log-Next", offset + len);
	header_ll(h, "X-Berth-Log-Size", f != NULL ? f->size : 0);
	header_ll(h, "X-Berth-Log-Current", current);
	header_ll(h, "X-Berth-Log-Running", running);
	if (lost)
		evhttp_add_header(h, "X-Berth-Log-Lost", "1");
}

void
api_alloc_logs(struct api_call *c)
{
	const char *task = api_param(c, "task"), *stream = api_param(c,
	    "stream");
	struct evbuffer *out = evhttp_request_get_output_buffer(c->req);
	struct evkeyvalq *h = evhttp_request_get_output_headers(c->req);
	long long offset = parse_number(api_param(c, "offset")),
	    file = parse_number(api_param(c, "file"));
	static struct lfile f[API_LOG_FILES];
	struct alloc_log l;
	bool lost = false;
	char why[512];
	int n, k;

	if (bad_query(c, task, stream, offset, file) < 0)
		return;
	if (allocs_log(c->d->allocs, c->id, task, stream != NULL &&
	    strcmp(stream, "stderr") == 0, &l, why, sizeof(why)) < 0) {
		api_error(c, 404, "%s", why);
		return;
	}
	if ((n = open_files(l.path, f)) < 0) {
		api_error(c, 500, "cannot read the log of task %s: not a "
		    "regular file, or %s", task, strerror(errno));
		return;
	}
	/* The file asked for, else the oldest; a file read to its end: the
	 * next newer one, from its start. */
	for (k = n - 1; api_param(c, "file") != NULL && k >= 0 &&
	    f[k].id != (unsigned long long)file; k--)
		;
	if (k < 0 && n > 0) {
		lost = true;
		k = n - 1;
		offset = 0;
	}
	if (k >= 0 && offset > f[k].size)
		offset = 0;	/* truncated: a rotation that keeps one file */
	while (k > 0 && offset >= f[k].size) {
		k--;
		offset = 0;
	}
	if (k >= 0 && read_chunk(&f[k], offset, out) < 0) {
		evbuffer_drain(out, evbuffer_get_length(out));
		api_error(c, 500, "cannot read the log of task %s: %s", task,
		    strerror(errno));
	} else {
		log_headers(h, k >= 0 ? &f[k] : NULL, k >= 0 ? offset : 0,
		    (long long)evbuffer_get_length(out), k <= 0, lost,
		    l.running);
		if (evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD) {
			header_ll(h, "Content-Length",
			    (long long)evbuffer_get_length(out));
			evbuffer_drain(out, evbuffer_get_length(out));
		}
		evhttp_send_reply(c->req, 200, "OK", NULL);
	}
	while (n > 0)
		close(f[--n].fd);
}
