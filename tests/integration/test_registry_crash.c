/*
 * test_registry_crash.c: berth-registry killed with SIGKILL at random
 * moments while a client streams writes at it. After each kill the
 * database passes PRAGMA integrity_check, every acknowledged write is in
 * it, and every write that is there is whole (its row, its event and the
 * index counter agree); the restarted registry serves all of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pwd.h>

#include <sqlite3.h>

#include "regtest.h"

#define WRITES_MIN 1000
#define ROUNDS_MIN 8
#define IN_FLIGHT 64
#define MAX_WRITES 20000

enum wstate { W_NONE, W_SENT, W_ACKED, W_FAILED };

struct crash {
	enum wstate state[MAX_WRITES];
	int next, inflight, acked;
	int64_t plugin_rows;	/* in the database after the last kill */
};

struct wreq {
	struct crash *c;
	int i;
};

static void
on_written(const struct regclient_result *res, void *arg)
{
	struct wreq *w = arg;

	w->c->inflight--;
	if (res->code == BERTH__ERROR_CODE__ERROR_NONE) {
		w->c->state[w->i] = W_ACKED;
		w->c->acked++;
	} else {
		w->c->state[w->i] = W_FAILED;
	}
	free(w);
}

/* Write i: even ones register a plugin instance, odd ones put a handle. */
static void
send_write(struct regtest *t, struct crash *c)
{
	Berth__PluginInstance pi;
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__ProcessHandle ph = BERTH__PROCESS_HANDLE__INIT;
	struct wreq *w = malloc(sizeof(*w));
	char alloc[32];
	int r;

	w->c = c;
	w->i = c->next++;
	snprintf(alloc, sizeof(alloc), "w%d", w->i);
	if (w->i % 2 == 0) {
		rt_instance(&pi, BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE,
		    "crash", alloc, "unix:///crash");
		r = regclient_register(t->rc, &pi, on_written, w);
	} else {
		ph.plugin = "crash";
		ph.alloc = alloc;
		ph.pid = 100 + w->i;
		ph.start_time = 1000 + w->i;
		h.handle_case = BERTH__HANDLE__HANDLE_PROCESS;
		h.process = &ph;
		r = regclient_put_handle(t->rc, &h, on_written, w);
	}
	ck_assert_int_eq(r, 0);
	c->state[w->i] = W_SENT;
	c->inflight++;
}

static int64_t
one_int(sqlite3 *db, const char *q)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Give what SQLite made as root back to the registry's user. */
static void
give_back(struct regtest *t)
{
	static const char *files[] = { "registry/registry.db",
		"registry/registry.db-wal", "registry/registry.db-shm" };
	struct passwd *pw = getpwnam("berth-registry");
	size_t i;

	for (i = 0; i < 3; i++)
		if (chown(regtest_path(t, files[i]), pw->pw_uid,
		    pw->pw_gid) < 0)
			(void)0;	/* absent */
}

