/*
 * taskdrv_sandbox.c: the exec driver's sandboxed tasks (see taskdrv.h
 * and shim/shim.h). berth-mounter starts crun on root's template, with
 * berth-shim as the container's init under the task's uid; the
 * supervisor sends the shim what to run over the channel the mounter
 * hands back, learns the start and the exit over it, and stops the task
 * through it. The sandbox has ended when crun has (crun removes its
 * state and cgroup first): only then is the exit told, so that a restart
 * never finds the old container in the way.
 *
 * Owns: the task's copy of what to run until it is sent, the channel and
 * crun's pidfd, the adoption of a running sandbox through its shim's
 * ctl.sock and of an ended one through its status file. Must not: signal
 * a task's processes itself (they are in a pid namespace of their own,
 * under another uid), or build a mounter request (mounter_client.c does).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/pidfd.h>
#include <sys/random.h>

#include "cgroup.h"
#include "mounter_client.h"
#include "procstat.h"
#include "taskdrv_int.h"
#include "xalloc.h"

/* A stop's grace for an adopted task, before the shim's own SIGKILL. */
#define ADOPTED_GRACE_MS 30000

static void
free_strv(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void
free_pending(struct taskproc *tp)
{
	struct shimchan_spec *s = tp->pending;

	if (s == NULL)
		return;
	free((char *)s->command);
	free((char *)s->dir);
	free_strv((char **)s->args, s->nargs);
	free_strv((char **)s->env, s->nenv);
	free(s);
	tp->pending = NULL;
}

static char **
copy_strv(char *const *v, size_t n, char *const *extra, size_t nextra)
{
	char **c = xcalloc(n + nextra + 1, sizeof(*c));
	size_t i;

	for (i = 0; i < n; i++)
		c[i] = xstrdup(v[i]);
	for (i = 0; i < nextra; i++)
		c[n + i] = xstrdup(extra[i]);
	return c;
}

static bool
env_has(char *const *env, size_t n, const char *name)
{
	size_t i, len = strlen(name);

	for (i = 0; i < n; i++)
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
			return true;
	return false;
}

/* What the shim is sent once its sandbox runs: the spec's strings. */
static void
keep_spec(struct taskproc *tp, const struct task_spec *spec)
{
	struct shimchan_spec *s = xcalloc(1, sizeof(*s));
	char extra[5][700];
	char *ev[5];
	size_t n = 0, i;

	snprintf(extra[n++], sizeof(extra[0]), "BERTH_ALLOC_ID=%s",
	    spec->alloc);
	snprintf(extra[n++], sizeof(extra[0]), "BERTH_TASK_NAME=%s",
	    spec->task);
	snprintf(extra[n++], sizeof(extra[0]), "BERTH_TASK_DIR=%s", spec->dir);
	if (spec->endpoint != NULL)
		snprintf(extra[n++], sizeof(extra[0]), "CSI_ENDPOINT=%s",
		    spec->endpoint);
	if (!env_has(spec->env, spec->nenv, "PATH"))
		snprintf(extra[n++], sizeof(extra[0]), "%s",
		    "PATH=/usr/local/bin:/usr/bin:/bin");
	for (i = 0; i < n; i++)
		ev[i] = extra[i];
	s->command = xstrdup(spec->command);
	s->args = copy_strv(spec->args, spec->nargs, NULL, 0);
	s->nargs = spec->nargs;
	s->env = copy_strv(spec->env, spec->nenv, ev, n);
	s->nenv = spec->nenv + n;
	s->dir = xstrdup(spec->dir);
	s->run_id = tp->run_id;
	s->sv_uid = getuid();
	s->max_bytes = spec->log_max_bytes;
	s->max_files = spec->log_max_files;
	s->plugin = spec->endpoint != NULL;
	tp->pending = s;
}

/* The shim's status directory: <data_dir>/shim/<alloc>/<task>. */
static int
status_dir(const struct taskproc *tp, char *buf, size_t n)
{
	char rel[600];

	if ((size_t)snprintf(rel, sizeof(rel), LAYOUT_SHIM_DIR "/%s/%s",
	    tp->alloc, tp->task) >= sizeof(rel))
		return -ENAMETOOLONG;
	return layout_abs(buf, n, tp->drv->data_dir, rel);
}

/* The last number of pid's NSpid line: its pid in its own namespace. */
static long
ns_pid_of(long pid)
{
	char path[64], buf[4096], *line, *last;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((line = strstr(buf, "\nNSpid:")) == NULL)
		return -1;
	line += 7;
	*strchrnul(line, '\n') = '\0';
	last = strrchr(line, '\t') != NULL ? strrchr(line, '\t') + 1 : line;
	return atol(last);
}

/* The first pid listed in /proc/<pid>/task/<pid>/children matching want
 * (want 0: any); 0 if none. */
pid_t
sandbox_child(pid_t parent, pid_t want_ns)
{
	char path[96], buf[1024], *p, *end;
	ssize_t n;
	long pid;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children",
	    (long)parent, (long)parent);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (p = buf; (pid = strtol(p, &end, 10)) > 0; p = end) {
		if (want_ns == 0)
			return (pid_t)pid;
		/* NSpid's last field: its pid in the task's namespace. */
		if (ns_pid_of(pid) == want_ns)
			return (pid_t)pid;
	}
	return 0;
}

