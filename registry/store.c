/*
 * store.c: the registry's SQLite database: opening it, its versioned
 * schema and migrations, the index counter, transactions and a cache of
 * prepared statements.
 *
 * Owns: <data_dir>/registry/registry.db and its WAL. Must not: replace or
 * "repair" a database it cannot read, or one written by a newer registry;
 * it refuses to start instead, so that an operator decides. Every commit
 * is durable (WAL, synchronous=FULL) before the caller acknowledges it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "registry.h"

/* "bert" in ASCII: marks a database as the registry's. */
#define STORE_APPLICATION_ID 0x62657274

/*
 * Migration n takes the schema from version n to n + 1; user_version is
 * the number of migrations applied. Append, never edit.
 */
static const char *const migrations[] = {
	/* 0 -> 1: objects and handles. */
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)"
	"  WITHOUT ROWID;"
	"INSERT INTO meta VALUES ('index', 0);"
	"CREATE TABLE plugins (type INTEGER NOT NULL, name TEXT NOT NULL,"
	"  alloc TEXT NOT NULL, endpoint TEXT NOT NULL,"
	"  provider TEXT NOT NULL, provider_version TEXT NOT NULL,"
	"  capabilities BLOB NOT NULL, registered_at INTEGER NOT NULL,"
	"  create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL,"
	"  UNIQUE (type, name, alloc));"
	"CREATE INDEX plugins_newest ON plugins (type, name, create_index);"
	"CREATE TABLE volumes (namespace TEXT NOT NULL, id TEXT NOT NULL,"
	"  plugin_id TEXT NOT NULL, external_id TEXT NOT NULL,"
	"  spec BLOB NOT NULL, create_index INTEGER NOT NULL,"
	"  modify_index INTEGER NOT NULL, UNIQUE (namespace, id));"
	"CREATE TABLE claims (namespace TEXT NOT NULL, volume TEXT NOT NULL,"
	"  alloc TEXT NOT NULL, mode INTEGER NOT NULL,"
	"  access_mode INTEGER NOT NULL, attachment_mode INTEGER NOT NULL,"
	"  create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL,"
	"  UNIQUE (namespace, volume, alloc));"
	"CREATE TABLE reattach (type INTEGER NOT NULL, name TEXT NOT NULL,"
	"  alloc TEXT NOT NULL, task TEXT NOT NULL, state BLOB NOT NULL,"
	"  create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL,"
	"  UNIQUE (type, name, alloc, task));"
	"CREATE TABLE processes (plugin TEXT NOT NULL, alloc TEXT NOT NULL,"
	"  pid INTEGER NOT NULL, start_time INTEGER NOT NULL,"
	"  create_index INTEGER NOT NULL, modify_index INTEGER NOT NULL,"
	"  UNIQUE (plugin, alloc));"
	"CREATE TABLE mounts (plugin TEXT NOT NULL, namespace TEXT NOT NULL,"
	"  volume TEXT NOT NULL, alloc TEXT NOT NULL, task TEXT NOT NULL,"
	"  usage TEXT NOT NULL, staged INTEGER NOT NULL,"
	"  published INTEGER NOT NULL, create_index INTEGER NOT NULL,"
	"  modify_index INTEGER NOT NULL,"
	"  UNIQUE (plugin, namespace, volume, alloc, task, usage));",
	/* 1 -> 2: the event log that subscribers replay from. */
	"CREATE TABLE events (idx INTEGER PRIMARY KEY, body BLOB NOT NULL);"
	"INSERT INTO meta VALUES ('event_floor', 0);",
	/*
	 * 2 -> 3: finding a provider's volume by its external id, which
	 * claims.c keeps to one berth id. Not UNIQUE: a database from
	 * before may hold two ids for one volume, and must still open.
	 */
	"CREATE INDEX volumes_external ON volumes (plugin_id, external_id);",
	/* 3 -> 4: where a volume is staged; before, at its usage's path. */
	"ALTER TABLE mounts ADD COLUMN stage_usage TEXT NOT NULL DEFAULT '';"
	"UPDATE mounts SET stage_usage = usage;",
	/*
	 * 4 -> 5: the uids and gids of tasks (ids.c). alloc is NULL when
	 * the id is free; released is the index of its release (0: held).
	 */
	"CREATE TABLE task_ids (id INTEGER PRIMARY KEY, alloc TEXT UNIQUE,"
	"  released INTEGER NOT NULL, create_index INTEGER NOT NULL,"
	"  modify_index INTEGER NOT NULL);"
	"CREATE INDEX task_ids_free ON task_ids (released, id)"
	"  WHERE alloc IS NULL;",
};
#define STORE_SCHEMA_VERSION \
	((int)(sizeof(migrations) / sizeof(migrations[0])))

