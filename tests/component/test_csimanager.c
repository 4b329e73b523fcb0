/*
 * test_csimanager.c: the CSI manager alone, through its deps: an
 * in-process berth-registry (fake_peer) that holds a table of plugin
 * instances, answers the manager's subscription, lookups and lists (at
 * once, late, out of order, never, or closes) and sends plugin event
 * notices; and the real sample plugin (berth-csi-hostpath), two of them
 * with different node ids, to fingerprint. It checks what the manager
 * follows and what it reports: fingerprinting, healthy, unhealthy, a
 * failed heartbeat streak and its end, provider and version across a
 * switch, the newest alloc active, the plugin gone, gaps, resyncs, a
 * subscription
 * that ends, and a registry link that closes; and that running out of
 * memory while following ends the process instead of leaving a plugin
 * unfollowed.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "csi_client.h"
#include "csimanager.h"
#include "events.h"
#include "fake_peer.h"
#include "harness.h"
#include "registry_client.h"

#define SUB_ID 7
#define NODE BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE
#define CTRL BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER

/* One row of the fake registry's plugin table. */
struct row {
	Berth__PluginType type;
	char name[64], alloc[64], endpoint[300], version[80];
	bool active, used;
};

static struct {
	struct event_base *base;
	struct csi_client *csi;
	struct events *events;
	struct fake_peer *fp;
	struct chan *chan;
	struct regclient *rc;
	struct csimgr *m;
	char *dir;
	char ep[2][300];		/* the two plugins' endpoints */
	struct proc plugin[2];
	bool up[2];
	struct row rows[8];
	uint64_t head;
	bool hold_get, hold_list, gap_next;
	int refuse_subscribe;		/* refuse this many subscriptions */
} fx;

/* The fake registry. */

static void
instance_of(const struct row *r, Berth__PluginInstance *pi)
{
	berth__plugin_instance__init(pi);
	pi->type = r->type;
	pi->name = (char *)r->name;
	pi->alloc = (char *)r->alloc;
	pi->endpoint = (char *)r->endpoint;
	pi->provider = "hostpath.csi.berth.dev";
	pi->provider_version = (char *)r->version;
	pi->active = r->active;
}

static struct row *
row_find(Berth__PluginType type, const char *name, const char *alloc)
{
	size_t i;

	for (i = 0; i < 8; i++)
		if (fx.rows[i].used && fx.rows[i].type == type &&
		    strcmp(fx.rows[i].name, name) == 0 &&
		    (alloc == NULL ? fx.rows[i].active :
		    strcmp(fx.rows[i].alloc, alloc) == 0))
			return &fx.rows[i];
	return NULL;
}

/* Answer a lookup with the row for alloc (NULL: the active one now). */
static void
reply_get(struct fake_req *req, const char *alloc)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PluginList list = BERTH__PLUGIN_LIST__INIT;
	Berth__PluginInstance pi, *pis[1] = { &pi };
	const Berth__PluginKey *k = req->env->get_plugin->key;
	struct row *r;

	if ((r = row_find(k->type, k->name, alloc)) == NULL) {
		fake_reply_error(fx.fp, req, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
		    "no such plugin");
		return;
	}
	instance_of(r, &pi);
	list.n_instances = 1;
	list.instances = pis;
	env.body_case = BERTH__ENVELOPE__BODY_PLUGIN_LIST;
	env.plugin_list = &list;
	fake_reply(fx.fp, req, &env, -1);
}

static void
reply_list(struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PluginList list = BERTH__PLUGIN_LIST__INIT;
	Berth__PluginInstance pi[8], *pis[8];
	size_t i;

	for (i = 0; i < 8; i++)
		if (fx.rows[i].used) {
			instance_of(&fx.rows[i], &pi[list.n_instances]);
			pis[list.n_instances] = &pi[list.n_instances];
			list.n_instances++;
		}
	list.instances = pis;
	env.body_case = BERTH__ENVELOPE__BODY_PLUGIN_LIST;
	env.plugin_list = &list;
	fake_reply(fx.fp, req, &env, -1);
}

