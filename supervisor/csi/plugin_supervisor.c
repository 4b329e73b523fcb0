/*
 * plugin_supervisor.c: probe, register, heartbeat and deregister one
 * plugin task's CSI plugin (see plugin_supervisor.h).
 *
 * Owns: the plugin's connection for probes, its registrations in the
 * registry, and the plugin's reported health. Must not: keep a gRPC
 * channel that failed to connect before the plugin was healthy (gRPC
 * would wait out its reconnect backoff, a second or more, before trying
 * again), or report a health change on a single probe.
 */
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "csi_client.h"
#include "csimanager.h"
#include "duration.h"
#include "metrics.h"
#include "plugin_supervisor.h"
#include "registry_client.h"
#include "watch.h"
#include "xalloc.h"

#define SOCKET_NAME "csi.sock"

enum ps_state {
	PS_IDLE,		/* not started, or stopped */
	PS_WAITING,		/* probing until the first healthy probe */
	PS_INFO,		/* GetPluginInfo */
	PS_REGISTERING,
	PS_RUNNING,		/* registered; heartbeats */
	PS_STOPPING,		/* deregistering */
};

struct plugsup {
	struct plugsup_deps deps;
	struct plugsup_conf conf;
	char *alloc, *task, *id, *socket;
	char endpoint[600], dir[512];
	const struct plugsup_ops *ops;
	void *arg;

	enum ps_state state;
	struct csi_conn *conn;
	struct watch *watch;
	struct event *timer;		/* next probe */
	struct event *deadline;		/* health_timeout */
	struct event *later;		/* stop's done callback */
	bool probing, healthy, adopted, was_healthy, dead, told_no_name;
	int fails, pending, regs_pending, reg_failed;
	unsigned registered;		/* PLUGSUP_NODE | PLUGSUP_CONTROLLER */
	int64_t backoff_ms;
	struct timespec started, launched, sock_seen, probe_sent;
	char last_error[1024], provider[128], version[64];
	void (*done)(void *arg);
	void *done_arg;
};

static void probe(struct plugsup *ps);
static void on_later(evutil_socket_t fd, short ev, void *arg);

const char *
plugsup_type_name(enum plugsup_type type)
{
	switch (type) {
	case PLUGSUP_NODE: return "node";
	case PLUGSUP_CONTROLLER: return "controller";
	case PLUGSUP_MONOLITH: return "monolith";
	}
	return "unknown";
}

static Berth__PluginType
reg_type(unsigned bit)
{
	return bit == PLUGSUP_NODE ? BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE :
	    BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER;
}

