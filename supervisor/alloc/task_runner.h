/*
 * task_runner.h: one task of an allocation, from its directory to its
 * last exit: prepares its directory (and a plugin's socket directory)
 * through the mounter, starts or adopts it through the task driver,
 * restarts it as its restart policy says when it ends (or ends it for
 * good, complete or failed), persists its handle in the
 * registry so that a restarted supervisor adopts it instead of starting
 * it twice, runs its plugin supervisor when it has a csi_plugin block,
 * and records its task events.
 *
 * Must not: decide which allocations run (alloc_runner.c does), or stop
 * a task when the supervisor itself stops (tasks outlive it).
 */
#ifndef BERTH_TASK_RUNNER_H
#define BERTH_TASK_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include <event2/event.h>

#include "alloc.h"
#include "driver.pb-c.h"
#include "plugin_supervisor.h"
#include "taskdrv.h"

struct cgroup_usage;
struct cgroup_mounts;
struct drivermgr;
struct events;
struct mclient;
struct regclient;
struct trun;

/*
 * What a task runner asks of the task driver: taskdrv.c's functions in
 * the supervisor (trun_taskdrv_ops, ctx the struct taskdrv), fakes in a
 * test. start and adopt never return NULL.
 */
struct trun_driver_ops {
	struct taskproc *(*start)(void *ctx, const struct task_spec *spec,
	    taskproc_started_cb started, taskproc_exited_cb exited,
	    void *arg);
	struct taskproc *(*adopt)(void *ctx, enum taskdrv_kind kind,
	    const char *alloc, const char *task, const Berth__TaskHandle *h,
	    taskproc_started_cb started, taskproc_exited_cb exited,
	    void *arg);
	void (*handle)(const struct taskproc *tp, Berth__TaskHandle *h);
	int (*signal)(struct taskproc *tp, int sig);
	pid_t (*pid)(const struct taskproc *tp);
	void (*free)(struct taskproc *tp);
	/* After a restart: sandboxes no handle names (NULL: none can be). */
	int (*end_unrecorded)(void *ctx, taskdrv_keep_cb keep,
	    taskdrv_unrec_cb ended, void *arg);
};
extern const struct trun_driver_ops trun_taskdrv_ops;

/* A plugin task's plugin supervisor: NULL when it cannot be made. */
typedef struct plugsup *(*trun_plugsup_fn)(void *ctx,
    const struct plugsup_conf *conf, const struct plugsup_ops *ops,
    void *arg);

/* What every task runner uses; owned by the caller, outliving them. */
struct trun_deps {
	struct event_base *base;
	struct regclient *registry;	/* the task handles it keeps */
	struct mclient *mounter;	/* its directories */
	struct events *events;		/* its task events */
	struct drivermgr *drivers;	/* its driver's events */
	const struct trun_driver_ops *driver;
	void *driver_ctx;
	trun_plugsup_fn plugsup_new;
	void *plugsup_ctx;
	const char *data_dir;
	int64_t heartbeat_ms;		/* plugin_heartbeat_ms */
	uid_t uid;			/* an exec task's user and group */
	gid_t gid;
	/* Sandboxed tasks' cgroups, read for trun_usage(); may be NULL. */
	const struct cgroup_mounts *cgroups;
	const char *cgroup_parent;
	/* A task ended for good (NULL: not told), with the runner's arg. */
	void (*ended)(struct trun *tr, void *arg);
};

/*
 * A set-up that failed (berth's step, not the task's) is tried again
 * outside the restart policy: from 1 s doubling to 30 s; reset after 30 s
 * of running.
 */
#define TRUN_RESTART_FIRST_MS 1000
#define TRUN_RESTART_MAX_MS 30000
#define TRUN_EVENTS 16

struct task_event {
	time_t at;
	char type[32];
	char *message;
};

typedef void (*trun_stopped_cb)(struct trun *tr, void *arg);

/*
 * The deps, alloc and task must outlive the runner. adopt: the handle
 * the registry kept for this task (NULL: none), copied. NULL when its
 * plugin's socket path does not fit.
 */
struct trun *trun_new(const struct trun_deps *d, const struct alloc *a,
    const struct alloc_task *t, const Berth__TaskHandle *adopt,
    trun_stopped_cb stopped, void *arg);
void trun_run(struct trun *tr);
/*
 * Adopt the task from the handle it was made with, if it has one, and
 * nothing else: one that ended meanwhile (a reboot) waits, pending, for
 * trun_run(), so that it starts anew only once its volumes are in place.
 */
void trun_adopt(struct trun *tr);
/* Deregister, stop the task (TERM, then KILL after kill_timeout), forget
 * its handle; then the stopped callback runs. */
void trun_stop(struct trun *tr);
/* A running task stopped (TERM, then KILL) and restarted as its restart
 * policy says, with an event saying why; berth asked, so it counts. */
void trun_restart(struct trun *tr, const char *why);
/* Forget the runner; the task keeps running (the supervisor stops). */
void trun_free(struct trun *tr);
/* A task that ended for good: its record in the registry goes (its alloc
 * is stopped); no stopped callback. */
void trun_forget(struct trun *tr);
/* Its alloc's task uid and gid (registry's AllocateIds): an exec task
 * runs sandboxed as it, unless it names an allow-listed user. */
void trun_set_id(struct trun *tr, uint32_t id);
/* The version of the alloc's file, recorded with an end for good. */
void trun_set_version(struct trun *tr, const char *version);

const char *trun_name(const struct trun *tr);
bool trun_dead(const struct trun *tr);
pid_t trun_pid(const struct trun *tr);
/* "pending", "preparing", "starting", "running", "restarting",
 * "stopping", "dead", or once ended for good "complete" or "failed". */
const char *trun_state(const struct trun *tr);
/* Ended for good: its restart policy starts it no more. */
bool trun_ended(const struct trun *tr);
bool trun_failed(const struct trun *tr);
/* Once ended: how it ended last and the policy's word; else NULL. */
const char *trun_end_reason(const struct trun *tr);
/* Its last exit, if it ever exited: a signal, or an exit status. */
bool trun_last_exit(const struct trun *tr, bool *signaled, int *code);
uint32_t trun_restarts(const struct trun *tr);
/* A running sandboxed task's use of CPU and memory, from its cgroup:
 * false when there is none to read. */
bool trun_usage(const struct trun *tr, struct cgroup_usage *u);
/* Why it could not be started, while it waits to try again (when, wall
 * clock ms, in retry_at_ms); NULL otherwise. */
const char *trun_start_failure(const struct trun *tr, int64_t *retry_at_ms);
/* A plugin task's reported health: 1 or 0; -1 for a task that is not. */
int trun_plugin_healthy(const struct trun *tr);
/* The most recent events (at most TRUN_EVENTS): 0 is the oldest. */
size_t trun_nevents(const struct trun *tr);
const struct task_event *trun_event(const struct trun *tr, size_t i);

#endif