static void
reply_subscribe(struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__SubscribeReply sr = BERTH__SUBSCRIBE_REPLY__INIT;

	sr.subscription = SUB_ID;
	sr.head_index = fx.head;
	if (fx.gap_next) {
		sr.gap = true;
		sr.oldest_index = fx.head + 1;
		fx.gap_next = false;
	}
	env.body_case = BERTH__ENVELOPE__BODY_SUBSCRIBE_REPLY;
	env.subscribe_reply = &sr;
	fake_reply(fx.fp, req, &env, -1);
}

static void
registry(struct fake_peer *fp, struct fake_req *req, void *arg)
{
	(void)fp;
	(void)arg;
	switch (req->env->body_case) {
	case BERTH__ENVELOPE__BODY_SUBSCRIBE:
		if (fx.refuse_subscribe > 0) {
			fx.refuse_subscribe--;
			fake_reply_error(fx.fp, req,
			    BERTH__ERROR_CODE__ERROR_INTERNAL, "busy");
		} else
			reply_subscribe(req);
		break;
	case BERTH__ENVELOPE__BODY_LIST_PLUGINS:
		if (!fx.hold_list)
			reply_list(req);
		break;
	case BERTH__ENVELOPE__BODY_GET_PLUGIN:
		if (!fx.hold_get)
			reply_get(req, NULL);
		break;
	default:
		fake_drop(fx.fp, req);	/* an unsubscribe: no answer needed */
		break;
	}
}

/* The registry records (type, name, alloc): the newest is active. */
static void
add_row(Berth__PluginType type, const char *name, const char *alloc,
    const char *endpoint)
{
	size_t i, free_i = 8;

	for (i = 0; i < 8; i++) {
		if (!fx.rows[i].used) {
			if (free_i == 8)
				free_i = i;
		} else if (fx.rows[i].type == type &&
		    strcmp(fx.rows[i].name, name) == 0)
			fx.rows[i].active = false;
	}
	ck_assert_uint_lt(free_i, 8);
	fx.rows[free_i].used = true;
	fx.rows[free_i].active = true;
	fx.rows[free_i].type = type;
	snprintf(fx.rows[free_i].name, sizeof(fx.rows[0].name), "%s", name);
	snprintf(fx.rows[free_i].alloc, sizeof(fx.rows[0].alloc), "%s", alloc);
	snprintf(fx.rows[free_i].endpoint, sizeof(fx.rows[0].endpoint), "%s",
	    endpoint);
	/* Each alloc its own version, as after an update. */
	snprintf(fx.rows[free_i].version, sizeof(fx.rows[0].version),
	    "1.0-%s", alloc);
}

/* Remove a row; the newest remaining one (the last added) is promoted. */
static void
del_row(Berth__PluginType type, const char *name, const char *alloc)
{
	struct row *r = row_find(type, name, alloc), *last = NULL;
	size_t i;

	ck_assert_ptr_nonnull(r);
	r->used = false;
	for (i = 0; i < 8; i++)
		if (fx.rows[i].used && fx.rows[i].type == type &&
		    strcmp(fx.rows[i].name, name) == 0)
			last = &fx.rows[i];
	if (last != NULL)
		last->active = true;
}

static void
notice(Berth__EventType type, Berth__PluginType ptype, const char *name,
    const char *alloc)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__EventNotice en = BERTH__EVENT_NOTICE__INIT;
	Berth__Event ev = BERTH__EVENT__INIT;

	ev.index = ++fx.head;
	ev.type = type;
	ev.plugin_type = ptype;
	ev.plugin_name = (char *)name;
	ev.alloc = (char *)alloc;
	ev.subscription = SUB_ID;
	en.event = &ev;
	env.body_case = BERTH__ENVELOPE__BODY_EVENT_NOTICE;
	env.event_notice = &en;
	fake_notice(fx.fp, &env, -1);
}

