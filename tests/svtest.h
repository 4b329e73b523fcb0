/*
 * svtest.h: what the integration tests that run a whole berth share:
 * a config in a fresh directory, berth-supervisor started in spawn mode
 * with its helpers' pids tracked, allocation files, and the supervisor's
 * log lines waited for and counted.
 *
 * The test becomes a child subreaper: tasks that outlive a killed
 * supervisor come to it, and die with it (their pids are tracked).
 */
#ifndef BERTH_TEST_SVTEST_H
#define BERTH_TEST_SVTEST_H

#include <sys/types.h>

#include "harness.h"

struct berth {
	char *dir;
	char cfg[512], allocs[512];
	struct proc sv;
	pid_t mounter, registry;
};

/* A private mount namespace, a fresh directory, and the config file:
 * data and run dirs in it, an alloc_dir, heartbeat, and extra keys
 * (", \"k\": v" or NULL). */
void berth_config(struct berth *b, const char *heartbeat, const char *extra);
/* Rewrite the config in the same directory (for a restart). */
void berth_reconfig(struct berth *b, const char *heartbeat,
    const char *extra);
/* Start the supervisor and wait for its "ready:". */
void berth_start(struct berth *b);
/* SIGKILL the supervisor; its helpers must be gone within 3 s. */
void berth_kill(struct berth *b);
/* berth_kill, and remove the directory. */
void berth_stop(struct berth *b);
/* Task pids in "type=Started" events, tracked; how many; the last. */
int task_pids(struct berth *b, pid_t *last);
/* How often text is in the supervisor's log so far. */
int count(struct berth *b, const char *text);
/* Fail unless text appears within ms. */
void wait_log(struct berth *b, const char *text, int ms);
/* Write an allocation file, renamed into place as a tool would. */
void berth_alloc(struct berth *b, const char *file, const char *text);
void remove_alloc(struct berth *b, const char *file);

#endif
