/*
 * etcd.h: berth-registry's client for etcd's v3 API, asynchronous on
 * libevent (the registry's loop must never block on etcd).
 *
 * A client holds one gRPC channel per endpoint ("127.0.0.1:2379") and one
 * thread that waits on gRPC's completion queue; callbacks run on the
 * event base's thread only. Each call has one deadline for all its
 * attempts. A call that fails on an endpoint with UNAVAILABLE or
 * DEADLINE_EXCEEDED goes to the next endpoint when that is safe: reads
 * always; writes (Put, DeleteRange, Txn, lease grant and revoke) only when
 * the failure proves etcd did not apply them: no connection was up to
 * send on, or the member refused it for having no leader. Otherwise a
 * write's result says its outcome is unknown, and the caller must read
 * before it decides. Error messages name etcd and the endpoint:
 * "etcd 127.0.0.1:23791: UNAVAILABLE: etcdserver: no leader".
 *
 * Requests and replies are protobuf-c messages of proto/etcd.proto;
 * a reply belongs to the callback, which frees it with
 * protobuf_c_message_free_unpacked(reply, NULL).
 */
#ifndef BERTH_ETCD_H
#define BERTH_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>

#include "etcd.pb-c.h"

enum etcd_method {
	ETCD_RANGE,
	ETCD_PUT,
	ETCD_DELETE_RANGE,
	ETCD_TXN,
	ETCD_LEASE_GRANT,
	ETCD_LEASE_REVOKE,
	ETCD_LEASE_KEEPALIVE,
	ETCD_LEASE_TIME_TO_LIVE,
	ETCD_STATUS,
	ETCD_METHOD_COUNT
};

/* gRPC's status codes, by number, as far as callers test them. */
enum etcd_code {
	ETCD_OK = 0,
	ETCD_CANCELLED = 1,
	ETCD_INVALID_ARGUMENT = 3,
	ETCD_DEADLINE_EXCEEDED = 4,
	ETCD_NOT_FOUND = 5,
	ETCD_FAILED_PRECONDITION = 9,
	ETCD_INTERNAL = 13,
	ETCD_UNAVAILABLE = 14,
};

#define ETCD_ENDPOINT_MAX	64

/*
 * code: an enum etcd_code, or another gRPC code. unknown: a write that
 * etcd may or may not have applied. attempts: requests sent, over all
 * endpoints. endpoint: where the last went. message: "etcd ENDPOINT:
 * CODE: details", or "OK".
 */
struct etcd_result {
	int code;
	bool unknown;
	int attempts;
	char endpoint[ETCD_ENDPOINT_MAX];
	char message[512];
};

typedef void (*etcd_callback)(const struct etcd_result *, ProtobufCMessage *,
    void *);

struct etcd_client;
struct etcd_keeper;

/*
 * endpoints: host:port, tried in order from the last that answered.
 * deadline_ms bounds each call, fail-over and backoff included.
 * NULL (logged) when an endpoint is malformed or there are none.
 */
struct etcd_client *etcd_client_new(struct event_base *,
    const char *const *endpoints, size_t nendpoints, int deadline_ms);
/*
 * Calls still out end with CANCELLED, their callbacks run from here.
 * Stop every keeper of the client first.
 */
void etcd_client_free(struct etcd_client *);

/* request must be the method's request message; cb runs from the loop. */
void etcd_call(struct etcd_client *, enum etcd_method,
    const ProtobufCMessage *request, etcd_callback cb, void *arg);

const char *etcd_method_name(enum etcd_method);
const char *etcd_code_name(int code);
/* Does the method only read (and so may always be sent again)? */
bool etcd_method_reads(enum etcd_method);

/* A C string as a key or value, without its NUL (no copy). */
ProtobufCBinaryData etcd_bytes(const char *);

/*
 * Keep a lease alive: one LeaseKeepAlive every interval_ms, each its own
 * call (a stream with one request). lost runs once, from the loop, when
 * etcd says the lease is gone or no renewal succeeded for ttl_ms; the
 * keeper stops then, and the caller still frees it.
 */
typedef void (*etcd_lease_lost)(int64_t lease, const char *why, void *arg);
struct etcd_keeper *etcd_keeper_start(struct etcd_client *, int64_t lease,
    int ttl_ms, int interval_ms, etcd_lease_lost lost, void *arg);
/* Renewals that etcd confirmed so far. */
int etcd_keeper_renewals(const struct etcd_keeper *);
void etcd_keeper_stop(struct etcd_keeper *);

#endif
