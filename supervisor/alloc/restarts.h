/*
 * restarts.h: a task's restart policy at work, Nomad's rules: what
 * follows each end of a task (an exit, or a start that failed) under its
 * alloc document's "restart" block. Time comes in as an argument, so
 * that the rules are plain arithmetic; the task runner keeps the count.
 *
 * Must not: start, stop or time anything itself.
 */
#ifndef BERTH_RESTARTS_H
#define BERTH_RESTARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

/* Restarts counted within the current interval. */
struct restarts {
	int64_t interval_start_ms;	/* wall clock; 0: none yet */
	int count;
};

/* The first interval begins with the task's first start. */
void restarts_begin(struct restarts *r, int64_t now_ms);
/*
 * The task ended at now_ms, well or not. true: start it again after
 * *delay_ms; false: the policy gives up, and the task ends for good. Either way why says the policy's reason, in a few words.
 */
bool restarts_next(struct restarts *r, const struct alloc_restart *p,
    int64_t now_ms, int64_t *delay_ms, char *why, size_t n);

#endif
