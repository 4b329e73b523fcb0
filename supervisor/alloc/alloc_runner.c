/*
 * alloc_runner.c: the alloc runner (see alloc_runner.h): its start (the
 * handles first, then alloc_dir), its periodic resync, and the views the
 * API and the volume manager read. alloc_int.h says which file owns the
 * rest.
 *
 * Owns: the list of running allocations. The API's views list them,
 * then the allocations that failed (alloc_dir.c keeps those). Must not:
 * run a task (the task runner does) or parse a document itself (alloc.c
 * does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

#include "alloc_int.h"
#include "watch.h"
#include "xalloc.h"

struct arun *
find_run(struct allocs *am, const char *alloc)
{
	struct arun *ar;

	TAILQ_FOREACH(ar, &am->runs, entry)
		if (strcmp(ar->doc->id, alloc) == 0)
			return ar;
	return NULL;
}

void
allocs_restart_tasks(struct allocs *am, const char *alloc, const char *why)
{
	struct arun *ar = find_run(am, alloc);
	size_t i;

	for (i = 0; ar != NULL && i < ar->ntasks; i++)
		if (ar->tasks[i] != NULL)
			trun_restart(ar->tasks[i], why);
}

void
allocs_room(struct allocs *am, const char *plugin)
{
	static const struct timeval now = { 0, 0 };
	struct arun *ar;

	TAILQ_FOREACH(ar, &am->runs, entry)
		if (ar->state == ARUN_MOUNT_WAIT) {
			log_debug("alloc %s: a volume of plugin %s was released; "
			    "trying its volumes again now", ar->doc->id,
			    plugin != NULL ? plugin : "?");
			evtimer_del(ar->retry);
			evtimer_add(ar->retry, &now);
		}
}

static void
on_resync(evutil_socket_t fd, short ev, void *arg)
{
	struct allocs *am = arg;
	struct timeval tv = { am->d.resync_ms / 1000,
		(am->d.resync_ms % 1000) * 1000 };

	(void)fd;
	(void)ev;
	scan(am);
	sweep_stale_vols(am);
	evtimer_add(am->resync, &tv);
}

struct allocs *
allocs_new(const struct allocs_deps *d)
{
	struct allocs *am;

	am = xcalloc(1, sizeof(*am));
	am->d = *d;
	am->task = (struct trun_deps){
		.base = d->base,
		.registry = d->registry,
		.mounter = d->mounter,
		.events = d->events,
		.drivers = d->drivers,
		.driver = d->driver,
		.driver_ctx = d->driver_ctx,
		.plugsup_new = d->plugsup_new,
		.plugsup_ctx = d->plugsup_ctx,
		.data_dir = d->data_dir,
		.heartbeat_ms = d->heartbeat_ms,
		.uid = d->uid,
		.gid = d->gid,
		.cgroups = d->cgroups,
		.cgroup_parent = d->cgroup_parent,
		.ended = arun_task_ended,
	};
	TAILQ_INIT(&am->runs);
	TAILQ_INIT(&am->refused);
	TAILQ_INIT(&am->stale);
	if ((am->rescan = evtimer_new(d->base, on_rescan, am)) == NULL ||
	    (am->resync = evtimer_new(d->base, on_resync, am)) == NULL ||
	    (am->stale_vols_timer = evtimer_new(d->base, on_stale_vols_timer,
	    am)) == NULL)
		oom("allocs_new");
	return am;
}

void
allocs_start(struct allocs *am)
{
	if (am->started)
		return;
	am->started = true;
	am->watch = watch_add(am->d.watcher, am->d.alloc_dir,
	    IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
	    IN_ATTRIB, on_dir_event, am);
	if (am->watch == NULL)
		log_warn("allocs_start: cannot watch alloc_dir %s; reading it "
		    "every %lld ms instead", am->d.alloc_dir,
		    (long long)am->d.resync_ms);
	logs_start(am);
	recover_start(am);
}

void
allocs_free(struct allocs *am)
{
	struct arun *ar;

	if (am == NULL)
		return;
	while ((ar = TAILQ_FIRST(&am->runs)) != NULL) {
		TAILQ_REMOVE(&am->runs, ar, entry);
		priv_forget(am->d.mounter, ar);
		arun_free(ar);
	}
	stale_free_all(am);
	refused_free(am);
	logs_free(am);
	free_kept(am);
	watch_rm(am->watch);
	event_free(am->rescan);
	event_free(am->resync);
	event_free(am->stale_vols_timer);
	stale_vols_free(am);
	free(am);
}

const char *
allocs_node_plugin_type(struct allocs *am, const char *alloc,
    const char *plugin)
{
	struct arun *ar = find_run(am, alloc);
	const struct alloc_csi_plugin *c;
	size_t i;

	/* Not the controller task: an alloc may run both for one plugin. */
	for (i = 0; ar != NULL && i < ar->doc->ntasks; i++) {
		c = &ar->doc->tasks[i].csi;
		if ((c->type == ALLOC_CSI_NODE ||
		    c->type == ALLOC_CSI_MONOLITH) && strcmp(c->id, plugin) == 0)
			return alloc_csi_type_name(c->type);
	}
	return NULL;
}

