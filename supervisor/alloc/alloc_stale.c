/*
 * alloc_stale.c: what allocations that are gone left behind: a task
 * still running from before a restart (adopted, stopped: TERM, then KILL
 * after the default kill_timeout; its handle forgotten), a sandbox that
 * no handle names (its start never reached the registry: the task
 * driver kills it; its end is told here, and its alloc cleaned up if
 * gone), and volumes still held by an alloc that is not running (taken
 * back, then the mounter cleans up).
 *
 * Must not: touch an allocation that runs.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"
#include "drivermgr.h"
#include "events.h"
#include "registry_client.h"
#include "xalloc.h"

/* A task left from an allocation that is gone: stop it, forget it. */
struct stale {
	struct allocs *am;
	char *alloc, *task, *driver;
	struct taskproc *tp;
	struct event *timer;
	TAILQ_ENTRY(stale) entry;
};

static void
on_stale_forgotten(const struct regclient_result *res, void *arg)
{
	(void)arg;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE &&
	    res->code != BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		log_warnx("alloc_runner: forgetting a stale task's handle: "
		    "%s: %s", ipc_error_name(res->code), res->message);
}

static void
on_stale_cleaned(const struct priv_result *res, uint32_t unmounted,
    uint32_t removed, void *arg)
{
	(void)unmounted;
	(void)removed;
	(void)arg;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		log_warnx("alloc_runner: cleaning up a stale alloc: %s: %s",
		    ipc_error_name(res->code), res->message);
}

static void
stale_done(struct stale *st)
{
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__ReattachHandle rh = BERTH__REATTACH_HANDLE__INIT;

	rh.type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER;
	rh.name = st->driver;
	rh.alloc = st->alloc;
	rh.task = st->task;
	h.handle_case = BERTH__HANDLE__HANDLE_REATTACH;
	h.reattach = &rh;
	if (regclient_delete_handle(st->am->d.registry, &h,
	    on_stale_forgotten, NULL) < 0)
		log_warnx("alloc_runner: cannot reach berth-registry");
	if (find_run(st->am, st->alloc) == NULL)
		cleanup_alloc(st->am, st->alloc, NULL, NULL,
		    on_stale_cleaned, NULL);
	free_stale(st);
}

void
free_stale(struct stale *st)
{
	TAILQ_REMOVE(&st->am->stale, st, entry);
	if (st->tp != NULL)
		st->am->d.driver->free(st->tp);
	event_free(st->timer);
	free(st->alloc);
	free(st->task);
	free(st->driver);
	free(st);
}

/* A stale task's end, as a task event like any other task's. */
static void
stale_event(struct stale *st, struct taskproc *tp, const char *how,
    const char *when)
{
	log_info("event: alloc=%s task=%s type=Terminated message=\"pid %ld "
	    "%s%s (a stale task)\"", st->alloc, st->task,
	    (long)st->am->d.driver->pid(tp), how, when);
	events_record(st->am->d.events, "task", "Terminated", st->alloc,
	    st->task, NULL, "pid %ld %s%s (a stale task)",
	    (long)st->am->d.driver->pid(tp), how, when);
}

static void
on_stale_exited(struct taskproc *tp, const struct task_exit *ex, void *arg)
{
	struct stale *st = arg;
	char how[128];

	task_exit_describe(ex, how, sizeof(how));
	stale_event(st, tp, how, "");
	stale_done(st);
}

static void
on_stale_timer(evutil_socket_t fd, short ev, void *arg)
{
	struct stale *st = arg;

	(void)fd;
	(void)ev;
	log_warnx("alloc %s task %s: the stale task ignored SIGTERM; "
	    "sending SIGKILL", st->alloc, st->task);
	st->am->d.driver->signal(st->tp, SIGKILL);
}

static void
on_stale_adopted(struct taskproc *tp, int err, const char *why, void *arg)
{
	struct stale *st = arg;
	struct timeval tv = { ALLOC_DEFAULT_KILL_TIMEOUT_MS / 1000, 0 };

	if (err != 0) {
		/* It ended while no supervisor ran: its exit, as its shim
		 * kept it, is not lost. */
		stale_event(st, tp, why, " while the supervisor was not running");
		stale_done(st);
		return;
	}
	log_info("alloc %s task %s: its allocation is gone; stopping the "
	    "task it left running (pid %ld)", st->alloc, st->task,
	    (long)st->am->d.driver->pid(tp));
	st->am->d.driver->signal(tp, SIGTERM);
	evtimer_add(st->timer, &tv);
}

void
stop_stale(struct allocs *am, const struct kept *k)
{
	struct stale *st;

	st = xcalloc(1, sizeof(*st));
	st->alloc = xstrdup(k->alloc);
	st->task = xstrdup(k->task);
	st->driver = xstrdup(k->driver);
	if ((st->timer = evtimer_new(am->d.base, on_stale_timer, st)) == NULL)
		oom("stop_stale");
	st->am = am;
	TAILQ_INSERT_TAIL(&am->stale, st, entry);
	/* It had ended for good: only its record and directory are left. */
	if (k->th != NULL && k->th->end != NULL) {
		stale_done(st);
		return;
	}
	if (!drivermgr_allowed(am->d.drivers, k->driver))
		log_info("alloc %s task %s: driver %s is blocked by the config "
		    "now; its task, if still running, is stopped", k->alloc,
		    k->task, k->driver);
	st->tp = am->d.driver->adopt(am->d.driver_ctx, strcmp(k->driver,
	    "exec") == 0 ? TASKDRV_EXEC : TASKDRV_PRIVILEGED, k->alloc, k->task,
	    k->th, on_stale_adopted, on_stale_exited, st);
}

