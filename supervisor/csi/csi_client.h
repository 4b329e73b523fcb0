/*
 * csi_client.h: the supervisor's CSI client, asynchronous on libevent.
 *
 * One csi_client per event base owns a gRPC completion queue and the one
 * thread that waits on it; a csi_conn is one plugin's unix socket. A call
 * sends one protobuf-c request and, from the event loop, hands the caller
 * a typed result and the decoded reply. Every call has a deadline per
 * attempt; methods that the CSI spec makes idempotent are retried with
 * exponential backoff on UNAVAILABLE, DEADLINE_EXCEEDED and
 * RESOURCE_EXHAUSTED, within an overall bound. Results carry the gRPC
 * status code and message: callers decide on the code, never on the text.
 *
 * Callbacks run on the event base's thread, never on the gRPC thread.
 * This module must not know what a volume or a plugin is: it moves
 * messages and reads replies only where the CSI spec fixes how, and it
 * never logs request contents (they may hold secrets).
 */
#ifndef BERTH_CSI_CLIENT_H
#define BERTH_CSI_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>

#include "csi.pb-c.h"

enum csi_method {
	CSI_GET_PLUGIN_INFO,
	CSI_GET_PLUGIN_CAPABILITIES,
	CSI_PROBE,
	CSI_CREATE_VOLUME,
	CSI_DELETE_VOLUME,
	CSI_CONTROLLER_PUBLISH_VOLUME,
	CSI_CONTROLLER_UNPUBLISH_VOLUME,
	CSI_VALIDATE_VOLUME_CAPABILITIES,
	CSI_CONTROLLER_GET_CAPABILITIES,
	CSI_NODE_STAGE_VOLUME,
	CSI_NODE_UNSTAGE_VOLUME,
	CSI_NODE_PUBLISH_VOLUME,
	CSI_NODE_UNPUBLISH_VOLUME,
	CSI_NODE_GET_VOLUME_STATS,
	CSI_NODE_GET_CAPABILITIES,
	CSI_NODE_GET_INFO,
	CSI_CONTROLLER_EXPAND_VOLUME,
	CSI_NODE_EXPAND_VOLUME,
	CSI_CREATE_SNAPSHOT,
	CSI_DELETE_SNAPSHOT,
	CSI_LIST_SNAPSHOTS,
	CSI_METHOD_COUNT
};

/* The gRPC status codes, with the same numbers, so callers need no grpc.h. */
enum csi_code {
	CSI_OK = 0,
	CSI_CANCELLED = 1,
	CSI_UNKNOWN = 2,
	CSI_INVALID_ARGUMENT = 3,
	CSI_DEADLINE_EXCEEDED = 4,
	CSI_NOT_FOUND = 5,
	CSI_ALREADY_EXISTS = 6,
	CSI_PERMISSION_DENIED = 7,
	CSI_RESOURCE_EXHAUSTED = 8,
	CSI_FAILED_PRECONDITION = 9,
	CSI_ABORTED = 10,
	CSI_OUT_OF_RANGE = 11,
	CSI_UNIMPLEMENTED = 12,
	CSI_INTERNAL = 13,
	CSI_UNAVAILABLE = 14,
	CSI_DATA_LOSS = 15,
	CSI_UNAUTHENTICATED = 16,
};

/*
 * Where a failure came from: the plugin (or gRPC on the wire), or this
 * client (a reply it could not decode, a connection closed under the
 * call). The code is a gRPC code in both cases.
 */
enum csi_origin {
	CSI_FROM_PLUGIN,
	CSI_FROM_CLIENT,
};

struct csi_result {
	enum csi_code code;
	enum csi_origin origin;
	char message[512];	/* the status details, or what failed locally */
	int attempts;		/* how many times the request was sent */
};

/*
 * Retries for idempotent methods; ignored for the others. Backoff starts
 * at initial_backoff_ms and doubles up to max_backoff_ms; no attempt
 * starts after total_ms from the call, and no attempt outlives it.
 * max_attempts 0 means no limit other than total_ms; total_ms 0 means
 * a single attempt.
 */
struct csi_retry {
	int max_attempts;
	int initial_backoff_ms;
	int max_backoff_ms;
	int total_ms;
};

/* A single attempt, for calls whose caller retries on its own terms. */
extern const struct csi_retry csi_retry_none;
/* Sensible defaults for start-up probing and fingerprinting. */
extern const struct csi_retry csi_retry_default;

struct csi_client;
struct csi_conn;