const char *
store_errmsg(struct store *s)
{
	return s->db != NULL ? sqlite3_errmsg(s->db) : "no database";
}

int
store_exec(struct store *s, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		log_warnx("store_exec: %s: %.60s...: %s", s->path, sql,
		    msg ? msg : "?");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

sqlite3_stmt *
store_stmt(struct store *s, const char *sql)
{
	sqlite3_stmt *st;
	size_t i;

	for (i = 0; i < s->ncache; i++) {
		if (s->cache[i].sql == sql) {
			st = s->cache[i].st;
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return st;
		}
	}
	if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
	    NULL) != SQLITE_OK) {
		/* Our own SQL: a failure here is a bug, not bad input. */
		fatalx("store_stmt: preparing \"%s\": %s", sql,
		    sqlite3_errmsg(s->db));
	}
	if (s->ncache < sizeof(s->cache) / sizeof(s->cache[0])) {
		s->cache[s->ncache].sql = sql;
		s->cache[s->ncache].st = st;
		s->ncache++;
		return st;
	}
	fatalx("store_stmt: more than %zu distinct statements",
	    sizeof(s->cache) / sizeof(s->cache[0]));
}

static int
pragma_int(struct store *s, const char *sql, int64_t *v)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sqlite3_errcode(s->db);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*v = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

static int
meta_get(struct store *s, const char *key, uint64_t *v)
{
	sqlite3_stmt *st;
	int rc;

	st = store_stmt(s, "SELECT value FROM meta WHERE key = ?1");
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return -1;
	}
	*v = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return 0;
}

/* Is this the whole of a healthy database? quick_check reads every page. */
static int
check_integrity(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	const char *res;
	int rc;

	if ((rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st,
	    NULL)) != SQLITE_OK) {
		snprintf(err, errlen, "%s cannot be read: %s", s->path,
		    sqlite3_errmsg(s->db));
		return -1;
	}
	rc = sqlite3_step(st);
	res = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) :
	    NULL;
	if (res == NULL || strcmp(res, "ok") != 0) {
		snprintf(err, errlen, "%s failed its integrity check, "
		    "refusing to start (restore it from a backup or move it "
		    "aside): %s", s->path,
		    res != NULL ? res : sqlite3_errmsg(s->db));
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return 0;
}

static int
migrate(struct store *s, int from, char *err, size_t errlen)
{
	char sql[64];
	int v;

	for (v = from; v < STORE_SCHEMA_VERSION; v++) {
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		if (store_exec(s, "BEGIN IMMEDIATE") < 0)
			goto fail;
		if (store_exec(s, migrations[v]) < 0 ||
		    store_exec(s, sql) < 0) {
			store_rollback(s);
			goto fail;
		}
		if (v == 0) {
			snprintf(sql, sizeof(sql), "PRAGMA application_id = %d",
			    STORE_APPLICATION_ID);
			if (store_exec(s, sql) < 0) {
				store_rollback(s);
				goto fail;
			}
		}
		if (store_exec(s, "COMMIT") < 0) {
			store_rollback(s);
			goto fail;
		}
		log_info("migrate: %s: schema version %d -> %d", s->path, v,
		    v + 1);
	}
	return 0;
fail:
	snprintf(err, errlen, "%s: migrating the schema from version %d to "
	    "%d failed: %s", s->path, v, v + 1, sqlite3_errmsg(s->db));
	return -1;
}

/*
 * Open (or create) the database. Returns 0, or a REG_EXIT_* code with err
 * saying what is wrong and what to do.
 */
