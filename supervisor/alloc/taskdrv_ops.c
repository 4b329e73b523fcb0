/*
 * taskdrv_ops.c: the task driver, as the task runner and the stale-task
 * clean-up reach it (trun_driver_ops): taskdrv.c's functions, ctx the
 * struct taskdrv.
 *
 * Must not: add behaviour; a NULL from the driver is out of memory, and
 * fatal.
 */
#include "task_runner.h"
#include "taskdrv.h"
#include "xalloc.h"

static struct taskproc *
drv_start(void *ctx, const struct task_spec *spec,
    taskproc_started_cb started, taskproc_exited_cb exited, void *arg)
{
	struct taskproc *tp;

	if ((tp = taskproc_start(ctx, spec, started, exited, arg)) == NULL)
		oom("taskproc_start");
	return tp;
}

static struct taskproc *
drv_adopt(void *ctx, enum taskdrv_kind kind, const char *alloc,
    const char *task, const Berth__TaskHandle *h, taskproc_started_cb started,
    taskproc_exited_cb exited, void *arg)
{
	struct taskproc *tp;

	if ((tp = taskproc_adopt(ctx, kind, alloc, task, h, started, exited,
	    arg)) == NULL)
		oom("taskproc_adopt");
	return tp;
}

const struct trun_driver_ops trun_taskdrv_ops = {
	drv_start, drv_adopt, taskproc_handle, taskproc_signal, taskproc_pid,
	taskproc_free,
};
