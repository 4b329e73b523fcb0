/*
 * alloc_logs.c: tasks' logs, read where they are written while their
 * allocation runs, and kept log_retention after it stops (see
 * alloc_logs.h).
 *
 * Owns: logs/ beneath the data directory, the copy into it at clean-up
 * and its expiry, checked at start and on a timer; a privileged plugin's
 * live logs in logs/+live/ (which its writer, berth-shim -L, makes as our
 * user), moved into logs/<alloc>/ at clean-up. Must not: follow a
 * symlink, or read a file that is not a regular one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "alloc_int.h"
#include "alloc_logs.h"
#include "ident.h"
#include "xalloc.h"

#define LOGS_COPY_MAX	16		/* files of one stream copied */
#define LOGS_SWEEP_MAX_MS (60 * 1000)

static const struct alloc_task *
find_task(const struct alloc *doc, const char *task)
{
	size_t i;

	for (i = 0; doc != NULL && i < doc->ntasks; i++)
		if (strcmp(doc->tasks[i].name, task) == 0)
			return &doc->tasks[i];
	return NULL;
}

int
allocs_log(struct allocs *am, const char *alloc, const char *task,
    bool err, struct alloc_log *l, char *why, size_t n)
{
	const char *name = err ? ALLOC_LOG_STDERR : ALLOC_LOG_STDOUT;
	const struct alloc_task *t;
	struct arun *ar;
	struct stat st;

	memset(l, 0, sizeof(*l));
	if ((ar = find_run(am, alloc)) != NULL) {
		if ((t = find_task(ar->doc, task)) == NULL) {
			snprintf(why, n, "allocation %s has no task %s", alloc,
			    task);
			return -ENOENT;
		}
		l->running = ar->end == AEND_NONE && !arun_stopping(ar);
		if (t->driver == ALLOC_DRIVER_PRIVILEGED)
			snprintf(l->path, sizeof(l->path), "%s/%s/%s/%s/%s",
			    am->d.data_dir, LAYOUT_PLUGIN_LOGS_DIR, alloc,
			    t->plugin, name);
		else
			snprintf(l->path, sizeof(l->path), "%s/%s/%s/%s/%s",
			    am->d.data_dir, LAYOUT_SHIM_DIR, alloc, task,
			    name);
		return 0;
	}
	snprintf(l->path, sizeof(l->path), "%s/%s/%s/%s", am->d.data_dir,
	    LAYOUT_LOGS_DIR, alloc, task);
	if (stat(l->path, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, n, "no logs of task %s of allocation %s: it does "
		    "not run, and none stopped within log_retention (%lld s)",
		    task, alloc, (long long)am->d.log_retention_ms / 1000);
		return -ENOENT;
	}
	snprintf(l->path + strlen(l->path), sizeof(l->path) -
	    strlen(l->path), "/%s", name);
	return 0;
}

int
logs_plugin_limits(const char *data_dir, const char *alloc,
    const char *definition, long long max_bytes, int max_files)
{
	char path[BERTH_PATH_BUF], *p, line[64];
	int fd, len, r = 0;

	snprintf(path, sizeof(path), "%s/%s/%s/%s", data_dir,
	    LAYOUT_PLUGIN_LOGS_DIR, alloc, definition);
	for (p = path + strlen(data_dir) + 1; (p = strchr(p, '/')) != NULL;
	    *p++ = '/') {
		*p = '\0';
		if (mkdir(path, 0750) < 0 && errno != EEXIST)
			return -errno;
	}
	if (mkdir(path, 0750) < 0 && errno != EEXIST)
		return -errno;
	len = snprintf(line, sizeof(line), "%lld %d\n", max_bytes, max_files);
	strncat(path, "/" ALLOC_LOG_LIMITS, sizeof(path) - strlen(path) - 1);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC, 0640)) < 0)
		return -errno;
	if (write(fd, line, (size_t)len) != len)
		r = -EIO;
	close(fd);
	return r;
}

/* from_dir/from into to_dir/to, a regular file only; 0 or -1. */
static int
copy_file(int from_dir, const char *from, int to_dir, const char *to)
{
	struct stat st;
	char buf[65536], id[32];
	ssize_t r;
	int in, out, rc = 0;

	if ((in = openat(from_dir, from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0)
		return -1;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || (out =
	    openat(to_dir, to, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0640)) < 0) {
		close(in);
		return -1;
	}
	while ((r = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)r) != r) {
			rc = -1;
			break;
		}
	/* Best effort: without it, a follower starts over (api_logs.c). */
	snprintf(id, sizeof(id), "%llu", (unsigned long long)st.st_ino);
	(void)fsetxattr(out, ALLOC_LOG_ID_XATTR, id, strlen(id), 0);
	if (r < 0 || close(out) < 0)
		rc = -1;
	close(in);
	return rc;
}

