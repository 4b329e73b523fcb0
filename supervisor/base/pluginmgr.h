/*
 * pluginmgr.h: the plugin-manager pattern that the driver manager and the
 * device manager share.
 *
 * A manager holds one instance manager per plugin. Each plugin is a C
 * vtable (struct plugin_ops): start() opens its fingerprint stream, the
 * plugin then reports fingerprints with plugin_fingerprint() as often as
 * it likes and the manager keeps the latest; stats() (optional) opens a
 * stats stream once the plugin is healthy; shutdown() closes both. A
 * plugin whose start fails, or whose stream ends with plugin_failed(),
 * is shut down and started again after a backoff that doubles from
 * retry_initial_ms up to retry_max_ms (a healthy fingerprint resets it);
 * a stats stream that fails is retried the same way on its own backoff.
 * Shutdown is checked before every retry: once pluginmgr_shutdown() ran,
 * no plugin is started again and no timer is left pending.
 *
 * Health is one of undetected, unhealthy, healthy. A plugin that never
 * fingerprinted is undetected, and a failure does not make it detected;
 * one that was detected and then fails is unhealthy. A plugin that the
 * block list names, or that a non-empty allow list does not, is blocked:
 * never started, and listed as such. Whenever any plugin's state changes,
 * one line lists every plugin of the manager with its state:
 *
 *	drivers: exec=healthy privileged=undetected
 *
 * Everything runs on the caller's event_base; no threads. Must not: call
 * a plugin back from inside one of its own calls into the manager (every
 * reaction to a report is deferred to the next turn of the loop).
 */
#ifndef BERTH_PLUGINMGR_H
#define BERTH_PLUGINMGR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

enum plugin_state {
	PLUGIN_UNDETECTED,
	PLUGIN_UNHEALTHY,
	PLUGIN_HEALTHY,
	PLUGIN_BLOCKED,		/* by the allow or block list; never started */
};

struct plugin;
struct pluginmgr;

struct plugin_ops {
	/*
	 * Open the fingerprint stream: 0 once it runs (reports may follow
	 * at once or later), or -1 after the plugin cleaned up after itself
	 * (a reason given with plugin_failed() is kept, else "start
	 * failed").
	 */
	int (*start)(struct plugin *p);
	/* Optional: open the stats stream, 0 or -1 as start(). */
	int (*stats)(struct plugin *p);
	/* Close every stream; called once for each start() that returned 0. */
	void (*shutdown)(struct plugin *p);
	/* Optional: free a fingerprint's or a stats report's data. */
	void (*fp_free)(void *data);
	void (*stats_free)(void *data);
};

/* What the owner hears about, after the manager stored it. */
enum plugin_event {
	PLUGIN_EV_FINGERPRINT,	/* a new fingerprint (and maybe state) */
	PLUGIN_EV_STATE,	/* the state changed without a fingerprint */
	PLUGIN_EV_STATS,	/* a new stats report */
};

struct pluginmgr_params {
	const char *name;		/* "drivers": the log lines' prefix */
	int64_t retry_initial_ms;	/* plugin_retry_initial_ms */
	int64_t retry_max_ms;		/* plugin_retry_max_ms */
	char *const *allow;		/* NULL-terminated; NULL or empty: all */
	char *const *block;		/* NULL-terminated; NULL: none */
	/* Optional: called after every report and state change. */
	void (*changed)(struct plugin *p, enum plugin_event ev, void *arg);
	void *arg;
};

struct pluginmgr *pluginmgr_new(struct event_base *base,
    const struct pluginmgr_params *params);
/*
 * name is copied; ops and arg must outlive the manager. Never NULL.
 * Added after pluginmgr_start(), it is started (or blocked) at once.
 */
struct plugin *pluginmgr_add(struct pluginmgr *m, const char *name,
    const struct plugin_ops *ops, void *arg);
/* Start every plugin that is not blocked; logs the states once. */
void pluginmgr_start(struct pluginmgr *m);
/* Shut every running plugin down and cancel every retry; idempotent. */
void pluginmgr_shutdown(struct pluginmgr *m);
/* Shuts down first. */
void pluginmgr_free(struct pluginmgr *m);

/* Would this name be started, given the allow and block lists? */
bool pluginmgr_allowed(const struct pluginmgr *m, const char *name);
struct plugin *pluginmgr_find(struct pluginmgr *m, const char *name);
/* In the order they were added; NULL at the end. */
struct plugin *pluginmgr_first(struct pluginmgr *m);
struct plugin *pluginmgr_next(struct plugin *p);
/* "drivers: exec=healthy privileged=undetected", as logged. */
void pluginmgr_states(const struct pluginmgr *m, char *buf, size_t len);

/* The plugin's side: its stream's reports. */
void plugin_fingerprint(struct plugin *p, enum plugin_state health,
    const char *desc, void *data);
void plugin_failed(struct plugin *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void plugin_stats(struct plugin *p, void *data);
void plugin_stats_failed(struct plugin *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Accessors. */
const char *plugin_name(const struct plugin *p);
void *plugin_arg(const struct plugin *p);
struct pluginmgr *plugin_manager(const struct plugin *p);
enum plugin_state plugin_get_state(const struct plugin *p);
const char *plugin_state_name(enum plugin_state s);
/* The latest fingerprint's (or failure's) description; never NULL. */
const char *plugin_desc(const struct plugin *p);
/* The latest fingerprint's and stats report's data, or NULL. */
void *plugin_fp_data(const struct plugin *p);
void *plugin_stats_data(const struct plugin *p);
/* How many times start() was called, and the wait before the last one. */
unsigned plugin_starts(const struct plugin *p);
int64_t plugin_last_backoff_ms(const struct plugin *p);
/* The same for the stats stream. */
unsigned plugin_stats_starts(const struct plugin *p);
int64_t plugin_stats_last_backoff_ms(const struct plugin *p);

#endif
