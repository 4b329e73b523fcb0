/*
 * events.c: the registry's event stream: the event log, the ring of
 * recent events, and the subscribers.
 *
 * An event is written to the log table in the transaction of the change
 * it describes and delivered only after that transaction commits. Each
 * subscriber has a cursor (the last index sent) and a window of events in
 * flight that it acknowledges; what it has not been sent yet is its queue,
 * read from the ring or, when it is further behind, from the log. A live
 * subscriber whose queue grows past EV_LAG_MAX is sent a Resync and
 * dropped: it catches up from the log by subscribing again.
 *
 * Must not: block or buffer without bound for a slow subscriber, or
 * deliver an event whose change might still be rolled back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

#define EV_RING_MAX	4096	/* recent events kept in memory */
#define EV_WINDOW	128	/* unacknowledged events per subscriber */
#define EV_LAG_MAX	1024	/* a live subscriber's queue bound */
/*
 * Every subscriber's window and a full batch of replies together stay
 * within the channel's send queue (BERTH_IPC_QUEUE_MAX), so an event is
 * never dropped for want of room there.
 */
#define EV_SUBS_MAX	16
_Static_assert(EV_SUBS_MAX * EV_WINDOW + REG_BATCH_MAX < BERTH_IPC_QUEUE_MAX,
    "subscriber windows and a batch of replies must fit the send queue");
#define EV_TRIM_EVERY	256	/* trim the log after this many events */

struct subscriber {
	TAILQ_ENTRY(subscriber) entry;
	uint64_t id;
	uint64_t cursor;		/* the last index sent */
	uint64_t inflight[EV_WINDOW];	/* sent, not acknowledged, FIFO */
	size_t head, n;
	bool live;			/* has caught up once */
	bool armed;			/* its subscribe is committed */
};

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)			\
	for ((var) = TAILQ_FIRST(head);					\
	    (var) != NULL && ((tvar) = TAILQ_NEXT(var, field), 1);	\
	    (var) = (tvar))
#endif

void
events_init(struct registry *r)
{
	struct events *e = &r->ev;

	TAILQ_INIT(&e->subs);
	e->next_sub = 1;
	if ((e->ring = calloc(EV_RING_MAX, sizeof(*e->ring))) == NULL)
		fatal("events_init");
	e->ring_floor = r->store.committed;
	r->ev.staged_floor = r->store.event_floor;
}

Berth__Event *
events_new(Berth__EventType type, uint64_t index)
{
	Berth__Event *ev;

	if ((ev = malloc(sizeof(*ev))) == NULL)
		fatal("events_new");
	berth__event__init(ev);
	ev->type = type;
	ev->index = index;
	return ev;
}

