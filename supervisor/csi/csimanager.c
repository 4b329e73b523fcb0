/*
 * csimanager.c: follow the registry, fingerprint the active plugins (see
 * csimanager.h).
 *
 * Owns: one instance manager per active (type, name), its connection and
 * fingerprint. Must not: trust the order of replies to calls it made for
 * an alloc it no longer follows (a generation number drops them).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "csi_client.h"
#include "csimanager.h"
#include "events.h"
#include "registry_client.h"
#include "xalloc.h"

#define FP_DEADLINE_MS 5000
#define FP_RETRY_FIRST_MS 1000
#define FP_RETRY_MAX_MS 30000
#define RESUBSCRIBE_MS 1000

/* Where an instance's fingerprint stands; fp.done and fp.healthy
 * say the same to readers. */
enum fp_state {
	FP_FIRST,		/* the first one runs (since followed, or a switch) */
	FP_HEALTHY,		/* the last one passed; refreshed on resync */
	FP_UNHEALTHY,		/* the last one failed; retried on a timer */
};

struct csi_inst {
	struct csimgr *m;
	enum fp_state state;
	Berth__PluginType type;
	char *name, *alloc, *endpoint;
	struct csi_conn *conn;
	struct csi_fingerprint fp;
	uint64_t gen;			/* bumped on every switch */
	int pending;
	bool dead, seen;
	bool recheck;			/* (re)registered: say so once healthy */
	int64_t retry_ms;
	struct event *timer;
	TAILQ_ENTRY(csi_inst) entry;
};

/* An alloc whose plugin's heartbeat failed, followed or not. */
struct hb_down {
	char *name, *alloc, *why;
	TAILQ_ENTRY(hb_down) entry;
};

struct csimgr {
	struct csimgr_deps d;
	struct regclient_sub *sub;
	struct event *resync, *resub;
	TAILQ_HEAD(, csi_inst) insts;
	TAILQ_HEAD(, hb_down) down;
	void (*node_up)(void *, const char *);	/* csimgr_on_node_up() */
	void *node_up_ctx;
};

/* A call's context: the instance and the generation it was made for. */
struct fpcall {
	struct csi_inst *in;
	uint64_t gen;
};

static void fingerprint(struct csi_inst *in);
static bool heartbeat_down(struct csi_inst *in);

static const char *
type_name(Berth__PluginType t)
{
	return t == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE ? "node" :
	    t == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER ? "controller" :
	    "other";
}

static bool
is_csi(Berth__PluginType t)
{
	return t == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE ||
	    t == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER;
}

static void
inst_release(struct csi_inst *in)
{
	if (--in->pending > 0 || !in->dead)
		return;
	free(in->name);
	free(in->alloc);
	free(in->endpoint);
	free(in);
}

static void
inst_free(struct csi_inst *in)
{
	TAILQ_REMOVE(&in->m->insts, in, entry);
	if (in->conn != NULL)
		csi_conn_close(in->conn);
	event_free(in->timer);
	in->dead = true;
	in->pending++;
	inst_release(in);
}

static struct fpcall *
call_ctx(struct csi_inst *in)
{
	struct fpcall *fc = xmalloc(sizeof(*fc));

	fc->in = in;
	fc->gen = in->gen;
	in->pending++;
	return fc;
}

/* The instance the reply is for, or NULL when it is stale. */
static struct csi_inst *
call_end(struct fpcall *fc, ProtobufCMessage **reply)
{
	struct csi_inst *in = fc->in;
	uint64_t gen = fc->gen;

	free(fc);
	if (in->dead || gen != in->gen) {
		if (*reply != NULL)
			protobuf_c_message_free_unpacked(*reply, NULL);
		*reply = NULL;
		inst_release(in);
		return NULL;
	}
	in->pending--;
	return in;
}

static void
set_state(struct csi_inst *in, enum fp_state state)
{
	in->state = state;
	in->fp.done = state != FP_FIRST;
	in->fp.healthy = state == FP_HEALTHY;
}