static double
ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)(now.tv_sec - t->tv_sec) * 1e3 +
	    (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

static void
event_msg(struct plugsup *ps, const char *type, const char *fmt, ...)
    BERTH_PRINTF(3, 4);

static void
event_msg(struct plugsup *ps, const char *type, const char *fmt, ...)
{
	char msg[1400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ps->ops->event(ps->arg, type, msg);
}

/* A call ended: free a plugsup that was freed while it was out. */
static bool
call_done(struct plugsup *ps)
{
	ps->pending--;
	if (ps->dead && ps->pending == 0) {
		free(ps->alloc);
		free(ps->task);
		free(ps->id);
		free(ps->socket);
		free(ps);
		return true;
	}
	return ps->dead;
}

static void
drop_conn(struct plugsup *ps)
{
	if (ps->conn != NULL) {
		csi_conn_close(ps->conn);
		ps->conn = NULL;
	}
}

static void
schedule(struct plugsup *ps, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(ps->timer, &tv);
}

static void
set_health(struct plugsup *ps, bool healthy)
{
	if (ps->healthy == healthy)
		return;
	ps->healthy = healthy;
	ps->ops->health(ps->arg, healthy);
}

/* The heartbeat's word, for the CSI manager: why when unhealthy. */
static void
tell_csimgr(struct plugsup *ps, bool healthy, const char *why)
{
	if (ps->deps.csimgr != NULL)
		csimgr_heartbeat(ps->deps.csimgr, ps->id, ps->alloc, healthy,
		    why);
}

static void
retry_waiting(struct plugsup *ps)
{
	ps->state = PS_WAITING;
	drop_conn(ps);
	schedule(ps, ps->backoff_ms);
	ps->backoff_ms += ps->backoff_ms / 2;
	if (ps->backoff_ms > PLUGSUP_BACKOFF_MAX_MS)
		ps->backoff_ms = PLUGSUP_BACKOFF_MAX_MS;
}

static void
on_registered(const struct regclient_result *res, void *arg)
{
	struct plugsup *ps = arg;
	char types[32];

	if (call_done(ps) || ps->state != PS_REGISTERING)
		return;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		ps->reg_failed++;
		snprintf(ps->last_error, sizeof(ps->last_error), "registering "
		    "with berth-registry: %s: %s", ipc_error_name(res->code),
		    res->message);
	}
	if (--ps->regs_pending > 0)
		return;
	if (ps->reg_failed > 0) {
		event_msg(ps, "PluginUnhealthy", "plugin %s: %s", ps->id,
		    ps->last_error);
		retry_waiting(ps);
		return;
	}
	ps->registered = ps->conf.type;
	ps->state = PS_RUNNING;
	ps->fails = 0;
	evtimer_del(ps->deadline);
	snprintf(types, sizeof(types), "%s", ps->conf.type ==
	    PLUGSUP_MONOLITH ? "controller and node" :
	    plugsup_type_name(ps->conf.type));
	if (ps->adopted && ps->was_healthy)
		log_info("plugin %s (alloc %s) re-registered as %s after "
		    "adoption; still healthy", ps->id, ps->alloc, types);
	else if (ps->sock_seen.tv_sec == 0)
		event_msg(ps, "PluginHealthy", "plugin %s (%s %s) registered "
		    "as %s; healthy %.1f ms after the task started (its socket "
		    "was made before)", ps->id, ps->provider,
		    ps->version[0] ? ps->version : "(no version)", types,
		    ms_since(&ps->started));
	else
		event_msg(ps, "PluginHealthy", "plugin %s (%s %s) registered "
		    "as %s; healthy %.1f ms after its socket appeared, %.1f ms "
		    "after the task started", ps->id, ps->provider,
		    ps->version[0] ? ps->version : "(no version)", types,
		    ms_since(&ps->sock_seen), ms_since(&ps->started));
	ps->was_healthy = true;
	set_health(ps, true);
	tell_csimgr(ps, true, NULL);
	schedule(ps, ps->conf.heartbeat_ms);
}

static void
register_all(struct plugsup *ps)
{
	Berth__PluginInstance pi = BERTH__PLUGIN_INSTANCE__INIT;
	unsigned bits[] = { PLUGSUP_CONTROLLER, PLUGSUP_NODE };
	size_t i;

	ps->state = PS_REGISTERING;
	ps->reg_failed = 0;
	pi.name = ps->id;
	pi.alloc = ps->alloc;
	pi.endpoint = ps->endpoint;
	pi.provider = ps->provider;
	pi.provider_version = ps->version;
	for (i = 0; i < 2; i++) {
		if (!(ps->conf.type & bits[i]))
			continue;
		pi.type = reg_type(bits[i]);
		if (regclient_register(ps->deps.registry, &pi,
		    on_registered, ps) < 0) {
			ps->reg_failed++;
			snprintf(ps->last_error, sizeof(ps->last_error),
			    "cannot reach berth-registry");
			continue;
		}
		ps->pending++;
		ps->regs_pending++;
	}
	if (ps->regs_pending == 0) {
		event_msg(ps, "PluginUnhealthy", "plugin %s: %s", ps->id,
		    ps->last_error);
		retry_waiting(ps);
	}
}

static void
on_info(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	struct plugsup *ps = arg;
	Csi__V1__GetPluginInfoResponse *info =
	    (Csi__V1__GetPluginInfoResponse *)reply;

	if (call_done(ps) || ps->state != PS_INFO) {
		if (reply != NULL)
			protobuf_c_message_free_unpacked(reply, NULL);
		return;
	}
	if (res->code != CSI_OK) {
		snprintf(ps->last_error, sizeof(ps->last_error),
		    "GetPluginInfo: %s: %s", csi_code_name(res->code),
		    res->message);
		retry_waiting(ps);
		return;
	}
	if (info->name == NULL || info->name[0] == '\0') {
		snprintf(ps->last_error, sizeof(ps->last_error), "GetPluginInfo "
		    "returned no name, which the CSI spec requires");
		if (!ps->told_no_name)
			event_msg(ps, "PluginUnhealthy", "plugin %s: %s",
			    ps->id, ps->last_error);
		ps->told_no_name = true;
		protobuf_c_message_free_unpacked(reply, NULL);
		retry_waiting(ps);
		return;
	}
	snprintf(ps->provider, sizeof(ps->provider), "%s", info->name);
	snprintf(ps->version, sizeof(ps->version), "%s",
	    info->vendor_version ? info->vendor_version : "");
	protobuf_c_message_free_unpacked(reply, NULL);
	register_all(ps);
}

static void
on_probe(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	struct plugsup *ps = arg;
	Csi__V1__GetPluginInfoRequest req = CSI__V1__GET_PLUGIN_INFO_REQUEST__INIT;
	bool ok = res->code == CSI_OK && csi_probe_ready(
	    (Csi__V1__ProbeResponse *)reply) != CSI_READY_FALSE;

	metrics_probe_latency(ps->id, ms_since(&ps->probe_sent));
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
	if (call_done(ps))
		return;
	ps->probing = false;
	if (!ok && res->code != CSI_OK)
		snprintf(ps->last_error, sizeof(ps->last_error), "Probe: %s: "
		    "%s", csi_code_name(res->code), res->message);
	else if (!ok)
		snprintf(ps->last_error, sizeof(ps->last_error), "Probe: the "
		    "plugin says it is not ready");
	switch (ps->state) {
	case PS_WAITING:
		if (!ok) {
			retry_waiting(ps);
			return;
		}
		ps->state = PS_INFO;
		ps->pending++;
		csi_call(ps->conn, CSI_GET_PLUGIN_INFO, &req.base, 5000,
		    &csi_retry_none, on_info, ps);
		return;
	case PS_RUNNING:
		if (ok) {
			ps->fails = 0;
			if (!ps->healthy)
				event_msg(ps, "PluginHealthy", "plugin %s is "
				    "healthy again", ps->id);
			set_health(ps, true);
			tell_csimgr(ps, true, NULL);
		} else if (++ps->fails >= PLUGSUP_DOWN_AFTER && ps->healthy) {
			char why[1200];

			snprintf(why, sizeof(why), "%d probes in a row failed; "
			    "the last: %s", ps->fails, ps->last_error);
			event_msg(ps, "PluginUnhealthy", "plugin %s: %s",
			    ps->id, why);
			set_health(ps, false);
			tell_csimgr(ps, false, why);
		} else if (!ok)
			log_info("plugin %s (alloc %s): probe failed (%d in a "
			    "row, unhealthy at %d): %s", ps->id, ps->alloc,
			    ps->fails, PLUGSUP_DOWN_AFTER, ps->last_error);
		schedule(ps, ps->conf.heartbeat_ms);
		return;
	default:
		return;
	}
}

/* A heartbeat's deadline: long enough for a busy plugin, within bounds. */
static int
probe_deadline(const struct plugsup *ps)
{
	int64_t ms = ps->conf.heartbeat_ms / 2;

	return ps->state != PS_RUNNING || ms < 1000 ? 1000 :
	    ms > 10000 ? 10000 : (int)ms;
}

/* Made by this run: after its launch, or when no launch was seen. */
static bool
after_start(const struct plugsup *ps, const struct timespec *t)
{
	return ps->launched.tv_sec == 0 || t->tv_sec > ps->launched.tv_sec ||
	    (t->tv_sec == ps->launched.tv_sec &&
	    t->tv_nsec >= ps->launched.tv_nsec);
}

static void
probe(struct plugsup *ps)
{
	Csi__V1__ProbeRequest req = CSI__V1__PROBE_REQUEST__INIT;
	struct stat st;

	if (ps->probing || (ps->state != PS_WAITING &&
	    ps->state != PS_RUNNING))
		return;
	evtimer_del(ps->timer);
	if (ps->state == PS_WAITING) {
		/* No socket yet: gRPC would only back off. */
		if (stat(ps->socket, &st) < 0 || !S_ISSOCK(st.st_mode)) {
			snprintf(ps->last_error, sizeof(ps->last_error),
			    "no socket at %s yet", ps->socket);
			retry_waiting(ps);
			return;
		}
		/* A dead run's socket: the plugin makes its own. */
		if (!after_start(ps, &st.st_ctim)) {
			snprintf(ps->last_error, sizeof(ps->last_error),
			    "only an earlier run's socket at %s yet",
			    ps->socket);
			retry_waiting(ps);
			return;
		}
		if (ps->sock_seen.tv_sec == 0 && !ps->adopted)
			ps->sock_seen = st.st_ctim;
	}
	if (ps->conn == NULL && (ps->conn = csi_conn_open(ps->deps.csi,
	    ps->endpoint)) == NULL) {
		snprintf(ps->last_error, sizeof(ps->last_error), "cannot open "
		    "a connection to %s", ps->endpoint);
		retry_waiting(ps);
		return;
	}
	csi_conn_set_plugin(ps->conn, ps->id);
	ps->probing = true;
	ps->pending++;
	clock_gettime(CLOCK_REALTIME, &ps->probe_sent);
	csi_call(ps->conn, CSI_PROBE, &req.base, probe_deadline(ps),
	    &csi_retry_none, on_probe, ps);
}

static void
on_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	probe(arg);
}

