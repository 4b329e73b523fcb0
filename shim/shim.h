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
 *
 * Init mode, in a task's sandbox (shim_init.c):
 *
 *	berth-shim -I
 *	berth-shim		(no argument: how root's template runs it)
 *
 * berth-mounter's launcher starts it as the container's init (pid 1 of
 * the task's pid namespace), as the task's uid, with no capability and
 * no_new_privs, with two descriptors (crun --preserve-fds=2):
 * SHIM_DIR_FD, its status directory (not mounted in the container: the
 * task reaches it by no path; O_PATH will do), and SHIM_CHAN_FD, its end
 * of the channel to the supervisor (a SOCK_SEQPACKET socket). It makes
 * itself undumpable, so that the task, which shares its uid, can neither
 * ptrace it nor open its descriptors through /proc.
 *
 * Every datagram on the channel starts with a uint32_t, its enum
 * shim_msg; what follows is its body. The supervisor sends the command
 * (SHIM_MSG_ARG: the absolute path, then each argument, in order), the
 * environment (SHIM_MSG_ENV, one "K=V" each), the task's working
 * directory if not the shim's own (SHIM_MSG_DIR, an absolute path) and
 * then SHIM_MSG_RUN; the
 * shim answers SHIM_MSG_STARTED, and when the task ends, SHIM_MSG_EXIT,
 * after it wrote the status file:
 *
 *	run <run_id> exited <status>
 *	run <run_id> signaled <signal>
 *
 * SHIM_MSG_STOP signals every process of the task; after its grace the
 * shim kills them all. When the task's first process ends, whatever it
 * left is killed, and the shim exits: no process of a task outlives it
 * (the kernel would kill what is left of the pid namespace anyway).
 *
 * The channel may close (a supervisor that stops or dies): the task goes
 * on. A restarted supervisor connects to SHIM_CTL_SOCK in the status
 * directory; the shim serves only the uid that SHIM_MSG_RUN named, and
 * answers a connection with SHIM_MSG_STARTED (the new channel replaces
 * the old). A datagram is at most SHIM_MSG_MAX bytes: longer strings are
 * refused by the supervisor before it starts anything.
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

/* Init mode (see above). */
#define SHIM_DIR_FD		3
#define SHIM_CHAN_FD		4
#define SHIM_CTL_SOCK		"ctl.sock"
#define SHIM_MSG_MAX		65536
#define SHIM_MAX_ARGS		1024
#define SHIM_MAX_ENV		1024

enum shim_msg {
	SHIM_MSG_ARG = 1,	/* sv: the command, then each argument */
	SHIM_MSG_ENV,		/* sv: one "K=V" */
	SHIM_MSG_RUN,		/* sv: struct shim_run; start the task */
	SHIM_MSG_STOP,		/* sv: struct shim_stop */
	SHIM_MSG_STARTED,	/* shim: struct shim_started */
	SHIM_MSG_EXIT,		/* shim: struct shim_exit */
	SHIM_MSG_DIR,		/* sv: the task's working directory */
};

struct shim_run {
	uint32_t type;		/* SHIM_MSG_RUN */
	uint32_t sv_uid;	/* the only uid served on SHIM_CTL_SOCK */
	uint64_t run_id;	/* ties the status file to this run */
	int64_t max_bytes;	/* the "logs" block */
	int32_t max_files;
	uint32_t flags;		/* SHIM_RUN_* */
};

/*
 * A CSI plugin: its umask is 007, not 022, so that the supervisor, the
 * group of its socket dir (setgid), can connect to the socket it makes.
 */
#define SHIM_RUN_PLUGIN		1

struct shim_stop {
	uint32_t type;		/* SHIM_MSG_STOP */
	int32_t sig;		/* to every process of the task, at once */
	uint32_t grace_ms;	/* then SIGKILL to what is left */
	int32_t pad;
};

struct shim_started {
	uint32_t type;		/* SHIM_MSG_STARTED */
	int32_t err;		/* 0: running; else an errno */
	int32_t stage;		/* enum shim_stage */
	int32_t task_pid;	/* in the task's pid namespace */
	uint64_t run_id;
};

struct shim_exit {
	uint32_t type;		/* SHIM_MSG_EXIT */
	int32_t signaled;	/* 1: killed by signal code */
	int32_t code;		/* exit status or signal */
	int32_t pad;
	uint64_t run_id;
};

/* shim_init.c: berth-shim -I. */
int shim_init_main(void);

#endif
