/*
 * taskdrv.c: what the exec and privileged drivers share (see taskdrv.h):
 * the driver, a task's record and the transitions of its state, which
 * are the only places its owner's callbacks run from.
 *
 * Owns: the task list, each task's state (taskdrv_int.h), telling its
 * owner from the event loop. Must not: start, watch or signal a process
 * itself: taskdrv_exec.c and taskdrv_priv.c do, by kind.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "spawn.h"
#include "taskdrv_int.h"
#include "xalloc.h"

void
task_exit_describe(const struct task_exit *ex, char *buf, size_t n)
{
	if (!ex->status_known)
		snprintf(buf, n, "ended (status unknown: %s)", ex->unknown !=
		    NULL ? ex->unknown : "it was adopted");
	else if (ex->signaled)
		snprintf(buf, n, "was killed by signal %d (SIG%s)%s", ex->code,
		    sigabbrev_np(ex->code) ? sigabbrev_np(ex->code) : "?",
		    ex->oom_killed ? ", out of memory (its memory limit)" : "");
	else if (ex->oom_killed)
		snprintf(buf, n, "exited with status %d, after one of its "
		    "processes was killed out of memory (its memory limit)",
		    ex->code);
	else
		snprintf(buf, n, "exited with status %d", ex->code);
}

struct taskdrv *
taskdrv_new(const struct taskdrv_deps *d)
{
	struct taskdrv *drv = xcalloc(1, sizeof(*drv));

	drv->base = d->base;
	drv->mounter = d->mounter;
	snprintf(drv->data_dir, sizeof(drv->data_dir), "%s",
	    d->data_dir != NULL ? d->data_dir : "");
	drv->cgroups = d->cgroups;
	drv->cgroup_parent = d->cgroup_parent;
	drv->event = d->event;
	drv->event_arg = d->ctx;
	TAILQ_INIT(&drv->procs);
	TAILQ_INIT(&drv->unrecs);
	/* A missing shim is the exec driver's fingerprint to report. */
	if (d->shim != NULL)
		snprintf(drv->shim, sizeof(drv->shim), "%s", d->shim);
	else if (spawn_helper_path(SHIM_NAME, drv->shim, sizeof(drv->shim)) ==
	    -ENAMETOOLONG || drv->shim[0] == '\0')
		snprintf(drv->shim, sizeof(drv->shim), "%s", SHIM_NAME);
	return drv;
}

void
taskdrv_on_event(struct taskdrv *drv, taskdrv_event_cb cb, void *arg)
{
	drv->event = cb;
	drv->event_arg = arg;
}

const char *
taskdrv_shim_path(const struct taskdrv *drv)
{
	return drv->shim;
}

