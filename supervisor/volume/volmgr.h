/*
 * volmgr.h: the volume manager. It gives an allocation its CSI volumes
 * and takes them back, and it registers, creates and deletes volumes for
 * the operator.
 *
 * Mounting an alloc's volume goes, one step at a time and never two
 * operations at once on one volume: the volume from the registry; its
 * plugin's node instance (healthy, fingerprinted) from the CSI manager;
 * a mount record in the registry (written before anything is touched, so
 * that a crash leaves a record of what may exist); the claim (the
 * registry enforces the access mode); ControllerPublishVolume when the
 * controller advertises it (its publish_context goes on to stage and
 * publish); NodeStageVolume only when the node advertises
 * STAGE_UNSTAGE_VOLUME and the staging path is not mounted yet;
 * NodePublishVolume unless the target is mounted already; then the
 * mounter binds the published volume into every task that mounts it.
 * Taking it back runs the same way backwards: unbind, unpublish, unstage
 * only when the last user of that staging path has gone, controller
 * unpublish when the last user of the volume on this node has gone,
 * release the claim, forget the record. Users are counted from the
 * records, which the registry keeps, so the count is rebuilt after a
 * restart, and a volume staged before a restart is not staged again.
 *
 * A failure undoes what that alloc had done and says which step failed
 * and why; errors that may pass (a plugin not healthy yet, UNAVAILABLE)
 * are reported as retryable, and the alloc runner retries with backoff.
 *
 * Must not: decide which allocs run (alloc_runner.c does), start tasks,
 * or build a path the mounter acts on (it derives them itself).
 */
#ifndef BERTH_VOLMGR_H
#define BERTH_VOLMGR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>

#include "registry.pb-c.h"

struct volmgr;
struct alloc;
struct regclient;
struct mclient;
struct csi_conn;
struct csi_fingerprint;
struct events;

enum volmgr_status {
	VOLMGR_OK = 0,
	VOLMGR_RETRY,		/* may pass: try again later */
	VOLMGR_FAILED,		/* will not pass by waiting */
};

/* why: "step: reason" when status is not VOLMGR_OK, else "". */
typedef void (*volmgr_cb)(enum volmgr_status status, const char *why,
    void *arg);

/* A plugin's active instance, as the volume manager uses it. */
struct volmgr_plugin {
	struct csi_conn *conn;		/* NULL: not connected */
	const struct csi_fingerprint *fp;
	const char *alloc;		/* the alloc that runs it */
};

/*
 * What the volume manager uses, and nothing more. The links and the
 * lookups must outlive the manager; data_dir and secrets_dir are copied.
 */
struct volmgr_deps {
	struct event_base *base;
	struct regclient *registry;
	struct mclient *mounter;
	const char *data_dir;		/* the config's: CSI paths are under it */
	const char *secrets_dir;	/* the config's: the secrets' values */
	/* The active instance of a plugin (CSI_NODE or CSI_CONTROLLER):
	 * false when there is none. volmgr_csimgr_find() asks the CSI
	 * manager. */
	bool (*find_plugin)(void *ctx, Berth__PluginType type,
	    const char *name, struct volmgr_plugin *out);
	void *plugins_ctx;
	/* The <type> ("node", "monolith") that running alloc's node task
	 * declares for plugin; NULL when the alloc does not run (yet). */
	const char *(*node_plugin_type)(void *ctx, const char *alloc,
	    const char *plugin);
	void *allocs_ctx;
	/* One plugin call: each attempt's deadline, and the bound on an
	 * idempotent call's retries; 0: the defaults (10 s, 20 s). */
	int csi_deadline_ms;
	int csi_retry_total_ms;
	/* Where register, create, delete, stage, publish, unpublish and
	 * unstage are recorded (topic "volume"), and a volume turning
	 * abnormal or normal again; NULL: nowhere. */
	struct events *events;
	/* How often each volume staged or published here is asked for its
	 * usage and condition (volmgr_stats.c); 0: never. */
	int64_t stats_interval_ms;
	/* Restart the running tasks of alloc, why saying why (a volume's
	 * on_plugin_restart "restart_tasks"); NULL: not done. */
	void (*restart_tasks)(void *allocs_ctx, const char *alloc,
	    const char *why);
	/* A volume of plugin is no longer staged or published here: an
	 * alloc waiting for room (max_volumes_per_node) may go on now, not
	 * at its next retry; NULL: not told. It must only schedule: the
	 * volume manager calls it in the middle of its own work. */
	void (*room)(void *allocs_ctx, const char *plugin);
};

