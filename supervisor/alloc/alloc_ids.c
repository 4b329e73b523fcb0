/*
 * alloc_ids.c: an allocation's task id, the uid and gid its sandboxed
 * exec tasks (unprivileged plugins included) run as and the group its
 * volumes are mounted for: allocated by berth-registry from task_ids
 * before its volumes are mounted and its tasks start (the one it holds
 * already after a supervisor restart), and released once the allocation
 * is gone, files and processes.
 *
 * Owns: the request in flight, its retries, and holding the alloc's
 * volumes and tasks until the id is there. Must not: start a sandboxed
 * task without an id, or release an id while a process or file of the
 * alloc may be left (alloc_files.c calls ids_release after the mounter's
 * clean-up).
 */
#include <stdio.h>
#include <stdlib.h>

#include "alloc_int.h"
#include "events.h"
#include "registry_client.h"
#include "xalloc.h"

#define IDS_RETRY_FIRST_MS 1000
#define IDS_RETRY_MAX_MS 30000

struct ids_req {
	struct arun *ar;		/* NULL: the alloc is gone */
	struct event *timer;
	int64_t retry_ms;
	bool in_flight;
};

static void ask(struct ids_req *rq);

/* Exec tasks, plugins too, run sandboxed, as the alloc's id unless they
 * name a user. */
static bool
needs_id(const struct alloc *doc)
{
	size_t i;

	for (i = 0; i < doc->ntasks; i++)
		if (doc->tasks[i].driver == ALLOC_DRIVER_EXEC &&
		    doc->tasks[i].user == NULL)
			return true;
	return false;
}

static void
req_free(struct ids_req *rq)
{
	event_free(rq->timer);
	free(rq);
}

static void
held(struct arun *ar, uint32_t id)
{
	size_t i;

	ar->task_id = id;
	for (i = 0; i < ar->ntasks; i++)
		trun_set_id(ar->tasks[i], id);
	if (!ar->run_wanted)
		return;
	ar->run_wanted = false;
	if (ar->state == ARUN_STOP_MOUNTING)
		stop_tasks(ar);
	else
		volumes_then_run(ar);
}

static void
on_ids(const struct regclient_result *res, void *arg)
{
	struct ids_req *rq = arg;
	struct arun *ar = rq->ar;
	const Berth__IdsReply *r;
	struct timeval tv;

	rq->in_flight = false;
	if (ar == NULL) {
		req_free(rq);
		return;
	}
	if (res->code == BERTH__ERROR_CODE__ERROR_NONE &&
	    (r = res->reply->ids_reply) != NULL && r->id != 0) {
		ar->ids = NULL;
		req_free(rq);
		log_info("alloc %s: its tasks run as uid and gid %u", ar->doc->id,
		    r->id);
		held(ar, r->id);
		return;
	}
	/* All in use, or the registry not there: tried again. */
	log_warnx("alloc %s: no task id from berth-registry: %s: %s; trying "
	    "again in %lld ms", ar->doc->id, ipc_error_name(res->code),
	    res->message, (long long)rq->retry_ms);
	events_record(ar->am->d.events, "alloc", "AllocPending", ar->doc->id,
	    NULL, NULL, "task id: %s; tried again in %lld ms", res->message,
	    (long long)rq->retry_ms);
	tv.tv_sec = rq->retry_ms / 1000;
	tv.tv_usec = (rq->retry_ms % 1000) * 1000;
	evtimer_add(rq->timer, &tv);
	rq->retry_ms = rq->retry_ms * 2 > IDS_RETRY_MAX_MS ? IDS_RETRY_MAX_MS :
	    rq->retry_ms * 2;
}

static void
on_retry(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	ask(arg);
}

static void
ask(struct ids_req *rq)
{
	struct arun *ar = rq->ar;
	const struct allocs_deps *d = &ar->am->d;
	struct regclient_result res = { BERTH__ERROR_CODE__ERROR_CLOSED,
		"berth-registry cannot be reached", NULL };

	rq->in_flight = true;
	if (regclient_allocate_ids(d->registry, ar->doc->id, d->task_id_first,
	    d->task_id_count, on_ids, rq) < 0)
		on_ids(&res, rq);
}

void
ids_start(struct arun *ar)
{
	struct ids_req *rq;

	if (!needs_id(ar->doc))
		return;
	if (ar->am->d.task_id_count == 0) {
		log_warnx("alloc %s: task_ids is empty: its exec tasks cannot "
		    "be given a user", ar->doc->id);
		return;
	}
	rq = xcalloc(1, sizeof(*rq));
	rq->ar = ar;
	rq->retry_ms = IDS_RETRY_FIRST_MS;
	rq->timer = xnonnull(evtimer_new(ar->am->d.base, on_retry, rq),
	    "alloc_ids: a timer");
	ar->ids = rq;
	ask(rq);
}

void
ids_then(struct arun *ar)
{
	if (ar->ids == NULL) {
		volumes_then_run(ar);
		return;
	}
	ar->run_wanted = true;
}

void
ids_free(struct arun *ar)
{
	struct ids_req *rq = ar->ids;

	if (rq == NULL)
		return;
	ar->ids = NULL;
	evtimer_del(rq->timer);
	/* An answer on its way finds the alloc gone. */
	rq->ar = NULL;
	if (!rq->in_flight)
		req_free(rq);
}

static void
on_released(const struct regclient_result *res, void *arg)
{
	char *alloc = arg;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE &&
	    res->code != BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		log_warnx("alloc %s: releasing its task id: %s: %s (it stays "
		    "held until berth-registry is told)", alloc,
		    ipc_error_name(res->code), res->message);
	free(alloc);
}

void
ids_release(struct allocs *am, const char *alloc)
{
	char *a = xstrdup(alloc);

	if (regclient_release_ids(am->d.registry, alloc, on_released, a) < 0) {
		log_warnx("alloc %s: berth-registry cannot be reached to "
		    "release its task id", alloc);
		free(a);
	}
}
