/*
 * alloc_life.c: one allocation's life cycle (enum arun_state): its
 * volumes set up, its tasks run, and on its stop its tasks stopped, its
 * volumes taken back and what is left cleaned up.
 *
 *   MOUNTING --ok--> RUNNING --stop--> STOPPING --tasks dead-->
 *   UNMOUNTING --ok--> CLEANING --> gone
 *
 * Once every task has ended for good (its restart policy starts it no
 * more), or one has failed so, the alloc ends: the others are stopped,
 * its volumes given back, and it stays ENDED, complete or failed, with
 * its directory (the tasks' logs), until it is stopped; each task's end
 * is kept in the registry, so that a supervisor that restarts finds it
 * ended and starts nothing.
 *
 *   RUNNING --ended--> STOPPING --> UNMOUNTING --> ENDED --stop--> CLEANING
 *
 * A mount that may pass waits (MOUNT_WAIT) and mounts again; one that
 * fails is undone (UNDOING, UNDO_WAIT) and this version of the file is
 * refused until it changes. A stop asked while a mount is in flight
 * (STOP_MOUNTING) waits for its answer. A take-back that fails waits
 * (UNMOUNT_WAIT) and tries again.
 *
 * The API says each state in Nomad's words (arun_status): pending until
 * its tasks run, running, complete once stopped or once its tasks ended
 * well, failed when its set-up or one of its tasks failed for good; a
 * step that waits or failed is said with why and, when it is tried
 * again, when.
 *
 * Must not: read alloc_dir (alloc_dir.c does) or run a task itself (the
 * task runner does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_int.h"
#include "events.h"
#include "xalloc.h"

static void on_retry(evutil_socket_t fd, short ev, void *arg);

static const char *const state_names[] = {
	"mounting", "mount-wait", "stop-mounting", "running", "undoing",
	"undo-wait", "stopping", "unmounting", "unmount-wait", "cleaning",
	"ended",
};

const char *
arun_state_name(enum arun_state s)
{
	return state_names[s];
}

const char *
arun_status(const struct arun *ar)
{
	size_t i;

	if (ar->failed || ar->end == AEND_FAILED)
		return "failed";
	if (ar->end == AEND_COMPLETE)
		return "complete";
	switch (ar->state) {
	case ARUN_MOUNTING:
	case ARUN_MOUNT_WAIT:
		return "pending";
	case ARUN_RUNNING:
		/* One that completed leaves the others running. */
		for (i = 0; i < ar->ntasks; i++)
			if (!trun_ended(ar->tasks[i]) &&
			    strcmp(trun_state(ar->tasks[i]), "running") != 0)
				return "pending";
		return "running";
	case ARUN_STOPPING:
		return "running";	/* its tasks are still alive */
	case ARUN_UNDOING:
	case ARUN_UNDO_WAIT:
		return "failed";
	case ARUN_STOP_MOUNTING:
	case ARUN_UNMOUNTING:
	case ARUN_UNMOUNT_WAIT:
	case ARUN_CLEANING:
	case ARUN_ENDED:
		return "complete";
	}
	return "pending";
}

int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Say what step waits or failed, and why; step NULL: nothing does. */
static void
set_step(struct arun *ar, const char *step, const char *reason)
{
	snprintf(ar->step, sizeof(ar->step), "%s", step != NULL ? step : "");
	snprintf(ar->reason, sizeof(ar->reason), "%s", reason != NULL ?
	    reason : "");
	ar->next_retry_ms = 0;
}

void
alloc_failed(struct allocs *am, const char *alloc, const char *step,
    const char *reason)
{
	events_record(am->d.events, "alloc", "AllocFailed", alloc, NULL, NULL,
	    "%s: %s", step, reason);
}

bool
arun_stopping(const struct arun *ar)
{
	/* Ending on its own, it is stopped only when asked. */
	if (ar->end != AEND_NONE)
		return ar->stop_asked || ar->state == ARUN_CLEANING;
	return ar->state == ARUN_STOP_MOUNTING || ar->state >= ARUN_STOPPING;
}