#define REGISTERED BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_REGISTERED
#define DEREGISTERED BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_DEREGISTERED
#define PROMOTED BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_PROMOTED

/* The supervisor's end: registry notices go to the client. */
static void
client_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	(void)c;
	(void)arg;
	if (fd >= 0)
		close(fd);
	regclient_notice(fx.rc, env);
}

/* Fixture. */

static void
plugin_start(int i)
{
	char state[300], node_id[16];
	char *argv[] = { (char *)harness_bin("berth-csi-hostpath"), "--strict",
	    "--endpoint", fx.ep[i], "--node-id", node_id, "--state-dir", state,
	    NULL };

	snprintf(state, sizeof(state), "%s/state%d", fx.dir, i);
	snprintf(node_id, sizeof(node_id), "node-%d", i + 1);
	proc_start(&fx.plugin[i], argv, -1);
	fx.up[i] = true;
	ck_assert_msg(proc_wait_log(&fx.plugin[i], "listening on", 10000),
	    "plugin did not start: %s", fx.plugin[i].log);
}

static void
setup_with(unsigned reg_timeout_ms, int64_t resync_ms)
{
	static const struct chan_ops client_ops = { client_message, NULL,
		NULL, NULL };
	struct csimgr_deps d;

	memset(&fx, 0, sizeof(fx));
	fx.head = 100;
	fx.dir = harness_tmpdir("csimgr");
	snprintf(fx.ep[0], sizeof(fx.ep[0]), "unix://%s/p1.sock", fx.dir);
	snprintf(fx.ep[1], sizeof(fx.ep[1]), "unix://%s/p2.sock", fx.dir);
	ck_assert_ptr_nonnull(fx.base = event_base_new());
	ck_assert_ptr_nonnull(fx.csi = csi_client_new(fx.base));
	ck_assert_ptr_nonnull(fx.events = events_new());
	fx.fp = fake_peer_new(fx.base, "berth-registry", NULL, &fx.chan,
	    &client_ops, NULL);
	fake_peer_handler(fx.fp, registry, NULL);
	ck_assert_ptr_nonnull(fx.rc = regclient_new(fx.base, fx.chan,
	    reg_timeout_ms));
	d.base = fx.base;
	d.registry = fx.rc;
	d.csi = fx.csi;
	d.events = fx.events;
	d.resync_ms = resync_ms;
	ck_assert_ptr_nonnull(fx.m = csimgr_new(&d));
}

static void
setup(void)
{
	setup_with(5000, 60000);
}

static void
teardown(void)
{
	int i;

	csimgr_free(fx.m);
	regclient_free(fx.rc);
	chan_free(fx.chan);
	fake_peer_free(fx.fp);
	csi_client_free(fx.csi);
	events_free(fx.events);
	event_base_free(fx.base);
	for (i = 0; i < 2; i++)
		if (fx.up[i]) {
			kill(fx.plugin[i].pid, SIGCONT);
			proc_kill(&fx.plugin[i]);
		}
	harness_rmtree(fx.dir);
	free(fx.dir);
}

/* Waiting. */

static bool
never(void *arg)
{
	(void)arg;
	return false;
}

static void
idle(int ms)
{
	fake_run_until(fx.base, never, NULL, ms);
}

static bool
count_at_least(void *arg)
{
	/* arg: body case in the low 16 bits, the count above. */
	uintptr_t a = (uintptr_t)arg;

	return fake_count(fx.fp, (Berth__Envelope__BodyCase)(a & 0xffff)) >=
	    (unsigned)(a >> 16);
}

static void
wait_count(Berth__Envelope__BodyCase body, unsigned n)
{
	ck_assert_msg(fake_run_until(fx.base, count_at_least,
	    (void *)(((uintptr_t)n << 16) | (uintptr_t)body), 5000),
	    "%u requests of body %d never came", n, (int)body);
}

static bool
held_at_least(void *arg)
{
	return fake_pending(fx.fp) >= (size_t)(uintptr_t)arg;
}

/* What the test waits for: name's instance of type follows alloc, and
 * its fingerprint is done and healthy (or not). */