struct volmgr *volmgr_new(const struct volmgr_deps *d);
/* find_plugin for a struct csimgr * as ctx. */
bool volmgr_csimgr_find(void *csimgr, Berth__PluginType type,
    const char *name, struct volmgr_plugin *out);
/* Read the mount records back; jobs wait until this is done. */
void volmgr_start(struct volmgr *vm);
/* Forget everything; mounts stay. Callbacks do not run after this. */
void volmgr_free(struct volmgr *vm);

/* Claim, stage, publish and bind every volume of a (it must outlive
 * the job). Idempotent: what is in place already is kept. group: the
 * allocation's gid (0: none), the mount group of every volume request
 * that names none; a node plugin that advertises VOLUME_MOUNT_GROUP gets
 * it at stage and publish, and with any other plugin the volume's
 * ownership is the plugin's (said at stage time). */
void volmgr_mount(struct volmgr *vm, const struct alloc *a, gid_t group,
    volmgr_cb cb, void *arg);
/* Take back every volume the alloc holds; a may be NULL when only the
 * records know the alloc (after a restart), then its binds are left to
 * the mounter's CleanupAlloc. */
void volmgr_unmount(struct volmgr *vm, const char *alloc,
    const struct alloc *a, volmgr_cb cb, void *arg);
/* Calls fn for every alloc that holds a mount record. */
void volmgr_each_alloc(struct volmgr *vm, void (*fn)(const char *alloc,
    void *arg), void *arg);
bool volmgr_ready(const struct volmgr *vm);
/* A node instance of plugin came up healthy after a (re)registration:
 * its mounts are checked, and dead ones dealt with as each volume's
 * on_plugin_restart says (volmgr_recover.c). */
void volmgr_plugin_up(struct volmgr *vm, const char *plugin);
/* Does any alloc hold a volume of this plugin (or a record of one)? */
bool volmgr_uses_plugin(struct volmgr *vm, const char *plugin);
/* fn for each publication (or record of one) of plugin's volumes. */
void volmgr_each_pub_of(struct volmgr *vm, const char *plugin,
    void (*fn)(const char *ns, const char *vol, const char *alloc,
    void *arg), void *arg);
/* What is on this node now, for the metrics. */
struct volmgr_counts {
	size_t in_use;		/* volumes some alloc holds (a record) */
	size_t staged;		/* volumes staged, each counted once */
	size_t published;	/* publications: one per alloc and usage */
};
void volmgr_counts(const struct volmgr *vm, struct volmgr_counts *c);

/*
 * A volume's usage and condition, as its node plugin last said them
 * (NodeGetVolumeStats). A part the plugin did not report is not known:
 * "not reported", never zeros. The strings are the manager's: valid
 * until the event loop runs again.
 */
struct volmgr_stats {
	const char *ns, *vol, *plugin;
	bool answered;			/* a call has succeeded */
	bool bytes_known, inodes_known, condition_known;
	int64_t bytes_used, bytes_available, bytes_total;
	int64_t inodes_used, inodes_free, inodes_total;
	bool abnormal;
	const char *message;		/* the condition's; "" none */
	const char *error;		/* why the last call failed; "" */
	int64_t age_ms;			/* since the last answer */
	uint64_t calls, skipped;	/* made; not made (one was out) */
};
/* The volume's, or false when it is neither staged nor published here. */
bool volmgr_stats_get(struct volmgr *vm, const char *ns, const char *vol,
    struct volmgr_stats *out);
/* fn for every volume staged or published here, in no set order. */
void volmgr_stats_each(struct volmgr *vm, void (*fn)(
    const struct volmgr_stats *s, void *arg), void *arg);

/*
 * Why this node's plugin cannot take volume v with that access mode (a
 * CSI 1.5 mode without SINGLE_NODE_MULTI_WRITER, an accessible topology
 * the node's does not match), into why: true. False when it can, or when
 * the plugin has no healthy node instance to ask yet. The mount checks
 * the same, and waits while the plugin is at its max_volumes_per_node.
 */
bool volmgr_refuses(struct volmgr *vm, const Berth__Volume *v,
    Berth__AccessMode access, char *why, size_t n);

