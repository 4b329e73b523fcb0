/*
 * test_registry.c: berth-registry through its real binary and database:
 * a populated registry answers the same after a restart; plugin takeover,
 * promotion and re-registration; claim rules per access mode; events in
 * order and replayed from an index; bad input refused with typed errors
 * while the registry keeps serving; damaged or newer databases refused;
 * a volume's mount options kept, one id per provider volume, and an old
 * database migrated; task ids held, released and reused last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <sqlite3.h>

#include "regtest.h"

#define P_NODE BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE
#define P_CTRL BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER
#define E_NONE BERTH__ERROR_CODE__ERROR_NONE

static void
must(struct rt_res *r, const char *what)
{
	ck_assert_msg(r->code == E_NONE, "%s: %s: %s", what,
	    ipc_error_name(r->code), r->msg);
}

static void
must_fail(struct rt_res *r, Berth__ErrorCode code, const char *what)
{
	ck_assert_msg(r->code == code, "%s: got %s (%s), wanted %s", what,
	    ipc_error_name(r->code), r->msg, ipc_error_name(code));
}

static void
reg(struct regtest *t, Berth__PluginType type, const char *name,
    const char *alloc, const char *endpoint, Berth__PluginInstance *out)
{
	Berth__PluginInstance pi;
	struct rt_res r;

	rt_instance(&pi, type, name, alloc, endpoint);
	RT(t, r, regclient_register(t->rc, &pi, rt_cb, &r));
	must(&r, "register");
	if (out != NULL) {
		*out = *r.env->register_plugin_reply->instance;
		out->name = out->alloc = out->endpoint = NULL;
	}
	rt_done(&r);
}

static void
put_volume(struct regtest *t, const char *ns, const char *id,
    Berth__AccessMode am)
{
	Berth__Volume v = BERTH__VOLUME__INIT;
	Berth__VolumeCapability cap = BERTH__VOLUME_CAPABILITY__INIT;
	Berth__VolumeCapability *caps[] = { &cap };
	Berth__KeyValue kv = BERTH__KEY_VALUE__INIT;
	Berth__KeyValue *ctx[] = { &kv };
	struct rt_res r;
	char ext[160];

	/* One provider volume has one id: each its own. */
	snprintf(ext, sizeof(ext), "ext:%s/%s 1", ns, id);
	v.namespace_ = (char *)ns;
	v.id = (char *)id;
	v.plugin_id = "hostpath";
	v.external_id = ext;
	cap.access_mode = am;
	cap.attachment_mode = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	v.capabilities = caps;
	v.n_capabilities = 1;
	kv.key = "server";
	kv.value = "10.0.0.1";
	v.context = ctx;
	v.n_context = 1;
	RT(t, r, regclient_put_volume(t->rc, &v, rt_cb, &r));
	must(&r, "put_volume");
	rt_done(&r);
}

static Berth__ErrorCode
claim(struct regtest *t, const char *vol, const char *alloc,
    Berth__ClaimMode mode, Berth__AccessMode am)
{
	Berth__Claim c = BERTH__CLAIM__INIT;
	struct rt_res r;
	Berth__ErrorCode code;

	c.namespace_ = "default";
	c.volume = (char *)vol;
	c.alloc = (char *)alloc;
	c.mode = mode;
	c.access_mode = am;
	c.attachment_mode = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	RT(t, r, regclient_claim(t->rc, &c, rt_cb, &r));
	code = r.code;
	rt_done(&r);
	return code;
}

/* Everything the registry holds, as one comparable byte string. */
static char *
snapshot(struct regtest *t, size_t *lenp, int nvol)
{
	struct rt_res r;
	char *buf = NULL, id[32];
	size_t len = 0, i, n;
	FILE *f = open_memstream(&buf, &len);
	uint8_t tmp[70000];
	int v;

	RT(t, r, regclient_list_plugins(t->rc, 0, NULL, rt_plugins_cb, &r));
	must(&r, "list_plugins");
	for (i = 0; i < r.n; i++) {
		n = protobuf_c_message_pack(r.items[i], tmp);
		fwrite(tmp, 1, n, f);
	}
	fprintf(f, "|%zu plugins|", r.n);
	rt_done(&r);
	RT(t, r, regclient_list_handles(t->rc, 0, rt_handles_cb, &r));
	must(&r, "list_handles");
	for (i = 0; i < r.n; i++) {
		n = protobuf_c_message_pack(r.items[i], tmp);
		fwrite(tmp, 1, n, f);
	}
	fprintf(f, "|%zu handles|", r.n);
	rt_done(&r);
	for (v = 0; v < nvol; v++) {
		snprintf(id, sizeof(id), "vol%d", v);
		RT(t, r, regclient_get_volume(t->rc, "default", id, rt_cb, &r));
		must(&r, "get_volume");
		n = protobuf_c_message_pack(&r.env->volume_reply->base, tmp);
		fwrite(tmp, 1, n, f);
		rt_done(&r);
	}
	fclose(f);
	*lenp = len;
	return buf;
}