/* A task handle kept from before names it: adopted, or stopped above. */
static bool
kept_names(void *arg, const char *alloc, const char *task)
{
	struct allocs *am = arg;
	size_t i;

	for (i = 0; i < am->nkept; i++)
		if (strcmp(am->kept[i].alloc, alloc) == 0 &&
		    strcmp(am->kept[i].task, task) == 0 &&
		    am->kept[i].th != NULL && am->kept[i].th->end == NULL)
			return true;
	return false;
}

struct holds {
	const char *alloc;
	bool found;
};

static void
holds_one(const char *alloc, void *arg)
{
	struct holds *h = arg;

	h->found |= strcmp(alloc, h->alloc) == 0;
}

/*
 * Something else of the gone alloc is still to be stopped or taken back
 * (its volumes are given back before the clean-up, which follows that),
 * or the volume manager cannot say yet: that cleans it up.
 */
static bool
stale_busy(struct allocs *am, const char *alloc)
{
	struct holds h = { alloc, false };
	struct stale *st;

	TAILQ_FOREACH(st, &am->stale, entry)
		if (strcmp(st->alloc, alloc) == 0)
			return true;
	if (!am->d.volumes->ready(am->d.volumes_ctx))
		return true;
	am->d.volumes->each_alloc(am->d.volumes_ctx, holds_one, &h);
	return h.found;
}

/* A sandbox no handle named has ended: its task's end, as any other's. */
static void
on_unrecorded_ended(void *arg, const char *alloc, const char *task,
    pid_t pid, const struct task_exit *ex)
{
	struct allocs *am = arg;
	char how[128];

	task_exit_describe(ex, how, sizeof(how));
	log_info("event: alloc=%s task=%s type=Terminated message=\"pid %ld "
	    "%s (a task whose start was never kept)\"", alloc, task,
	    (long)pid, how);
	events_record(am->d.events, "task", "Terminated", alloc, task, NULL,
	    "pid %ld %s (a task whose start was never kept)", (long)pid, how);
	if (find_run(am, alloc) == NULL && !stale_busy(am, alloc))
		cleanup_alloc(am, alloc, NULL, NULL, on_stale_cleaned, NULL);
}

void
end_unrecorded(struct allocs *am)
{
	int n;

	if (am->d.driver->end_unrecorded == NULL)
		return;
	if ((n = am->d.driver->end_unrecorded(am->d.driver_ctx, kept_names,
	    on_unrecorded_ended, am)) > 0)
		log_warnx("alloc_runner: %d sandbox%s ran that no task handle "
		    "names: killed", n, n == 1 ? "" : "es");
}

/*
 * Volumes held by allocs that are not running (their records outlived a
 * restart, or a take-back that failed): taken back, then cleaned up.
 */
struct stale_vol {
	struct allocs *am;
	char alloc[];
};

static bool
stale_vols_busy(struct allocs *am, const char *alloc)
{
	for (size_t i = 0; i < am->nstale_vols; i++)
		if (strcmp(am->stale_vols[i], alloc) == 0)
			return true;
	return false;
}

static void
stale_vols_forget(struct allocs *am, const char *alloc)
{
	for (size_t i = 0; i < am->nstale_vols; i++)
		if (strcmp(am->stale_vols[i], alloc) == 0) {
			free(am->stale_vols[i]);
			am->stale_vols[i] = am->stale_vols[--am->nstale_vols];
			return;
		}
}

static void
on_stale_vols(enum volmgr_status st, const char *why, void *arg)
{
	struct stale_vol *sv = arg;

	if (st == VOLMGR_OK) {
		log_info("alloc %s: the volumes it held are taken back",
		    sv->alloc);
		cleanup_alloc(sv->am, sv->alloc, NULL, NULL,
		    on_stale_cleaned, NULL);
	} else
		log_warnx("alloc %s: taking back the volumes it held: %s; "
		    "trying again at the next resync", sv->alloc, why);
	stale_vols_forget(sv->am, sv->alloc);
	free(sv);
}

static void
stale_vols_one(const char *alloc, void *arg)
{
	struct allocs *am = arg;
	struct stale_vol *sv;
	char *name;

	if (find_run(am, alloc) != NULL || stale_vols_busy(am, alloc))
		return;
	sv = xmalloc(sizeof(*sv) + strlen(alloc) + 1);
	name = xstrdup(alloc);
	am->stale_vols = xreallocarray(am->stale_vols, am->nstale_vols + 1,
	    sizeof(*am->stale_vols));
	am->stale_vols[am->nstale_vols++] = name;
	sv->am = am;
	memcpy(sv->alloc, alloc, strlen(alloc) + 1);
	log_info("alloc %s: not running, but it holds volumes: taking them "
	    "back", alloc);
	am->d.volumes->unmount(am->d.volumes_ctx, alloc, NULL, on_stale_vols,
	    sv);
}

void
sweep_stale_vols(struct allocs *am)
{
	struct timeval tv = { 0, 100 * 1000 };

	if (!am->d.volumes->ready(am->d.volumes_ctx)) {
		evtimer_add(am->stale_vols_timer, &tv);
		return;
	}
	am->d.volumes->each_alloc(am->d.volumes_ctx, stale_vols_one, am);
}

void
on_stale_vols_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	sweep_stale_vols(arg);
}

void
stale_free_all(struct allocs *am)
{
	while (TAILQ_FIRST(&am->stale) != NULL)
		free_stale(TAILQ_FIRST(&am->stale));
}

void
stale_vols_free(struct allocs *am)
{
	for (size_t i = 0; i < am->nstale_vols; i++)
		free(am->stale_vols[i]);
	free(am->stale_vols);
}