/*
 * The task's pid as the host sees it: crun's child is the shim, the
 * shim's child with ns_pid in the sandbox is the task. Events and the
 * API name it; signals go through the shim all the same.
 */
static void
find_task(struct taskproc *tp, pid_t ns_pid)
{
	pid_t shim, task;
	uint64_t start;

	if ((shim = sandbox_child(tp->shim_pid, 0)) <= 0 ||
	    (task = sandbox_child(shim, ns_pid)) <= 0 ||
	    proc_start_time(task, &start) < 0) {
		/* Gone already: crun's pid stands for it. */
		tp->pid = tp->shim_pid;
		tp->start_time = tp->shim_start;
		return;
	}
	tp->pid = task;
	tp->start_time = start;
}

/* crun has ended: so has the sandbox, and every process in it. */
static void
on_crun(evutil_socket_t fd, short ev, void *arg)
{
	struct taskproc *tp = arg;
	struct task_exit ex = { 0 };
	char dir[PATH_MAX];

	(void)fd;
	(void)ev;
	/* A crun killed leaves its container running: its shim, if it still
	 * answers, ends it. */
	if (tp->chan >= 0)
		(void)shimchan_stop(tp->chan, SIGKILL, 0);
	if (tp->exit_seen)
		ex = tp->early;
	else if (status_dir(tp, dir, sizeof(dir)) == 0 &&
	    shimchan_read_status(dir, tp->run_id, &ex.signaled, &ex.code) == 1)
		ex.status_known = true;
	else {
		ex.unknown = "its shim ended without writing it";
		if (tp->state != TP_ASKING)
			tp_event(tp, "ShimLost", "berth-shim ended without a "
			    "status; its sandbox (crun pid %ld) ended, and its "
			    "task (pid %ld) with it", (long)tp->shim_pid,
			    (long)tp->pid);
	}
	if (tp->state == TP_ASKING && !ex.status_known) {
		snprintf(tp->why, sizeof(tp->why), "its sandbox ended before "
		    "berth-shim said whether %s runs (crun's error is in the "
		    "journal of berth-mounter)", tp->pending != NULL &&
		    tp->pending->command != NULL ? tp->pending->command :
		    "the task");
		tp_tell_started(tp, -EIO);
		return;
	}
	tp_tell_exited(tp, &ex);
}

/*
 * Did the kernel's OOM killer kill in the task's cgroup? Read as the
 * shim reports the exit, before crun removes the cgroup.
 */