void
arun_free(struct arun *ar)
{
	size_t i;

	for (i = 0; i < ar->ntasks; i++)
		trun_free(ar->tasks[i]);
	free(ar->tasks);
	ids_free(ar);
	event_free(ar->retry);
	alloc_free(ar->doc);
	free(ar);
}

static void
arm_retry(struct arun *ar, enum arun_state wait)
{
	struct timeval tv = { ar->retry_ms / 1000, (ar->retry_ms % 1000) *
		1000 };

	ar->state = wait;
	ar->next_retry_ms = wall_ms() + ar->retry_ms;
	evtimer_add(ar->retry, &tv);
	ar->retry_ms = ar->retry_ms * 2 > VOLUME_RETRY_MAX_MS ?
	    VOLUME_RETRY_MAX_MS : ar->retry_ms * 2;
}

static void
on_cleaned(const struct priv_result *res, uint32_t unmounted,
    uint32_t removed, void *arg)
{
	struct arun *ar = arg;
	struct allocs *am = ar->am;
	struct alloc *doc;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		log_warnx("alloc %s: berth-mounter could not clean it up: %s: "
		    "%s", ar->doc->id, ipc_error_name(res->code), res->message);
	else
		log_info("alloc %s: stopped; %u mounts and %u entries removed",
		    ar->doc->id, unmounted, removed);
	/* A failed one too: what it held is taken back (AllocFailed said
	 * why); it stays listed as failed. */
	events_record(am->d.events, "alloc", "AllocStopped", ar->doc->id,
	    NULL, NULL, "stopped; it ran from %s", ar->file);
	TAILQ_REMOVE(&am->runs, ar, entry);
	if (ar->refuse) {
		/* Failed: listed as such until its file changes. */
		doc = ar->failed ? ar->doc : NULL;
		if (doc != NULL)
			ar->doc = NULL;
		refuse_after_run(am, ar->file, ar->sig, doc, ar->step,
		    ar->reason);
	}
	arun_free(ar);
	/* A changed file: its new version starts now. */
	scan(am);
}

/* The mounter cleans up; the plugin's mount root too if this was its last. */
static void
clean_up(struct arun *ar)
{
	struct allocs *am = ar->am;
	const struct alloc_task *t = NULL, *u;
	struct arun *other;
	size_t i, k;

	ar->state = ARUN_CLEANING;
	for (i = 0; i < ar->doc->ntasks; i++)
		if (ar->doc->tasks[i].csi.type != ALLOC_CSI_NONE)
			t = &ar->doc->tasks[i];
	TAILQ_FOREACH(other, &am->runs, entry)
		for (k = 0; t != NULL && other != ar && k < other->doc->ntasks;
		    k++) {
			u = &other->doc->tasks[k];
			if (u->csi.type == t->csi.type &&
			    strcmp(u->csi.id, t->csi.id) == 0)
				t = NULL;
		}
	if (t != NULL && am->d.volumes->uses_plugin(am->d.volumes_ctx,
	    t->csi.id))
		t = NULL;
	cleanup_alloc(am, ar->doc->id, t != NULL ?
	    alloc_csi_type_name(t->csi.type) : NULL, t != NULL ? t->csi.id :
	    NULL, on_cleaned, ar);
}

/* Stopped once ended: the tasks' ends are no longer kept. */
static void
forget_tasks(struct arun *ar)
{
	size_t i;

	for (i = 0; i < ar->ntasks; i++)
		trun_forget(ar->tasks[i]);
}

/* Volumes taken back (or none held): the mounter cleans up the rest. */
static void
on_unmounted(enum volmgr_status st, const char *why, void *arg)
{
	struct arun *ar = arg;

	if (st != VOLMGR_OK) {
		log_warnx("alloc %s: taking its volumes back: %s; trying again "
		    "in %lld ms", ar->doc->id, why, (long long)ar->retry_ms);
		if (!ar->failed && ar->end == AEND_NONE)
			set_step(ar, "volumes", why);
		arm_retry(ar, ARUN_UNMOUNT_WAIT);
		return;
	}
	if (ar->end != AEND_NONE && !ar->stop_asked) {
		ar->state = ARUN_ENDED;
		ar->next_retry_ms = 0;
		log_info("alloc %s: %s; its volumes given back, its directory "
		    "kept until it is stopped", ar->doc->id, arun_status(ar));
		return;
	}
	forget_tasks(ar);
	clean_up(ar);
}

