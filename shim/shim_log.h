/*
 * shim_log.h: a task's stdout and stderr kept in rotated files in the
 * shim's status directory (shim_log.c), for both of berth-shim's modes.
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

#endif
