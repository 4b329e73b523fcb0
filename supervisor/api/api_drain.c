/*
 * api_drain.c: draining the node (PUT, GET and DELETE /v1/node/drain),
 * and the check that keeps a node plugin from being stopped under the
 * volumes it still publishes.
 *
 * A drain stops allocations in three waves, each only once the one
 * before has gone: the workloads (every allocation that serves no CSI
 * plugin, those using volumes among them), then the node plugins (node
 * and monolith), then the controllers. An allocation has gone when it is
 * no longer listed. Between
 * waves, nothing is asked of a plugin whose consumers are still being
 * taken back. While the node is draining or drained, new allocations
 * are refused; DELETE makes it eligible again (what was stopped stays
 * stopped).
 *
 * An allocation that runs from a file the API did not write is not the
 * API's to stop: the drain names it and goes on without it.
 *
 * A drain outlives the supervisor: while it holds, the supervisor's own
 * data_dir/supervisor/node-drain keeps when it began (written whole, then
 * renamed). A supervisor that finds it is draining from its start,
 * refuses new allocations at once, and goes through the waves again once
 * the allocations from before the restart are read; DELETE removes it.
 *
 * Must not: stop anything itself; it asks allocs_stop(), as DELETE
 * /v1/allocation/<id> does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc_runner.h"
#include "api_int.h"
#include "events.h"
#include "volmgr.h"
#include "xalloc.h"

#define DRAIN_TICK_MS 200
#define DRAIN_FILE "supervisor/node-drain"

enum wave { W_OFF, W_WORKLOADS, W_NODES, W_CONTROLLERS, W_DONE };

static const char *const wave_names[] = {
	"off", "workloads", "node plugins", "controller plugins", "drained"
};

struct api_drain {
	enum wave wave;
	struct event *tick;
	struct timespec since;		/* CLOCK_REALTIME, when it began */
	size_t asked;			/* allocs_stop() calls that took */
	size_t left;			/* of the wave, not gone yet */
	char skipped[512];		/* "a, b": not the API's to stop */
};

/* Which wave stops a: the latest its tasks belong to. */
static enum wave
wave_of(const struct alloc *a)
{
	enum wave w = W_WORKLOADS;
	size_t i;

	for (i = 0; i < a->ntasks; i++)
		switch (a->tasks[i].csi.type) {
		case ALLOC_CSI_CONTROLLER:
			w = W_CONTROLLERS;
			break;
		case ALLOC_CSI_NODE:
		case ALLOC_CSI_MONOLITH:
			if (w < W_NODES)
				w = W_NODES;
			break;
		default:
			break;
		}
	return w;
}

static void
skip(struct api_drain *dr, const char *id)
{
	size_t n = strlen(dr->skipped);

	if (strstr(dr->skipped, id) != NULL)
		return;
	snprintf(dr->skipped + n, sizeof(dr->skipped) - n, "%s%s",
	    n > 0 ? ", " : "", id);
}

/* Ask every alloc of the wave to stop; how many have not gone. */
static size_t
stop_wave(struct api *api, struct api_drain *dr)
{
	struct alloc_view v;
	char why[512];
	size_t i, left = 0;
	int r;

	for (i = 0; allocs_get(api->d.allocs, i, &v); i++) {
		if (v.doc == NULL || wave_of(v.doc) != dr->wave)
			continue;
		if (v.stopping) {
			left++;
			continue;
		}
		/* A failed one listed: its file goes, and with it the entry. */
		r = allocs_stop(api->d.allocs, v.doc->id, why, sizeof(why));
		if (r == 0) {
			dr->asked++;
			left++;
		} else if (r == -EEXIST)
			skip(dr, v.doc->id);
		else if (r != -ENOENT)
			left++;
	}
	return left;
}

