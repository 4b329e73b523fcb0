/*
 * pluginmgr.c: instance managers, health states and retries for plugins
 * (see pluginmgr.h).
 *
 * Owns: each plugin's state, its latest fingerprint and stats report, and
 * the timers that restart a failed stream. Must not: start anything once
 * the manager is shutting down, or call a plugin back from inside one of
 * its own reports (reactions go through the `react` event).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "log.h"
#include "pluginmgr.h"
#include "xalloc.h"

#define DESC_MAX 256

struct plugin {
	struct pluginmgr *m;
	char *name;
	const struct plugin_ops *ops;
	void *arg;
	enum plugin_state state;
	char desc[DESC_MAX];
	void *fp, *stats;
	bool starting;			/* inside ops->start() */
	bool running;			/* start() returned 0, no shutdown() yet */
	bool failed;			/* plugin_failed() not handled yet */
	char why[DESC_MAX];
	bool stats_running;
	unsigned nstarts, nstats;
	/* The next wait; the armed one; the one before the latest start. */
	int64_t backoff_ms, wait_ms, last_backoff_ms;
	int64_t stats_backoff_ms, stats_wait_ms, stats_last_backoff_ms;
	struct event *retry, *stats_retry, *react;
	TAILQ_ENTRY(plugin) entry;
};

struct pluginmgr {
	struct event_base *base;
	char *name;
	struct pluginmgr_params params;
	bool started, stopping;
	TAILQ_HEAD(, plugin) plugins;
};

static const char *const state_names[] = {
	[PLUGIN_UNDETECTED] = "undetected",
	[PLUGIN_UNHEALTHY] = "unhealthy",
	[PLUGIN_HEALTHY] = "healthy",
	[PLUGIN_BLOCKED] = "blocked",
};

const char *
plugin_state_name(enum plugin_state s)
{
	if ((size_t)s >= sizeof(state_names) / sizeof(state_names[0]))
		return "unknown";
	return state_names[s];
}

static void launch(struct plugin *p);

static void
arm(struct event *ev, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(ev, &tv);
}

static int64_t
next_backoff(struct pluginmgr *m, int64_t *cur)
{
	int64_t wait = *cur;

	*cur = wait > m->params.retry_max_ms / 2 ? m->params.retry_max_ms :
	    wait * 2;
	return wait;
}

static void
notify(struct plugin *p, enum plugin_event ev)
{
	if (p->m->params.changed != NULL)
		p->m->params.changed(p, ev, p->m->params.arg);
}

