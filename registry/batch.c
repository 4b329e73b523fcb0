/*
 * batch.c: group commit. Requests that arrive in one turn of the event
 * loop run, as they arrive, in one SQLite transaction; each is answered
 * only after that transaction's COMMIT, and its events go out only then.
 *
 * Owns: the open transaction, the requests run in it, and the flush
 * event, which runs at a lower priority than the socket so that
 * everything already readable joins the batch first. Must not: answer a
 * write before it is durable, or let one failing request undo the others
 * (each runs in its own savepoint).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry.h"

int
op_fail(struct op *op, Berth__ErrorCode code, const char *fmt, ...)
{
	va_list ap;

	op->code = code;
	va_start(ap, fmt);
	vsnprintf(op->msg, sizeof(op->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int
op_db_fail(struct op *op, struct store *s, const char *what)
{
	log_warnx("%s: %s: %s", what, s->path, store_errmsg(s));
	return op_fail(op, BERTH__ERROR_CODE__ERROR_INTERNAL,
	    "%s: database error: %s", what, store_errmsg(s));
}

Berth__Envelope *
op_reply(struct op *op, Berth__Envelope__BodyCase body)
{
	Berth__Envelope *rep = arena_alloc(&op->arena, sizeof(*rep));

	berth__envelope__init(rep);
	rep->body_case = body;
	op->rep = rep;
	return rep;
}

int
op_reply_index(struct op *op, uint64_t index)
{
	Berth__Envelope *rep = op_reply(op, BERTH__ENVELOPE__BODY_INDEX_REPLY);
	Berth__IndexReply *ir = arena_alloc(&op->arena, sizeof(*ir));

	berth__index_reply__init(ir);
	ir->index = index;
	rep->index_reply = ir;
	return 0;
}

static void
op_free(struct op *op)
{
	arena_free(&op->arena);
	free(op);
}

static void
on_flush(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	batch_flush(arg);
}

int
batch_init(struct registry *r)
{
	TAILQ_INIT(&r->ops);
	/* The socket has priority 1; the flush waits until it is drained. */
	if ((r->flush = event_new(r->h.base, -1, 0, on_flush, r)) == NULL ||
	    event_priority_set(r->flush, 2) < 0)
		return -1;
	return 0;
}

/* A statement without results, prepared once. */
static int
step(struct store *s, const char *sql)
{
	sqlite3_stmt *st = store_stmt(s, sql);
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static void
run_one(struct registry *r, struct op *op)
{
	struct store *s = &r->store;
	uint64_t index = s->index;
	size_t mark = events_mark(r);

	if (step(s, "SAVEPOINT op") < 0) {
		op_db_fail(op, s, "run_one");
		return;
	}
	if (registry_act(r, op) == 0 && op->rep != NULL) {
		if (step(s, "RELEASE op") == 0)
			return;
		op_db_fail(op, s, "run_one");
	} else if (op->code == BERTH__ERROR_CODE__ERROR_NONE) {
		op_fail(op, BERTH__ERROR_CODE__ERROR_INTERNAL,
		    "%s produced no reply", ipc_body_name(op->body));
	}
	/* Undo this request alone; the batch goes on. */
	if (step(s, "ROLLBACK TO op") < 0 || step(s, "RELEASE op") < 0)
		log_warnx("run_one: cannot undo a failed %s",
		    ipc_body_name(op->body));
	s->index = index;
	events_discard(r, mark);
}

static void
answer(struct registry *r, struct op *op)
{
	Berth__Envelope req = BERTH__ENVELOPE__INIT;
	struct chan *c = r->h.chan;
	int rc;

	if (c == NULL || chan_closed(c))
		return;
	req.request_id = op->request_id;
	if (op->code != BERTH__ERROR_CODE__ERROR_NONE) {
		chan_reply_error(c, &req, op->code, "%s", op->msg);
		return;
	}
	if ((rc = chan_reply(c, &req, op->rep, -1)) == 0)
		return;
	log_warnx("answer: cannot answer %s request %llu: %s",
	    ipc_body_name(op->body), (unsigned long long)op->request_id,
	    strerror(-rc));
	/* Done, but the answer did not fit: say so rather than go silent. */
	chan_reply_error(c, &req, rc == -EMSGSIZE ?
	    BERTH__ERROR_CODE__ERROR_TOO_LARGE :
	    BERTH__ERROR_CODE__ERROR_INTERNAL, "the reply to %s could not be "
	    "sent: %s", ipc_body_name(op->body), strerror(-rc));
}

/*
 * Run a validated request now, inside the transaction of this turn of the
 * loop (opened by the first request of the turn); its answer waits for
 * the commit.
 */
void
batch_add(struct registry *r, const Berth__Envelope *req)
{
	struct op *op;

	if ((op = calloc(1, sizeof(*op))) == NULL)
		fatal("batch_add");
	op->req = req;
	op->request_id = req->request_id;
	op->body = req->body_case;
	if (!r->in_txn) {
		if (store_begin(&r->store) == 0)
			r->in_txn = true;
	}
	if (r->in_txn)
		run_one(r, op);
	else
		op_db_fail(op, &r->store, "batch_add: opening a transaction");
	op->req = NULL;
	TAILQ_INSERT_TAIL(&r->ops, op, entry);
	if (++r->nops >= REG_BATCH_MAX)
		batch_flush(r);
	else
		event_active(r->flush, 0, 0);
}

/* Commit what ran in this turn, then answer it and publish its events. */
void
batch_flush(struct registry *r)
{
	struct store *s = &r->store;
	struct ops ops;
	struct op *op;
	bool ok = false;

	if (TAILQ_EMPTY(&r->ops))
		return;
	TAILQ_INIT(&ops);
	TAILQ_CONCAT(&ops, &r->ops, entry);
	r->batches++;
	r->batched += r->nops;
	r->nops = 0;
	event_del(r->flush);

	if (r->in_txn) {
		r->in_txn = false;
		if (events_trim(r) == 0 && store_commit(s) == 0)
			ok = true;
	}
	if (!ok) {
		log_warnx("batch_flush: %s: transaction failed: %s; failing "
		    "its requests", s->path, store_errmsg(s));
		store_rollback(s);
		events_discard(r, 0);
		TAILQ_FOREACH(op, &ops, entry) {
			if (op->code == BERTH__ERROR_CODE__ERROR_NONE)
				op_fail(op, BERTH__ERROR_CODE__ERROR_INTERNAL,
				    "the registry could not commit: %s",
				    store_errmsg(s));
		}
	}
	while ((op = TAILQ_FIRST(&ops)) != NULL) {
		TAILQ_REMOVE(&ops, op, entry);
		answer(r, op);
		op_free(op);
	}
	if (ok)
		events_committed(r);
}

void
batch_free(struct registry *r)
{
	struct op *op;

	batch_flush(r);
	while ((op = TAILQ_FIRST(&r->ops)) != NULL) {
		TAILQ_REMOVE(&r->ops, op, entry);
		op_free(op);
	}
	if (r->flush != NULL)
		event_free(r->flush);
}