/* Unhealthy for why: told once as an event, logged when why changes. */
static void
mark_unhealthy(struct csi_inst *in, const char *why)
{
	if (in->state != FP_UNHEALTHY)
		events_record(in->m->d.events, "plugin", "PluginUnhealthy",
		    in->alloc, NULL, in->name, "%s plugin: %s",
		    type_name(in->type), why);
	if (in->state != FP_UNHEALTHY ||
	    strcmp(in->fp.health + 11, why) != 0)
		log_warnx("csi: plugin=%s type=%s alloc=%s health=unhealthy "
		    "reason=\"%s\"", in->name, type_name(in->type), in->alloc,
		    why);
	set_state(in, FP_UNHEALTHY);
	snprintf(in->fp.health, sizeof(in->fp.health), "unhealthy: %s", why);
}

static void
fp_failed(struct csi_inst *in, const char *fmt, ...) BERTH_PRINTF(2, 3);

static void
fp_failed(struct csi_inst *in, const char *fmt, ...)
{
	struct timeval tv;
	char why[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (heartbeat_down(in))
		return;
	mark_unhealthy(in, why);
	tv.tv_sec = in->retry_ms / 1000;
	tv.tv_usec = (in->retry_ms % 1000) * 1000;
	evtimer_add(in->timer, &tv);
	in->retry_ms *= 2;
	if (in->retry_ms > FP_RETRY_MAX_MS)
		in->retry_ms = FP_RETRY_MAX_MS;
}

static struct hb_down *
down_of(struct csimgr *m, const char *name, const char *alloc)
{
	struct hb_down *h;

	TAILQ_FOREACH(h, &m->down, entry)
		if (strcmp(h->name, name) == 0 && strcmp(h->alloc, alloc) == 0)
			return h;
	return NULL;
}

/* The heartbeat's word wins over a fingerprint that passed. */
static bool
heartbeat_down(struct csi_inst *in)
{
	struct hb_down *h = down_of(in->m, in->name, in->alloc);
	char why[sizeof(in->fp.health)];

	if (h == NULL)
		return false;
	evtimer_del(in->timer);
	snprintf(why, sizeof(why), "its heartbeat failed: %s", h->why);
	mark_unhealthy(in, why);
	return true;
}

static void
fp_done(struct csi_inst *in)
{
	struct csi_fingerprint *fp = &in->fp;
	char was[sizeof(fp->health)];
	bool news = in->state != FP_HEALTHY;

	if (heartbeat_down(in))
		return;
	snprintf(was, sizeof(was), "%s", fp->health);
	set_state(in, FP_HEALTHY);
	in->retry_ms = FP_RETRY_FIRST_MS;
	if (in->type == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE) {
		char maxv[32];

		if (fp->max_volumes > 0)
			snprintf(maxv, sizeof(maxv), "%lld",
			    (long long)fp->max_volumes);
		else
			snprintf(maxv, sizeof(maxv), "unlimited");
		snprintf(fp->health, sizeof(fp->health), "healthy: node id "
		    "%s, max volumes %s, topology {%s}, %s%s", fp->node_id,
		    maxv, fp->topology, fp->stage_unstage ? "stages volumes" :
		    "publishes without staging", fp->mount_group ?
		    ", sets the mount group" : "");
	} else
		snprintf(fp->health, sizeof(fp->health), "healthy: controller"
		    "%s%s", fp->create_delete ? ", creates volumes" : "",
		    fp->publish_unpublish ? ", publishes volumes" : "");
	if (in->recheck && in->type == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE &&
	    in->m->node_up != NULL)
		in->m->node_up(in->m->node_up_ctx, in->name);
	in->recheck = false;
	if (news)
		events_record(in->m->d.events, "plugin", "PluginHealthy",
		    in->alloc, NULL, in->name, "%s plugin: %s",
		    type_name(in->type), fp->health + 9);
	if (strcmp(was, fp->health) != 0)
		log_info("csi: plugin=%s type=%s alloc=%s health=healthy "
		    "fingerprint=\"%s\"", in->name, type_name(in->type),
		    in->alloc, fp->health + 9);
}

static void
on_ctrl_caps(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	Csi__V1__ControllerGetCapabilitiesResponse *r = (void *)reply;
	struct csi_inst *in;

	if ((in = call_end(arg, &reply)) == NULL)
		return;
	if (res->code != CSI_OK) {
		fp_failed(in, "ControllerGetCapabilities: %s: %s",
		    csi_code_name(res->code), res->message);
		return;
	}
	r = (void *)reply;
	in->fp.create_delete = csi_controller_has_rpc(r,
	    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_VOLUME);
	in->fp.publish_unpublish = csi_controller_has_rpc(r,
	    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__PUBLISH_UNPUBLISH_VOLUME);
	in->fp.expand = csi_controller_has_rpc(r,
	    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME);
	in->fp.snapshots = csi_controller_has_rpc(r,
	    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_SNAPSHOT);
	in->fp.list_snapshots = csi_controller_has_rpc(r,
	    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__LIST_SNAPSHOTS);
	protobuf_c_message_free_unpacked(reply, NULL);
	fp_done(in);
}

static void
on_node_caps(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	Csi__V1__NodeGetCapabilitiesResponse *r;
	struct csi_inst *in;

	if ((in = call_end(arg, &reply)) == NULL)
		return;
	if (res->code != CSI_OK) {
		fp_failed(in, "NodeGetCapabilities: %s: %s",
		    csi_code_name(res->code), res->message);
		return;
	}
	r = (void *)reply;
	in->fp.stage_unstage = csi_node_has_rpc(r,
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__STAGE_UNSTAGE_VOLUME);
	in->fp.volume_stats = csi_node_has_rpc(r,
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME_STATS);
	in->fp.volume_condition = csi_node_has_rpc(r,
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION);
	in->fp.mount_group = csi_node_has_rpc(r,
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_MOUNT_GROUP);
	in->fp.single_node_multi_writer = csi_node_has_rpc(r,
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__SINGLE_NODE_MULTI_WRITER);
	in->fp.expand = csi_node_has_rpc(r,
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME);
	protobuf_c_message_free_unpacked(reply, NULL);
	fp_done(in);
}

static void
on_node_info(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	Csi__V1__NodeGetCapabilitiesRequest req =
	    CSI__V1__NODE_GET_CAPABILITIES_REQUEST__INIT;
	Csi__V1__NodeGetInfoResponse *r;
	struct csi_inst *in;
	struct fpcall *fc;
	size_t i, off = 0;

	if ((in = call_end(arg, &reply)) == NULL)
		return;
	if (res->code != CSI_OK) {
		fp_failed(in, "NodeGetInfo: %s: %s", csi_code_name(res->code),
		    res->message);
		return;
	}
	r = (void *)reply;
	if (r->node_id == NULL || r->node_id[0] == '\0') {
		protobuf_c_message_free_unpacked(reply, NULL);
		fp_failed(in, "NodeGetInfo returned no node_id, which the CSI "
		    "spec requires");
		return;
	}
	snprintf(in->fp.node_id, sizeof(in->fp.node_id), "%s", r->node_id);
	in->fp.max_volumes = r->max_volumes_per_node > 0 ?
	    r->max_volumes_per_node : 0;
	in->fp.topology[0] = '\0';
	for (i = 0; r->accessible_topology != NULL &&
	    i < r->accessible_topology->n_segments; i++) {
		const Csi__V1__Topology__SegmentsEntry *s =
		    r->accessible_topology->segments[i];

		if (off < sizeof(in->fp.topology))
			off += (size_t)snprintf(in->fp.topology + off,
			    sizeof(in->fp.topology) - off, "%s%s=%s",
			    i ? "," : "", s->key ? s->key : "",
			    s->value ? s->value : "");
	}
	protobuf_c_message_free_unpacked(reply, NULL);
	fc = call_ctx(in);
	csi_call(in->conn, CSI_NODE_GET_CAPABILITIES, &req.base,
	    FP_DEADLINE_MS, &csi_retry_default, on_node_caps, fc);
}

static void
on_plugin_caps(const struct csi_result *res, ProtobufCMessage *reply,
    void *arg)
{
	Csi__V1__NodeGetInfoRequest ni = CSI__V1__NODE_GET_INFO_REQUEST__INIT;
	Csi__V1__ControllerGetCapabilitiesRequest cc =
	    CSI__V1__CONTROLLER_GET_CAPABILITIES_REQUEST__INIT;
	Csi__V1__GetPluginCapabilitiesResponse *r;
	struct csi_inst *in;
	struct fpcall *fc;

	if ((in = call_end(arg, &reply)) == NULL)
		return;
	if (res->code != CSI_OK) {
		fp_failed(in, "GetPluginCapabilities: %s: %s",
		    csi_code_name(res->code), res->message);
		return;
	}
	r = (void *)reply;
	in->fp.controller_service = csi_plugin_has_service(r,
	    CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__CONTROLLER_SERVICE);
	in->fp.accessibility = csi_plugin_has_service(r,
	    CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__VOLUME_ACCESSIBILITY_CONSTRAINTS);
	in->fp.expansion = csi_plugin_expansion(r);
	protobuf_c_message_free_unpacked(reply, NULL);
	if (in->type == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER &&
	    !in->fp.controller_service) {
		fp_failed(in, "registered as a controller, but "
		    "GetPluginCapabilities does not list CONTROLLER_SERVICE");
		return;
	}
	fc = call_ctx(in);
	if (in->type == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE)
		csi_call(in->conn, CSI_NODE_GET_INFO, &ni.base, FP_DEADLINE_MS,
		    &csi_retry_default, on_node_info, fc);
	else
		csi_call(in->conn, CSI_CONTROLLER_GET_CAPABILITIES, &cc.base,
		    FP_DEADLINE_MS, &csi_retry_default, on_ctrl_caps, fc);
}

static void
fingerprint(struct csi_inst *in)
{
	Csi__V1__GetPluginCapabilitiesRequest req =
	    CSI__V1__GET_PLUGIN_CAPABILITIES_REQUEST__INIT;
	struct fpcall *fc;

	evtimer_del(in->timer);
	if (in->conn == NULL && (in->conn = csi_conn_open(in->m->d.csi,
	    in->endpoint)) == NULL) {
		fp_failed(in, "cannot connect to %s", in->endpoint);
		return;
	}
	csi_conn_set_plugin(in->conn, csi_inst_name(in));
	fc = call_ctx(in);
	csi_call(in->conn, CSI_GET_PLUGIN_CAPABILITIES, &req.base,
	    FP_DEADLINE_MS, &csi_retry_default, on_plugin_caps, fc);
}

static void
on_inst_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	fingerprint(arg);
}

