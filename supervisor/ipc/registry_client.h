/*
 * registry_client.h: the supervisor's asynchronous calls to
 * berth-registry, over the channel it already has to it (struct peer).
 *
 * Every call returns 0 when the request is on its way, and then its
 * callback runs exactly once: with res->code ERROR_NONE and the reply, or
 * with the registry's typed error, ERROR_TIMEOUT or ERROR_CLOSED. On
 * success res->reply carries the body named below: the channel refuses
 * any other (ERROR_INTERNAL, common/ipc_reply.c), so a callback reads it
 * without checking. A call that returns -errno runs no callback. A
 * write is acknowledged only once it is durable. Lists are fetched page
 * by page and handed over whole.
 *
 * A subscription delivers events in index order, each once, through its
 * callback; it acknowledges them to the registry (which keeps a bounded
 * window in flight), and when the registry says it fell behind (Resync) it
 * catches up from the registry's event log by itself. If the log no longer
 * reaches back far enough, the callback gets REGCLIENT_GAP: re-read the
 * state with the list calls.
 *
 * Registry notices arrive on the peer's channel: route them with
 * regclient_notice() from the channel's on_message.
 */
#ifndef BERTH_REGISTRY_CLIENT_H
#define BERTH_REGISTRY_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel.h"

/* How long one registry request may take, by default. */
#define REGCLIENT_TIMEOUT_MS 10000

struct regclient;
struct regclient_sub;

struct regclient_result {
	Berth__ErrorCode code;		/* ERROR_NONE on success */
	const char *message;		/* the error's, or "" */
	const Berth__Envelope *reply;	/* on success; freed after the cb */
};

typedef void (*regclient_cb)(const struct regclient_result *res, void *arg);
/* Lists: items (possibly none) on success; freed after the callback. */
typedef void (*regclient_plugins_cb)(const struct regclient_result *res,
    Berth__PluginInstance *const *items, size_t n, void *arg);
typedef void (*regclient_handles_cb)(const struct regclient_result *res,
    Berth__Handle *const *items, size_t n, void *arg);
typedef void (*regclient_volumes_cb)(const struct regclient_result *res,
    Berth__VolumeReply *const *items, size_t n, void *arg);

enum regclient_event_kind {
	REGCLIENT_EVENT,	/* ev is the next event */
	REGCLIENT_GAP,		/* events were lost: re-list, then go on */
	REGCLIENT_ENDED,	/* the subscription failed for good */
};
typedef void (*regclient_event_cb)(struct regclient_sub *sub,
    enum regclient_event_kind kind, const Berth__Event *ev, void *arg);

/* timeout_ms 0: REGCLIENT_TIMEOUT_MS. */
struct regclient *regclient_new(struct event_base *base, struct chan *c,
    unsigned timeout_ms);
/* Ends subscriptions quietly; calls in flight still get their callback. */
void regclient_free(struct regclient *rc);
/* A notice from the registry: true if it was ours (event, resync). */
bool regclient_notice(struct regclient *rc, const Berth__Envelope *env);

/* Reply body: register_plugin_reply (the stored instance, with indexes). */
int regclient_register(struct regclient *rc, const Berth__PluginInstance *pi,
    regclient_cb cb, void *arg);
/* Reply body: deregister_plugin_reply (index, promoted alloc). */
int regclient_deregister(struct regclient *rc, Berth__PluginType type,
    const char *name, const char *alloc, regclient_cb cb, void *arg);
/* alloc NULL or "": the active instance. Reply body: plugin_list (one). */
int regclient_get_plugin(struct regclient *rc, Berth__PluginType type,
    const char *name, const char *alloc, regclient_cb cb, void *arg);
/* type 0 and name NULL: every plugin instance. */
int regclient_list_plugins(struct regclient *rc, Berth__PluginType type,
    const char *name, regclient_plugins_cb cb, void *arg);

/* Reply body: volume_reply. */
int regclient_put_volume(struct regclient *rc, const Berth__Volume *v,
    regclient_cb cb, void *arg);
/* Reply body: volume_reply, with the volume's claims. */
int regclient_get_volume(struct regclient *rc, const char *ns,
    const char *id, regclient_cb cb, void *arg);
/* ns NULL or "": every namespace. Each volume with its claims, in
 * (namespace, id) order, every page followed. */
int regclient_list_volumes(struct regclient *rc, const char *ns,
    regclient_volumes_cb cb, void *arg);
/* Reply body: index_reply. */
int regclient_delete_volume(struct regclient *rc, const char *ns,
    const char *id, regclient_cb cb, void *arg);
/* Reply body: claim_reply. */
int regclient_claim(struct regclient *rc, const Berth__Claim *claim,
    regclient_cb cb, void *arg);
/* Reply body: index_reply. */
int regclient_release(struct regclient *rc, const char *ns,
    const char *volume, const char *alloc, regclient_cb cb, void *arg);

/*
 * A task uid and gid (one number) for alloc, from [first, first + count);
 * the one it holds, if it holds one. Reply body: ids_reply.
 */
int regclient_allocate_ids(struct regclient *rc, const char *alloc,
    uint32_t first, uint32_t count, regclient_cb cb, void *arg);
/* alloc is gone, files and processes too. Reply body: index_reply. */
int regclient_release_ids(struct regclient *rc, const char *alloc,
    regclient_cb cb, void *arg);

/* Reply body: handle_reply (with indexes). */
int regclient_put_handle(struct regclient *rc, const Berth__Handle *h,
    regclient_cb cb, void *arg);
/* Only h's key fields count. Reply body: index_reply. */
int regclient_delete_handle(struct regclient *rc, const Berth__Handle *h,
    regclient_cb cb, void *arg);
/* kind 0: every kind. */
int regclient_list_handles(struct regclient *rc, Berth__HandleKind kind,
    regclient_handles_cb cb, void *arg);

/*
 * Events after from_index (live_only: from now on). NULL on failure to
 * send; errors after that come as REGCLIENT_ENDED.
 */
struct regclient_sub *regclient_subscribe(struct regclient *rc,
    uint64_t from_index, bool live_only, regclient_event_cb cb, void *arg);
/* Stop: no callback runs for it after this returns. */
void regclient_unsubscribe(struct regclient_sub *sub);
/* The last index this subscription delivered. */
uint64_t regclient_sub_index(const struct regclient_sub *sub);

#endif