static void
tick(evutil_socket_t fd, short what, void *arg)
{
	struct api *api = arg;
	struct api_drain *dr = api->drain;
	struct timeval tv = { 0, DRAIN_TICK_MS * 1000 };

	(void)fd;
	(void)what;
	/* After a restart: not before the allocations are known again. */
	if (!allocs_ready(api->d.allocs)) {
		evtimer_add(dr->tick, &tv);
		return;
	}
	while (dr->wave != W_DONE && (dr->left = stop_wave(api, dr)) == 0) {
		dr->wave++;
		if (dr->wave != W_DONE)
			events_record(api->d.events, "node", "DrainWave", NULL,
			    NULL, NULL, "draining: stopping the %s",
			    wave_names[dr->wave]);
	}
	if (dr->wave == W_DONE) {
		events_record(api->d.events, "node", "Drained", NULL, NULL,
		    NULL, "drained: %zu allocations stopped%s%s", dr->asked,
		    dr->skipped[0] != '\0' ? "; not the API's to stop: " : "",
		    dr->skipped);
		log_info("api: node drained: %zu allocations stopped",
		    dr->asked);
		return;
	}
	evtimer_add(dr->tick, &tv);
}

static struct api_drain *
drain_of(struct api *api)
{
	if (api->drain == NULL) {
		api->drain = xcalloc(1, sizeof(*api->drain));
		api->drain->tick = evtimer_new(api->d.base, tick, api);
		xnonnull(api->drain->tick, "evtimer_new");
	}
	return api->drain;
}

/* data_dir/supervisor/node-drain: written with since (keep), or removed. */
static void
keep(const struct api *api, const struct timespec *since, bool on)
{
	char path[1024], tmp[1040], text[32];
	int fd, n, ok;

	if (api->d.data_dir == NULL)
		return;
	snprintf(path, sizeof(path), "%s/" DRAIN_FILE, api->d.data_dir);
	if (!on) {
		if (unlink(path) < 0 && errno != ENOENT)
			log_warn("api: removing %s (the node will drain again "
			    "after a restart)", path);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	n = snprintf(text, sizeof(text), "%lld\n", (long long)since->tv_sec);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0644)) < 0) {
		log_warn("api: keeping the drain in %s (a restarted "
		    "supervisor will not be draining)", tmp);
		return;
	}
	ok = write(fd, text, n) == n && fsync(fd) == 0;
	if (close(fd) < 0 || !ok || rename(tmp, path) < 0) {
		log_warn("api: keeping the drain in %s (a restarted "
		    "supervisor will not be draining)", path);
		unlink(tmp);
	}
}

void
api_drain_resume(struct api *api)
{
	char path[1024], text[32] = "";
	struct api_drain *dr;
	long long since;
	ssize_t n;
	int fd;

	if (api->d.data_dir == NULL)
		return;
	snprintf(path, sizeof(path), "%s/" DRAIN_FILE, api->d.data_dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		if (errno != ENOENT)
			log_warn("api: reading %s; not draining", path);
		return;
	}
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0 || sscanf(text, "%lld", &since) != 1 || since <= 0) {
		log_warnx("api: %s does not hold a drain's start; draining "
		    "from now", path);
		since = (long long)time(NULL);
	}
	dr = drain_of(api);
	dr->since.tv_sec = (time_t)since;
	dr->wave = W_WORKLOADS;
	events_record(api->d.events, "node", "DrainResumed", NULL, NULL,
	    NULL, "draining again after a restart: new allocations are "
	    "refused; stopping the workloads");
	log_info("api: the node was draining before this start; draining "
	    "again");
	tick(-1, 0, api);
}

bool
api_drain_refuses(const struct api *api)
{
	return api->drain != NULL && api->drain->wave != W_OFF;
}

static json_t *
status(const struct api *api)
{
	const struct api_drain *dr = api->drain;
	struct volmgr_counts vc;
	char since[64] = "";
	struct tm tm;

	if (dr == NULL || dr->wave == W_OFF)
		return api_pack("{s:b, s:s}", "draining", 0, "state", "off");
	gmtime_r(&dr->since.tv_sec, &tm);
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	memset(&vc, 0, sizeof(vc));
	volmgr_counts(api->d.volmgr, &vc);
	return api_pack("{s:b, s:s, s:s, s:I, s:I, s:s, s:I, s:I}",
	    "draining", dr->wave != W_DONE, "state", dr->wave == W_DONE ?
	    "drained" : "draining", "wave", wave_names[dr->wave],
	    "left", (json_int_t)(dr->wave == W_DONE ? 0 : dr->left),
	    "stopped", (json_int_t)dr->asked, "since", since,
	    "volumes_staged", (json_int_t)vc.staged,
	    "volumes_published", (json_int_t)vc.published);
}