static void
on_deadline(evutil_socket_t fd, short ev, void *arg)
{
	struct plugsup *ps = arg;
	char dur[32], why[1600];

	(void)fd;
	(void)ev;
	if (ps->state == PS_RUNNING || ps->state == PS_IDLE ||
	    ps->state == PS_STOPPING)
		return;
	duration_format(ps->conf.health_timeout_ms, dur, sizeof(dur));
	snprintf(why, sizeof(why), "plugin %s was not healthy within %s "
	    "(health_timeout); the last probe: %s", ps->id, dur,
	    ps->last_error[0] ? ps->last_error : "none finished");
	event_msg(ps, "PluginUnhealthy", "%s", why);
	ps->state = PS_IDLE;
	evtimer_del(ps->timer);
	drop_conn(ps);
	ps->ops->restart(ps->arg, why);
}

static void
on_socket_dir(struct watch *w, uint32_t mask, const char *name, void *arg)
{
	struct plugsup *ps = arg;

	(void)w;
	(void)mask;
	if (ps->state == PS_WAITING && strcmp(name, SOCKET_NAME) == 0)
		probe(ps);
}

struct plugsup *
plugsup_new(const struct plugsup_deps *deps, const struct plugsup_conf *conf,
    const struct plugsup_ops *ops, void *arg)
{
	struct plugsup *ps;

	if (strlen(conf->socket) + sizeof("unix://") > sizeof(ps->endpoint) ||
	    strlen(conf->socket) >= sizeof(ps->dir))
		return NULL;
	ps = xcalloc(1, sizeof(*ps));
	ps->deps = *deps;
	ps->conf = *conf;
	ps->ops = ops;
	ps->arg = arg;
	ps->alloc = xstrdup(conf->alloc);
	ps->task = xstrdup(conf->task);
	ps->id = xstrdup(conf->id);
	ps->socket = xstrdup(conf->socket);
	ps->timer = xnonnull(evtimer_new(deps->base, on_timer, ps),
	    "plugsup_new: evtimer_new");
	ps->deadline = xnonnull(evtimer_new(deps->base, on_deadline, ps),
	    "plugsup_new: evtimer_new");
	ps->later = xnonnull(evtimer_new(deps->base, on_later, ps),
	    "plugsup_new: evtimer_new");
	snprintf(ps->endpoint, sizeof(ps->endpoint), "unix://%s",
	    conf->socket);
	snprintf(ps->dir, sizeof(ps->dir), "%s", conf->socket);
	dirname(ps->dir);
	ps->conf.alloc = ps->alloc;
	ps->conf.task = ps->task;
	ps->conf.id = ps->id;
	ps->conf.socket = ps->socket;
	return ps;
}