static Berth__PluginType want_type;
static const char *want_name, *want_alloc;
static int want_health;		/* 1 healthy, 0 unhealthy, -1 any */

static bool
follows(void *arg)
{
	struct csi_inst *in = csimgr_find(fx.m, want_type, want_name);
	const struct csi_fingerprint *fp;

	(void)arg;
	if (want_alloc == NULL)
		return in == NULL;
	if (in == NULL || strcmp(csi_inst_alloc(in), want_alloc) != 0)
		return false;
	fp = csi_inst_fingerprint(in);
	return want_health < 0 || (fp->done && fp->healthy == want_health);
}

static struct csi_inst *
wait_follows(Berth__PluginType type, const char *name, const char *alloc,
    int health)
{
	want_type = type;
	want_name = name;
	want_alloc = alloc;
	want_health = health;
	ck_assert_msg(fake_run_until(fx.base, follows, NULL, 10000),
	    "%s plugin %s does not follow %s (health %d)", type == NODE ?
	    "node" : "controller", name, alloc ? alloc : "nothing", health);
	return csimgr_find(fx.m, type, name);
}

static int
events_of(const char *type, const char *plugin)
{
	const struct berth_event *e;
	uint64_t i;
	int n = 0;

	for (i = events_first(fx.events) ? events_first(fx.events) - 1 : 0;
	    (e = events_after(fx.events, i)) != NULL; i = e->index)
		if (strcmp(e->type, type) == 0 &&
		    strcmp(e->plugin, plugin) == 0)
			n++;
	return n;
}

static size_t
followed(void)
{
	struct csi_inst *in;
	size_t n = 0;

	for (in = csimgr_first(fx.m); in != NULL; in = csimgr_next(in))
		n++;
	return n;
}

static void
start_following(void)
{
	csimgr_start(fx.m);
	wait_count(BERTH__ENVELOPE__BODY_SUBSCRIBE, 1);
	wait_count(BERTH__ENVELOPE__BODY_LIST_PLUGINS, 1);
	idle(50);
}

/* Tests. */

/* A registered node and controller are followed and fingerprinted. */
START_TEST(test_follow_and_fingerprint)
{
	const struct csi_fingerprint *fp;
	struct csi_inst *in;

	setup();
	plugin_start(0);
	start_following();
	ck_assert_uint_eq(followed(), 0);
	add_row(NODE, "hp", "a1", fx.ep[0]);
	add_row(CTRL, "hp", "a1", fx.ep[0]);
	notice(REGISTERED, NODE, "hp", "a1");
	notice(REGISTERED, CTRL, "hp", "a1");
	in = wait_follows(NODE, "hp", "a1", 1);
	fp = csi_inst_fingerprint(in);
	ck_assert_str_eq(fp->node_id, "node-1");
	ck_assert_str_eq(fp->provider, "hostpath.csi.berth.dev");
	ck_assert(fp->controller_service);
	ck_assert(strncmp(fp->health, "healthy: node id node-1", 23) == 0);
	/* The strict plugin advertises VOLUME_MOUNT_GROUP, and it shows. */
	ck_assert(fp->mount_group);
	ck_assert_msg(strstr(fp->health, ", sets the mount group") != NULL,
	    "%s", fp->health);
	ck_assert_str_eq(csi_inst_endpoint(in), fx.ep[0]);
	ck_assert_ptr_nonnull(csi_inst_conn(in));
	ck_assert_str_eq(csi_inst_type_name(in), "node");
	in = wait_follows(CTRL, "hp", "a1", 1);
	fp = csi_inst_fingerprint(in);
	ck_assert(fp->create_delete);
	ck_assert_str_eq(csi_inst_type_name(in), "controller");
	ck_assert_uint_eq(followed(), 2);
	ck_assert_int_eq(events_of("PluginHealthy", "hp"), 2);
	ck_assert_int_eq(events_of("PluginUnhealthy", "hp"), 0);
	/* Events it does not follow: another kind of plugin, a claim. */
	notice(REGISTERED, BERTH__PLUGIN_TYPE__PLUGIN_TYPE_UNKNOWN, "x",
	    "a9");
	notice(BERTH__EVENT_TYPE__EVENT_TYPE_CLAIM_RELEASED, NODE, "hp", "a9");
	idle(200);
	ck_assert_uint_eq(fake_count(fx.fp, BERTH__ENVELOPE__BODY_GET_PLUGIN),
	    2);
}
END_TEST

