/*
 * taskdrv.c: start, adopt, signal and watch plugin tasks (see taskdrv.h).
 *
 * Owns: the processes of exec tasks (fork and exec in a session of their
 * own), the supervisor's side of the mounter's StartPlugin, AdoptPlugin,
 * SignalPlugin and PluginExited for privileged ones, and one pidfd per
 * exec task. Must not: reap any pid but its own tasks' (the supervisor
 * reaps its helpers by pid), or leave a descriptor open in a task.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/pidfd.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#include "supervisor.h"
#include "taskdrv.h"

#define TASKDRV_MOUNTER_TIMEOUT_MS 15000
#define IPC_BYTES(s) ((ProtobufCBinaryData){ strlen(s), (uint8_t *)(s) })

struct taskproc {
	struct taskdrv *drv;
	enum taskdrv_kind kind;
	pid_t pid;
	uint64_t start_time;
	int pidfd;			/* exec tasks */
	struct event *ev;		/* pidfd readable */
	struct event *later;		/* delivers the started callback */
	int err;
	char why[256];
	bool started_told, exited;
	bool waiting;			/* a mounter request is in flight */
	taskproc_started_cb started;
	taskproc_exited_cb exited_cb;
	void *arg;
	TAILQ_ENTRY(taskproc) entry;
};

struct taskdrv {
	struct supervisor *sv;
	TAILQ_HEAD(, taskproc) procs;
};

int
proc_start_time(pid_t pid, uint64_t *start)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* comm may hold anything, even ") ": the last one ends it. */
	if ((p = strrchr(buf, ')')) == NULL)
		return -EIO;
	for (i = 0; i < 20 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &v) != 1)
		return -EIO;
	*start = v;
	return 0;
}

void
task_exit_describe(const struct task_exit *ex, char *buf, size_t n)
{
	if (!ex->status_known)
		snprintf(buf, n, "ended (status unknown: it was adopted)");
	else if (ex->signaled)
		snprintf(buf, n, "was killed by signal %d (SIG%s)", ex->code,
		    sigabbrev_np(ex->code) ? sigabbrev_np(ex->code) : "?");
	else
		snprintf(buf, n, "exited with status %d", ex->code);
}

struct taskdrv *
taskdrv_new(struct supervisor *sv)
{
	struct taskdrv *drv;

	if ((drv = calloc(1, sizeof(*drv))) == NULL)
		return NULL;
	drv->sv = sv;
	TAILQ_INIT(&drv->procs);
	return drv;
}

void
taskdrv_free(struct taskdrv *drv)
{
	struct taskproc *tp;

	if (drv == NULL)
		return;
	while ((tp = TAILQ_FIRST(&drv->procs)) != NULL)
		taskproc_free(tp);
	free(drv);
}

static struct taskproc *
tp_new(struct taskdrv *drv, enum taskdrv_kind kind, taskproc_started_cb
    started, taskproc_exited_cb exited, void *arg);

static void
tell_started(struct taskproc *tp)
{
	if (tp->started_told)
		return;
	tp->started_told = true;
	evtimer_del(tp->later);
	tp->started(tp, tp->err, tp->why, tp->arg);
}

static void
on_later(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	tell_started(arg);
}

/* Fail or succeed from the event loop, never from within the call. */
static void
finish_later(struct taskproc *tp, int err)
{
	struct timeval now = { 0, 0 };

	tp->err = err;
	evtimer_add(tp->later, &now);
}

static void
tell_exited(struct taskproc *tp, const struct task_exit *ex)
{
	if (tp->exited)
		return;
	tp->exited = true;
	tell_started(tp);
	if (tp->ev != NULL) {
		event_free(tp->ev);
		tp->ev = NULL;
	}
	if (tp->pidfd >= 0) {
		close(tp->pidfd);
		tp->pidfd = -1;
	}
	tp->exited_cb(tp, ex, tp->arg);
}

static void
on_pidfd(evutil_socket_t fd, short ev, void *arg)
{
	struct taskproc *tp = arg;
	struct task_exit ex = { 0 };
	siginfo_t si = { 0 };

	(void)ev;
	/* A status only for our own children; an adoptee just ends. */
	ex.status_known = waitid(P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG) ==
	    0 && si.si_pid == tp->pid;
	ex.signaled = ex.status_known && si.si_code != CLD_EXITED;
	ex.code = ex.status_known ? si.si_status : 0;
	tell_exited(tp, &ex);
}

