/*
 * task_runner.c: one task of an allocation (see task_runner.h).
 *
 * Owns: the task's state, restarts and events, its reattach handle in
 * the registry, and its plugin supervisor. Must not: signal anything but
 * its own task, through the task driver.
 */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "alloc_logs.h"
#include "drivermgr.h"
#include "duration.h"
#include "events.h"
#include "layout.h"
#include "mounter_client.h"
#include "plugin_supervisor.h"
#include "registry_client.h"
#include "restarts.h"
#include "task_runner.h"
#include "taskdrv.h"
#include "xalloc.h"

enum tr_state {
	TR_PENDING,		/* not started yet */
	TR_PREPARING,		/* directories through the mounter */
	TR_STARTING,		/* the driver is starting or adopting it */
	TR_RUNNING,
	TR_RESTART_WAIT,	/* ended; starts again after a delay */
	TR_STOPPING,		/* deregistering, then killing */
	TR_DEAD,		/* stopped for good */
	TR_ENDED,		/* its restart policy starts it no more */
};

struct trun {
	const struct trun_deps *d;
	const struct alloc *a;
	const struct alloc_task *t;
	enum tr_state state;
	struct taskproc *proc;
	struct plugsup *ps;
	struct drv_handler *dh;		/* its driver's events */
	struct event *timer;		/* restart wait, or kill timeout */
	bool have_adopt, adopting, stop_asked, restart_asked;
	bool hold;			/* adopt only: trun_run() starts it */
	Berth__TaskHandle handle;	/* what the registry keeps */
	int64_t backoff_ms;
	struct timespec started;
	int steps;			/* mounter calls still to answer */
	char socket[512], endpoint[600], why[512];
	bool start_failed;		/* why: it could not be started */
	int64_t retry_at_ms;		/* wall clock of the restart wait */
	struct restarts rs;		/* the restart policy's count */
	/* How it ended last (exited: it ran), and once TR_ENDED whether
	 * it failed, why, and for which version of the alloc's file. */
	Berth__TaskEnd end;
	char reason[768], version[96];
	uint32_t task_id;		/* its alloc's uid and gid; 0: none yet */
	trun_stopped_cb stopped;
	void *arg;
	struct task_event events[TRUN_EVENTS];
	size_t nevents, first;
};

static void start(struct trun *tr);
static void kill_task(struct trun *tr);

static void
tr_event(struct trun *tr, const char *type, const char *fmt, ...)
    BERTH_PRINTF(3, 4);
static void
tr_warning(struct trun *tr, const char *type, const char *fmt, ...)
    BERTH_PRINTF(3, 4);

/*
 * An event, logged as a warning when warn: a task that failed (exited
 * non-zero, was killed, could not start) and its restarts, so that
 * "journalctl -p warning" shows a crash loop. Routine events are info.
 */
static void
tr_eventv(struct trun *tr, bool warn, const char *type, const char *fmt,
    va_list ap)
{
	struct task_event *ev;

	if (tr->nevents == TRUN_EVENTS) {
		ev = &tr->events[tr->first];
		tr->first = (tr->first + 1) % TRUN_EVENTS;
	} else
		ev = &tr->events[(tr->first + tr->nevents++) % TRUN_EVENTS];
	ev->at = time(NULL);
	snprintf(ev->type, sizeof(ev->type), "%s", type);
	/* On the heap, as long as it is: most are short, and 100 plugins'
	 * rings of fixed buffers cost more than their gRPC channels. */
	free(ev->message);
	if (vasprintf(&ev->message, fmt, ap) < 0)
		oom("tr_event");
	if (warn)
		log_warnx("event: alloc=%s task=%s type=%s message=\"%s\"",
		    tr->a->id, tr->t->name, ev->type, ev->message);
	else
		log_info("event: alloc=%s task=%s type=%s message=\"%s\"",
		    tr->a->id, tr->t->name, ev->type, ev->message);
	events_record(tr->d->events, "task", ev->type, tr->a->id,
	    tr->t->name, tr->t->csi.id, "%s", ev->message);
}

static void
tr_event(struct trun *tr, const char *type, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tr_eventv(tr, false, type, fmt, ap);
	va_end(ap);
}

