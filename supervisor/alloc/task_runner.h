/*
 * task_runner.h: one task of an allocation, from its directory to its
 * last exit: prepares its directory (and a plugin's socket directory)
 * through the mounter, starts or adopts it through the task driver,
 * restarts it with backoff when it ends, persists its handle in the
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

#include "alloc.h"
#include "driver.pb-c.h"

struct supervisor;
struct trun;

/* Restart backoff: from 1 s doubling to 30 s; reset after 30 s of running. */
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
 * The alloc and task must outlive the runner. adopt: the handle the
 * registry kept for this task (NULL: none), copied.
 */
struct trun *trun_new(struct supervisor *sv, const struct alloc *a,
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
/* Forget the runner; the task keeps running (the supervisor stops). */
void trun_free(struct trun *tr);

const char *trun_name(const struct trun *tr);
bool trun_dead(const struct trun *tr);
pid_t trun_pid(const struct trun *tr);
/* "pending", "preparing", "starting", "running", "restarting",
 * "stopping" or "dead". */
const char *trun_state(const struct trun *tr);
uint32_t trun_restarts(const struct trun *tr);
/* A plugin task's reported health: 1 or 0; -1 for a task that is not. */
int trun_plugin_healthy(const struct trun *tr);
/* The most recent events (at most TRUN_EVENTS): 0 is the oldest. */
size_t trun_nevents(const struct trun *tr);
const struct task_event *trun_event(const struct trun *tr, size_t i);

#endif
