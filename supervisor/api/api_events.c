/*
 * api_events.c: GET /v1/events?index=N&timeout=D, the supervisor's event
 * log from an index, as a long poll: answered at once when events after
 * N are kept, else when the next one is recorded or after the timeout
 * (default 30s, at most 5m; "0" answers at once).
 *
 * The answer: {"epoch": this supervisor's, "index": the last index,
 * "first": the oldest kept, "lost": true when events after N may have
 * been missed, "events": [...]}, each event's "time" in RFC 3339 (UTC).
 * A client goes on from "index" with "epoch" (epoch=E). The index starts
 * over with each supervisor, and its epoch changes: when N is beyond the
 * last index, or E is not this supervisor's epoch, the answer is at once
 * "lost": true with every event kept (as from index 0), so a follower
 * never misses events silently. Must not: answer from inside
 * events_record() (deep in a manager's callback): a wake-up event runs
 * the answers from a fresh turn of the loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "duration.h"
#include "events.h"
#include "xalloc.h"

struct api_waiter {
	struct api *api;
	struct evhttp_request *req;
	uint64_t after;
	struct event *timer;
	TAILQ_ENTRY(api_waiter) entry;
};

/* lost: the client's index or epoch is not this log's: from the start. */
static void
answer(struct api *api, struct evhttp_request *req, uint64_t after,
    bool lost)
{
	struct api_call c = { api, &api->d, req, NULL, { 0 }, NULL, 0 };
	struct events *ev = api->d.events;
	const struct berth_event *e;
	char when[EVENTS_TIME_BUF];
	json_t *root, *list;

	root = api_object();
	list = api_array();
	for (e = events_after(ev, after); e != NULL;
	    e = events_after(ev, e->index)) {
		json_t *o;

		events_time(e, when, sizeof(when));
		o = api_pack("{s:I, s:s, s:I, s:s, s:s, s:s}", "index",
		    (json_int_t)e->index, "time", when, "time_ms",
		    (json_int_t)e->time_ms, "topic", e->topic, "type", e->type,
		    "message", e->message);
		if (o == NULL)
			continue;
		if (e->alloc[0] != '\0')
			api_set(o, "alloc", api_pack("s", e->alloc));
		if (e->task[0] != '\0')
			api_set(o, "task", api_pack("s", e->task));
		if (e->plugin[0] != '\0')
			api_set(o, "plugin",
			    api_pack("s", e->plugin));
		api_append(list, o);
	}
	api_set(root, "epoch", api_pack("I", (json_int_t)events_epoch(ev)));
	api_set(root, "index", api_pack("I", (json_int_t)
	    events_last(ev)));
	api_set(root, "first", api_pack("I", (json_int_t)
	    events_first(ev)));
	api_set(root, "lost", json_boolean(lost || (events_first(ev) > 0 &&
	    after + 1 < events_first(ev))));
	api_set(root, "events", list);
	api_reply(&c, 200, root);
}

static void
waiter_free(struct api_waiter *w)
{
	TAILQ_REMOVE(&w->api->waiters, w, entry);
	w->api->nwaiters--;
	evhttp_connection_set_closecb(evhttp_request_get_connection(w->req),
	    NULL, NULL);
	event_free(w->timer);
	free(w);
}

static void
waiter_answer(struct api_waiter *w)
{
	struct api *api = w->api;
	struct evhttp_request *req = w->req;
	uint64_t after = w->after;

	waiter_free(w);
	answer(api, req, after, false);
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	waiter_answer(arg);
}

/* The client went away: evhttp frees the request after this. */
static void
on_closed(struct evhttp_connection *con, void *arg)
{
	(void)con;
	waiter_free(arg);
}

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct api *api = arg;
	struct api_waiter *w, *next;
	uint64_t last = events_last(api->d.events);

	(void)fd;
	(void)what;
	for (w = TAILQ_FIRST(&api->waiters); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (w->after < last)
			waiter_answer(w);
	}
}

static void
notify(void *arg)
{
	struct api *api = arg;

	if (!TAILQ_EMPTY(&api->waiters))
		event_active(api->wake, 0, 0);
}

void
api_events(struct api_call *c)
{
	struct api *api = c->api;
	const char *index = api_param(c, "index"), *timeout = api_param(c,
	    "timeout"), *epoch = api_param(c, "epoch");
	int64_t wait_ms = API_POLL_DEFAULT_MS;
	unsigned long long after = 0, their = 0;
	struct api_waiter *w;
	struct timeval tv;
	char why[200], *end;

	if (index != NULL) {
		errno = 0;
		after = strtoull(index, &end, 10);
		if (*index == '\0' || *index == '-' || *end != '\0' ||
		    errno != 0) {
			api_error(c, 400, "index must be a whole number, not "
			    "\"%s\"", index);
			return;
		}
	}
	if (epoch != NULL) {
		errno = 0;
		their = strtoull(epoch, &end, 10);
		if (*epoch == '\0' || *epoch == '-' || *end != '\0' ||
		    errno != 0) {
			api_error(c, 400, "epoch must be a whole number, not "
			    "\"%s\"", epoch);
			return;
		}
	}
	if (timeout != NULL) {
		if (strcmp(timeout, "0") == 0)
			wait_ms = 0;
		else if (duration_parse(timeout, &wait_ms, why,
		    sizeof(why)) < 0) {
			api_error(c, 400, "timeout: %s", why);
			return;
		}
		if (wait_ms > API_POLL_MAX_MS) {
			api_error(c, 400, "timeout may be at most 5m, not %s",
			    timeout);
			return;
		}
	}
	/* Another supervisor's index: start over, and say so. */
	if (after > events_last(api->d.events) || (epoch != NULL &&
	    their != (unsigned long long)events_epoch(api->d.events))) {
		answer(api, c->req, 0, true);
		return;
	}
	if (after < events_last(api->d.events) || wait_ms == 0) {
		answer(api, c->req, after, false);
		return;
	}
	if (api->nwaiters >= API_POLL_MAX_WAITERS) {
		api_error(c, 503, "%d event polls are waiting already; try "
		    "again later", API_POLL_MAX_WAITERS);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	w->timer = evtimer_new(api->d.base, on_timeout, w);
	xnonnull(w->timer, "evtimer_new");
	w->api = api;
	w->req = c->req;
	w->after = after;
	TAILQ_INSERT_TAIL(&api->waiters, w, entry);
	api->nwaiters++;
	evhttp_connection_set_closecb(evhttp_request_get_connection(c->req),
	    on_closed, w);
	tv.tv_sec = wait_ms / 1000;
	tv.tv_usec = (wait_ms % 1000) * 1000;
	evtimer_add(w->timer, &tv);
}

void
api_events_init(struct api *api)
{
	api->wake = event_new(api->d.base, -1, 0, on_wake, api);
	xnonnull(api->wake, "event_new");
	events_set_notify(api->d.events, notify, api);
}

void
api_events_free(struct api *api)
{
	if (api->d.events != NULL)
		events_set_notify(api->d.events, NULL, NULL);
	while (!TAILQ_EMPTY(&api->waiters))
		waiter_free(TAILQ_FIRST(&api->waiters));
	if (api->wake != NULL)
		event_free(api->wake);
}