static void
tr_warning(struct trun *tr, const char *type, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tr_eventv(tr, true, type, fmt, ap);
	va_end(ap);
}

static void
plugin_event(void *arg, const char *type, const char *message)
{
	tr_event(arg, type, "%s", message);
}

/* The handle, with what changed, to the registry. */
static void
on_handle_put(const struct regclient_result *res, void *arg)
{
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE &&
	    res->code != BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		log_warnx("task_runner: keeping a task's handle in "
		    "berth-registry failed: %s: %s (a supervisor restart "
		    "could start it twice)", ipc_error_name(res->code),
		    res->message);
}

static void
handle_key(struct trun *tr, Berth__Handle *h, Berth__ReattachHandle *rh)
{
	rh->type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER;
	rh->name = tr->t->driver == ALLOC_DRIVER_EXEC ? "exec" : "privileged";
	rh->alloc = tr->a->id;
	rh->task = tr->t->name;
	h->handle_case = BERTH__HANDLE__HANDLE_REATTACH;
	h->reattach = rh;
}

static void
put_handle(struct trun *tr)
{
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__ReattachHandle rh = BERTH__REATTACH_HANDLE__INIT;
	uint8_t *buf;

	handle_key(tr, &h, &rh);
	tr->handle.interval_start_ms = tr->rs.interval_start_ms;
	tr->handle.interval_restarts = (uint32_t)tr->rs.count;
	tr->handle.end = tr->state == TR_ENDED ? &tr->end : NULL;
	buf = xmalloc(berth__task_handle__get_packed_size(&tr->handle));
	rh.state.len = berth__task_handle__pack(&tr->handle, buf);
	rh.state.data = buf;
	/* Unacknowledged it is not kept: the callback says so. */
	if (regclient_put_handle(tr->d->registry, &h, on_handle_put,
	    NULL) < 0)
		log_warnx("task_runner: cannot reach berth-registry to keep "
		    "task %s of alloc %s", tr->t->name, tr->a->id);
	free(buf);
}

static void
delete_handle(struct trun *tr)
{
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__ReattachHandle rh = BERTH__REATTACH_HANDLE__INIT;

	handle_key(tr, &h, &rh);
	if (regclient_delete_handle(tr->d->registry, &h,
	    on_handle_put, NULL) < 0)
		log_warnx("task_runner: cannot reach berth-registry to forget "
		    "task %s of alloc %s", tr->t->name, tr->a->id);
}

static void
plugin_health(void *arg, bool healthy)
{
	struct trun *tr = arg;

	tr->handle.plugin_healthy = healthy;
	if (tr->state == TR_RUNNING)
		put_handle(tr);
}

static void
plugin_restart(void *arg, const char *why)
{
	struct trun *tr = arg;

	if (tr->state != TR_RUNNING)
		return;
	tr->restart_asked = true;
	snprintf(tr->why, sizeof(tr->why), "%s", why);
	tr_event(tr, "Restarting", "%s", why);
	kill_task(tr);
}

void
trun_restart(struct trun *tr, const char *why)
{
	plugin_restart(tr, why);
}

static const struct plugsup_ops plugin_ops = {
	plugin_event, plugin_restart, plugin_health,
};

static void
arm(struct trun *tr, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	/* From now: the loop's cached time can lag the clock a delay was
	 * counted from, and a restart would then come before its time. */
	event_base_update_cache_time(event_get_base(tr->timer));
	evtimer_add(tr->timer, &tv);
}

static void
finish(struct trun *tr)
{
	bool ended = tr->state == TR_ENDED;

	evtimer_del(tr->timer);
	tr->state = TR_DEAD;
	delete_handle(tr);
	if (!ended)
		tr_event(tr, "Killed", "task stopped");
	tr->stopped(tr, tr->arg);
}

static int64_t
now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Start again after ms; warn: after a failure, so that a crash loop is
 * a warning each turn. */