static struct csi_inst *
find(struct csimgr *m, Berth__PluginType type, const char *name)
{
	struct csi_inst *in;

	TAILQ_FOREACH(in, &m->insts, entry)
		if (in->type == type && strcmp(in->name, name) == 0)
			return in;
	return NULL;
}

/* What GetPluginInfo told the plugin supervisor, as registered. */
static void
set_provider(struct csi_inst *in, const Berth__PluginInstance *pi)
{
	snprintf(in->fp.provider, sizeof(in->fp.provider), "%s",
	    pi->provider != NULL ? pi->provider : "");
	snprintf(in->fp.version, sizeof(in->fp.version), "%s",
	    pi->provider_version != NULL ? pi->provider_version : "");
}

/* The registry says pi is the active instance of its plugin. */
static void
follow(struct csimgr *m, const Berth__PluginInstance *pi, bool refresh)
{
	struct csi_inst *in = find(m, pi->type, pi->name);
	char *alloc, *endpoint;

	if (in != NULL) {
		in->seen = true;
		set_provider(in, pi);
		if (strcmp(in->alloc, pi->alloc) == 0 &&
		    strcmp(in->endpoint, pi->endpoint) == 0) {
			if (refresh) {
				in->recheck = true;
				fingerprint(in);
			}
			return;
		}
		alloc = xstrdup(pi->alloc);
		endpoint = xstrdup(pi->endpoint);
		log_info("csi: plugin=%s type=%s now follows alloc %s (was %s)",
		    in->name, type_name(in->type), alloc, in->alloc);
		free(in->alloc);
		free(in->endpoint);
		in->alloc = alloc;
		in->endpoint = endpoint;
		in->gen++;
		if (in->conn != NULL)
			csi_conn_close(in->conn);
		in->conn = NULL;
		memset(&in->fp, 0, sizeof(in->fp));
		set_provider(in, pi);
		snprintf(in->fp.health, sizeof(in->fp.health),
		    "fingerprinting");
		set_state(in, FP_FIRST);
		in->retry_ms = FP_RETRY_FIRST_MS;
		in->recheck = true;
		fingerprint(in);
		return;
	}
	in = xcalloc(1, sizeof(*in));
	in->name = xstrdup(pi->name);
	in->alloc = xstrdup(pi->alloc);
	in->endpoint = xstrdup(pi->endpoint);
	in->timer = xnonnull(evtimer_new(m->d.base, on_inst_timer, in),
	    "csi: follow: evtimer_new");
	in->m = m;
	in->type = pi->type;
	in->seen = true;
	in->recheck = true;
	in->retry_ms = FP_RETRY_FIRST_MS;
	set_provider(in, pi);
	snprintf(in->fp.health, sizeof(in->fp.health), "fingerprinting");
	TAILQ_INSERT_TAIL(&m->insts, in, entry);
	log_info("csi: plugin=%s type=%s follows alloc %s", in->name,
	    type_name(in->type), in->alloc);
	fingerprint(in);
}