void
tp_event(struct taskproc *tp, const char *type, const char *fmt, ...)
{
	char msg[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_info("taskdrv: alloc %s task %s: %s", tp->alloc, tp->task, msg);
	if (tp->drv->event != NULL)
		tp->drv->event(tp->drv->event_arg, tp->kind == TASKDRV_EXEC ?
		    "exec" : "privileged", tp->alloc, tp->task, type, msg);
}

void
taskdrv_free(struct taskdrv *drv)
{
	struct taskproc *tp;

	if (drv == NULL)
		return;
	while ((tp = TAILQ_FIRST(&drv->procs)) != NULL)
		taskproc_free(tp);
	unrec_free_all(drv);
	free(drv);
}

/* Out of STARTING, ENDED_EARLY or ASKING: the started callback. */
void
tp_tell_started(struct taskproc *tp, int err)
{
	if (tp->state != TP_STARTING && tp->state != TP_ENDED_EARLY &&
	    tp->state != TP_ASKING)
		return;
	tp->err = err;
	tp->state = err != 0 ? TP_FAILED : TP_RUNNING;
	evtimer_del(tp->later);
	tp->started(tp, tp->err, tp->why, tp->arg);
}

/*
 * Into EXITED from any state but the final ones: a task not told started
 * yet is told first. The callback may free tp (ex may live in it).
 */
void
tp_tell_exited(struct taskproc *tp, const struct task_exit *ex)
{
	if (tp->state == TP_FAILED || tp->state == TP_EXITED)
		return;
	tp_tell_started(tp, 0);
	tp->state = TP_EXITED;
	exec_unwatch(tp);
	tp->exited(tp, ex, tp->arg);
}

static void
on_later(evutil_socket_t fd, short ev, void *arg)
{
	struct taskproc *tp = arg;

	(void)fd;
	(void)ev;
	if (tp->state == TP_ENDED_EARLY)
		tp_tell_exited(tp, &tp->early);
	else
		tp_tell_started(tp, tp->err);
}

/* Succeed or fail from the event loop, never from within the call. */
void
tp_tell_later(struct taskproc *tp, int err)
{
	struct timeval now = { 0, 0 };

	tp->err = err;
	tp->state = TP_STARTING;
	evtimer_add(tp->later, &now);
}

/* Started, and ended before it was watched: both told from the loop. */
void
tp_ended_early(struct taskproc *tp, const struct task_exit *ex)
{
	tp_tell_later(tp, 0);
	tp->early = *ex;
	tp->state = TP_ENDED_EARLY;
}

static struct taskproc *
tp_new(struct taskdrv *drv, enum taskdrv_kind kind, const char *alloc,
    const char *task, taskproc_started_cb started, taskproc_exited_cb exited,
    void *arg)
{
	struct taskproc *tp = xcalloc(1, sizeof(*tp));

	tp->later = xnonnull(evtimer_new(drv->base, on_later, tp),
	    "taskdrv: a task's timer");
	tp->drv = drv;
	tp->kind = kind;
	tp->state = TP_STARTING;
	tp->pidfd = -1;
	tp->task_pidfd = -1;
	tp->chan = -1;
	snprintf(tp->alloc, sizeof(tp->alloc), "%s", alloc);
	snprintf(tp->task, sizeof(tp->task), "%s", task);
	tp->started = started;
	tp->exited = exited;
	tp->arg = arg;
	TAILQ_INSERT_TAIL(&drv->procs, tp, entry);
	return tp;
}

struct taskproc *
taskproc_start(struct taskdrv *drv, const struct task_spec *spec,
    taskproc_started_cb started, taskproc_exited_cb exited, void *arg)
{
	struct taskproc *tp;
	int r;

	tp = tp_new(drv, spec->kind, spec->alloc, spec->task, started, exited,
	    arg);
	if (spec->kind != TASKDRV_EXEC)
		priv_task_start(tp, spec);
	else if (spec->sandbox)
		sandbox_start(tp, spec);
	else if ((r = exec_start(tp, spec)) <= 0)
		tp_tell_later(tp, r);	/* > 0: it ended already */
	return tp;
}

struct taskproc *
taskproc_adopt(struct taskdrv *drv, enum taskdrv_kind kind,
    const char *alloc, const char *task, const Berth__TaskHandle *th,
    taskproc_started_cb started, taskproc_exited_cb exited, void *arg)
{
	struct taskproc *tp;

	tp = tp_new(drv, kind, alloc, task, started, exited, arg);
	if (th != NULL) {
		tp->pid = th->pid;
		tp->start_time = th->start_time;
	}
	if (kind == TASKDRV_PRIVILEGED)
		priv_task_adopt(tp);
	else if (th != NULL && th->run_id != 0)
		sandbox_adopt(tp, th);
	else
		exec_adopt(tp, th);
	return tp;
}

void
taskproc_handle(const struct taskproc *tp, Berth__TaskHandle *h)
{
	h->pid = tp->pid;
	h->start_time = tp->start_time;
	h->shim_pid = tp->shim_pid;
	h->shim_start_time = tp->shim_start;
	h->run_id = tp->run_id;
}

int
taskproc_signal(struct taskproc *tp, int sig)
{
	if (tp->state == TP_EXITED || tp->pid <= 0)
		return -ESRCH;
	if (tp->kind == TASKDRV_EXEC && tp->run_id != 0)
		return sandbox_signal(tp, sig);
	if (tp->kind == TASKDRV_EXEC)
		return exec_signal(tp, sig);
	return priv_task_signal(tp, sig);
}

pid_t
taskproc_pid(const struct taskproc *tp)
{
	return tp->pid;
}

uint64_t
taskproc_start_time(const struct taskproc *tp)
{
	return tp->start_time;
}

void
taskproc_free(struct taskproc *tp)
{
	if (tp == NULL)
		return;
	TAILQ_REMOVE(&tp->drv->procs, tp, entry);
	exec_forget(tp);
	sandbox_forget(tp);
	event_free(tp->later);
	/* A mounter answer still on its way finds no callback. */
	if (tp->kind == TASKDRV_PRIVILEGED)
		priv_task_forget(tp);
	free(tp);
}