/* A task that could not be started waits to try again: pending, at its
 * driver. */
static void
task_failure(const struct arun *ar, struct alloc_view *v)
{
	const char *why;
	int64_t at;
	size_t i;

	for (i = 0; v->step == NULL && ar->state == ARUN_RUNNING &&
	    i < ar->ntasks; i++)
		if ((why = trun_start_failure(ar->tasks[i], &at)) != NULL) {
			v->status = "pending";
			v->step = "driver";
			v->reason = why;
			v->next_retry_ms = at;
		}
}

static void
view(const struct arun *ar, struct alloc_view *v)
{
	v->doc = ar->doc;
	v->file = ar->file;
	v->stopping = arun_stopping(ar);
	v->state = arun_state_name(ar->state);
	v->status = arun_status(ar);
	v->step = ar->step[0] != '\0' ? ar->step : NULL;
	v->reason = ar->reason[0] != '\0' ? ar->reason : NULL;
	/* Ended, it is not tried again (its volumes' take-back may be). */
	v->next_retry_ms = ar->failed || ar->end != AEND_NONE ? 0 :
	    ar->next_retry_ms;
	v->tasks = ar->tasks;
	v->ntasks = ar->ntasks;
	task_failure(ar, v);
}

/* One that failed: no tasks, not retried. */
static void
view_failed(const struct refused *r, struct alloc_view *v)
{
	memset(v, 0, sizeof(*v));
	v->doc = r->doc;
	v->file = r->file;
	v->state = "failed";
	v->status = "failed";
	v->step = r->step;
	v->reason = r->reason;
}

size_t
allocs_count(const struct allocs *am)
{
	const struct arun *ar;
	const struct refused *r;
	size_t n = 0;

	TAILQ_FOREACH(ar, &am->runs, entry)
		n++;
	TAILQ_FOREACH(r, &am->refused, entry)
		n += r->doc != NULL;
	return n;
}

bool
allocs_ready(const struct allocs *am)
{
	return am->ready;
}

bool
allocs_get(const struct allocs *am, size_t i, struct alloc_view *v)
{
	const struct arun *ar;
	const struct refused *r;

	TAILQ_FOREACH(ar, &am->runs, entry)
		if (i-- == 0) {
			view(ar, v);
			return true;
		}
	TAILQ_FOREACH(r, &am->refused, entry)
		if (r->doc != NULL && i-- == 0) {
			view_failed(r, v);
			return true;
		}
	return false;
}

bool
allocs_find(struct allocs *am, const char *id, struct alloc_view *v)
{
	const struct arun *ar = find_run(am, id);
	const struct refused *r;

	if (ar != NULL) {
		view(ar, v);
		return true;
	}
	if ((r = find_failed(am, id)) == NULL)
		return false;
	view_failed(r, v);
	return true;
}
