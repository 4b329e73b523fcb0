/*
 * registry_client.c: the supervisor's calls to berth-registry and its
 * event subscriptions (see registry_client.h).
 *
 * Owns: the requests it sends and the state of each subscription (its
 * registry-side id, the last index delivered, the pending acknowledgement).
 * Must not: block, or hand a callback anything it has not checked came
 * from the registry as the reply to that call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/queue.h>

#include <unistd.h>

#include "ident.h"
#include "metrics.h"
#include "registry_client.h"
#include "xalloc.h"

struct regclient_sub {
	TAILQ_ENTRY(regclient_sub) entry;
	struct regclient *rc;
	uint64_t id;			/* 0 while (re)subscribing */
	uint64_t cursor;		/* the last index delivered */
	regclient_event_cb cb;
	void *arg;
	struct event *ack;		/* deferred: one ack per read burst */
	bool in_flight;			/* a subscribe request is pending */
	bool dead;			/* unsubscribed; free when idle */
};

struct regclient {
	struct event_base *base;
	struct chan *chan;
	unsigned timeout_ms;
	TAILQ_HEAD(, regclient_sub) subs;
	size_t calls;			/* requests in flight */
	bool freed;
};

enum call_kind { CALL_ONE, CALL_PLUGINS, CALL_HANDLES, CALL_VOLUMES };

struct call {
	struct regclient *rc;
	enum call_kind kind;
	regclient_cb cb;
	regclient_plugins_cb pcb;
	regclient_handles_cb hcb;
	regclient_volumes_cb vcb;
	void *arg;
	/* Lists: the request to page on, the pages so far, their items. */
	Berth__ListPlugins lp;
	Berth__ListHandles lh;
	Berth__ListVolumes lv;
	char name[BERTH_IDENT_MAX + 1];
	char after_ns[BERTH_IDENT_MAX + 1], after_id[BERTH_IDENT_MAX + 1];
	ProtobufCMessage **pages;
	size_t npages, cappages;
	void **items;
	size_t n, cap;
	/* A write: its body and when it was sent, for its latency. */
	Berth__Envelope__BodyCase write;
	struct timespec sent;
};

static void
rc_release(struct regclient *rc)
{
	if (--rc->calls == 0 && rc->freed)
		free(rc);
}

struct regclient *
regclient_new(struct event_base *base, struct chan *c, unsigned timeout_ms)
{
	struct regclient *rc;

	rc = xcalloc(1, sizeof(*rc));
	rc->base = base;
	rc->chan = c;
	rc->timeout_ms = timeout_ms ? timeout_ms : REGCLIENT_TIMEOUT_MS;
	TAILQ_INIT(&rc->subs);
	return rc;
}

static void
sub_free(struct regclient_sub *sub)
{
	TAILQ_REMOVE(&sub->rc->subs, sub, entry);
	event_free(sub->ack);
	free(sub);
}

void
regclient_free(struct regclient *rc)
{
	struct regclient_sub *sub, *next;

	if (rc == NULL)
		return;
	for (sub = TAILQ_FIRST(&rc->subs); sub != NULL; sub = next) {
		next = TAILQ_NEXT(sub, entry);
		if (sub->in_flight) {
			sub->dead = true;	/* freed by its reply */
			sub->cb = NULL;
		} else {
			sub_free(sub);
		}
	}
	rc->freed = true;
	rc->chan = NULL;
	if (rc->calls == 0)
		free(rc);
}

static void
items_free(struct call *call)
{
	size_t i;

	for (i = 0; i < call->npages; i++)
		protobuf_c_message_free_unpacked(call->pages[i], NULL);
	free(call->pages);
	free(call->items);
}

