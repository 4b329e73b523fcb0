/*
 * alloc_recover.c: after a supervisor restart. The task handles the
 * registry kept are read before anything starts, so that tasks still
 * running from before are adopted, not started again; the handles no
 * allocation claims are stale tasks, stopped; sandboxes no handle names
 * are killed; plugin registrations of allocations that are not running
 * are removed.
 *
 * Must not: start anything before the handles are read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "registry_client.h"
#include "xalloc.h"

void
free_kept(struct allocs *am)
{
	size_t i;

	for (i = 0; i < am->nkept; i++) {
		free(am->kept[i].alloc);
		free(am->kept[i].task);
		free(am->kept[i].driver);
		if (am->kept[i].th != NULL)
			berth__task_handle__free_unpacked(am->kept[i].th, NULL);
	}
	free(am->kept);
	am->kept = NULL;
	am->nkept = 0;
}

struct kept *
claim(struct allocs *am, const char *alloc, const char *task,
    const char *driver)
{
	size_t i;

	for (i = 0; i < am->nkept; i++) {
		struct kept *k = &am->kept[i];

		if (!k->claimed && strcmp(k->alloc, alloc) == 0 &&
		    strcmp(k->task, task) == 0 && strcmp(k->driver, driver) ==
		    0) {
			k->claimed = true;
			return k;
		}
	}
	return NULL;
}

static void
on_deregistered_stale(const struct regclient_result *res, void *arg)
{
	(void)arg;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE &&
	    res->code != BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		log_warnx("alloc_runner: removing a stale plugin registration: "
		    "%s: %s", ipc_error_name(res->code), res->message);
}

/* Registrations of allocations that are not running go. */
static void
on_plugins_listed(const struct regclient_result *res,
    Berth__PluginInstance *const *items, size_t n, void *arg)
{
	struct allocs *am = arg;
	size_t i;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		log_warnx("alloc_runner: listing plugins: %s: %s",
		    ipc_error_name(res->code), res->message);
		return;
	}
	for (i = 0; i < n; i++) {
		const Berth__PluginInstance *pi = items[i];

		if ((pi->type != BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE &&
		    pi->type != BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER) ||
		    find_run(am, pi->alloc) != NULL)
			continue;
		log_info("alloc_runner: plugin %s of alloc %s is registered "
		    "but its allocation is not running: deregistering it",
		    pi->name, pi->alloc);
		regclient_deregister(am->d.registry, pi->type,
		    pi->name, pi->alloc, on_deregistered_stale, am);
	}
}

static void
on_handles(const struct regclient_result *res, Berth__Handle *const *items,
    size_t n, void *arg)
{
	struct allocs *am = arg;
	struct timeval tv = { am->d.resync_ms / 1000,
		(am->d.resync_ms % 1000) * 1000 };
	size_t i;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		/* Starting without them could start tasks twice. */
		log_errx("alloc_runner: reading task handles from "
		    "berth-registry: %s: %s", ipc_error_name(res->code),
		    res->message);
		am->d.fail(am->d.ctx, "the registry's task handles cannot be "
		    "read");
		return;
	}
	am->kept = xcalloc(n + 1, sizeof(*am->kept));
	for (i = 0; i < n; i++) {
		const Berth__ReattachHandle *rh = items[i]->reattach;
		struct kept *k = &am->kept[am->nkept];

		if (items[i]->handle_case != BERTH__HANDLE__HANDLE_REATTACH ||
		    rh->type != BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER)
			continue;
		k->alloc = xstrdup(rh->alloc);
		k->task = xstrdup(rh->task);
		k->driver = xstrdup(rh->name);
		k->th = berth__task_handle__unpack(NULL, rh->state.len,
		    rh->state.data);
		am->nkept++;
	}
	log_info("alloc_runner: %zu task handle%s kept from before", am->nkept,
	    am->nkept == 1 ? "" : "s");
	am->ready = true;
	scan(am);
	/* Before any task starts (a start waits for the mounter). */
	end_unrecorded(am);
	for (i = 0; i < am->nkept; i++)
		if (!am->kept[i].claimed)
			stop_stale(am, &am->kept[i]);
	sweep_stale_vols(am);
	free_kept(am);
	if (regclient_list_plugins(am->d.registry,
	    BERTH__PLUGIN_TYPE__PLUGIN_TYPE_UNKNOWN, NULL, on_plugins_listed,
	    am) < 0)
		log_warnx("alloc_runner: cannot list plugins");
	evtimer_add(am->resync, &tv);
}


/* The handles first: nothing starts before they are read. */
void
recover_start(struct allocs *am)
{
	if (regclient_list_handles(am->d.registry,
	    BERTH__HANDLE_KIND__HANDLE_KIND_REATTACH, on_handles, am) < 0)
		am->d.fail(am->d.ctx, "cannot ask berth-registry for task "
		    "handles");
}
