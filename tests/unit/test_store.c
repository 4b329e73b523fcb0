/*
 * test_store.c: the registry's database: a new one gets the current
 * schema in WAL mode with full sync; an older one is migrated; a newer,
 * foreign or unreadable one is refused and left as it was; the index
 * counter is persisted with each commit and undone with a rollback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include "harness.h"
#include "registry.h"

static char *dir;
static char db[512];

static void
setup(void)
{
	char path[512];

	dir = harness_tmpdir("store");
	snprintf(path, sizeof(path), "%s/registry", dir);
	mkdir(path, 0700);
	snprintf(db, sizeof(db), "%s/registry/registry.db", dir);
}

static void
teardown(void)
{
	harness_rmtree(dir);
	free(dir);
}

static int64_t
q(const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

static void
x(const char *sql)
{
	sqlite3 *h;

	ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK,
	    "%s: %s", sql, sqlite3_errmsg(h));
	sqlite3_close(h);
}

START_TEST(new_database_gets_the_schema_wal_and_full_sync)
{
	struct store s;
	char err[512];

	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), 0);
	{
		sqlite3_stmt *st;

		ck_assert_int_eq(sqlite3_prepare_v2(s.db, "PRAGMA synchronous",
		    -1, &st, NULL), SQLITE_OK);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_int_eq(sqlite3_column_int(st, 0), 2);	/* FULL */
		sqlite3_finalize(st);
	}
	store_close(&s);
	ck_assert_int_eq(q("PRAGMA user_version"), 5);
	ck_assert_int_eq(q("PRAGMA application_id"), 0x62657274);
	ck_assert_int_eq(q("SELECT COUNT(*) FROM sqlite_master WHERE type = "
	    "'table' AND name IN ('plugins', 'volumes', 'claims', 'reattach', "
	    "'processes', 'mounts', 'events', 'meta', 'task_ids')"), 9);
	ck_assert_int_eq(q("SELECT value FROM meta WHERE key = 'index'"), 0);
}
END_TEST

START_TEST(index_counter_commits_and_rolls_back)
{
	struct store s;
	char err[512];

	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), 0);
	ck_assert_int_eq(store_begin(&s), 0);
	store_next_index(&s);
	store_next_index(&s);
	ck_assert_uint_eq(store_next_index(&s), 3);
	ck_assert_int_eq(store_commit(&s), 0);
	ck_assert_int_eq(store_begin(&s), 0);
	store_next_index(&s);
	store_rollback(&s);
	ck_assert_uint_eq(s.index, 3);
	store_close(&s);
	ck_assert_int_eq(q("SELECT value FROM meta WHERE key = 'index'"), 3);
	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.index, 3);
	ck_assert_uint_eq(s.committed, 3);
	store_close(&s);
}
END_TEST

START_TEST(older_schema_is_migrated)
{
	struct store s;
	char err[512];

	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), 0);
	store_close(&s);
	/* Make it what schema version 1 was, with a volume staged at its
	 * usage's path, as berth did then. */
	x("DROP TABLE events; DELETE FROM meta WHERE key = 'event_floor'; "
	    "DROP TABLE task_ids; "
	    "DROP INDEX volumes_external; "
	    "ALTER TABLE mounts DROP COLUMN stage_usage; "
	    "INSERT INTO mounts VALUES ('hp', 'default', 'v', 'a1', 'data', "
	    "'rw-file-system-single-node-writer', 1, 1, 1, 1); "
	    "PRAGMA user_version = 1");
	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), 0);
	store_close(&s);
	ck_assert_int_eq(q("PRAGMA user_version"), 5);
	ck_assert_int_eq(q("SELECT COUNT(*) FROM events"), 0);
	/* The record names where the volume is staged: still there. */
	ck_assert_int_eq(q("SELECT COUNT(*) FROM mounts WHERE stage_usage = "
	    "'rw-file-system-single-node-writer'"), 1);
}
END_TEST

/* Version 2 had no index by external id; volumes it held are kept. */
START_TEST(version_2_gets_the_external_id_index)
{
	struct store s;
	char err[512];

	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), 0);
	store_close(&s);
	x("DROP INDEX volumes_external; DROP TABLE task_ids; "
	    "ALTER TABLE mounts DROP COLUMN stage_usage; "
	    "INSERT INTO volumes VALUES ('default', "
	    "'a', 'p', 'e', x'', 1, 1), ('default', 'b', 'p', 'e', x'', 2, 2); "
	    "PRAGMA user_version = 2");
	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), 0);
	store_close(&s);
	ck_assert_int_eq(q("PRAGMA user_version"), 5);
	ck_assert_int_eq(q("SELECT COUNT(*) FROM sqlite_master WHERE type = "
	    "'index' AND name = 'volumes_external'"), 1);
	ck_assert_int_eq(q("SELECT COUNT(*) FROM volumes WHERE plugin_id = 'p' "
	    "AND external_id = 'e'"), 2);
}
END_TEST

START_TEST(newer_schema_is_refused_untouched)
{
	struct store s;
	char err[512];

	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), 0);
	store_close(&s);
	x("PRAGMA user_version = 6");
	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)), REG_EXIT_NEWER);
	ck_assert_msg(strstr(err, "schema version 6") != NULL, "%s", err);
	ck_assert_int_eq(q("PRAGMA user_version"), 6);
}
END_TEST

START_TEST(foreign_database_is_refused)
{
	struct store s;
	char err[512];

	x("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('mine')");
	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)),
	    REG_EXIT_CORRUPT);
	ck_assert_msg(strstr(err, "not berth-registry's") != NULL, "%s", err);
	x("PRAGMA user_version = 1");
	ck_assert_int_eq(store_open(&s, dir, err, sizeof(err)),
	    REG_EXIT_CORRUPT);
	ck_assert_int_eq(q("SELECT COUNT(*) FROM notes"), 1);
}
END_TEST

START_TEST(missing_directory_cannot_open)
{
	struct store s;
	char err[512], path[600];

	snprintf(path, sizeof(path), "%s/nowhere", dir);
	ck_assert_int_eq(store_open(&s, path, err, sizeof(err)),
	    REG_EXIT_CANTOPEN);
	ck_assert_msg(strstr(err, "cannot open") != NULL, "%s", err);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("store");

	log_init("test_store", 0);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, new_database_gets_the_schema_wal_and_full_sync);
	tcase_add_test(tc, index_counter_commits_and_rolls_back);
	tcase_add_test(tc, older_schema_is_migrated);
	tcase_add_test(tc, version_2_gets_the_external_id_index);
	tcase_add_test(tc, newer_schema_is_refused_untouched);
	tcase_add_test(tc, foreign_database_is_refused);
	tcase_add_test(tc, missing_directory_cannot_open);
	return harness_run("store", tc);
}
