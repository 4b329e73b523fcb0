/*
 * drivermgr.h: the driver manager. berth's two built-in task drivers,
 * "exec" and "privileged", run as plugins of a pluginmgr (fingerprints,
 * health, retries with backoff, the allow and block lists, the state
 * line "drivers: exec=healthy privileged=healthy"), and task runners
 * register handlers here to hear what a driver has to say about their
 * task.
 *
 * Fingerprints are honest and repeated every fingerprint_ms: exec is
 * healthy when berth-shim runs (the driver forks and executes it with
 * -V, which proves that a process starts); it is undetected when the
 * shim is missing, unhealthy when the shim is there but does not run.
 * privileged is healthy when berth-mounter answers a ping; undetected
 * without a mounter, unhealthy when it does not answer.
 *
 * A task's handler hears its driver's events (from taskdrv.c, such as
 * "ShimLost"), and "DriverUnhealthy" when its driver stops being
 * healthy, then "DriverHealthy" when it is again.
 *
 * Must not: start or stop a task (task runners do, through taskdrv.c),
 * or keep a task's handle (the task runner keeps it in the registry).
 */
#ifndef BERTH_DRIVERMGR_H
#define BERTH_DRIVERMGR_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "pluginmgr.h"

struct mclient;
struct drivermgr;
struct drv_handler;

struct drivermgr_conf {
	const char *shim;		/* berth-shim's path */
	struct mclient *mounter;	/* NULL: no mounter */
	int64_t fingerprint_ms;		/* plugin_heartbeat_ms */
	int64_t retry_initial_ms, retry_max_ms;
	char *const *allow, *const *block;	/* driver_allow, driver_block */
};

typedef void (*drv_event_fn)(void *arg, const char *type,
    const char *message);

/* conf's strings and lists must outlive the manager. Never NULL. */
struct drivermgr *drivermgr_new(struct event_base *base,
    const struct drivermgr_conf *conf);
/* Fingerprint the drivers that are allowed; once the mounter is ready. */
void drivermgr_start(struct drivermgr *dm);
/* Handlers must be freed first. */
void drivermgr_free(struct drivermgr *dm);

/* May this driver run tasks, by driver_allow and driver_block? */
bool drivermgr_allowed(const struct drivermgr *dm, const char *driver);
/* PLUGIN_UNDETECTED for a name that is not a driver. */
enum plugin_state drivermgr_state(const struct drivermgr *dm,
    const char *driver);
/* The latest fingerprint's description ("" before one). */
const char *drivermgr_desc(const struct drivermgr *dm, const char *driver);
/* "drivers: exec=healthy privileged=blocked" */
void drivermgr_states(const struct drivermgr *dm, char *buf, size_t len);

/* Hear the events of one task (alloc, task) run by driver. */
struct drv_handler *drivermgr_handler(struct drivermgr *dm,
    const char *driver, const char *alloc, const char *task,
    drv_event_fn fn, void *arg);
void drv_handler_free(struct drv_handler *h);
/*
 * A driver's event about a task, to that task's handler if one is
 * registered (taskdrv.c's taskdrv_event_cb; arg is the manager).
 */
void drivermgr_task_event(void *dm, const char *driver, const char *alloc,
    const char *task, const char *type, const char *message);

#endif