static bool
oom_kills(const struct taskproc *tp)
{
	char path[CGROUP_PATH_MAX];
	struct cgroup_usage u;

	if (tp->drv->cgroups == NULL || tp->drv->cgroup_parent == NULL ||
	    tp->drv->cgroup_parent[0] == '\0' || (size_t)snprintf(path,
	    sizeof(path), "%s/%s@%s", tp->drv->cgroup_parent, tp->alloc,
	    tp->task) >= sizeof(path))
		return false;
	return cgroup_usage(tp->drv->cgroups, path, &u) == 0 &&
	    u.oom_kills > 0;
}

static void
chan_close(struct taskproc *tp)
{
	if (tp->chan_ev != NULL) {
		event_free(tp->chan_ev);
		tp->chan_ev = NULL;
	}
	if (tp->chan >= 0) {
		close(tp->chan);
		tp->chan = -1;
	}
}

static void
on_chan(evutil_socket_t fd, short ev, void *arg)
{
	struct taskproc *tp = arg;
	struct shimchan_msg m;
	int r;

	(void)ev;
	while ((r = shimchan_recv(fd, &m)) == 1) {
		if (m.type == SHIM_MSG_STARTED && m.started.run_id ==
		    tp->run_id) {
			if (m.started.err == 0) {
				/* Adopted, it says so again: pid is known. */
				if (tp->state == TP_ASKING)
					find_task(tp, m.started.task_pid);
				tp_tell_started(tp, 0);
				continue;
			}
			snprintf(tp->why, sizeof(tp->why), "%s %.160s: %s",
			    m.started.stage == SHIM_STAGE_EXEC ? "cannot run" :
			    "berth-shim could not set up",
			    m.started.stage == SHIM_STAGE_EXEC && tp->pending ?
			    tp->pending->command : tp->dir,
			    strerror(m.started.err));
			/* The callback may free tp. */
			tp_tell_started(tp, -m.started.err);
			return;
		} else if (m.type == SHIM_MSG_EXIT && m.exit.run_id ==
		    tp->run_id) {
			/* Told once crun, and the sandbox, are gone. */
			tp->exit_seen = true;
			tp->early = (struct task_exit){ .status_known = true,
			    .signaled = m.exit.signaled != 0,
			    .code = m.exit.code, .oom_killed = oom_kills(tp) };
			if (tp->early.oom_killed)
				tp_event(tp, "OOMKilled", "the kernel killed a "
				    "process of the task (pid %ld) out of "
				    "memory: it reached its memory limit",
				    (long)tp->pid);
		}
	}
	if (r == 0 || r == -EPROTO)
		chan_close(tp);
}

static int
watch_chan(struct taskproc *tp)
{
	tp->chan_ev = event_new(tp->drv->base, tp->chan, EV_READ | EV_PERSIST,
	    on_chan, tp);
	xnonnull(tp->chan_ev, "taskdrv: a shim's channel");
	return event_add(tp->chan_ev, NULL) < 0 ? -EIO : 0;
}

static int
watch_crun(struct taskproc *tp)
{
	tp->ev = event_new(tp->drv->base, tp->pidfd, EV_READ, on_crun, tp);
	xnonnull(tp->ev, "taskdrv: a sandbox's watch");
	return event_add(tp->ev, NULL) < 0 ? -EIO : 0;
}

static void
on_task_started(const struct priv_result *res, pid_t pid, uint64_t start,
    int pidfd, int chanfd, void *arg)
{
	struct taskproc *tp = arg;
	int r;

	if (tp->state != TP_ASKING) {
		if (pidfd >= 0)
			close(pidfd);
		if (chanfd >= 0)
			close(chanfd);
		return;
	}
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		snprintf(tp->why, sizeof(tp->why), "berth-mounter refused to "
		    "start its sandbox: %s: %s", ipc_error_name(res->code),
		    res->message);
		tp_tell_started(tp, -EIO);
		return;
	}
	tp->shim_pid = pid;		/* crun's, its task's pid to come */
	tp->shim_start = start;
	tp->pidfd = pidfd;
	tp->chan = chanfd;
	/* The shim answers STARTED, or why not; crun's end says the rest. */
	if ((r = shimchan_send_spec(chanfd, tp->pending)) < 0 ||
	    (r = watch_chan(tp)) < 0 || (r = watch_crun(tp)) < 0) {
		snprintf(tp->why, sizeof(tp->why), "cannot hand %s to "
		    "berth-shim: %s", tp->pending->command, strerror(-r));
		sandbox_signal(tp, SIGKILL);
		tp_tell_started(tp, r);
	}
}

