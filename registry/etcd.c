/*
 * etcd.c: etcd v3 calls over the gRPC C core, finished on libevent.
 *
 * The threading is the CSI client's, shared in common/grpc_loop.c: one
 * thread waits on the completion queue and hands each finished operation
 * back to the loop; decoding, fail-over, timers and callbacks all run on
 * the loop's thread.
 *
 * An rpc is one etcd_call(). Before each attempt it waits, on the queue,
 * for its endpoint's channel to be connected; an endpoint that cannot
 * connect within the time left is passed over, and since nothing was sent
 * there, even a write may go on to the next. A write sent and then failed
 * goes on only when the member says it has no leader: the "hasleader"
 * metadata (etcd's own, as its Go client sends it) makes a leaderless
 * member refuse a request before proposing it. Any other failure of a
 * sent write leaves its outcome unknown, and the result says so.
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

#include "etcd.h"
#include "grpc_loop.h"
#include "log.h"

#define MIN_ATTEMPT_MS	10	/* not worth starting an attempt for less */
#define BACKOFF_MIN_MS	25	/* between rounds over every endpoint */
#define BACKOFF_MAX_MS	500
#define NO_LEADER	"etcdserver: no leader"

struct etcd_method_desc {
	const char *name;
	const char *path;
	const ProtobufCMessageDescriptor *request;
	const ProtobufCMessageDescriptor *reply;
	bool reads;		/* may always be sent again */
};

#define M(e, svc, n, req, rep, r) [e] = { #n, "/etcdserverpb." svc "/" #n, \
	&etcdserverpb__##req##__descriptor, \
	&etcdserverpb__##rep##__descriptor, r }

static const struct etcd_method_desc methods[ETCD_METHOD_COUNT] = {
	M(ETCD_RANGE, "KV", Range, range_request, range_response, true),
	M(ETCD_PUT, "KV", Put, put_request, put_response, false),
	M(ETCD_DELETE_RANGE, "KV", DeleteRange, delete_range_request,
	    delete_range_response, false),
	M(ETCD_TXN, "KV", Txn, txn_request, txn_response, false),
	M(ETCD_LEASE_GRANT, "Lease", LeaseGrant, lease_grant_request,
	    lease_grant_response, false),
	M(ETCD_LEASE_REVOKE, "Lease", LeaseRevoke, lease_revoke_request,
	    lease_revoke_response, false),
	/* Renewing twice is renewing: safe to send again. */
	M(ETCD_LEASE_KEEPALIVE, "Lease", LeaseKeepAlive,
	    lease_keep_alive_request, lease_keep_alive_response, true),
	M(ETCD_LEASE_TIME_TO_LIVE, "Lease", LeaseTimeToLive,
	    lease_time_to_live_request, lease_time_to_live_response, true),
	M(ETCD_STATUS, "Maintenance", Status, status_request, status_response,
	    true),
};

#undef M

enum rpc_state {
	RPC_WAITING,		/* timer: backoff, or the first attempt */
	RPC_CONNECTING,		/* watching the endpoint's channel */
	RPC_IN_FLIGHT,		/* a grpc_call is out */
	RPC_FINISHING,		/* timer: deliver the stored result */
};

struct endpoint {
	char name[ETCD_ENDPOINT_MAX];
	grpc_channel *channel;
};

struct rpc {
	struct etcd_client *client;
	enum etcd_method method;
	enum rpc_state state;
	uint8_t *request;
	size_t request_len;
	int64_t deadline_at;		/* monotonic ms */
	size_t ep;			/* the endpoint of this attempt */
	size_t tried;			/* endpoints tried this round */
	int backoff_ms;
	etcd_callback cb;
	void *arg;
	struct event *timer;
	struct etcd_result result;
	ProtobufCMessage *reply;
	bool cancelled;			/* the client is being freed */
	bool heard;			/* a member answered with an error */

	/* The attempt in flight, or the channel watch. */
	struct grpc_unary u;		/* u.op: the call's or the watch's tag */
	grpc_metadata md;
	bool batch_ok;

	TAILQ_ENTRY(rpc) entry;		/* client->rpcs */
};