int
store_open(struct store *s, const char *data_dir, char *err, size_t errlen)
{
	int64_t version, appid;
	int rc;

	memset(s, 0, sizeof(*s));
	if (layout_abs(s->path, sizeof(s->path), data_dir,
	    LAYOUT_REGISTRY_DB) < 0) {
		snprintf(err, errlen, "data directory %s makes too long a "
		    "database path", data_dir);
		return REG_EXIT_CANTOPEN;
	}
	rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
	    NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s (the registry's "
		    "directory must exist and belong to its user)", s->path,
		    s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		store_close(s);
		return REG_EXIT_CANTOPEN;
	}
	sqlite3_extended_result_codes(s->db, 1);
	/* Reading the header is the first thing that touches the file. */
	rc = pragma_int(s, "PRAGMA user_version", &version);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s is not a readable registry database "
		    "(%s): refusing to start; move it aside or restore it from "
		    "a backup", s->path, sqlite3_errstr(rc));
		store_close(s);
		return (rc & 0xff) == SQLITE_CANTOPEN ||
		    (rc & 0xff) == SQLITE_PERM ||
		    (rc & 0xff) == SQLITE_READONLY ? REG_EXIT_CANTOPEN :
		    REG_EXIT_CORRUPT;
	}
	if (pragma_int(s, "PRAGMA application_id", &appid) != SQLITE_OK ||
	    (version > 0 && appid != STORE_APPLICATION_ID)) {
		snprintf(err, errlen, "%s is an SQLite database but not "
		    "berth-registry's (application_id %lld): refusing to "
		    "start; move it aside", s->path, (long long)appid);
		store_close(s);
		return REG_EXIT_CORRUPT;
	}
	if (version == 0 && pragma_int(s, "SELECT COUNT(*) FROM sqlite_master",
	    &appid) == SQLITE_OK && appid > 0) {
		snprintf(err, errlen, "%s holds %lld tables but no registry "
		    "schema: it is not berth-registry's; refusing to start; "
		    "move it aside", s->path, (long long)appid);
		store_close(s);
		return REG_EXIT_CORRUPT;
	}
	if (version > STORE_SCHEMA_VERSION) {
		snprintf(err, errlen, "%s has schema version %lld, newer than "
		    "the %d this berth-registry knows: refusing to start; run "
		    "the newer berth (the database is left as it is)", s->path,
		    (long long)version, STORE_SCHEMA_VERSION);
		store_close(s);
		return REG_EXIT_NEWER;
	}
	if (version < 0) {
		snprintf(err, errlen, "%s has a negative schema version %lld: "
		    "refusing to start", s->path, (long long)version);
		store_close(s);
		return REG_EXIT_CORRUPT;
	}
	if (store_exec(s, "PRAGMA journal_mode = WAL") < 0 ||
	    store_exec(s, "PRAGMA synchronous = FULL") < 0 ||
	    store_exec(s, "PRAGMA foreign_keys = OFF") < 0) {
		snprintf(err, errlen, "%s: setting WAL mode: %s", s->path,
		    sqlite3_errmsg(s->db));
		store_close(s);
		return REG_EXIT_CORRUPT;
	}
	if (check_integrity(s, err, errlen) < 0) {
		store_close(s);
		return REG_EXIT_CORRUPT;
	}
	if (migrate(s, (int)version, err, errlen) < 0) {
		store_close(s);
		return REG_EXIT_CANTOPEN;
	}
	if (meta_get(s, "index", &s->index) < 0 ||
	    meta_get(s, "event_floor", &s->event_floor) < 0) {
		snprintf(err, errlen, "%s lacks its index counter: refusing to "
		    "start; restore it from a backup", s->path);
		store_close(s);
		return REG_EXIT_CORRUPT;
	}
	s->committed = s->index;
	return 0;
}

void
store_close(struct store *s)
{
	size_t i;

	for (i = 0; i < s->ncache; i++)
		sqlite3_finalize(s->cache[i].st);
	s->ncache = 0;
	if (s->db != NULL && sqlite3_close(s->db) != SQLITE_OK)
		log_warnx("store_close: %s: %s", s->path, sqlite3_errmsg(s->db));
	s->db = NULL;
}

int
store_begin(struct store *s)
{
	return store_exec(s, "BEGIN IMMEDIATE");
}

/* Persist the counter with the batch, then make both durable. */
int
store_commit(struct store *s)
{
	sqlite3_stmt *st;

	if (s->index != s->committed) {
		st = store_stmt(s, "UPDATE meta SET value = ?1 WHERE key = "
		    "'index'");
		sqlite3_bind_int64(st, 1, (int64_t)s->index);
		if (sqlite3_step(st) != SQLITE_DONE) {
			log_warnx("store_commit: %s: saving index %llu: %s",
			    s->path, (unsigned long long)s->index,
			    sqlite3_errmsg(s->db));
			sqlite3_reset(st);
			return -1;
		}
		sqlite3_reset(st);
	}
	if (store_exec(s, "COMMIT") < 0)
		return -1;
	s->committed = s->index;
	return 0;
}

void
store_rollback(struct store *s)
{
	if (sqlite3_get_autocommit(s->db))
		return;
	if (sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
		log_warnx("store_rollback: %s: %s", s->path,
		    sqlite3_errmsg(s->db));
	s->index = s->committed;
}

uint64_t
store_next_index(struct store *s)
{
	return ++s->index;
}
