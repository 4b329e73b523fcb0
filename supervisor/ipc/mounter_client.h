/*
 * mounter_client.h: the supervisor's asynchronous calls to berth-mounter,
 * one priv_<verb>() per mounter verb (proto/mounter.proto), over the
 * channel it already has to the mounter.
 *
 * Nothing else in the supervisor builds a mounter request. Every call has
 * the same deadline (MCLIENT_TIMEOUT_MS). A call returns 0 when the
 * request is on its way, and then its callback runs exactly once: with
 * res->code ERROR_NONE and the reply's fields, or with the mounter's
 * typed error, ERROR_TIMEOUT or ERROR_CLOSED. When berth-mounter cannot be
 * reached (no channel, or it cannot take the request), the call logs it
 * once, returns -errno and runs no callback; MCLIENT_UNREACHABLE is the
 * words a caller reports for that. Identifiers are passed as they are:
 * the mounter checks each one (common/ident.c) and refuses a bad one.
 *
 * Mounter notices (PluginExited) do not pass through here.
 */
#ifndef BERTH_MOUNTER_CLIENT_H
#define BERTH_MOUNTER_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "channel.h"

/* How long one mounter request may take: a mount, or a cleanup of an
 * alloc's tree on a busy disk, takes seconds, not minutes. */
#define MCLIENT_TIMEOUT_MS 30000
/* What a caller reports when a call returned -errno. */
#define MCLIENT_UNREACHABLE "cannot reach berth-mounter"

struct mclient;

struct priv_result {
	Berth__ErrorCode code;		/* ERROR_NONE on success */
	const char *message;		/* the error's, or "" */
};

/* Ack: nothing but the outcome. */
typedef void (*priv_done_cb)(const struct priv_result *res, void *arg);
/* PrepareVolumeReply: is the target already a mount point? */
typedef void (*priv_volume_cb)(const struct priv_result *res, bool mounted,
    void *arg);
/* CleanupReply: how many mounts and entries went. */
typedef void (*priv_cleanup_cb)(const struct priv_result *res,
    uint32_t unmounted, uint32_t removed, void *arg);
/* PluginStarted: the plugin's pid and start time; its pidfd is the
 * callback's to close (-1 on failure). */
typedef void (*priv_plugin_cb)(const struct priv_result *res, pid_t pid,
    uint64_t start_time, int pidfd, void *arg);

/*
 * TaskStarted: the crun process's pid and start time, its pidfd and the
 * supervisor's end of the task's shim channel, both the callback's to
 * close (-1 on failure).
 */
typedef void (*priv_task_cb)(const struct priv_result *res, pid_t pid,
    uint64_t start_time, int pidfd, int chanfd, void *arg);

/* Pong: the nonce it carries back. */
typedef void (*priv_pong_cb)(const struct priv_result *res, uint64_t nonce,
    void *arg);

/* One volume's place under its plugin, as the mounter's verbs name it. */
struct priv_volume {
	const char *plugin_type;
	const char *plugin_id;
	const char *volume_ns;		/* staging only */
	const char *alloc_id;		/* publish and bind only */
	const char *volume_id;
	bool read_only;			/* the usage's, not the bind's */
	Berth__AttachmentMode attachment;
	Berth__AccessMode access;
	bool per_usage;			/* staging at an older .../<usage> */
	/* Prepare: the node plugin's alloc (its user gets the directory). */
	const char *plugin_alloc;
	/* Bind: the group the volume's root is made usable by (0: none). */
	uint32_t group;
};

/* A task's sandbox, as StartTask (proto/mounter.proto) names it. */
struct priv_task {
	const char *alloc_id;
	const char *task;
	uint32_t uid, gid;
	const char *user;		/* allow-listed name, or NULL */
	bool network_none;
	uint64_t memory_bytes;		/* 0: no limit */
	uint64_t memory_max_bytes;	/* 0: memory_bytes */
	uint32_t cpu_shares;		/* 0: crun's default */
	uint32_t pids_max;		/* 0: no limit */
	/* A plugin task's: its socket dir and root bound in; else NULL. */
	const char *plugin_type, *plugin_id;
};

/* c: the mounter's channel, which the client never frees. */
/* timeout_ms 0: MCLIENT_TIMEOUT_MS (tests pass a shorter one). */
struct mclient *mclient_new(struct chan *c, unsigned timeout_ms);
/* Calls in flight reach no callback after this. */
void mclient_free(struct mclient *mc);
/* The calls made with this callback arg reach no callback any more. */
void priv_forget(struct mclient *mc, void *arg);

int priv_prepare_plugin(struct mclient *mc, const char *plugin_type,
    const char *plugin_id, const char *alloc_id, uint32_t owner_uid,
    uint32_t owner_gid, priv_done_cb cb, void *arg);
int priv_prepare_volume(struct mclient *mc, Berth__VolumeDir dir,
    const struct priv_volume *v, priv_volume_cb cb, void *arg);
int priv_prepare_task(struct mclient *mc, const char *alloc_id,
    const char *task, uint32_t owner_uid, uint32_t owner_gid,
    priv_done_cb cb, void *arg);
/* read_only: the bind's, on top of the usage's. */
int priv_bind_volume(struct mclient *mc, const struct priv_volume *v,
    const char *task, const char *name, bool read_only, priv_done_cb cb,
    void *arg);
int priv_unbind_volume(struct mclient *mc, const char *alloc_id,
    const char *task, const char *name, priv_done_cb cb, void *arg);
/* plugin_type and plugin_id: both NULL, or the alloc's plugin to remove. */
int priv_cleanup_alloc(struct mclient *mc, const char *alloc_id,
    const char *plugin_type, const char *plugin_id, priv_cleanup_cb cb,
    void *arg);
int priv_start_plugin(struct mclient *mc, const char *definition,
    const char *plugin_type, const char *plugin_id, const char *alloc_id,
    priv_plugin_cb cb, void *arg);
int priv_adopt_plugin(struct mclient *mc, pid_t pid, uint64_t start_time,
    priv_plugin_cb cb, void *arg);
int priv_signal_plugin(struct mclient *mc, pid_t pid, uint64_t start_time,
    Berth__PluginSignal sig, priv_done_cb cb, void *arg);
int priv_start_task(struct mclient *mc, const struct priv_task *t,
    priv_task_cb cb, void *arg);
/* Does berth-mounter answer? (the privileged driver's fingerprint) */
int priv_ping(struct mclient *mc, uint64_t nonce, priv_pong_cb cb,
    void *arg);

#endif