TAILQ_HEAD(rpc_list, rpc);

struct etcd_client {
	struct event_base *base;
	struct endpoint *eps;
	size_t neps;
	size_t cur;			/* the endpoint that last answered */
	int deadline_ms;
	struct grpc_loop *loop;
	struct rpc_list rpcs;		/* every unfinished rpc */
};

struct etcd_keeper {
	struct etcd_client *client;
	int64_t lease;
	int ttl_ms;
	int interval_ms;
	int64_t last_ok;		/* monotonic ms of the last renewal */
	int renewals;
	etcd_lease_lost lost;
	void *arg;
	struct event *timer;
	bool in_flight;
	bool stopped;			/* freed when the call in flight ends */
	bool done;			/* lost was called */
};

static void rpc_attempt(struct rpc *);

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *
zalloc(size_t n)
{
	void *p;

	if ((p = calloc(1, n)) == NULL)
		fatal("etcd: calloc");
	return p;
}

static gpr_timespec
ms_from_now(int64_t ms)
{
	return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
	    gpr_time_from_millis(ms, GPR_TIMESPAN));
}

const char *
etcd_method_name(enum etcd_method m)
{
	return m < ETCD_METHOD_COUNT ? methods[m].name : "unknown method";
}

bool
etcd_method_reads(enum etcd_method m)
{
	return m < ETCD_METHOD_COUNT && methods[m].reads;
}

const char *
etcd_code_name(int code)
{
	static const char *names[] = { "OK", "CANCELLED", "UNKNOWN",
		"INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
		"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
		"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
		"UNAUTHENTICATED" };

	if (code >= 0 && (size_t)code < sizeof(names) / sizeof(names[0]))
		return names[code];
	return "UNKNOWN_CODE";
}

ProtobufCBinaryData
etcd_bytes(const char *s)
{
	ProtobufCBinaryData b;

	b.len = strlen(s);
	b.data = (uint8_t *)s;
	return b;
}

/* ---- on the loop: finishing rpcs ---- */

static void
rpc_deliver(struct rpc *rpc)
{
	etcd_callback cb = rpc->cb;
	void *arg = rpc->arg;
	struct etcd_result result = rpc->result;
	ProtobufCMessage *reply = rpc->reply;

	TAILQ_REMOVE(&rpc->client->rpcs, rpc, entry);
	event_free(rpc->timer);
	free(rpc->request);
	free(rpc);
	cb(&result, reply, arg);
}

