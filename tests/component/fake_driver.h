/*
 * fake_driver.h: a task driver for the alloc runner's and task runner's
 * component tests (struct trun_driver_ops). It starts nothing: each task
 * is a record the test drives by hand, telling its start and exit and
 * reading the signals it was sent.
 */
#ifndef BERTH_FAKE_DRIVER_H
#define BERTH_FAKE_DRIVER_H

#include <stdbool.h>
#include <sys/types.h>

#include "task_runner.h"

struct taskproc {
	taskproc_started_cb started;
	taskproc_exited_cb exited;
	void *arg;
	pid_t pid;
	bool adopted, freed;
	int sigs[8];
	int nsigs;
	char alloc[64], task[64], dir[512];
};

#define MAXPROCS 32
/* Every task made, oldest first (each test runs in a fork of its own). */
extern struct taskproc procs[MAXPROCS];
extern int nprocs;

extern const struct trun_driver_ops fake_driver;

/* The task made last; the one of alloc/task made last, or NULL. */
struct taskproc *last_proc(void);
struct taskproc *find_proc(const char *alloc, const char *task);
/* Tell its owner it started (err 0) or could not; that it exited. */
void proc_started(struct taskproc *tp, int err, const char *why);
void proc_exits(struct taskproc *tp, int code);

#endif