int
events_emit(struct registry *r, Berth__Event *ev)
{
	struct events *e = &r->ev;
	sqlite3_stmt *st;
	uint8_t *buf;
	size_t len;
	int rc;

	len = berth__event__get_packed_size(ev);
	if ((buf = malloc(len ? len : 1)) == NULL)
		fatal("events_emit");
	berth__event__pack(ev, buf);
	st = store_stmt(&r->store, "INSERT INTO events (idx, body) VALUES "
	    "(?1, ?2)");
	sqlite3_bind_int64(st, 1, (int64_t)ev->index);
	sqlite3_bind_blob(st, 2, buf, len, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	free(buf);
	if (rc != SQLITE_DONE) {
		berth__event__free_unpacked(ev, NULL);
		return -1;
	}
	if (e->npending == e->cappending) {
		e->cappending = e->cappending ? 2 * e->cappending : 64;
		e->pending = realloc(e->pending,
		    e->cappending * sizeof(*e->pending));
		if (e->pending == NULL)
			fatal("events_emit");
	}
	e->pending[e->npending++] = ev;
	return 0;
}

size_t
events_mark(struct registry *r)
{
	return r->ev.npending;
}

static void
sub_free(struct registry *r, struct subscriber *sub)
{
	TAILQ_REMOVE(&r->ev.subs, sub, entry);
	r->ev.nsubs--;
	free(sub);
}

/* Forget the batch's events from mark on; mark 0 also undoes subscribes. */
void
events_discard(struct registry *r, size_t mark)
{
	struct events *e = &r->ev;
	struct subscriber *sub, *tmp;

	while (e->npending > mark)
		berth__event__free_unpacked(e->pending[--e->npending], NULL);
	if (mark == 0) {
		TAILQ_FOREACH_SAFE(sub, &e->subs, entry, tmp)
			if (!sub->armed)
				sub_free(r, sub);
		r->ev.staged_floor = r->store.event_floor;
	}
}

/* Keep the log to its bound; runs inside the batch's transaction. */
int
events_trim(struct registry *r)
{
	sqlite3_stmt *st;
	int64_t cut;
	int rc;

	r->ev.since_trim += r->ev.npending;
	if (r->ev.since_trim < EV_TRIM_EVERY)
		return 0;
	r->ev.since_trim = 0;
	st = store_stmt(&r->store, "SELECT idx FROM events ORDER BY idx DESC "
	    "LIMIT 1 OFFSET ?1");
	sqlite3_bind_int(st, 1, REG_EVENT_LOG_MAX);
	rc = sqlite3_step(st);
	cut = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? 0 : -1;
	st = store_stmt(&r->store, "DELETE FROM events WHERE idx <= ?1");
	sqlite3_bind_int64(st, 1, cut);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return -1;
	st = store_stmt(&r->store, "UPDATE meta SET value = ?1 WHERE key = "
	    "'event_floor'");
	sqlite3_bind_int64(st, 1, cut);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return -1;
	r->ev.staged_floor = (uint64_t)cut;
	return 0;
}

static Berth__Event *
ring_at(struct events *e, size_t i)
{
	return e->ring[(e->ring_start + i) % EV_RING_MAX];
}

/* The first ring position with an index after cursor. */
static size_t
ring_find(struct events *e, uint64_t cursor)
{
	size_t lo = 0, hi = e->ring_len, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (ring_at(e, mid)->index <= cursor)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
send_event(struct registry *r, struct subscriber *sub, Berth__Event *ev)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__EventNotice en = BERTH__EVENT_NOTICE__INIT;
	int rc;

	ev->subscription = sub->id;
	en.event = ev;
	env.body_case = BERTH__ENVELOPE__BODY_EVENT_NOTICE;
	env.event_notice = &en;
	rc = chan_notice(r->h.chan, &env, -1);
	ev->subscription = 0;
	if (rc < 0)
		return rc;
	sub->inflight[(sub->head + sub->n) % EV_WINDOW] = ev->index;
	sub->n++;
	sub->cursor = ev->index;
	return 0;
}

static void
resync(struct registry *r, struct subscriber *sub, const char *why)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Resync rs = BERTH__RESYNC__INIT;

	log_warnx("resync: subscription %llu %s; told to catch up from index "
	    "%llu", (unsigned long long)sub->id, why,
	    (unsigned long long)sub->cursor);
	rs.subscription = sub->id;
	rs.from_index = sub->cursor;
	env.body_case = BERTH__ENVELOPE__BODY_RESYNC;
	env.resync = &rs;
	if (chan_notice(r->h.chan, &env, -1) < 0)
		log_warnx("resync: cannot send the resync notice");
	sub_free(r, sub);
}

/*
 * Send from the log what lies between cursor and the ring: 0, 1 when the
 * socket is full, -1 on a database error.
 */
static int
pump_log(struct registry *r, struct subscriber *sub)
{
	struct events *e = &r->ev;
	Berth__Event *ev;
	sqlite3_stmt *st;
	size_t want = EV_WINDOW - sub->n, got = 0;
	int rc, sent;

	st = store_stmt(&r->store, "SELECT idx, body FROM events WHERE idx > "
	    "?1 AND idx <= ?2 ORDER BY idx LIMIT ?3");
	sqlite3_bind_int64(st, 1, (int64_t)sub->cursor);
	sqlite3_bind_int64(st, 2, (int64_t)e->ring_floor);
	sqlite3_bind_int64(st, 3, (int64_t)want);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ev = berth__event__unpack(NULL, sqlite3_column_bytes(st, 1),
		    sqlite3_column_blob(st, 1));
		if (ev == NULL) {
			log_warnx("pump_log: event %lld in %s does not decode; "
			    "skipped", sqlite3_column_int64(st, 0),
			    r->store.path);
			sub->cursor = sqlite3_column_int64(st, 0);
			continue;
		}
		sent = send_event(r, sub, ev);
		berth__event__free_unpacked(ev, NULL);
		if (sent < 0) {
			sqlite3_reset(st);
			return 1;
		}
		got++;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return -1;
	if (got < want)
		sub->cursor = e->ring_floor;	/* nothing else below the ring */
	return 0;
}

/* Send what the window allows. */
static void
pump(struct registry *r, struct subscriber *sub)
{
	struct events *e = &r->ev;
	size_t pos;
	int rc;

	if (!sub->armed || r->h.chan == NULL || chan_closed(r->h.chan))
		return;
	while (sub->n < EV_WINDOW) {
		if (sub->cursor < e->ring_floor) {
			if (sub->cursor < r->store.event_floor) {
				resync(r, sub, "fell behind the event log");
				return;
			}
			if ((rc = pump_log(r, sub)) != 0) {
				if (rc < 0)
					log_warnx("pump: reading the event "
					    "log: %s", store_errmsg(&r->store));
				return;
			}
			if (sub->cursor < e->ring_floor)
				continue;
		}
		pos = ring_find(e, sub->cursor);
		if (pos == e->ring_len) {
			sub->live = true;
			return;
		}
		if (sub->live && e->ring_len - pos > EV_LAG_MAX) {
			resync(r, sub, "is too slow");
			return;
		}
		if (send_event(r, sub, ring_at(e, pos)) < 0)
			return;	/* the socket is full: the next wake-up */
	}
	/* A full window: is the queue behind it still bounded? */
	if (sub->live && sub->cursor >= e->ring_floor &&
	    e->ring_len - ring_find(e, sub->cursor) > EV_LAG_MAX)
		resync(r, sub, "is too slow");
}

