/*
 * plugin_supervisor.h: one per plugin task (a task with a csi_plugin
 * block). It probes the plugin's socket at once and then with a short,
 * growing backoff until the plugin is healthy or health_timeout passes
 * (then it asks for a restart); after the first healthy probe it reads
 * GetPluginInfo (a name is required) and registers the plugin (a monolith
 * as controller and as node); then it heartbeats on an interval and
 * reports a health change only after two probes agree, so one slow probe
 * does not flap; the CSI manager hears of it too. A socket older than
 * the task's launch is a dead run's leftover: not probed as the
 * plugin's, and not where its timing starts. It deregisters every type
 * it registered when the task stops or ends.
 *
 * Must not: start, stop or signal the task (the task runner does), or
 * fingerprint beyond GetPluginInfo (the CSI manager does).
 */
#ifndef BERTH_PLUGIN_SUPERVISOR_H
#define BERTH_PLUGIN_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct regclient;
struct csi_client;
struct csimgr;
struct watcher;
struct plugsup;

enum plugsup_type {
	PLUGSUP_NODE = 1,
	PLUGSUP_CONTROLLER = 2,
	PLUGSUP_MONOLITH = 3,		/* both */
};

struct plugsup_conf {
	const char *alloc, *task, *id;
	enum plugsup_type type;
	int64_t health_timeout_ms;
	int64_t heartbeat_ms;
	const char *socket;		/* absolute path of csi.sock */
};

/*
 * What a plugin supervisor uses, all owned by the caller and outliving
 * it: the loop, the registry link it registers on, the CSI client it
 * probes with, the inotify watcher for the socket's directory, and the
 * CSI manager it tells of heartbeat health changes (may be NULL).
 */
struct plugsup_deps {
	struct event_base *base;
	struct regclient *registry;
	struct csi_client *csi;
	struct watcher *watcher;
	struct csimgr *csimgr;
};

struct plugsup_ops {
	/* A task event: "PluginHealthy", "PluginUnhealthy", ... */
	void (*event)(void *arg, const char *type, const char *message);
	/* Not healthy within health_timeout: restart the task. */
	void (*restart)(void *arg, const char *why);
	/* The reported health changed (to persist it with the task). */
	void (*health)(void *arg, bool healthy);
};

/* Probe failures in a row before a healthy plugin is reported unhealthy. */
#define PLUGSUP_DOWN_AFTER 2
/* The first probes: from this backoff, growing by half, up to the cap. */
#define PLUGSUP_BACKOFF_FIRST_MS 10
#define PLUGSUP_BACKOFF_MAX_MS 500

/* NULL if the socket path is too long. deps is copied; ops is not. */
struct plugsup *plugsup_new(const struct plugsup_deps *deps,
    const struct plugsup_conf *conf, const struct plugsup_ops *ops,
    void *arg);
/* The task is about to be launched: a socket older than now is a dead
 * run's leftover. */
void plugsup_launching(struct plugsup *ps);
/*
 * The task runs: probe at once. adopted: it ran before a supervisor
 * restart, and was_healthy is the health last reported, so that adopting
 * a healthy plugin is not reported as a new event.
 */
void plugsup_start(struct plugsup *ps, bool adopted, bool was_healthy);
/*
 * Stop probing and deregister what was registered; done (may be NULL)
 * runs once that is finished, from the event loop.
 */
void plugsup_stop(struct plugsup *ps, void (*done)(void *arg), void *arg);
bool plugsup_healthy(const struct plugsup *ps);
/* Frees now, or once the calls still in flight have ended. */
void plugsup_free(struct plugsup *ps);
const char *plugsup_type_name(enum plugsup_type type);

#endif