static void
restart_after(struct trun *tr, int64_t ms, const char *why, bool warn)
{
	char dur[32];

	tr->state = TR_RESTART_WAIT;
	tr->retry_at_ms = now_ms() + ms;
	duration_format(ms, dur, sizeof(dur));
	if (warn)
		tr_warning(tr, "Restarting", "starting again in %s: %s", dur,
		    why);
	else
		tr_event(tr, "Restarting", "starting again in %s: %s", dur,
		    why);
	arm(tr, ms);
}

/* berth's own step failed (not the task): tried again with a backoff,
 * 1 s doubling to 30 s, outside the task's restart policy. */
static void
restart_later(struct trun *tr)
{
	restart_after(tr, tr->backoff_ms, "its set-up failed", true);
	tr->backoff_ms *= 2;
	if (tr->backoff_ms > TRUN_RESTART_MAX_MS)
		tr->backoff_ms = TRUN_RESTART_MAX_MS;
}

/* For good: its record stays in the registry until its alloc stops. */
static void
end_task(struct trun *tr, bool failed, const char *what, const char *policy)
{
	evtimer_del(tr->timer);
	tr->state = TR_ENDED;
	tr->end.failed = failed;
	snprintf(tr->reason, sizeof(tr->reason), "%s; %s", what, policy);
	tr->end.reason = tr->reason;
	tr->end.version = tr->version;
	put_handle(tr);
	if (failed)
		tr_warning(tr, "NotRestarting", "%s", tr->reason);
	else
		tr_event(tr, "NotRestarting", "%s", tr->reason);
	if (tr->d->ended != NULL)
		tr->d->ended(tr, tr->arg);
}

/*
 * It ended (what: how; ok: exit status 0): the restart policy says when
 * it starts again, or that it ends for good, complete or failed.
 */
static void
after_end(struct trun *tr, bool ok, const char *what, bool warn)
{
	char policy[256];
	int64_t delay;

	if (!restarts_next(&tr->rs, &tr->t->restart, now_ms(), &delay, policy,
	    sizeof(policy))) {
		end_task(tr, !ok, what, policy);
		return;
	}
	tr->handle.restarts++;
	restart_after(tr, delay, policy, warn);
}

static void
set_exit(struct trun *tr, const struct task_exit *ex)
{
	tr->end.exited = ex->status_known;
	tr->end.signaled = ex->status_known && ex->signaled;
	tr->end.code = ex->status_known ? ex->code : 0;
}

