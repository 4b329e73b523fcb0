/*
 * alloc_logs.h: where a task's stdout and stderr are read (alloc_logs.c):
 * while its allocation runs, where they are written (berth-shim's
 * shim/<alloc>/<task>/, or for a privileged plugin logs/+live/<alloc>/
 * <definition>/, where berth-shim -L, which berth-mounter's launcher
 * starts as our user, writes them); once it has stopped, in
 * logs/<alloc>/<task>/, kept log_retention after the stop.
 *
 * Tasks' files are copied there when the allocation is cleaned up, before
 * the mounter removes them; a privileged plugin's are moved there.
 * logs/<alloc>'s mtime is when, so that the time left survives a restart
 * of the supervisor. Must not: write anything beneath the data directory
 * but logs/ (the supervisor's).
 */
#ifndef BERTH_ALLOC_LOGS_H
#define BERTH_ALLOC_LOGS_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"

struct allocs;

/* logs/ beneath the data directory: the supervisor's user's, 0750. */
#define LAYOUT_LOGS_DIR "logs"
/* A stream's current file; berth-shim rotates to name.1, name.2, ... */
#define ALLOC_LOG_STDOUT "stdout.log"
#define ALLOC_LOG_STDERR "stderr.log"

struct alloc_log {
	char path[BERTH_PATH_BUF];	/* the current file (may not exist yet) */
	bool running;			/* the allocation runs: more may come */
};

/*
 * A kept copy's identity: the inode of the file it was copied from, in
 * decimal, so that a reader who named that file finds its copy.
 */
#define ALLOC_LOG_ID_XATTR "user.berth.log-file"
/* A privileged plugin's log limits, for berth-shim -L (SHIM_LOG_LIMITS). */
#define ALLOC_LOG_LIMITS "limits"

/*
 * Before a privileged plugin starts: its log directory, and in it the
 * limits of the task's "logs" block. 0, or -errno (its writer then keeps
 * its defaults).
 */
int logs_plugin_limits(const char *data_dir, const char *alloc,
    const char *definition, long long max_bytes, int max_files);

/*
 * The log of task of alloc: stderr when err, else stdout. 0, or -ENOENT
 * with why set: no such task runs, nor were its logs kept.
 */
int allocs_log(struct allocs *am, const char *alloc, const char *task,
    bool err, struct alloc_log *l, char *why, size_t n);

#endif
