/*
 * api_node.c: what the node has: /v1/status, /v1/health, /v1/plugins,
 * /v1/plugin/<id>, /v1/drivers, /v1/devices and /v1/metrics.
 *
 * A plugin is named by its id (the csi_plugin block's); it has an active
 * instance per type (node, controller) that the CSI manager follows and
 * fingerprints, and plugin tasks in allocations that serve it. Must not:
 * call out (to the registry or a plugin): every answer is read from the
 * managers' state in this turn of the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "alloc.h"
#include "alloc_runner.h"
#include "api_int.h"
#include "cgroup.h"
#include "devmgr.h"
#include "drivermgr.h"
#include "csimanager.h"
#include "events.h"
#include "metrics.h"
#include "task_runner.h"

#ifndef BERTH_VERSION
#define BERTH_VERSION "unknown"
#endif

static json_t *
helper_json(const struct api_helper *h)
{
	return api_pack("{s:I, s:b, s:b}", "pid", (json_int_t)h->pid,
	    "ready", h->ready && !h->exited, "exited", h->exited);
}

struct counts {
	size_t allocs, tasks, running, plugins, healthy;
};

static void
count(const struct api_deps *d, struct counts *n)
{
	struct alloc_view v;
	struct csi_inst *in;
	size_t i, j;

	memset(n, 0, sizeof(*n));
	for (i = 0; allocs_get(d->allocs, i, &v); i++) {
		n->allocs++;
		for (j = 0; j < v.ntasks; j++) {
			n->tasks++;
			if (strcmp(trun_state(v.tasks[j]), "running") == 0)
				n->running++;
		}
	}
	for (in = csimgr_first(d->csimgr); in != NULL; in = csimgr_next(in)) {
		n->plugins++;
		if (csi_inst_fingerprint(in)->healthy)
			n->healthy++;
	}
}

void
api_status(struct api_call *c)
{
	const struct api_deps *d = c->d;
	struct api_helper h[API_NHELPERS];
	struct counts n;

	count(d, &n);
	d->helpers(d->ctx, h);
	api_reply(c, 200, api_pack("{s:s, s:I, s:I, s:I, s:b, s:{s:o, s:o}, "
	    "s:{s:I, s:I, s:I, s:I, s:I}, s:I}",
	    "version", BERTH_VERSION,
	    "pid", (json_int_t)getpid(),
	    "uid", (json_int_t)d->uid,
	    "uptime_ms", (json_int_t)api_uptime_ms(c->api),
	    "stopping", d->stopping(d->ctx),
	    "helpers", "berth-mounter", helper_json(&h[API_HELPER_MOUNTER]),
	    "berth-registry", helper_json(&h[API_HELPER_REGISTRY]),
	    "counts", "allocations", (json_int_t)n.allocs,
	    "tasks", (json_int_t)n.tasks, "tasks_running",
	    (json_int_t)n.running, "plugin_instances", (json_int_t)n.plugins,
	    "plugin_instances_healthy", (json_int_t)n.healthy,
	    "events_index", (json_int_t)events_last(d->events)));
}

void
api_health(struct api_call *c)
{
	const struct api_deps *d = c->d;
	const struct csi_fingerprint *fp;
	struct api_helper h[API_NHELPERS];
	struct csi_inst *in;
	size_t i;

	if (d->stopping(d->ctx)) {
		api_error_with(c, 503, api_pack("{s:b}", "healthy", 0),
		    "the supervisor is stopping");
		return;
	}
	d->helpers(d->ctx, h);
	for (i = 0; i < API_NHELPERS; i++)
		if (!h[i].ready || h[i].exited) {
			api_error_with(c, 503, api_pack("{s:b}", "healthy",
			    0), "%s is %s", h[i].name, h[i].exited ? "gone" :
			    "not ready yet");
			return;
		}
	/* A plugin found sick (not one still being fingerprinted). */
	for (in = csimgr_first(d->csimgr); in != NULL; in = csimgr_next(in)) {
		fp = csi_inst_fingerprint(in);
		if (fp->done && !fp->healthy) {
			api_error_with(c, 503, api_pack("{s:b}", "healthy",
			    0), "%s plugin %s (alloc %s) is %s",
			    csi_inst_type_name(in), csi_inst_name(in),
			    csi_inst_alloc(in), fp->health);
			return;
		}
	}
	api_reply(c, 200, api_pack("{s:b}", "healthy", 1));
}