static void
gone(struct csi_inst *in)
{
	log_info("csi: plugin=%s type=%s has no instance left (alloc %s was "
	    "the last)", in->name, type_name(in->type), in->alloc);
	inst_free(in);
}

struct lookup {
	struct csimgr *m;
	Berth__PluginType type;
	char *name;
	bool refresh;
};

static void
on_active(const struct regclient_result *res, void *arg)
{
	struct lookup *lk = arg;
	struct csi_inst *in;

	if (res->code == BERTH__ERROR_CODE__ERROR_NONE &&
	    res->reply->body_case == BERTH__ENVELOPE__BODY_PLUGIN_LIST &&
	    res->reply->plugin_list->n_instances > 0)
		follow(lk->m, res->reply->plugin_list->instances[0],
		    lk->refresh);
	else if (res->code == BERTH__ERROR_CODE__ERROR_NOT_FOUND ||
	    res->code == BERTH__ERROR_CODE__ERROR_NONE) {
		if ((in = find(lk->m, lk->type, lk->name)) != NULL)
			gone(in);
	} else
		log_warnx("csi: reading the active %s plugin %s: %s: %s",
		    type_name(lk->type), lk->name, ipc_error_name(res->code),
		    res->message);
	free(lk->name);
	free(lk);
}

static void
on_event(struct regclient_sub *sub, enum regclient_event_kind kind,
    const Berth__Event *ev, void *arg)
{
	struct csimgr *m = arg;
	struct timeval tv = { RESUBSCRIBE_MS / 1000, 0 };
	struct lookup *lk;

	(void)sub;
	if (kind == REGCLIENT_GAP) {
		event_active(m->resync, 0, 0);
		return;
	}
	if (kind == REGCLIENT_ENDED) {
		log_warnx("csi: the registry subscription ended; subscribing "
		    "again");
		m->sub = NULL;
		evtimer_add(m->resub, &tv);
		return;
	}
	if (!is_csi(ev->plugin_type) ||
	    (ev->type != BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_REGISTERED &&
	    ev->type != BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_DEREGISTERED &&
	    ev->type != BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_PROMOTED))
		return;
	lk = xcalloc(1, sizeof(*lk));
	lk->name = xstrdup(ev->plugin_name);
	lk->m = m;
	lk->type = ev->plugin_type;
	/* A re-registration of the alloc we follow: the plugin restarted. */
	lk->refresh = ev->type ==
	    BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_REGISTERED;
	if (regclient_get_plugin(m->d.registry, ev->plugin_type,
	    ev->plugin_name, "", on_active, lk) < 0) {
		/* The next resync catches up. */
		log_warnx("csi: reading the active %s plugin %s: cannot reach "
		    "berth-registry", type_name(lk->type), lk->name);
		free(lk->name);
		free(lk);
	}
}