static void
finish(struct call *call, const struct regclient_result *res)
{
	struct timespec now;

	if (call->write != BERTH__ENVELOPE__BODY__NOT_SET) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		metrics_registry_write(ipc_body_name(call->write),
		    (double)(now.tv_sec - call->sent.tv_sec) * 1e3 +
		    (double)(now.tv_nsec - call->sent.tv_nsec) / 1e6);
	}
	/* The channel checked the body against the request (ipc_reply.c). */
	switch (call->kind) {
	case CALL_ONE:
		call->cb(res, call->arg);
		break;
	case CALL_PLUGINS:
		call->pcb(res, (Berth__PluginInstance *const *)call->items,
		    res->code == BERTH__ERROR_CODE__ERROR_NONE ? call->n : 0,
		    call->arg);
		break;
	case CALL_HANDLES:
		call->hcb(res, (Berth__Handle *const *)call->items,
		    res->code == BERTH__ERROR_CODE__ERROR_NONE ? call->n : 0,
		    call->arg);
		break;
	case CALL_VOLUMES:
		call->vcb(res, (Berth__VolumeReply *const *)call->items,
		    res->code == BERTH__ERROR_CODE__ERROR_NONE ? call->n : 0,
		    call->arg);
		break;
	}
	items_free(call);
	rc_release(call->rc);
	free(call);
}

static void
fail(struct call *call, Berth__ErrorCode code, const char *msg)
{
	struct regclient_result res = { code, msg, NULL };

	finish(call, &res);
}

/* Copy a message out of a reply that is freed when its callback returns. */
static void *
copy_msg(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf;
	void *out;

	buf = xmalloc(len);
	protobuf_c_message_pack(m, buf);
	/* What was just packed unpacks; only memory can be lacking. */
	out = xnonnull(protobuf_c_message_unpack(m->descriptor, NULL, len,
	    buf), "copy_msg: protobuf_c_message_unpack");
	free(buf);
	return out;
}

/* Keep a copy of one page and point at its items. */
static void
keep(struct call *call, const ProtobufCMessage *page)
{
	ProtobufCMessage *copy;
	void **items;
	size_t i, n;

	if (call->npages == call->cappages) {
		call->cappages = call->cappages ? call->cappages * 2 : 8;
		call->pages = xreallocarray(call->pages, call->cappages,
		    sizeof(*call->pages));
	}
	copy = copy_msg(page);
	call->pages[call->npages++] = copy;
	if (call->kind == CALL_PLUGINS) {
		n = ((Berth__PluginList *)copy)->n_instances;
		items = (void **)((Berth__PluginList *)copy)->instances;
	} else if (call->kind == CALL_VOLUMES) {
		n = ((Berth__VolumeList *)copy)->n_volumes;
		items = (void **)((Berth__VolumeList *)copy)->volumes;
	} else {
		n = ((Berth__HandleList *)copy)->n_handles;
		items = (void **)((Berth__HandleList *)copy)->handles;
	}
	if (call->n + n > call->cap) {
		while (call->n + n > call->cap)
			call->cap = call->cap ? call->cap * 2 : 256;
		call->items = xreallocarray(call->items, call->cap,
		    sizeof(*call->items));
	}
	for (i = 0; i < n; i++)
		call->items[call->n++] = items[i];
}

static int send_call(struct call *call, Berth__Envelope *env);

static void
on_reply(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct call *call = arg;
	struct regclient_result res = { 0, "", env };
	Berth__Envelope next = BERTH__ENVELOPE__INIT;
	int r;

	(void)c;
	if (fd >= 0)
		close(fd);
	if (env->error != NULL) {
		fail(call, env->error->code, env->error->message ?
		    env->error->message : "");
		return;
	}
	switch (call->kind) {
	case CALL_ONE:
		finish(call, &res);
		return;
	case CALL_PLUGINS:
		keep(call, &env->plugin_list->base);
		if (!env->plugin_list->more) {
			finish(call, &res);
			return;
		}
		call->lp.after = env->plugin_list->next;
		next.body_case = BERTH__ENVELOPE__BODY_LIST_PLUGINS;
		next.list_plugins = &call->lp;
		break;
	case CALL_HANDLES:
		keep(call, &env->handle_list->base);
		if (!env->handle_list->more) {
			finish(call, &res);
			return;
		}
		call->lh.after_kind = env->handle_list->next_kind;
		call->lh.after = env->handle_list->next;
		next.body_case = BERTH__ENVELOPE__BODY_LIST_HANDLES;
		next.list_handles = &call->lh;
		break;
	case CALL_VOLUMES:
		keep(call, &env->volume_list->base);
		if (!env->volume_list->more) {
			finish(call, &res);
			return;
		}
		snprintf(call->after_ns, sizeof(call->after_ns), "%s",
		    env->volume_list->next_namespace);
		snprintf(call->after_id, sizeof(call->after_id), "%s",
		    env->volume_list->next_id);
		next.body_case = BERTH__ENVELOPE__BODY_LIST_VOLUMES;
		next.list_volumes = &call->lv;
		break;
	}
	/* The next page: this call stays in flight. */
	if (call->rc->chan == NULL || (r = chan_request(call->rc->chan, &next,
	    -1, call->rc->timeout_ms, on_reply, call)) < 0) {
		fail(call, BERTH__ERROR_CODE__ERROR_CLOSED,
		    "cannot ask the registry for the next page");
	}
}