/*
 * The reply is the decoded response message of the method (for example
 * Csi__V1__ProbeResponse) when result->code is CSI_OK, else NULL. The
 * callback owns it: free with protobuf_c_message_free_unpacked(reply,
 * NULL). result is only valid during the callback.
 */
typedef void (*csi_callback)(const struct csi_result *result,
    ProtobufCMessage *reply, void *arg);

/*
 * NULL, with a log line, if the completion-queue thread cannot start.
 * The base must outlive the client.
 */
struct csi_client *csi_client_new(struct event_base *base);
/*
 * Closes every connection still open (their calls end with CANCELLED),
 * runs the remaining callbacks, stops the thread and frees the client.
 * Must not be called from a callback.
 */
void csi_client_free(struct csi_client *client);

/*
 * endpoint is "unix:///abs/path" or "unix:/abs/path", the CSI_ENDPOINT
 * form. Connecting is lazy: a socket that does not exist yet is not an
 * error here, its calls fail with UNAVAILABLE (and retry, if allowed).
 * NULL, with a log line, when the endpoint is malformed.
 */
struct csi_conn *csi_conn_open(struct csi_client *client,
    const char *endpoint);
/* Ends the conn's calls with CANCELLED (callbacks still run) and frees it. */
void csi_conn_close(struct csi_conn *conn);
const char *csi_conn_endpoint(const struct csi_conn *conn);
/* The plugin's name, the label of the conn's error metrics. */
void csi_conn_set_plugin(struct csi_conn *conn, const char *plugin);

/*
 * Start a call; the callback always runs exactly once, from the event
 * loop, never from within csi_call(). The request must be a message of
 * the method's request type; it is serialized before csi_call() returns,
 * so the caller may free it at once. deadline_ms bounds each attempt;
 * retry may be NULL (no retry).
 */
void csi_call(struct csi_conn *conn, enum csi_method method,
    const ProtobufCMessage *request, int deadline_ms,
    const struct csi_retry *retry, csi_callback cb, void *arg);

/*
 * Run one call to completion by running the event base until it is done.
 * For tools and tests: the base must not be running already. On CSI_OK,
 * *reply holds the response (free it as above); otherwise *reply is NULL.
 */
enum csi_code csi_call_sync(struct csi_conn *conn, enum csi_method method,
    const ProtobufCMessage *request, int deadline_ms,
    const struct csi_retry *retry, struct csi_result *result,
    ProtobufCMessage **reply);

/* Names and properties of the methods. */
const char *csi_method_name(enum csi_method method);	/* "NodeGetInfo" */
bool csi_method_idempotent(enum csi_method method);
const char *csi_code_name(enum csi_code code);		/* "UNAVAILABLE" */

/* Probe's optional `ready`: absent is not false. */
enum csi_ready {
	CSI_READY_ABSENT,	/* the spec says: treat as ready */
	CSI_READY_FALSE,
	CSI_READY_TRUE,
};
enum csi_ready csi_probe_ready(const Csi__V1__ProbeResponse *reply);

/*
 * Capability lookups that skip entries of unknown or missing type, which
 * the CSI spec lets a newer plugin send.
 */
bool csi_plugin_has_service(const Csi__V1__GetPluginCapabilitiesResponse *,
    Csi__V1__PluginCapability__Service__Type type);
bool csi_node_has_rpc(const Csi__V1__NodeGetCapabilitiesResponse *,
    Csi__V1__NodeServiceCapability__RPC__Type type);
bool csi_controller_has_rpc(const Csi__V1__ControllerGetCapabilitiesResponse *,
    Csi__V1__ControllerServiceCapability__RPC__Type type);
/* The plugin's VolumeExpansion: ONLINE when it says ONLINE (even beside
 * OFFLINE), OFFLINE when only that, else UNKNOWN (no expansion). */
Csi__V1__PluginCapability__VolumeExpansion__Type csi_plugin_expansion(
    const Csi__V1__GetPluginCapabilitiesResponse *);

/*
 * A ValidateVolumeCapabilities reply, read as the CSI spec asks: an absent
 * `confirmed` is no verdict, which is not a failure; a present one must
 * confirm every requested capability (same access type and mode, the
 * same fs_type when one was asked for, every requested mount flag). On a
 * mismatch, why says which capability (why may be NULL).
 */
enum csi_validation {
	CSI_VALIDATION_CONFIRMED,
	CSI_VALIDATION_ABSENT,
	CSI_VALIDATION_MISMATCH,
};
enum csi_validation csi_validation_check(
    const Csi__V1__ValidateVolumeCapabilitiesRequest *request,
    const Csi__V1__ValidateVolumeCapabilitiesResponse *reply,
    char *why, size_t whylen);

#endif