void
sandbox_ask(struct taskproc *tp)
{
	if (tp->drv->mounter != NULL && priv_start_task(tp->drv->mounter,
	    tp->ask, on_task_started, tp) == 0)
		return;		/* the mounter's answer tells */
	snprintf(tp->why, sizeof(tp->why), "cannot ask berth-mounter to start "
	    "the sandbox of %.160s", tp->pending->command);
	tp_tell_later(tp, -EPIPE);
}

void
sandbox_start(struct taskproc *tp, const struct task_spec *spec)
{
	struct priv_task *pt = xcalloc(1, sizeof(*pt));
	struct unrec *u;

	tp->state = TP_ASKING;
	snprintf(tp->dir, sizeof(tp->dir), "%s", spec->dir);
	tp->grace_ms = spec->kill_timeout_ms > 0 ? (unsigned)
	    spec->kill_timeout_ms : 5000;
	while (tp->run_id == 0)
		if (getrandom(&tp->run_id, sizeof(tp->run_id), 0) !=
		    sizeof(tp->run_id))
			tp->run_id = ((uint64_t)getpid() << 32) ^
			    (uint64_t)time(NULL);
	keep_spec(tp, spec);
	/* Its strings are tp's own: alloc, task, and the user's copy. */
	pt->alloc_id = tp->alloc;
	pt->task = tp->task;
	pt->uid = spec->uid;
	pt->gid = spec->gid;
	pt->user = spec->user != NULL ? xstrdup(spec->user) : NULL;
	pt->network_none = spec->network_none;
	pt->memory_bytes = spec->memory_bytes;
	pt->memory_max_bytes = spec->memory_max_bytes;
	pt->cpu_shares = spec->cpu_shares;
	pt->pids_max = spec->pids_max;
	if (spec->endpoint != NULL) {
		pt->plugin_type = xstrdup(spec->plugin_type);
		pt->plugin_id = xstrdup(spec->plugin_id);
	}
	tp->ask = pt;
	/*
	 * A shim already answering for this task, which no handle names:
	 * its start came in the moment before its handle was in the
	 * registry, and a supervisor died there. Its task must not run
	 * twice: it is killed, and its end awaited, before the new start.
	 */
	if ((u = unrec_find(tp->drv, tp->alloc, tp->task)) == NULL)
		u = unrec_stop(tp->drv, tp->alloc, tp->task);
	if (u != NULL && unrec_wait(u, tp))
		return;
	sandbox_ask(tp);
}

/*
 * After a restart: crun still runs (same pid and start time), and its
 * shim takes us back on ctl.sock; or it ended, and the shim's status file
 * says how.
 */
