/*
 * csi_client.c: CSI calls over the gRPC C core, finished on libevent.
 *
 * Threads: gRPC completes calls on a completion queue that someone must
 * wait on. Each csi_client has a grpc_loop (common/grpc_loop.c): one
 * thread that does only that and hands every finished attempt back to
 * the event loop. Everything else (decoding, retry decisions, timers,
 * callbacks) runs on the loop's thread, so callers see no threads at all.
 *
 * An "rpc" is one csi_call(); each attempt is one grpc_call carrying the
 * whole unary exchange in a single batch. This file reads replies only
 * where the CSI spec fixes the reading (Probe's optional `ready`,
 * capability lists with unknown entries, ValidateVolumeCapabilities'
 * optional `confirmed`); policy is its callers'. It must not log requests
 * or replies: they may carry secrets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/queue.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/support/time.h>

/* grpc_security.h declares its no-argument functions without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <grpc/grpc_security.h>
#pragma GCC diagnostic pop

#include "csi_client.h"
#include "grpc_loop.h"
#include "log.h"
#include "metrics.h"
#include "xalloc.h"

#define SOCKET_PATH_MAX	107	/* sizeof(sun_path) - 1 */
#define MIN_ATTEMPT_MS	10	/* not worth starting an attempt for less */

struct csi_method_desc {
	const char *name;
	const char *path;
	const ProtobufCMessageDescriptor *request;
	const ProtobufCMessageDescriptor *reply;
	/*
	 * Safe to send again when we cannot tell whether it arrived. The
	 * CSI spec requires this of every method berth uses except
	 * CreateVolume, where a plugin that cannot honour the name as an
	 * idempotency key may provision twice: its caller decides.
	 */
	bool idempotent;
};

#define M(e, svc, n, req, rep, idem) [e] = { #n, "/csi.v1." svc "/" #n, \
	&csi__v1__##req##_request__descriptor, \
	&csi__v1__##rep##_response__descriptor, idem }

static const struct csi_method_desc methods[CSI_METHOD_COUNT] = {
	M(CSI_GET_PLUGIN_INFO, "Identity", GetPluginInfo, get_plugin_info,
	    get_plugin_info, true),
	M(CSI_GET_PLUGIN_CAPABILITIES, "Identity", GetPluginCapabilities,
	    get_plugin_capabilities, get_plugin_capabilities, true),
	M(CSI_PROBE, "Identity", Probe, probe, probe, true),
	M(CSI_CREATE_VOLUME, "Controller", CreateVolume, create_volume,
	    create_volume, false),
	M(CSI_DELETE_VOLUME, "Controller", DeleteVolume, delete_volume,
	    delete_volume, true),
	M(CSI_CONTROLLER_PUBLISH_VOLUME, "Controller", ControllerPublishVolume,
	    controller_publish_volume, controller_publish_volume, true),
	M(CSI_CONTROLLER_UNPUBLISH_VOLUME, "Controller",
	    ControllerUnpublishVolume, controller_unpublish_volume,
	    controller_unpublish_volume, true),
	M(CSI_VALIDATE_VOLUME_CAPABILITIES, "Controller",
	    ValidateVolumeCapabilities, validate_volume_capabilities,
	    validate_volume_capabilities, true),
	M(CSI_CONTROLLER_GET_CAPABILITIES, "Controller",
	    ControllerGetCapabilities, controller_get_capabilities,
	    controller_get_capabilities, true),
	M(CSI_NODE_STAGE_VOLUME, "Node", NodeStageVolume, node_stage_volume,
	    node_stage_volume, true),
	M(CSI_NODE_UNSTAGE_VOLUME, "Node", NodeUnstageVolume,
	    node_unstage_volume, node_unstage_volume, true),
	M(CSI_NODE_PUBLISH_VOLUME, "Node", NodePublishVolume,
	    node_publish_volume, node_publish_volume, true),
	M(CSI_NODE_UNPUBLISH_VOLUME, "Node", NodeUnpublishVolume,
	    node_unpublish_volume, node_unpublish_volume, true),
	M(CSI_NODE_GET_VOLUME_STATS, "Node", NodeGetVolumeStats,
	    node_get_volume_stats, node_get_volume_stats, true),
	M(CSI_NODE_GET_CAPABILITIES, "Node", NodeGetCapabilities,
	    node_get_capabilities, node_get_capabilities, true),
	M(CSI_NODE_GET_INFO, "Node", NodeGetInfo, node_get_info,
	    node_get_info, true),
	M(CSI_CONTROLLER_EXPAND_VOLUME, "Controller", ControllerExpandVolume,
	    controller_expand_volume, controller_expand_volume, true),
	M(CSI_NODE_EXPAND_VOLUME, "Node", NodeExpandVolume,
	    node_expand_volume, node_expand_volume, true),
	/* The snapshot's name is its idempotency key, as the spec asks. */
	M(CSI_CREATE_SNAPSHOT, "Controller", CreateSnapshot, create_snapshot,
	    create_snapshot, true),
	M(CSI_DELETE_SNAPSHOT, "Controller", DeleteSnapshot, delete_snapshot,
	    delete_snapshot, true),
	M(CSI_LIST_SNAPSHOTS, "Controller", ListSnapshots, list_snapshots,
	    list_snapshots, true),
};

