/*
 * handles.c: what the supervisor needs to re-adopt its work after a
 * restart: driver and device reattach state, the processes the mounter
 * started, and per-alloc volume mount records (from which the volume usage
 * tracker is rebuilt).
 *
 * Owns: the reattach, processes and mounts tables. Must not: interpret a
 * reattach state (it is opaque) or decide whether a process still lives;
 * that is the supervisor's and the mounter's business.
 */
#include <stdio.h>
#include <string.h>

#include "registry.h"

static const char *const put_sql[] = {
	[BERTH__HANDLE__HANDLE_REATTACH - 10] =
	"INSERT INTO reattach (type, name, alloc, task, state, create_index, "
	"modify_index) VALUES (?1, ?2, ?3, ?4, ?5, ?9, ?9) ON CONFLICT (type, "
	"name, alloc, task) DO UPDATE SET state = excluded.state, "
	"modify_index = excluded.modify_index "
	"RETURNING create_index, modify_index",
	[BERTH__HANDLE__HANDLE_PROCESS - 10] =
	"INSERT INTO processes (plugin, alloc, pid, start_time, create_index, "
	"modify_index) VALUES (?1, ?2, ?3, ?4, ?9, ?9) ON CONFLICT (plugin, "
	"alloc) DO UPDATE SET pid = excluded.pid, start_time = "
	"excluded.start_time, modify_index = excluded.modify_index "
	"RETURNING create_index, modify_index",
	[BERTH__HANDLE__HANDLE_MOUNT - 10] =
	"INSERT INTO mounts (plugin, namespace, volume, alloc, task, usage, "
	"staged, published, stage_usage, create_index, modify_index) VALUES "
	"(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?10, ?9, ?9) ON CONFLICT (plugin, "
	"namespace, volume, alloc, task, usage) DO UPDATE SET staged = "
	"excluded.staged, published = excluded.published, stage_usage = "
	"excluded.stage_usage, modify_index = excluded.modify_index "
	"RETURNING create_index, modify_index",
};

static const char *const delete_sql[] = {
	[BERTH__HANDLE__HANDLE_REATTACH - 10] =
	"DELETE FROM reattach WHERE type = ?1 AND name = ?2 AND alloc = ?3 "
	"AND task = ?4",
	[BERTH__HANDLE__HANDLE_PROCESS - 10] =
	"DELETE FROM processes WHERE plugin = ?1 AND alloc = ?2",
	[BERTH__HANDLE__HANDLE_MOUNT - 10] =
	"DELETE FROM mounts WHERE plugin = ?1 AND namespace = ?2 AND "
	"volume = ?3 AND alloc = ?4 AND task = ?5 AND usage = ?6",
};

static const char *const list_sql[] = {
	[BERTH__HANDLE__HANDLE_REATTACH - 10] =
	"SELECT type, name, alloc, task, state, create_index, modify_index, "
	"rowid FROM reattach WHERE rowid > ?1 ORDER BY rowid",
	[BERTH__HANDLE__HANDLE_PROCESS - 10] =
	"SELECT plugin, alloc, pid, start_time, create_index, modify_index, "
	"rowid FROM processes WHERE rowid > ?1 ORDER BY rowid",
	[BERTH__HANDLE__HANDLE_MOUNT - 10] =
	"SELECT plugin, namespace, volume, alloc, task, usage, staged, "
	"published, stage_usage, create_index, modify_index, rowid FROM "
	"mounts WHERE rowid > ?1 ORDER BY rowid",
};

/* Bind a handle's fields; with key_only, only what names it. */
static void
bind_handle(sqlite3_stmt *st, const Berth__Handle *h, bool key_only)
{
	const Berth__ReattachHandle *ra;
	const Berth__ProcessHandle *ph;
	const Berth__MountHandle *mh;

	switch (h->handle_case) {
	case BERTH__HANDLE__HANDLE_REATTACH:
		ra = h->reattach;
		sqlite3_bind_int(st, 1, ra->type);
		sqlite3_bind_text(st, 2, ra->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, ra->alloc, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, ra->task, -1, SQLITE_STATIC);
		if (!key_only)
			sqlite3_bind_blob(st, 5, ra->state.data ?
			    (const void *)ra->state.data : "", ra->state.len,
			    SQLITE_STATIC);
		break;
	case BERTH__HANDLE__HANDLE_PROCESS:
		ph = h->process;
		sqlite3_bind_text(st, 1, ph->plugin, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, ph->alloc, -1, SQLITE_STATIC);
		if (!key_only) {
			sqlite3_bind_int(st, 3, ph->pid);
			sqlite3_bind_int64(st, 4, (int64_t)ph->start_time);
		}
		break;
	case BERTH__HANDLE__HANDLE_MOUNT:
		mh = h->mount;
		sqlite3_bind_text(st, 1, mh->plugin, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, mh->namespace_, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, mh->volume, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, mh->alloc, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, mh->task, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, mh->usage, -1, SQLITE_STATIC);
		if (!key_only) {
			sqlite3_bind_int(st, 7, mh->staged);
			sqlite3_bind_int(st, 8, mh->published);
			sqlite3_bind_text(st, 10, mh->stage_usage, -1,
			    SQLITE_STATIC);
		}
		break;
	default:
		break;
	}
}

