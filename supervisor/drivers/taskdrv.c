/*
 * taskdrv.c: start, adopt, signal and watch plugin tasks (see taskdrv.h).
 *
 * Owns: the start of exec tasks through berth-shim (fork, exec, its start
 * report), their shims' pidfds and status files, the supervisor's side of
 * the mounter's StartPlugin, AdoptPlugin, SignalPlugin and PluginExited
 * for privileged ones. Must not: reap any pid but the shim's first
 * process (the supervisor reaps its helpers by pid), or leave a
 * descriptor open in a task.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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

#include "ident.h"
#include "layout.h"
#include "procstat.h"
#include "shim.h"
#include "spawn.h"
#include "supervisor.h"
#include "taskdrv.h"

struct taskproc {
	struct taskdrv *drv;
	enum taskdrv_kind kind;
	pid_t pid;
	uint64_t start_time;
	pid_t shim_pid;			/* exec tasks; 0 for a legacy handle */
	uint64_t shim_start;
	int pidfd;			/* exec: the shim's (legacy: the task's) */
	int task_pidfd;			/* exec: the task's, for signals */
	struct event *ev;		/* pidfd readable */
	struct event *later;		/* delivers the started callback */
	struct task_exit pending;	/* ended before it was watched */
	bool has_pending;
	char alloc[BERTH_IDENT_MAX + 1], task[BERTH_IDENT_MAX + 1];
	char dir[4096];			/* exec: the task directory */
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
	char shim[4096];
	taskdrv_event_cb event;
	void *event_arg;
	TAILQ_HEAD(, taskproc) procs;
};

void
task_exit_describe(const struct task_exit *ex, char *buf, size_t n)
{
	if (!ex->status_known)
		snprintf(buf, n, "ended (status unknown: %s)", ex->unknown !=
		    NULL ? ex->unknown : "it was adopted");
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
	/* A missing shim is the exec driver's fingerprint to report. */
	if (spawn_helper_path(SHIM_NAME, drv->shim, sizeof(drv->shim)) ==
	    -ENAMETOOLONG || drv->shim[0] == '\0')
		snprintf(drv->shim, sizeof(drv->shim), "%s", SHIM_NAME);
	return drv;
}

void
taskdrv_on_event(struct taskdrv *drv, taskdrv_event_cb cb, void *arg)
{
	drv->event = cb;
	drv->event_arg = arg;
}

const char *
taskdrv_shim_path(const struct taskdrv *drv)
{
	return drv->shim;
}

static void
tp_event(struct taskproc *tp, const char *type, const char *fmt, ...)
    BERTH_PRINTF(3, 4);