/* The newest alloc is followed; when it goes, the one promoted; when
 * the last goes, the plugin is gone. Stale replies are dropped. */
START_TEST(test_newest_active_then_gone)
{
	struct csi_inst *in;

	setup();
	plugin_start(0);
	plugin_start(1);
	start_following();
	add_row(NODE, "hp", "a1", fx.ep[0]);
	notice(REGISTERED, NODE, "hp", "a1");
	wait_follows(NODE, "hp", "a1", 1);
	/* a2 registers and is the newest: followed at once. */
	add_row(NODE, "hp", "a2", fx.ep[1]);
	notice(REGISTERED, NODE, "hp", "a2");
	in = wait_follows(NODE, "hp", "a2", 1);
	ck_assert_str_eq(csi_inst_fingerprint(in)->node_id, "node-2");
	ck_assert_str_eq(csi_inst_endpoint(in), fx.ep[1]);
	ck_assert_uint_eq(followed(), 1);
	/* The update's provider and version, as registered. */
	ck_assert_str_eq(csi_inst_fingerprint(in)->provider,
	    "hostpath.csi.berth.dev");
	ck_assert_str_eq(csi_inst_fingerprint(in)->version, "1.0-a2");
	/* a2 goes: a1 is promoted, with its own provider and version. */
	del_row(NODE, "hp", "a2");
	notice(DEREGISTERED, NODE, "hp", "a2");
	notice(PROMOTED, NODE, "hp", "a1");
	in = wait_follows(NODE, "hp", "a1", 1);
	ck_assert_str_eq(csi_inst_fingerprint(in)->node_id, "node-1");
	ck_assert_str_eq(csi_inst_fingerprint(in)->provider,
	    "hostpath.csi.berth.dev");
	ck_assert_str_eq(csi_inst_fingerprint(in)->version, "1.0-a1");
	/* a1 goes too: nothing left. */
	del_row(NODE, "hp", "a1");
	notice(DEREGISTERED, NODE, "hp", "a1");
	wait_follows(NODE, "hp", NULL, -1);
	ck_assert_uint_eq(followed(), 0);
}
END_TEST

/* Switched while the old alloc's fingerprint is in flight: its
 * cancelled calls do not touch the new one's health. */
START_TEST(test_stale_fingerprint_dropped)
{
	struct csi_inst *in;

	setup();
	plugin_start(0);
	plugin_start(1);
	start_following();
	ck_assert_int_eq(kill(fx.plugin[0].pid, SIGSTOP), 0);
	add_row(NODE, "hp", "a1", fx.ep[0]);
	notice(REGISTERED, NODE, "hp", "a1");
	wait_follows(NODE, "hp", "a1", -1);
	idle(300);
	ck_assert(!csi_inst_fingerprint(csimgr_find(fx.m, NODE,
	    "hp"))->done);
	add_row(NODE, "hp", "a2", fx.ep[1]);
	notice(REGISTERED, NODE, "hp", "a2");
	in = wait_follows(NODE, "hp", "a2", 1);
	ck_assert_int_eq(kill(fx.plugin[0].pid, SIGCONT), 0);
	idle(500);
	in = csimgr_find(fx.m, NODE, "hp");
	ck_assert_str_eq(csi_inst_alloc(in), "a2");
	ck_assert(csi_inst_fingerprint(in)->healthy);
	ck_assert_str_eq(csi_inst_fingerprint(in)->node_id, "node-2");
	ck_assert_int_eq(events_of("PluginUnhealthy", "hp"), 0);
	ck_assert_int_eq(events_of("PluginHealthy", "hp"), 1);
}
END_TEST