static void
rpc_set_result(struct rpc *rpc, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
rpc_set_result(struct rpc *rpc, int code, const char *fmt, ...)
{
	struct etcd_result *r = &rpc->result;
	char details[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(details, sizeof(details), fmt, ap);
	va_end(ap);
	r->code = code;
	snprintf(r->endpoint, sizeof(r->endpoint), "%s",
	    rpc->client->eps[rpc->ep].name);
	if (code == ETCD_OK)
		snprintf(r->message, sizeof(r->message), "OK");
	else
		snprintf(r->message, sizeof(r->message), "etcd %s: %s: %s%s",
		    r->endpoint, etcd_code_name(code), details, r->unknown ?
		    " (outcome unknown: etcd may have applied it)" : "");
}

/* Deliver from a fresh loop iteration (never inside the caller's call). */
static void
rpc_finish_later(struct rpc *rpc)
{
	struct timeval now = { 0, 0 };

	rpc->state = RPC_FINISHING;
	evtimer_add(rpc->timer, &now);
}

static void
rpc_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rpc *rpc = arg;

	if (rpc->state == RPC_FINISHING)
		rpc_deliver(rpc);
	else if (rpc->cancelled) {
		rpc_set_result(rpc, ETCD_CANCELLED, "%s: client closed",
		    methods[rpc->method].name);
		rpc_deliver(rpc);
	} else
		rpc_attempt(rpc);
}

/*
 * The attempt on rpc->ep failed without etcd having applied the request
 * (or the request only reads): try the next endpoint, after a backoff
 * once every endpoint failed this round, if the deadline leaves time.
 */
static void
rpc_fail_over(struct rpc *rpc)
{
	struct etcd_client *c = rpc->client;
	struct timeval tv = { 0, 0 };
	int delay = 0;

	rpc->ep = (rpc->ep + 1) % c->neps;
	if (++rpc->tried >= c->neps) {
		rpc->tried = 0;
		delay = rpc->backoff_ms;
		rpc->backoff_ms = delay * 2 > BACKOFF_MAX_MS ?
		    BACKOFF_MAX_MS : delay * 2;
	}
	if (rpc->deadline_at - now_ms() - delay < MIN_ATTEMPT_MS) {
		rpc_deliver(rpc);
		return;
	}
	rpc->state = RPC_WAITING;
	tv.tv_sec = delay / 1000;
	tv.tv_usec = (delay % 1000) * 1000;
	evtimer_add(rpc->timer, &tv);
}

/* May a sent request that failed with this status go elsewhere? */
static bool
sent_retryable(struct rpc *rpc)
{
	int code = rpc->result.code;
	size_t n = GRPC_SLICE_LENGTH(rpc->u.details);

	if (code != ETCD_UNAVAILABLE && code != ETCD_DEADLINE_EXCEEDED)
		return false;
	if (methods[rpc->method].reads)
		return true;
	/* Refused before it was proposed: etcd's hasleader check. */
	return code == ETCD_UNAVAILABLE && n == strlen(NO_LEADER) &&
	    memcmp(GRPC_SLICE_START_PTR(rpc->u.details), NO_LEADER, n) == 0;
}

/* A call came back from the thread. */
static void
rpc_call_done(struct rpc *rpc)
{
	const char *name = methods[rpc->method].name;
	int n;

	if (!rpc->batch_ok) {
		rpc->result.unknown = !methods[rpc->method].reads;
		rpc_set_result(rpc, ETCD_INTERNAL, "%s: gRPC failed the batch",
		    name);
	} else if (rpc->u.status == GRPC_STATUS_OK) {
		if ((rpc->reply = grpc_unary_reply(&rpc->u,
		    methods[rpc->method].reply)) == NULL)
			rpc_set_result(rpc, ETCD_INTERNAL, "%s: reply is "
			    "missing or is not a %s", name,
			    methods[rpc->method].reply->name);
		else {
			rpc_set_result(rpc, ETCD_OK, "OK");
			rpc->client->cur = rpc->ep;
		}
	} else {
		n = (int)GRPC_SLICE_LENGTH(rpc->u.details);
		rpc->result.code = rpc->u.status;
		/* A write cut off in flight, ours or not, may have landed. */
		if (rpc->cancelled || (!sent_retryable(rpc) &&
		    (rpc->u.status == GRPC_STATUS_UNAVAILABLE ||
		    rpc->u.status == GRPC_STATUS_DEADLINE_EXCEEDED)))
			rpc->result.unknown = !methods[rpc->method].reads;
		else if (rpc->u.status != GRPC_STATUS_UNAVAILABLE &&
		    rpc->u.status != GRPC_STATUS_DEADLINE_EXCEEDED)
			rpc->client->cur = rpc->ep;	/* it answered */
		rpc_set_result(rpc, rpc->u.status, "%.*s", n,
		    (const char *)GRPC_SLICE_START_PTR(rpc->u.details));
	}
	if (rpc->result.code != ETCD_OK && !rpc->cancelled &&
	    sent_retryable(rpc)) {
		rpc->heard = true;
		log_debug("%s: %s", name, rpc->result.message);
		grpc_unary_clear(&rpc->u);
		rpc_fail_over(rpc);
		return;
	}
	grpc_unary_clear(&rpc->u);
	rpc_deliver(rpc);
}

/* The endpoint's channel changed state, or the watch timed out. */
static void
rpc_watch_done(struct rpc *rpc)
{
	if (rpc->cancelled) {
		rpc_set_result(rpc, ETCD_CANCELLED, "%s: client closed",
		    methods[rpc->method].name);
		rpc_deliver(rpc);
	} else if (!rpc->batch_ok) {
		if (!rpc->heard)
			rpc_set_result(rpc, ETCD_UNAVAILABLE, "%s: no "
			    "connection before the deadline",
			    methods[rpc->method].name);
		rpc_fail_over(rpc);
	} else
		rpc_attempt(rpc);
}

/* The thread handed a call or a watch back (grpc_loop). */
static void
rpc_op_done(struct grpc_loop_op *op, bool ok)
{
	struct rpc *rpc = (struct rpc *)(void *)((char *)op -
	    offsetof(struct rpc, u.op));

	rpc->batch_ok = ok;
	if (rpc->state == RPC_CONNECTING)
		rpc_watch_done(rpc);
	else
		rpc_call_done(rpc);
}

/* ---- on the loop: starting attempts ---- */

static void
rpc_send(struct rpc *rpc, int64_t left)
{
	struct endpoint *ep = &rpc->client->eps[rpc->ep];
	grpc_call_error e;

	rpc->result.attempts++;
	rpc->md.key = grpc_slice_from_static_string("hasleader");
	rpc->md.value = grpc_slice_from_static_string("true");
	rpc->state = RPC_IN_FLIGHT;
	e = grpc_unary_start(&rpc->u, rpc->client->loop, ep->channel,
	    methods[rpc->method].path, ms_from_now(left), rpc->request,
	    rpc->request_len, &rpc->md, 1);
	if (e != GRPC_CALL_OK) {
		rpc_set_result(rpc, ETCD_INTERNAL, "%s: gRPC refused to start "
		    "the call (error %d)", methods[rpc->method].name, e);
		rpc_finish_later(rpc);
	}
}

/*
 * Send once the endpoint's channel is up; until then watch it, and pass
 * over an endpoint that failed to connect: nothing was sent to it.
 */
static void
rpc_attempt(struct rpc *rpc)
{
	struct endpoint *ep = &rpc->client->eps[rpc->ep];
	grpc_connectivity_state st;
	int64_t left, half;

	left = rpc->deadline_at - now_ms();
	if (left < MIN_ATTEMPT_MS) {
		if (rpc->result.code == ETCD_OK)
			rpc_set_result(rpc, ETCD_DEADLINE_EXCEEDED, "%s: no "
			    "time left to send", methods[rpc->method].name);
		rpc_deliver(rpc);
		return;
	}
	/*
	 * A member that hangs may have half the time left, so that another
	 * can still answer: to connect, and to answer a read. A write once
	 * sent has all of it, since it cannot go elsewhere.
	 */
	half = left / 2 >= 500 ? left / 2 : left;
	st = grpc_channel_check_connectivity_state(ep->channel, 1);
	switch (st) {
	case GRPC_CHANNEL_READY:
		rpc_send(rpc, methods[rpc->method].reads ? half : left);
		break;
	case GRPC_CHANNEL_IDLE:
	case GRPC_CHANNEL_CONNECTING:
		rpc->state = RPC_CONNECTING;
		grpc_channel_watch_connectivity_state(ep->channel, st,
		    ms_from_now(half), grpc_loop_cq(rpc->client->loop),
		    &rpc->u.op);
		break;
	default:
		/* What a member said tells more than a dead one's silence. */
		if (!rpc->heard)
			rpc_set_result(rpc, ETCD_UNAVAILABLE, "%s: not "
			    "connected", methods[rpc->method].name);
		rpc_fail_over(rpc);
		break;
	}
}

void
etcd_call(struct etcd_client *c, enum etcd_method method,
    const ProtobufCMessage *request, etcd_callback cb, void *arg)
{
	struct timeval now = { 0, 0 };
	struct rpc *rpc;

	rpc = zalloc(sizeof(*rpc));
	rpc->client = c;
	rpc->method = method < ETCD_METHOD_COUNT ? method : ETCD_RANGE;
	rpc->cb = cb;
	rpc->arg = arg;
	rpc->ep = c->cur;
	rpc->deadline_at = now_ms() + c->deadline_ms;
	rpc->backoff_ms = BACKOFF_MIN_MS;
	rpc->u.details = grpc_empty_slice();
	rpc->u.op.done = rpc_op_done;
	if ((rpc->timer = evtimer_new(c->base, rpc_timer_cb, rpc)) == NULL)
		fatalx("etcd_call: evtimer_new");
	TAILQ_INSERT_TAIL(&c->rpcs, rpc, entry);

	if (method >= ETCD_METHOD_COUNT || request == NULL ||
	    request->descriptor != methods[method].request) {
		rpc_set_result(rpc, ETCD_INVALID_ARGUMENT, "%s: request is "
		    "not a %s", etcd_method_name(method),
		    method < ETCD_METHOD_COUNT ?
		    methods[method].request->name : "known request");
		rpc_finish_later(rpc);
		return;
	}
	rpc->request_len = protobuf_c_message_get_packed_size(request);
	rpc->request = zalloc(rpc->request_len + 1);
	protobuf_c_message_pack(request, rpc->request);
	/* The first attempt starts from the loop too: one code path. */
	rpc->state = RPC_WAITING;
	evtimer_add(rpc->timer, &now);
}

/* ---- the client ---- */

static bool
endpoint_ok(const char *s)
{
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (colon == NULL || colon == s ||
	    strlen(s) >= ETCD_ENDPOINT_MAX)
		return false;
	port = strtol(colon + 1, &end, 10);
	return *end == '\0' && colon[1] != '\0' && port > 0 && port < 65536;
}

static grpc_channel *
channel_open(const char *endpoint)
{
	grpc_channel_credentials *creds;
	grpc_channel *ch;
	char target[ETCD_ENDPOINT_MAX + 8];
	/*
	 * Fail-over is ours, explicit and bounded by the call's deadline:
	 * no retries inside gRPC. A member that comes back is reconnected
	 * to within a second.
	 */
	grpc_arg args[] = {
		{ GRPC_ARG_INTEGER, (char *)GRPC_ARG_ENABLE_RETRIES,
		    { .integer = 0 } },
		{ GRPC_ARG_INTEGER,
		    (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
		    { .integer = 100 } },
		{ GRPC_ARG_INTEGER, (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
		    { .integer = 1000 } },
		{ GRPC_ARG_INTEGER, (char *)GRPC_ARG_ENABLE_CHANNELZ,
		    { .integer = 0 } },
	};
	grpc_channel_args chargs = { sizeof(args) / sizeof(args[0]), args };

	snprintf(target, sizeof(target), "dns:///%s", endpoint);
	creds = grpc_insecure_credentials_create();
	ch = grpc_channel_create(target, creds, &chargs);
	grpc_channel_credentials_release(creds);
	return ch;
}

static void
client_close_channels(struct etcd_client *c)
{
	size_t i;

	for (i = 0; i < c->neps; i++) {
		if (c->eps[i].channel != NULL)
			grpc_channel_destroy(c->eps[i].channel);
		c->eps[i].channel = NULL;
	}
}

struct etcd_client *
etcd_client_new(struct event_base *base, const char *const *endpoints,
    size_t nendpoints, int deadline_ms)
{
	struct etcd_client *c;
	size_t i;

	if (nendpoints == 0) {
		log_warnx("etcd_client_new: no endpoints");
		return NULL;
	}
	for (i = 0; i < nendpoints; i++)
		if (!endpoint_ok(endpoints[i])) {
			log_warnx("etcd_client_new: endpoint %s: not host:port",
			    endpoints[i]);
			return NULL;
		}
	c = zalloc(sizeof(*c));
	c->base = base;
	c->deadline_ms = deadline_ms > 0 ? deadline_ms : 1;
	TAILQ_INIT(&c->rpcs);
	if ((c->loop = grpc_loop_new(base, "etcd")) == NULL) {
		free(c);
		return NULL;
	}
	c->neps = nendpoints;
	c->eps = zalloc(nendpoints * sizeof(*c->eps));
	for (i = 0; i < nendpoints; i++) {
		snprintf(c->eps[i].name, sizeof(c->eps[i].name), "%s",
		    endpoints[i]);
		c->eps[i].channel = channel_open(endpoints[i]);
	}
	return c;
}

void
etcd_client_free(struct etcd_client *c)
{
	struct rpc *rpc;

	if (c == NULL)
		return;
	/*
	 * Calls in flight are cancelled and come back through the thread;
	 * watches end when their channel is destroyed. Waiting rpcs are
	 * finished below, like those, with CANCELLED.
	 */
	TAILQ_FOREACH(rpc, &c->rpcs, entry) {
		rpc->cancelled = true;
		if (rpc->state == RPC_IN_FLIGHT)
			grpc_call_cancel(rpc->u.call, NULL);
	}
	client_close_channels(c);
	grpc_loop_shutdown(c->loop);
	while ((rpc = TAILQ_FIRST(&c->rpcs)) != NULL) {
		evtimer_del(rpc->timer);
		if (rpc->state != RPC_FINISHING)
			rpc_set_result(rpc, ETCD_CANCELLED, "%s: client closed",
			    methods[rpc->method].name);
		rpc_deliver(rpc);
	}
	grpc_loop_free(c->loop);
	free(c->eps);
	free(c);
}

/* ---- keeping a lease alive ---- */

static void keeper_arm(struct etcd_keeper *);

static void
keeper_lose(struct etcd_keeper *k, const char *why)
{
	k->done = true;
	log_warnx("etcd lease %lld lost: %s", (long long)k->lease, why);
	k->lost(k->lease, why, k->arg);
}

static void
keeper_reply(const struct etcd_result *r, ProtobufCMessage *reply, void *arg)
{
	struct etcd_keeper *k = arg;
	Etcdserverpb__LeaseKeepAliveResponse *resp = (void *)reply;
	char why[600];

	k->in_flight = false;
	if (k->stopped) {
		if (reply != NULL)
			protobuf_c_message_free_unpacked(reply, NULL);
		free(k);
		return;
	}
	if (r->code == ETCD_OK && resp->ttl > 0) {
		k->last_ok = now_ms();
		k->renewals++;
	} else if (r->code == ETCD_OK) {
		keeper_lose(k, "etcd has no such lease");
	} else if (now_ms() - k->last_ok >= k->ttl_ms) {
		snprintf(why, sizeof(why), "no renewal for its TTL: %s",
		    r->message);
		keeper_lose(k, why);
	} else
		log_warnx("etcd lease %lld: renewal failed: %s",
		    (long long)k->lease, r->message);
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
	if (!k->done)
		keeper_arm(k);
}

static void
keeper_tick(evutil_socket_t fd, short what, void *arg)
{
	struct etcd_keeper *k = arg;
	Etcdserverpb__LeaseKeepAliveRequest req =
	    ETCDSERVERPB__LEASE_KEEP_ALIVE_REQUEST__INIT;

	if (now_ms() - k->last_ok >= k->ttl_ms) {
		keeper_lose(k, "no renewal for its TTL");
		return;
	}
	req.id = k->lease;
	k->in_flight = true;
	etcd_call(k->client, ETCD_LEASE_KEEPALIVE, &req.base, keeper_reply, k);
}

static void
keeper_arm(struct etcd_keeper *k)
{
	struct timeval tv;

	tv.tv_sec = k->interval_ms / 1000;
	tv.tv_usec = (k->interval_ms % 1000) * 1000;
	evtimer_add(k->timer, &tv);
}

struct etcd_keeper *
etcd_keeper_start(struct etcd_client *c, int64_t lease, int ttl_ms,
    int interval_ms, etcd_lease_lost lost, void *arg)
{
	struct etcd_keeper *k;

	k = zalloc(sizeof(*k));
	k->client = c;
	k->lease = lease;
	k->ttl_ms = ttl_ms;
	k->interval_ms = interval_ms > 0 ? interval_ms : 1;
	k->lost = lost;
	k->arg = arg;
	k->last_ok = now_ms();
	if ((k->timer = evtimer_new(c->base, keeper_tick, k)) == NULL)
		fatalx("etcd_keeper_start: evtimer_new");
	keeper_arm(k);
	return k;
}

int
etcd_keeper_renewals(const struct etcd_keeper *k)
{
	return k->renewals;
}

void
etcd_keeper_stop(struct etcd_keeper *k)
{
	if (k == NULL)
		return;
	event_free(k->timer);
	k->timer = NULL;
	if (k->in_flight)
		k->stopped = true;	/* keeper_reply frees it */
	else
		free(k);
}
