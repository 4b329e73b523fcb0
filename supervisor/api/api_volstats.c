/*
 * api_volstats.c: each volume's usage and condition, as its node plugin
 * last said them (volmgr_stats()), in GET /v1/volume/<id> ("stats") and
 * as gauges in GET /v1/metrics named after kubelet's
 * kubelet_volume_stats_* (berth_volume_stats_capacity_bytes, ...),
 * labelled volume, namespace and plugin. A part the plugin does not
 * report is "not reported" in JSON and has no series: never a zero.
 * Must not: ask anything of a plugin (the volume manager does).
 */
#include "api_int.h"
#include "metrics.h"
#include "volmgr.h"

static json_t *
usage_json(bool known, const char *free_key, int64_t used, int64_t free,
    int64_t total)
{
	if (!known)
		return api_pack("s", "not reported");
	return api_pack("{s:I, s:I, s:I}", "used", (json_int_t)used, free_key,
	    (json_int_t)free, "total", (json_int_t)total);
}

static json_t *
condition_json(const struct volmgr_stats *st)
{
	if (!st->condition_known)
		return api_pack("s", "not reported");
	return api_pack("{s:b, s:s}", "abnormal", st->abnormal, "message",
	    st->message);
}

/* The volume's "stats", or NULL when it is not in use on this node. */
json_t *
api_volume_stats(struct volmgr *vm, const char *ns, const char *id)
{
	struct volmgr_stats st;
	json_t *o;

	if (vm == NULL || !volmgr_stats_get(vm, ns, id, &st))
		return NULL;
	o = api_pack("{s:s, s:b, s:I, s:I}", "plugin", st.plugin, "answered",
	    st.answered, "calls", (json_int_t)st.calls, "skipped",
	    (json_int_t)st.skipped);
	if (o == NULL)
		return NULL;
	if (st.answered)
		api_set(o, "age_ms", api_pack("I", (json_int_t)st.age_ms));
	api_set(o, "bytes", usage_json(st.bytes_known, "available",
	    st.bytes_used, st.bytes_available, st.bytes_total));
	api_set(o, "inodes", usage_json(st.inodes_known, "free",
	    st.inodes_used, st.inodes_free, st.inodes_total));
	api_set(o, "condition", condition_json(&st));
	if (st.error[0] != '\0')
		api_set(o, "error", api_pack("s", st.error));
	return o;
}

/* ---- /v1/metrics ---- */

struct family {
	const char *name, *help;
};

/* kubelet's names, in berth's namespace, in this order. */
static const struct family families[] = {
	{ "berth_volume_stats_capacity_bytes", "A volume's capacity in bytes, "
	    "as its node plugin reports it." },
	{ "berth_volume_stats_available_bytes", "A volume's bytes available, "
	    "as its node plugin reports them." },
	{ "berth_volume_stats_used_bytes", "A volume's bytes used, as its "
	    "node plugin reports them." },
	{ "berth_volume_stats_inodes", "A volume's inodes in all, as its node "
	    "plugin reports them." },
	{ "berth_volume_stats_inodes_free", "A volume's inodes free, as its "
	    "node plugin reports them." },
	{ "berth_volume_stats_inodes_used", "A volume's inodes used, as its "
	    "node plugin reports them." },
	{ "berth_volume_stats_health_status_abnormal", "1 when a volume's node "
	    "plugin reports its condition abnormal, 0 normal." },
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

struct writing {
	struct evbuffer *out;
	size_t family;
};

static void
write_one(const struct volmgr_stats *st, void *arg)
{
	struct writing *w = arg;
	const char *labels[] = { "volume", st->vol, "namespace", st->ns,
		"plugin", st->plugin, NULL };
	const bool known[] = { st->bytes_known, st->bytes_known,
		st->bytes_known, st->inodes_known, st->inodes_known,
		st->inodes_known, st->condition_known };
	const double value[] = { (double)st->bytes_total,
		(double)st->bytes_available, (double)st->bytes_used,
		(double)st->inodes_total, (double)st->inodes_free,
		(double)st->inodes_used, st->abnormal ? 1 : 0 };

	if (known[w->family])
		metrics_line(w->out, families[w->family].name, labels,
		    value[w->family]);
}

void
api_volume_metrics(struct volmgr *vm, struct evbuffer *out)
{
	struct writing w = { out, 0 };

	for (w.family = 0; w.family < NFAMILIES; w.family++) {
		metrics_family(out, families[w.family].name, "gauge",
		    families[w.family].help);
		if (vm != NULL)
			volmgr_stats_each(vm, write_one, &w);
	}
}