void
events_committed(struct registry *r)
{
	struct events *e = &r->ev;
	struct subscriber *sub, *tmp;
	Berth__Event *old;
	size_t i;

	r->store.event_floor = r->ev.staged_floor;
	for (i = 0; i < e->npending; i++) {
		if (e->ring_len == EV_RING_MAX) {
			old = e->ring[e->ring_start];
			e->ring_floor = old->index;
			berth__event__free_unpacked(old, NULL);
			e->ring_start = (e->ring_start + 1) % EV_RING_MAX;
			e->ring_len--;
		}
		e->ring[(e->ring_start + e->ring_len) % EV_RING_MAX] =
		    e->pending[i];
		e->ring_len++;
	}
	e->npending = 0;
	TAILQ_FOREACH_SAFE(sub, &e->subs, entry, tmp) {
		sub->armed = true;
		pump(r, sub);
	}
}

int
events_subscribe(struct registry *r, struct op *op)
{
	const Berth__Subscribe *in = op->req->subscribe;
	struct events *e = &r->ev;
	struct subscriber *sub;
	Berth__SubscribeReply *sr;
	Berth__Envelope *rep;
	uint64_t head = r->store.index;

	if (!in->live_only && in->from_index > head)
		return op_fail(op, BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
		    "from_index %llu is past the newest index %llu",
		    (unsigned long long)in->from_index,
		    (unsigned long long)head);
	if (e->nsubs >= EV_SUBS_MAX)
		return op_fail(op, BERTH__ERROR_CODE__ERROR_CONFLICT,
		    "already %d subscriptions on this connection",
		    EV_SUBS_MAX);
	if ((sub = calloc(1, sizeof(*sub))) == NULL)
		fatal("events_subscribe");
	sub->id = e->next_sub++;
	sub->cursor = in->live_only ? head : in->from_index;
	rep = op_reply(op, BERTH__ENVELOPE__BODY_SUBSCRIBE_REPLY);
	sr = arena_alloc(&op->arena, sizeof(*sr));
	berth__subscribe_reply__init(sr);
	if (sub->cursor < r->ev.staged_floor) {
		sr->gap = true;
		sub->cursor = r->ev.staged_floor;
	}
	sr->subscription = sub->id;
	sr->head_index = head;
	sr->oldest_index = r->ev.staged_floor + 1;
	rep->subscribe_reply = sr;
	TAILQ_INSERT_TAIL(&e->subs, sub, entry);
	e->nsubs++;
	return 0;
}

static struct subscriber *
sub_find(struct registry *r, uint64_t id)
{
	struct subscriber *sub;

	TAILQ_FOREACH(sub, &r->ev.subs, entry)
		if (sub->id == id && sub->armed)
			return sub;
	return NULL;
}

void
events_unsubscribe(struct registry *r, Berth__Envelope *env)
{
	Berth__Envelope rep = BERTH__ENVELOPE__INIT;
	Berth__Ack ack = BERTH__ACK__INIT;
	struct subscriber *sub;

	if ((sub = sub_find(r, env->unsubscribe->subscription)) == NULL) {
		chan_reply_error(r->h.chan, env,
		    BERTH__ERROR_CODE__ERROR_NOT_FOUND,
		    "no subscription %llu",
		    (unsigned long long)env->unsubscribe->subscription);
		return;
	}
	sub_free(r, sub);
	rep.body_case = BERTH__ENVELOPE__BODY_ACK;
	rep.ack = &ack;
	chan_reply(r->h.chan, env, &rep, -1);
}

void
events_ack(struct registry *r, const Berth__EventAck *ack)
{
	struct subscriber *sub;

	/* A late ack for a subscription that was dropped is harmless. */
	if ((sub = sub_find(r, ack->subscription)) == NULL)
		return;
	while (sub->n > 0 && sub->inflight[sub->head] <= ack->index) {
		sub->head = (sub->head + 1) % EV_WINDOW;
		sub->n--;
	}
	pump(r, sub);
}

void
events_free(struct registry *r)
{
	struct events *e = &r->ev;
	struct subscriber *sub;
	size_t i;

	events_discard(r, 0);
	while ((sub = TAILQ_FIRST(&e->subs)) != NULL)
		sub_free(r, sub);
	for (i = 0; i < e->ring_len; i++)
		berth__event__free_unpacked(ring_at(e, i), NULL);
	free(e->ring);
	free(e->pending);
}