static void
volumes_down(struct arun *ar)
{
	struct allocs *am = ar->am;

	ar->state = ARUN_UNMOUNTING;
	ar->next_retry_ms = 0;
	am->d.volumes->unmount(am->d.volumes_ctx, ar->doc->id, ar->doc,
	    on_unmounted, ar);
}

static void
task_stopped(struct trun *tr, void *arg)
{
	struct arun *ar = arg;

	(void)tr;
	if (++ar->dead < ar->ntasks)
		return;
	ar->retry_ms = VOLUME_RETRY_FIRST_MS;
	volumes_down(ar);
}

/* Every task stops; the last one's stop takes the volumes back. */
void
stop_tasks(struct arun *ar)
{
	size_t i, n = ar->ntasks;

	ar->state = ARUN_STOPPING;
	if (n == 0) {
		volumes_down(ar);
		return;
	}
	for (i = 0; i < n; i++)
		trun_stop(ar->tasks[i]);
}

void
arun_stop(struct arun *ar, const char *why)
{
	switch (ar->state) {
	case ARUN_MOUNTING:
		/* A mount in flight ends first; on_mounted stops the tasks. */
		log_info("alloc %s: stopping (%s)", ar->doc->id, why);
		ar->state = ARUN_STOP_MOUNTING;
		return;
	case ARUN_UNDOING:
		/* on_undone stops it, whatever the answer. */
		return;
	case ARUN_MOUNT_WAIT:
	case ARUN_UNDO_WAIT:
	case ARUN_RUNNING:
		evtimer_del(ar->retry);
		log_info("alloc %s: stopping (%s)", ar->doc->id, why);
		stop_tasks(ar);
		return;
	case ARUN_ENDED:
		log_info("alloc %s: stopping (%s)", ar->doc->id, why);
		forget_tasks(ar);
		clean_up(ar);
		return;
	case ARUN_STOPPING:
	case ARUN_UNMOUNTING:
	case ARUN_UNMOUNT_WAIT:
		/* Ending on its own: cleaned up once its volumes are back. */
		if (ar->end != AEND_NONE && !ar->stop_asked) {
			log_info("alloc %s: stopping (%s)", ar->doc->id, why);
			ar->stop_asked = true;
		}
		return;
	case ARUN_STOP_MOUNTING:
	case ARUN_CLEANING:
		return;
	}
}

/*
 * Ended for good: tr the task whose end decided it. The tasks still
 * running are stopped (a failed task takes its siblings along, as in
 * Nomad), then its volumes are given back.
 */
static void
end_alloc(struct arun *ar, struct trun *tr)
{
	struct allocs *am = ar->am;
	size_t i, n = ar->ntasks;

	if (trun_failed(tr)) {
		ar->end = AEND_FAILED;
		set_step(ar, "restart", NULL);
		snprintf(ar->reason, sizeof(ar->reason), "task %s: %s",
		    trun_name(tr), trun_end_reason(tr));
		log_warnx("alloc %s: failed: %s", ar->doc->id, ar->reason);
		alloc_failed(am, ar->doc->id, "restart", ar->reason);
	} else {
		ar->end = AEND_COMPLETE;
		set_step(ar, NULL, NULL);
		snprintf(ar->reason, sizeof(ar->reason), "every task exited "
		    "with status 0 and none is restarted; last, task %s: %s",
		    trun_name(tr), trun_end_reason(tr));
		log_info("alloc %s: complete: %s", ar->doc->id, ar->reason);
		events_record(am->d.events, "alloc", "AllocComplete",
		    ar->doc->id, NULL, NULL, "%s", ar->reason);
	}
	evtimer_del(ar->retry);
	ar->state = ARUN_STOPPING;
	ar->retry_ms = VOLUME_RETRY_FIRST_MS;
	ar->dead = 0;
	for (i = 0; i < n; i++)
		ar->dead += trun_ended(ar->tasks[i]);
	if (ar->dead == n) {
		volumes_down(ar);
		return;
	}
	/* The last stop (perhaps at once) takes the volumes back. */
	for (i = 0; i < n; i++)
		if (!trun_ended(ar->tasks[i]))
			trun_stop(ar->tasks[i]);
}

