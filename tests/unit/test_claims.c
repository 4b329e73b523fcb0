/*
 * test_claims.c: the registry's claim rules on a database of its own,
 * without the process around them: single-node-single-writer admits one
 * writer and readers beside it, single-node-multi-writer several
 * writers, claims on a volume share one mode, and a volume keeps the
 * topologies it was put with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <check.h>

#include "harness.h"
#include "registry.h"

static char *dir;
static struct registry reg;

static void
setup(void)
{
	char err[256];
	char path[512];

	dir = harness_tmpdir("claims");
	snprintf(path, sizeof(path), "%s/registry", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	memset(&reg, 0, sizeof(reg));
	ck_assert_msg(store_open(&reg.store, dir, err, sizeof(err)) == 0,
	    "store_open: %s", err);
	events_init(&reg);
	ck_assert_int_eq(store_begin(&reg.store), 0);
}

static void
teardown(void)
{
	store_rollback(&reg.store);
	events_free(&reg);
	store_close(&reg.store);
	harness_rmtree(dir);
	free(dir);
}

/* Run one request; its error code (NONE on success), message in msg. */
static Berth__ErrorCode
run(Berth__Envelope *env, int (*fn)(struct registry *, struct op *),
    char *msg, size_t n, Berth__Envelope **rep)
{
	static struct op op;
	Berth__ErrorCode code;

	arena_free(&op.arena);
	memset(&op, 0, sizeof(op));
	op.req = env;
	op.body = env->body_case;
	fn(&reg, &op);
	code = op.code;
	snprintf(msg, n, "%s", op.msg);
	if (rep != NULL)
		*rep = op.rep;
	return code;
}

static void
put_volume(const char *id, Berth__AccessMode m, Berth__Topology **topo,
    size_t ntopo)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PutVolume pv = BERTH__PUT_VOLUME__INIT;
	Berth__Volume v = BERTH__VOLUME__INIT;
	Berth__VolumeCapability c = BERTH__VOLUME_CAPABILITY__INIT, *cs[1];
	char msg[256];

	v.namespace_ = "default";
	v.id = (char *)id;
	v.plugin_id = "hp";
	v.external_id = (char *)id;
	c.access_mode = m;
	c.attachment_mode = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	cs[0] = &c;
	v.capabilities = cs;
	v.n_capabilities = 1;
	v.accessible_topology = topo;
	v.n_accessible_topology = ntopo;
	v.requisite = topo;
	v.n_requisite = ntopo;
	pv.volume = &v;
	env.body_case = BERTH__ENVELOPE__BODY_PUT_VOLUME;
	env.put_volume = &pv;
	ck_assert_int_eq(run(&env, claims_put_volume, msg, sizeof(msg), NULL),
	    BERTH__ERROR_CODE__ERROR_NONE);
}

/* A claim by alloc on volume id; its code, the message in msg. */
static Berth__ErrorCode
claim(const char *id, const char *alloc, Berth__AccessMode m, bool write,
    char *msg, size_t n)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__ClaimVolume cv = BERTH__CLAIM_VOLUME__INIT;
	Berth__Claim c = BERTH__CLAIM__INIT;

	c.namespace_ = "default";
	c.volume = (char *)id;
	c.alloc = (char *)alloc;
	c.mode = write ? BERTH__CLAIM_MODE__CLAIM_MODE_WRITE :
	    BERTH__CLAIM_MODE__CLAIM_MODE_READ;
	c.access_mode = m;
	c.attachment_mode = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	cv.claim = &c;
	env.body_case = BERTH__ENVELOPE__BODY_CLAIM_VOLUME;
	env.claim_volume = &cv;
	return run(&env, claims_claim, msg, n, NULL);
}

#define SNSW BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER
#define SNMW BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_MULTI_WRITER
#define OK BERTH__ERROR_CODE__ERROR_NONE
#define CONFLICT BERTH__ERROR_CODE__ERROR_CONFLICT

START_TEST(single_node_single_writer_admits_one_writer)
{
	char msg[256];

	put_volume("v", SNSW, NULL, 0);
	ck_assert_int_eq(claim("v", "a1", SNSW, true, msg, sizeof(msg)), OK);
	ck_assert_int_eq(claim("v", "a2", SNSW, true, msg, sizeof(msg)),
	    CONFLICT);
	ck_assert_str_eq(msg, "volume default/v is single-node-single-writer "
	    "and alloc a1 already holds its write claim");
	/* A reader beside the writer, and the writer's own claim again. */
	ck_assert_int_eq(claim("v", "r1", SNSW, false, msg, sizeof(msg)), OK);
	ck_assert_int_eq(claim("v", "a1", SNSW, true, msg, sizeof(msg)), OK);
}
END_TEST

START_TEST(single_node_multi_writer_admits_several)
{
	char msg[256];

	put_volume("m", SNMW, NULL, 0);
	ck_assert_int_eq(claim("m", "a1", SNMW, true, msg, sizeof(msg)), OK);
	ck_assert_int_eq(claim("m", "a2", SNMW, true, msg, sizeof(msg)), OK);
	ck_assert_int_eq(claim("m", "a3", SNMW, false, msg, sizeof(msg)), OK);
	/* One mode per volume: neither the other new one nor an old one. */
	ck_assert_int_eq(claim("m", "a4", SNSW, true, msg, sizeof(msg)),
	    CONFLICT);
	ck_assert_int_eq(claim("m", "a5",
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER, true, msg,
	    sizeof(msg)), CONFLICT);
	ck_assert_str_eq(msg, "volume default/m does not offer access mode "
	    "single-node-writer with that attachment mode");
	ck_assert_str_eq(reg_access_mode_name(SNMW),
	    "single-node-multi-writer");
}
END_TEST

START_TEST(topologies_kept_with_the_volume)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *rep;
	Berth__GetVolume gv = BERTH__GET_VOLUME__INIT;
	Berth__VolumeKey key = BERTH__VOLUME_KEY__INIT;
	Berth__KeyValue kv = BERTH__KEY_VALUE__INIT, *kvs[1] = { &kv };
	Berth__Topology t = BERTH__TOPOLOGY__INIT, *ts[1] = { &t };
	const Berth__Volume *v;
	char msg[256];

	kv.key = "zone";
	kv.value = "a";
	t.segments = kvs;
	t.n_segments = 1;
	put_volume("t", SNSW, ts, 1);
	key.namespace_ = "default";
	key.id = "t";
	gv.key = &key;
	env.body_case = BERTH__ENVELOPE__BODY_GET_VOLUME;
	env.get_volume = &gv;
	ck_assert_int_eq(run(&env, claims_get_volume, msg, sizeof(msg), &rep),
	    OK);
	v = rep->volume_reply->volume;
	ck_assert_uint_eq(v->n_accessible_topology, 1);
	ck_assert_uint_eq(v->accessible_topology[0]->n_segments, 1);
	ck_assert_str_eq(v->accessible_topology[0]->segments[0]->key, "zone");
	ck_assert_str_eq(v->accessible_topology[0]->segments[0]->value, "a");
	ck_assert_uint_eq(v->n_requisite, 1);
	ck_assert_uint_eq(v->n_preferred, 0);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("claims");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, single_node_single_writer_admits_one_writer);
	tcase_add_test(tc, single_node_multi_writer_admits_several);
	tcase_add_test(tc, topologies_kept_with_the_volume);
	return harness_run("claims", tc);
}