START_TEST(populated_registry_answers_the_same_after_restart)
{
	struct regtest t;
	struct rt_res r;
	char name[32], alloc[48], ep[96], task[16];
	uint8_t state[2000];
	size_t la, lb;
	char *a, *b;
	int i, j, k;

	regtest_dir(&t, "reg-restart");
	regtest_start(&t);
	for (i = 0; i < 60; i++) {
		for (j = 0; j < 3; j++) {
			snprintf(name, sizeof(name), "plugin-%d", i);
			snprintf(alloc, sizeof(alloc),
			    "0000%04d-aaaa-bbbb-cccc-%012d", i, j);
			snprintf(ep, sizeof(ep), "unix:///var/lib/berth/csi/"
			    "plugins/%s/csi.sock", alloc);
			reg(&t, i % 2 ? P_NODE : P_CTRL, name, alloc, ep, NULL);
		}
	}
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "vol%d", i);
		put_volume(&t, "default", name,
		    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
		for (j = 0; j < 3; j++) {
			snprintf(alloc, sizeof(alloc), "alloc-%d", j);
			ck_assert_int_eq(claim(&t, name, alloc, j == 0 ?
			    BERTH__CLAIM_MODE__CLAIM_MODE_WRITE :
			    BERTH__CLAIM_MODE__CLAIM_MODE_READ,
			    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER),
			    E_NONE);
		}
	}
	/* Enough handles for list pages to end inside every kind. */
	memset(state, 0xa5, sizeof(state));
	for (i = 0; i < 1200; i++) {
		Berth__Handle h = BERTH__HANDLE__INIT;
		Berth__ReattachHandle ra = BERTH__REATTACH_HANDLE__INIT;
		Berth__ProcessHandle ph = BERTH__PROCESS_HANDLE__INIT;
		Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;

		snprintf(alloc, sizeof(alloc), "alloc-%d", i);
		snprintf(task, sizeof(task), "task%d", i % 7);
		k = i % 3;
		if (k == 0) {
			ra.type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER;
			ra.name = "docker";
			ra.alloc = alloc;
			ra.task = task;
			state[0] = (uint8_t)i;
			ra.state.data = state;
			ra.state.len = sizeof(state);
			h.handle_case = BERTH__HANDLE__HANDLE_REATTACH;
			h.reattach = &ra;
		} else if (k == 1) {
			ph.plugin = "hostpath";
			ph.alloc = alloc;
			ph.pid = 1000 + i;
			ph.start_time = 123456 + i;
			h.handle_case = BERTH__HANDLE__HANDLE_PROCESS;
			h.process = &ph;
		} else {
			mh.plugin = "hostpath";
			mh.namespace_ = "default";
			mh.volume = "vol1";
			mh.alloc = alloc;
			mh.task = task;
			mh.usage = "rw-file-system-multi-node-multi-writer";
			mh.staged = true;
			mh.published = i % 2;
			h.handle_case = BERTH__HANDLE__HANDLE_MOUNT;
			h.mount = &mh;
		}
		RT(&t, r, regclient_put_handle(t.rc, &h, rt_cb, &r));
		must(&r, "put_handle");
		rt_done(&r);
	}
	a = snapshot(&t, &la, 10);
	ck_assert(strstr(a, "|180 plugins|") != NULL);
	ck_assert(memmem(a, la, "|1200 handles|", 14) != NULL);
	regtest_stop(&t);
	regtest_start(&t);
	b = snapshot(&t, &lb, 10);
	ck_assert_uint_eq(la, lb);
	ck_assert_msg(memcmp(a, b, la) == 0, "answers differ after restart");
	free(a);
	free(b);
	regtest_cleanup(&t);
}
END_TEST

static const char *
active_alloc(struct regtest *t, const char *name)
{
	static char buf[64];
	struct rt_res r;

	RT(t, r, regclient_get_plugin(t->rc, P_NODE, name, NULL, rt_cb, &r));
	must(&r, "get_plugin");
	ck_assert_uint_eq(r.env->plugin_list->n_instances, 1);
	ck_assert(r.env->plugin_list->instances[0]->active);
	snprintf(buf, sizeof(buf), "%s",
	    r.env->plugin_list->instances[0]->alloc);
	rt_done(&r);
	return buf;
}

START_TEST(takeover_promotion_and_reregistration)
{
	struct regtest t;
	struct rt_res r;
	Berth__PluginInstance a1, a1b;
	uint64_t idx;

	regtest_dir(&t, "reg-takeover");
	regtest_start(&t);
	reg(&t, P_NODE, "nfs", "a1", "unix:///x/a1", &a1);
	ck_assert(a1.active);
	reg(&t, P_NODE, "nfs", "a2", "unix:///x/a2", NULL);
	reg(&t, P_NODE, "nfs", "a3", "unix:///x/a3", NULL);
	/* The newest alloc takes over. */
	ck_assert_str_eq(active_alloc(&t, "nfs"), "a3");
	/* Re-registering an old alloc updates it and does not reorder. */
	reg(&t, P_NODE, "nfs", "a1", "unix:///x/a1-new", &a1b);
	ck_assert_uint_eq(a1b.create_index, a1.create_index);
	ck_assert_uint_gt(a1b.modify_index, a1.modify_index);
	ck_assert(!a1b.active);
	ck_assert_str_eq(active_alloc(&t, "nfs"), "a3");
	RT(&t, r, regclient_list_plugins(t.rc, P_NODE, "nfs", rt_plugins_cb,
	    &r));
	must(&r, "list");
	ck_assert_uint_eq(r.n, 3);
	ck_assert_str_eq(((Berth__PluginInstance *)r.items[0])->alloc, "a1");
	ck_assert_str_eq(((Berth__PluginInstance *)r.items[0])->endpoint,
	    "unix:///x/a1-new");
	ck_assert_str_eq(((Berth__PluginInstance *)r.items[2])->alloc, "a3");
	ck_assert(((Berth__PluginInstance *)r.items[2])->active);
	rt_done(&r);
	/* Deregistering the active one promotes the next newest at once. */
	RT(&t, r, regclient_deregister(t.rc, P_NODE, "nfs", "a3", rt_cb, &r));
	must(&r, "deregister a3");
	ck_assert_str_eq(r.env->deregister_plugin_reply->promoted_alloc, "a2");
	idx = r.env->deregister_plugin_reply->index;
	ck_assert_uint_gt(idx, a1b.modify_index);
	rt_done(&r);
	ck_assert_str_eq(active_alloc(&t, "nfs"), "a2");
	/* An older one goes without a promotion. */
	RT(&t, r, regclient_deregister(t.rc, P_NODE, "nfs", "a1", rt_cb, &r));
	must(&r, "deregister a1");
	ck_assert_str_eq(r.env->deregister_plugin_reply->promoted_alloc, "");
	rt_done(&r);
	ck_assert_str_eq(active_alloc(&t, "nfs"), "a2");
	/* Unknown type, name or alloc: not found. */
	RT(&t, r, regclient_deregister(t.rc, P_CTRL, "nfs", "a2", rt_cb, &r));
	must_fail(&r, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "wrong type");
	rt_done(&r);
	RT(&t, r, regclient_deregister(t.rc, P_NODE, "nope", "a2", rt_cb, &r));
	must_fail(&r, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "wrong name");
	rt_done(&r);
	RT(&t, r, regclient_deregister(t.rc, P_NODE, "nfs", "a9", rt_cb, &r));
	must_fail(&r, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "wrong alloc");
	rt_done(&r);
	RT(&t, r, regclient_deregister(t.rc, P_NODE, "nfs", "a2", rt_cb, &r));
	must(&r, "deregister a2");
	ck_assert_str_eq(r.env->deregister_plugin_reply->promoted_alloc, "");
	rt_done(&r);
	RT(&t, r, regclient_get_plugin(t.rc, P_NODE, "nfs", NULL, rt_cb, &r));
	must_fail(&r, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "none left");
	rt_done(&r);
	regtest_cleanup(&t);
}
END_TEST

