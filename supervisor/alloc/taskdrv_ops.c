/*
 * taskdrv_ops.c: the task driver, as the task runner and the stale-task
 * clean-up reach it (trun_driver_ops): taskdrv.c's functions, ctx the
 * struct taskdrv.
 *
 * Must not: add behaviour.
 */
#include "task_runner.h"
#include "taskdrv.h"

static struct taskproc *
drv_start(void *ctx, const struct task_spec *spec,
    taskproc_started_cb started, taskproc_exited_cb exited, void *arg)
{
	return taskproc_start(ctx, spec, started, exited, arg);
}

static struct taskproc *
drv_adopt(void *ctx, enum taskdrv_kind kind, const char *alloc,
    const char *task, const Berth__TaskHandle *h, taskproc_started_cb started,
    taskproc_exited_cb exited, void *arg)
{
	return taskproc_adopt(ctx, kind, alloc, task, h, started, exited, arg);
}

static int
drv_end_unrecorded(void *ctx, taskdrv_keep_cb keep, taskdrv_unrec_cb ended,
    void *arg)
{
	return taskdrv_end_unrecorded(ctx, keep, ended, arg);
}

const struct trun_driver_ops trun_taskdrv_ops = {
	drv_start, drv_adopt, taskproc_handle, taskproc_signal, taskproc_pid,
	taskproc_free, drv_end_unrecorded,
};