#undef M

const struct csi_retry csi_retry_none = { 1, 0, 0, 0 };
const struct csi_retry csi_retry_default = { 0, 100, 2000, 30000 };

enum rpc_state {
	RPC_WAITING,		/* timer: backoff, or the first attempt */
	RPC_IN_FLIGHT,		/* a grpc_call is out */
	RPC_FINISHING,		/* timer: deliver the stored result */
};

struct csi_rpc {
	struct csi_client *client;
	struct csi_conn *conn;		/* NULL once the conn is closed */
	enum csi_method method;
	enum rpc_state state;
	uint8_t *request;
	size_t request_len;
	int deadline_ms;
	struct csi_retry retry;		/* max_attempts 1 for no retry */
	int64_t started_ms;
	int backoff_ms;
	csi_callback cb;
	void *arg;
	struct event *timer;
	struct csi_result result;
	ProtobufCMessage *reply;

	/* The attempt in flight. */
	struct grpc_unary u;		/* u.op: the attempt's tag */
	bool batch_ok;

	TAILQ_ENTRY(csi_rpc) entry;	/* client->rpcs */
};

TAILQ_HEAD(rpc_list, csi_rpc);

struct csi_conn {
	struct csi_client *client;
	grpc_channel *channel;
	char endpoint[SOCKET_PATH_MAX + 16];
	char plugin[128];		/* the metrics' label; "" unknown */
	TAILQ_ENTRY(csi_conn) entry;
};

struct csi_client {
	struct event_base *base;
	struct grpc_loop *loop;
	struct rpc_list rpcs;		/* every unfinished rpc */
	TAILQ_HEAD(, csi_conn) conns;
};

static void rpc_attempt(struct csi_rpc *);

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *
csi_method_name(enum csi_method m)
{
	return m < CSI_METHOD_COUNT ? methods[m].name : "unknown method";
}

bool
csi_method_idempotent(enum csi_method m)
{
	return m < CSI_METHOD_COUNT && methods[m].idempotent;
}

const char *
csi_code_name(enum csi_code code)
{
	static const char *names[] = { "OK", "CANCELLED", "UNKNOWN",
		"INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
		"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
		"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
		"UNAUTHENTICATED" };

	if ((unsigned)code < sizeof(names) / sizeof(names[0]))
		return names[code];
	return "UNKNOWN_CODE";
}

static bool
code_retryable(enum csi_code code)
{
	return code == CSI_UNAVAILABLE || code == CSI_DEADLINE_EXCEEDED ||
	    code == CSI_RESOURCE_EXHAUSTED;
}

/* ---- on the loop: finishing rpcs ---- */