/* One CreateVolume parameter, passed to the plugin as is. */
struct volmgr_param {
	const char *key, *value;
};

/* One topology: key = value segments, as CSI's Topology. */
struct volmgr_topology {
	const struct volmgr_param *seg;
	size_t nseg;
};

/* An operator's volume. */
struct volmgr_spec {
	const char *ns, *id, *plugin;
	const char *external_id;	/* register: the provider's id */
	Berth__AccessMode access;
	Berth__AttachmentMode attachment;
	const char *fs_type;		/* NULL: none asked */
	/* "remount", "restart_tasks", "none"; NULL: the default
	 * (remount; volmgr_recover.c) */
	const char *on_plugin_restart;
	char *const *flags;
	size_t nflags;
	int64_t capacity_min;		/* create, expand: bytes, 0 none */
	int64_t capacity_max;		/* expand: bytes, 0 none */
	const struct volmgr_param *params;	/* create */
	size_t nparams;
	const struct volmgr_param *context;	/* register: the context */
	size_t ncontext;
	/* The secrets the plugin's calls get, by reference: key the call
	 * ("create", "stage", ...), value the secret's name. Kept with
	 * the volume; the values are read from files at each call. */
	const struct volmgr_param *secrets;
	size_t nsecrets;
	/* create: the accessibility requirements CreateVolume gets (CSI's
	 * requisite and preferred), kept with the volume with the
	 * accessible_topology the plugin answers (accessible). register:
	 * accessible, where the volume can be reached; none: anywhere. */
	const struct volmgr_topology *requisite, *preferred, *accessible;
	size_t nrequisite, npreferred, naccessible;
	/* create: the plugin's snapshot to make the volume from (CSI's
	 * volume_content_source), kept with the volume; NULL: none */
	const char *snapshot_id;
};

/*
 * Register an existing volume, with its mount options and context (both
 * kept and passed at stage and publish; one volume of the provider has
 * one id): with a controller service, its ValidateVolumeCapabilities
 * must not refuse (an absent `confirmed` is
 * accepted, a present one must match every requested capability).
 */
void volmgr_register(struct volmgr *vm, const struct volmgr_spec *s,
    volmgr_cb cb, void *arg);
/* CreateVolume on the plugin's controller, then register the result. */
void volmgr_create(struct volmgr *vm, const struct volmgr_spec *s,
    volmgr_cb cb, void *arg);
/* Refused while claimed; DeleteVolume when the controller can. */
void volmgr_delete(struct volmgr *vm, const char *ns, const char *id,
    volmgr_cb cb, void *arg);
/* Expand to at least min_bytes (at most max_bytes, 0 no bound):
 * volmgr_expand.c says how; refused while claimed when the plugin
 * expands only offline. */
void volmgr_expand(struct volmgr *vm, const char *ns, const char *id,
    int64_t min_bytes, int64_t max_bytes, volmgr_cb cb, void *arg);

/* One snapshot, as its plugin said it: ids are the plugin's. */
struct volmgr_snapshot {
	char *id, *source, *plugin;
	int64_t size_bytes;		/* 0: not said */
	int64_t created_sec;		/* creation_time, Unix */
	int32_t created_nsec;
	bool ready;			/* usable as a content source */
};
/* Filled by the calls below before their cb runs; the caller's to
 * free with volmgr_snapshots_free() (it must outlive the call). */
struct volmgr_snapshots {
	struct volmgr_snapshot *v;
	size_t n;
};
void volmgr_snapshots_free(struct volmgr_snapshots *s);
/* Snapshots through the volume's plugin's controller (volmgr_snapshot.c
 * says how): a snapshot of volume ns/vol named name (out: it), one
 * deleted by its id, or the volume's listed; with vol NULL, every
 * snapshot of plugin. */
void volmgr_snapshot_create(struct volmgr *vm, const char *ns,
    const char *vol, const char *name, struct volmgr_snapshots *out,
    volmgr_cb cb, void *arg);
void volmgr_snapshot_delete(struct volmgr *vm, const char *ns,
    const char *vol, const char *snapshot_id, volmgr_cb cb, void *arg);
void volmgr_snapshot_list(struct volmgr *vm, const char *ns,
    const char *vol, const char *plugin, struct volmgr_snapshots *out,
    volmgr_cb cb, void *arg);

#endif