static double
secs_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	    (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void
on_exited(struct taskproc *tp, const struct task_exit *ex, void *arg)
{
	struct trun *tr = arg;
	char how[128], what[700];
	bool failed, ok;

	/* ex may live in tp: read it before the free. Ended on its own,
	 * and not well: that is for an operator to see. */
	task_exit_describe(ex, how, sizeof(how));
	ok = ex->status_known && !ex->signaled && ex->code == 0;
	failed = !tr->restart_asked && !ok;
	set_exit(tr, ex);
	tr->d->driver->free(tp);
	tr->proc = NULL;
	if (tr->ps != NULL && tr->state != TR_STOPPING)
		plugsup_stop(tr->ps, NULL, NULL);
	if (tr->state == TR_STOPPING) {
		tr_event(tr, "Terminated", "pid %ld %s", (long)tr->handle.pid,
		    how);
		finish(tr);
		return;
	}
	if (failed)
		tr_warning(tr, "Terminated", "pid %ld %s", (long)tr->handle.pid,
		    how);
	else
		tr_event(tr, "Terminated", "pid %ld %s%s",
		    (long)tr->handle.pid, how, tr->restart_asked ?
		    " (restarted by berth)" : "");
	if (secs_since(&tr->started) > TRUN_RESTART_MAX_MS / 1000)
		tr->backoff_ms = TRUN_RESTART_FIRST_MS;
	/* A restart berth asked for (an unhealthy plugin) is a failure the
	 * policy counts, as Nomad's check restarts are. */
	if (tr->restart_asked)
		snprintf(what, sizeof(what), "%s, restarted by berth: %s", how,
		    tr->why);
	else
		snprintf(what, sizeof(what), "%s", how);
	ok = ok && !tr->restart_asked;
	tr->restart_asked = false;
	after_end(tr, ok, what, failed);
}

static void
on_started(struct taskproc *tp, int err, const char *why, void *arg)
{
	struct trun *tr = arg;
	bool adopted = tr->adopting;
	char policy[256], what[700];
	int64_t delay;

	tr->adopting = false;
	tr->have_adopt = false;		/* a restart starts it anew */
	if (err != 0) {
		/* why lives in tp: keep it past the free. */
		snprintf(tr->why, sizeof(tr->why), "%s", why);
		why = tr->why;
		tr->d->driver->free(tp);
		tr->proc = NULL;
		if (tr->stop_asked) {
			finish(tr);
			return;
		}
		if (adopted) {
			/* It ended while we were away: its policy counts it
			 * (how is not known for sure: not as a success);
			 * it starts as new, once its alloc says (its volumes
			 * are in place). */
			tr_event(tr, "Terminated", "pid %ld %s while the "
			    "supervisor was not running", (long)tr->handle.pid,
			    why);
			tr->have_adopt = false;
			if (!restarts_next(&tr->rs, &tr->t->restart, now_ms(),
			    &delay, policy, sizeof(policy))) {
				snprintf(what, sizeof(what), "pid %ld %s while "
				    "the supervisor was not running",
				    (long)tr->handle.pid, why);
				tr->hold = false;
				end_task(tr, true, what, policy);
				return;
			}
			tr->handle.restarts++;
			if (tr->hold) {
				tr->hold = false;
				tr->state = TR_PENDING;
				return;
			}
			start(tr);
			return;
		}
		tr_warning(tr, "DriverFailure", "%s", why);
		tr->start_failed = true;
		/* A start that failed (no such command) counts as an end. */
		tr->end.exited = false;
		snprintf(what, sizeof(what), "could not start: %s", why);
		after_end(tr, false, what, true);
		return;
	}
	tr->state = TR_RUNNING;
	tr->start_failed = false;
	clock_gettime(CLOCK_MONOTONIC, &tr->started);
	restarts_begin(&tr->rs, now_ms());
	tr->d->driver->handle(tp, &tr->handle);
	if (adopted)
		log_info("task_runner: alloc %s task %s: adopted pid %ld, "
		    "running since before this supervisor started", tr->a->id,
		    tr->t->name, (long)tr->handle.pid);
	else {
		tr->handle.started_at_ms = (int64_t)time(NULL) * 1000;
		tr->handle.plugin_healthy = false;
		tr_event(tr, "Started", "pid %ld", (long)tr->handle.pid);
		put_handle(tr);
	}
	if (tr->stop_asked) {
		trun_stop(tr);
		return;
	}
	if (tr->ps != NULL)
		plugsup_start(tr->ps, adopted, adopted &&
		    tr->handle.plugin_healthy);
}

/*
 * Under crun, as the alloc's id or its allow-listed user: every exec
 * task, an unprivileged plugin too (its socket dir and mount root are
 * bound in by the mounter).
 */
static bool
sandboxed(const struct trun *tr)
{
	return tr->t->driver == ALLOC_DRIVER_EXEC;
}

/* Who a sandboxed task runs as: 0, or -errno with tr->why. */
static int
task_ids(struct trun *tr, uint32_t *uid, uint32_t *gid)
{
	struct passwd *pw;

	if (tr->t->user != NULL) {
		if ((pw = getpwnam(tr->t->user)) == NULL) {
			snprintf(tr->why, sizeof(tr->why), "user %s: no such "
			    "user", tr->t->user);
			return -ENOENT;
		}
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		return 0;
	}
	if (tr->task_id == 0) {
		snprintf(tr->why, sizeof(tr->why), "its allocation holds no "
		    "task id from berth-registry yet");
		return -EAGAIN;
	}
	*uid = *gid = tr->task_id;
	return 0;
}

/*
 * A limit whose controller the tasks' cgroup parent lacks is left out
 * (crun could not set it, and the task would not start), and said so.
 */
static void
drop_missing_limits(struct trun *tr, struct task_spec *spec)
{
	const struct cgroup_mounts *m = tr->d->cgroups;
	const char *p = tr->d->cgroup_parent;

	if (m == NULL || p == NULL || p[0] == '\0')
		return;
	if ((spec->memory_bytes | spec->memory_max_bytes) != 0 &&
	    !cgroup_can_limit(m, p, "memory")) {
		log_info("alloc %s task %s: its memory limit is not enforced: "
		    "no memory controller for cgroup %s", tr->a->id,
		    tr->t->name, p);
		spec->memory_bytes = spec->memory_max_bytes = 0;
	}
	if (spec->cpu_shares != 0 && !cgroup_can_limit(m, p, "cpu")) {
		log_info("alloc %s task %s: its cpu share is not enforced: "
		    "no cpu controller for cgroup %s", tr->a->id, tr->t->name,
		    p);
		spec->cpu_shares = 0;
	}
	if (spec->pids_max != 0 && !cgroup_can_limit(m, p, "pids")) {
		log_info("alloc %s task %s: its pids limit is not enforced: "
		    "no pids controller for cgroup %s", tr->a->id, tr->t->name,
		    p);
		spec->pids_max = 0;
	}
}

static void
sandbox_spec(struct trun *tr, struct task_spec *spec)
{
	const struct alloc_task *t = tr->t;

	spec->sandbox = true;
	(void)task_ids(tr, &spec->uid, &spec->gid);
	spec->user = t->user;
	spec->network_none = tr->a->network_none;
	spec->memory_bytes = (uint64_t)t->memory_mb << 20;
	spec->memory_max_bytes = (uint64_t)t->memory_max_mb << 20;
	/* cpu.shares' least is 2. */
	spec->cpu_shares = t->cpu < 2 ? 2 : (uint32_t)t->cpu;
	spec->pids_max = (uint32_t)t->pids;
	spec->kill_timeout_ms = t->kill_timeout_ms;
	drop_missing_limits(tr, spec);
}

static void
launch(struct trun *tr)
{
	struct task_spec spec = { 0 };
	char dir[4096], rel[512], type[16], **args = NULL;
	size_t i;
	int r;

	spec.alloc = tr->a->id;
	spec.task = tr->t->name;
	spec.endpoint = tr->ps != NULL ? tr->endpoint : NULL;
	if (tr->t->driver == ALLOC_DRIVER_EXEC) {
		spec.kind = TASKDRV_EXEC;
		layout_task_dir(rel, sizeof(rel), tr->a->id, tr->t->name);
		layout_abs(dir, sizeof(dir), tr->d->data_dir, rel);
		spec.dir = dir;
		spec.command = tr->t->command;
		/* A plugin's {csi_endpoint}: the socket its plugsup watches. */
		if (tr->ps != NULL)
			args = alloc_task_args(tr->t, tr->socket);
		spec.args = args != NULL ? args : tr->t->args;
		spec.nargs = tr->t->nargs;
		spec.env = tr->t->env;
		spec.nenv = tr->t->nenv;
		spec.log_max_bytes = (int64_t)tr->t->log_max_file_mb << 20;
		spec.log_max_files = tr->t->log_max_files;
		if (sandboxed(tr))
			sandbox_spec(tr, &spec);
	}
	if (tr->ps != NULL) {
		snprintf(type, sizeof(type), "%s", alloc_csi_type_name(
		    tr->t->csi.type));
		spec.plugin_type = type;
		spec.plugin_id = tr->t->csi.id != NULL ? tr->t->csi.id :
		    tr->t->plugin;
	}
	if (tr->t->driver != ALLOC_DRIVER_EXEC) {
		spec.kind = TASKDRV_PRIVILEGED;
		spec.definition = tr->t->plugin;
		/* Its log writer's limits: the "logs" block, as a shim's. */
		if ((r = logs_plugin_limits(tr->d->data_dir, tr->a->id,
		    tr->t->plugin, (long long)tr->t->log_max_file_mb << 20,
		    tr->t->log_max_files)) < 0)
			tr_warning(tr, "LogLimits", "its logs keep berth-shim's "
			    "default limits: %s", strerror(-r));
	}
	tr->state = TR_STARTING;
	tr->proc = tr->d->driver->start(tr->d->driver_ctx, &spec, on_started,
	    on_exited, tr);
	/* The driver has started the task with them, or failed to. */
	for (i = 0; args != NULL && i < tr->t->nargs; i++)
		free(args[i]);
	free(args);
}

static void
on_prepared(const struct priv_result *res, void *arg)
{
	struct trun *tr = arg;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE && tr->why[0] == '\0')
		snprintf(tr->why, sizeof(tr->why), "berth-mounter: %s: %s",
		    ipc_error_name(res->code), res->message);
	if (--tr->steps > 0)
		return;
	if (tr->stop_asked) {
		finish(tr);
		return;
	}
	if (tr->why[0] != '\0') {
		tr_warning(tr, "SetupFailure", "%s", tr->why);
		tr->start_failed = true;
		restart_later(tr);
		return;
	}
	/* A socket left by an earlier run, which would be probed as if new,
	 * the mounter removed (PreparePlugin): the dir is not ours to write. */
	if (tr->ps != NULL)
		plugsup_launching(tr->ps);
	launch(tr);
}

