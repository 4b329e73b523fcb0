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
#include "registry_client.h"

/* How long a helper may take to answer the hello, a ping, or to exit. */
#define SUPERVISOR_HELPER_TIMEOUT_MS 5000
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

/* The supervisor's link to one helper process. */
struct peer {
	const char *name;		/* "berth-mounter" */
	Berth__Role role;
	pid_t pid;
	int status;			/* wait status once exited */
	int fd;				/* our end of its socket, until peer_start() */
	bool spawned;			/* our child (spawn mode), reaped by us */
	bool exited, ready, asked_to_stop;
	struct chan *chan;
	struct chan_ops ops;
	struct supervisor *sv;
	uint64_t nonce;
	/* berth-registry's: where its event notices go (registry_client.c). */
	struct regclient *client;
	/* berth-mounter's: every request to it (mounter_client.c). */
	struct mclient *mclient;
};

struct supervisor {
	struct event_base *base;
	struct berth_config cfg;
	struct peer mounter, registry;
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
	int exit_code;
};

/* peers.c */
int peer_start(struct supervisor *sv, struct peer *p, int fd);
void peer_ping_all(struct supervisor *sv);
void peer_ask_stop(struct peer *p, const char *reason);
void peer_reaped(struct peer *p, int status);
/* It is gone ("exited with status 1", "connection closed"). */
void peer_ended(struct peer *p, const char *how);

/* service_mode.c: connect to the helpers' sockets, or exit. */
void service_mode_start(struct supervisor *sv);

/* supervisor.c */
void supervisor_stop(struct supervisor *sv, int exit_code, const char *why);
void supervisor_peer_ready(struct supervisor *sv);
void supervisor_stop_next(struct supervisor *sv);

#endif