/* A directory beneath at, made when missing; its descriptor or -1. */
static int
subdir(int at, const char *name)
{
	if (mkdirat(at, name, 0750) < 0 && errno != EEXIST)
		return -1;
	return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/*
 * A stream's files in from (prefix, prefix.1, ...) into to as base,
 * base.1, ...; how many were copied.
 */
static int
copy_stream(int from, const char *prefix, int to, const char *base)
{
	char f[BERTH_IDENT_MAX + 32], t[64];
	int i, copied = 0;

	for (i = 0; i < LOGS_COPY_MAX; i++) {
		snprintf(f, sizeof(f), i ? "%s.%d" : "%s", prefix, i);
		snprintf(t, sizeof(t), i ? "%s.%d" : "%s", base, i);
		if (copy_file(from, f, to, t) < 0)
			break;
		copied++;
	}
	return copied;
}

/* Every exec task's files of shim/<alloc>/ into dst; how many. */
static int
keep_shim(struct allocs *am, const char *alloc, int dst)
{
	char path[BERTH_PATH_BUF];
	struct dirent *de;
	int copied = 0, t, fd;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s/%s", am->d.data_dir,
	    LAYOUT_SHIM_DIR, alloc);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (ident_problem(de->d_name, strlen(de->d_name)) != NULL ||
		    (fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) < 0)
			continue;
		if ((t = subdir(dst, de->d_name)) >= 0) {
			copied += copy_stream(fd, ALLOC_LOG_STDOUT, t,
			    ALLOC_LOG_STDOUT);
			copied += copy_stream(fd, ALLOC_LOG_STDERR, t,
			    ALLOC_LOG_STDERR);
			close(t);
		}
		close(fd);
	}
	closedir(d);
	return copied;
}

/*
 * A privileged plugin's logs, logs/+live/<alloc>/<definition>/, moved
 * whole (its files keep their identity, for a follower) to the directory
 * of the task that ran it in dst (its definition's name when the
 * allocation is not known: after a restart), replacing what an earlier
 * run kept there; with no dst, removed. How many were moved.
 */
static int
keep_plugin(struct allocs *am, const char *alloc, int dst)
{
	const struct arun *ar = find_run(am, alloc);
	const char *task;
	char path[BERTH_PATH_BUF];
	struct dirent *de;
	int moved = 0, live;
	size_t i;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", am->d.data_dir,
	    LAYOUT_PLUGIN_LOGS_DIR);
	if ((live = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s/%s", am->d.data_dir,
	    LAYOUT_PLUGIN_LOGS_DIR, alloc);
	for (d = dst >= 0 ? opendir(path) : NULL; d != NULL &&
	    (de = readdir(d)) != NULL;) {
		if (ident_problem(de->d_name, strlen(de->d_name)) != NULL)
			continue;
		task = de->d_name;
		for (i = 0; ar != NULL && i < ar->doc->ntasks; i++)
			if (ar->doc->tasks[i].driver ==
			    ALLOC_DRIVER_PRIVILEGED && strcmp(ar->doc->tasks[i].
			    plugin, de->d_name) == 0)
				task = ar->doc->tasks[i].name;
		files_remove_tree(dst, task, 0);
		if (renameat(dirfd(d), de->d_name, dst, task) == 0)
			moved++;
	}
	if (d != NULL)
		closedir(d);
	files_remove_tree(live, alloc, 0);
	close(live);
	return moved;
}

void
logs_keep(struct allocs *am, const char *alloc)
{
	int logs, dst, copied;

	if (ident_problem(alloc, strlen(alloc)) != NULL)
		return;
	if (am->d.log_retention_ms <= 0) {
		keep_plugin(am, alloc, -1);
		return;
	}
	if ((logs = open(am->logs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0 || (dst = subdir(logs, alloc)) < 0) {
		log_warn("alloc %s: its tasks' logs are not kept: %s", alloc,
		    am->logs_dir);
		if (logs >= 0)
			close(logs);
		return;
	}
	copied = keep_shim(am, alloc, dst) + keep_plugin(am, alloc, dst);
	/* Its mtime says when it stopped, for logs_sweep after a restart. */
	if (copied > 0 && futimens(dst, NULL) < 0)
		log_warn("alloc %s: setting the time of its kept logs", alloc);
	close(dst);
	if (copied == 0)
		(void)unlinkat(logs, alloc, AT_REMOVEDIR);	/* if empty */
	close(logs);
}

/* The logs kept longer than log_retention go. */
static void
logs_sweep(struct allocs *am)
{
	struct timespec now;
	struct dirent *de;
	struct stat st;
	int64_t age_ms;
	DIR *d;

	if ((d = opendir(am->logs_dir)) == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	while ((de = readdir(d)) != NULL) {
		if (ident_problem(de->d_name, strlen(de->d_name)) != NULL ||
		    fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		age_ms = (int64_t)(now.tv_sec - st.st_mtim.tv_sec) * 1000 +
		    (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
		if (age_ms >= am->d.log_retention_ms)
			files_remove_tree(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

static void
on_sweep(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	logs_sweep(arg);
}

void
logs_start(struct allocs *am)
{
	int64_t every = am->d.log_retention_ms / 2;
	struct timeval tv;

	snprintf(am->logs_dir, sizeof(am->logs_dir), "%s/%s", am->d.data_dir,
	    LAYOUT_LOGS_DIR);
	if (every > LOGS_SWEEP_MAX_MS || every <= 0)
		every = LOGS_SWEEP_MAX_MS;
	if (every < 100)
		every = 100;
	logs_sweep(am);
	am->logs_timer = event_new(am->d.base, -1, EV_PERSIST, on_sweep, am);
	if (am->logs_timer == NULL)
		oom("event_new");
	tv.tv_sec = every / 1000;
	tv.tv_usec = (every % 1000) * 1000;
	event_add(am->logs_timer, &tv);
}

void
logs_free(struct allocs *am)
{
	if (am->logs_timer != NULL)
		event_free(am->logs_timer);
	am->logs_timer = NULL;
}
