/*
 * mounter_client.c: the supervisor's typed calls to berth-mounter (see
 * mounter_client.h).
 *
 * Owns: building every mounter request, its deadline, the calls in
 * flight, and turning each reply into its callback's typed arguments.
 * Must not: send a path, a mount option or a command line (the verbs take
 * identifiers only), or act on a reply: that is the caller's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include "log.h"
#include "mounter_client.h"
#include "xalloc.h"

#define BYTES(s) ((ProtobufCBinaryData){ strlen(s), (uint8_t *)(s) })

enum call_kind { CALL_DONE, CALL_VOLUME, CALL_CLEANUP, CALL_PLUGIN,
    CALL_PONG, CALL_TASK };

struct call {
	TAILQ_ENTRY(call) entry;
	struct mclient *mc;
	enum call_kind kind;
	union {
		priv_done_cb done;
		priv_volume_cb volume;
		priv_cleanup_cb cleanup;
		priv_plugin_cb plugin;
		priv_pong_cb pong;
		priv_task_cb task;
		void *any;		/* NULL: forgotten */
	} cb;
	void *arg;
};

struct mclient {
	struct chan *chan;
	unsigned timeout_ms;
	TAILQ_HEAD(, call) calls;
};

struct mclient *
mclient_new(struct chan *c, unsigned timeout_ms)
{
	struct mclient *mc;

	mc = xcalloc(1, sizeof(*mc));
	mc->chan = c;
	mc->timeout_ms = timeout_ms != 0 ? timeout_ms : MCLIENT_TIMEOUT_MS;
	TAILQ_INIT(&mc->calls);
	return mc;
}

void
mclient_free(struct mclient *mc)
{
	struct call *call;

	if (mc == NULL)
		return;
	while ((call = TAILQ_FIRST(&mc->calls)) != NULL) {
		TAILQ_REMOVE(&mc->calls, call, entry);
		chan_forget(mc->chan, call);
		free(call);
	}
	free(mc);
}

void
priv_forget(struct mclient *mc, void *arg)
{
	struct call *call;

	if (mc == NULL)
		return;
	TAILQ_FOREACH(call, &mc->calls, entry)
		if (call->arg == arg)
			call->cb.any = NULL;
}

/* PluginStarted without a handle is no start: fail it, typed. */
static void
plugin_reply(struct call *call, struct priv_result *res,
    const Berth__Envelope *env, int fd)
{
	const Berth__PluginHandle *h = NULL;

	if (res->code == BERTH__ERROR_CODE__ERROR_NONE &&
	    (h = env->plugin_started->handle) == NULL) {
		res->code = BERTH__ERROR_CODE__ERROR_INTERNAL;
		res->message = "berth-mounter answered PluginStarted without "
		    "a handle";
	}
	if (h == NULL && fd >= 0) {
		close(fd);
		fd = -1;
	}
	call->cb.plugin(res, h != NULL ? (pid_t)h->pid : 0,
	    h != NULL ? h->start_time : 0, fd, call->arg);
}

/* TaskStarted: the channel checked both descriptors came (ipc_body_fds). */
static void
task_reply(struct call *call, struct priv_result *res,
    const Berth__Envelope *env, int fd, int fd2)
{
	const Berth__TaskStarted *ts = NULL;

	if (res->code == BERTH__ERROR_CODE__ERROR_NONE &&
	    ((ts = env->task_started)->pid <= 1 || fd < 0 || fd2 < 0)) {
		res->code = BERTH__ERROR_CODE__ERROR_INTERNAL;
		res->message = "berth-mounter answered TaskStarted without a "
		    "pid or its two descriptors";
		ts = NULL;
	}
	if (ts == NULL) {
		if (fd >= 0)
			close(fd);
		if (fd2 >= 0)
			close(fd2);
		fd = fd2 = -1;
	}
	call->cb.task(res, ts != NULL ? ts->pid : 0,
	    ts != NULL ? ts->start_time : 0, fd, fd2, call->arg);
}

/* The channel checked the body against the request (ipc_reply.c). */
static void
on_reply(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct call *call = arg;
	struct priv_result res = { BERTH__ERROR_CODE__ERROR_NONE, "" };
	bool ok = env->error == NULL;

	TAILQ_REMOVE(&call->mc->calls, call, entry);
	if (!ok) {
		res.code = env->error->code;
		res.message = env->error->message ? env->error->message : "";
	}
	if (fd >= 0 && ((call->kind != CALL_PLUGIN && call->kind != CALL_TASK) ||
	    call->cb.any == NULL)) {
		close(fd);
		fd = -1;
	}
	if (call->cb.any == NULL)
		;	/* forgotten: its owner is gone */
	else if (call->kind == CALL_DONE)
		call->cb.done(&res, call->arg);
	else if (call->kind == CALL_VOLUME)
		call->cb.volume(&res, ok && env->prepare_volume_reply->mounted,
		    call->arg);
	else if (call->kind == CALL_CLEANUP)
		call->cb.cleanup(&res, ok ? env->cleanup_reply->unmounted : 0,
		    ok ? env->cleanup_reply->removed : 0, call->arg);
	else if (call->kind == CALL_PONG)
		call->cb.pong(&res, ok ? env->pong->nonce : 0, call->arg);
	else if (call->kind == CALL_TASK)
		task_reply(call, &res, env, fd, chan_take_fd2(c));
	else
		plugin_reply(call, &res, env, fd);
	free(call);
}

