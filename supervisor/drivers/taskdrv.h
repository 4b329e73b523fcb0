/*
 * taskdrv.h: the task driver that runs plugin tasks (issue 5's part of
 * the driver manager): "exec" tasks are processes the supervisor starts
 * as its own user through berth-shim; "privileged" tasks are plugins
 * defined by root in plugins.d, which berth-mounter starts and watches
 * for us.
 *
 * A task survives a restart of the supervisor. An exec task runs under
 * its shim, which left the supervisor's process tree, keeps the task's
 * logs and writes its exit status to a file in the task directory when
 * it ends; the supervisor watches the shim through a pidfd and reads the
 * status file when the shim is gone, even a supervisor that started
 * after the task ended. Both are adopted again by pid and start time (a
 * reused pid never matches).
 *
 * The driver is in four files: taskdrv.c holds what both kinds share
 * (a task's states and its callbacks), taskdrv_exec.c the exec driver,
 * taskdrv_sandbox.c its sandboxed tasks (berth-mounter starts crun, the
 * shim is the sandbox's init, and the supervisor drives it over its
 * channel), taskdrv_priv.c the privileged one.
 *
 * Must not: know about allocations, plugins or the registry. The caller
 * persists the handle (taskproc_handle()) and decides about restarts.
 */
#ifndef BERTH_TASKDRV_H
#define BERTH_TASKDRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "driver.pb-c.h"

struct cgroup_mounts;
struct event_base;
struct mclient;
struct taskdrv;
struct taskproc;

enum taskdrv_kind {
	TASKDRV_EXEC = 1,
	TASKDRV_PRIVILEGED,
};

struct task_spec {
	enum taskdrv_kind kind;
	const char *alloc, *task;
	/* exec */
	const char *command;
	char *const *args;		/* without argv[0] */
	size_t nargs;
	char *const *env;		/* "KEY=value" */
	size_t nenv;
	const char *dir;		/* absolute working directory */
	/* privileged: the definition's name; privileged, and exec with an
	 * endpoint: the plugin it serves */
	const char *definition, *plugin_type, *plugin_id;
	/* "unix:///..." for CSI_ENDPOINT (exec; the mounter sets its own) */
	const char *endpoint;
	/* exec: log rotation, 0 for the shim's defaults */
	int64_t log_max_bytes;
	int log_max_files;
	/*
	 * exec, sandboxed: started by berth-mounter under crun, the shim
	 * its init, as uid and gid (never 0). The shim sends SIGKILL to
	 * what is left kill_timeout_ms after a stop.
	 */
	bool sandbox;
	uint32_t uid, gid;
	const char *user;		/* allow-listed name, or NULL */
	bool network_none;
	uint64_t memory_bytes, memory_max_bytes;
	uint32_t cpu_shares, pids_max;
	int64_t kill_timeout_ms;
};

struct task_exit {
	bool status_known, signaled;
	int code;			/* exit status or signal number */
	const char *unknown;		/* why the status is not known */
	bool oom_killed;		/* the kernel's OOM killer, in its cgroup */
};

/*
 * err 0: running (pid and start time are known); else why says. An
 * adoption that finds the task ended says how, as task_exit_describe()
 * does ("exited with status 3").
 */
typedef void (*taskproc_started_cb)(struct taskproc *tp, int err,
    const char *why, void *arg);
typedef void (*taskproc_exited_cb)(struct taskproc *tp,
    const struct task_exit *ex, void *arg);

/*
 * What the driver has to say about a task beyond its start and exit
 * (its shim lost, say), for the driver manager to hand to the task's
 * handler.
 */
typedef void (*taskdrv_event_cb)(void *arg, const char *driver,
    const char *alloc, const char *task, const char *type,
    const char *message);

/* What the driver works with; strings are copied. */
struct taskdrv_deps {
	struct event_base *base;
	struct mclient *mounter;	/* privileged tasks go through it */
	const char *data_dir;		/* cfg.data_dir: the task dirs */
	const char *shim;		/* NULL: berth-shim beside us */
	/* Sandboxed tasks' cgroups, <cgroup_parent>/<alloc>@<task>: read
	 * for their OOM kills; the caller's, may be filled in later. */
	const struct cgroup_mounts *cgroups;
	const char *cgroup_parent;
	taskdrv_event_cb event;		/* may be NULL, or set later */
	void *ctx;			/* event's arg */
};

/* Never NULL: out of memory ends the process. */
struct taskdrv *taskdrv_new(const struct taskdrv_deps *d);
/* Forgets every task; the processes keep running. */
void taskdrv_free(struct taskdrv *drv);

/*
 * Start a task, or adopt one by its handle. The started callback always
 * runs once, from the event loop; then, if it started, the exited
 * callback at most once. Never NULL.
 */
struct taskproc *taskproc_start(struct taskdrv *drv,
    const struct task_spec *spec, taskproc_started_cb started,
    taskproc_exited_cb exited, void *arg);
/* h may be NULL (nothing to adopt: it fails). */
struct taskproc *taskproc_adopt(struct taskdrv *drv, enum taskdrv_kind kind,
    const char *alloc, const char *task, const Berth__TaskHandle *h,
    taskproc_started_cb started, taskproc_exited_cb exited, void *arg);
/* Set in h what identifies the running task: pids and start times. */
void taskproc_handle(const struct taskproc *tp, Berth__TaskHandle *h);
/* 0, or -errno; privileged tasks are signalled through the mounter. */
int taskproc_signal(struct taskproc *tp, int sig);
pid_t taskproc_pid(const struct taskproc *tp);
uint64_t taskproc_start_time(const struct taskproc *tp);
/* Forget the task (no callback runs after this); it keeps running. */
void taskproc_free(struct taskproc *tp);

/*
 * After a restart, before any task starts: every sandbox whose shim still
 * answers but that keep() does not name (a task handle does: it is
 * adopted, or stopped as stale) is killed. Its start never reached the
 * registry (a supervisor died in between), so no adoption would find it,
 * and nothing of a task may run unseen. ended() is told, from the event
 * loop, once each has ended, with its task's pid and how it ended (and
 * so is one found in the way of a start: that start waits for its end).
 * How many were found.
 */
typedef bool (*taskdrv_keep_cb)(void *arg, const char *alloc,
    const char *task);
typedef void (*taskdrv_unrec_cb)(void *arg, const char *alloc,
    const char *task, pid_t pid, const struct task_exit *ex);
int taskdrv_end_unrecorded(struct taskdrv *drv, taskdrv_keep_cb keep,
    taskdrv_unrec_cb ended, void *arg);

/* A PluginExited notice from the mounter: true if it was one. */
bool taskdrv_mounter_notice(struct taskdrv *drv, const void *envelope);
/* "exited with status 3", "was killed by signal 9 (SIGKILL)", ... */
void task_exit_describe(const struct task_exit *ex, char *buf, size_t n);

/* Replace the deps' event callback (the driver manager comes later). */
void taskdrv_on_event(struct taskdrv *drv, taskdrv_event_cb cb, void *arg);
/* berth-shim's path: the deps', else next to berth-supervisor. */
const char *taskdrv_shim_path(const struct taskdrv *drv);

#endif