void
sandbox_adopt(struct taskproc *tp, const Berth__TaskHandle *h)
{
	struct task_exit ex = { 0 };
	char dir[PATH_MAX], rel[512];
	int r;

	tp->run_id = h->run_id;
	/* Its kill_timeout is not in the handle: the task runner's SIGKILL
	 * follows its own; this is the shim's if no supervisor is left. */
	tp->grace_ms = ADOPTED_GRACE_MS;
	if (layout_task_dir(rel, sizeof(rel), tp->alloc, tp->task) < 0 ||
	    layout_abs(tp->dir, sizeof(tp->dir), tp->drv->data_dir, rel) < 0)
		tp->dir[0] = '\0';
	if (status_dir(tp, dir, sizeof(dir)) < 0)
		dir[0] = '\0';
	tp->shim_pid = h->shim_pid;
	tp->shim_start = h->shim_start_time;
	/*
	 * Still crun (its start time), and not ended (a zombie not reaped
	 * yet has: its pidfd is readable). Where /proc hides root's
	 * processes (ProtectProc=invisible in service mode), a shim that
	 * answers on ctl.sock after the pidfd was taken proves it: crun
	 * outlives its shim, so the pid is still that crun's.
	 */
	if (tp->shim_pid > 0 && (tp->pidfd = pidfd_open(tp->shim_pid, 0)) >=
	    0) {
		struct pollfd pfd = { tp->pidfd, POLLIN, 0 };
		uint64_t now;
		bool same;

		if (proc_start_time(tp->shim_pid, &now) == 0)
			same = now == tp->shim_start;
		else if ((r = shimchan_connect(dir)) >= 0) {
			close(r);
			same = true;
		} else
			same = false;
		if (!same || poll(&pfd, 1, 0) != 0) {
			close(tp->pidfd);
			tp->pidfd = -1;
		}
	}
	if (tp->pidfd >= 0 && watch_crun(tp) == 0) {
		/* A shim not reachable now: the exit comes from its file. */
		if ((r = shimchan_connect(dir)) >= 0) {
			tp->chan = r;
			if (watch_chan(tp) < 0)
				chan_close(tp);
		} else
			log_warnx("taskdrv: alloc %s task %s: berth-shim's "
			    "%s/%s: %s; sought again when it is stopped",
			    tp->alloc, tp->task, dir, SHIM_CTL_SOCK,
			    strerror(-r));
		tp_tell_later(tp, 0);
		return;
	}
	if (tp->pidfd >= 0 && tp->ev == NULL) {
		close(tp->pidfd);
		tp->pidfd = -1;
	}
	/* crun is gone, yet its shim answers: the task would run unseen,
	 * and it goes rather than run twice. */
	if ((r = shimchan_connect(dir)) >= 0) {
		(void)shimchan_stop(r, SIGKILL, 0);
		close(r);
		tp_event(tp, "ShimLost", "the sandbox's crun (pid %ld) is gone "
		    "but its shim was still running; its task (pid %ld) was "
		    "killed", (long)tp->shim_pid, (long)tp->pid);
	}
	if (shimchan_read_status(dir, tp->run_id, &ex.signaled, &ex.code) == 1)
		ex.status_known = true;
	else
		ex.unknown = "its sandbox ended without a status";
	task_exit_describe(&ex, tp->why, sizeof(tp->why));
	tp_tell_later(tp, -ESRCH);
}

/*
 * A stop: sig to every process of the task, SIGKILL after the grace. A
 * channel that is gone (its shim could not be reached when it was
 * adopted) is sought again on ctl.sock: while its crun runs, the shim
 * answering there is this task's, and a stop must not be lost.
 */
int
sandbox_signal(struct taskproc *tp, int sig)
{
	char dir[PATH_MAX];
	int fd;

	if (tp->chan < 0 && tp->ev != NULL && status_dir(tp, dir,
	    sizeof(dir)) == 0 && (fd = shimchan_connect(dir)) >= 0) {
		log_info("taskdrv: alloc %s task %s: berth-shim answers on its "
		    "%s again", tp->alloc, tp->task, SHIM_CTL_SOCK);
		tp->chan = fd;
		if (watch_chan(tp) < 0)
			chan_close(tp);
	}
	if (tp->chan < 0)
		return -EPIPE;
	return shimchan_stop(tp->chan, sig, sig == SIGKILL ? 0 : tp->grace_ms);
}

void
sandbox_forget(struct taskproc *tp)
{
	unrec_unwait(tp);
	chan_close(tp);
	free_pending(tp);
	if (tp->ask != NULL) {
		free((char *)tp->ask->user);
		free((char *)tp->ask->plugin_type);
		free((char *)tp->ask->plugin_id);
		free(tp->ask);
		tp->ask = NULL;
	}
	if (tp->run_id != 0 && tp->drv->mounter != NULL)
		priv_forget(tp->drv->mounter, tp);
}