void
plugsup_launching(struct plugsup *ps)
{
	/* The coarse clock is the one that stamps the socket's inode. */
	clock_gettime(CLOCK_REALTIME_COARSE, &ps->launched);
}

void
plugsup_start(struct plugsup *ps, bool adopted, bool was_healthy)
{
	struct timeval tv = { ps->conf.health_timeout_ms / 1000,
		(ps->conf.health_timeout_ms % 1000) * 1000 };

	ps->adopted = adopted;
	if (adopted)
		memset(&ps->launched, 0, sizeof(ps->launched));
	ps->was_healthy = was_healthy;
	ps->healthy = adopted && was_healthy;
	ps->state = PS_WAITING;
	ps->fails = 0;
	ps->told_no_name = false;
	ps->backoff_ms = PLUGSUP_BACKOFF_FIRST_MS;
	ps->last_error[0] = '\0';
	memset(&ps->sock_seen, 0, sizeof(ps->sock_seen));
	clock_gettime(CLOCK_REALTIME, &ps->started);
	drop_conn(ps);
	if (ps->watch == NULL && (ps->watch = watch_add(ps->deps.watcher,
	    ps->dir, IN_CREATE | IN_MOVED_TO, on_socket_dir, ps)) == NULL)
		log_warn("plugsup_start: cannot watch %s; probing on a timer "
		    "only", ps->dir);
	evtimer_add(ps->deadline, &tv);
	probe(ps);
}

