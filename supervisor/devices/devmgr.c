/*
 * devmgr.c: the device manager (see devmgr.h): device plugins run as
 * pluginmgr instances, a catalogue per plugin, and reservations.
 *
 * Owns: the fingerprint and stats timers of each device plugin, and the
 * catalogue (the latest fingerprint plus the devices that vanished from
 * it). Must not: let a reservation name a device the catalogue does not
 * hold as present and healthy, or one the plugin no longer sees.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "dev_sysfs.h"
#include "devmgr.h"
#include "log.h"
#include "xalloc.h"

#define RESERVE_IDS_MAX 64
/* Vanished devices kept per plugin: a device that changes its strings at
 * every plug-in must not grow the catalogue without end. */
#define GONE_MAX 256

struct devplug {
	struct devmgr *dm;
	const struct devplugin *dp;
	void *state;
	struct plugin *p;
	struct event *fp_timer, *stats_timer;
	struct dev_groups cat;
	TAILQ_ENTRY(devplug) entry;
};

struct devmgr {
	struct event_base *base;
	struct pluginmgr *pm;
	int64_t fp_ms, stats_ms;
	TAILQ_HEAD(, devplug) plugs;
};

static void
arm(struct event *ev, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(ev, &tv);
}

static void
free_groups(void *data)
{
	dev_groups_free(data);
	free(data);
}

static void
free_stats(void *data)
{
	dev_stats_free(data);
	free(data);
}

/* Keep a vanished device in the next catalogue, marked gone. */
static void
keep_gone(struct devplug *dpl, struct dev_groups *next,
    const struct dev_group *og, const struct dev_device *od)
{
	struct dev_group *g;
	struct dev_device *d;

	if (!od->gone)
		log_warnx("devices: %s: %s device %s (%s, %s) disappeared; it "
		    "can no longer be reserved", dpl->dp->name, og->type,
		    od->id, og->vendor, og->name);
	g = dev_groups_add(next, og->vendor, og->type, og->name);
	d = dev_group_add_device(g, od->id);
	*d = *od;
	d->gone = true;
	d->healthy = false;
	d->ncounters = 0;
	snprintf(d->health, sizeof(d->health), "disappeared");
}

/*
 * The new catalogue: the fresh fingerprint, the counters the old one had
 * for devices still there, and the devices that vanished, kept as gone.
 */
static void
merge(struct devplug *dpl, const struct dev_groups *fresh)
{
	const struct dev_group *og, *ng;
	const struct dev_device *od;
	struct dev_device *nd;
	struct dev_groups next;
	size_t i, j, ngone = 0;

	dev_groups_copy(&next, fresh);
	for (i = 0; i < dpl->cat.n; i++) {
		og = &dpl->cat.g[i];
		ng = dev_groups_find(&next, og->vendor, og->type, og->name);
		for (j = 0; j < og->ndevs; j++) {
			od = &og->devs[j];
			nd = ng != NULL ? dev_group_find_device(ng, od->id) :
			    NULL;
			if (nd != NULL && !nd->gone) {
				if (od->gone)
					log_info("devices: %s: %s device %s "
					    "(%s, %s) is back", dpl->dp->name,
					    og->type, od->id, og->vendor,
					    og->name);
				memcpy(nd->counters, od->counters,
				    sizeof(nd->counters));
				nd->ncounters = od->ncounters;
			} else if (ngone++ >= GONE_MAX) {
				log_debug("devices: %s: forgetting %s device "
				    "%s: too many gone", dpl->dp->name,
				    og->type, od->id);
			} else {
				keep_gone(dpl, &next, og, od);
			}
			/* keep_gone may have moved next's groups. */
			ng = dev_groups_find(&next, og->vendor, og->type,
			    og->name);
		}
	}
	for (i = 0; i < fresh->n; i++) {
		og = dev_groups_find(&dpl->cat, fresh->g[i].vendor,
		    fresh->g[i].type, fresh->g[i].name);
		for (j = 0; j < fresh->g[i].ndevs; j++)
			if (og == NULL || dev_group_find_device(og,
			    fresh->g[i].devs[j].id) == NULL)
				log_info("devices: %s: found %s device %s "
				    "(%s, %s)", dpl->dp->name,
				    fresh->g[i].type, fresh->g[i].devs[j].id,
				    fresh->g[i].vendor, fresh->g[i].name);
	}
	for (i = 0; i < next.n; i++)
		next.g[i].plugin = dpl->dp->name;
	dev_groups_free(&dpl->cat);
	dpl->cat = next;
}