static json_t *
fingerprint_json(const struct csi_inst *in)
{
	const struct csi_fingerprint *fp = csi_inst_fingerprint(in);
	json_t *o;

	o = api_pack("{s:s, s:s, s:b, s:b}", "provider", fp->provider,
	    "version", fp->version, "controller_service",
	    fp->controller_service, "accessibility", fp->accessibility);
	if (o == NULL || !fp->done || !fp->healthy)
		return o;
	if (csi_inst_type(in) == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE) {
		api_set(o, "node_id", api_pack("s", fp->node_id));
		api_set(o, "max_volumes",
		    api_pack("I", (json_int_t)fp->max_volumes));
		api_set(o, "topology", api_pack("s", fp->topology));
		api_set(o, "stage_unstage",
		    json_boolean(fp->stage_unstage));
		api_set(o, "volume_stats",
		    json_boolean(fp->volume_stats));
		api_set(o, "volume_condition",
		    json_boolean(fp->volume_condition));
		api_set(o, "mount_group", json_boolean(fp->mount_group));
		api_set(o, "single_node_multi_writer",
		    json_boolean(fp->single_node_multi_writer));
	} else {
		api_set(o, "create_delete",
		    json_boolean(fp->create_delete));
		api_set(o, "publish_unpublish",
		    json_boolean(fp->publish_unpublish));
	}
	return o;
}

static json_t *
instance_json(const struct csi_inst *in)
{
	const struct csi_fingerprint *fp = csi_inst_fingerprint(in);

	return api_pack("{s:s, s:s, s:s, s:b, s:s, s:o}", "type",
	    csi_inst_type_name(in), "alloc", csi_inst_alloc(in), "endpoint",
	    csi_inst_endpoint(in), "healthy", fp->done && fp->healthy,
	    "health", fp->health, "fingerprint", fingerprint_json(in));
}

/* The plugin tasks that serve id, in every running alloc. */
static json_t *
plugin_tasks(const struct api_deps *d, const char *id)
{
	struct alloc_view v;
	json_t *list = api_array();
	size_t i, j;

	for (i = 0; allocs_get(d->allocs, i, &v); i++)
		for (j = 0; j < v.ntasks; j++) {
			const struct alloc_task *t = &v.doc->tasks[j];

			if (t->csi.type == ALLOC_CSI_NONE ||
			    strcmp(t->csi.id, id) != 0)
				continue;
			api_append(list, api_pack("{s:s, s:s, s:s, "
			    "s:s, s:b}", "alloc", v.doc->id, "task", t->name,
			    "type", alloc_csi_type_name(t->csi.type), "state",
			    trun_state(v.tasks[j]), "healthy",
			    trun_plugin_healthy(v.tasks[j]) == 1));
		}
	return list;
}

/* One plugin: its active instances and its tasks; NULL when unknown. */
static json_t *
plugin_json(const struct api_deps *d, const char *id)
{
	struct csi_inst *in;
	json_t *insts = api_array(), *tasks = plugin_tasks(d, id);
	const char *provider = "", *version = "";
	bool healthy = true;

	for (in = csimgr_first(d->csimgr); in != NULL; in = csimgr_next(in)) {
		const struct csi_fingerprint *fp = csi_inst_fingerprint(in);

		if (strcmp(csi_inst_name(in), id) != 0)
			continue;
		api_append(insts, instance_json(in));
		healthy = healthy && fp->done && fp->healthy;
		provider = fp->provider;
		version = fp->version;
	}
	if (json_array_size(insts) == 0 && json_array_size(tasks) == 0) {
		json_decref(insts);
		json_decref(tasks);
		return NULL;
	}
	return api_pack("{s:s, s:s, s:s, s:b, s:o, s:o}", "id", id,
	    "provider", provider, "version", version, "healthy",
	    healthy && json_array_size(insts) > 0, "instances", insts,
	    "tasks", tasks);
}

static bool
listed(json_t *list, const char *id)
{
	json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
		if (strcmp(json_string_value(json_object_get(v, "id")), id) ==
		    0)
			return true;
	return false;
}

void
api_plugins(struct api_call *c)
{
	const struct api_deps *d = c->d;
	struct alloc_view v;
	struct csi_inst *in;
	json_t *list = api_array(), *p;
	size_t i, j;

	for (in = csimgr_first(d->csimgr); in != NULL; in = csimgr_next(in))
		if (!listed(list, csi_inst_name(in)) &&
		    (p = plugin_json(d, csi_inst_name(in))) != NULL)
			api_append(list, p);
	/* Plugins whose tasks run but that are not registered yet. */
	for (i = 0; allocs_get(d->allocs, i, &v); i++)
		for (j = 0; j < v.ntasks; j++) {
			const char *id = v.doc->tasks[j].csi.id;

			if (v.doc->tasks[j].csi.type != ALLOC_CSI_NONE &&
			    !listed(list, id) && (p = plugin_json(d, id)) !=
			    NULL)
				api_append(list, p);
		}
	api_reply(c, 200, api_pack("{s:o}", "plugins", list));
}