static int
send_call(struct call *call, Berth__Envelope *env)
{
	struct regclient *rc = call->rc;
	int r;

	if (rc->chan == NULL || rc->freed) {
		free(call);
		return -ENOTCONN;
	}
	if ((r = chan_request(rc->chan, env, -1, rc->timeout_ms, on_reply,
	    call)) < 0) {
		free(call);
		return r;
	}
	rc->calls++;
	return 0;
}

static struct call *
call_new(struct regclient *rc, regclient_cb cb, void *arg)
{
	struct call *call;

	call = xcalloc(1, sizeof(*call));
	call->rc = rc;
	call->kind = CALL_ONE;
	call->cb = cb;
	call->arg = arg;
	return call;
}

/* Send one request whose whole answer goes to cb. */
static int
one(struct regclient *rc, Berth__Envelope *env, regclient_cb cb, void *arg)
{
	struct call *call;

	if (cb == NULL)
		return -EINVAL;
	call = call_new(rc, cb, arg);
	switch (env->body_case) {
	case BERTH__ENVELOPE__BODY_REGISTER_PLUGIN:
	case BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN:
	case BERTH__ENVELOPE__BODY_PUT_VOLUME:
	case BERTH__ENVELOPE__BODY_DELETE_VOLUME:
	case BERTH__ENVELOPE__BODY_CLAIM_VOLUME:
	case BERTH__ENVELOPE__BODY_RELEASE_CLAIM:
	case BERTH__ENVELOPE__BODY_PUT_HANDLE:
	case BERTH__ENVELOPE__BODY_DELETE_HANDLE:
	case BERTH__ENVELOPE__BODY_ALLOCATE_IDS:
	case BERTH__ENVELOPE__BODY_RELEASE_IDS:
		call->write = env->body_case;
		clock_gettime(CLOCK_MONOTONIC, &call->sent);
		break;
	default:
		break;
	}
	return send_call(call, env);
}

static char *
str(const char *s)
{
	return (char *)(s != NULL ? s : "");
}

int
regclient_register(struct regclient *rc, const Berth__PluginInstance *pi,
    regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__RegisterPlugin rp = BERTH__REGISTER_PLUGIN__INIT;

	rp.instance = (Berth__PluginInstance *)pi;
	env.body_case = BERTH__ENVELOPE__BODY_REGISTER_PLUGIN;
	env.register_plugin = &rp;
	return one(rc, &env, cb, arg);
}

int
regclient_deregister(struct regclient *rc, Berth__PluginType type,
    const char *name, const char *alloc, regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__DeregisterPlugin dp = BERTH__DEREGISTER_PLUGIN__INIT;
	Berth__PluginKey key = BERTH__PLUGIN_KEY__INIT;

	key.type = type;
	key.name = str(name);
	key.alloc = str(alloc);
	dp.key = &key;
	env.body_case = BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN;
	env.deregister_plugin = &dp;
	return one(rc, &env, cb, arg);
}

int
regclient_get_plugin(struct regclient *rc, Berth__PluginType type,
    const char *name, const char *alloc, regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__GetPlugin gp = BERTH__GET_PLUGIN__INIT;
	Berth__PluginKey key = BERTH__PLUGIN_KEY__INIT;

	key.type = type;
	key.name = str(name);
	key.alloc = str(alloc);
	gp.key = &key;
	env.body_case = BERTH__ENVELOPE__BODY_GET_PLUGIN;
	env.get_plugin = &gp;
	return one(rc, &env, cb, arg);
}

