/*
 * csimanager.h: the CSI manager. It follows the registry's plugin events
 * live (and lists every plugin each plugin_resync as a backstop) and runs
 * one instance manager per active plugin, by type and name: when a newer
 * alloc registers, or the active one deregisters and an older one is
 * promoted, the instance manager switches to it at once. Each instance
 * manager fingerprints its plugin (GetPluginCapabilities; NodeGetInfo and
 * NodeGetCapabilities for a node plugin; ControllerGetCapabilities for a
 * controller) and keeps a health description an operator can read.
 * The plugin supervisors' heartbeats count too: an alloc whose heartbeat
 * streak failed is unhealthy, whatever its last fingerprint said, until
 * its heartbeat passes and a new fingerprint does.
 * Optional fields may be absent and enums may hold values we do not know:
 * neither is an error.
 *
 * Must not: start or stop plugins, or register them (the plugin
 * supervisors do).
 */
#ifndef BERTH_CSIMANAGER_H
#define BERTH_CSIMANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "registry.pb-c.h"

struct event_base;
struct regclient;
struct csi_client;
struct events;
struct csimgr;
struct csi_inst;
struct csi_conn;

struct csi_fingerprint {
	bool done;			/* every call answered */
	bool healthy;
	char health[1400];		/* "healthy: ..." or why not */
	char provider[128], version[64];
	bool controller_service, accessibility;
	/* node */
	char node_id[256];
	int64_t max_volumes;		/* 0: no limit */
	char topology[512];		/* "key=value,key=value" */
	bool stage_unstage, volume_stats;
	bool volume_condition;		/* stats come with a condition */
	bool mount_group;		/* VOLUME_MOUNT_GROUP: takes a gid */
	/* SINGLE_NODE_MULTI_WRITER: takes the two CSI 1.5 access modes */
	bool single_node_multi_writer;
	/* controller */
	bool create_delete, publish_unpublish;
	/* EXPAND_VOLUME of this instance's service (controller or node),
	 * and the plugin's VolumeExpansion (ONLINE, OFFLINE, or UNKNOWN:
	 * none) */
	bool expand;
	int expansion;
	/* controller: CREATE_DELETE_SNAPSHOT, LIST_SNAPSHOTS */
	bool snapshots, list_snapshots;
};

/*
 * What the CSI manager uses, all owned by the caller and outliving it:
 * the loop, the registry link it follows, the CSI client it fingerprints
 * with, the event log it reports health changes to, and how often it
 * lists every plugin as a backstop (plugin_resync).
 */
struct csimgr_deps {
	struct event_base *base;
	struct regclient *registry;
	struct csi_client *csi;
	struct events *events;
	int64_t resync_ms;
};

/* The deps are copied. */
struct csimgr *csimgr_new(const struct csimgr_deps *d);
void csimgr_start(struct csimgr *m);
void csimgr_free(struct csimgr *m);

/*
 * The heartbeat of plugin name's alloc turned unhealthy (why says how)
 * or healthy again (why unused); also for an alloc not followed yet, so
 * that a promotion to it does not show it healthy.
 */
void csimgr_heartbeat(struct csimgr *m, const char *name, const char *alloc,
    bool healthy, const char *why);

/*
 * fn(ctx, name) when a node instance of plugin name comes up healthy
 * after it registered (a start, a restart, a switch to another alloc):
 * its volumes' mounts may have died with the one before.
 */
void csimgr_on_node_up(struct csimgr *m, void (*fn)(void *ctx,
    const char *name), void *ctx);

/* The active instance of a plugin, or NULL. */
struct csi_inst *csimgr_find(struct csimgr *m, Berth__PluginType type,
    const char *name);
const char *csi_inst_alloc(const struct csi_inst *in);
struct csi_conn *csi_inst_conn(const struct csi_inst *in);
const struct csi_fingerprint *csi_inst_fingerprint(const struct csi_inst *in);
/* Every active instance, for readers (the API): NULL ends. The list
 * changes from the event loop only, so a walk in one callback is safe. */
struct csi_inst *csimgr_first(struct csimgr *m);
struct csi_inst *csimgr_next(struct csi_inst *in);
const char *csi_inst_name(const struct csi_inst *in);
Berth__PluginType csi_inst_type(const struct csi_inst *in);
const char *csi_inst_type_name(const struct csi_inst *in);	/* "node" */
const char *csi_inst_endpoint(const struct csi_inst *in);

#endif