/* Ends for good when one task failed so, or every task has ended. */
static void
check_end(struct arun *ar, struct trun *tr)
{
	size_t i, nended = 0;

	if (ar->state != ARUN_RUNNING || ar->end != AEND_NONE)
		return;
	for (i = 0; i < ar->ntasks; i++) {
		if (trun_failed(ar->tasks[i]) && (tr == NULL ||
		    !trun_failed(tr)))
			tr = ar->tasks[i];
		if (trun_ended(ar->tasks[i])) {
			nended++;
			if (tr == NULL)
				tr = ar->tasks[i];
		}
	}
	if (tr != NULL && (trun_failed(tr) || nended == ar->ntasks))
		end_alloc(ar, tr);
}

void
arun_task_ended(struct trun *tr, void *arg)
{
	check_end(arg, tr);
}

/* Start every task not running yet (adopted ones run already). */
void
run_tasks(struct arun *ar)
{
	size_t i;

	ar->state = ARUN_RUNNING;
	for (i = 0; i < ar->ntasks; i++)
		trun_run(ar->tasks[i]);
	/* One that ended while its volumes were set up (adopted). */
	check_end(ar, NULL);
}

/* A failed mount, undone: this version of the file does not run. */
static void
on_undone(enum volmgr_status st, const char *why, void *arg)
{
	struct arun *ar = arg;

	if (st != VOLMGR_OK) {
		log_warnx("alloc %s: undoing its volumes: %s; trying again in "
		    "%lld ms", ar->doc->id, why, (long long)ar->retry_ms);
		arm_retry(ar, ARUN_UNDO_WAIT);
		return;
	}
	ar->next_retry_ms = 0;
	ar->refuse = true;
	log_info("alloc %s: stopping (%s)", ar->doc->id, "its volumes could "
	    "not be set up; it starts again when its file changes");
	stop_tasks(ar);
}

static void
undo(struct arun *ar)
{
	ar->state = ARUN_UNDOING;
	ar->am->d.volumes->unmount(ar->am->d.volumes_ctx, ar->doc->id,
	    ar->doc, on_undone, ar);
}

/*
 * A wait that lasted volume_wait: the alloc fails, saying what it waited
 * for (a plugin whose instance is not healthy names it and says so).
 * Otherwise the next try comes no later than the bound. why is the
 * reason, made the failure's when the wait is over.
 */
static bool
wait_over(struct arun *ar, char *why, size_t n)
{
	int64_t bound = ar->am->d.volume_wait_ms, now = wall_ms(), left;
	char last[sizeof(ar->reason)];

	if (ar->waiting_since_ms == 0)
		ar->waiting_since_ms = now;
	if (bound <= 0)
		return false;
	left = ar->waiting_since_ms + bound - now;
	if (left > 0) {
		if (ar->retry_ms > left)
			ar->retry_ms = left;
		return false;
	}
	snprintf(last, sizeof(last), "%s", why);
	/* Cut short to the reason's room, as every reason is. */
	if ((size_t)snprintf(why, n, "waited %lld%s (volume_wait) and gave "
	    "up: %s", (long long)(bound % 1000 == 0 ? bound / 1000 : bound),
	    bound % 1000 == 0 ? "s" : "ms", last) >= n)
		log_debug("alloc %s: its reason cut short", ar->doc->id);
	return true;
}