int
regclient_list_plugins(struct regclient *rc, Berth__PluginType type,
    const char *name, regclient_plugins_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	struct call *call;

	if (cb == NULL || strlen(str(name)) >= sizeof(call->name))
		return -EINVAL;
	call = call_new(rc, NULL, arg);
	call->kind = CALL_PLUGINS;
	call->pcb = cb;
	berth__list_plugins__init(&call->lp);
	memcpy(call->name, str(name), strlen(str(name)) + 1);
	call->lp.type = type;
	call->lp.name = call->name;
	env.body_case = BERTH__ENVELOPE__BODY_LIST_PLUGINS;
	env.list_plugins = &call->lp;
	return send_call(call, &env);
}

int
regclient_list_volumes(struct regclient *rc, const char *ns,
    regclient_volumes_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	struct call *call;

	if (cb == NULL || strlen(str(ns)) >= sizeof(call->name))
		return -EINVAL;
	call = call_new(rc, NULL, arg);
	call->kind = CALL_VOLUMES;
	call->vcb = cb;
	berth__list_volumes__init(&call->lv);
	memcpy(call->name, str(ns), strlen(str(ns)) + 1);
	call->lv.namespace_ = call->name;
	call->lv.after_namespace = call->after_ns;
	call->lv.after_id = call->after_id;
	env.body_case = BERTH__ENVELOPE__BODY_LIST_VOLUMES;
	env.list_volumes = &call->lv;
	return send_call(call, &env);
}

int
regclient_put_volume(struct regclient *rc, const Berth__Volume *v,
    regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PutVolume pv = BERTH__PUT_VOLUME__INIT;

	pv.volume = (Berth__Volume *)v;
	env.body_case = BERTH__ENVELOPE__BODY_PUT_VOLUME;
	env.put_volume = &pv;
	return one(rc, &env, cb, arg);
}

int
regclient_get_volume(struct regclient *rc, const char *ns, const char *id,
    regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__GetVolume gv = BERTH__GET_VOLUME__INIT;
	Berth__VolumeKey key = BERTH__VOLUME_KEY__INIT;

	key.namespace_ = str(ns);
	key.id = str(id);
	gv.key = &key;
	env.body_case = BERTH__ENVELOPE__BODY_GET_VOLUME;
	env.get_volume = &gv;
	return one(rc, &env, cb, arg);
}

int
regclient_delete_volume(struct regclient *rc, const char *ns, const char *id,
    regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__DeleteVolume dv = BERTH__DELETE_VOLUME__INIT;
	Berth__VolumeKey key = BERTH__VOLUME_KEY__INIT;

	key.namespace_ = str(ns);
	key.id = str(id);
	dv.key = &key;
	env.body_case = BERTH__ENVELOPE__BODY_DELETE_VOLUME;
	env.delete_volume = &dv;
	return one(rc, &env, cb, arg);
}

int
regclient_claim(struct regclient *rc, const Berth__Claim *claim,
    regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__ClaimVolume cv = BERTH__CLAIM_VOLUME__INIT;

	cv.claim = (Berth__Claim *)claim;
	env.body_case = BERTH__ENVELOPE__BODY_CLAIM_VOLUME;
	env.claim_volume = &cv;
	return one(rc, &env, cb, arg);
}

int
regclient_release(struct regclient *rc, const char *ns, const char *volume,
    const char *alloc, regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__ReleaseClaim rl = BERTH__RELEASE_CLAIM__INIT;

	rl.namespace_ = str(ns);
	rl.volume = str(volume);
	rl.alloc = str(alloc);
	env.body_case = BERTH__ENVELOPE__BODY_RELEASE_CLAIM;
	env.release_claim = &rl;
	return one(rc, &env, cb, arg);
}

int
regclient_allocate_ids(struct regclient *rc, const char *alloc,
    uint32_t first, uint32_t count, regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__AllocateIds ai = BERTH__ALLOCATE_IDS__INIT;

	ai.alloc = str(alloc);
	ai.first = first;
	ai.count = count;
	env.body_case = BERTH__ENVELOPE__BODY_ALLOCATE_IDS;
	env.allocate_ids = &ai;
	return one(rc, &env, cb, arg);
}