static void
on_fp_timer(evutil_socket_t fd, short ev, void *arg)
{
	struct devplug *dpl = arg;
	struct dev_groups *gs;
	char err[256], desc[128];
	size_t i, n = 0;

	(void)fd;
	(void)ev;
	err[0] = '\0';
	gs = xcalloc(1, sizeof(*gs));
	if (dpl->dp->fingerprint(dpl->state, gs, err, sizeof(err)) < 0) {
		free(gs);
		plugin_failed(dpl->p, "fingerprint: %s", err);
		return;
	}
	merge(dpl, gs);
	for (i = 0; i < gs->n; i++)
		n += gs->g[i].ndevs;
	snprintf(desc, sizeof(desc), "%zu devices in %zu groups", n, gs->n);
	arm(dpl->fp_timer, dpl->dm->fp_ms);
	plugin_fingerprint(dpl->p, n > 0 ? PLUGIN_HEALTHY : PLUGIN_UNDETECTED,
	    n > 0 ? desc : "no devices found", gs);
}

static struct dev_device *
cat_device(struct devplug *dpl, const char *type, const char *id)
{
	struct dev_device *d;
	size_t i;

	for (i = 0; i < dpl->cat.n; i++)
		if (strcmp(dpl->cat.g[i].type, type) == 0 &&
		    (d = dev_group_find_device(&dpl->cat.g[i], id)) != NULL &&
		    !d->gone)
			return d;
	return NULL;
}

static void
on_stats_timer(evutil_socket_t fd, short ev, void *arg)
{
	struct devplug *dpl = arg;
	struct dev_stats *st;
	struct dev_device *d;
	char err[256];
	size_t i, j;

	(void)fd;
	(void)ev;
	err[0] = '\0';
	st = xcalloc(1, sizeof(*st));
	/* On failure the stream stops here; the manager restarts it. */
	if (dpl->dp->stats(dpl->state, st, err, sizeof(err)) < 0) {
		free(st);
		plugin_stats_failed(dpl->p, "%s", err);
		return;
	}
	/* Counters are the latest report's: a device it left out has none. */
	for (i = 0; i < dpl->cat.n; i++)
		for (j = 0; j < dpl->cat.g[i].ndevs; j++)
			dpl->cat.g[i].devs[j].ncounters = 0;
	for (i = 0; i < st->n; i++) {
		if ((d = cat_device(dpl, st->s[i].type, st->s[i].id)) == NULL)
			continue;
		memcpy(d->counters, st->s[i].counters, sizeof(d->counters));
		d->ncounters = st->s[i].ncounters;
	}
	arm(dpl->stats_timer, dpl->dm->stats_ms);
	plugin_stats(dpl->p, st);
}

static int
dp_start(struct plugin *p)
{
	struct devplug *dpl = plugin_arg(p);

	arm(dpl->fp_timer, 0);
	return 0;
}

static int
dp_stats(struct plugin *p)
{
	struct devplug *dpl = plugin_arg(p);

	arm(dpl->stats_timer, 0);
	return 0;
}

static void
dp_shutdown(struct plugin *p)
{
	struct devplug *dpl = plugin_arg(p);

	evtimer_del(dpl->fp_timer);
	evtimer_del(dpl->stats_timer);
}

static const struct plugin_ops dp_ops = {
	.start = dp_start,
	.stats = dp_stats,
	.shutdown = dp_shutdown,
	.fp_free = free_groups,
	.stats_free = free_stats,
};

static const struct plugin_ops dp_ops_nostats = {
	.start = dp_start,
	.shutdown = dp_shutdown,
	.fp_free = free_groups,
};

void
devmgr_add(struct devmgr *dm, const struct devplugin *dp, void *state)
{
	struct devplug *dpl;

	dpl = xcalloc(1, sizeof(*dpl));
	dpl->dm = dm;
	dpl->dp = dp;
	dpl->state = state;
	TAILQ_INSERT_TAIL(&dm->plugs, dpl, entry);
	dpl->fp_timer = xnonnull(evtimer_new(dm->base, on_fp_timer, dpl),
	    "devmgr_add: evtimer_new");
	dpl->stats_timer = xnonnull(evtimer_new(dm->base, on_stats_timer,
	    dpl), "devmgr_add: evtimer_new");
	dpl->p = pluginmgr_add(dm->pm, dp->name, dp->stats != NULL ?
	    &dp_ops : &dp_ops_nostats, dpl);
}

struct devmgr *
devmgr_new(struct event_base *base, const struct berth_config *cfg)
{
	struct pluginmgr_params prm = {
		.name = "devices",
		.retry_initial_ms = cfg->plugin_retry_initial_ms,
		.retry_max_ms = cfg->plugin_retry_max_ms,
	};
	struct devmgr *dm;

	dm = xcalloc(1, sizeof(*dm));
	dm->base = base;
	dm->fp_ms = cfg->plugin_heartbeat_ms;
	dm->stats_ms = cfg->device_stats_interval_ms;
	TAILQ_INIT(&dm->plugs);
	dm->pm = pluginmgr_new(base, &prm);
	devmgr_add(dm, &dev_sysfs_plugin, dev_sysfs_new(cfg->sysfs_root));
	return dm;
}

