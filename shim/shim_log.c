/*
 * shim_log.c: a task's output in files that the shim rotates (see
 * shim_log.h), and log mode (-L), the same for a privileged plugin.
 *
 * No file grows past max_bytes; a stream keeps max_files of them. Must
 * not: block the task (a full disk or a FIFO planted in place of a file
 * drops output, and says so once), or write outside the status
 * directory dfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "shim.h"
#include "shim_log.h"

int dfd = -1;
long long max_bytes = SHIM_DEFAULT_MAX_BYTES;
int max_files = SHIM_DEFAULT_MAX_FILES;
struct stream out = { SHIM_STDOUT_LOG, -1, -1, 0, false };
struct stream err = { SHIM_STDERR_LOG, -1, -1, 0, false };

/* O_NONBLOCK: a FIFO planted by the task fails instead of blocking us. */
int
log_open(struct stream *s, bool truncate)
{
	int flags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC | (truncate ? O_TRUNC : 0);
	struct stat st;

	/*
	 * A file this uid cannot open is an earlier run's under another
	 * uid (the same alloc and task, stopped and started again with
	 * another task id): the directory is ours now, the file goes.
	 */
	if ((s->fd = openat(dfd, s->name, flags, 0640)) < 0 &&
	    errno == EACCES && unlinkat(dfd, s->name, 0) == 0)
		s->fd = openat(dfd, s->name, flags, 0640);
	if (s->fd < 0)
		return -errno;
	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(s->fd);
		s->fd = -1;
		return -EINVAL;
	}
	s->size = st.st_size;
	return 0;
}

static void put(struct stream *s, const char *buf, size_t n);

void
log_lost(struct stream *s, int e)
{
	char note[160];
	int n;

	if (s->told)
		return;
	s->told = true;
	n = snprintf(note, sizeof(note), "berth-shim: cannot write %s: %s; "
	    "output is dropped until it can\n", s->name, strerror(e));
	if (s != &err && n > 0)
		put(&err, note, (size_t)n);
}

static void
file_name(char *buf, size_t n, const char *name, int i)
{
	if (i == 0)
		snprintf(buf, n, "%s", name);
	else
		snprintf(buf, n, "%s.%d", name, i);
}

/* name.N-2 -> name.N-1, ..., name -> name.1, and a new, empty name. */
static void
rotate(struct stream *s)
{
	char from[64], to[64];
	int i;

	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	for (i = max_files - 1; i >= 1; i--) {
		file_name(from, sizeof(from), s->name, i - 1);
		file_name(to, sizeof(to), s->name, i);
		if (renameat(dfd, from, dfd, to) < 0 && errno != ENOENT)
			log_lost(s, errno);
	}
	if (log_open(s, true) < 0)
		log_lost(s, errno);
}

/* No file grows past max_bytes: a write that would is split. */
static void
put(struct stream *s, const char *buf, size_t n)
{
	long long room;
	ssize_t w;

	while (n > 0) {
		if (s->fd >= 0 && s->size >= max_bytes)
			rotate(s);
		if (s->fd < 0 && log_open(s, false) < 0) {
			log_lost(s, errno);
			return;
		}
		room = max_bytes - s->size;
		if ((w = write(s->fd, buf, (long long)n < room ? n :
		    (size_t)room)) < 0) {
			if (errno == EINTR)
				continue;
			log_lost(s, errno);
			return;
		}
		s->told = false;
		s->size += w;
		buf += w;
		n -= (size_t)w;
	}
}

/* One read (all that is there when draining): the task never waits. */
void
log_pump(struct stream *s, bool drain)
{
	char buf[65536];
	ssize_t n;

	while (s->in >= 0) {
		if ((n = read(s->in, buf, sizeof(buf))) > 0) {
			put(s, buf, (size_t)n);
			if (!drain)
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close(s->in);
		s->in = -1;
	}
}

/* Each component of the relative path dir, made when missing. */
static int
mkdirs(const char *dir)
{
	char buf[4096], *p;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -1;
	for (p = buf; (p = strchr(p + 1, '/')) != NULL; *p = '/') {
		*p = '\0';
		if (mkdir(buf, 0750) < 0 && errno != EEXIST)
			return -1;
	}
	return mkdir(buf, 0750) < 0 && errno != EEXIST ? -1 : 0;
}

/* DIR's "limits" file, if it holds sound ones, overrides -s and -n. */
static void
read_limits(void)
{
	char buf[64];
	long long b;
	ssize_t n;
	int fd, f;

	if ((fd = openat(dfd, SHIM_LOG_LIMITS, O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC)) < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "%lld %d", &b, &f) == 2 && b >= 1 && f >= 1 &&
	    f <= SHIM_MAX_FILES) {
		max_bytes = b;
		max_files = f;
	}
}

int
shim_log_main(const char *dir)
{
	static const int quiet[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM,
		SIGPIPE };
	struct pollfd fds[2];
	size_t i;
	pid_t pid;
	int x;

	if (dir == NULL || dir[0] == '/' || mkdirs(dir) < 0 || (dfd =
	    open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		fprintf(stderr, "berth-shim: log directory %s: %s\n", dir ?
		    dir : "(none)", strerror(errno));
		return 1;
	}
	read_limits();
	/* Its life is the plugin's: only the pipes' end ends it. */
	for (i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN);
	/* The launcher reaps this first process at once. */
	if ((pid = fork()) < 0)
		return 1;
	if (pid > 0)
		_exit(0);
	(void)setsid();
	out.in = SHIM_LOG_OUT_FD;
	err.in = SHIM_LOG_ERR_FD;
	if ((x = log_open(&out, false)) < 0)
		log_lost(&out, -x);
	if ((x = log_open(&err, false)) < 0)
		log_lost(&err, -x);
	if (fcntl(out.in, F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(err.in, F_SETFL, O_NONBLOCK) < 0)
		log_lost(&out, errno);
	while (out.in >= 0 || err.in >= 0) {
		/* poll() skips a negative descriptor: a stream that ended. */
		fds[0] = (struct pollfd){ out.in, POLLIN, 0 };
		fds[1] = (struct pollfd){ err.in, POLLIN, 0 };
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (fds[0].revents != 0)
			log_pump(&out, false);
		if (fds[1].revents != 0)
			log_pump(&err, false);
	}
	return 0;
}
