/*
 * taskdrv_exec.c: the exec driver: tasks the supervisor starts as its
 * own user through berth-shim (see taskdrv.h).
 *
 * Owns: the start of exec tasks (fork, exec, the shim's start report),
 * their shims' pidfds and status files, adopting them by handle, and
 * signalling them. Must not: reap any pid but the shim's first process
 * (the supervisor reaps its helpers by pid), or leave a descriptor open
 * in a task.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "procstat.h"
#include "shim.h"
#include "taskdrv_int.h"
#include "xalloc.h"

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
	tp_tell_exited(tp, &ex);
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
	tp->ev = event_new(tp->drv->base, tp->pidfd, EV_READ, on_pidfd, tp);
	xnonnull(tp->ev, "taskdrv: a shim's watch");
	if (event_add(tp->ev, NULL) < 0)
		return -EIO;
	return 0;
}

/* argv and envp for execve, built before fork: the child only execs. */
static char **
build_vec(char *const *items, size_t n, char *const *extra, size_t nextra)
{
	char **v = xcalloc(n + nextra + 1, sizeof(*v));
	size_t i, k = 0;

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

int
exec_start(struct taskproc *tp, const struct task_spec *spec)
{
	char endpoint[600], alloc[160], task[160], taskdir[BERTH_PATH_BUF],
	    size[32], files[16], *extra[5], *opts[9], **argv, **envp;
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
	argv = build_vec(opts, 9, spec->args, spec->nargs);
	envp = build_vec(spec->env, spec->nenv, extra, nextra);
	(void)kill_unrecorded(spec->dir);
	if ((r = run_shim(tp, spec, argv, envp)) < 0)
		goto out;
	/* So quick that it has ended already: its status is in the file. */
	if ((r = watch(tp)) == -ESRCH) {
		shim_ended(tp, &ex);
		tp_ended_early(tp, &ex);
		r = 1;
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

void
exec_adopt(struct taskproc *tp, const Berth__TaskHandle *h)
{
	struct task_exit ex = { 0 };
	char rel[512];

	if (h != NULL) {
		tp->shim_pid = h->shim_pid;
		tp->shim_start = h->shim_start_time;
	}
	if (layout_task_dir(rel, sizeof(rel), tp->alloc, tp->task) < 0 ||
	    layout_abs(tp->dir, sizeof(tp->dir), tp->drv->data_dir, rel) < 0)
		tp->dir[0] = '\0';
	if (tp->pid > 0 && watch(tp) == 0) {
		tp_tell_later(tp, 0);
		return;
	}
	/* It ended while no supervisor watched: how, its shim kept. */
	if (tp->shim_pid > 0)
		shim_ended(tp, &ex);
	else
		ex.unknown = "it is gone, or is another process now";
	task_exit_describe(&ex, tp->why, sizeof(tp->why));
	tp_tell_later(tp, -ESRCH);
}

int
exec_signal(struct taskproc *tp, int sig)
{
	if (tp->task_pidfd < 0)
		return -ESRCH;
	return pidfd_send_signal(tp->task_pidfd, sig, NULL, 0) < 0 ? -errno :
	    0;
}

void
exec_unwatch(struct taskproc *tp)
{
	if (tp->ev != NULL) {
		event_free(tp->ev);
		tp->ev = NULL;
	}
	if (tp->pidfd >= 0) {
		close(tp->pidfd);
		tp->pidfd = -1;
	}
}

void
exec_forget(struct taskproc *tp)
{
	exec_unwatch(tp);
	if (tp->task_pidfd >= 0) {
		close(tp->task_pidfd);
		tp->task_pidfd = -1;
	}
}