/* r: a priv_*() call's return, made with on_prepared and tr. */
static void
mounter_step(struct trun *tr, int r)
{
	if (r < 0) {
		snprintf(tr->why, sizeof(tr->why), "%s", MCLIENT_UNREACHABLE);
		return;
	}
	tr->steps++;
}

/* The task's directory, and a plugin's socket and mount directories. */
static void
start(struct trun *tr)
{
	struct mclient *mc = tr->d->mounter;
	bool exec = tr->t->driver == ALLOC_DRIVER_EXEC;
	uint32_t uid = (uint32_t)tr->d->uid, gid = (uint32_t)tr->d->gid;

	tr->state = TR_PREPARING;
	tr->why[0] = '\0';
	tr->steps = 1;		/* this function's own, released below */
	if (tr->have_adopt) {
		tr->adopting = true;
		tr->state = TR_STARTING;
		tr->steps = 0;
		tr->proc = tr->d->driver->adopt(tr->d->driver_ctx, exec ?
		    TASKDRV_EXEC : TASKDRV_PRIVILEGED, tr->a->id, tr->t->name,
		    &tr->handle, on_started, on_exited, tr);
		return;
	}
	/* A sandboxed task's directory is its group's to write in. */
	if (exec && sandboxed(tr) && task_ids(tr, &uid, &gid) < 0)
		exec = false;	/* tr->why says; tried again later */
	if (exec)
		mounter_step(tr, priv_prepare_task(mc, tr->a->id, tr->t->name,
		    uid, gid, on_prepared, tr));
	/* A root plugin's socket dir stays root's, for our group; a task's
	 * is its uid's, for our group (setgid), so that we connect. */
	if (tr->ps != NULL)
		mounter_step(tr, priv_prepare_plugin(mc,
		    alloc_csi_type_name(tr->t->csi.type), tr->t->csi.id,
		    tr->a->id, exec ? uid : 0, (uint32_t)tr->d->gid,
		    on_prepared, tr));
	/* Release our own step: the answers (or this) go on from there. */
	on_prepared(&(struct priv_result){ BERTH__ERROR_CODE__ERROR_NONE, "" },
	    tr);
}

