/*
 * ids.c: the uids and gids of tasks (one number serves as both), one per
 * allocation, from the range root configured, the way systemd's
 * DynamicUser hands them out.
 *
 * Owns: the task_ids table. An id is held by one alloc from AllocateIds
 * until ReleaseIds; asking again for an alloc that holds one gives the
 * same one (a restarted supervisor re-adopting its tasks). Ids never used
 * come first, lowest first; only when the range has none left is a
 * released one reused, the one released longest ago. Must not: hand out
 * an id outside the request's range, or one that an alloc holds; decide
 * when an alloc is gone (the supervisor releases, after its files and
 * processes are).
 */
#include <stdio.h>
#include <string.h>

#include "registry.h"

/* The alloc's id, if it holds one. */
static int
held(struct registry *r, const char *alloc, int64_t *id)
{
	sqlite3_stmt *st;
	int rc;

	st = store_stmt(&r->store, "SELECT id FROM task_ids WHERE alloc = ?1");
	sqlite3_bind_text(st, 1, alloc, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* An id of [first, end) for a new holder: 1 and *id, 0 if none is free. */
static int
pick(struct registry *r, int64_t first, int64_t end, int64_t *id)
{
	static const char *const sql[] = {
		/* The lowest never used: the first, or one past a used id. */
		"SELECT ?1 WHERE NOT EXISTS (SELECT 1 FROM task_ids WHERE "
		"id = ?1) UNION ALL SELECT id + 1 FROM task_ids t WHERE "
		"id >= ?1 AND id + 1 < ?2 AND NOT EXISTS (SELECT 1 FROM "
		"task_ids u WHERE u.id = t.id + 1) ORDER BY 1 LIMIT 1",
		/* The free one released longest ago. */
		"SELECT id FROM task_ids WHERE alloc IS NULL AND id >= ?1 AND "
		"id < ?2 ORDER BY released, id LIMIT 1",
	};
	sqlite3_stmt *st;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		st = store_stmt(&r->store, sql[i]);
		sqlite3_bind_int64(st, 1, first);
		sqlite3_bind_int64(st, 2, end);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			*id = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		if (rc == SQLITE_ROW)
			return 1;
		if (rc != SQLITE_DONE)
			return -1;
	}
	return 0;
}

static int
take(struct registry *r, const char *alloc, int64_t id, uint64_t index)
{
	sqlite3_stmt *st;
	int rc;

	st = store_stmt(&r->store, "INSERT INTO task_ids (id, alloc, "
	    "released, create_index, modify_index) VALUES (?1, ?2, 0, ?3, ?3) "
	    "ON CONFLICT (id) DO UPDATE SET alloc = excluded.alloc, "
	    "released = 0, modify_index = excluded.modify_index");
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, alloc, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)index);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int
ids_allocate(struct registry *r, struct op *op)
{
	const Berth__AllocateIds *req = op->req->allocate_ids;
	Berth__Envelope *rep;
	Berth__IdsReply *ir;
	uint64_t index = 0;
	int64_t id = 0;
	int rc;

	if ((rc = held(r, req->alloc, &id)) < 0)
		return op_db_fail(op, &r->store, "ids_allocate: held");
	if (rc == 0) {
		rc = pick(r, req->first, (int64_t)req->first + req->count, &id);
		if (rc < 0)
			return op_db_fail(op, &r->store, "ids_allocate: pick");
		if (rc == 0)
			return op_fail(op, BERTH__ERROR_CODE__ERROR_CONFLICT,
			    "every id of %u to %llu is held by an allocation",
			    req->first, (unsigned long long)req->first +
			    req->count - 1);
		index = store_next_index(&r->store);
		if (take(r, req->alloc, id, index) < 0)
			return op_db_fail(op, &r->store, "ids_allocate: take");
	}
	rep = op_reply(op, BERTH__ENVELOPE__BODY_IDS_REPLY);
	ir = arena_alloc(&op->arena, sizeof(*ir));
	berth__ids_reply__init(ir);
	ir->alloc = arena_alloc(&op->arena, strlen(req->alloc) + 1);
	memcpy(ir->alloc, req->alloc, strlen(req->alloc) + 1);
	ir->id = (uint32_t)id;
	ir->index = index;
	rep->ids_reply = ir;
	return 0;
}

int
ids_release(struct registry *r, struct op *op)
{
	const char *alloc = op->req->release_ids->alloc;
	uint64_t index = store_next_index(&r->store);
	sqlite3_stmt *st;
	int rc;

	st = store_stmt(&r->store, "UPDATE task_ids SET alloc = NULL, "
	    "released = ?2, modify_index = ?2 WHERE alloc = ?1");
	sqlite3_bind_text(st, 1, alloc, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)index);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "ids_release");
	if (sqlite3_changes(r->store.db) == 0)
		return op_fail(op, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
		    "alloc %s holds no id", alloc);
	return op_reply_index(op, index);
}