/* The backstop: every active instance, as the registry has them. */
static void
on_listed(const struct regclient_result *res,
    Berth__PluginInstance *const *items, size_t n, void *arg)
{
	struct csimgr *m = arg;
	struct csi_inst *in, *next;
	size_t i;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		log_warnx("csi: resync: %s: %s", ipc_error_name(res->code),
		    res->message);
		return;
	}
	TAILQ_FOREACH(in, &m->insts, entry)
		in->seen = false;
	for (i = 0; i < n; i++)
		if (is_csi(items[i]->type) && items[i]->active)
			follow(m, items[i], false);
	for (in = TAILQ_FIRST(&m->insts); in != NULL; in = next) {
		next = TAILQ_NEXT(in, entry);
		if (!in->seen)
			gone(in);
		else if (in->state == FP_HEALTHY)
			fingerprint(in);	/* health, refreshed */
	}
}

static void
on_resync(evutil_socket_t fd, short ev, void *arg)
{
	struct csimgr *m = arg;
	struct timeval tv = { m->d.resync_ms / 1000,
		(m->d.resync_ms % 1000) * 1000 };

	(void)fd;
	(void)ev;
	if (regclient_list_plugins(m->d.registry,
	    BERTH__PLUGIN_TYPE__PLUGIN_TYPE_UNKNOWN, NULL, on_listed, m) < 0)
		log_warnx("csi: resync: cannot reach berth-registry");
	evtimer_add(m->resync, &tv);
}