/* An endpoint it cannot use: unhealthy, and healthy once the plugin
 * moves to one it can. */
START_TEST(test_unhealthy_then_healthy)
{
	const struct csi_fingerprint *fp;
	struct csi_inst *in;

	setup();
	plugin_start(0);
	start_following();
	add_row(NODE, "hp", "a1", "unix://not/absolute.sock");
	notice(REGISTERED, NODE, "hp", "a1");
	in = wait_follows(NODE, "hp", "a1", 0);
	fp = csi_inst_fingerprint(in);
	ck_assert_ptr_nonnull(strstr(fp->health, "unhealthy: cannot connect"));
	ck_assert_int_eq(events_of("PluginUnhealthy", "hp"), 1);
	/* Its retry fails the same way: not a new event. */
	idle(1300);
	ck_assert_int_eq(events_of("PluginUnhealthy", "hp"), 1);
	add_row(NODE, "hp", "a2", fx.ep[0]);
	notice(REGISTERED, NODE, "hp", "a2");
	wait_follows(NODE, "hp", "a2", 1);
	ck_assert_int_eq(events_of("PluginHealthy", "hp"), 1);
}
END_TEST

/*
 * The plugin supervisor's heartbeat streak failed: the instance is
 * unhealthy at once, through every reader's view, and stays so while
 * its fingerprint would pass (resyncs refresh it) until the heartbeat
 * passes again. A streak on an alloc not followed yet is kept: promoted,
 * that alloc is not shown healthy.
 */
START_TEST(test_heartbeat_streak)
{
	const struct csi_fingerprint *fp;
	struct csi_inst *in;

	setup_with(5000, 300);
	plugin_start(0);
	plugin_start(1);
	start_following();
	add_row(NODE, "hp", "a1", fx.ep[0]);
	add_row(CTRL, "hp", "a1", fx.ep[0]);
	notice(REGISTERED, NODE, "hp", "a1");
	notice(REGISTERED, CTRL, "hp", "a1");
	wait_follows(CTRL, "hp", "a1", 1);
	in = wait_follows(NODE, "hp", "a1", 1);
	fp = csi_inst_fingerprint(in);
	ck_assert_int_eq(events_of("PluginHealthy", "hp"), 2);
	/* Another plugin's, or another alloc's, streak changes nothing. */
	csimgr_heartbeat(fx.m, "other", "a1", false, "2 probes in a row "
	    "failed");
	ck_assert(fp->healthy);
	csimgr_heartbeat(fx.m, "hp", "a1", false, "2 probes in a row failed; "
	    "the last: Probe: DEADLINE_EXCEEDED: deadline exceeded");
	/* At once, for both types (a monolith heartbeats once). */
	ck_assert(fp->done && !fp->healthy);
	ck_assert_str_eq(fp->health, "unhealthy: its heartbeat failed: 2 "
	    "probes in a row failed; the last: Probe: DEADLINE_EXCEEDED: "
	    "deadline exceeded");
	ck_assert(!csi_inst_fingerprint(csimgr_find(fx.m, CTRL,
	    "hp"))->healthy);
	ck_assert_int_eq(events_of("PluginUnhealthy", "hp"), 2);
	/* Resyncs fingerprint the plugin, which answers: still unhealthy. */
	idle(1000);
	ck_assert(fp->done && !fp->healthy);
	ck_assert_int_eq(events_of("PluginUnhealthy", "hp"), 2);
	ck_assert_int_eq(events_of("PluginHealthy", "hp"), 2);
	/* The heartbeat passes again: healthy once fingerprinted. */
	csimgr_heartbeat(fx.m, "hp", "a1", true, NULL);
	in = wait_follows(NODE, "hp", "a1", 1);
	ck_assert(strncmp(csi_inst_fingerprint(in)->health, "healthy: ", 9) ==
	    0);
	wait_follows(CTRL, "hp", "a1", 1);
	ck_assert_int_eq(events_of("PluginHealthy", "hp"), 4);
	/* a2's streak failed before it was followed; promoted, it shows so. */
	csimgr_heartbeat(fx.m, "hp", "a2", false, "2 probes in a row failed");
	ck_assert(csi_inst_fingerprint(in)->healthy);
	add_row(NODE, "hp", "a2", fx.ep[1]);
	notice(REGISTERED, NODE, "hp", "a2");
	in = wait_follows(NODE, "hp", "a2", 0);
	ck_assert_str_eq(csi_inst_fingerprint(in)->health, "unhealthy: its "
	    "heartbeat failed: 2 probes in a row failed");
	csimgr_heartbeat(fx.m, "hp", "a2", true, NULL);
	wait_follows(NODE, "hp", "a2", 1);
}
END_TEST