void
api_drain_get(struct api_call *c)
{
	json_t *o = status(c->api);

	if (c->api->drain != NULL && c->api->drain->skipped[0] != '\0')
		api_set(o, "not_stopped", api_pack("s",
		    c->api->drain->skipped));
	api_reply(c, 200, o);
}

void
api_drain_start(struct api_call *c)
{
	struct api_drain *dr = drain_of(c->api);

	if (dr->wave == W_OFF) {
		memset(dr->skipped, 0, sizeof(dr->skipped));
		dr->asked = dr->left = 0;
		clock_gettime(CLOCK_REALTIME, &dr->since);
		dr->wave = W_WORKLOADS;
		keep(c->api, &dr->since, true);
		events_record(c->d->events, "node", "DrainStarted", NULL, NULL,
		    NULL, "draining: new allocations are refused; stopping "
		    "the workloads");
		log_info("api: node drain started");
		tick(-1, 0, c->api);
	}
	api_drain_get(c);
}

void
api_drain_stop(struct api_call *c)
{
	struct api_drain *dr = c->api->drain;

	if (dr != NULL && dr->wave != W_OFF) {
		evtimer_del(dr->tick);
		dr->wave = W_OFF;
		keep(c->api, NULL, false);
		events_record(c->d->events, "node", "DrainEnded", NULL, NULL,
		    NULL, "eligible again: new allocations are accepted");
		log_info("api: node drain ended; eligible again");
	}
	api_drain_get(c);
}

void
api_drain_free(struct api *api)
{
	if (api->drain == NULL)
		return;
	event_free(api->drain->tick);
	free(api->drain);
	api->drain = NULL;
}

/* Another running allocation that serves plugin as a node? */
static bool
other_node(struct api *api, const char *alloc, const char *plugin)
{
	struct alloc_view v;
	size_t i;

	for (i = 0; allocs_get(api->d.allocs, i, &v); i++)
		if (v.doc != NULL && strcmp(v.doc->id, alloc) != 0 &&
		    !v.stopping && strcmp(v.status, "running") == 0 &&
		    allocs_node_plugin_type(api->d.allocs, v.doc->id,
		    plugin) != NULL)
			return true;
	return false;
}

static void
add_volume(const char *ns, const char *vol, const char *alloc, void *arg)
{
	json_t *list = arg;
	char name[512];
	size_t i;

	(void)alloc;
	snprintf(name, sizeof(name), "%s/%s", ns, vol);
	for (i = 0; i < json_array_size(list); i++)
		if (strcmp(json_string_value(json_array_get(list, i)),
		    name) == 0)
			return;
	api_append(list, api_pack("s", name));
}

/*
 * Stopping c->id would leave volumes published by a node plugin that no
 * other allocation serves: answered 409 with them (true). false: go on.
 */
bool
api_drain_guard_stop(struct api_call *c)
{
	const char *force = api_param(c, "force");
	struct alloc_view v;
	json_t *list;
	size_t i;
	const struct alloc_csi_plugin *p;

	if ((force != NULL && strcmp(force, "true") == 0) ||
	    !allocs_find(c->d->allocs, c->id, &v) || v.doc == NULL)
		return false;
	for (i = 0; i < v.doc->ntasks; i++) {
		p = &v.doc->tasks[i].csi;
		if ((p->type != ALLOC_CSI_NODE &&
		    p->type != ALLOC_CSI_MONOLITH) ||
		    !volmgr_uses_plugin(c->d->volmgr, p->id) ||
		    other_node(c->api, c->id, p->id))
			continue;
		list = api_array();
		volmgr_each_pub_of(c->d->volmgr, p->id, add_volume, list);
		api_error_with(c, 409, api_pack("{s:o}", "volumes", list),
		    "allocation %s serves plugin %s as a node, and no other "
		    "allocation does, while %zu volumes are still published "
		    "or staged by it; stop their allocations first, or force "
		    "the stop (?force=true)", c->id, p->id,
		    json_array_size(list));
		return true;
	}
	return false;
}