static void
on_timer(evutil_socket_t fd, short ev, void *arg)
{
	struct trun *tr = arg;

	(void)fd;
	(void)ev;
	if (tr->state == TR_RESTART_WAIT)
		start(tr);
	else if ((tr->state == TR_STOPPING || tr->restart_asked) &&
	    tr->proc != NULL) {
		/* It did not stop within kill_timeout. */
		tr_event(tr, "Killing", "still running after kill_timeout; "
		    "sending SIGKILL");
		tr->d->driver->signal(tr->proc, SIGKILL);
	}
}

static void
kill_task(struct trun *tr)
{
	int r;

	if (tr->proc == NULL)
		return;
	if ((r = tr->d->driver->signal(tr->proc, SIGTERM)) < 0 && r != -ESRCH)
		log_warnx("task_runner: alloc %s task %s: SIGTERM: %s",
		    tr->a->id, tr->t->name, strerror(-r));
	arm(tr, tr->t->kill_timeout_ms);
}

static void
deregistered(void *arg)
{
	struct trun *tr = arg;

	if (tr->proc != NULL)
		kill_task(tr);
	else
		finish(tr);
}

/* It ended for good before the supervisor restarted: so it stays. */
static void
restore_end(struct trun *tr, const Berth__TaskEnd *e)
{
	tr->state = TR_ENDED;
	tr->end.failed = e->failed;
	tr->end.exited = e->exited;
	tr->end.signaled = e->signaled;
	tr->end.code = e->code;
	snprintf(tr->reason, sizeof(tr->reason), "%s", e->reason);
	snprintf(tr->version, sizeof(tr->version), "%s", e->version);
	tr->end.reason = tr->reason;
	tr->end.version = tr->version;
}

