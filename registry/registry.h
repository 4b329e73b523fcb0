/*
 * registry.h: berth-registry's shared types.
 *
 * The registry is one event loop serving one supervisor connection. Every
 * request is validated (dispatch.c), queued, and run in the next group
 * commit (batch.c): one SQLite transaction for everything that arrived in
 * one turn of the loop, answered only after its COMMIT. Events of a batch
 * go to subscribers (events.c) only after that COMMIT too.
 */
#ifndef BERTH_REGISTRY_H
#define BERTH_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <sqlite3.h>

#include "helper.h"

/* Bounds on what one record may hold; larger ones are refused. */
#define REG_ENDPOINT_MAX	512
#define REG_TEXT_MAX		256	/* versions, external ids, context keys */
#define REG_CONTEXT_VALUE_MAX	1024
#define REG_CONTEXT_MAX		64	/* context entries per volume */
#define REG_CAPS_MAX		16	/* capabilities per volume */
#define REG_FLAGS_MAX		32	/* mount flags per volume */
#define REG_BLOB_MAX		(16 * 1024)	/* also a whole volume record */
#define REG_CLAIMS_MAX		256	/* claims per volume */
/* Ids in one AllocateIds range. */
#define REG_IDS_MAX		1000000
/* A list reply stops adding records past this many bytes. */
#define REG_PAGE_BUDGET		(40 * 1024)
/* Requests in one group commit before it is forced. */
#define REG_BATCH_MAX		1024
/* Events kept in the database for subscribers that catch up. */
#define REG_EVENT_LOG_MAX	10000

/* Exit codes of store_open() failures (sysexits.h values). */
#define REG_EXIT_CORRUPT	65	/* EX_DATAERR */
#define REG_EXIT_CANTOPEN	73	/* EX_CANTCREAT */
#define REG_EXIT_NEWER		78	/* EX_CONFIG */

/* store.c */
struct store {
	sqlite3 *db;
	char path[512];
	uint64_t index;		/* the last index handed out */
	uint64_t committed;	/* the last index made durable */
	uint64_t event_floor;	/* events up to here were trimmed from the log */
	struct {
		const char *sql;
		sqlite3_stmt *st;
	} cache[64];
	size_t ncache;
};

int store_open(struct store *s, const char *data_dir, char *err,
    size_t errlen);
void store_close(struct store *s);
/* A prepared statement for sql (a string literal), reset and unbound. */
sqlite3_stmt *store_stmt(struct store *s, const char *sql);
int store_exec(struct store *s, const char *sql);
int store_begin(struct store *s);
int store_commit(struct store *s);
void store_rollback(struct store *s);
uint64_t store_next_index(struct store *s);
const char *store_errmsg(struct store *s);

/* arena.c: an arena for one reply: zeroed memory, bumped from chunks. */
struct arena {
	void **blocks;
	size_t n, cap;
	uint8_t *cur;		/* the free end of the newest chunk */
	size_t left, chunk;
};
void *arena_alloc(struct arena *a, size_t len);
char *arena_text(struct arena *a, sqlite3_stmt *st, int col);
void arena_blob(struct arena *a, sqlite3_stmt *st, int col,
    ProtobufCBinaryData *out);
void arena_free(struct arena *a);
/* Unpack into the arena (a deep copy that lives as long as it). */
void *arena_unpack(struct arena *a, const ProtobufCMessageDescriptor *d,
    const void *buf, size_t len);
void *arena_copy(struct arena *a, const ProtobufCMessage *m);

/* One request, run in the open transaction, awaiting its commit. */
struct op {
	TAILQ_ENTRY(op) entry;
	const Berth__Envelope *req;	/* while it runs only */
	uint64_t request_id;
	Berth__Envelope__BodyCase body;
	Berth__Envelope *rep;		/* built by the action, in arena */
	struct arena arena;
	Berth__ErrorCode code;
	char msg[256];
};
TAILQ_HEAD(ops, op);

/* The result of an action: 0, or -1 with op->code and op->msg set. */
int op_fail(struct op *op, Berth__ErrorCode code, const char *fmt, ...)
    BERTH_PRINTF(3, 4);
/* A reply envelope in op's arena, with its body case set. */
Berth__Envelope *op_reply(struct op *op, Berth__Envelope__BodyCase body);
/* The common answer to a write: the index it was given; returns 0. */
int op_reply_index(struct op *op, uint64_t index);
/* An internal error from SQLite, logged with what failed. */
int op_db_fail(struct op *op, struct store *s, const char *what);

struct subscriber;

/* events.c */
struct events {
	TAILQ_HEAD(, subscriber) subs;
	size_t nsubs;
	uint64_t next_sub;
	/* Events of the open batch, in index order. */
	Berth__Event **pending;
	size_t npending, cappending;
	/* The newest committed events, oldest first, for live delivery. */
	Berth__Event **ring;
	size_t ring_start, ring_len;
	uint64_t ring_floor;	/* every event after this is in the ring */
	size_t since_trim;	/* events since the log was last trimmed */
	uint64_t staged_floor;	/* the log's floor once this batch commits */
};

struct registry {
	struct helper h;
	struct store store;
	struct events ev;
	struct event *flush;
	struct ops ops;			/* run, not yet committed */
	size_t nops;
	bool in_txn;
	uint64_t batches, batched;	/* statistics for the log */
};

/* dispatch.c */
void registry_dispatch(struct helper *h, Berth__Envelope *env, int fd);
int registry_act(struct registry *r, struct op *op);

/* batch.c */
int batch_init(struct registry *r);
/* Run a checked request in the open transaction; answered at its commit. */
void batch_add(struct registry *r, const Berth__Envelope *req);
void batch_flush(struct registry *r);
void batch_free(struct registry *r);

/* plugins.c */
int plugins_register(struct registry *r, struct op *op);
int plugins_deregister(struct registry *r, struct op *op);
int plugins_get(struct registry *r, struct op *op);
int plugins_list(struct registry *r, struct op *op);

/* claims.c */
int claims_put_volume(struct registry *r, struct op *op);
int claims_get_volume(struct registry *r, struct op *op);
int claims_list_volumes(struct registry *r, struct op *op);
int claims_delete_volume(struct registry *r, struct op *op);
int claims_claim(struct registry *r, struct op *op);
int claims_release(struct registry *r, struct op *op);

/* handles.c */
int handles_put(struct registry *r, struct op *op);
int handles_delete(struct registry *r, struct op *op);
int handles_list(struct registry *r, struct op *op);

/* ids.c */
int ids_allocate(struct registry *r, struct op *op);
int ids_release(struct registry *r, struct op *op);

/* events.c */
void events_init(struct registry *r);
void events_free(struct registry *r);
/* Log an event of the open batch; takes ev (allocated with malloc'd strings
 * by events_new()). Returns 0 or -1 (database error). */
int events_emit(struct registry *r, Berth__Event *ev);
Berth__Event *events_new(Berth__EventType type, uint64_t index);
size_t events_mark(struct registry *r);
void events_discard(struct registry *r, size_t mark);
int events_trim(struct registry *r);
/* The batch is durable: deliver its events. */
void events_committed(struct registry *r);
int events_subscribe(struct registry *r, struct op *op);
void events_unsubscribe(struct registry *r, Berth__Envelope *env);
void events_ack(struct registry *r, const Berth__EventAck *ack);

/* Names for messages. */
const char *reg_plugin_type_name(Berth__PluginType t);
const char *reg_access_mode_name(Berth__AccessMode m);

#endif
