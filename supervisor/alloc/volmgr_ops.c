/*
 * volmgr_ops.c: the volume manager, as the alloc runner reaches it
 * (allocs_volume_ops): volmgr.c's functions, ctx the struct volmgr.
 *
 * Must not: add behaviour.
 */
#include "alloc_runner.h"
#include "volmgr.h"

static void
vm_mount(void *ctx, const struct alloc *a, gid_t group, volmgr_cb cb,
    void *arg)
{
	volmgr_mount(ctx, a, group, cb, arg);
}

static void
vm_unmount(void *ctx, const char *alloc, const struct alloc *a,
    volmgr_cb cb, void *arg)
{
	volmgr_unmount(ctx, alloc, a, cb, arg);
}

static void
vm_each_alloc(void *ctx, void (*fn)(const char *alloc, void *arg), void *arg)
{
	volmgr_each_alloc(ctx, fn, arg);
}

static bool
vm_ready(void *ctx)
{
	return volmgr_ready(ctx);
}

static bool
vm_uses_plugin(void *ctx, const char *plugin)
{
	return volmgr_uses_plugin(ctx, plugin);
}

const struct allocs_volume_ops allocs_volmgr_ops = {
	vm_mount, vm_unmount, vm_each_alloc, vm_ready, vm_uses_plugin,
};