static void
rpc_free(struct csi_rpc *rpc)
{
	TAILQ_REMOVE(&rpc->client->rpcs, rpc, entry);
	if (rpc->timer != NULL)
		event_free(rpc->timer);
	xfree_wiped(rpc->request, rpc->request_len);	/* may hold secrets */
	free(rpc);
}

/* Hand the result to the caller; the rpc is gone afterwards. */
static void
rpc_deliver(struct csi_rpc *rpc)
{
	csi_callback cb = rpc->cb;
	void *arg = rpc->arg;
	struct csi_result result = rpc->result;
	ProtobufCMessage *reply = rpc->reply;

	if (result.code != CSI_OK)
		metrics_csi_rpc_error(rpc->conn != NULL ?
		    rpc->conn->plugin : "", csi_method_name(rpc->method),
		    csi_code_name(result.code));
	rpc_free(rpc);
	cb(&result, reply, arg);
}

static void
rpc_set_result(struct csi_rpc *rpc, enum csi_code code,
    enum csi_origin origin, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
rpc_set_result(struct csi_rpc *rpc, enum csi_code code,
    enum csi_origin origin, const char *fmt, ...)
{
	va_list ap;

	rpc->result.code = code;
	rpc->result.origin = origin;
	va_start(ap, fmt);
	vsnprintf(rpc->result.message, sizeof(rpc->result.message), fmt, ap);
	va_end(ap);
}

/* Deliver from a fresh loop iteration (never inside the caller's call). */
static void
rpc_finish_later(struct csi_rpc *rpc)
{
	struct timeval now = { 0, 0 };

	rpc->state = RPC_FINISHING;
	evtimer_add(rpc->timer, &now);
}

static void
rpc_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct csi_rpc *rpc = arg;

	if (rpc->state == RPC_FINISHING)
		rpc_deliver(rpc);
	else if (rpc->conn == NULL) {
		rpc_set_result(rpc, CSI_CANCELLED, CSI_FROM_CLIENT,
		    "%s: connection closed before the call finished",
		    methods[rpc->method].name);
		rpc_deliver(rpc);
	} else
		rpc_attempt(rpc);
}

/* Should a failed attempt be sent again, and after how long? */
static bool
retry_after(struct csi_rpc *rpc, int *delay_ms)
{
	int64_t left;
	int delay;

	if (!code_retryable(rpc->result.code) || rpc->conn == NULL)
		return false;
	if (rpc->retry.max_attempts > 0 &&
	    rpc->result.attempts >= rpc->retry.max_attempts)
		return false;
	left = rpc->started_ms + rpc->retry.total_ms - now_ms();
	delay = rpc->backoff_ms;
	if (left - delay < MIN_ATTEMPT_MS)
		return false;
	*delay_ms = delay;
	rpc->backoff_ms = delay * 2 > rpc->retry.max_backoff_ms ?
	    rpc->retry.max_backoff_ms : delay * 2;
	return true;
}

