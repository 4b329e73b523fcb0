/*
 * supervisor.h: berth-supervisor's shared state.
 */
#ifndef BERTH_SUPERVISOR_H
#define BERTH_SUPERVISOR_H

#include <stdbool.h>
#include <time.h>
#include <sys/types.h>

#include <event2/event.h>

#include "channel.h"
#include "config.h"
#include "mounter_client.h"
#include "peers.h"
#include "registry_client.h"

#define SUPERVISOR_PING_INTERVAL_S 5

struct supervisor;
struct csi_client;
struct watcher;
struct taskdrv;
struct allocs;
struct csimgr;
struct volmgr;
struct events;
struct api;
struct devmgr;
struct drivermgr;

#include "cgroup.h"

struct supervisor {
	struct event_base *base;
	struct berth_config cfg;
	struct peer mounter, registry;
	struct peer_hooks peer_hooks;	/* theirs, with us as ctx */
	struct csi_client *csi;		/* every plugin's gRPC connections */
	struct watcher *watcher;	/* the one inotify descriptor */
	struct taskdrv *drv;		/* plugin tasks' processes */
	struct drivermgr *drivers;	/* the drivers' health, task events */
	struct allocs *allocs;		/* allocations and their tasks */
	struct csimgr *csimgr;		/* the active plugins, fingerprinted */
	struct volmgr *volmgr;		/* claims, stage, publish, binds */
	struct events *events;		/* the event log the API serves */
	struct api *api;		/* the operator API on api.sock */
	struct timespec started;	/* CLOCK_MONOTONIC, for the uptime */
	struct devmgr *devmgr;		/* devices, their stats, reservations */
	uid_t uid;			/* after the drop: our user */
	gid_t gid;
	struct event *sigterm, *sigint, *sigchld, *ping, *stop_timer;
	bool stopping;
	bool service_mode;		/* helpers reached through socket units */
	struct cgroup_mounts cgroups;	/* where the hierarchies are */
	/* Where tasks' cgroups go: cfg.cgroup_parent in spawn mode, the
	 * "tasks" beside our own leaf in service mode; "" if unknown. */
	char cgroup_parent[CGROUP_PATH_MAX];
	int exit_code;
};

/* supervisor.c */
void supervisor_stop(struct supervisor *sv, int exit_code, const char *why);

#endif
