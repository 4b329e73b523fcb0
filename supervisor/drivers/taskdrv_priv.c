/*
 * taskdrv_priv.c: the privileged driver: plugins defined by root in
 * plugins.d, which berth-mounter starts, watches and signals for us (see
 * taskdrv.h).
 *
 * Owns: the supervisor's side of the mounter's StartPlugin, AdoptPlugin,
 * SignalPlugin and PluginExited, through the mounter client. Must not:
 * build a mounter request (mounter_client.c does), or keep a plugin's
 * pidfd: the mounter watches the plugin and tells us how it ended.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "mounter_client.h"
#include "taskdrv_int.h"

static void
on_plugin_started(const struct priv_result *res, pid_t pid,
    uint64_t start_time, int pidfd, void *arg)
{
	struct taskproc *tp = arg;

	if (pidfd >= 0)
		close(pidfd);	/* the mounter watches it and tells us */
	if (tp->state != TP_ASKING)
		return;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		snprintf(tp->why, sizeof(tp->why), "berth-mounter refused to "
		    "start the plugin: %s: %s", ipc_error_name(res->code),
		    res->message);
		tp_tell_started(tp, -EIO);
		return;
	}
	tp->pid = pid;
	tp->start_time = start_time;
	tp_tell_started(tp, 0);
}

void
priv_task_start(struct taskproc *tp, const struct task_spec *spec)
{
	tp->state = TP_ASKING;
	if (priv_start_plugin(tp->drv->mounter, spec->definition,
	    spec->plugin_type, spec->plugin_id, spec->alloc,
	    on_plugin_started, tp) == 0)
		return;		/* the mounter's answer tells */
	snprintf(tp->why, sizeof(tp->why), "cannot ask berth-mounter to "
	    "start plugin definition %s", spec->definition);
	tp_tell_later(tp, -EPIPE);
}

static void
on_plugin_adopted(const struct priv_result *res, pid_t pid,
    uint64_t start_time, int pidfd, void *arg)
{
	struct taskproc *tp = arg;

	(void)pid;
	(void)start_time;
	if (pidfd >= 0)
		close(pidfd);	/* the mounter watches it and tells us */
	if (tp->state != TP_ASKING)
		return;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		snprintf(tp->why, sizeof(tp->why), "ended (status unknown: "
		    "berth-mounter could not adopt it: %s: %s)",
		    ipc_error_name(res->code), res->message);
		tp_tell_started(tp, -ESRCH);
		return;
	}
	tp_tell_started(tp, 0);
}

void
priv_task_adopt(struct taskproc *tp)
{
	tp->state = TP_ASKING;
	if (priv_adopt_plugin(tp->drv->mounter, tp->pid, tp->start_time,
	    on_plugin_adopted, tp) == 0)
		return;
	snprintf(tp->why, sizeof(tp->why), "ended (status unknown: "
	    "berth-mounter could not be asked to adopt it)");
	tp_tell_later(tp, -EPIPE);
}

static void
on_signalled(const struct priv_result *res, void *arg)
{
	(void)arg;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		log_warnx("on_signalled: berth-mounter could not signal a "
		    "plugin: %s: %s", ipc_error_name(res->code), res->message);
}

int
priv_task_signal(struct taskproc *tp, int sig)
{
	Berth__PluginSignal ps;

	switch (sig) {
	case SIGTERM: ps = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM; break;
	case SIGKILL: ps = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL; break;
	case SIGINT: ps = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_INT; break;
	case SIGHUP: ps = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_HUP; break;
	default: return -EINVAL;
	}
	/* The exit comes as a PluginExited notice. */
	if (priv_signal_plugin(tp->drv->mounter, tp->pid, tp->start_time, ps,
	    on_signalled, NULL) < 0)
		return -EPIPE;
	return 0;
}

void
priv_task_forget(struct taskproc *tp)
{
	priv_forget(tp->drv->mounter, tp);
}

bool
taskdrv_mounter_notice(struct taskdrv *drv, const void *envelope)
{
	const Berth__Envelope *env = envelope;
	const Berth__PluginExited *pe;
	struct task_exit ex = { 0 };
	struct taskproc *tp;

	if (env->body_case != BERTH__ENVELOPE__BODY_PLUGIN_EXITED)
		return false;
	pe = env->plugin_exited;
	if (pe == NULL || pe->handle == NULL)
		return true;
	TAILQ_FOREACH(tp, &drv->procs, entry) {
		if (tp->kind != TASKDRV_PRIVILEGED ||
		    tp->state == TP_EXITED || tp->state == TP_FAILED ||
		    tp->pid != (pid_t)pe->handle->pid ||
		    tp->start_time != pe->handle->start_time)
			continue;
		ex.status_known = pe->status_known;
		ex.signaled = pe->signaled;
		ex.code = pe->code;
		tp_tell_exited(tp, &ex);
		break;
	}
	return true;
}