void
pluginmgr_states(const struct pluginmgr *m, char *buf, size_t len)
{
	const struct plugin *p;
	size_t off;
	int n;

	if (len == 0)
		return;
	n = snprintf(buf, len, "%s:", m->name);
	off = n < 0 ? 0 : (size_t)n;
	TAILQ_FOREACH(p, &m->plugins, entry) {
		if (off >= len)
			break;
		n = snprintf(buf + off, len - off, " %s=%s", p->name,
		    plugin_state_name(p->state));
		off += n < 0 ? 0 : (size_t)n;
	}
	/* A cut line says so rather than ending mid-name silently. */
	if (off >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

static void
log_states(const struct pluginmgr *m)
{
	char line[1024];

	pluginmgr_states(m, line, sizeof(line));
	log_info("%s", line);
}

/* True when the state changed (and the line was logged). */
static bool
set_state(struct plugin *p, enum plugin_state s)
{
	if (p->state == s)
		return false;
	p->state = s;
	log_states(p->m);
	return true;
}

static void
set_desc(struct plugin *p, const char *desc)
{
	snprintf(p->desc, sizeof(p->desc), "%s", desc != NULL ? desc : "");
}

/*
 * The stream ended (or never opened): say why, keep an undetected plugin
 * undetected, and start it again after the backoff unless we are stopping.
 */
static void
stream_failed(struct plugin *p)
{
	struct pluginmgr *m = p->m;
	int64_t wait;
	bool changed;

	p->failed = false;
	p->stats_running = false;
	evtimer_del(p->stats_retry);
	set_desc(p, p->why);
	changed = set_state(p, p->state == PLUGIN_UNDETECTED ?
	    PLUGIN_UNDETECTED : PLUGIN_UNHEALTHY);
	if (m->stopping) {
		log_warnx("%s: %s failed: %s", m->name, p->name, p->why);
	} else {
		wait = next_backoff(m, &p->backoff_ms);
		log_warnx("%s: %s failed: %s; retrying in %lld ms", m->name,
		    p->name, p->why, (long long)wait);
		p->wait_ms = wait;
		arm(p->retry, wait);
	}
	if (changed)
		notify(p, PLUGIN_EV_STATE);
}

static void
on_retry(evutil_socket_t fd, short ev, void *arg)
{
	struct plugin *p = arg;
	struct pluginmgr *m = p->m;
	int r;

	(void)fd;
	(void)ev;
	/* Shutdown first: a stopping manager starts nothing, ever. */
	if (m->stopping || p->running)
		return;
	p->nstarts++;
	p->last_backoff_ms = p->wait_ms;
	p->wait_ms = 0;
	p->failed = false;
	p->starting = true;
	r = p->ops->start(p);
	p->starting = false;
	if (r < 0) {
		if (!p->failed)
			snprintf(p->why, sizeof(p->why), "start failed");
		stream_failed(p);
		return;
	}
	p->running = true;
	if (m->stopping) {
		/* The owner shut us down from a report made inside start(). */
		p->running = false;
		p->ops->shutdown(p);
		return;
	}
	if (p->failed || (p->state == PLUGIN_HEALTHY && p->ops->stats != NULL))
		arm(p->react, 0);
}

static void
start_stats(struct plugin *p)
{
	struct pluginmgr *m = p->m;
	int64_t wait;

	if (m->stopping || !p->running || p->stats_running ||
	    p->ops->stats == NULL || p->state != PLUGIN_HEALTHY ||
	    evtimer_pending(p->stats_retry, NULL))
		return;
	p->nstats++;
	p->stats_last_backoff_ms = p->stats_wait_ms;
	p->stats_wait_ms = 0;
	if (p->ops->stats(p) == 0) {
		p->stats_running = true;
		return;
	}
	wait = next_backoff(m, &p->stats_backoff_ms);
	log_warnx("%s: %s: stats did not start; retrying in %lld ms",
	    m->name, p->name, (long long)wait);
	p->stats_wait_ms = wait;
	arm(p->stats_retry, wait);
}

static void
on_stats_retry(evutil_socket_t fd, short ev, void *arg)
{
	struct plugin *p = arg;

	(void)fd;
	(void)ev;
	start_stats(p);
}

/* What a report asks of us, one turn of the loop later. */
static void
on_react(evutil_socket_t fd, short ev, void *arg)
{
	struct plugin *p = arg;

	(void)fd;
	(void)ev;
	if (p->failed) {
		if (p->running) {
			p->running = false;
			p->ops->shutdown(p);
		}
		stream_failed(p);
		return;
	}
	start_stats(p);
}

struct pluginmgr *
pluginmgr_new(struct event_base *base, const struct pluginmgr_params *params)
{
	struct pluginmgr *m;

	m = xcalloc(1, sizeof(*m));
	m->name = xstrdup(params->name);
	m->base = base;
	m->params = *params;
	m->params.name = m->name;
	if (m->params.retry_initial_ms <= 0)
		m->params.retry_initial_ms = 1;
	if (m->params.retry_max_ms < m->params.retry_initial_ms)
		m->params.retry_max_ms = m->params.retry_initial_ms;
	TAILQ_INIT(&m->plugins);
	return m;
}

static bool
listed(char *const *list, const char *name)
{
	for (; list != NULL && *list != NULL; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

bool
pluginmgr_allowed(const struct pluginmgr *m, const char *name)
{
	char *const *allow = m->params.allow;

	if (listed(m->params.block, name))
		return false;
	return allow == NULL || *allow == NULL || listed(allow, name);
}

struct plugin *
pluginmgr_add(struct pluginmgr *m, const char *name,
    const struct plugin_ops *ops, void *arg)
{
	struct plugin *p;

	p = xcalloc(1, sizeof(*p));
	p->m = m;
	p->ops = ops;
	p->arg = arg;
	p->state = PLUGIN_UNDETECTED;
	p->backoff_ms = p->stats_backoff_ms = m->params.retry_initial_ms;
	p->name = xstrdup(name);
	p->retry = xnonnull(evtimer_new(m->base, on_retry, p),
	    "pluginmgr_add: evtimer_new");
	p->stats_retry = xnonnull(evtimer_new(m->base, on_stats_retry, p),
	    "pluginmgr_add: evtimer_new");
	p->react = xnonnull(evtimer_new(m->base, on_react, p),
	    "pluginmgr_add: evtimer_new");
	set_desc(p, "not fingerprinted yet");
	TAILQ_INSERT_TAIL(&m->plugins, p, entry);
	/* One found after the start (a new plugin definition) starts now. */
	if (m->started && !m->stopping) {
		launch(p);
		log_states(m);
	}
	return p;
}

/* Blocked, or started through the loop (never inside our caller). */
static void
launch(struct plugin *p)
{
	struct pluginmgr *m = p->m;

	if (!pluginmgr_allowed(m, p->name)) {
		p->state = PLUGIN_BLOCKED;
		set_desc(p, listed(m->params.block, p->name) ?
		    "in the block list" : "not in the allow list");
		return;
	}
	arm(p->retry, 0);
}

void
pluginmgr_start(struct pluginmgr *m)
{
	struct plugin *p;

	if (m->started || m->stopping)
		return;
	m->started = true;
	TAILQ_FOREACH(p, &m->plugins, entry)
		launch(p);
	log_states(m);
}

void
pluginmgr_shutdown(struct pluginmgr *m)
{
	struct plugin *p;

	if (m->stopping)
		return;
	m->stopping = true;
	TAILQ_FOREACH(p, &m->plugins, entry) {
		evtimer_del(p->retry);
		evtimer_del(p->stats_retry);
		evtimer_del(p->react);
		p->stats_running = false;
		/* One inside start() is shut down when start() returns. */
		if (p->running && !p->starting) {
			p->running = false;
			p->ops->shutdown(p);
		}
	}
}

void
pluginmgr_free(struct pluginmgr *m)
{
	struct plugin *p;

	if (m == NULL)
		return;
	pluginmgr_shutdown(m);
	while ((p = TAILQ_FIRST(&m->plugins)) != NULL) {
		TAILQ_REMOVE(&m->plugins, p, entry);
		if (p->fp != NULL && p->ops->fp_free != NULL)
			p->ops->fp_free(p->fp);
		if (p->stats != NULL && p->ops->stats_free != NULL)
			p->ops->stats_free(p->stats);
		event_free(p->retry);
		event_free(p->stats_retry);
		event_free(p->react);
		free(p->name);
		free(p);
	}
	free(m->name);
	free(m);
}

struct plugin *
pluginmgr_find(struct pluginmgr *m, const char *name)
{
	struct plugin *p;

	TAILQ_FOREACH(p, &m->plugins, entry)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

struct plugin *
pluginmgr_first(struct pluginmgr *m)
{
	return TAILQ_FIRST(&m->plugins);
}

struct plugin *
pluginmgr_next(struct plugin *p)
{
	return TAILQ_NEXT(p, entry);
}

/* Is a report from this plugin one we still listen to? */
static bool
live(const struct plugin *p)
{
	return (p->running || p->starting) && !p->failed && !p->m->stopping;
}

void
plugin_fingerprint(struct plugin *p, enum plugin_state health,
    const char *desc, void *data)
{
	bool healthy_now;

	if (!live(p) || health == PLUGIN_BLOCKED) {
		if (data != NULL && p->ops->fp_free != NULL)
			p->ops->fp_free(data);
		return;
	}
	if (p->fp != NULL && p->fp != data && p->ops->fp_free != NULL)
		p->ops->fp_free(p->fp);
	p->fp = data;
	set_desc(p, desc);
	healthy_now = health == PLUGIN_HEALTHY && p->state != PLUGIN_HEALTHY;
	if (health == PLUGIN_HEALTHY)
		p->backoff_ms = p->m->params.retry_initial_ms;
	set_state(p, health);
	/* Stats follow health; inside start() on_retry arms this itself. */
	if (healthy_now && p->ops->stats != NULL && !p->starting)
		arm(p->react, 0);
	notify(p, PLUGIN_EV_FINGERPRINT);
}

void
plugin_failed(struct plugin *p, const char *fmt, ...)
{
	va_list ap;

	if (!live(p))
		return;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof(p->why), fmt, ap);
	va_end(ap);
	p->failed = true;
	if (!p->starting)
		arm(p->react, 0);
}

void
plugin_stats(struct plugin *p, void *data)
{
	if (!p->stats_running || !live(p)) {
		if (data != NULL && p->ops->stats_free != NULL)
			p->ops->stats_free(data);
		return;
	}
	if (p->stats != NULL && p->stats != data && p->ops->stats_free != NULL)
		p->ops->stats_free(p->stats);
	p->stats = data;
	p->stats_backoff_ms = p->m->params.retry_initial_ms;
	notify(p, PLUGIN_EV_STATS);
}

void
plugin_stats_failed(struct plugin *p, const char *fmt, ...)
{
	char why[DESC_MAX];
	int64_t wait;
	va_list ap;

	if (!p->stats_running || !live(p))
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	p->stats_running = false;
	wait = next_backoff(p->m, &p->stats_backoff_ms);
	log_warnx("%s: %s: stats failed: %s; retrying in %lld ms", p->m->name,
	    p->name, why, (long long)wait);
	p->stats_wait_ms = wait;
	arm(p->stats_retry, wait);
}

const char *
plugin_name(const struct plugin *p)
{
	return p->name;
}

void *
plugin_arg(const struct plugin *p)
{
	return p->arg;
}

struct pluginmgr *
plugin_manager(const struct plugin *p)
{
	return p->m;
}

enum plugin_state
plugin_get_state(const struct plugin *p)
{
	return p->state;
}

const char *
plugin_desc(const struct plugin *p)
{
	return p->desc;
}

void *
plugin_fp_data(const struct plugin *p)
{
	return p->fp;
}

void *
plugin_stats_data(const struct plugin *p)
{
	return p->stats;
}

unsigned
plugin_starts(const struct plugin *p)
{
	return p->nstarts;
}

int64_t
plugin_last_backoff_ms(const struct plugin *p)
{
	return p->last_backoff_ms;
}

unsigned
plugin_stats_starts(const struct plugin *p)
{
	return p->nstats;
}

int64_t
plugin_stats_last_backoff_ms(const struct plugin *p)
{
	return p->stats_last_backoff_ms;
}