/* An attempt came back from the thread. */
static void
rpc_attempt_done(struct csi_rpc *rpc)
{
	const char *name = methods[rpc->method].name;
	struct timeval tv;
	size_t n;
	int delay;

	if (!rpc->batch_ok)
		rpc_set_result(rpc, CSI_INTERNAL, CSI_FROM_CLIENT,
		    "%s: gRPC failed the call's batch", name);
	else if (rpc->u.status == GRPC_STATUS_OK) {
		if ((rpc->reply = grpc_unary_reply(&rpc->u,
		    methods[rpc->method].reply)) == NULL)
			rpc_set_result(rpc, CSI_INTERNAL, CSI_FROM_CLIENT,
			    "%s: reply is missing or is not a %s", name,
			    methods[rpc->method].reply->name);
		else
			rpc_set_result(rpc, CSI_OK, CSI_FROM_PLUGIN, "OK");
	} else {
		n = GRPC_SLICE_LENGTH(rpc->u.details);
		if (n >= sizeof(rpc->result.message))
			n = sizeof(rpc->result.message) - 1;
		rpc->result.code = (enum csi_code)rpc->u.status;
		rpc->result.origin = CSI_FROM_PLUGIN;
		memcpy(rpc->result.message, GRPC_SLICE_START_PTR(rpc->u.details),
		    n);
		rpc->result.message[n] = '\0';
		if (rpc->conn == NULL)
			rpc_set_result(rpc, CSI_CANCELLED, CSI_FROM_CLIENT,
			    "%s: connection closed before the call finished",
			    name);
	}
	grpc_unary_clear(&rpc->u);

	if (rpc->result.code != CSI_OK && retry_after(rpc, &delay)) {
		log_debug("%s on %s: attempt %d: %s (%s), again in %d ms",
		    name, rpc->conn->endpoint, rpc->result.attempts,
		    csi_code_name(rpc->result.code), rpc->result.message,
		    delay);
		rpc->state = RPC_WAITING;
		tv.tv_sec = delay / 1000;
		tv.tv_usec = (delay % 1000) * 1000;
		evtimer_add(rpc->timer, &tv);
		return;
	}
	rpc_deliver(rpc);
}

/* The thread handed an attempt back (grpc_loop). */
static void
rpc_op_done(struct grpc_loop_op *op, bool ok)
{
	struct csi_rpc *rpc = (struct csi_rpc *)(void *)((char *)op -
	    offsetof(struct csi_rpc, u.op));

	rpc->batch_ok = ok;
	rpc_attempt_done(rpc);
}

/* ---- on the loop: starting attempts ---- */

static void
rpc_attempt(struct csi_rpc *rpc)
{
	const struct csi_method_desc *m = &methods[rpc->method];
	grpc_call_error e;
	int64_t deadline, bound;

	rpc->result.attempts++;
	deadline = now_ms() + rpc->deadline_ms;
	bound = rpc->started_ms + rpc->retry.total_ms;
	if (rpc->retry.total_ms > 0 && bound < deadline)
		deadline = bound;

	rpc->state = RPC_IN_FLIGHT;
	e = grpc_unary_start(&rpc->u, rpc->client->loop, rpc->conn->channel,
	    m->path, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
	    gpr_time_from_millis(deadline - now_ms(), GPR_TIMESPAN)),
	    rpc->request, rpc->request_len, NULL, 0);
	if (e != GRPC_CALL_OK) {
		rpc_set_result(rpc, CSI_INTERNAL, CSI_FROM_CLIENT,
		    "%s on %s: gRPC refused to start the call (error %d)",
		    m->name, rpc->conn->endpoint, e);
		rpc_finish_later(rpc);
	}
}

void
csi_call(struct csi_conn *conn, enum csi_method method,
    const ProtobufCMessage *request, int deadline_ms,
    const struct csi_retry *retry, csi_callback cb, void *arg)
{
	struct csi_client *c = conn->client;
	struct timeval now = { 0, 0 };
	struct csi_rpc *rpc;

	rpc = xcalloc(1, sizeof(*rpc));
	rpc->client = c;
	rpc->conn = conn;
	rpc->method = method;
	rpc->cb = cb;
	rpc->arg = arg;
	rpc->deadline_ms = deadline_ms > 0 ? deadline_ms : 1;
	rpc->started_ms = now_ms();
	rpc->retry = csi_retry_none;
	if (retry != NULL && method < CSI_METHOD_COUNT &&
	    methods[method].idempotent)
		rpc->retry = *retry;
	if (rpc->retry.initial_backoff_ms <= 0)
		rpc->retry.initial_backoff_ms = 1;
	if (rpc->retry.max_backoff_ms < rpc->retry.initial_backoff_ms)
		rpc->retry.max_backoff_ms = rpc->retry.initial_backoff_ms;
	rpc->backoff_ms = rpc->retry.initial_backoff_ms;
	rpc->u.details = grpc_empty_slice();
	rpc->u.op.done = rpc_op_done;
	rpc->timer = xnonnull(evtimer_new(c->base, rpc_timer_cb, rpc),
	    "csi_call: evtimer_new");
	TAILQ_INSERT_TAIL(&c->rpcs, rpc, entry);

	if (method >= CSI_METHOD_COUNT || request == NULL ||
	    request->descriptor != methods[method].request) {
		rpc_set_result(rpc, CSI_INVALID_ARGUMENT, CSI_FROM_CLIENT,
		    "%s: request is not a %s", csi_method_name(method),
		    method < CSI_METHOD_COUNT ?
		    methods[method].request->name : "known request");
		rpc_finish_later(rpc);
		return;
	}
	rpc->request_len = protobuf_c_message_get_packed_size(request);
	rpc->request = xmalloc(rpc->request_len + 1);
	protobuf_c_message_pack(request, rpc->request);
	/* The first attempt starts from the loop too: one code path. */
	rpc->state = RPC_WAITING;
	evtimer_add(rpc->timer, &now);
}

