/*
 * fake_driver.c: the component tests' task driver (fake_driver.h).
 */
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "fake_driver.h"

struct taskproc procs[MAXPROCS];
int nprocs;
static pid_t next_pid = 1000;

static struct taskproc *
new_proc(taskproc_started_cb started, taskproc_exited_cb exited, void *arg,
    const char *alloc, const char *task)
{
	struct taskproc *tp;

	ck_assert_int_lt(nprocs, MAXPROCS);
	tp = &procs[nprocs++];
	memset(tp, 0, sizeof(*tp));
	tp->started = started;
	tp->exited = exited;
	tp->arg = arg;
	tp->pid = next_pid++;
	snprintf(tp->alloc, sizeof(tp->alloc), "%s", alloc);
	snprintf(tp->task, sizeof(tp->task), "%s", task);
	return tp;
}

static struct taskproc *
fake_start(void *ctx, const struct task_spec *spec,
    taskproc_started_cb started, taskproc_exited_cb exited, void *arg)
{
	struct taskproc *tp;

	(void)ctx;
	tp = new_proc(started, exited, arg, spec->alloc, spec->task);
	snprintf(tp->dir, sizeof(tp->dir), "%s", spec->dir ? spec->dir : "");
	return tp;
}

static struct taskproc *
fake_adopt(void *ctx, enum taskdrv_kind kind, const char *alloc,
    const char *task, const Berth__TaskHandle *h, taskproc_started_cb started,
    taskproc_exited_cb exited, void *arg)
{
	struct taskproc *tp;

	(void)ctx;
	(void)kind;
	tp = new_proc(started, exited, arg, alloc, task);
	tp->adopted = true;
	tp->pid = h != NULL ? (pid_t)h->pid : 0;
	return tp;
}

static void
fake_handle(const struct taskproc *tp, Berth__TaskHandle *h)
{
	h->pid = tp->pid;
	h->start_time = 7;
}

static int
fake_signal(struct taskproc *tp, int sig)
{
	ck_assert(!tp->freed);
	if (tp->nsigs < 8)
		tp->sigs[tp->nsigs++] = sig;
	return 0;
}

static pid_t
fake_pid(const struct taskproc *tp)
{
	return tp->pid;
}

static void
fake_free(struct taskproc *tp)
{
	ck_assert(!tp->freed);
	tp->freed = true;
}

const struct trun_driver_ops fake_driver = {
	fake_start, fake_adopt, fake_handle, fake_signal, fake_pid, fake_free,
	NULL,
};

struct taskproc *
last_proc(void)
{
	ck_assert_int_gt(nprocs, 0);
	return &procs[nprocs - 1];
}

struct taskproc *
find_proc(const char *alloc, const char *task)
{
	for (int i = nprocs - 1; i >= 0; i--)
		if (strcmp(procs[i].alloc, alloc) == 0 &&
		    strcmp(procs[i].task, task) == 0)
			return &procs[i];
	return NULL;
}

void
proc_started(struct taskproc *tp, int err, const char *why)
{
	tp->started(tp, err, why, tp->arg);
}

void
proc_exits(struct taskproc *tp, int code)
{
	const struct task_exit ex = { true, false, code, NULL, false };

	tp->exited(tp, &ex, tp->arg);
}