/* Events lost (the registry's log no longer reaches back): the manager
 * re-lists at once, and follows what it finds. */
START_TEST(test_gap)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Resync rs = BERTH__RESYNC__INIT;
	unsigned lists;

	setup();
	plugin_start(0);
	start_following();
	lists = fake_count(fx.fp, BERTH__ENVELOPE__BODY_LIST_PLUGINS);
	add_row(NODE, "hp", "a1", fx.ep[0]);
	/* Fell behind; the subscription starts again with a gap. */
	fx.gap_next = true;
	rs.subscription = SUB_ID;
	rs.from_index = 50;
	env.body_case = BERTH__ENVELOPE__BODY_RESYNC;
	env.resync = &rs;
	fake_notice(fx.fp, &env, -1);
	wait_count(BERTH__ENVELOPE__BODY_SUBSCRIBE, 2);
	wait_count(BERTH__ENVELOPE__BODY_LIST_PLUGINS, lists + 1);
	wait_follows(NODE, "hp", "a1", 1);
	ck_assert_uint_eq(fake_count(fx.fp, BERTH__ENVELOPE__BODY_GET_PLUGIN),
	    0);
	/* Caught up without a gap: no list. */
	rs.from_index = fx.head;
	fake_notice(fx.fp, &env, -1);
	wait_count(BERTH__ENVELOPE__BODY_SUBSCRIBE, 3);
	idle(300);
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_LIST_PLUGINS), lists + 1);
}
END_TEST

/* The periodic list catches what no event said: gone, and new. */
START_TEST(test_periodic_resync)
{
	setup_with(5000, 300);
	plugin_start(0);
	add_row(NODE, "hp", "a1", fx.ep[0]);
	start_following();
	wait_follows(NODE, "hp", "a1", 1);
	del_row(NODE, "hp", "a1");
	wait_follows(NODE, "hp", NULL, -1);
	add_row(CTRL, "hp", "a3", fx.ep[0]);
	wait_follows(CTRL, "hp", "a3", 1);
	ck_assert_uint_eq(fake_count(fx.fp, BERTH__ENVELOPE__BODY_GET_PLUGIN),
	    0);
	ck_assert_int_eq(events_of("PluginHealthy", "hp"), 2);
}
END_TEST

/* Lookups answered late and out of order: the last answer is followed
 * until the next list corrects it; one never answered changes nothing. */
START_TEST(test_lookups_late_out_of_order_never)
{
	setup_with(1000, 2500);
	plugin_start(0);
	plugin_start(1);
	start_following();
	fx.hold_get = true;
	add_row(NODE, "hp", "a1", fx.ep[0]);
	notice(REGISTERED, NODE, "hp", "a1");
	add_row(NODE, "hp", "a2", fx.ep[1]);
	notice(REGISTERED, NODE, "hp", "a2");
	ck_assert(fake_run_until(fx.base, held_at_least, (void *)2, 2000));
	idle(200);
	ck_assert_uint_eq(followed(), 0);
	/* The second first (a2), then the first, late (a1). */
	reply_get(fake_nth(fx.fp, 1), "a2");
	wait_follows(NODE, "hp", "a2", -1);
	reply_get(fake_nth(fx.fp, 0), "a1");
	wait_follows(NODE, "hp", "a1", -1);
	/* The periodic list has a2 active. */
	wait_follows(NODE, "hp", "a2", 1);
	/* A lookup never answered times out; nothing changes. */
	notice(REGISTERED, NODE, "other", "a5");
	ck_assert(fake_run_until(fx.base, held_at_least, (void *)1, 2000));
	idle(1500);
	ck_assert_ptr_null(csimgr_find(fx.m, NODE, "other"));
	ck_assert_str_eq(csi_inst_alloc(csimgr_find(fx.m, NODE, "hp")), "a2");
}
END_TEST

