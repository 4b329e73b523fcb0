/*
 * shim.h: what berth-shim and the exec driver
 * (supervisor/drivers/taskdrv_exec.c) agree on: the command line, the
 * start report, and the status file.
 *
 *	berth-shim -d DIR [-s MAX_BYTES] [-n MAX_FILES] -- COMMAND [ARG...]
 *	berth-shim -V
 *
 * -V exits 0 at once: the exec driver's fingerprint runs it to prove that
 * a process starts.
 * The shim's environment is the task's. Descriptor 3 is a pipe on which
 * the shim writes one struct shim_report and closes it: err 0 means the
 * task runs, with the pids and start times given; else err is an errno
 * and stage says what failed (the exec driver writes the same report
 * itself when berth-shim cannot be executed at all).
 *
 * When the task ends, the shim writes one line to DIR/exit-status,
 * atomically (a temporary file, fsync, rename, fsync of DIR):
 *
 *	pid <task pid> start <task start time> exited <status>
 *	pid <task pid> start <task start time> signaled <signal>
 *
 * The pid and start time tie the line to one run of the task, so that a
 * file left by an earlier run is never taken for this one's.
 */
#ifndef BERTH_SHIM_H
#define BERTH_SHIM_H

#include <stdint.h>

#define SHIM_NAME		"berth-shim"
#define SHIM_REPORT_FD		3
#define SHIM_STATUS_FILE	"exit-status"
#define SHIM_STDOUT_LOG		"stdout.log"
#define SHIM_STDERR_LOG		"stderr.log"

/* Log rotation: the size of one file, and how many files a stream keeps
 * (the current one included). The alloc's "logs" block sets both. */
#define SHIM_DEFAULT_MAX_BYTES	(10LL * 1024 * 1024)
#define SHIM_DEFAULT_MAX_FILES	5
#define SHIM_MAX_FILES		100

enum shim_stage {
	SHIM_STAGE_NONE = 0,
	SHIM_STAGE_SHIM,	/* berth-shim itself could not be executed */
	SHIM_STAGE_SETUP,	/* its directory, pipes, fork, log files */
	SHIM_STAGE_EXEC,	/* the task's command could not be executed */
};

struct shim_report {
	int32_t err;		/* 0: running; else an errno */
	int32_t stage;		/* enum shim_stage */
	int32_t shim_pid, task_pid;
	uint64_t shim_start, task_start;	/* /proc/<pid>/stat field 22 */
};

#endif