static Berth__Handle *
row_handle(struct arena *a, sqlite3_stmt *st, Berth__Handle__HandleCase k,
    int64_t *rowid)
{
	Berth__Handle *h = arena_alloc(a, sizeof(*h));
	Berth__ReattachHandle *ra;
	Berth__ProcessHandle *ph;
	Berth__MountHandle *mh;
	int i;

	berth__handle__init(h);
	h->handle_case = k;
	switch (k) {
	case BERTH__HANDLE__HANDLE_REATTACH:
		h->reattach = ra = arena_alloc(a, sizeof(*ra));
		berth__reattach_handle__init(ra);
		ra->type = sqlite3_column_int(st, 0);
		ra->name = arena_text(a, st, 1);
		ra->alloc = arena_text(a, st, 2);
		ra->task = arena_text(a, st, 3);
		arena_blob(a, st, 4, &ra->state);
		i = 5;
		break;
	case BERTH__HANDLE__HANDLE_PROCESS:
		h->process = ph = arena_alloc(a, sizeof(*ph));
		berth__process_handle__init(ph);
		ph->plugin = arena_text(a, st, 0);
		ph->alloc = arena_text(a, st, 1);
		ph->pid = sqlite3_column_int(st, 2);
		ph->start_time = sqlite3_column_int64(st, 3);
		i = 4;
		break;
	default:
		h->mount = mh = arena_alloc(a, sizeof(*mh));
		berth__mount_handle__init(mh);
		mh->plugin = arena_text(a, st, 0);
		mh->namespace_ = arena_text(a, st, 1);
		mh->volume = arena_text(a, st, 2);
		mh->alloc = arena_text(a, st, 3);
		mh->task = arena_text(a, st, 4);
		mh->usage = arena_text(a, st, 5);
		mh->staged = sqlite3_column_int(st, 6) != 0;
		mh->published = sqlite3_column_int(st, 7) != 0;
		mh->stage_usage = arena_text(a, st, 8);
		i = 9;
		break;
	}
	h->create_index = sqlite3_column_int64(st, i);
	h->modify_index = sqlite3_column_int64(st, i + 1);
	*rowid = sqlite3_column_int64(st, i + 2);
	return h;
}

int
handles_put(struct registry *r, struct op *op)
{
	const Berth__Handle *in = op->req->put_handle->handle;
	Berth__HandleReply *hr;
	Berth__Envelope *rep;
	Berth__Handle *out;
	sqlite3_stmt *st;
	int rc;

	st = store_stmt(&r->store, put_sql[in->handle_case - 10]);
	bind_handle(st, in, false);
	sqlite3_bind_int64(st, 9, (int64_t)store_next_index(&r->store));
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return op_db_fail(op, &r->store, "handles_put");
	}
	rep = op_reply(op, BERTH__ENVELOPE__BODY_HANDLE_REPLY);
	hr = arena_alloc(&op->arena, sizeof(*hr));
	berth__handle_reply__init(hr);
	/* The request's handle, with its indexes. */
	out = arena_copy(&op->arena, &in->base);
	out->create_index = sqlite3_column_int64(st, 0);
	out->modify_index = sqlite3_column_int64(st, 1);
	sqlite3_reset(st);
	hr->handle = out;
	rep->handle_reply = hr;
	return 0;
}

int
handles_delete(struct registry *r, struct op *op)
{
	const Berth__Handle *in = op->req->delete_handle->handle;
	sqlite3_stmt *st;
	int rc;

	st = store_stmt(&r->store, delete_sql[in->handle_case - 10]);
	bind_handle(st, in, true);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "handles_delete");
	if (sqlite3_changes(r->store.db) == 0)
		return op_fail(op, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
		    "no such %s handle", in->handle_case ==
		    BERTH__HANDLE__HANDLE_REATTACH ? "reattach" :
		    in->handle_case == BERTH__HANDLE__HANDLE_PROCESS ?
		    "process" : "mount");
	return op_reply_index(op, store_next_index(&r->store));
}

/* One page: kinds in order, rows in order within a kind. */
int
handles_list(struct registry *r, struct op *op)
{
	const Berth__ListHandles *lh = op->req->list_handles;
	Berth__HandleList *hl;
	Berth__Envelope *rep;
	Berth__Handle *h;
	sqlite3_stmt *st;
	size_t cap = 256, used = 0;
	int kind, last, rc;
	int64_t after, rowid;

	rep = op_reply(op, BERTH__ENVELOPE__BODY_HANDLE_LIST);
	hl = arena_alloc(&op->arena, sizeof(*hl));
	berth__handle_list__init(hl);
	rep->handle_list = hl;
	hl->handles = arena_alloc(&op->arena, cap * sizeof(*hl->handles));
	kind = lh->kind != 0 ? (int)lh->kind : BERTH__HANDLE_KIND__HANDLE_KIND_REATTACH;
	last = lh->kind != 0 ? (int)lh->kind : BERTH__HANDLE_KIND__HANDLE_KIND_MOUNT;
	after = 0;
	if ((int)lh->after_kind >= kind) {
		kind = lh->after_kind;
		after = lh->after;
	}
	for (; kind <= last && !hl->more; kind++, after = 0) {
		/* HandleKind n is the oneof case 9 + n. */
		st = store_stmt(&r->store, list_sql[kind - 1]);
		sqlite3_bind_int64(st, 1, after);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (used >= REG_PAGE_BUDGET) {
				hl->more = true;
				break;
			}
			if (hl->n_handles == cap) {
				Berth__Handle **bigger;

				bigger = arena_alloc(&op->arena,
				    2 * cap * sizeof(*bigger));
				memcpy(bigger, hl->handles,
				    cap * sizeof(*bigger));
				hl->handles = bigger;
				cap *= 2;
			}
			h = row_handle(&op->arena, st, 9 + kind, &rowid);
			used += berth__handle__get_packed_size(h) + 8;
			hl->handles[hl->n_handles++] = h;
			hl->next_kind = kind;
			hl->next = rowid;
		}
		sqlite3_reset(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return op_db_fail(op, &r->store, "handles_list");
	}
	return 0;
}