/* ---- synchronous convenience ---- */

struct sync_wait {
	bool done;
	struct csi_result *result;
	ProtobufCMessage **reply;
};

static void
sync_cb(const struct csi_result *result, ProtobufCMessage *reply, void *arg)
{
	struct sync_wait *w = arg;

	*w->result = *result;
	*w->reply = reply;
	w->done = true;
}

enum csi_code
csi_call_sync(struct csi_conn *conn, enum csi_method method,
    const ProtobufCMessage *request, int deadline_ms,
    const struct csi_retry *retry, struct csi_result *result,
    ProtobufCMessage **reply)
{
	struct sync_wait w = { false, result, reply };

	*reply = NULL;
	csi_call(conn, method, request, deadline_ms, retry, sync_cb, &w);
	while (!w.done)
		if (event_base_loop(conn->client->base, EVLOOP_ONCE) < 0)
			fatalx("csi_call_sync: event_base_loop failed");
	return result->code;
}

/* ---- connections ---- */

struct csi_conn *
csi_conn_open(struct csi_client *c, const char *endpoint)
{
	grpc_channel_credentials *creds;
	struct csi_conn *conn;
	const char *path;
	char target[SOCKET_PATH_MAX + 8];
	/*
	 * Our retries are the only ones (explicit, bounded, per method), and
	 * the channel reconnects soon after a plugin's socket appears.
	 * GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is left alone: gRPC also uses it
	 * as the time a connection attempt may take, and a plugin that is
	 * slow to answer its first SETTINGS frame is not a dead one.
	 */
	grpc_arg args[] = {
		{ GRPC_ARG_INTEGER, (char *)GRPC_ARG_ENABLE_RETRIES,
		    { .integer = 0 } },
		{ GRPC_ARG_INTEGER, (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
		    { .integer = 100 } },
		{ GRPC_ARG_INTEGER, (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
		    { .integer = 1000 } },
		/* Neither is of use on a unix socket; both cost per channel. */
		{ GRPC_ARG_INTEGER, (char *)GRPC_ARG_ENABLE_CHANNELZ,
		    { .integer = 0 } },
		{ GRPC_ARG_INTEGER, (char *)GRPC_ARG_HTTP2_BDP_PROBE,
		    { .integer = 0 } },
	};
	grpc_channel_args chargs = { sizeof(args) / sizeof(args[0]), args };

	if (strncmp(endpoint, "unix://", 7) == 0)
		path = endpoint + 7;
	else if (strncmp(endpoint, "unix:", 5) == 0)
		path = endpoint + 5;
	else
		path = NULL;
	if (path == NULL || path[0] != '/' || strlen(path) > SOCKET_PATH_MAX) {
		log_warnx("csi_conn_open: endpoint %s: not unix:///absolute/"
		    "path of at most %d bytes", endpoint, SOCKET_PATH_MAX);
		return NULL;
	}
	conn = xcalloc(1, sizeof(*conn));
	conn->client = c;
	snprintf(conn->endpoint, sizeof(conn->endpoint), "%s", endpoint);
	snprintf(target, sizeof(target), "unix:%s", path);
	creds = grpc_insecure_credentials_create();
	conn->channel = grpc_channel_create(target, creds, &chargs);
	grpc_channel_credentials_release(creds);
	TAILQ_INSERT_TAIL(&c->conns, conn, entry);
	return conn;
}

void
csi_conn_set_plugin(struct csi_conn *conn, const char *plugin)
{
	snprintf(conn->plugin, sizeof(conn->plugin), "%s", plugin);
}

const char *
csi_conn_endpoint(const struct csi_conn *conn)
{
	return conn->endpoint;
}

void
csi_conn_close(struct csi_conn *conn)
{
	struct csi_client *c = conn->client;
	struct timeval now = { 0, 0 };
	struct csi_rpc *rpc;

	/*
	 * Calls in flight are cancelled and come back through the thread;
	 * waiting ones are woken to finish. Either way the callback runs
	 * later, from the loop, with CANCELLED.
	 */
	TAILQ_FOREACH(rpc, &c->rpcs, entry) {
		if (rpc->conn != conn)
			continue;
		rpc->conn = NULL;
		if (rpc->state == RPC_IN_FLIGHT)
			grpc_call_cancel(rpc->u.call, NULL);
		else if (rpc->state == RPC_WAITING)
			evtimer_add(rpc->timer, &now);
	}
	TAILQ_REMOVE(&c->conns, conn, entry);
	/* Calls hold their own reference on the channel's stack. */
	grpc_channel_destroy(conn->channel);
	free(conn);
}

/* ---- the client ---- */

struct csi_client *
csi_client_new(struct event_base *base)
{
	struct csi_client *c;

	c = xcalloc(1, sizeof(*c));
	c->base = base;
	TAILQ_INIT(&c->rpcs);
	TAILQ_INIT(&c->conns);
	if ((c->loop = grpc_loop_new(base, "csi")) == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

void
csi_client_free(struct csi_client *c)
{
	struct csi_conn *conn;
	struct csi_rpc *rpc;

	if (c == NULL)
		return;
	while ((conn = TAILQ_FIRST(&c->conns)) != NULL)
		csi_conn_close(conn);
	/* The queue ends only after every cancelled call is handed back. */
	grpc_loop_shutdown(c->loop);
	while ((rpc = TAILQ_FIRST(&c->rpcs)) != NULL) {
		evtimer_del(rpc->timer);
		rpc_timer_cb(-1, EV_TIMEOUT, rpc);
	}
	grpc_loop_free(c->loop);
	free(c);
}

/* ---- reading replies ---- */

enum csi_ready
csi_probe_ready(const Csi__V1__ProbeResponse *reply)
{
	if (reply == NULL || reply->ready == NULL)
		return CSI_READY_ABSENT;
	return reply->ready->value ? CSI_READY_TRUE : CSI_READY_FALSE;
}

bool
csi_plugin_has_service(const Csi__V1__GetPluginCapabilitiesResponse *r,
    Csi__V1__PluginCapability__Service__Type type)
{
	size_t i;

	for (i = 0; r != NULL && i < r->n_capabilities; i++)
		if (r->capabilities[i]->type_case ==
		    CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE &&
		    r->capabilities[i]->service != NULL &&
		    r->capabilities[i]->service->type == type)
			return true;
	return false;
}

bool
csi_node_has_rpc(const Csi__V1__NodeGetCapabilitiesResponse *r,
    Csi__V1__NodeServiceCapability__RPC__Type type)
{
	size_t i;

	for (i = 0; r != NULL && i < r->n_capabilities; i++)
		if (r->capabilities[i]->type_case ==
		    CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC &&
		    r->capabilities[i]->rpc != NULL &&
		    r->capabilities[i]->rpc->type == type)
			return true;
	return false;
}

bool
csi_controller_has_rpc(const Csi__V1__ControllerGetCapabilitiesResponse *r,
    Csi__V1__ControllerServiceCapability__RPC__Type type)
{
	size_t i;

	for (i = 0; r != NULL && i < r->n_capabilities; i++)
		if (r->capabilities[i]->type_case ==
		    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__TYPE_RPC &&
		    r->capabilities[i]->rpc != NULL &&
		    r->capabilities[i]->rpc->type == type)
			return true;
	return false;
}

Csi__V1__PluginCapability__VolumeExpansion__Type
csi_plugin_expansion(const Csi__V1__GetPluginCapabilitiesResponse *r)
{
#define EXP(t)	CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__##t
	Csi__V1__PluginCapability__VolumeExpansion__Type t = EXP(UNKNOWN);
	size_t i;

	for (i = 0; r != NULL && i < r->n_capabilities; i++) {
		if (r->capabilities[i]->type_case !=
		    CSI__V1__PLUGIN_CAPABILITY__TYPE_VOLUME_EXPANSION ||
		    r->capabilities[i]->volume_expansion == NULL)
			continue;
		/* A type this berth does not know is no expansion. */
		if (r->capabilities[i]->volume_expansion->type == EXP(ONLINE))
			return EXP(ONLINE);
		if (r->capabilities[i]->volume_expansion->type == EXP(OFFLINE))
			t = EXP(OFFLINE);
	}
	return t;
#undef EXP
}

static const char *
str(const char *s)
{
	return s != NULL ? s : "";
}

static bool
mount_flags_cover(const Csi__V1__VolumeCapability__MountVolume *want,
    const Csi__V1__VolumeCapability__MountVolume *got)
{
	size_t i, j;

	for (i = 0; i < want->n_mount_flags; i++) {
		for (j = 0; j < got->n_mount_flags; j++)
			if (strcmp(str(want->mount_flags[i]),
			    str(got->mount_flags[j])) == 0)
				break;
		if (j == got->n_mount_flags)
			return false;
	}
	return true;
}

static bool
capability_matches(const Csi__V1__VolumeCapability *want,
    const Csi__V1__VolumeCapability *got)
{
	if (want == NULL || got == NULL ||
	    want->access_type_case != got->access_type_case)
		return false;
	if ((want->access_mode == NULL) != (got->access_mode == NULL) ||
	    (want->access_mode != NULL &&
	    want->access_mode->mode != got->access_mode->mode))
		return false;
	if (want->access_type_case !=
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT)
		return true;
	if (want->mount == NULL)
		return true;
	if (got->mount == NULL)
		return *str(want->mount->fs_type) == '\0' &&
		    want->mount->n_mount_flags == 0;
	if (*str(want->mount->fs_type) != '\0' &&
	    strcmp(str(want->mount->fs_type), str(got->mount->fs_type)) != 0)
		return false;
	return mount_flags_cover(want->mount, got->mount);
}

enum csi_validation
csi_validation_check(const Csi__V1__ValidateVolumeCapabilitiesRequest *req,
    const Csi__V1__ValidateVolumeCapabilitiesResponse *reply,
    char *why, size_t whylen)
{
	const Csi__V1__ValidateVolumeCapabilitiesResponse__Confirmed *c;
	size_t i, j;

	if (reply == NULL || (c = reply->confirmed) == NULL)
		return CSI_VALIDATION_ABSENT;
	for (i = 0; i < req->n_volume_capabilities; i++) {
		for (j = 0; j < c->n_volume_capabilities; j++)
			if (capability_matches(req->volume_capabilities[i],
			    c->volume_capabilities[j]))
				break;
		if (j == c->n_volume_capabilities) {
			if (why != NULL)
				snprintf(why, whylen, "requested capability %zu "
				    "is not among the %zu the plugin confirmed",
				    i, c->n_volume_capabilities);
			return CSI_VALIDATION_MISMATCH;
		}
	}
	return CSI_VALIDATION_CONFIRMED;
}