static void
on_mounted(enum volmgr_status st, const char *reason, void *arg)
{
	struct arun *ar = arg;
	char why[sizeof(ar->reason)];

	if (ar->state == ARUN_STOP_MOUNTING) {
		log_info("alloc %s: stopping (%s)", ar->doc->id,
		    "stopped while its volumes were set up");
		stop_tasks(ar);
		return;
	}
	if (st == VOLMGR_OK) {
		log_info("alloc %s: %zu volume%s in place", ar->doc->id,
		    ar->doc->nvolumes, ar->doc->nvolumes == 1 ? "" : "s");
		ar->retry_ms = VOLUME_RETRY_FIRST_MS;
		ar->waiting_since_ms = 0;
		set_step(ar, NULL, NULL);
		run_tasks(ar);
		return;
	}
	snprintf(why, sizeof(why), "%s", reason);
	if (st == VOLMGR_RETRY && wait_over(ar, why, sizeof(why)))
		st = VOLMGR_FAILED;
	if (st != VOLMGR_RETRY)
		ar->waiting_since_ms = 0;
	if (st == VOLMGR_RETRY) {
		/* Said once per reason: a retry that goes on is no news. */
		if (strcmp(ar->reason, why) != 0)
			events_record(ar->am->d.events, "alloc", "AllocPending",
			    ar->doc->id, NULL, NULL, "volumes: %s; tried again "
			    "in %lld ms", why, (long long)ar->retry_ms);
		set_step(ar, "volumes", why);
		/* Kept as far as it went; the next try goes on from there.
		 * The first wait is routine (after a restart the plugin
		 * registers again a moment after the allocs are read):
		 * only one that lasts is a warning. */
		if (ar->retry_ms <= VOLUME_RETRY_FIRST_MS)
			log_info("alloc %s: volumes not in place yet: %s; "
			    "trying again in %lld ms", ar->doc->id, why,
			    (long long)ar->retry_ms);
		else
			log_warnx("alloc %s: volumes not in place yet: %s; "
			    "trying again in %lld ms", ar->doc->id, why,
			    (long long)ar->retry_ms);
		arm_retry(ar, ARUN_MOUNT_WAIT);
		return;
	}
	if (ar->adopted) {
		/* Adopted tasks run on what is in place: leave it. */
		log_warnx("alloc %s: checking its volumes: %s", ar->doc->id,
		    why);
		ar->state = ARUN_RUNNING;
		return;
	}
	log_warnx("alloc %s: volumes failed, undoing what was done; tasks not "
	    "started: %s", ar->doc->id, why);
	ar->failed = true;
	set_step(ar, "volumes", why);
	alloc_failed(ar->am, ar->doc->id, "volumes", why);
	ar->retry_ms = VOLUME_RETRY_FIRST_MS;
	undo(ar);
}

/* Mounted as the alloc's group: its task id, held by now (0: none). */
static void
mount_volumes(struct arun *ar)
{
	ar->state = ARUN_MOUNTING;
	ar->am->d.volumes->mount(ar->am->d.volumes_ctx, ar->doc,
	    (gid_t)ar->task_id, on_mounted, ar);
}

void
volumes_then_run(struct arun *ar)
{
	if (ar->doc->nvolumes == 0) {
		run_tasks(ar);
		return;
	}
	mount_volumes(ar);
}

static void
on_retry(evutil_socket_t fd, short ev, void *arg)
{
	struct arun *ar = arg;

	(void)fd;
	(void)ev;
	switch (ar->state) {
	case ARUN_MOUNT_WAIT:
		mount_volumes(ar);
		return;
	case ARUN_UNDO_WAIT:
		/* A failed version does not start again until its file
		 * changes: undo again. */
		undo(ar);
		return;
	case ARUN_UNMOUNT_WAIT:
		volumes_down(ar);
		return;
	default:
		return;
	}
}

