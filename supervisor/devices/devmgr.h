/*
 * devmgr.h: the device manager and the device plugin interface.
 *
 * A device plugin (struct devplugin) answers three questions, each in one
 * synchronous call: which devices are there (fingerprint: groups of
 * devices by vendor, type and name, with attributes), how busy are they
 * (stats: counters per device), and what does a task need to use some of
 * them (reserve: device nodes and environment). The manager turns each
 * plugin into a pluginmgr instance: it fingerprints every
 * plugin_heartbeat_ms (and at once on devmgr_refresh()), reads stats
 * every device_stats_interval_ms with the shared backoff on errors, and
 * keeps a catalogue per plugin in which a device that vanished from a
 * fingerprint stays, marked gone, so that an operator sees it and no task
 * can reserve it. The built-in plugin is dev_sysfs.c.
 *
 * Must not: hand a task anything the plugin did not just confirm (reserve
 * goes to the plugin, which checks the device is still there), or keep a
 * reservation: whoever reserves is the one who tracks it.
 */
#ifndef BERTH_DEVMGR_H
#define BERTH_DEVMGR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "config.h"
#include "pluginmgr.h"

#define DEV_ID_MAX 64
#define DEV_KEY_MAX 32
#define DEV_VALUE_MAX 128
#define DEV_ATTRS_MAX 16
#define DEV_COUNTERS_MAX 12

struct dev_attr {
	char key[DEV_KEY_MAX];
	char value[DEV_VALUE_MAX];
};

struct dev_counter {
	char key[DEV_KEY_MAX];
	uint64_t value;
};

struct dev_device {
	char id[DEV_ID_MAX];		/* "sda", "card0", "1-1.2" */
	bool healthy;
	bool gone;			/* in the catalogue only: vanished */
	char health[DEV_VALUE_MAX];	/* why not healthy, or "" */
	struct dev_attr attrs[DEV_ATTRS_MAX];
	size_t nattrs;
	/* In the catalogue only: the latest stats report's counters. */
	struct dev_counter counters[DEV_COUNTERS_MAX];
	size_t ncounters;
};

struct dev_group {
	char vendor[DEV_VALUE_MAX];	/* "ATA", "intel", "Logitech" */
	char type[DEV_KEY_MAX];		/* "block", "gpu", "usb" */
	char name[DEV_VALUE_MAX];	/* "Samsung SSD 860", "0x46a6" */
	const char *plugin;		/* in the catalogue: who reported it */
	struct dev_device *devs;
	size_t ndevs;
};

/* A fingerprint: every group a plugin sees now. */
struct dev_groups {
	struct dev_group *g;
	size_t n;
};

/* A stats report: counters per device, by type and id. */
struct dev_stat {
	char type[DEV_KEY_MAX];
	char id[DEV_ID_MAX];
	struct dev_counter counters[DEV_COUNTERS_MAX];
	size_t ncounters;
};

struct dev_stats {
	struct dev_stat *s;
	size_t n;
};

/* What a task needs: device nodes (same path on the host and in the task,
 * read-write) and environment entries ("KEY=VALUE"). */
struct dev_reservation {
	char **nodes;
	size_t nnodes;
	char **env;
	size_t nenv;
};

struct devplugin {
	const char *name;
	/* 0 with every group now in out, or -1 with err set. */
	int (*fingerprint)(void *state, struct dev_groups *out, char *err,
	    size_t errlen);
	/* Optional. 0 with counters in out, or -1 with err set. */
	int (*stats)(void *state, struct dev_stats *out, char *err,
	    size_t errlen);
	/*
	 * devs are the group's devices the task asked for, known present at
	 * the last fingerprint; -ENODEV when one vanished since, another
	 * -errno for any other refusal, with err set.
	 */
	int (*reserve)(void *state, const struct dev_group *g,
	    const struct dev_device *const *devs, size_t n,
	    struct dev_reservation *out, char *err, size_t errlen);
	void (*free)(void *state);
};

struct devmgr;

/* The built-in plugins from cfg (sysfs_root, intervals); never NULL. */
struct devmgr *devmgr_new(struct event_base *base,
    const struct berth_config *cfg);
/* Another plugin, before devmgr_start(); state is freed with it. */
void devmgr_add(struct devmgr *dm, const struct devplugin *dp, void *state);
void devmgr_start(struct devmgr *dm);
/* Fingerprint every running plugin at the next turn of the loop. */
void devmgr_refresh(struct devmgr *dm);
void devmgr_free(struct devmgr *dm);

/*
 * Reserve ids of the group (vendor, type, name): 0 with out filled (free
 * it with dev_reservation_free), or -errno with a reason in err: unknown
 * group, unknown id, a device that is gone or unhealthy, a plugin that is
 * not healthy.
 */
int devmgr_reserve(struct devmgr *dm, const char *vendor, const char *type,
    const char *name, const char *const *ids, size_t nids,
    struct dev_reservation *out, char *err, size_t errlen);

/* Read access for the operator API: the plugins and their states ... */
struct pluginmgr *devmgr_plugins(struct devmgr *dm);
/* ... and the catalogue, every plugin's groups, gone devices included. */
size_t devmgr_group_count(const struct devmgr *dm);
const struct dev_group *devmgr_group_at(const struct devmgr *dm, size_t i);
const struct dev_group *devmgr_find_group(const struct devmgr *dm,
    const char *vendor, const char *type, const char *name);

/* devgroup.c: building and freeing groups, stats and reservations. */
struct dev_group *dev_groups_add(struct dev_groups *gs, const char *vendor,
    const char *type, const char *name);
struct dev_group *dev_groups_find(const struct dev_groups *gs,
    const char *vendor, const char *type, const char *name);
struct dev_device *dev_group_add_device(struct dev_group *g, const char *id);
struct dev_device *dev_group_find_device(const struct dev_group *g,
    const char *id);
void dev_groups_copy(struct dev_groups *dst, const struct dev_groups *src);
void dev_groups_free(struct dev_groups *gs);
/* Set (or replace) an attribute; a full table drops it with -ENOSPC. */
int dev_attr_set(struct dev_device *d, const char *key, const char *value);
const char *dev_attr_get(const struct dev_device *d, const char *key);
struct dev_stat *dev_stats_add(struct dev_stats *st, const char *type,
    const char *id);
int dev_stat_set(struct dev_stat *s, const char *key, uint64_t value);
void dev_stats_free(struct dev_stats *st);
void dev_reservation_node(struct dev_reservation *r, const char *path);
void dev_reservation_env(struct dev_reservation *r, const char *key,
    const char *value);
void dev_reservation_free(struct dev_reservation *r);

#endif