int
regclient_release_ids(struct regclient *rc, const char *alloc,
    regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__ReleaseIds ri = BERTH__RELEASE_IDS__INIT;

	ri.alloc = str(alloc);
	env.body_case = BERTH__ENVELOPE__BODY_RELEASE_IDS;
	env.release_ids = &ri;
	return one(rc, &env, cb, arg);
}

int
regclient_put_handle(struct regclient *rc, const Berth__Handle *h,
    regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PutHandle ph = BERTH__PUT_HANDLE__INIT;

	ph.handle = (Berth__Handle *)h;
	env.body_case = BERTH__ENVELOPE__BODY_PUT_HANDLE;
	env.put_handle = &ph;
	return one(rc, &env, cb, arg);
}

int
regclient_delete_handle(struct regclient *rc, const Berth__Handle *h,
    regclient_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__DeleteHandle dh = BERTH__DELETE_HANDLE__INIT;

	dh.handle = (Berth__Handle *)h;
	env.body_case = BERTH__ENVELOPE__BODY_DELETE_HANDLE;
	env.delete_handle = &dh;
	return one(rc, &env, cb, arg);
}

int
regclient_list_handles(struct regclient *rc, Berth__HandleKind kind,
    regclient_handles_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	struct call *call;

	if (cb == NULL)
		return -EINVAL;
	call = call_new(rc, NULL, arg);
	call->kind = CALL_HANDLES;
	call->hcb = cb;
	berth__list_handles__init(&call->lh);
	call->lh.kind = kind;
	env.body_case = BERTH__ENVELOPE__BODY_LIST_HANDLES;
	env.list_handles = &call->lh;
	return send_call(call, &env);
}

/* Subscriptions. */

static void
sub_end(struct regclient_sub *sub)
{
	regclient_event_cb cb = sub->cb;
	void *arg = sub->arg;

	sub->dead = true;
	sub->cb = NULL;
	if (cb != NULL)
		cb(sub, REGCLIENT_ENDED, NULL, arg);
	if (!sub->in_flight)
		sub_free(sub);
}

static void
on_unsubscribed(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	(void)c;
	(void)env;
	(void)arg;
	if (fd >= 0)
		close(fd);
}

static void
send_unsubscribe(struct regclient *rc, uint64_t id)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Unsubscribe us = BERTH__UNSUBSCRIBE__INIT;

	if (rc->chan == NULL)
		return;
	us.subscription = id;
	env.body_case = BERTH__ENVELOPE__BODY_UNSUBSCRIBE;
	env.unsubscribe = &us;
	chan_request(rc->chan, &env, -1, rc->timeout_ms, on_unsubscribed, NULL);
}

static void
on_subscribed(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct regclient_sub *sub = arg;
	Berth__SubscribeReply *sr;

	(void)c;
	if (fd >= 0)
		close(fd);
	sub->in_flight = false;
	if (sub->dead) {
		if (env->error == NULL &&
		    env->body_case == BERTH__ENVELOPE__BODY_SUBSCRIBE_REPLY)
			send_unsubscribe(sub->rc,
			    env->subscribe_reply->subscription);
		sub_free(sub);
		return;
	}
	if (env->error != NULL ||
	    env->body_case != BERTH__ENVELOPE__BODY_SUBSCRIBE_REPLY) {
		log_warnx("on_subscribed: the registry refused a subscription "
		    "from index %llu: %s", (unsigned long long)sub->cursor,
		    env->error != NULL && env->error->message ?
		    env->error->message : "unexpected reply");
		sub_end(sub);
		return;
	}
	sr = env->subscribe_reply;
	sub->id = sr->subscription;
	if (sr->gap) {
		log_warnx("on_subscribed: events %llu to %llu are no longer "
		    "in the registry's log", (unsigned long long)sub->cursor + 1,
		    (unsigned long long)sr->oldest_index - 1);
		sub->cursor = sr->oldest_index - 1;
		if (sub->cb != NULL)
			sub->cb(sub, REGCLIENT_GAP, NULL, sub->arg);
	} else if (sub->cursor == UINT64_MAX) {
		sub->cursor = sr->head_index;	/* live only */
	}
}