void
devmgr_start(struct devmgr *dm)
{
	pluginmgr_start(dm->pm);
}

void
devmgr_refresh(struct devmgr *dm)
{
	struct devplug *dpl;

	/* Only a running stream has its timer pending. */
	TAILQ_FOREACH(dpl, &dm->plugs, entry)
		if (evtimer_pending(dpl->fp_timer, NULL))
			arm(dpl->fp_timer, 0);
}

void
devmgr_free(struct devmgr *dm)
{
	struct devplug *dpl;

	if (dm == NULL)
		return;
	pluginmgr_free(dm->pm);
	while ((dpl = TAILQ_FIRST(&dm->plugs)) != NULL) {
		TAILQ_REMOVE(&dm->plugs, dpl, entry);
		event_free(dpl->fp_timer);
		event_free(dpl->stats_timer);
		dev_groups_free(&dpl->cat);
		dpl->dp->free(dpl->state);
		free(dpl);
	}
	free(dm);
}

static struct devplug *
find_group(const struct devmgr *dm, const char *vendor, const char *type,
    const char *name, struct dev_group **g)
{
	struct devplug *dpl;

	TAILQ_FOREACH(dpl, &dm->plugs, entry)
		if ((*g = dev_groups_find(&dpl->cat, vendor, type, name)) !=
		    NULL)
			return dpl;
	return NULL;
}

int
devmgr_reserve(struct devmgr *dm, const char *vendor, const char *type,
    const char *name, const char *const *ids, size_t nids,
    struct dev_reservation *out, char *err, size_t errlen)
{
	const struct dev_device *devs[RESERVE_IDS_MAX];
	struct dev_device *d;
	struct devplug *dpl;
	struct dev_group *g;
	size_t i, j;
	int r;

	memset(out, 0, sizeof(*out));
	if ((dpl = find_group(dm, vendor, type, name, &g)) == NULL) {
		snprintf(err, errlen, "no device group %s/%s/%s", vendor, type,
		    name);
		return -ENOENT;
	}
	if (plugin_get_state(dpl->p) != PLUGIN_HEALTHY) {
		snprintf(err, errlen, "device plugin %s is %s (%s); try again "
		    "once it is healthy", dpl->dp->name,
		    plugin_state_name(plugin_get_state(dpl->p)),
		    plugin_desc(dpl->p));
		return -EAGAIN;
	}
	if (nids == 0 || nids > RESERVE_IDS_MAX) {
		snprintf(err, errlen, "a reservation names 1 to %d devices, "
		    "not %zu", RESERVE_IDS_MAX, nids);
		return -EINVAL;
	}
	for (i = 0; i < nids; i++) {
		for (j = 0; j < i; j++)
			if (strcmp(ids[i], ids[j]) == 0) {
				snprintf(err, errlen, "device %.64s is named "
				    "twice", ids[i]);
				return -EINVAL;
			}
		if ((d = dev_group_find_device(g, ids[i])) == NULL) {
			snprintf(err, errlen, "no device %.64s in group "
			    "%s/%s/%s", ids[i], vendor, type, name);
			return -ENOENT;
		}
		if (d->gone) {
			snprintf(err, errlen, "device %s of group %s/%s/%s "
			    "disappeared; it cannot be reserved", d->id,
			    vendor, type, name);
			return -ENODEV;
		}
		if (!d->healthy) {
			snprintf(err, errlen, "device %s of group %s/%s/%s is "
			    "unhealthy: %s", d->id, vendor, type, name,
			    d->health);
			return -EBUSY;
		}
		devs[i] = d;
	}
	r = dpl->dp->reserve(dpl->state, g, devs, nids, out, err, errlen);
	/* Vanished since the last fingerprint: catch up at once. */
	if (r == -ENODEV)
		devmgr_refresh(dm);
	return r;
}

struct pluginmgr *
devmgr_plugins(struct devmgr *dm)
{
	return dm->pm;
}

size_t
devmgr_group_count(const struct devmgr *dm)
{
	const struct devplug *dpl;
	size_t n = 0;

	TAILQ_FOREACH(dpl, &dm->plugs, entry)
		n += dpl->cat.n;
	return n;
}

const struct dev_group *
devmgr_group_at(const struct devmgr *dm, size_t i)
{
	const struct devplug *dpl;

	TAILQ_FOREACH(dpl, &dm->plugs, entry) {
		if (i < dpl->cat.n)
			return &dpl->cat.g[i];
		i -= dpl->cat.n;
	}
	return NULL;
}

const struct dev_group *
devmgr_find_group(const struct devmgr *dm, const char *vendor,
    const char *type, const char *name)
{
	struct dev_group *g;

	return find_group(dm, vendor, type, name, &g) != NULL ? g : NULL;
}