static void
subscribe(struct csimgr *m)
{
	struct timeval tv = { RESUBSCRIBE_MS / 1000, 0 };

	/* Live events from now; the list that follows covers the past. */
	if ((m->sub = regclient_subscribe(m->d.registry, 0, true,
	    on_event, m)) == NULL)
		evtimer_add(m->resub, &tv);
	event_active(m->resync, 0, 0);
}

static void
on_resub(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	subscribe(arg);
}

static void
down_free(struct csimgr *m, struct hb_down *h)
{
	TAILQ_REMOVE(&m->down, h, entry);
	free(h->name);
	free(h->alloc);
	free(h->why);
	free(h);
}

struct csimgr *
csimgr_new(const struct csimgr_deps *d)
{
	struct csimgr *m = xcalloc(1, sizeof(*m));

	m->d = *d;
	TAILQ_INIT(&m->insts);
	TAILQ_INIT(&m->down);
	m->resync = xnonnull(evtimer_new(d->base, on_resync, m),
	    "csimgr_new: evtimer_new");
	m->resub = xnonnull(evtimer_new(d->base, on_resub, m),
	    "csimgr_new: evtimer_new");
	return m;
}

void
csimgr_start(struct csimgr *m)
{
	if (m->sub == NULL)
		subscribe(m);
}

void
csimgr_free(struct csimgr *m)
{
	if (m == NULL)
		return;
	if (m->sub != NULL)
		regclient_unsubscribe(m->sub);
	while (TAILQ_FIRST(&m->insts) != NULL)
		inst_free(TAILQ_FIRST(&m->insts));
	while (TAILQ_FIRST(&m->down) != NULL)
		down_free(m, TAILQ_FIRST(&m->down));
	if (m->resync != NULL)
		event_free(m->resync);
	if (m->resub != NULL)
		event_free(m->resub);
	free(m);
}

void
csimgr_heartbeat(struct csimgr *m, const char *name, const char *alloc,
    bool healthy, const char *why)
{
	struct hb_down *h = down_of(m, name, alloc);
	struct csi_inst *in;

	if (healthy && h == NULL)
		return;
	if (healthy)
		down_free(m, h);
	else {
		if (h == NULL) {
			h = xcalloc(1, sizeof(*h));
			h->name = xstrdup(name);
			h->alloc = xstrdup(alloc);
			TAILQ_INSERT_TAIL(&m->down, h, entry);
		}
		free(h->why);
		h->why = xstrdup(why != NULL && why[0] != '\0' ? why :
		    "no reason given");
	}
	TAILQ_FOREACH(in, &m->insts, entry) {
		if (strcmp(in->name, name) != 0 ||
		    strcmp(in->alloc, alloc) != 0)
			continue;
		if (healthy)
			fingerprint(in);	/* healthy once it passes */
		else
			heartbeat_down(in);
	}
}

void
csimgr_on_node_up(struct csimgr *m, void (*fn)(void *ctx, const char *name),
    void *ctx)
{
	m->node_up = fn;
	m->node_up_ctx = ctx;
}

struct csi_inst *
csimgr_find(struct csimgr *m, Berth__PluginType type, const char *name)
{
	return find(m, type, name);
}

const char *
csi_inst_alloc(const struct csi_inst *in)
{
	return in->alloc;
}

struct csi_conn *
csi_inst_conn(const struct csi_inst *in)
{
	return in->conn;
}

const struct csi_fingerprint *
csi_inst_fingerprint(const struct csi_inst *in)
{
	return &in->fp;
}

/* In the order the instances were first followed; none without m. */
struct csi_inst *
csimgr_first(struct csimgr *m)
{
	return m != NULL ? TAILQ_FIRST(&m->insts) : NULL;
}

struct csi_inst *
csimgr_next(struct csi_inst *in)
{
	return TAILQ_NEXT(in, entry);
}

const char *
csi_inst_name(const struct csi_inst *in)
{
	return in->name;
}

Berth__PluginType
csi_inst_type(const struct csi_inst *in)
{
	return in->type;
}

const char *
csi_inst_type_name(const struct csi_inst *in)
{
	return type_name(in->type);
}

const char *
csi_inst_endpoint(const struct csi_inst *in)
{
	return in->endpoint;
}