static int
send_subscribe(struct regclient_sub *sub, uint64_t from, bool live_only)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Subscribe s = BERTH__SUBSCRIBE__INIT;
	struct regclient *rc = sub->rc;
	int r;

	if (rc->chan == NULL)
		return -ENOTCONN;
	s.from_index = from;
	s.live_only = live_only;
	env.body_case = BERTH__ENVELOPE__BODY_SUBSCRIBE;
	env.subscribe = &s;
	sub->id = 0;
	if ((r = chan_request(rc->chan, &env, -1, rc->timeout_ms,
	    on_subscribed, sub)) == 0)
		sub->in_flight = true;
	return r;
}

static void
on_ack(evutil_socket_t fd, short ev, void *arg)
{
	struct regclient_sub *sub = arg;
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__EventAck ack = BERTH__EVENT_ACK__INIT;

	(void)fd;
	(void)ev;
	if (sub->id == 0 || sub->rc->chan == NULL)
		return;
	ack.subscription = sub->id;
	ack.index = sub->cursor;
	env.body_case = BERTH__ENVELOPE__BODY_EVENT_ACK;
	env.event_ack = &ack;
	chan_notice(sub->rc->chan, &env, -1);
}

struct regclient_sub *
regclient_subscribe(struct regclient *rc, uint64_t from_index,
    bool live_only, regclient_event_cb cb, void *arg)
{
	struct regclient_sub *sub;

	if (cb == NULL || rc->freed)
		return NULL;
	sub = xcalloc(1, sizeof(*sub));
	sub->rc = rc;
	sub->cb = cb;
	sub->arg = arg;
	sub->cursor = live_only ? UINT64_MAX : from_index;
	sub->ack = xnonnull(event_new(rc->base, -1, 0, on_ack, sub),
	    "regclient_subscribe: event_new");
	TAILQ_INSERT_TAIL(&rc->subs, sub, entry);
	if (send_subscribe(sub, from_index, live_only) < 0) {
		sub_free(sub);
		return NULL;
	}
	return sub;
}

void
regclient_unsubscribe(struct regclient_sub *sub)
{
	if (sub == NULL || sub->dead)
		return;
	sub->dead = true;
	sub->cb = NULL;
	if (sub->in_flight)
		return;		/* on_subscribed finishes the job */
	if (sub->id != 0)
		send_unsubscribe(sub->rc, sub->id);
	sub_free(sub);
}

uint64_t
regclient_sub_index(const struct regclient_sub *sub)
{
	return sub->cursor;
}

static struct regclient_sub *
sub_by_id(struct regclient *rc, uint64_t id)
{
	struct regclient_sub *sub;

	if (id == 0)
		return NULL;
	TAILQ_FOREACH(sub, &rc->subs, entry)
		if (sub->id == id && !sub->dead)
			return sub;
	return NULL;
}

bool
regclient_notice(struct regclient *rc, const Berth__Envelope *env)
{
	struct regclient_sub *sub;
	const Berth__Event *ev;
	uint64_t from;

	switch (env->body_case) {
	case BERTH__ENVELOPE__BODY_EVENT_NOTICE:
		ev = env->event_notice->event;
		if (ev == NULL ||
		    (sub = sub_by_id(rc, ev->subscription)) == NULL)
			return true;	/* late, for a subscription now gone */
		if (ev->index <= sub->cursor && sub->cursor != UINT64_MAX)
			return true;	/* seen before a resync */
		sub->cursor = ev->index;
		event_active(sub->ack, 0, 0);
		sub->cb(sub, REGCLIENT_EVENT, ev, sub->arg);
		return true;
	case BERTH__ENVELOPE__BODY_RESYNC:
		if ((sub = sub_by_id(rc, env->resync->subscription)) == NULL)
			return true;
		from = env->resync->from_index;
		if (sub->cursor > from && sub->cursor != UINT64_MAX)
			from = sub->cursor;
		log_info("regclient_notice: subscription %llu fell behind; "
		    "catching up from index %llu",
		    (unsigned long long)sub->id, (unsigned long long)from);
		sub->cursor = from;
		if (send_subscribe(sub, from, false) < 0)
			sub_end(sub);
		return true;
	default:
		return false;
	}
}