/* Send env; the one place that finds berth-mounter out of reach. */
static int
send_call(struct mclient *mc, Berth__Envelope *env, enum call_kind kind,
    void *cb, void *arg)
{
	struct call *call;
	int r;

	if (mc == NULL || mc->chan == NULL || chan_closed(mc->chan))
		r = -ENOTCONN;
	else {
		call = xcalloc(1, sizeof(*call));
		call->mc = mc;
		call->kind = kind;
		call->cb.any = cb;
		call->arg = arg;
		if ((r = chan_request(mc->chan, env, -1, mc->timeout_ms,
		    on_reply, call)) == 0) {
			TAILQ_INSERT_TAIL(&mc->calls, call, entry);
			return 0;
		}
		free(call);
	}
	log_warnx("priv_%s: %s: %s", ipc_body_name(env->body_case),
	    MCLIENT_UNREACHABLE, strerror(-r));
	return r;
}

int
priv_prepare_plugin(struct mclient *mc, const char *plugin_type,
    const char *plugin_id, const char *alloc_id, uint32_t owner_uid,
    uint32_t owner_gid, priv_done_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PreparePlugin pp = BERTH__PREPARE_PLUGIN__INIT;

	pp.plugin_type = BYTES(plugin_type);
	pp.plugin_id = BYTES(plugin_id);
	pp.alloc_id = BYTES(alloc_id);
	pp.owner_uid = owner_uid;
	pp.owner_gid = owner_gid;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_PLUGIN;
	env.prepare_plugin = &pp;
	return send_call(mc, &env, CALL_DONE, (void *)cb, arg);
}

static void
usage_of(Berth__VolumeUsage *us, const struct priv_volume *v)
{
	us->read_only = v->read_only;
	us->attachment = v->attachment;
	us->access = v->access;
}

int
priv_prepare_volume(struct mclient *mc, Berth__VolumeDir dir,
    const struct priv_volume *v, priv_volume_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PrepareVolume pv = BERTH__PREPARE_VOLUME__INIT;
	Berth__VolumeUsage us = BERTH__VOLUME_USAGE__INIT;

	pv.dir = dir;
	pv.plugin_type = BYTES(v->plugin_type);
	pv.plugin_id = BYTES(v->plugin_id);
	/* A field the verb does not use stays empty: the mounter checks. */
	if (dir == BERTH__VOLUME_DIR__VOLUME_DIR_STAGING)
		pv.volume_ns = BYTES(v->volume_ns);
	else
		pv.alloc_id = BYTES(v->alloc_id);
	pv.volume_id = BYTES(v->volume_id);
	if (v->plugin_alloc != NULL)
		pv.plugin_alloc = BYTES(v->plugin_alloc);
	usage_of(&us, v);
	/* One staging path per volume: a usage names an older one. */
	if (dir != BERTH__VOLUME_DIR__VOLUME_DIR_STAGING || v->per_usage)
		pv.usage = &us;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_VOLUME;
	env.prepare_volume = &pv;
	return send_call(mc, &env, CALL_VOLUME, (void *)cb, arg);
}

int
priv_prepare_task(struct mclient *mc, const char *alloc_id,
    const char *task, uint32_t owner_uid, uint32_t owner_gid,
    priv_done_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PrepareTask pt = BERTH__PREPARE_TASK__INIT;

	pt.alloc_id = BYTES(alloc_id);
	pt.task = BYTES(task);
	pt.owner_uid = owner_uid;
	pt.owner_gid = owner_gid;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_TASK;
	env.prepare_task = &pt;
	return send_call(mc, &env, CALL_DONE, (void *)cb, arg);
}