static void
on_later(evutil_socket_t fd, short ev, void *arg)
{
	struct plugsup *ps = arg;
	void (*done)(void *) = ps->done;

	(void)fd;
	(void)ev;
	ps->done = NULL;
	if (done != NULL)
		done(ps->done_arg);
}

static void
finish_stop(struct plugsup *ps)
{
	struct timeval now = { 0, 0 };

	if (ps->regs_pending > 0)
		return;
	ps->state = PS_IDLE;
	if (ps->done != NULL)
		evtimer_add(ps->later, &now);
}

static void
on_deregistered(const struct regclient_result *res, void *arg)
{
	struct plugsup *ps = arg;

	if (call_done(ps))
		return;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE &&
	    res->code != BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		log_warnx("plugin %s (alloc %s): deregistering: %s: %s",
		    ps->id, ps->alloc, ipc_error_name(res->code),
		    res->message);
	ps->regs_pending--;
	finish_stop(ps);
}

void
plugsup_stop(struct plugsup *ps, void (*done)(void *arg), void *arg)
{
	unsigned bits[] = { PLUGSUP_CONTROLLER, PLUGSUP_NODE };
	size_t i;

	evtimer_del(ps->timer);
	evtimer_del(ps->deadline);
	watch_rm(ps->watch);
	ps->watch = NULL;
	drop_conn(ps);
	ps->probing = false;
	ps->done = done;
	ps->done_arg = arg;
	ps->state = PS_STOPPING;
	/* Registrations in flight end first: then none is left behind. */
	ps->regs_pending = 0;
	for (i = 0; i < 2; i++) {
		if (!(ps->conf.type & bits[i]))
			continue;
		if (regclient_deregister(ps->deps.registry,
		    reg_type(bits[i]), ps->id, ps->alloc, on_deregistered,
		    ps) < 0)
			continue;
		ps->pending++;
		ps->regs_pending++;
	}
	ps->registered = 0;
	if (ps->healthy)
		event_msg(ps, "PluginDeregistered", "plugin %s deregistered",
		    ps->id);
	set_health(ps, false);
	tell_csimgr(ps, true, NULL);	/* forget a failed streak */
	finish_stop(ps);
}

bool
plugsup_healthy(const struct plugsup *ps)
{
	return ps->healthy;
}

void
plugsup_free(struct plugsup *ps)
{
	if (ps == NULL)
		return;
	if (ps->watch != NULL)
		watch_rm(ps->watch);
	drop_conn(ps);
	if (ps->timer != NULL)
		event_free(ps->timer);
	if (ps->deadline != NULL)
		event_free(ps->deadline);
	if (ps->later != NULL)
		event_free(ps->later);
	ps->timer = ps->deadline = ps->later = NULL;
	ps->watch = NULL;
	ps->done = NULL;
	ps->dead = true;
	ps->pending++;
	call_done(ps);
}