static void
check_db(struct regtest *t, struct crash *c)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	const char *ok;
	char alloc[32];
	int64_t index, maxidx;
	int i, present;

	ck_assert_int_eq(sqlite3_open(regtest_path(t, "registry/registry.db"),
	    &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1,
	    &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ok = (const char *)sqlite3_column_text(st, 0);
	ck_assert_msg(strcmp(ok, "ok") == 0, "integrity_check: %s", ok);
	sqlite3_finalize(st);

	c->plugin_rows = one_int(db, "SELECT COUNT(*) FROM plugins");
	/* Every plugin row has its event, with the same index. */
	ck_assert_int_eq(one_int(db, "SELECT COUNT(*) FROM plugins p WHERE "
	    "NOT EXISTS (SELECT 1 FROM events e WHERE e.idx = "
	    "p.modify_index)"), 0);
	ck_assert_int_eq(one_int(db, "SELECT COUNT(*) FROM events WHERE idx "
	    "NOT IN (SELECT modify_index FROM plugins)"), 0);
	/* The counter is at least every index in use. */
	index = one_int(db, "SELECT value FROM meta WHERE key = 'index'");
	maxidx = one_int(db, "SELECT MAX(m) FROM (SELECT MAX(modify_index) m "
	    "FROM plugins UNION ALL SELECT MAX(modify_index) FROM processes)");
	ck_assert_int_ge(index, maxidx);
	/* Indexes are unique across the tables. */
	ck_assert_int_eq(one_int(db, "SELECT COUNT(*) FROM (SELECT "
	    "create_index FROM plugins UNION ALL SELECT create_index FROM "
	    "processes)"), one_int(db, "SELECT COUNT(DISTINCT i) FROM (SELECT "
	    "create_index i FROM plugins UNION ALL SELECT create_index FROM "
	    "processes)"));

	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT (SELECT COUNT(*) FROM "
	    "plugins WHERE alloc = ?1) + (SELECT COUNT(*) FROM processes "
	    "WHERE alloc = ?1 AND pid = ?2 AND start_time = ?3)", -1, &st,
	    NULL), SQLITE_OK);
	for (i = 0; i < c->next; i++) {
		snprintf(alloc, sizeof(alloc), "w%d", i);
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, alloc, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 2, 100 + i);
		sqlite3_bind_int(st, 3, 1000 + i);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		present = sqlite3_column_int(st, 0);
		ck_assert_int_le(present, 1);
		if (c->state[i] == W_ACKED)
			ck_assert_msg(present == 1, "acknowledged write %d "
			    "is missing", i);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	give_back(t);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(acknowledged_writes_survive_sigkill)
{
	static struct crash c;
	struct regtest t;
	struct rt_res r;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	int64_t end, start = now_ms();
	int round, acked_before, i;

	fprintf(stderr, "crash test seed %u\n", seed);
	srand(seed);
	regtest_dir(&t, "reg-crash");
	for (round = 0; round < ROUNDS_MIN || c.acked < WRITES_MIN; round++) {
		ck_assert_msg(now_ms() - start < 50000, "too slow: %d acked "
		    "in %d rounds", c.acked, round);
		ck_assert_int_lt(c.next + 4000, MAX_WRITES);
		regtest_start(&t);
		acked_before = c.acked;
		/* Kill it somewhere between 5 and 120 ms into the stream. */
		end = now_ms() + 5 + rand() % 116;
		while (now_ms() < end) {
			while (c.inflight < IN_FLIGHT)
				send_write(&t, &c);
			regtest_spin(&t, 1);
		}
		regtest_kill(&t);
		ck_assert_int_eq(c.inflight, 0);
		fprintf(stderr, "round %d: %d writes acknowledged before the "
		    "kill\n", round, c.acked - acked_before);
		check_db(&t, &c);
	}
	/* The restarted registry serves every acknowledged write. */
	regtest_start(&t);
	RT(&t, r, regclient_list_plugins(t.rc, 0, NULL, rt_plugins_cb, &r));
	ck_assert_int_eq(r.code, 0);
	/* Exactly the rows on disk, each one a write this test sent. */
	ck_assert_int_eq((int64_t)r.n, c.plugin_rows);
	for (i = 0; i < (int)r.n; i++) {
		Berth__PluginInstance *pi = r.items[i];
		int w;

		ck_assert_str_eq(pi->name, "crash");
		ck_assert_int_eq(sscanf(pi->alloc, "w%d", &w), 1);
		ck_assert(w >= 0 && w < c.next && w % 2 == 0);
		ck_assert_msg(c.state[w] != W_NONE, "write %d served but "
		    "never sent", w);
	}
	{
		size_t want = 0;

		for (i = 0; i < c.next; i += 2)
			want += c.state[i] == W_ACKED;
		ck_assert_uint_ge(r.n, want);
	}
	rt_done(&r);
	RT(&t, r, regclient_list_handles(t.rc, BERTH__HANDLE_KIND__HANDLE_KIND_PROCESS,
	    rt_handles_cb, &r));
	ck_assert_int_eq(r.code, 0);
	{
		size_t want = 0;

		for (i = 1; i < c.next; i += 2)
			want += c.state[i] == W_ACKED;
		ck_assert_uint_ge(r.n, want);
	}
	rt_done(&r);
	regtest_stop(&t);
	fprintf(stderr, "%d of %d writes acknowledged over %d kills\n",
	    c.acked, c.next, round);
	ck_assert_int_ge(c.acked, WRITES_MIN);
	regtest_cleanup(&t);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("registry_crash");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, acknowledged_writes_survive_sigkill);
	return harness_run("registry_crash", tc);
}
