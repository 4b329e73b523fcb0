/*
 * drivermgr.c: the driver manager (see drivermgr.h).
 *
 * Owns: the two built-in drivers' fingerprint checks and their timers,
 * and the task handlers. Must not: block the event loop longer than one
 * fork and exec of "berth-shim -V", which exits at once, or signal any
 * process.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "drivermgr.h"
#include "ident.h"
#include "mounter_client.h"
#include "shim.h"
#include "spawn.h"
#include "xalloc.h"

#define DRIVER_DESC_MAX 256

struct driver {
	struct drivermgr *dm;
	const char *name;
	struct plugin *p;
	struct event *timer;		/* the next check */
	bool running, waiting;
	bool was_healthy, left_healthy;	/* for the handlers' events */
	uint64_t nonce;
	void (*check)(struct driver *d);
};

struct drv_handler {
	struct drivermgr *dm;
	char driver[16], alloc[BERTH_IDENT_MAX + 1], task[BERTH_IDENT_MAX + 1];
	drv_event_fn fn;
	void *arg;
	TAILQ_ENTRY(drv_handler) entry;
};

struct drivermgr {
	struct event_base *base;
	struct drivermgr_conf conf;
	struct pluginmgr *pm;
	struct driver exec, privileged;
	TAILQ_HEAD(, drv_handler) handlers;
};

static void
emit(struct driver *d, const char *type, const char *fmt, ...)
    BERTH_PRINTF(3, 4);