void
api_plugin(struct api_call *c)
{
	json_t *p = plugin_json(c->d, c->id);

	if (p == NULL) {
		api_error(c, 404, "no plugin %s: no active instance and no "
		    "plugin task serves it", c->id);
		return;
	}
	api_reply(c, 200, p);
}

/* The driver manager's view: every driver, its state and fingerprint. */
void
api_drivers(struct api_call *c)
{
	static const char *const names[] = { "exec", "privileged" };
	struct drivermgr *dm = c->d->drivers;
	json_t *list = api_array();
	enum plugin_state st;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		st = drivermgr_state(dm, names[i]);
		api_append(list, api_pack("{s:s, s:s, s:b, s:b, "
		    "s:b, s:s}", "name", names[i], "state",
		    plugin_state_name(st), "detected", st != PLUGIN_UNDETECTED &&
		    st != PLUGIN_BLOCKED, "healthy", st == PLUGIN_HEALTHY,
		    "allowed", drivermgr_allowed(dm, names[i]), "description",
		    drivermgr_desc(dm, names[i])));
	}
	api_reply(c, 200, api_pack("{s:o}", "drivers", list));
}

/* The device manager's catalogue: groups, devices, health, counters. */
void
api_devices(struct api_call *c)
{
	struct devmgr *dm = c->d->devmgr;
	json_t *groups = api_array(), *plugins = api_array();
	struct plugin *p;
	size_t i, k, a;

	for (p = pluginmgr_first(devmgr_plugins(dm)); p != NULL;
	    p = pluginmgr_next(p))
		api_append(plugins, api_pack("{s:s, s:s, s:s}",
		    "name", plugin_name(p), "state",
		    plugin_state_name(plugin_get_state(p)), "description",
		    plugin_desc(p)));
	for (i = 0; i < devmgr_group_count(dm); i++) {
		const struct dev_group *g = devmgr_group_at(dm, i);
		json_t *devs = api_array();

		for (k = 0; k < g->ndevs; k++) {
			const struct dev_device *d = &g->devs[k];
			json_t *attrs = api_object(), *ctr = api_object();

			for (a = 0; a < d->nattrs; a++)
				api_set(attrs, d->attrs[a].key,
				    api_pack("s", d->attrs[a].value));
			for (a = 0; a < d->ncounters; a++)
				api_set(ctr, d->counters[a].key,
				    api_pack("I", (json_int_t)
				    d->counters[a].value));
			api_append(devs, api_pack("{s:s, s:b, s:b, "
			    "s:s, s:o, s:o}", "id", d->id, "healthy",
			    d->healthy, "gone", d->gone, "health", d->health,
			    "attributes", attrs, "counters", ctr));
		}
		api_append(groups, api_pack("{s:s, s:s, s:s, s:s?, "
		    "s:o}", "vendor", g->vendor, "type", g->type, "name",
		    g->name, "plugin", g->plugin, "devices", devs));
	}
	api_reply(c, 200, api_pack("{s:o, s:o}", "plugins", plugins,
	    "devices", groups));
}

/* Each task's restarts since its alloc started (kept across restarts
 * of the supervisor: the task's handle counts them), and the tasks that
 * ended for good. */
/* Sandboxed tasks' use of CPU and memory, from their cgroups. */
static void
task_usage(const struct api_deps *d, struct evbuffer *out)
{
	struct alloc_view v;
	struct cgroup_usage u;
	size_t i, j;

	metrics_family(out, "berth_task_cpu_seconds_total", "counter",
	    "CPU time a running sandboxed task's cgroup has used.");
	for (i = 0; allocs_get(d->allocs, i, &v); i++)
		for (j = 0; j < v.ntasks; j++) {
			const char *labels[] = { "alloc", v.doc->id, "task",
				trun_name(v.tasks[j]), NULL };

			if (trun_usage(v.tasks[j], &u) && u.have_cpu)
				metrics_line(out, "berth_task_cpu_seconds_total",
				    labels, (double)u.cpu_ns / 1e9);
		}
	metrics_family(out, "berth_task_memory_bytes", "gauge", "Memory a "
	    "running sandboxed task's cgroup holds now.");
	for (i = 0; allocs_get(d->allocs, i, &v); i++)
		for (j = 0; j < v.ntasks; j++) {
			const char *labels[] = { "alloc", v.doc->id, "task",
				trun_name(v.tasks[j]), NULL };

			if (trun_usage(v.tasks[j], &u) && u.have_memory)
				metrics_line(out, "berth_task_memory_bytes",
				    labels, (double)u.memory_bytes);
		}
}