/* Each task's runner, adopting what was kept; false when one cannot be. */
static bool
make_tasks(struct arun *ar, struct kept **claimed)
{
	struct allocs *am = ar->am;
	const struct alloc *doc = ar->doc;
	const Berth__TaskHandle *th;
	size_t i, k;

	for (i = 0; i < doc->ntasks; i++) {
		const struct alloc_task *t = &doc->tasks[i];

		claimed[i] = claim(am, doc->id, t->name, alloc_driver_name(
		    t->driver));
		th = claimed[i] != NULL ? claimed[i]->th : NULL;
		/* An end kept for another version of the file: not ours. */
		if (th != NULL && th->end != NULL && strcmp(th->end->version,
		    ar->sig) != 0)
			th = NULL;
		ar->adopted |= th != NULL && th->end == NULL;
		ar->tasks[i] = trun_new(&am->task, doc, t, th, task_stopped,
		    ar);
		if (ar->tasks[i] == NULL) {
			log_warnx("alloc file %s refused: task %s: its plugin "
			    "socket path is too long", ar->file, t->name);
			/* Their handles go back: stale, they are stopped. */
			for (k = 0; k <= i; k++)
				if (claimed[k] != NULL)
					claimed[k]->claimed = false;
			for (k = 0; k < i; k++)
				trun_free(ar->tasks[k]);
			ar->ntasks = 0;
			return false;
		}
		trun_set_version(ar->tasks[i], ar->sig);
		ar->ntasks++;
	}
	return true;
}

/*
 * It had ended before the supervisor restarted (a task's end was kept):
 * it ends again, and nothing starts; a task still running is adopted to
 * be stopped.
 */
static bool
ended_before(struct arun *ar)
{
	size_t i, nended = 0;
	bool failed = false;

	for (i = 0; i < ar->ntasks; i++) {
		nended += trun_ended(ar->tasks[i]);
		failed |= trun_failed(ar->tasks[i]);
	}
	if (!failed && nended < ar->ntasks)
		return false;
	log_info("alloc %s: it had ended before this supervisor started: "
	    "nothing of it starts", ar->doc->id);
	for (i = 0; i < ar->ntasks; i++)
		trun_adopt(ar->tasks[i]);
	ar->state = ARUN_RUNNING;
	check_end(ar, NULL);
	return true;
}

void
arun_start(struct allocs *am, struct alloc *doc, const char *file,
    const char *sig)
{
	struct kept **claimed;
	struct arun *ar;
	size_t i;

	ar = xcalloc(1, sizeof(*ar));
	ar->tasks = xcalloc(doc->ntasks + 1, sizeof(*ar->tasks));
	claimed = xcalloc(doc->ntasks + 1, sizeof(*claimed));
	ar->am = am;
	ar->doc = doc;
	ar->retry_ms = VOLUME_RETRY_FIRST_MS;
	if ((ar->retry = evtimer_new(am->d.base, on_retry, ar)) == NULL)
		oom("arun_start");
	snprintf(ar->file, sizeof(ar->file), "%s", file);
	snprintf(ar->sig, sizeof(ar->sig), "%s", sig);
	if (!make_tasks(ar, claimed)) {
		free(claimed);
		ar->doc = NULL;
		arun_free(ar);
		alloc_failed(am, doc->id, "plugin", "its plugin socket path is "
		    "too long");
		refuse_after_run(am, file, sig, doc, "plugin", "its plugin "
		    "socket path is too long");
		return;
	}
	free(claimed);
	TAILQ_INSERT_TAIL(&am->runs, ar, entry);
	if (ended_before(ar))
		return;
	log_info("alloc %s: running %zu task%s from %s", doc->id, ar->ntasks,
	    ar->ntasks == 1 ? "" : "s", file);
	events_record(am->d.events, "alloc", "AllocStarted", doc->id, NULL,
	    NULL, "running %zu task%s from %s", ar->ntasks, ar->ntasks == 1 ?
	    "" : "s", file);
	/*
	 * A task starts only once its volumes are in place. Tasks still
	 * running from before a restart are adopted at once; the volume
	 * manager then finds their volumes in place and keeps them. One
	 * that ended meanwhile (after a reboot, its volumes are gone too)
	 * starts with the others, once the volumes are in place. Its task
	 * id comes first: the volumes are mounted for its group.
	 */
	if (ar->adopted && doc->nvolumes > 0)
		for (i = 0; i < ar->ntasks; i++)
			trun_adopt(ar->tasks[i]);
	ar->state = ARUN_MOUNTING;
	ids_start(ar);
	ids_then(ar);
}