static int
watch_pidfd(struct taskproc *tp)
{
	if ((tp->pidfd = pidfd_open(tp->pid, 0)) < 0)
		return -errno;
	if ((tp->ev = event_new(tp->drv->sv->base, tp->pidfd, EV_READ,
	    on_pidfd, tp)) == NULL || event_add(tp->ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

/* argv and envp for execve, built before fork: the child only execs. */
static char **
build_vec(const char *first, char *const *items, size_t n, char **extra,
    size_t nextra)
{
	char **v;
	size_t i, k = 0;

	if ((v = calloc(n + nextra + 2, sizeof(*v))) == NULL)
		return NULL;
	if (first != NULL)
		v[k++] = (char *)first;
	for (i = 0; i < n; i++)
		v[k++] = items[i];
	for (i = 0; i < nextra; i++)
		v[k++] = extra[i];
	return v;
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

/*
 * The child: a session of its own, the task's directory, its log files
 * as stdout and stderr, nothing else open, default signal handling.
 * Only async-signal-safe calls: the supervisor has threads (gRPC).
 */
static void __attribute__((noreturn))
exec_child(const struct task_spec *spec, char **argv, char **envp, int out,
    int err, int report)
{
	sigset_t none;
	int e, devnull;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (setsid() < 0 || chdir(spec->dir) < 0 ||
	    (devnull = open("/dev/null", O_RDONLY)) < 0 ||
	    dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
	    dup3(report, 3, O_CLOEXEC) < 0 ||
	    close_range(4, ~0U, 0) < 0)
		goto fail;
	execve(spec->command, argv, envp);
fail:
	e = errno;
	(void)!write(3, &e, sizeof(e));
	_exit(127);
}

static int
open_log(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
	    O_NOFOLLOW, 0640);
}

static int
start_exec(struct taskproc *tp, const struct task_spec *spec)
{
	char endpoint[600], alloc[160], task[160], taskdir[4200],
	    *extra[5], **argv = NULL, **envp = NULL;
	int out = -1, err = -1, pipefd[2] = { -1, -1 }, e = 0, r = 0;
	size_t nextra = 0;
	ssize_t n;
	pid_t pid;

	snprintf(alloc, sizeof(alloc), "BERTH_ALLOC_ID=%s", spec->alloc);
	snprintf(task, sizeof(task), "BERTH_TASK_NAME=%s", spec->task);
	snprintf(taskdir, sizeof(taskdir), "BERTH_TASK_DIR=%s", spec->dir);
	extra[nextra++] = alloc;
	extra[nextra++] = task;
	extra[nextra++] = taskdir;
	if (spec->endpoint != NULL) {
		snprintf(endpoint, sizeof(endpoint), "CSI_ENDPOINT=%s",
		    spec->endpoint);
		extra[nextra++] = endpoint;
	}
	if (!env_has(spec->env, spec->nenv, "PATH"))
		extra[nextra++] = "PATH=/usr/local/bin:/usr/bin:/bin";
	if ((argv = build_vec(spec->command, spec->args, spec->nargs, NULL,
	    0)) == NULL || (envp = build_vec(NULL, spec->env, spec->nenv,
	    extra, nextra)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((out = open_log(spec->dir, "stdout.log")) < 0 ||
	    (err = open_log(spec->dir, "stderr.log")) < 0) {
		r = -errno;
		snprintf(tp->why, sizeof(tp->why), "cannot open its log files "
		    "in %s: %s", spec->dir, strerror(errno));
		goto out;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	if ((pid = fork()) < 0) {
		r = -errno;
		snprintf(tp->why, sizeof(tp->why), "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		exec_child(spec, argv, envp, out, err, pipefd[1]);
	close(pipefd[1]);
	pipefd[1] = -1;
	/* Nothing to read: exec worked (the pipe closed on exec). */
	do
		n = read(pipefd[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	tp->pid = pid;
	if (n == sizeof(e)) {
		waitpid(pid, NULL, 0);
		tp->pid = 0;
		r = -e;
		snprintf(tp->why, sizeof(tp->why), "cannot run %s: %s",
		    spec->command, strerror(e));
		goto out;
	}
	if ((r = proc_start_time(pid, &tp->start_time)) < 0 ||
	    (r = watch_pidfd(tp)) < 0)
		snprintf(tp->why, sizeof(tp->why), "cannot watch pid %ld: %s",
		    (long)pid, strerror(-r));
out:
	if (r < 0 && tp->why[0] == '\0')
		snprintf(tp->why, sizeof(tp->why), "cannot start %s: %s",
		    spec->command, strerror(-r));
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (out >= 0)
		close(out);
	if (err >= 0)
		close(err);
	free(argv);
	free(envp);
	return r;
}

static void
fail_now(struct taskproc *tp, int err)
{
	tp->err = err;
	tell_started(tp);
}

static bool
mounter_failed(struct taskproc *tp, Berth__Envelope *env, const char *what)
{
	if (env->error == NULL)
		return false;
	snprintf(tp->why, sizeof(tp->why), "berth-mounter refused %s: %s: %s",
	    what, ipc_error_name(env->error->code),
	    env->error->message ? env->error->message : "");
	return true;
}

static void
on_plugin_started(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct taskproc *tp = arg;

	(void)c;
	if (fd >= 0)
		close(fd);	/* the mounter watches it and tells us */
	tp->waiting = false;
	if (mounter_failed(tp, env, "to start the plugin")) {
		fail_now(tp, -EIO);
		return;
	}
	if (env->body_case != BERTH__ENVELOPE__BODY_PLUGIN_STARTED ||
	    env->plugin_started->handle == NULL) {
		snprintf(tp->why, sizeof(tp->why), "berth-mounter answered "
		    "with %s", ipc_body_name(env->body_case));
		fail_now(tp, -EIO);
		return;
	}
	tp->pid = (pid_t)env->plugin_started->handle->pid;
	tp->start_time = env->plugin_started->handle->start_time;
	tp->err = 0;
	tell_started(tp);
}

static int
start_privileged(struct taskproc *tp, const struct task_spec *spec)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__StartPlugin sp = BERTH__START_PLUGIN__INIT;
	struct peer *m = &tp->drv->sv->mounter;

	sp.definition = IPC_BYTES(spec->definition);
	sp.plugin_type = IPC_BYTES(spec->plugin_type);
	sp.plugin_id = IPC_BYTES(spec->plugin_id);
	sp.alloc_id = IPC_BYTES(spec->alloc);
	env.body_case = BERTH__ENVELOPE__BODY_START_PLUGIN;
	env.start_plugin = &sp;
	if (m->chan == NULL || chan_request(m->chan, &env, -1,
	    TASKDRV_MOUNTER_TIMEOUT_MS, on_plugin_started, tp) < 0) {
		snprintf(tp->why, sizeof(tp->why), "cannot ask berth-mounter "
		    "to start plugin definition %s", spec->definition);
		return -EPIPE;
	}
	tp->waiting = true;
	return 0;
}

static struct taskproc *
tp_new(struct taskdrv *drv, enum taskdrv_kind kind, taskproc_started_cb
    started, taskproc_exited_cb exited, void *arg)
{
	struct taskproc *tp;

	if ((tp = calloc(1, sizeof(*tp))) == NULL)
		return NULL;
	if ((tp->later = evtimer_new(drv->sv->base, on_later, tp)) == NULL) {
		free(tp);
		return NULL;
	}
	tp->drv = drv;
	tp->kind = kind;
	tp->pidfd = -1;
	tp->started = started;
	tp->exited_cb = exited;
	tp->arg = arg;
	TAILQ_INSERT_TAIL(&drv->procs, tp, entry);
	return tp;
}

struct taskproc *
taskproc_start(struct taskdrv *drv, const struct task_spec *spec,
    taskproc_started_cb started, taskproc_exited_cb exited, void *arg)
{
	struct taskproc *tp;
	int r;

	if ((tp = tp_new(drv, spec->kind, started, exited, arg)) == NULL)
		return NULL;
	if (spec->kind == TASKDRV_EXEC)
		r = start_exec(tp, spec);
	else if ((r = start_privileged(tp, spec)) == 0)
		return tp;	/* the mounter's answer tells */
	finish_later(tp, r);
	return tp;
}

static void
on_plugin_adopted(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct taskproc *tp = arg;

	(void)c;
	if (fd >= 0)
		close(fd);
	tp->waiting = false;
	if (mounter_failed(tp, env, "to adopt the plugin")) {
		fail_now(tp, -ESRCH);
		return;
	}
	tp->err = 0;
	tell_started(tp);
}

struct taskproc *
taskproc_adopt(struct taskdrv *drv, enum taskdrv_kind kind, pid_t pid,
    uint64_t start_time, taskproc_started_cb started,
    taskproc_exited_cb exited, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__AdoptPlugin ap = BERTH__ADOPT_PLUGIN__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;
	struct taskproc *tp;
	uint64_t now;
	int r = 0;

	if ((tp = tp_new(drv, kind, started, exited, arg)) == NULL)
		return NULL;
	tp->pid = pid;
	tp->start_time = start_time;
	if (kind == TASKDRV_PRIVILEGED) {
		h.pid = (uint32_t)pid;
		h.start_time = start_time;
		ap.handle = &h;
		env.body_case = BERTH__ENVELOPE__BODY_ADOPT_PLUGIN;
		env.adopt_plugin = &ap;
		if (drv->sv->mounter.chan != NULL &&
		    chan_request(drv->sv->mounter.chan, &env, -1,
		    TASKDRV_MOUNTER_TIMEOUT_MS, on_plugin_adopted, tp) == 0) {
			tp->waiting = true;
			return tp;
		}
		snprintf(tp->why, sizeof(tp->why), "cannot ask berth-mounter "
		    "to adopt pid %ld", (long)pid);
		finish_later(tp, -EPIPE);
		return tp;
	}
	/* The pidfd first: then a matching start time proves the process. */
	if (pid <= 0 || (r = watch_pidfd(tp)) < 0 ||
	    (r = proc_start_time(pid, &now)) < 0 || now != start_time) {
		r = r < 0 ? r : -ESRCH;
		snprintf(tp->why, sizeof(tp->why), "pid %ld is gone%s", (long)pid,
		    r == -ESRCH && pid > 0 ? " (or is another process now)" :
		    "");
		if (tp->ev != NULL) {
			event_free(tp->ev);
			tp->ev = NULL;
		}
		if (tp->pidfd >= 0) {
			close(tp->pidfd);
			tp->pidfd = -1;
		}
		r = -ESRCH;
	}
	finish_later(tp, r);
	return tp;
}

static void
on_signalled(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	(void)c;
	(void)arg;
	if (fd >= 0)
		close(fd);
	if (env->error != NULL)
		log_warnx("on_signalled: berth-mounter could not signal a "
		    "plugin: %s: %s", ipc_error_name(env->error->code),
		    env->error->message ? env->error->message : "");
}

int
taskproc_signal(struct taskproc *tp, int sig)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__SignalPlugin sp = BERTH__SIGNAL_PLUGIN__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;

	if (tp->exited || tp->pid <= 0)
		return -ESRCH;
	if (tp->kind == TASKDRV_EXEC)
		return pidfd_send_signal(tp->pidfd, sig, NULL, 0) < 0 ?
		    -errno : 0;
	h.pid = (uint32_t)tp->pid;
	h.start_time = tp->start_time;
	sp.handle = &h;
	switch (sig) {
	case SIGTERM: sp.signal = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM; break;
	case SIGKILL: sp.signal = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL; break;
	case SIGINT: sp.signal = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_INT; break;
	case SIGHUP: sp.signal = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_HUP; break;
	default: return -EINVAL;
	}
	env.body_case = BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN;
	env.signal_plugin = &sp;
	/* The exit comes as a PluginExited notice. */
	if (tp->drv->sv->mounter.chan == NULL ||
	    chan_request(tp->drv->sv->mounter.chan, &env, -1,
	    TASKDRV_MOUNTER_TIMEOUT_MS, on_signalled, NULL) < 0)
		return -EPIPE;
	return 0;
}

pid_t
taskproc_pid(const struct taskproc *tp)
{
	return tp->pid;
}

uint64_t
taskproc_start_time(const struct taskproc *tp)
{
	return tp->start_time;
}

void
taskproc_free(struct taskproc *tp)
{
	if (tp == NULL)
		return;
	TAILQ_REMOVE(&tp->drv->procs, tp, entry);
	if (tp->ev != NULL)
		event_free(tp->ev);
	if (tp->pidfd >= 0)
		close(tp->pidfd);
	event_free(tp->later);
	/* A mounter answer still on its way finds a dead callback arg. */
	if (tp->waiting)
		chan_forget(tp->drv->sv->mounter.chan, tp);
	free(tp);
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
		if (tp->kind != TASKDRV_PRIVILEGED || tp->exited ||
		    tp->pid != (pid_t)pe->handle->pid ||
		    tp->start_time != pe->handle->start_time)
			continue;
		ex.status_known = pe->status_known;
		ex.signaled = pe->signaled;
		ex.code = pe->code;
		tell_exited(tp, &ex);
		break;
	}
	return true;
}