int
priv_bind_volume(struct mclient *mc, const struct priv_volume *v,
    const char *task, const char *name, bool read_only, priv_done_cb cb,
    void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__BindVolume bv = BERTH__BIND_VOLUME__INIT;
	Berth__VolumeUsage us = BERTH__VOLUME_USAGE__INIT;

	bv.plugin_type = BYTES(v->plugin_type);
	bv.plugin_id = BYTES(v->plugin_id);
	bv.alloc_id = BYTES(v->alloc_id);
	bv.volume_id = BYTES(v->volume_id);
	usage_of(&us, v);
	bv.usage = &us;
	bv.task = BYTES(task);
	bv.name = BYTES(name);
	bv.read_only = read_only;
	bv.group = v->group;
	env.body_case = BERTH__ENVELOPE__BODY_BIND_VOLUME;
	env.bind_volume = &bv;
	return send_call(mc, &env, CALL_DONE, (void *)cb, arg);
}

int
priv_unbind_volume(struct mclient *mc, const char *alloc_id,
    const char *task, const char *name, priv_done_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__UnbindVolume ub = BERTH__UNBIND_VOLUME__INIT;

	ub.alloc_id = BYTES(alloc_id);
	ub.task = BYTES(task);
	ub.name = BYTES(name);
	env.body_case = BERTH__ENVELOPE__BODY_UNBIND_VOLUME;
	env.unbind_volume = &ub;
	return send_call(mc, &env, CALL_DONE, (void *)cb, arg);
}

int
priv_cleanup_alloc(struct mclient *mc, const char *alloc_id,
    const char *plugin_type, const char *plugin_id, priv_cleanup_cb cb,
    void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__CleanupAlloc ca = BERTH__CLEANUP_ALLOC__INIT;

	ca.alloc_id = BYTES(alloc_id);
	if (plugin_type != NULL && plugin_id != NULL) {
		ca.plugin_type = BYTES(plugin_type);
		ca.plugin_id = BYTES(plugin_id);
	}
	env.body_case = BERTH__ENVELOPE__BODY_CLEANUP_ALLOC;
	env.cleanup_alloc = &ca;
	return send_call(mc, &env, CALL_CLEANUP, (void *)cb, arg);
}

int
priv_start_plugin(struct mclient *mc, const char *definition,
    const char *plugin_type, const char *plugin_id, const char *alloc_id,
    priv_plugin_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__StartPlugin sp = BERTH__START_PLUGIN__INIT;

	sp.definition = BYTES(definition);
	sp.plugin_type = BYTES(plugin_type);
	sp.plugin_id = BYTES(plugin_id);
	sp.alloc_id = BYTES(alloc_id);
	env.body_case = BERTH__ENVELOPE__BODY_START_PLUGIN;
	env.start_plugin = &sp;
	return send_call(mc, &env, CALL_PLUGIN, (void *)cb, arg);
}

int
priv_adopt_plugin(struct mclient *mc, pid_t pid, uint64_t start_time,
    priv_plugin_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__AdoptPlugin ap = BERTH__ADOPT_PLUGIN__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;

	h.pid = (uint32_t)pid;
	h.start_time = start_time;
	ap.handle = &h;
	env.body_case = BERTH__ENVELOPE__BODY_ADOPT_PLUGIN;
	env.adopt_plugin = &ap;
	return send_call(mc, &env, CALL_PLUGIN, (void *)cb, arg);
}

int
priv_signal_plugin(struct mclient *mc, pid_t pid, uint64_t start_time,
    Berth__PluginSignal sig, priv_done_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__SignalPlugin sp = BERTH__SIGNAL_PLUGIN__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;

	h.pid = (uint32_t)pid;
	h.start_time = start_time;
	sp.handle = &h;
	sp.signal = sig;
	env.body_case = BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN;
	env.signal_plugin = &sp;
	return send_call(mc, &env, CALL_DONE, (void *)cb, arg);
}

int
priv_start_task(struct mclient *mc, const struct priv_task *t,
    priv_task_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__StartTask st = BERTH__START_TASK__INIT;

	st.alloc_id = BYTES(t->alloc_id);
	st.task = BYTES(t->task);
	st.uid = t->uid;
	st.gid = t->gid;
	if (t->user != NULL)
		st.user = BYTES(t->user);
	st.network_none = t->network_none;
	st.memory_bytes = t->memory_bytes;
	st.memory_max_bytes = t->memory_max_bytes;
	st.cpu_shares = t->cpu_shares;
	st.pids_max = t->pids_max;
	if (t->plugin_type != NULL) {
		st.plugin_type = BYTES(t->plugin_type);
		st.plugin_id = BYTES(t->plugin_id);
	}
	env.body_case = BERTH__ENVELOPE__BODY_START_TASK;
	env.start_task = &st;
	return send_call(mc, &env, CALL_TASK, (void *)cb, arg);
}

int
priv_ping(struct mclient *mc, uint64_t nonce, priv_pong_cb cb, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping ping = BERTH__PING__INIT;

	ping.nonce = nonce;
	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &ping;
	return send_call(mc, &env, CALL_PONG, (void *)cb, arg);
}