/* The subscription is refused: it subscribes again. Then the link to
 * the registry closes: what it follows stays as it was. */
START_TEST(test_subscription_ended_link_closed)
{
	unsigned lists;

	setup_with(5000, 500);
	plugin_start(0);
	fx.refuse_subscribe = 1;
	csimgr_start(fx.m);
	wait_count(BERTH__ENVELOPE__BODY_SUBSCRIBE, 1);
	idle(300);
	ck_assert_uint_eq(fake_count(fx.fp, BERTH__ENVELOPE__BODY_SUBSCRIBE),
	    1);
	wait_count(BERTH__ENVELOPE__BODY_SUBSCRIBE, 2);
	idle(50);
	add_row(NODE, "hp", "a1", fx.ep[0]);
	notice(REGISTERED, NODE, "hp", "a1");
	wait_follows(NODE, "hp", "a1", 1);
	/* A lookup in flight when the registry dies. */
	fx.hold_get = true;
	notice(REGISTERED, NODE, "hp", "a2");
	ck_assert(fake_run_until(fx.base, held_at_least, (void *)1, 2000));
	lists = fake_count(fx.fp, BERTH__ENVELOPE__BODY_LIST_PLUGINS);
	fake_close(fx.fp);
	/* Its resyncs cannot reach the registry now; nothing is lost. */
	idle(1500);
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_LIST_PLUGINS), lists);
	ck_assert_uint_eq(followed(), 1);
	ck_assert_str_eq(csi_inst_alloc(csimgr_find(fx.m, NODE, "hp")), "a1");
	ck_assert(csi_inst_fingerprint(csimgr_find(fx.m, NODE,
	    "hp"))->healthy);
}
END_TEST

/*
 * Out of memory while following a plugin ends the process (status 1)
 * instead of leaving the plugin unfollowed. strdup fails here for one
 * alloc name only, so nothing else is disturbed.
 */
#define OOM_ALLOC "oom-alloc"

char *
strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (strcmp(s, OOM_ALLOC) == 0)
		return NULL;
	if ((p = malloc(n)) != NULL)
		memcpy(p, s, n);
	return p;
}

START_TEST(test_oom_while_following_is_fatal)
{
	setup();
	start_following();
	add_row(NODE, "hp", OOM_ALLOC, "unix:///nowhere.sock");
	notice(REGISTERED, NODE, "hp", OOM_ALLOC);
	idle(2000);
	/* Reached only if the manager carried on (a failed assertion
	 * would exit 1 too, so not that). */
	fprintf(stderr, "the manager carried on after running out of memory "
	    "(following %zu instances)\n", followed());
	_exit(42);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("csimanager");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_follow_and_fingerprint);
	tcase_add_test(tc, test_newest_active_then_gone);
	tcase_add_test(tc, test_stale_fingerprint_dropped);
	tcase_add_test(tc, test_unhealthy_then_healthy);
	tcase_add_test(tc, test_heartbeat_streak);
	tcase_add_test(tc, test_gap);
	tcase_add_test(tc, test_periodic_resync);
	tcase_add_test(tc, test_lookups_late_out_of_order_never);
	tcase_add_test(tc, test_subscription_ended_link_closed);
	tcase_add_exit_test(tc, test_oom_while_following_is_fatal, 1);
	return harness_run("csimanager", tc);
}