/* AllocateIds for alloc in [first, first + count): the id, or -code. */
static long
ids(struct regtest *t, const char *alloc, uint32_t first, uint32_t count)
{
	struct rt_res r;
	long id;

	RT(t, r, regclient_allocate_ids(t->rc, alloc, first, count, rt_cb,
	    &r));
	if (r.code != E_NONE) {
		id = -(long)r.code;
		rt_done(&r);
		return id;
	}
	ck_assert_str_eq(r.env->ids_reply->alloc, alloc);
	id = r.env->ids_reply->id;
	rt_done(&r);
	return id;
}

static int
release_ids(struct regtest *t, const char *alloc)
{
	struct rt_res r;
	int code;

	RT(t, r, regclient_release_ids(t->rc, alloc, rt_cb, &r));
	code = r.code;
	rt_done(&r);
	return code;
}

START_TEST(task_ids_are_held_until_released_and_reused_last)
{
	const long CONFLICT = -BERTH__ERROR_CODE__ERROR_CONFLICT;
	const long BAD = -BERTH__ERROR_CODE__ERROR_BAD_REQUEST;
	struct regtest t;

	regtest_dir(&t, "reg-ids");
	regtest_start(&t);
	/* Never-used ids first, lowest first; an alloc keeps its own. */
	ck_assert_int_eq(ids(&t, "a", 70000, 4), 70000);
	ck_assert_int_eq(ids(&t, "b", 70000, 4), 70001);
	ck_assert_int_eq(ids(&t, "a", 70000, 4), 70000);
	ck_assert_int_eq(ids(&t, "c", 70000, 4), 70002);
	ck_assert_int_eq(release_ids(&t, "b"), E_NONE);
	ck_assert_int_eq(release_ids(&t, "b"),
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND);
	/* 70001 is free, but 70003 was never used: that first. */
	ck_assert_int_eq(ids(&t, "d", 70000, 4), 70003);
	ck_assert_int_eq(release_ids(&t, "d"), E_NONE);
	ck_assert_int_eq(release_ids(&t, "a"), E_NONE);
	/* Recorded durably: a restarted registry knows all of it. */
	regtest_stop(&t);
	regtest_start(&t);
	ck_assert_int_eq(ids(&t, "c", 70000, 4), 70002);
	/* The range used up: released ones, released longest ago first
	 * (b's 70001, then d's 70003, then a's 70000). */
	ck_assert_int_eq(ids(&t, "e", 70000, 4), 70001);
	ck_assert_int_eq(ids(&t, "f", 70000, 4), 70003);
	ck_assert_int_eq(ids(&t, "g", 70000, 4), 70000);
	ck_assert_int_eq(ids(&t, "h", 70000, 4), CONFLICT);
	/* Another range: ids held outside it do not count. */
	ck_assert_int_eq(ids(&t, "h", 80000, 2), 80000);
	/* Root's id, an empty or too large range, a bad alloc name. */
	ck_assert_int_eq(ids(&t, "i", 0, 10), BAD);
	ck_assert_int_eq(ids(&t, "i", 70000, 0), BAD);
	ck_assert_int_eq(ids(&t, "i", 70000, 1000001), BAD);
	ck_assert_int_eq(ids(&t, "i", 2147483000U, 1000), BAD);
	ck_assert_int_eq(ids(&t, "../x", 70000, 4), BAD);
	ck_assert_int_eq(release_ids(&t, ""), BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	regtest_cleanup(&t);
}
END_TEST

START_TEST(claims_follow_the_access_mode)
{
	struct regtest t;
	struct rt_res r;
	const Berth__ClaimMode R = BERTH__CLAIM_MODE__CLAIM_MODE_READ;
	const Berth__ClaimMode W = BERTH__CLAIM_MODE__CLAIM_MODE_WRITE;
	const Berth__ErrorCode CONFLICT = BERTH__ERROR_CODE__ERROR_CONFLICT;
	const Berth__ErrorCode BAD = BERTH__ERROR_CODE__ERROR_BAD_REQUEST;
	Berth__AccessMode snw =
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER;
	Berth__AccessMode snro =
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY;
	Berth__AccessMode mnro =
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_READER_ONLY;
	Berth__AccessMode mnsw =
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_SINGLE_WRITER;
	Berth__AccessMode mnmw =
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER;

	regtest_dir(&t, "reg-claims");
	regtest_start(&t);
	ck_assert_int_eq(claim(&t, "ghost", "a1", R, snw),
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND);

	/* single-node-writer: one writer, readers beside it. */
	put_volume(&t, "default", "snw", snw);
	ck_assert_int_eq(claim(&t, "snw", "a1", W, snw), E_NONE);
	ck_assert_int_eq(claim(&t, "snw", "a2", W, snw), CONFLICT);
	ck_assert_int_eq(claim(&t, "snw", "a2", R, snw), E_NONE);
	/* The writer may claim again (an update), another may not. */
	ck_assert_int_eq(claim(&t, "snw", "a1", W, snw), E_NONE);
	RT(&t, r, regclient_release(t.rc, "default", "snw", "a1", rt_cb, &r));
	must(&r, "release");
	rt_done(&r);
	ck_assert_int_eq(claim(&t, "snw", "a3", W, snw), E_NONE);
	/* A claim in another access mode cannot join. */
	ck_assert_int_eq(claim(&t, "snw", "a4", R, mnmw), CONFLICT);

	/* Reader-only modes: no write claim at all. */
	put_volume(&t, "default", "snro", snro);
	ck_assert_int_eq(claim(&t, "snro", "a1", W, snro), BAD);
	ck_assert_int_eq(claim(&t, "snro", "a1", R, snro), E_NONE);
	ck_assert_int_eq(claim(&t, "snro", "a2", R, snro), E_NONE);
	put_volume(&t, "default", "mnro", mnro);
	ck_assert_int_eq(claim(&t, "mnro", "a1", W, mnro), BAD);
	ck_assert_int_eq(claim(&t, "mnro", "a1", R, mnro), E_NONE);
	ck_assert_int_eq(claim(&t, "mnro", "a2", R, mnro), E_NONE);

	/* multi-node-single-writer: one writer. */
	put_volume(&t, "default", "mnsw", mnsw);
	ck_assert_int_eq(claim(&t, "mnsw", "a1", W, mnsw), E_NONE);
	ck_assert_int_eq(claim(&t, "mnsw", "a2", W, mnsw), CONFLICT);
	ck_assert_int_eq(claim(&t, "mnsw", "a2", R, mnsw), E_NONE);

	/* multi-node-multi-writer: many writers. */
	put_volume(&t, "default", "mnmw", mnmw);
	ck_assert_int_eq(claim(&t, "mnmw", "a1", W, mnmw), E_NONE);
	ck_assert_int_eq(claim(&t, "mnmw", "a2", W, mnmw), E_NONE);
	ck_assert_int_eq(claim(&t, "mnmw", "a3", W, mnmw), E_NONE);
	/* Not a mode the volume offers. */
	ck_assert_int_eq(claim(&t, "mnmw", "a9", W, mnsw), CONFLICT);

	RT(&t, r, regclient_get_volume(t.rc, "default", "mnmw", rt_cb, &r));
	must(&r, "get_volume");
	ck_assert_uint_eq(r.env->volume_reply->n_claims, 3);
	ck_assert_str_eq(r.env->volume_reply->volume->external_id,
	    "ext:default/mnmw 1");
	ck_assert_uint_eq(r.env->volume_reply->volume->n_context, 1);
	rt_done(&r);
	RT(&t, r, regclient_delete_volume(t.rc, "default", "mnmw", rt_cb, &r));
	must_fail(&r, CONFLICT, "delete a claimed volume");
	rt_done(&r);
	RT(&t, r, regclient_release(t.rc, "default", "mnmw", "zz", rt_cb, &r));
	must_fail(&r, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "release unclaimed");
	rt_done(&r);
	regtest_cleanup(&t);
}
END_TEST

struct evlog {
	Berth__Event ev[256];
	char alloc[256][16];
	size_t n;
	int gaps;
	size_t total;			/* every event, kept or not */
	uint64_t last;
	bool disorder;
};

static void
on_event(struct regclient_sub *sub, enum regclient_event_kind kind,
    const Berth__Event *ev, void *arg)
{
	struct evlog *l = arg;

	(void)sub;
	if (kind == REGCLIENT_GAP)
		l->gaps++;
	if (kind != REGCLIENT_EVENT)
		return;
	if (ev->index <= l->last)
		l->disorder = true;
	l->last = ev->index;
	l->total++;
	if (l->n >= 256)
		return;
	l->ev[l->n] = *ev;
	snprintf(l->alloc[l->n], sizeof(l->alloc[0]), "%s", ev->alloc);
	l->n++;
}

static bool
wait_events(struct regtest *t, struct evlog *l, size_t n)
{
	int i;

	for (i = 0; i < 500 && l->n < n; i++)
		regtest_spin(t, 10);
	return l->n >= n;
}

START_TEST(events_in_order_and_replayed_from_an_index)
{
	struct regtest t;
	struct rt_res r;
	static struct evlog all, tail, after;
	const Berth__EventType REG = BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_REGISTERED;
	const Berth__EventType DEREG =
	    BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_DEREGISTERED;
	const Berth__EventType PROM = BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_PROMOTED;
	size_t i;
	uint64_t mid;

	regtest_dir(&t, "reg-events");
	regtest_start(&t);
	ck_assert_ptr_nonnull(regclient_subscribe(t.rc, 0, false, on_event,
	    &all));
	reg(&t, P_NODE, "ev", "a1", "unix:///a1", NULL);
	reg(&t, P_NODE, "ev", "a2", "unix:///a2", NULL);
	RT(&t, r, regclient_deregister(t.rc, P_NODE, "ev", "a2", rt_cb, &r));
	must(&r, "deregister");
	rt_done(&r);
	put_volume(&t, "default", "v", BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER);
	ck_assert_int_eq(claim(&t, "v", "a1", BERTH__CLAIM_MODE__CLAIM_MODE_WRITE,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER), E_NONE);
	RT(&t, r, regclient_release(t.rc, "default", "v", "a1", rt_cb, &r));
	must(&r, "release");
	rt_done(&r);
	ck_assert(wait_events(&t, &all, 6));
	ck_assert_int_eq(all.ev[0].type, REG);
	ck_assert_str_eq(all.alloc[0], "a1");
	ck_assert(all.ev[0].active);
	ck_assert_int_eq(all.ev[1].type, REG);
	ck_assert_int_eq(all.ev[2].type, DEREG);
	ck_assert_str_eq(all.alloc[2], "a2");
	ck_assert_int_eq(all.ev[3].type, PROM);
	ck_assert_str_eq(all.alloc[3], "a1");
	ck_assert_int_eq(all.ev[4].type,
	    BERTH__EVENT_TYPE__EVENT_TYPE_CLAIM_ADDED);
	ck_assert_int_eq(all.ev[5].type,
	    BERTH__EVENT_TYPE__EVENT_TYPE_CLAIM_RELEASED);
	for (i = 1; i < all.n; i++)
		ck_assert_uint_gt(all.ev[i].index, all.ev[i - 1].index);
	ck_assert_uint_eq(all.n, 6);

	/* From an index: exactly what came after it. */
	mid = all.ev[2].index;
	ck_assert_ptr_nonnull(regclient_subscribe(t.rc, mid, false, on_event,
	    &tail));
	ck_assert(wait_events(&t, &tail, 3));
	regtest_spin(&t, 100);
	ck_assert_uint_eq(tail.n, 3);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(tail.ev[i].index, all.ev[3 + i].index);

	/* And after a restart, from the persisted log, then live. */
	regtest_stop(&t);
	regtest_start(&t);
	ck_assert_ptr_nonnull(regclient_subscribe(t.rc, all.ev[0].index, false,
	    on_event, &after));
	reg(&t, P_NODE, "ev", "a5", "unix:///a5", NULL);
	ck_assert(wait_events(&t, &after, 6));
	regtest_spin(&t, 100);
	ck_assert_uint_eq(after.n, 6);
	for (i = 0; i < 5; i++)
		ck_assert_uint_eq(after.ev[i].index, all.ev[1 + i].index);
	ck_assert_str_eq(after.alloc[5], "a5");
	ck_assert_int_eq(after.gaps, 0);
	regtest_cleanup(&t);
}
END_TEST

struct raw {
	size_t events, resyncs;
	uint64_t resync_from, last;
	uint64_t sub;
};

static void
raw_notice(const Berth__Envelope *env, void *arg)
{
	struct raw *w = arg;

	if (env->body_case == BERTH__ENVELOPE__BODY_EVENT_NOTICE) {
		if (env->event_notice->event->subscription != w->sub)
			return;
		w->events++;
		w->last = env->event_notice->event->index;
	} else if (env->body_case == BERTH__ENVELOPE__BODY_RESYNC &&
	    env->resync->subscription == w->sub) {
		w->resyncs++;
		w->resync_from = env->resync->from_index;
	}
}

static void
raw_reply(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct raw *w = arg;

	(void)c;
	(void)fd;
	ck_assert_ptr_null(env->error);
	w->sub = env->subscribe_reply->subscription;
}

static void
count_cb(const struct regclient_result *res, void *arg)
{
	int *n = arg;

	if (res->code == E_NONE)
		(*n)++;
	else
		*n = -100000;
}

START_TEST(a_slow_subscriber_is_told_to_resync_and_writers_go_on)
{
	struct regtest t;
	static struct evlog fast;
	struct raw w = { 0 };
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Subscribe s = BERTH__SUBSCRIBE__INIT;
	Berth__PluginInstance pi;
	char alloc[32];
	int acked = 0, i, total = 3000;

	regtest_dir(&t, "reg-slow");
	regtest_start(&t);
	t.raw_notice = raw_notice;
	t.raw_arg = &w;
	/* A subscriber that never acknowledges. */
	env.body_case = BERTH__ENVELOPE__BODY_SUBSCRIBE;
	env.subscribe = &s;
	ck_assert_int_eq(chan_request(t.chan, &env, -1, 5000, raw_reply, &w),
	    0);
	ck_assert_ptr_nonnull(regclient_subscribe(t.rc, 0, false, on_event,
	    &fast));
	regtest_spin(&t, 50);
	ck_assert_uint_ne(w.sub, 0);
	for (i = 0; i < total; i++) {
		snprintf(alloc, sizeof(alloc), "a%d", i);
		rt_instance(&pi, P_NODE, "slow", alloc, "unix:///s");
		ck_assert_int_eq(regclient_register(t.rc, &pi, count_cb,
		    &acked), 0);
		if (i % 200 == 199)
			regtest_spin(&t, 1);
	}
	for (i = 0; i < 3000 && acked < total && acked >= 0; i++)
		regtest_spin(&t, 10);
	ck_assert_int_eq(acked, total);
	/* It got a window's worth, then the resync; the writes all went. */
	ck_assert_uint_eq(w.resyncs, 1);
	ck_assert_uint_eq(w.events, 128);	/* the window */
	ck_assert_uint_eq(w.resync_from, w.last);
	/*
	 * The client that acknowledges saw every event once, in order, even
	 * if it fell behind while this loop was busy sending and had to
	 * catch up from the log.
	 */
	for (i = 0; i < 1000 && fast.total < (size_t)total; i++)
		regtest_spin(&t, 10);
	ck_assert_uint_eq(fast.total, total);
	ck_assert(!fast.disorder);
	ck_assert_int_eq(fast.gaps, 0);
	regtest_cleanup(&t);
}
END_TEST

START_TEST(the_event_log_is_bounded_and_an_old_index_reports_a_gap)
{
	struct regtest t;
	static struct evlog late;
	Berth__PluginInstance pi;
	char alloc[32];
	int acked = 0, i, total = 10600;

	regtest_dir(&t, "reg-gap");
	regtest_start(&t);
	for (i = 0; i < total; i++) {
		snprintf(alloc, sizeof(alloc), "a%d", i);
		rt_instance(&pi, P_NODE, "many", alloc, "unix:///m");
		ck_assert_int_eq(regclient_register(t.rc, &pi, count_cb,
		    &acked), 0);
		if (i % 500 == 499)
			while (acked >= 0 && acked < i - 1000)
				regtest_spin(&t, 1);
	}
	for (i = 0; i < 3000 && acked < total && acked >= 0; i++)
		regtest_spin(&t, 10);
	ck_assert_int_eq(acked, total);
	/* Index 0 is older than the log keeps: the subscriber hears so. */
	ck_assert_ptr_nonnull(regclient_subscribe(t.rc, 0, false, on_event,
	    &late));
	for (i = 0; i < 1000 && late.last < (uint64_t)total; i++)
		regtest_spin(&t, 10);
	ck_assert_int_eq(late.gaps, 1);
	ck_assert_uint_eq(late.last, total);
	ck_assert(!late.disorder);
	ck_assert_uint_ge(late.total, 10000);
	/* Trimmed every 256 events, so one batch (1024) over at most. */
	ck_assert_uint_le(late.total, 10000 + 256 + 1024);
	regtest_cleanup(&t);
}
END_TEST

START_TEST(bad_input_gets_typed_errors_and_the_registry_goes_on)
{
	struct regtest t;
	struct rt_res r;
	Berth__PluginInstance pi;
	static uint8_t big[20000];
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__ProcessHandle ph = BERTH__PROCESS_HANDLE__INIT;
	const Berth__ErrorCode BAD = BERTH__ERROR_CODE__ERROR_BAD_REQUEST;

	regtest_dir(&t, "reg-bad");
	regtest_start(&t);
	rt_instance(&pi, P_NODE, "../etc", "a1", "unix:///x");
	RT(&t, r, regclient_register(t.rc, &pi, rt_cb, &r));
	must_fail(&r, BAD, "name ../etc");
	ck_assert_msg(strstr(r.msg, "name") != NULL, "%s", r.msg);
	rt_done(&r);
	rt_instance(&pi, P_NODE, "ok", "a/b", "unix:///x");
	RT(&t, r, regclient_register(t.rc, &pi, rt_cb, &r));
	must_fail(&r, BAD, "alloc a/b");
	rt_done(&r);
	rt_instance(&pi, 42, "ok", "a1", "unix:///x");
	RT(&t, r, regclient_register(t.rc, &pi, rt_cb, &r));
	must_fail(&r, BAD, "type 42");
	rt_done(&r);
	rt_instance(&pi, P_NODE, "ok", "a1", "unix:///x\n");
	RT(&t, r, regclient_register(t.rc, &pi, rt_cb, &r));
	must_fail(&r, BAD, "endpoint with a newline");
	rt_done(&r);
	rt_instance(&pi, P_NODE, "ok", "a1", "unix:///x");
	pi.capabilities.data = big;
	pi.capabilities.len = sizeof(big);
	RT(&t, r, regclient_register(t.rc, &pi, rt_cb, &r));
	must_fail(&r, BAD, "oversized capabilities");
	rt_done(&r);
	RT(&t, r, regclient_list_handles(t.rc, 9, rt_handles_cb, &r));
	must_fail(&r, BAD, "handle kind 9");
	rt_done(&r);
	ph.plugin = "p";
	ph.alloc = "a";
	ph.pid = -5;
	h.handle_case = BERTH__HANDLE__HANDLE_PROCESS;
	h.process = &ph;
	RT(&t, r, regclient_put_handle(t.rc, &h, rt_cb, &r));
	must_fail(&r, BAD, "pid -5");
	rt_done(&r);
	{
		/* A volume record too large to answer with its claims. */
		static char val[1001];
		Berth__Volume v = BERTH__VOLUME__INIT;
		Berth__KeyValue kv[40], *ctx[40];
		char keys[40][8];
		int i;

		memset(val, 'v', 1000);
		for (i = 0; i < 40; i++) {
			berth__key_value__init(&kv[i]);
			snprintf(keys[i], sizeof(keys[i]), "k%d", i);
			kv[i].key = keys[i];
			kv[i].value = val;
			ctx[i] = &kv[i];
		}
		v.namespace_ = "default";
		v.id = "huge";
		v.plugin_id = "p";
		v.external_id = "x";
		v.context = ctx;
		v.n_context = 40;
		RT(&t, r, regclient_put_volume(t.rc, &v, rt_cb, &r));
		must_fail(&r, BAD, "oversized volume");
		rt_done(&r);
	}
	put_volume(&t, "default", "v",
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER);
	ck_assert_int_eq(claim(&t, "v", "a1", BERTH__CLAIM_MODE__CLAIM_MODE_WRITE,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER), E_NONE);
	ck_assert_int_eq(claim(&t, "v", "a2", BERTH__CLAIM_MODE__CLAIM_MODE_WRITE,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER),
	    BERTH__ERROR_CODE__ERROR_CONFLICT);
	ck_assert_int_eq(claim(&t, "v", "a2", 7,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER), BAD);
	/* Still serving, and nothing of the refused requests was stored. */
	RT(&t, r, regclient_list_plugins(t.rc, 0, NULL, rt_plugins_cb, &r));
	must(&r, "list after bad input");
	ck_assert_uint_eq(r.n, 0);
	rt_done(&r);
	reg(&t, P_NODE, "ok", "a1", "unix:///x", NULL);
	regtest_stop(&t);
	regtest_cleanup(&t);
}
END_TEST

static void
sql(const char *db, const char *stmt)
{
	sqlite3 *h;
	char *err = NULL;

	ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(h, stmt, NULL, NULL, &err) == SQLITE_OK,
	    "%s: %s", stmt, err ? err : "");
	sqlite3_close(h);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;

	ck_assert_ptr_nonnull(f);
	buf = malloc(1 << 20);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* Writes read in the same turn as a Shutdown are committed and answered. */
START_TEST(writes_before_a_shutdown_are_answered)
{
	static struct rt_res r[50];
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Shutdown sd = BERTH__SHUTDOWN__INIT;
	Berth__PluginInstance pi;
	struct regtest t;
	struct rt_res l;
	char alloc[16];
	int i, done;

	regtest_dir(&t, "reg-shutdown");
	regtest_start(&t);
	for (i = 0; i < 50; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		snprintf(alloc, sizeof(alloc), "a%d", i);
		rt_instance(&pi, P_NODE, "late", alloc, "unix:///x/late");
		ck_assert_int_eq(regclient_register(t.rc, &pi, rt_cb, &r[i]), 0);
	}
	sd.reason = "test";
	env.body_case = BERTH__ENVELOPE__BODY_SHUTDOWN;
	env.shutdown = &sd;
	ck_assert_int_eq(chan_notice(t.chan, &env, -1), 0);
	for (i = 0, done = 0; i < 500 && done < 50; i++) {
		regtest_spin(&t, 10);
		for (done = 0; done < 50 && r[done].done; done++)
			;
	}
	for (i = 0; i < 50; i++) {
		ck_assert_msg(r[i].done, "write %d never answered", i);
		ck_assert_msg(r[i].code == BERTH__ERROR_CODE__ERROR_NONE,
		    "write %d: %s %s", i, ipc_error_name(r[i].code), r[i].msg);
		rt_done(&r[i]);
	}
	ck_assert(proc_wait_exit(&t.proc, 15000));
	regtest_kill(&t);
	regtest_start(&t);
	RT(&t, l, regclient_list_plugins(t.rc, P_NODE, "late", rt_plugins_cb,
	    &l));
	must(&l, "list");
	ck_assert_uint_eq(l.n, 50);
	rt_done(&l);
	regtest_stop(&t);
	regtest_cleanup(&t);
}
END_TEST

START_TEST(damaged_or_newer_databases_are_refused_and_kept)
{
	struct regtest t;
	char db[512];
	size_t la, lb;
	char *a, *b;
	FILE *f;
	int i;

	regtest_dir(&t, "reg-refuse");
	snprintf(db, sizeof(db), "%s", regtest_path(&t, "registry/registry.db"));
	/* Not a database at all. */
	f = fopen(db, "w");
	for (i = 0; i < 2000; i++)
		fputs("this is not an SQLite database. ", f);
	fclose(f);
	a = slurp(db, &la);
	regtest_expect_refusal(&t, 65, "refusing to start");
	b = slurp(db, &lb);
	ck_assert(la == lb && memcmp(a, b, la) == 0);
	free(a);
	free(b);

	/* A database from a newer registry. */
	unlink(db);
	regtest_start(&t);
	reg(&t, P_NODE, "p", "a1", "unix:///x", NULL);
	regtest_stop(&t);
	sql(db, "PRAGMA user_version = 99");
	regtest_expect_refusal(&t, 78, "newer than");
	sql(db, "PRAGMA user_version = 5");

	/* The tables' pages overwritten; the header is intact. */
	regtest_start(&t);
	regtest_stop(&t);
	a = slurp(db, &la);
	free(a);
	f = fopen(db, "r+");
	fseek(f, 4096, SEEK_SET);
	for (i = 4096; i < (int)la; i++)
		fputc(0x5a, f);
	fclose(f);
	a = slurp(db, &la);
	regtest_expect_refusal(&t, 65, "refusing to start");
	b = slurp(db, &lb);
	ck_assert(la == lb && memcmp(a, b, la) == 0);
	free(a);
	free(b);
	regtest_cleanup(&t);
}
END_TEST

/* Volumes listed a page at a time, in order, each with its claims. */
START_TEST(volumes_are_listed_in_pages_with_their_claims)
{
	const Berth__VolumeReply *vr;
	struct regtest t;
	struct rt_res r;
	char id[32], prev[64] = "";
	size_t i, claimed = 0;

	regtest_dir(&t, "listvol");
	regtest_start(&t);
	/* 700 volumes of about 90 bytes: over one page's 40 KiB. */
	for (i = 0; i < 700; i++) {
		snprintf(id, sizeof(id), "vol-%03zu", i);
		put_volume(&t, i % 2 ? "other" : "default", id,
		    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
	}
	ck_assert_int_eq(claim(&t, "vol-000", "a1",
	    BERTH__CLAIM_MODE__CLAIM_MODE_WRITE,
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER), 0);
	ck_assert_int_eq(claim(&t, "vol-000", "a2",
	    BERTH__CLAIM_MODE__CLAIM_MODE_READ,
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER), 0);
	ck_assert_int_eq(claim(&t, "vol-298", "a3",
	    BERTH__CLAIM_MODE__CLAIM_MODE_WRITE,
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER), 0);

	RT(&t, r, regclient_list_volumes(t.rc, NULL, rt_volumes_cb, &r));
	ck_assert_int_eq(r.code, BERTH__ERROR_CODE__ERROR_NONE);
	ck_assert_int_eq(r.n, 700);
	for (i = 0; i < r.n; i++) {
		char key[64];

		vr = r.items[i];
		snprintf(key, sizeof(key), "%s/%s", vr->volume->namespace_,
		    vr->volume->id);
		ck_assert_msg(strcmp(prev, key) < 0, "%s after %s", key, prev);
		snprintf(prev, sizeof(prev), "%s", key);
		ck_assert_int_eq(vr->volume->n_context, 1);
		claimed += vr->n_claims;
		if (strcmp(key, "default/vol-000") == 0)
			ck_assert_int_eq(vr->n_claims, 2);
		if (strcmp(key, "default/vol-298") == 0)
			ck_assert_str_eq(vr->claims[0]->alloc, "a3");
	}
	ck_assert_int_eq(claimed, 3);
	rt_done(&r);

	RT(&t, r, regclient_list_volumes(t.rc, "other", rt_volumes_cb, &r));
	ck_assert_int_eq(r.n, 350);
	for (i = 0; i < r.n; i++)
		ck_assert_str_eq(((Berth__VolumeReply *)r.items[i])->volume->
		    namespace_, "other");
	rt_done(&r);
	RT(&t, r, regclient_list_volumes(t.rc, "none", rt_volumes_cb, &r));
	ck_assert_int_eq(r.code, BERTH__ERROR_CODE__ERROR_NONE);
	ck_assert_int_eq(r.n, 0);
	rt_done(&r);
	RT(&t, r, regclient_list_volumes(t.rc, "a/b", rt_volumes_cb, &r));
	ck_assert_int_eq(r.code, BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	rt_done(&r);
	regtest_stop(&t);
	regtest_cleanup(&t);
}
END_TEST

/* A volume as an operator registers it: external id, options, context. */
static Berth__ErrorCode
put_ext(struct regtest *t, const char *id, const char *plugin,
    const char *ext, const char *fs_type, char **flags, size_t nflags,
    char *msg, size_t msglen)
{
	Berth__Volume v = BERTH__VOLUME__INIT;
	Berth__KeyValue kv = BERTH__KEY_VALUE__INIT, *ctx[] = { &kv };
	Berth__ErrorCode code;
	struct rt_res r;

	v.namespace_ = "default";
	v.id = (char *)id;
	v.plugin_id = (char *)plugin;
	v.external_id = (char *)ext;
	v.fs_type = (char *)(fs_type != NULL ? fs_type : "");
	v.mount_flags = flags;
	v.n_mount_flags = nflags;
	kv.key = "share";
	kv.value = "/export/a";
	v.context = ctx;
	v.n_context = 1;
	RT(t, r, regclient_put_volume(t->rc, &v, rt_cb, &r));
	code = r.code;
	if (msg != NULL)
		snprintf(msg, msglen, "%s", r.msg);
	rt_done(&r);
	return code;
}

static const Berth__Volume *
get_vol(struct regtest *t, struct rt_res *r, const char *id)
{
	RT(t, *r, regclient_get_volume(t->rc, "default", id, rt_cb, r));
	must(r, "get_volume");
	return r->env->volume_reply->volume;
}

/*
 * A volume's fs_type and mount flags are kept with it across a restart;
 * a provider's volume has one berth id (a second is a conflict, in any
 * namespace, for the same plugin only); re-registering the same id is
 * an update; once the first is gone another id may take the volume.
 */
START_TEST(mount_options_are_kept_and_a_provider_volume_has_one_id)
{
	char *flags[] = { "noatime", "password=s3cret" }, msg[512];
	const Berth__Volume *v;
	struct regtest t;
	struct rt_res r;

	regtest_dir(&t, "reg-opts");
	regtest_start(&t);
	ck_assert_int_eq(put_ext(&t, "a", "nfs", "srv:/x", "nfs4", flags, 2,
	    NULL, 0), E_NONE);
	regtest_stop(&t);
	regtest_start(&t);
	v = get_vol(&t, &r, "a");
	ck_assert_str_eq(v->fs_type, "nfs4");
	ck_assert_uint_eq(v->n_mount_flags, 2);
	ck_assert_str_eq(v->mount_flags[0], "noatime");
	ck_assert_str_eq(v->mount_flags[1], "password=s3cret");
	ck_assert_uint_eq(v->n_context, 1);
	ck_assert_str_eq(v->context[0]->value, "/export/a");
	rt_done(&r);

	ck_assert_int_eq(put_ext(&t, "b", "nfs", "srv:/x", NULL, NULL, 0, msg,
	    sizeof(msg)), BERTH__ERROR_CODE__ERROR_CONFLICT);
	ck_assert_msg(strstr(msg, "default/a") != NULL, "%s", msg);
	RT(&t, r, regclient_get_volume(t.rc, "default", "b", rt_cb, &r));
	must_fail(&r, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "refused volume");
	rt_done(&r);
	/* Another plugin's volume of that name is another volume. */
	ck_assert_int_eq(put_ext(&t, "c", "other", "srv:/x", NULL, NULL, 0,
	    NULL, 0), E_NONE);
	/* The same id again is an update: options replaced. */
	ck_assert_int_eq(put_ext(&t, "a", "nfs", "srv:/x", "", NULL, 0, NULL,
	    0), E_NONE);
	v = get_vol(&t, &r, "a");
	ck_assert_str_eq(v->fs_type, "");
	ck_assert_uint_eq(v->n_mount_flags, 0);
	rt_done(&r);
	/* An update may not move an id onto a volume that has one. */
	ck_assert_int_eq(put_ext(&t, "c", "nfs", "srv:/x", NULL, NULL, 0, NULL,
	    0), BERTH__ERROR_CODE__ERROR_CONFLICT);
	RT(&t, r, regclient_delete_volume(t.rc, "default", "a", rt_cb, &r));
	must(&r, "delete a");
	rt_done(&r);
	ck_assert_int_eq(put_ext(&t, "b", "nfs", "srv:/x", NULL, NULL, 0, NULL,
	    0), E_NONE);
	regtest_stop(&t);
	regtest_cleanup(&t);
}
END_TEST

/*
 * A volume's capacity is kept across a restart, and a put that says
 * none (the volume registered again) keeps it; a negative one is
 * refused.
 */
START_TEST(a_volume_capacity_is_kept)
{
	Berth__Volume v = BERTH__VOLUME__INIT;
	struct regtest t;
	struct rt_res r;

	regtest_dir(&t, "reg-cap");
	regtest_start(&t);
	v.namespace_ = "default";
	v.id = "cap";
	v.plugin_id = "hostpath";
	v.external_id = "cap-1";
	v.capacity_bytes = 2097152;
	RT(&t, r, regclient_put_volume(t.rc, &v, rt_cb, &r));
	must(&r, "put with a capacity");
	rt_done(&r);
	regtest_stop(&t);
	regtest_start(&t);
	ck_assert_int_eq(get_vol(&t, &r, "cap")->capacity_bytes, 2097152);
	rt_done(&r);
	v.capacity_bytes = 0;
	RT(&t, r, regclient_put_volume(t.rc, &v, rt_cb, &r));
	must(&r, "put without one");
	rt_done(&r);
	ck_assert_int_eq(get_vol(&t, &r, "cap")->capacity_bytes, 2097152);
	rt_done(&r);
	v.capacity_bytes = -1;
	RT(&t, r, regclient_put_volume(t.rc, &v, rt_cb, &r));
	must_fail(&r, BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
	    "negative capacity");
	rt_done(&r);
	ck_assert_int_eq(get_vol(&t, &r, "cap")->capacity_bytes, 2097152);
	rt_done(&r);
	regtest_stop(&t);
	regtest_cleanup(&t);
}
END_TEST

/*
 * A database of schema version 2 (before mount options and one id per
 * provider volume), holding two ids for one provider volume as that
 * registry allowed: it opens, migrated, both volumes are read as they
 * were, and no third id is let in.
 */
START_TEST(an_old_database_with_two_ids_for_one_volume_is_migrated)
{
	struct regtest t;
	struct rt_res r;
	const Berth__Volume *v;
	char db[512];

	regtest_dir(&t, "reg-oldext");
	snprintf(db, sizeof(db), "%s",
	    regtest_path(&t, "registry/registry.db"));
	regtest_start(&t);
	ck_assert_int_eq(put_ext(&t, "a", "nfs", "one", NULL, NULL, 0, NULL, 0),
	    E_NONE);
	ck_assert_int_eq(put_ext(&t, "b", "nfs", "two", NULL, NULL, 0, NULL, 0),
	    E_NONE);
	regtest_stop(&t);
	/* What version 2 was, with what it let in. */
	sql(db, "DROP INDEX volumes_external; DROP TABLE task_ids; "
	    "ALTER TABLE mounts DROP COLUMN stage_usage; "
	    "UPDATE volumes SET external_id = 'same'; PRAGMA user_version = 2");
	regtest_start(&t);
	regtest_stop(&t);
	{
		sqlite3 *h;
		sqlite3_stmt *st;

		ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
		ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT (SELECT "
		    "user_version FROM pragma_user_version), (SELECT COUNT(*) "
		    "FROM sqlite_master WHERE name = 'volumes_external')", -1,
		    &st, NULL), SQLITE_OK);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_int_eq(sqlite3_column_int(st, 0), 5);
		ck_assert_int_eq(sqlite3_column_int(st, 1), 1);
		sqlite3_finalize(st);
		sqlite3_close(h);
	}
	regtest_start(&t);
	v = get_vol(&t, &r, "a");
	ck_assert_str_eq(v->external_id, "same");
	ck_assert_str_eq(v->fs_type, "");
	ck_assert_uint_eq(v->n_context, 1);
	rt_done(&r);
	v = get_vol(&t, &r, "b");
	ck_assert_str_eq(v->external_id, "same");
	rt_done(&r);
	ck_assert_int_eq(put_ext(&t, "c", "nfs", "same", NULL, NULL, 0, NULL,
	    0), BERTH__ERROR_CODE__ERROR_CONFLICT);
	regtest_stop(&t);
	regtest_cleanup(&t);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("registry");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, populated_registry_answers_the_same_after_restart);
	tcase_add_test(tc, takeover_promotion_and_reregistration);
	tcase_add_test(tc, claims_follow_the_access_mode);
	tcase_add_test(tc, task_ids_are_held_until_released_and_reused_last);
	tcase_add_test(tc, events_in_order_and_replayed_from_an_index);
	tcase_add_test(tc, a_slow_subscriber_is_told_to_resync_and_writers_go_on);
	tcase_add_test(tc,
	    the_event_log_is_bounded_and_an_old_index_reports_a_gap);
	tcase_add_test(tc, bad_input_gets_typed_errors_and_the_registry_goes_on);
	tcase_add_test(tc, damaged_or_newer_databases_are_refused_and_kept);
	tcase_add_test(tc, writes_before_a_shutdown_are_answered);
	tcase_add_test(tc, volumes_are_listed_in_pages_with_their_claims);
	tcase_add_test(tc,
	    mount_options_are_kept_and_a_provider_volume_has_one_id);
	tcase_add_test(tc,
	    an_old_database_with_two_ids_for_one_volume_is_migrated);
	tcase_add_test(tc, a_volume_capacity_is_kept);
	return harness_run("registry", tc);
}