static void
emit(struct driver *d, const char *type, const char *fmt, ...)
{
	struct drv_handler *h, *next;
	char msg[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* A handler may free itself from its callback. */
	for (h = TAILQ_FIRST(&d->dm->handlers); h != NULL; h = next) {
		next = TAILQ_NEXT(h, entry);
		if (strcmp(h->driver, d->name) == 0)
			h->fn(h->arg, type, msg);
	}
}

static void
report(struct driver *d, enum plugin_state state, const char *fmt, ...)
    BERTH_PRINTF(3, 4);

/* A fingerprint; the tasks hear when their driver stops being healthy. */
static void
report(struct driver *d, enum plugin_state state, const char *fmt, ...)
{
	char desc[DRIVER_DESC_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	plugin_fingerprint(d->p, state, desc, NULL);
	if (state == PLUGIN_HEALTHY) {
		if (d->left_healthy)
			emit(d, "DriverHealthy", "driver %s is healthy again: "
			    "%s", d->name, desc);
		d->was_healthy = true;
		d->left_healthy = false;
	} else if (d->was_healthy && !d->left_healthy) {
		d->left_healthy = true;
		emit(d, "DriverUnhealthy", "driver %s is %s: %s", d->name,
		    plugin_state_name(state), desc);
	}
}

static void
arm(struct driver *d, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (d->running)
		evtimer_add(d->timer, &tv);
}

/* exec: can berth-shim be started? It exits at once with -V. */
static void
exec_check(struct driver *d)
{
	static char *const envp[] = { NULL };
	char *argv[] = { SHIM_NAME, "-V", NULL };
	const char *shim = d->dm->conf.shim;
	char how[96];
	struct stat st;
	int status;
	pid_t pid;

	if (stat(shim, &st) < 0) {
		report(d, PLUGIN_UNDETECTED, "berth-shim is not at %s: %s",
		    shim, strerror(errno));
		goto out;
	}
	if ((pid = fork()) < 0) {
		report(d, PLUGIN_UNHEALTHY, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* Async-signal-safe calls only: the supervisor has threads. */
		if (close_range(3, ~0U, 0) == 0)
			execve(shim, argv, envp);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			report(d, PLUGIN_UNHEALTHY, "waiting for berth-shim -V: "
			    "%s", strerror(errno));
			goto out;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		report(d, PLUGIN_HEALTHY, "berth-shim at %s starts", shim);
	else {
		spawn_describe_status(status, how, sizeof(how));
		report(d, PLUGIN_UNHEALTHY, "berth-shim at %s does not run: "
		    "it %s", shim, how);
	}
out:
	arm(d, d->dm->conf.fingerprint_ms);
}

static void
on_pong(const struct priv_result *res, uint64_t nonce, void *arg)
{
	struct driver *d = arg;

	d->waiting = false;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		report(d, PLUGIN_UNHEALTHY, "berth-mounter does not answer: "
		    "%s: %s", ipc_error_name(res->code), res->message);
	else if (nonce != d->nonce)
		report(d, PLUGIN_UNHEALTHY, "berth-mounter answered ping %llu "
		    "with pong %llu", (unsigned long long)d->nonce,
		    (unsigned long long)nonce);
	else
		report(d, PLUGIN_HEALTHY, "berth-mounter answers");
	arm(d, d->dm->conf.fingerprint_ms);
}

/* privileged: does berth-mounter, which starts these tasks, answer? */
static void
privileged_check(struct driver *d)
{
	struct mclient *mc = d->dm->conf.mounter;

	if (mc == NULL) {
		report(d, PLUGIN_UNDETECTED, "no berth-mounter");
		arm(d, d->dm->conf.fingerprint_ms);
		return;
	}
	if (priv_ping(mc, ++d->nonce, on_pong, d) < 0) {
		report(d, PLUGIN_UNHEALTHY, "berth-mounter's connection is "
		    "closed");
		arm(d, d->dm->conf.fingerprint_ms);
		return;
	}
	d->waiting = true;
}

static void
on_check(evutil_socket_t fd, short ev, void *arg)
{
	struct driver *d = arg;

	(void)fd;
	(void)ev;
	if (d->running && !d->waiting)
		d->check(d);
}

/* The fingerprint stream: a check at once, then every fingerprint_ms. */
static int
drv_start(struct plugin *p)
{
	struct driver *d = plugin_arg(p);

	d->running = true;
	arm(d, 0);
	return 0;
}

static void
drv_shutdown(struct plugin *p)
{
	struct driver *d = plugin_arg(p);

	d->running = false;
	evtimer_del(d->timer);
	if (d->waiting && d->dm->conf.mounter != NULL)
		priv_forget(d->dm->conf.mounter, d);
	d->waiting = false;
}

static const struct plugin_ops drv_ops = {
	.start = drv_start,
	.shutdown = drv_shutdown,
};

static void
add_driver(struct drivermgr *dm, struct driver *d, const char *name,
    void (*check)(struct driver *))
{
	d->dm = dm;
	d->name = name;
	d->check = check;
	d->timer = xnonnull(evtimer_new(dm->base, on_check, d),
	    "drivermgr: a driver's timer");
	d->p = pluginmgr_add(dm->pm, name, &drv_ops, d);
}

struct drivermgr *
drivermgr_new(struct event_base *base, const struct drivermgr_conf *conf)
{
	struct pluginmgr_params prm = { 0 };
	struct drivermgr *dm = xcalloc(1, sizeof(*dm));

	dm->base = base;
	dm->conf = *conf;
	TAILQ_INIT(&dm->handlers);
	prm.name = "drivers";
	prm.retry_initial_ms = conf->retry_initial_ms;
	prm.retry_max_ms = conf->retry_max_ms;
	prm.allow = conf->allow;
	prm.block = conf->block;
	dm->pm = pluginmgr_new(base, &prm);
	add_driver(dm, &dm->exec, "exec", exec_check);
	add_driver(dm, &dm->privileged, "privileged", privileged_check);
	return dm;
}

void
drivermgr_start(struct drivermgr *dm)
{
	pluginmgr_start(dm->pm);
}

void
drivermgr_free(struct drivermgr *dm)
{
	struct drv_handler *h;

	if (dm == NULL)
		return;
	pluginmgr_free(dm->pm);
	if (dm->exec.timer != NULL)
		event_free(dm->exec.timer);
	if (dm->privileged.timer != NULL)
		event_free(dm->privileged.timer);
	while ((h = TAILQ_FIRST(&dm->handlers)) != NULL)
		drv_handler_free(h);
	free(dm);
}

bool
drivermgr_allowed(const struct drivermgr *dm, const char *driver)
{
	return pluginmgr_allowed(dm->pm, driver);
}

enum plugin_state
drivermgr_state(const struct drivermgr *dm, const char *driver)
{
	struct plugin *p = pluginmgr_find(dm->pm, driver);

	return p != NULL ? plugin_get_state(p) : PLUGIN_UNDETECTED;
}

const char *
drivermgr_desc(const struct drivermgr *dm, const char *driver)
{
	struct plugin *p = pluginmgr_find(dm->pm, driver);

	return p != NULL ? plugin_desc(p) : "";
}

void
drivermgr_states(const struct drivermgr *dm, char *buf, size_t len)
{
	pluginmgr_states(dm->pm, buf, len);
}

struct drv_handler *
drivermgr_handler(struct drivermgr *dm, const char *driver,
    const char *alloc, const char *task, drv_event_fn fn, void *arg)
{
	struct drv_handler *h = xcalloc(1, sizeof(*h));

	h->dm = dm;
	snprintf(h->driver, sizeof(h->driver), "%s", driver);
	snprintf(h->alloc, sizeof(h->alloc), "%s", alloc);
	snprintf(h->task, sizeof(h->task), "%s", task);
	h->fn = fn;
	h->arg = arg;
	TAILQ_INSERT_TAIL(&dm->handlers, h, entry);
	return h;
}

void
drv_handler_free(struct drv_handler *h)
{
	if (h == NULL)
		return;
	TAILQ_REMOVE(&h->dm->handlers, h, entry);
	free(h);
}

void
drivermgr_task_event(void *arg, const char *driver, const char *alloc,
    const char *task, const char *type, const char *message)
{
	struct drivermgr *dm = arg;
	struct drv_handler *h;

	TAILQ_FOREACH(h, &dm->handlers, entry)
		if (strcmp(h->driver, driver) == 0 &&
		    strcmp(h->alloc, alloc) == 0 &&
		    strcmp(h->task, task) == 0) {
			h->fn(h->arg, type, message);
			return;
		}
}