struct trun *
trun_new(const struct trun_deps *d, const struct alloc *a,
    const struct alloc_task *t, const Berth__TaskHandle *adopt,
    trun_stopped_cb stopped, void *arg)
{
	struct plugsup_conf pc = { 0 };
	char rel[512];
	struct trun *tr;

	tr = xcalloc(1, sizeof(*tr));
	tr->d = d;
	tr->a = a;
	tr->t = t;
	tr->stopped = stopped;
	tr->arg = arg;
	tr->backoff_ms = TRUN_RESTART_FIRST_MS;
	berth__task_handle__init(&tr->handle);
	berth__task_end__init(&tr->end);
	tr->end.reason = tr->reason;
	tr->end.version = tr->version;
	if (adopt != NULL) {
		tr->handle.pid = adopt->pid;
		tr->handle.start_time = adopt->start_time;
		tr->handle.started_at_ms = adopt->started_at_ms;
		tr->handle.plugin_healthy = adopt->plugin_healthy;
		tr->handle.restarts = adopt->restarts;
		tr->handle.shim_pid = adopt->shim_pid;
		tr->handle.shim_start_time = adopt->shim_start_time;
		tr->handle.run_id = adopt->run_id;
		tr->rs.interval_start_ms = adopt->interval_start_ms;
		tr->rs.count = (int)adopt->interval_restarts;
		tr->have_adopt = adopt->pid > 0 && adopt->end == NULL;
		if (adopt->end != NULL)
			restore_end(tr, adopt->end);
	}
	if ((tr->timer = evtimer_new(d->base, on_timer, tr)) == NULL)
		oom("trun_new");
	if (t->csi.type != ALLOC_CSI_NONE) {
		if (layout_plugin_socket(rel, sizeof(rel), a->id) < 0 ||
		    layout_abs(tr->socket, sizeof(tr->socket),
		    d->data_dir, rel) < 0)
			goto fail;
		snprintf(tr->endpoint, sizeof(tr->endpoint), "unix://%s",
		    tr->socket);
		pc.alloc = a->id;
		pc.task = t->name;
		pc.id = t->csi.id;
		pc.type = t->csi.type == ALLOC_CSI_NODE ? PLUGSUP_NODE :
		    t->csi.type == ALLOC_CSI_CONTROLLER ? PLUGSUP_CONTROLLER :
		    PLUGSUP_MONOLITH;
		pc.health_timeout_ms = t->csi.health_timeout_ms;
		pc.heartbeat_ms = d->heartbeat_ms;
		pc.socket = tr->socket;
		if ((tr->ps = d->plugsup_new(d->plugsup_ctx, &pc, &plugin_ops,
		    tr)) == NULL)
			goto fail;
	}
	if ((tr->dh = drivermgr_handler(d->drivers, alloc_driver_name(
	    t->driver), a->id, t->name, plugin_event, tr)) == NULL)
		oom("trun_new");
	return tr;
fail:
	event_free(tr->timer);
	free(tr);
	return NULL;
}

void
trun_run(struct trun *tr)
{
	/* An adoption under way that fails starts the task at once. */
	tr->hold = false;
	if (tr->state == TR_PENDING)
		start(tr);
}

void
trun_adopt(struct trun *tr)
{
	if (tr->state != TR_PENDING || !tr->have_adopt)
		return;
	tr->hold = true;
	start(tr);
}

