/*
 * shim_log.h: a task's stdout and stderr kept in rotated files in the
 * shim's status directory (shim_log.c), for all of berth-shim's modes.
 *
 * Log mode, for a privileged plugin (berth-mounter's launcher starts it
 * as berth's user, with no capability):
 *
 *	berth-shim -L -d DIR [-s MAX_BYTES] [-n MAX_FILES]
 *
 * DIR, relative to the working directory, is made if missing; the
 * plugin's stdout is read on SHIM_LOG_OUT_FD and its stderr on
 * SHIM_LOG_ERR_FD, into DIR's stdout.log and stderr.log, rotated as a
 * task's: by -s and -n, or by DIR's file "limits" ("MAX_BYTES MAX_FILES",
 * which the supervisor writes from the task's "logs" block) if it holds
 * sound ones. The first process exits 0 once DIR is open (1 if it cannot
 * be); a second one, in a session of its own, copies until both pipes
 * end, that is until the plugin and whatever inherited its output have
 * ended or closed them, and exits.
 */
#ifndef BERTH_SHIM_LOG_H
#define BERTH_SHIM_LOG_H

#include <stdbool.h>
#include <stddef.h>

struct stream {
	const char *name;	/* the current file; older ones are name.N */
	int in;			/* the task's pipe; -1 after its end */
	int fd;			/* the current file; -1 if it cannot be opened */
	long long size;
	bool told;		/* a lost write was noted */
};

/* The status directory, and the "logs" block's limits. */
extern int dfd;
extern long long max_bytes;
extern int max_files;
/* The task's two streams; err is where a lost write is told. */
extern struct stream out, err;

/* Open (or truncate) s's current file; 0 or -errno. */
int log_open(struct stream *s, bool truncate);
/* Note once, in err, that s's output is being dropped. */
void log_lost(struct stream *s, int e);
/* Read what s's pipe holds (one read, or all of it when draining) into
 * its files. */
void log_pump(struct stream *s, bool drain);

#define SHIM_LOG_OUT_FD 3
#define SHIM_LOG_ERR_FD 4
#define SHIM_LOG_LIMITS "limits"
/* Log mode (above); what main() returns. */
int shim_log_main(const char *dir);

#endif
