/*
 * test_etcd.c: the registry's etcd client (registry/etcd.c) against a
 * real 3-member etcd cluster on loopback (etcdtest.c): reads and writes,
 * a compare-and-swap raced by 8 callers, a lease kept alive and let go,
 * and members killed: one (every call still succeeds, elsewhere), two
 * (calls fail within their deadline, naming etcd), and quorum back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "etcd.h"
#include "etcdtest.h"
#include "harness.h"

#define DEADLINE_MS	5000
#define RACERS		8

static struct etcd_cluster ec;
static struct event_base *base;

static long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static void
setup(void)
{
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	etcdtest_start(&ec, 3);
}

static void
teardown(void)
{
	etcdtest_cleanup(&ec);
	event_base_free(base);
}

/* ---- waiting for calls on the loop ---- */

struct waiter {
	bool done;
	struct etcd_result r;
	ProtobufCMessage *reply;
	long ended;
};

static void
waiter_cb(const struct etcd_result *r, ProtobufCMessage *reply, void *arg)
{
	struct waiter *w = arg;

	w->r = *r;
	w->reply = reply;
	w->done = true;
	w->ended = mono_ms();
}

static void
run_until(bool *done)
{
	while (!*done)
		ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
}

/* Let the loop run for ms (timers, keepalives). */
static void
run_for(int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static ProtobufCMessage *
call(struct etcd_client *c, enum etcd_method m, const ProtobufCMessage *req,
    struct etcd_result *r)
{
	struct waiter w = { 0 };

	etcd_call(c, m, req, waiter_cb, &w);
	run_until(&w.done);
	*r = w.r;
	return w.reply;
}

static void
put(struct etcd_client *c, const char *key, const char *value, int64_t lease)
{
	Etcdserverpb__PutRequest req = ETCDSERVERPB__PUT_REQUEST__INIT;
	struct etcd_result r;
	ProtobufCMessage *reply;

	req.key = etcd_bytes(key);
	req.value = etcd_bytes(value);
	req.lease = lease;
	reply = call(c, ETCD_PUT, &req.base, &r);
	ck_assert_msg(r.code == ETCD_OK, "put %s: %s", key, r.message);
	protobuf_c_message_free_unpacked(reply, NULL);
}

/* The key's value ("" and *mod 0 when absent); aborts on failure. */
static char *
get(struct etcd_client *c, const char *key, int64_t *mod)
{
	Etcdserverpb__RangeRequest req = ETCDSERVERPB__RANGE_REQUEST__INIT;
	Etcdserverpb__RangeResponse *resp;
	struct etcd_result r;
	char *v;

	req.key = etcd_bytes(key);
	resp = (void *)call(c, ETCD_RANGE, &req.base, &r);
	ck_assert_msg(r.code == ETCD_OK, "get %s: %s", key, r.message);
	if (mod != NULL)
		*mod = resp->n_kvs ? resp->kvs[0]->mod_revision : 0;
	if (resp->n_kvs == 0)
		v = strdup("");
	else
		v = strndup((char *)resp->kvs[0]->value.data,
		    resp->kvs[0]->value.len);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return v;
}

static bool
key_exists(struct etcd_client *c, const char *key)
{
	int64_t mod;

	free(get(c, key, &mod));
	return mod != 0;
}

static struct etcd_client *
client(const char *const *eps, size_t n, int deadline_ms)
{
	struct etcd_client *c = etcd_client_new(base, eps, n, deadline_ms);

	ck_assert_ptr_nonnull(c);
	return c;
}

/* ---- tests ---- */

START_TEST(put_get_delete)
{
	Etcdserverpb__DeleteRangeRequest del =
	    ETCDSERVERPB__DELETE_RANGE_REQUEST__INIT;
	Etcdserverpb__DeleteRangeResponse *dresp;
	Etcdserverpb__PutRequest bad = ETCDSERVERPB__PUT_REQUEST__INIT;
	struct etcd_client *c = client(ec.endpoints, ec.n, DEADLINE_MS);
	struct etcd_result r;
	ProtobufCMessage *reply;
	int64_t mod1, mod2;
	char *v;

	put(c, "/berth/test/a", "one", 0);
	v = get(c, "/berth/test/a", &mod1);
	ck_assert_str_eq(v, "one");
	free(v);
	put(c, "/berth/test/a", "two", 0);
	v = get(c, "/berth/test/a", &mod2);
	ck_assert_str_eq(v, "two");
	ck_assert_int_gt(mod2, mod1);
	free(v);

	del.key = etcd_bytes("/berth/test/a");
	dresp = (void *)call(c, ETCD_DELETE_RANGE, &del.base, &r);
	ck_assert_msg(r.code == ETCD_OK, "%s", r.message);
	ck_assert_int_eq(dresp->deleted, 1);
	ck_assert_int_gt(dresp->header->revision, mod2);
	protobuf_c_message_free_unpacked(&dresp->base, NULL);
	ck_assert(!key_exists(c, "/berth/test/a"));

	/* etcd refuses an empty key; the error names etcd and a member. */
	reply = call(c, ETCD_PUT, &bad.base, &r);
	ck_assert_ptr_null(reply);
	ck_assert_int_eq(r.code, ETCD_INVALID_ARGUMENT);
	ck_assert_msg(strncmp(r.message, "etcd 127.0.0.1:", 15) == 0, "%s",
	    r.message);
	ck_assert(!r.unknown);
	/* A request of the wrong type never leaves. */
	reply = call(c, ETCD_RANGE, &bad.base, &r);
	ck_assert_ptr_null(reply);
	ck_assert_int_eq(r.code, ETCD_INVALID_ARGUMENT);
	ck_assert_int_eq(r.attempts, 0);
	etcd_client_free(c);
}
END_TEST

struct racer {
	struct etcd_client *c;
	struct waiter w;
	char value[16];
};

START_TEST(cas_race_has_one_winner)
{
	static const char *key = "/berth/test/cas";
	Etcdserverpb__Compare cmp = ETCDSERVERPB__COMPARE__INIT;
	Etcdserverpb__Compare *cmps[1] = { &cmp };
	Etcdserverpb__PutRequest p = ETCDSERVERPB__PUT_REQUEST__INIT;
	Etcdserverpb__RequestOp op = ETCDSERVERPB__REQUEST_OP__INIT;
	Etcdserverpb__RequestOp *ops[1] = { &op };
	Etcdserverpb__TxnRequest txn = ETCDSERVERPB__TXN_REQUEST__INIT;
	struct racer racers[RACERS];
	const char *eps[3];
	int64_t mod, mod_after;
	int i, j, wins = 0, winner = -1;
	bool all;
	char *v;

	memset(racers, 0, sizeof(racers));
	/* Each racer its own client, starting at a different member. */
	for (i = 0; i < RACERS; i++) {
		for (j = 0; j < 3; j++)
			eps[j] = ec.endpoints[(i + j) % 3];
		racers[i].c = client(eps, 3, DEADLINE_MS);
	}
	put(racers[0].c, key, "start", 0);
	free(get(racers[0].c, key, &mod));

	cmp.result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL;
	cmp.target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD;
	cmp.key = etcd_bytes(key);
	cmp.target_union_case =
	    ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
	cmp.mod_revision = mod;
	op.request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
	op.request_put = &p;
	txn.n_compare = 1;
	txn.compare = cmps;
	txn.n_success = 1;
	txn.success = ops;
	p.key = etcd_bytes(key);
	/* etcd_call packs the request at once: one message serves all. */
	for (i = 0; i < RACERS; i++) {
		snprintf(racers[i].value, sizeof(racers[i].value), "racer-%d",
		    i);
		p.value = etcd_bytes(racers[i].value);
		etcd_call(racers[i].c, ETCD_TXN, &txn.base, waiter_cb,
		    &racers[i].w);
	}
	do {
		ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
		for (all = true, i = 0; i < RACERS; i++)
			all = all && racers[i].w.done;
	} while (!all);

	for (i = 0; i < RACERS; i++) {
		Etcdserverpb__TxnResponse *t = (void *)racers[i].w.reply;

		ck_assert_msg(racers[i].w.r.code == ETCD_OK, "racer %d: %s", i,
		    racers[i].w.r.message);
		if (t->succeeded) {
			wins++;
			winner = i;
		}
		protobuf_c_message_free_unpacked(&t->base, NULL);
	}
	ck_assert_int_eq(wins, 1);
	v = get(racers[0].c, key, &mod_after);
	ck_assert_str_eq(v, racers[winner].value);
	ck_assert_int_gt(mod_after, mod);
	free(v);
	/* The VERSION and VALUE targets: a second compare on what is. */
	cmp.target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__VALUE;
	cmp.target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_VALUE;
	cmp.value = etcd_bytes(racers[winner].value);
	{
		Etcdserverpb__Compare cv = ETCDSERVERPB__COMPARE__INIT;
		Etcdserverpb__Compare *both[2] = { &cmp, &cv };
		Etcdserverpb__TxnResponse *t;
		struct etcd_result r;

		cv.result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL;
		cv.target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__VERSION;
		cv.key = etcd_bytes(key);
		cv.target_union_case =
		    ETCDSERVERPB__COMPARE__TARGET_UNION_VERSION;
		cv.version = 2;		/* "start", then the winner */
		txn.n_compare = 2;
		txn.compare = both;
		p.value = etcd_bytes("after");
		t = (void *)call(racers[1].c, ETCD_TXN, &txn.base, &r);
		ck_assert_msg(r.code == ETCD_OK, "%s", r.message);
		ck_assert(t->succeeded);
		protobuf_c_message_free_unpacked(&t->base, NULL);
		/* CREATE: the key was created before the race's revision. */
		cv.target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__CREATE;
		cv.result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__LESS;
		cv.target_union_case =
		    ETCDSERVERPB__COMPARE__TARGET_UNION_CREATE_REVISION;
		cv.create_revision = mod + 1;
		txn.compare = &cmps[0];
		cmps[0] = &cv;
		txn.n_compare = 1;
		p.value = etcd_bytes("created-before");
		t = (void *)call(racers[1].c, ETCD_TXN, &txn.base, &r);
		ck_assert_msg(r.code == ETCD_OK, "%s", r.message);
		ck_assert(t->succeeded);
		protobuf_c_message_free_unpacked(&t->base, NULL);
	}
	v = get(racers[0].c, key, NULL);
	ck_assert_str_eq(v, "created-before");
	free(v);
	for (i = 0; i < RACERS; i++)
		etcd_client_free(racers[i].c);
}
END_TEST

static int64_t
lease_grant(struct etcd_client *c, int64_t ttl, int64_t *granted)
{
	Etcdserverpb__LeaseGrantRequest req =
	    ETCDSERVERPB__LEASE_GRANT_REQUEST__INIT;
	Etcdserverpb__LeaseGrantResponse *resp;
	struct etcd_result r;
	int64_t id;

	req.ttl = ttl;
	resp = (void *)call(c, ETCD_LEASE_GRANT, &req.base, &r);
	ck_assert_msg(r.code == ETCD_OK, "%s", r.message);
	id = resp->id;
	*granted = resp->ttl;
	ck_assert_int_ne(id, 0);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return id;
}

struct lost {
	bool done;
	int64_t lease;
	char why[256];
};

static void
lost_cb(int64_t lease, const char *why, void *arg)
{
	struct lost *l = arg;

	l->lease = lease;
	snprintf(l->why, sizeof(l->why), "%s", why);
	l->done = true;
}

START_TEST(lease_kept_alive_then_revoked_or_expired)
{
	Etcdserverpb__LeaseRevokeRequest rev =
	    ETCDSERVERPB__LEASE_REVOKE_REQUEST__INIT;
	Etcdserverpb__LeaseTimeToLiveRequest ttlq =
	    ETCDSERVERPB__LEASE_TIME_TO_LIVE_REQUEST__INIT;
	Etcdserverpb__LeaseTimeToLiveResponse *ttlr;
	struct etcd_client *c = client(ec.endpoints, ec.n, DEADLINE_MS);
	struct etcd_keeper *k;
	struct etcd_result r;
	struct lost lost = { 0 };
	ProtobufCMessage *reply;
	int64_t kept, loose, ttl, ttl2;
	long t0;

	kept = lease_grant(c, 2, &ttl);
	loose = lease_grant(c, 2, &ttl2);
	put(c, "/berth/test/kept", "alive", kept);
	put(c, "/berth/test/loose", "alive", loose);
	k = etcd_keeper_start(c, kept, (int)ttl * 1000, (int)ttl * 1000 / 4,
	    lost_cb, &lost);

	/* Past twice the TTL: the kept key stays, the other is gone. */
	run_for((int)ttl * 2000 + 1500);
	ck_assert_msg(!lost.done, "%s", lost.why);
	ck_assert_int_ge(etcd_keeper_renewals(k), 4);
	ck_assert(key_exists(c, "/berth/test/kept"));
	ck_assert(!key_exists(c, "/berth/test/loose"));
	ttlq.id = kept;
	ttlr = (void *)call(c, ETCD_LEASE_TIME_TO_LIVE, &ttlq.base, &r);
	ck_assert_msg(r.code == ETCD_OK, "%s", r.message);
	ck_assert_int_gt(ttlr->ttl, 0);
	protobuf_c_message_free_unpacked(&ttlr->base, NULL);
	ttlq.id = loose;
	ttlr = (void *)call(c, ETCD_LEASE_TIME_TO_LIVE, &ttlq.base, &r);
	ck_assert_msg(r.code == ETCD_OK, "%s", r.message);
	ck_assert_int_eq(ttlr->ttl, -1);
	protobuf_c_message_free_unpacked(&ttlr->base, NULL);

	/* Revoked under the keeper: the key goes, the keeper notices. */
	rev.id = kept;
	reply = call(c, ETCD_LEASE_REVOKE, &rev.base, &r);
	ck_assert_msg(r.code == ETCD_OK, "%s", r.message);
	protobuf_c_message_free_unpacked(reply, NULL);
	ck_assert(!key_exists(c, "/berth/test/kept"));
	t0 = mono_ms();
	while (!lost.done && mono_ms() - t0 < ttl * 1000 * 2)
		ck_assert_int_ge(event_base_loop(base, EVLOOP_ONCE), 0);
	ck_assert(lost.done);
	ck_assert_int_eq(lost.lease, kept);
	ck_assert_msg(strstr(lost.why, "no such lease") != NULL, "%s",
	    lost.why);
	etcd_keeper_stop(k);
	etcd_client_free(c);
}
END_TEST

/* Which member leads (by index), asked of member i; -1 if unknown. */
static int
leader_index(struct etcd_client *each[], int n)
{
	Etcdserverpb__StatusRequest req = ETCDSERVERPB__STATUS_REQUEST__INIT;
	Etcdserverpb__StatusResponse *resp;
	struct etcd_result r;
	uint64_t ids[ETCDTEST_MAX], leader = 0;
	int i;

	for (i = 0; i < n; i++) {
		resp = (void *)call(each[i], ETCD_STATUS, &req.base, &r);
		ck_assert_msg(r.code == ETCD_OK, "%s", r.message);
		ids[i] = resp->header->member_id;
		leader = resp->leader;
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	}
	for (i = 0; i < n; i++)
		if (ids[i] == leader)
			return i;
	return -1;
}

/* A write and a read, each must succeed; returns the read's endpoint. */
static void
write_read(struct etcd_client *c, int round, char *endpoint, size_t len)
{
	Etcdserverpb__RangeRequest req = ETCDSERVERPB__RANGE_REQUEST__INIT;
	Etcdserverpb__RangeResponse *resp;
	struct etcd_result r;
	char key[64], val[32];

	snprintf(key, sizeof(key), "/berth/test/round/%d", round);
	snprintf(val, sizeof(val), "v%d", round);
	put(c, key, val, 0);
	req.key = etcd_bytes(key);
	resp = (void *)call(c, ETCD_RANGE, &req.base, &r);
	ck_assert_msg(r.code == ETCD_OK, "round %d: %s", round, r.message);
	ck_assert_int_eq(resp->n_kvs, 1);
	snprintf(endpoint, len, "%s", r.endpoint);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
}

START_TEST(members_killed_fail_over_then_quorum_lost_and_back)
{
	Etcdserverpb__PutRequest p = ETCDSERVERPB__PUT_REQUEST__INIT;
	Etcdserverpb__RangeRequest rq = ETCDSERVERPB__RANGE_REQUEST__INIT;
	struct etcd_client *each[3], *c;
	const char *eps[3];
	struct waiter w[2];
	char where[ETCD_ENDPOINT_MAX];
	int i, leader, victim, other, round = 0;
	long t0;
	char *v;

	for (i = 0; i < 3; i++)
		each[i] = client(&ec.endpoints[i], 1, DEADLINE_MS);
	leader = leader_index(each, 3);
	ck_assert_int_ge(leader, 0);
	victim = (leader + 1) % 3;
	other = (leader + 2) % 3;
	/* The victim first: every call must go on from it. */
	eps[0] = ec.endpoints[victim];
	eps[1] = ec.endpoints[other];
	eps[2] = ec.endpoints[leader];
	c = client(eps, 3, DEADLINE_MS);
	write_read(c, round++, where, sizeof(where));
	ck_assert_str_eq(where, ec.endpoints[victim]);

	/*
	 * One of three killed: every call made after its death succeeds,
	 * elsewhere. (A write sent on the connection in the moment before
	 * gRPC sees it closed is reported as of unknown outcome, rightly:
	 * the client cannot tell whether etcd got it. So the calls start
	 * once the loop has run a moment past the kill.)
	 */
	etcdtest_kill(&ec, victim);
	run_for(300);
	for (i = 0; i < 20; i++) {
		write_read(c, round++, where, sizeof(where));
		ck_assert_str_ne(where, ec.endpoints[victim]);
	}
	/* A new client starts at the dead member, and goes on too. */
	etcd_client_free(c);
	c = client(eps, 3, DEADLINE_MS);
	write_read(c, round++, where, sizeof(where));
	ck_assert_str_ne(where, ec.endpoints[victim]);

	/* Restarted, it catches up and serves again. */
	etcdtest_restart(&ec, victim);
	ck_assert(etcdtest_healthy(&ec, victim, 30000));
	v = get(each[victim], "/berth/test/round/5", NULL);
	ck_assert_str_eq(v, "v5");
	free(v);

	/* Two of three killed, the leader among them: calls fail within
	 * their deadline, naming etcd and a member; none hangs. */
	etcdtest_kill(&ec, leader);
	etcdtest_kill(&ec, other);
	etcd_client_free(c);
	c = client(eps, 3, 2000);
	p.key = etcd_bytes("/berth/test/noquorum");
	p.value = etcd_bytes("x");
	rq.key = etcd_bytes("/berth/test/round/0");
	memset(w, 0, sizeof(w));
	t0 = mono_ms();
	etcd_call(c, ETCD_PUT, &p.base, waiter_cb, &w[0]);
	etcd_call(c, ETCD_RANGE, &rq.base, waiter_cb, &w[1]);
	run_until(&w[0].done);
	run_until(&w[1].done);
	for (i = 0; i < 2; i++) {
		fprintf(stderr, "without quorum, %s after %ld ms: %s\n",
		    i == 0 ? "Put" : "Range", w[i].ended - t0, w[i].r.message);
		ck_assert_ptr_null(w[i].reply);
		ck_assert_int_ne(w[i].r.code, ETCD_OK);
		ck_assert_msg(strncmp(w[i].r.message, "etcd 127.0.0.1:", 15) ==
		    0, "%s", w[i].r.message);
		ck_assert_msg(w[i].ended - t0 < 2000 + 1000,
		    "took %ld ms: %s", w[i].ended - t0, w[i].r.message);
	}
	/* The read is never "unknown"; the write is, or was refused. */
	ck_assert(!w[1].r.unknown);
	ck_assert(w[0].r.unknown ||
	    strstr(w[0].r.message, "no leader") != NULL ||
	    strstr(w[0].r.message, "not connected") != NULL ||
	    strstr(w[0].r.message, "no connection") != NULL);

	/* Once the survivor knows it has no leader, it refuses a write
	 * before proposing it: a failure, but never an unknown outcome. */
	run_for(2500);
	memset(w, 0, sizeof(w));
	t0 = mono_ms();
	etcd_call(c, ETCD_PUT, &p.base, waiter_cb, &w[0]);
	run_until(&w[0].done);
	fprintf(stderr, "leaderless, Put after %ld ms: %s\n", w[0].ended - t0,
	    w[0].r.message);
	ck_assert_int_eq(w[0].r.code, ETCD_UNAVAILABLE);
	ck_assert_msg(!w[0].r.unknown, "%s", w[0].r.message);
	ck_assert_msg(strstr(w[0].r.message, "etcdserver: no leader") != NULL,
	    "%s", w[0].r.message);
	ck_assert(w[0].ended - t0 < 2000 + 1000);

	/* Quorum back: calls succeed again, and nothing acknowledged is
	 * lost. */
	etcdtest_restart(&ec, leader);
	etcdtest_restart(&ec, other);
	for (i = 0; i < 3; i++)
		ck_assert(etcdtest_healthy(&ec, i, 30000));
	write_read(c, round++, where, sizeof(where));
	for (i = 0; i < round; i++) {
		char key[64], want[32];

		snprintf(key, sizeof(key), "/berth/test/round/%d", i);
		snprintf(want, sizeof(want), "v%d", i);
		v = get(c, key, NULL);
		ck_assert_str_eq(v, want);
		free(v);
	}
	etcd_client_free(c);
	for (i = 0; i < 3; i++)
		etcd_client_free(each[i]);
}
END_TEST

/*
 * A member that hangs (stopped, its sockets open) after a connection to
 * it was made: a read sent there is sent again elsewhere and succeeds; a
 * write sent there cannot be, and comes back as of unknown outcome
 * within its deadline, never retried.
 */
START_TEST(hung_member_reads_go_on_writes_are_unknown)
{
	Etcdserverpb__PutRequest p = ETCDSERVERPB__PUT_REQUEST__INIT;
	Etcdserverpb__RangeRequest rq = ETCDSERVERPB__RANGE_REQUEST__INIT;
	struct etcd_client *each[3], *reader, *writer;
	const char *eps[3];
	struct waiter w;
	char where[ETCD_ENDPOINT_MAX];
	int i, leader, victim;
	long t0;

	for (i = 0; i < 3; i++)
		each[i] = client(&ec.endpoints[i], 1, DEADLINE_MS);
	leader = leader_index(each, 3);
	ck_assert_int_ge(leader, 0);
	victim = (leader + 1) % 3;
	eps[0] = ec.endpoints[victim];
	eps[1] = ec.endpoints[(leader + 2) % 3];
	eps[2] = ec.endpoints[leader];
	reader = client(eps, 3, 3000);
	writer = client(eps, 3, 3000);
	/* Both connected to the victim, and it answered. */
	write_read(reader, 0, where, sizeof(where));
	ck_assert_str_eq(where, ec.endpoints[victim]);
	write_read(writer, 1, where, sizeof(where));
	ck_assert_str_eq(where, ec.endpoints[victim]);

	etcdtest_pause(&ec, victim);
	rq.key = etcd_bytes("/berth/test/round/0");
	memset(&w, 0, sizeof(w));
	t0 = mono_ms();
	etcd_call(reader, ETCD_RANGE, &rq.base, waiter_cb, &w);
	run_until(&w.done);
	fprintf(stderr, "hung member, Range after %ld ms: %s (%s)\n",
	    w.ended - t0, w.r.message, w.r.endpoint);
	ck_assert_msg(w.r.code == ETCD_OK, "%s", w.r.message);
	ck_assert_str_ne(w.r.endpoint, ec.endpoints[victim]);
	ck_assert_int_ge(w.r.attempts, 2);
	ck_assert_int_ge(w.ended - t0, 1000);	/* it did wait on the victim */
	protobuf_c_message_free_unpacked(w.reply, NULL);

	p.key = etcd_bytes("/berth/test/hung");
	p.value = etcd_bytes("maybe");
	memset(&w, 0, sizeof(w));
	t0 = mono_ms();
	etcd_call(writer, ETCD_PUT, &p.base, waiter_cb, &w);
	run_until(&w.done);
	fprintf(stderr, "hung member, Put after %ld ms: %s\n", w.ended - t0,
	    w.r.message);
	ck_assert_ptr_null(w.reply);
	ck_assert_int_eq(w.r.code, ETCD_DEADLINE_EXCEEDED);
	ck_assert(w.r.unknown);
	ck_assert_int_eq(w.r.attempts, 1);
	ck_assert_str_eq(w.r.endpoint, ec.endpoints[victim]);
	ck_assert_msg(strstr(w.r.message, "outcome unknown") != NULL, "%s",
	    w.r.message);
	ck_assert(w.ended - t0 < 3000 + 1000);

	/* Back, the member serves again; the writer goes on from it. */
	etcdtest_resume(&ec, victim);
	ck_assert(etcdtest_healthy(&ec, victim, 30000));
	write_read(writer, 2, where, sizeof(where));
	etcd_client_free(reader);
	etcd_client_free(writer);
	for (i = 0; i < 3; i++)
		etcd_client_free(each[i]);
}
END_TEST

/* Freeing a client ends its calls, in flight or connecting, at once. */
START_TEST(free_cancels_calls)
{
	Etcdserverpb__RangeRequest rq = ETCDSERVERPB__RANGE_REQUEST__INIT;
	const char *dead[] = { "127.0.0.1:1" };
	struct etcd_client *live, *gone;
	struct waiter w[2];
	long t0;

	live = client(ec.endpoints, ec.n, DEADLINE_MS);
	gone = client(dead, 1, DEADLINE_MS);
	rq.key = etcd_bytes("/berth/test/x");
	memset(w, 0, sizeof(w));
	etcd_call(live, ETCD_RANGE, &rq.base, waiter_cb, &w[0]);
	etcd_call(gone, ETCD_RANGE, &rq.base, waiter_cb, &w[1]);
	/* Let both start: one connecting to etcd, one failing over. */
	run_for(50);
	t0 = mono_ms();
	etcd_client_free(live);
	etcd_client_free(gone);
	ck_assert(w[0].done && w[1].done);
	ck_assert_int_lt(mono_ms() - t0, 1000);
	/* The live one may have had its answer already. */
	ck_assert(w[0].r.code == ETCD_CANCELLED || w[0].r.code == ETCD_OK);
	if (w[0].reply != NULL)
		protobuf_c_message_free_unpacked(w[0].reply, NULL);
	ck_assert_int_eq(w[1].r.code, ETCD_CANCELLED);
	ck_assert_msg(strstr(w[1].r.message, "client closed") != NULL, "%s",
	    w[1].r.message);
}
END_TEST

START_TEST(malformed_endpoints_are_refused)
{
	const char *bad[] = { "127.0.0.1", "127.0.0.1:0", "127.0.0.1:http",
		":2379", "127.0.0.1:70000" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_ptr_null(etcd_client_new(base, &bad[i], 1, 1000));
	ck_assert_ptr_null(etcd_client_new(base, bad, 0, 1000));
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("etcd");

	if (!etcdtest_available()) {
		fprintf(stderr, "test_etcd: %s missing (etcd-server)\n",
		    ETCDTEST_BIN);
		return 77;
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, put_get_delete);
	tcase_add_test(tc, cas_race_has_one_winner);
	tcase_add_test(tc, lease_kept_alive_then_revoked_or_expired);
	tcase_add_test(tc, members_killed_fail_over_then_quorum_lost_and_back);
	tcase_add_test(tc, hung_member_reads_go_on_writes_are_unknown);
	tcase_add_test(tc, free_cancels_calls);
	tcase_add_test(tc, malformed_endpoints_are_refused);
	return harness_run("etcd", tc);
}