void
trun_stop(struct trun *tr)
{
	tr->stop_asked = true;
	switch (tr->state) {
	case TR_PENDING:
	case TR_RESTART_WAIT:
		finish(tr);
		return;
	case TR_PREPARING:
	case TR_STARTING:
		return;		/* their callbacks see stop_asked */
	case TR_RUNNING:
		tr->state = TR_STOPPING;
		if (tr->ps != NULL)
			plugsup_stop(tr->ps, deregistered, tr);
		else
			deregistered(tr);
		return;
	case TR_ENDED:
		finish(tr);
		return;
	case TR_STOPPING:
	case TR_DEAD:
		return;
	}
}

void
trun_forget(struct trun *tr)
{
	if (tr->state != TR_ENDED)
		return;
	tr->state = TR_DEAD;
	delete_handle(tr);
}

void
trun_set_id(struct trun *tr, uint32_t id)
{
	tr->task_id = id;
}

void
trun_set_version(struct trun *tr, const char *version)
{
	snprintf(tr->version, sizeof(tr->version), "%s", version);
}

void
trun_free(struct trun *tr)
{
	if (tr == NULL)
		return;
	if (tr->proc != NULL)
		tr->d->driver->free(tr->proc);
	plugsup_free(tr->ps);
	drv_handler_free(tr->dh);
	priv_forget(tr->d->mounter, tr);
	event_free(tr->timer);
	for (int i = 0; i < TRUN_EVENTS; i++)
		free(tr->events[i].message);
	free(tr);
}

const char *
trun_name(const struct trun *tr)
{
	return tr->t->name;
}

bool
trun_dead(const struct trun *tr)
{
	return tr->state == TR_DEAD;
}

pid_t
trun_pid(const struct trun *tr)
{
	return tr->proc != NULL ? tr->d->driver->pid(tr->proc) : 0;
}

size_t
trun_nevents(const struct trun *tr)
{
	return tr->nevents;
}

const struct task_event *
trun_event(const struct trun *tr, size_t i)
{
	return i < tr->nevents ? &tr->events[(tr->first + i) % TRUN_EVENTS] :
	    NULL;
}

static const char *const state_names[] = { "pending", "preparing",
	"starting", "running", "restarting", "stopping", "dead", "ended" };

const char *
trun_state(const struct trun *tr)
{
	if (tr->state == TR_ENDED)
		return tr->end.failed ? "failed" : "complete";
	return state_names[tr->state];
}

bool
trun_ended(const struct trun *tr)
{
	return tr->state == TR_ENDED;
}

bool
trun_failed(const struct trun *tr)
{
	return tr->state == TR_ENDED && tr->end.failed;
}

const char *
trun_end_reason(const struct trun *tr)
{
	return tr->state == TR_ENDED ? tr->reason : NULL;
}

bool
trun_last_exit(const struct trun *tr, bool *signaled, int *code)
{
	*signaled = tr->end.signaled;
	*code = tr->end.code;
	return tr->end.exited;
}

bool
trun_usage(const struct trun *tr, struct cgroup_usage *u)
{
	char path[CGROUP_PATH_MAX];

	if (tr->state != TR_RUNNING || !sandboxed(tr) ||
	    tr->d->cgroups == NULL || tr->d->cgroup_parent == NULL ||
	    tr->d->cgroup_parent[0] == '\0' || (size_t)snprintf(path,
	    sizeof(path), "%s/%s@%s", tr->d->cgroup_parent, tr->a->id,
	    tr->t->name) >= sizeof(path))
		return false;
	return cgroup_usage(tr->d->cgroups, path, u) == 0;
}

uint32_t
trun_restarts(const struct trun *tr)
{
	return tr->handle.restarts;
}

const char *
trun_start_failure(const struct trun *tr, int64_t *retry_at_ms)
{
	if (tr->state != TR_RESTART_WAIT || !tr->start_failed)
		return NULL;
	*retry_at_ms = tr->retry_at_ms;
	return tr->why;
}

int
trun_plugin_healthy(const struct trun *tr)
{
	return tr->ps == NULL ? -1 : plugsup_healthy(tr->ps);
}