static void
task_restarts(const struct api_deps *d, struct evbuffer *out)
{
	struct alloc_view v;
	size_t i, j;

	metrics_family(out, "berth_task_restarts_total", "counter", "Times "
	    "each task of a running allocation was restarted.");
	for (i = 0; allocs_get(d->allocs, i, &v); i++)
		for (j = 0; j < v.ntasks; j++) {
			const char *labels[] = { "alloc", v.doc->id, "task",
				trun_name(v.tasks[j]), NULL };

			metrics_line(out, "berth_task_restarts_total", labels,
			    (double)trun_restarts(v.tasks[j]));
		}
	task_usage(d, out);
	metrics_family(out, "berth_task_ended", "gauge", "Each task that its "
	    "restart policy starts no more, by how it ended: complete or "
	    "failed.");
	for (i = 0; allocs_get(d->allocs, i, &v); i++)
		for (j = 0; j < v.ntasks; j++) {
			const char *labels[] = { "alloc", v.doc->id, "task",
				trun_name(v.tasks[j]), "state", trun_state(
				v.tasks[j]), NULL };

			if (trun_ended(v.tasks[j]))
				metrics_line(out, "berth_task_ended", labels,
				    1);
		}
}

static void
volume_counts(const struct api_deps *d, struct evbuffer *out)
{
	struct volmgr_counts vc;

	volmgr_counts(d->volmgr, &vc);
	metrics_family(out, "berth_volumes_in_use", "gauge", "CSI volumes "
	    "allocations on this node hold.");
	metrics_line(out, "berth_volumes_in_use", NULL, (double)vc.in_use);
	metrics_family(out, "berth_volumes_staged", "gauge", "CSI volumes "
	    "staged on this node.");
	metrics_line(out, "berth_volumes_staged", NULL, (double)vc.staged);
	metrics_family(out, "berth_volume_publications", "gauge", "CSI "
	    "volumes published, one per allocation and usage.");
	metrics_line(out, "berth_volume_publications", NULL,
	    (double)vc.published);
}

void
api_metrics(struct api_call *c)
{
	const struct api_deps *d = c->d;
	const char *build[] = { "version", BERTH_VERSION, NULL };
	struct evbuffer *out = evhttp_request_get_output_buffer(c->req);
	struct csi_inst *in;
	struct counts n;

	count(d, &n);
	evbuffer_add_printf(out, "# HELP berth_up The supervisor answers.\n"
	    "# TYPE berth_up gauge\n");
	metrics_line(out, "berth_up", NULL, 1);
	evbuffer_add_printf(out, "# HELP berth_uptime_seconds Since the "
	    "supervisor started.\n# TYPE berth_uptime_seconds gauge\n");
	metrics_line(out, "berth_uptime_seconds", NULL,
	    (double)api_uptime_ms(c->api) / 1000);
	evbuffer_add_printf(out, "# HELP berth_plugin_healthy Each active "
	    "CSI plugin instance: 1 healthy, 0 not.\n"
	    "# TYPE berth_plugin_healthy gauge\n");
	for (in = csimgr_first(d->csimgr); in != NULL; in = csimgr_next(in)) {
		const char *labels[] = { "plugin", csi_inst_name(in), "type",
			csi_inst_type_name(in), "alloc", csi_inst_alloc(in),
			NULL };
		const struct csi_fingerprint *fp = csi_inst_fingerprint(in);

		metrics_line(out, "berth_plugin_healthy", labels,
		    fp->done && fp->healthy ? 1 : 0);
	}
	evbuffer_add_printf(out, "# HELP berth_allocations Allocations "
	    "running.\n# TYPE berth_allocations gauge\n");
	metrics_line(out, "berth_allocations", NULL, (double)n.allocs);
	evbuffer_add_printf(out, "# HELP berth_tasks_running Tasks "
	    "running.\n# TYPE berth_tasks_running gauge\n");
	metrics_line(out, "berth_tasks_running", NULL, (double)n.running);
	task_restarts(d, out);
	volume_counts(d, out);
	api_volume_metrics(d->volmgr, out);
	/* A gauge: it starts over with each supervisor (see /v1/events). */
	metrics_family(out, "berth_events_index", "gauge", "The event log's "
	    "last index.");
	metrics_line(out, "berth_events_index", NULL,
	    (double)events_last(d->events));
	metrics_family(out, "berth_build_info", "gauge", "This berth's "
	    "version, as a label; always 1.");
	metrics_line(out, "berth_build_info", build, 1);
	metrics_write(out);
	metrics_write_process(out);
	evhttp_add_header(evhttp_request_get_output_headers(c->req),
	    "Content-Type", "text/plain; version=0.0.4");
	evhttp_send_reply(c->req, 200, "OK", NULL);
}