static void
tp_event(struct taskproc *tp, const char *type, const char *fmt, ...)
{
	char msg[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_info("taskdrv: alloc %s task %s: %s", tp->alloc, tp->task, msg);
	if (tp->drv->event != NULL)
		tp->drv->event(tp->drv->event_arg, tp->kind == TASKDRV_EXEC ?
		    "exec" : "privileged", tp->alloc, tp->task, type, msg);
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
tp_new(struct taskdrv *drv, enum taskdrv_kind kind, const char *alloc,
    const char *task, taskproc_started_cb started, taskproc_exited_cb exited,
    void *arg);

static void
tell_started(struct taskproc *tp)
{
	if (tp->started_told)
		return;
	tp->started_told = true;
	evtimer_del(tp->later);
	tp->started(tp, tp->err, tp->why, tp->arg);
}

static void tell_exited(struct taskproc *tp, const struct task_exit *ex);

static void
on_later(evutil_socket_t fd, short ev, void *arg)
{
	struct taskproc *tp = arg;

	(void)fd;
	(void)ev;
	if (tp->has_pending)
		tell_exited(tp, &tp->pending);	/* started, then ended */
	else
		tell_started(tp);
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

/*
 * A pidfd for pid if it is still the process that started at start and
 * has not exited (a zombie, not reaped yet by init, has ended).
 */
static int
open_verified(pid_t pid, uint64_t start)
{
	struct pollfd pfd;
	uint64_t now;
	int fd;

	/* The pidfd first: then a matching start time proves the process. */
	if (pid <= 0 || (fd = pidfd_open(pid, 0)) < 0)
		return -1;
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (proc_start_time(pid, &now) < 0 || now != start ||
	    poll(&pfd, 1, 0) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The shim's status line for this run of the task; false if none. */
static bool
read_status(struct taskproc *tp, struct task_exit *ex)
{
	unsigned long long start;
	char path[BERTH_PATH_BUF], buf[160], how[16];
	long pid;
	ssize_t n;
	int fd, code;

	snprintf(path, sizeof(path), "%s/%s", tp->dir, SHIM_STATUS_FILE);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "pid %ld start %llu %15s %d", &pid, &start, how,
	    &code) != 4 || pid != (long)tp->pid || start != tp->start_time ||
	    (strcmp(how, "exited") != 0 && strcmp(how, "signaled") != 0))
		return false;
	ex->status_known = true;
	ex->signaled = strcmp(how, "signaled") == 0;
	ex->code = code;
	return true;
}

/*
 * The shim has ended: its status file says how the task ended. Without
 * one the shim was killed, and its task, which lost its logs and its
 * witness, is killed too rather than left to run unseen.
 */
static void
shim_ended(struct taskproc *tp, struct task_exit *ex)
{
	if (read_status(tp, ex))
		return;
	ex->status_known = false;
	ex->unknown = "its shim ended without writing it";
	if (tp->task_pidfd < 0)
		tp->task_pidfd = open_verified(tp->pid, tp->start_time);
	/* Still the task (so its group's id is its own): all of it goes. */
	if (tp->task_pidfd >= 0 && pidfd_send_signal(tp->task_pidfd, 0, NULL,
	    0) == 0)
		kill(-tp->pid, SIGKILL);
	if (tp->task_pidfd >= 0 && pidfd_send_signal(tp->task_pidfd, SIGKILL,
	    NULL, 0) == 0)
		tp_event(tp, "ShimLost", "berth-shim (pid %ld) ended without "
		    "a status; its task (pid %ld) was killed",
		    (long)tp->shim_pid, (long)tp->pid);
	else
		tp_event(tp, "ShimLost", "berth-shim (pid %ld) ended without "
		    "a status", (long)tp->shim_pid);
}

static void
on_pidfd(evutil_socket_t fd, short ev, void *arg)
{
	struct taskproc *tp = arg;
	struct task_exit ex = { 0 };

	(void)fd;
	(void)ev;
	if (tp->shim_pid > 0)
		shim_ended(tp, &ex);
	tell_exited(tp, &ex);
}

/* Watch the shim (a legacy handle: the task), or -ESRCH: it has ended. */
static int
watch(struct taskproc *tp)
{
	pid_t pid = tp->shim_pid > 0 ? tp->shim_pid : tp->pid;

	if ((tp->pidfd = open_verified(pid, tp->shim_pid > 0 ?
	    tp->shim_start : tp->start_time)) < 0)
		return -ESRCH;
	if (tp->shim_pid > 0)
		tp->task_pidfd = open_verified(tp->pid, tp->start_time);
	else
		tp->task_pidfd = dup(tp->pidfd);
	if ((tp->ev = event_new(tp->drv->sv->base, tp->pidfd, EV_READ,
	    on_pidfd, tp)) == NULL || event_add(tp->ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

/* argv and envp for execve, built before fork: the child only execs. */
static char **
build_vec(char *const *items, size_t n, char *const *extra, size_t nextra)
{
	char **v;
	size_t i, k = 0;

	if ((v = calloc(n + nextra + 1, sizeof(*v))) == NULL)
		return NULL;
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
 * The child: berth-shim, with the report pipe as descriptor 3 and
 * nothing else open but /dev/null. Only async-signal-safe calls: the
 * supervisor has threads (gRPC).
 */
static void __attribute__((noreturn))
exec_child(const char *shim, char **argv, char **envp, int report)
{
	struct shim_report rep = { 0 };
	sigset_t none;
	int devnull;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (setsid() < 0 || (devnull = open("/dev/null", O_RDWR)) < 0 ||
	    dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
	    dup2(devnull, 2) < 0)
		goto fail;
	if (report == SHIM_REPORT_FD ? fcntl(report, F_SETFD, 0) < 0 :
	    dup2(report, SHIM_REPORT_FD) < 0)
		goto fail;
	report = SHIM_REPORT_FD;
	if (close_range(SHIM_REPORT_FD + 1, ~0U, 0) < 0)
		goto fail;
	execve(shim, argv, envp);
fail:
	rep.err = errno;
	rep.stage = SHIM_STAGE_SHIM;
	(void)!write(report, &rep, sizeof(rep));
	_exit(127);
}

static void
describe_failure(struct taskproc *tp, const struct task_spec *spec,
    const struct shim_report *rep)
{
	const char *e = strerror(rep->err);

	if (rep->stage == SHIM_STAGE_SHIM)
		snprintf(tp->why, sizeof(tp->why), "cannot run %.160s: %s",
		    tp->drv->shim, e);
	else if (rep->stage == SHIM_STAGE_EXEC)
		snprintf(tp->why, sizeof(tp->why), "cannot run %s: %s",
		    spec->command, e);
	else
		snprintf(tp->why, sizeof(tp->why), "berth-shim could not set "
		    "up the task in %s: %s", spec->dir, e);
}

/* Every process of the session that berth-shim pid leads. */
static void
kill_session(pid_t shim)
{
	struct dirent *de;
	pid_t sid;
	DIR *d;

	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atol(de->d_name);

		if (pid > 1 && proc_session(pid, &sid) == 0 && sid == shim)
			kill(pid, SIGKILL);
	}
	closedir(d);
}

/*
 * A shim already running for this task directory, which no handle
 * names: its start came in the milliseconds before the handle was in
 * the registry, and a supervisor died there. Its task must not run
 * twice: the shim's session (the shim, its task and the task's process
 * group) is killed before the task starts anew. Returns how many were
 * found.
 */
static int
kill_unrecorded(const char *dir)
{
	char path[64], buf[BERTH_PATH_BUF], want[BERTH_PATH_BUF];
	struct dirent *de;
	size_t wlen;
	int n = 0, fd;
	ssize_t len;
	DIR *d;

	/* The shim's command line: "berth-shim\0-d\0<dir>\0...". */
	wlen = (size_t)snprintf(want, sizeof(want), SHIM_NAME "%c-d%c%s%c",
	    0, 0, dir, 0);
	if (wlen >= sizeof(want) || (d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atol(de->d_name);

		if (pid <= 1)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		len = read(fd, buf, sizeof(buf));
		close(fd);
		if (len < (ssize_t)wlen || memcmp(buf, want, wlen) != 0)
			continue;
		log_warnx("taskdrv: berth-shim pid %ld runs for %s with no "
		    "handle (a supervisor died as it started); killing it and "
		    "its task before starting again", (long)pid, dir);
		kill_session(pid);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		n++;
	}
	closedir(d);
	return n;
}

/* Run the shim; its report says whether the task runs. */
static int
run_shim(struct taskproc *tp, const struct task_spec *spec, char **argv,
    char **envp)
{
	struct shim_report rep = { 0 };
	int pipefd[2];
	ssize_t n;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	if ((pid = fork()) < 0) {
		snprintf(tp->why, sizeof(tp->why), "fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -EAGAIN;
	}
	if (pid == 0)
		exec_child(tp->drv->shim, argv, envp, pipefd[1]);
	close(pipefd[1]);
	do
		n = read(pipefd[0], &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	/* Its first process exits as soon as it has forked the shim. */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (n != sizeof(rep)) {
		snprintf(tp->why, sizeof(tp->why), "berth-shim ended without "
		    "saying whether %s runs", spec->command);
		return -EIO;
	}
	if (rep.err != 0) {
		describe_failure(tp, spec, &rep);
		return -rep.err;
	}
	tp->pid = rep.task_pid;
	tp->start_time = rep.task_start;
	tp->shim_pid = rep.shim_pid;
	tp->shim_start = rep.shim_start;
	return 0;
}

static int
start_exec(struct taskproc *tp, const struct task_spec *spec)
{
	char endpoint[600], alloc[160], task[160], taskdir[BERTH_PATH_BUF],
	    size[32], files[16], *extra[5], *opts[9], **argv = NULL,
	    **envp = NULL;
	struct task_exit ex = { 0 };
	size_t nextra = 0;
	int r;

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
	snprintf(size, sizeof(size), "%lld", spec->log_max_bytes > 0 ?
	    (long long)spec->log_max_bytes : SHIM_DEFAULT_MAX_BYTES);
	snprintf(files, sizeof(files), "%d", spec->log_max_files > 0 ?
	    spec->log_max_files : SHIM_DEFAULT_MAX_FILES);
	opts[0] = SHIM_NAME;
	opts[1] = "-d";
	opts[2] = (char *)spec->dir;
	opts[3] = "-s";
	opts[4] = size;
	opts[5] = "-n";
	opts[6] = files;
	opts[7] = "--";
	opts[8] = (char *)spec->command;
	snprintf(tp->dir, sizeof(tp->dir), "%s", spec->dir);
	if ((argv = build_vec(opts, 9, spec->args, spec->nargs)) == NULL ||
	    (envp = build_vec(spec->env, spec->nenv, extra, nextra)) ==
	    NULL) {
		r = -ENOMEM;
		goto out;
	}
	(void)kill_unrecorded(spec->dir);
	if ((r = run_shim(tp, spec, argv, envp)) < 0)
		goto out;
	/* So quick that it has ended already: its status is in the file. */
	if ((r = watch(tp)) == -ESRCH) {
		shim_ended(tp, &ex);
		tp->pending = ex;
		tp->has_pending = true;
		r = 0;
	} else if (r < 0)
		snprintf(tp->why, sizeof(tp->why), "cannot watch berth-shim "
		    "(pid %ld): %s", (long)tp->shim_pid, strerror(-r));
out:
	if (r < 0 && tp->why[0] == '\0')
		snprintf(tp->why, sizeof(tp->why), "cannot start %s: %s",
		    spec->command, strerror(-r));
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

static void
on_plugin_started(const struct priv_result *res, pid_t pid,
    uint64_t start_time, int pidfd, void *arg)
{
	struct taskproc *tp = arg;

	if (pidfd >= 0)
		close(pidfd);	/* the mounter watches it and tells us */
	tp->waiting = false;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		snprintf(tp->why, sizeof(tp->why), "berth-mounter refused to "
		    "start the plugin: %s: %s", ipc_error_name(res->code),
		    res->message);
		fail_now(tp, -EIO);
		return;
	}
	tp->pid = pid;
	tp->start_time = start_time;
	tp->err = 0;
	tell_started(tp);
}

static int
start_privileged(struct taskproc *tp, const struct task_spec *spec)
{
	if (priv_start_plugin(tp->drv->sv->mounter.mclient, spec->definition,
	    spec->plugin_type, spec->plugin_id, spec->alloc,
	    on_plugin_started, tp) < 0) {
		snprintf(tp->why, sizeof(tp->why), "cannot ask berth-mounter "
		    "to start plugin definition %s", spec->definition);
		return -EPIPE;
	}
	tp->waiting = true;
	return 0;
}

static struct taskproc *
tp_new(struct taskdrv *drv, enum taskdrv_kind kind, const char *alloc,
    const char *task, taskproc_started_cb started, taskproc_exited_cb exited,
    void *arg)
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
	tp->task_pidfd = -1;
	snprintf(tp->alloc, sizeof(tp->alloc), "%s", alloc);
	snprintf(tp->task, sizeof(tp->task), "%s", task);
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

	if ((tp = tp_new(drv, spec->kind, spec->alloc, spec->task, started,
	    exited, arg)) == NULL)
		return NULL;
	if (spec->kind == TASKDRV_EXEC)
		r = start_exec(tp, spec);
	else if ((r = start_privileged(tp, spec)) == 0)
		return tp;	/* the mounter's answer tells */
	finish_later(tp, r);
	return tp;
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
	tp->waiting = false;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		snprintf(tp->why, sizeof(tp->why), "ended (status unknown: "
		    "berth-mounter could not adopt it: %s: %s)",
		    ipc_error_name(res->code), res->message);
		fail_now(tp, -ESRCH);
		return;
	}
	tp->err = 0;
	tell_started(tp);
}

struct taskproc *
taskproc_adopt(struct taskdrv *drv, enum taskdrv_kind kind,
    const char *alloc, const char *task, const Berth__TaskHandle *th,
    taskproc_started_cb started, taskproc_exited_cb exited, void *arg)
{
	struct task_exit ex = { 0 };
	struct taskproc *tp;
	char rel[512];

	if ((tp = tp_new(drv, kind, alloc, task, started, exited, arg)) ==
	    NULL)
		return NULL;
	if (th != NULL) {
		tp->pid = th->pid;
		tp->start_time = th->start_time;
		tp->shim_pid = th->shim_pid;
		tp->shim_start = th->shim_start_time;
	}
	if (kind == TASKDRV_PRIVILEGED) {
		if (priv_adopt_plugin(drv->sv->mounter.mclient, tp->pid,
		    tp->start_time, on_plugin_adopted, tp) == 0) {
			tp->waiting = true;
			return tp;
		}
		snprintf(tp->why, sizeof(tp->why), "ended (status unknown: "
		    "berth-mounter could not be asked to adopt it)");
		finish_later(tp, -EPIPE);
		return tp;
	}
	if (layout_task_dir(rel, sizeof(rel), alloc, task) < 0 ||
	    layout_abs(tp->dir, sizeof(tp->dir), drv->sv->cfg.data_dir,
	    rel) < 0)
		tp->dir[0] = '\0';
	if (tp->pid > 0 && watch(tp) == 0) {
		finish_later(tp, 0);
		return tp;
	}
	/* It ended while no supervisor watched: how, its shim kept. */
	if (tp->shim_pid > 0)
		shim_ended(tp, &ex);
	else
		ex.unknown = "it is gone, or is another process now";
	task_exit_describe(&ex, tp->why, sizeof(tp->why));
	finish_later(tp, -ESRCH);
	return tp;
}

void
taskproc_handle(const struct taskproc *tp, Berth__TaskHandle *h)
{
	h->pid = tp->pid;
	h->start_time = tp->start_time;
	h->shim_pid = tp->shim_pid;
	h->shim_start_time = tp->shim_start;
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
taskproc_signal(struct taskproc *tp, int sig)
{
	Berth__PluginSignal ps;

	if (tp->exited || tp->pid <= 0)
		return -ESRCH;
	if (tp->kind == TASKDRV_EXEC)
		return tp->task_pidfd < 0 ? -ESRCH : pidfd_send_signal(
		    tp->task_pidfd, sig, NULL, 0) < 0 ? -errno : 0;
	switch (sig) {
	case SIGTERM: ps = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM; break;
	case SIGKILL: ps = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL; break;
	case SIGINT: ps = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_INT; break;
	case SIGHUP: ps = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_HUP; break;
	default: return -EINVAL;
	}
	/* The exit comes as a PluginExited notice. */
	if (priv_signal_plugin(tp->drv->sv->mounter.mclient, tp->pid,
	    tp->start_time, ps, on_signalled, NULL) < 0)
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
	if (tp->task_pidfd >= 0)
		close(tp->task_pidfd);
	event_free(tp->later);
	/* A mounter answer still on its way finds a dead callback arg. */
	if (tp->waiting)
		priv_forget(tp->drv->sv->mounter.mclient, tp);
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
