/*
 * test_taskdrv.c: the task driver alone, through struct taskdrv_deps.
 *
 * Exec tasks run under the real berth-shim (build tree) with small
 * commands: their start, exit status, signals, adoption by a second
 * driver as after a supervisor's restart, a shim killed under its task,
 * and the failures (no command, no shim). Two starts that only timing
 * would give (a shim gone before it is watched, a shim that says
 * nothing) use this test program as a stand-in shim.
 *
 * Privileged tasks go to a fake berth-mounter (fake_peer.h) that holds
 * StartPlugin, AdoptPlugin and SignalPlugin and answers them at once,
 * late, out of order, never, with an error or a wrong body, or closes
 * the link; PluginStarted carries the pidfd of a child this test forks.
 * No root is needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>

#include "fake_peer.h"
#include "harness.h"
#include "layout.h"
#include "mounter_client.h"
#include "procstat.h"
#include "shim.h"
#include "taskdrv.h"

#define NTASKS 4
/* The mounter client's deadline here: short, so "never" is quick. */
#define TEST_MCLIENT_MS 4000

/* What one task's owner heard. */
struct heard {
	int started, exited;
	int err;
	char why[256];
	bool status_known, signaled;
	int code;
	int exited_before_started;	/* callbacks out of order */
	struct taskproc *tp;
};

static struct event_base *base;
static struct taskdrv *drv;
static char *data_dir, self[4096];
static struct heard heard[NTASKS];
static char events[8][480];
static int nevents;

static void
on_started(struct taskproc *tp, int err, const char *why, void *arg)
{
	struct heard *h = arg;

	h->tp = tp;
	h->started++;
	h->err = err;
	snprintf(h->why, sizeof(h->why), "%s", why);
}

static void
on_exited(struct taskproc *tp, const struct task_exit *ex, void *arg)
{
	struct heard *h = arg;

	h->tp = tp;
	if (h->started == 0)
		h->exited_before_started++;
	h->exited++;
	h->status_known = ex->status_known;
	h->signaled = ex->signaled;
	h->code = ex->code;
	if (!ex->status_known)
		snprintf(h->why, sizeof(h->why), "%s", ex->unknown);
}

static void
on_event(void *arg, const char *driver, const char *alloc, const char *task,
    const char *type, const char *message)
{
	(void)arg;
	if (nevents < 8)
		snprintf(events[nevents++], sizeof(events[0]),
		    "%s %s/%s %s: %s", driver, alloc, task, type, message);
}

static bool
started(void *arg)
{
	return ((struct heard *)arg)->started > 0;
}

static bool
exited(void *arg)
{
	return ((struct heard *)arg)->exited > 0;
}

/* Gone, or a zombie no one reaped yet (orphans go to pid 1). */
static bool
pid_gone(void *arg)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)(intptr_t)arg);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	return (p = strrchr(buf, ')')) != NULL && p[1] == ' ' && p[2] == 'Z';
}

static struct taskdrv *
new_driver(struct mclient *mc, const char *shim)
{
	struct taskdrv_deps d = { 0 };

	d.base = base;
	d.mounter = mc;
	d.data_dir = data_dir;
	d.shim = shim != NULL ? shim : harness_bin("berth-shim");
	d.event = on_event;
	return taskdrv_new(&d);
}

/* --- the privileged driver, with a fake berth-mounter --- */

static struct fake_peer *fp;
static struct chan *mchan;
static struct mclient *mc;
static pid_t plugin;		/* the "plugin" the fake mounter started */
static uint64_t plugin_start;

static bool
takes_fd(Berth__Envelope__BodyCase body)
{
	return body == BERTH__ENVELOPE__BODY_PLUGIN_STARTED;
}

static void
mounter_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	(void)c;
	(void)arg;
	if (fd >= 0)
		close(fd);
	ck_assert(taskdrv_mounter_notice(drv, env));
}

static void
mounter_closed(struct chan *c, const char *why, void *arg)
{
	(void)c;
	(void)why;
	(void)arg;
}

/* A fake mounter for every test; the exec tests' drivers do not use it. */
static void
setup(void)
{
	static const struct chan_ops ops = { .on_message = mounter_message,
	    .on_close = mounter_closed, .takes_fd = takes_fd };

	signal(SIGPIPE, SIG_IGN);
	ck_assert_ptr_nonnull(base = event_base_new());
	data_dir = harness_tmpdir("taskdrv");
	memset(heard, 0, sizeof(heard));
	nevents = 0;
	drv = NULL;
	fp = fake_peer_new(base, "berth-mounter", NULL, &mchan, &ops, NULL);
	ck_assert_ptr_nonnull(mc = mclient_new(mchan, TEST_MCLIENT_MS));
	/* Without the link's end: its close must reach the driver. */
	if ((plugin = fork()) == 0) {
		close_range(3, ~0U, 0);
		pause();
		_exit(0);
	}
	ck_assert_int_gt(plugin, 0);
	harness_track_pid(plugin);
	ck_assert_int_eq(proc_start_time(plugin, &plugin_start), 0);
}

static void
teardown(void)
{
	taskdrv_free(drv);
	drv = NULL;
	mclient_free(mc);
	chan_free(mchan);
	fake_peer_free(fp);
	kill(plugin, SIGKILL);
	waitpid(plugin, NULL, 0);
	event_base_free(base);
	harness_rmtree(data_dir);
	free(data_dir);
}

/* alloc a1's task directory for task, made as the mounter would. */
static void
task_dir(const char *task, char *buf, size_t n)
{
	char rel[512], part[4096];

	ck_assert_int_eq(layout_task_dir(rel, sizeof(rel), "a1", task), 0);
	ck_assert_int_eq(layout_abs(buf, n, data_dir, rel), 0);
	for (char *p = buf + strlen(data_dir) + 1; *p != '\0'; p++)
		if (*p == '/') {
			snprintf(part, sizeof(part), "%.*s", (int)(p - buf),
			    buf);
			(void)mkdir(part, 0755);
		}
	(void)mkdir(buf, 0755);
}

static struct taskproc *
start_exec(const char *task, const char *command, char *const *args,
    size_t nargs, char *const *env, size_t nenv, struct heard *h)
{
	struct task_spec spec = { 0 };
	static char dir[4096];

	task_dir(task, dir, sizeof(dir));
	spec.kind = TASKDRV_EXEC;
	spec.alloc = "a1";
	spec.task = task;
	spec.command = command;
	spec.args = args;
	spec.nargs = nargs;
	spec.env = env;
	spec.nenv = nenv;
	spec.dir = dir;
	return h->tp = taskproc_start(drv, &spec, on_started, on_exited, h);
}

static struct taskproc *
start_sh(const char *task, const char *script, struct heard *h)
{
	char *args[] = { "-c", (char *)script };

	return start_exec(task, "/bin/sh", args, 2, NULL, 0, h);
}

START_TEST(exec_exit_status)
{
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;

	drv = new_driver(NULL, NULL);
	ck_assert_str_eq(taskdrv_shim_path(drv), harness_bin("berth-shim"));
	start_sh("t", "sleep 0.2; exit 3", &heard[0]);
	/* Never from within the call. */
	ck_assert_int_eq(heard[0].started, 0);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_int_eq(heard[0].err, 0);
	taskproc_handle(heard[0].tp, &th);
	ck_assert_int_gt(th.pid, 0);
	ck_assert_int_gt(th.shim_pid, 0);
	ck_assert_int_ne(th.pid, th.shim_pid);
	ck_assert_int_eq(taskproc_pid(heard[0].tp), (pid_t)th.pid);
	ck_assert_uint_eq(taskproc_start_time(heard[0].tp), th.start_time);
	ck_assert(fake_run_until(base, exited, &heard[0], 5000));
	ck_assert(heard[0].status_known);
	ck_assert(!heard[0].signaled);
	ck_assert_int_eq(heard[0].code, 3);
	ck_assert_int_eq(heard[0].exited_before_started, 0);
	/* Ended: nothing to signal, and no second exit. */
	ck_assert_int_eq(taskproc_signal(heard[0].tp, SIGTERM), -ESRCH);
	event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[0].exited, 1);
}
END_TEST

START_TEST(exec_signal)
{
	char *args[] = { "100" };
	pid_t pid;

	drv = new_driver(NULL, NULL);
	start_exec("t", "/bin/sleep", args, 1, NULL, 0, &heard[0]);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_msg(heard[0].err == 0, "%s", heard[0].why);
	pid = taskproc_pid(heard[0].tp);
	ck_assert_int_eq(taskproc_signal(heard[0].tp, SIGTERM), 0);
	ck_assert(fake_run_until(base, exited, &heard[0], 5000));
	ck_assert(heard[0].status_known);
	ck_assert(heard[0].signaled);
	ck_assert_int_eq(heard[0].code, SIGTERM);
	ck_assert(pid_gone((void *)(intptr_t)pid));
}
END_TEST

/* A second driver, as after a supervisor's restart, adopts by handle. */
START_TEST(exec_adopt_after_restart)
{
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;
	char *args[] = { "100" };

	drv = new_driver(NULL, NULL);
	start_exec("t", "/bin/sleep", args, 1, NULL, 0, &heard[0]);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	taskproc_handle(heard[0].tp, &th);
	harness_track_pid(th.pid);
	taskdrv_free(drv);		/* the task keeps running */
	ck_assert(!pid_gone((void *)(intptr_t)th.pid));
	drv = new_driver(NULL, NULL);
	heard[1].tp = taskproc_adopt(drv, TASKDRV_EXEC, "a1", "t", &th,
	    on_started, on_exited, &heard[1]);
	ck_assert_int_eq(heard[1].started, 0);
	ck_assert(fake_run_until(base, started, &heard[1], 5000));
	ck_assert_int_eq(heard[1].err, 0);
	ck_assert_int_eq(taskproc_pid(heard[1].tp), (pid_t)th.pid);
	ck_assert_int_eq(taskproc_signal(heard[1].tp, SIGKILL), 0);
	ck_assert(fake_run_until(base, exited, &heard[1], 5000));
	ck_assert(heard[1].status_known && heard[1].signaled);
	ck_assert_int_eq(heard[1].code, SIGKILL);
	ck_assert_int_eq(heard[0].exited, 0);	/* its driver is gone */
}
END_TEST

static bool
status_written(void *arg)
{
	return access(arg, F_OK) == 0;
}

/* It ended while no driver watched: its shim's status file says how. */
START_TEST(exec_adopt_ended_while_away)
{
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;
	char dir[4096], status[4200];

	drv = new_driver(NULL, NULL);
	start_sh("t", "sleep 0.3; exit 4", &heard[0]);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	taskproc_handle(heard[0].tp, &th);
	taskdrv_free(drv);
	drv = NULL;
	task_dir("t", dir, sizeof(dir));
	snprintf(status, sizeof(status), "%s/%s", dir, SHIM_STATUS_FILE);
	ck_assert(fake_run_until(base, status_written, status, 5000));
	ck_assert(fake_run_until(base, pid_gone, (void *)(intptr_t)th.shim_pid,
	    5000));
	drv = new_driver(NULL, NULL);
	taskproc_adopt(drv, TASKDRV_EXEC, "a1", "t", &th, on_started,
	    on_exited, &heard[1]);
	ck_assert(fake_run_until(base, started, &heard[1], 5000));
	ck_assert_int_eq(heard[1].err, -ESRCH);
	ck_assert_str_eq(heard[1].why, "exited with status 4");
	/* Not started: no exit follows, and nothing to signal. */
	event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[1].exited, 0);
	ck_assert_int_eq(taskproc_signal(heard[1].tp, SIGTERM), -ESRCH);
}
END_TEST

/* A handle that names nothing, or another process, or none at all. */
START_TEST(exec_adopt_gone)
{
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;

	drv = new_driver(NULL, NULL);
	th.pid = (uint32_t)getpid();
	th.start_time = 1;		/* not ours: a reused pid */
	taskproc_adopt(drv, TASKDRV_EXEC, "a1", "t", &th, on_started,
	    on_exited, &heard[0]);
	taskproc_adopt(drv, TASKDRV_EXEC, "a1", "u", NULL, on_started,
	    on_exited, &heard[1]);
	ck_assert(fake_run_until(base, started, &heard[1], 5000));
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_int_eq(heard[0].err, -ESRCH);
	ck_assert_str_eq(heard[0].why, "ended (status unknown: it is gone, "
	    "or is another process now)");
	ck_assert_int_eq(heard[1].err, -ESRCH);
}
END_TEST

/* Its shim killed: the task goes too, and the driver says so. */
START_TEST(exec_shim_lost)
{
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;
	char *args[] = { "100" };

	drv = new_driver(NULL, NULL);
	start_exec("t", "/bin/sleep", args, 1, NULL, 0, &heard[0]);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	taskproc_handle(heard[0].tp, &th);
	ck_assert_int_gt(th.shim_pid, 1);
	harness_track_pid(th.pid);
	ck_assert_int_eq(kill(th.shim_pid, SIGKILL), 0);
	ck_assert(fake_run_until(base, exited, &heard[0], 5000));
	ck_assert(!heard[0].status_known);
	ck_assert_str_eq(heard[0].why, "its shim ended without writing it");
	ck_assert(fake_run_until(base, pid_gone, (void *)(intptr_t)th.pid,
	    5000));
	ck_assert_int_eq(nevents, 1);
	ck_assert_msg(strncmp(events[0], "exec a1/t ShimLost: berth-shim",
	    30) == 0, "%s", events[0]);
	ck_assert_msg(strstr(events[0], "was killed") != NULL, "%s",
	    events[0]);
}
END_TEST

START_TEST(exec_start_failures)
{
	char want[4200];

	drv = new_driver(NULL, NULL);
	start_exec("t", "/nonexistent/command", NULL, 0, NULL, 0, &heard[0]);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_int_eq(heard[0].err, -ENOENT);
	ck_assert_str_eq(heard[0].why, "cannot run /nonexistent/command: "
	    "No such file or directory");
	taskdrv_free(drv);
	drv = new_driver(NULL, "/nonexistent/berth-shim");
	start_sh("t", "exit 0", &heard[1]);
	ck_assert(fake_run_until(base, started, &heard[1], 5000));
	ck_assert_int_eq(heard[1].err, -ENOENT);
	snprintf(want, sizeof(want), "cannot run /nonexistent/berth-shim: "
	    "No such file or directory");
	ck_assert_str_eq(heard[1].why, want);
	event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[0].exited + heard[1].exited, 0);
}
END_TEST

/*
 * This program as berth-shim (FAKE_SHIM in its environment): "early"
 * reports itself as the task, writes its status and exits before the
 * driver can watch it; "silent" exits without a report.
 */
static int
fake_shim(int argc, char **argv)
{
	struct shim_report rep = { 0 };
	const char *how = getenv("FAKE_SHIM");
	char path[4200], line[128];
	uint64_t start;
	FILE *f;

	if (strcmp(how, "silent") == 0 || argc < 3)
		return 0;
	if (proc_start_time(getpid(), &start) < 0)
		return 1;
	snprintf(path, sizeof(path), "%s/%s", argv[2], SHIM_STATUS_FILE);
	snprintf(line, sizeof(line), "pid %ld start %llu exited 7\n",
	    (long)getpid(), (unsigned long long)start);
	if ((f = fopen(path, "w")) == NULL || fputs(line, f) < 0 ||
	    fclose(f) != 0)
		return 1;
	rep.shim_pid = rep.task_pid = getpid();
	rep.shim_start = rep.task_start = start;
	return write(SHIM_REPORT_FD, &rep, sizeof(rep)) == sizeof(rep) ? 0 : 1;
}

/* Started and ended before it was watched: started, then exited. */
START_TEST(exec_ended_before_watched)
{
	char *early[] = { "FAKE_SHIM=early" }, *silent[] = {
	    "FAKE_SHIM=silent" };

	drv = new_driver(NULL, self);
	start_exec("t", "ignored", NULL, 0, early, 1, &heard[0]);
	ck_assert_int_eq(heard[0].started + heard[0].exited, 0);
	ck_assert(fake_run_until(base, exited, &heard[0], 5000));
	ck_assert_int_eq(heard[0].started, 1);
	ck_assert_int_eq(heard[0].err, 0);
	ck_assert_int_eq(heard[0].exited_before_started, 0);
	ck_assert(heard[0].status_known && !heard[0].signaled);
	ck_assert_int_eq(heard[0].code, 7);
	start_exec("u", "ignored", NULL, 0, silent, 1, &heard[1]);
	ck_assert(fake_run_until(base, started, &heard[1], 5000));
	ck_assert_int_eq(heard[1].err, -EIO);
	ck_assert_str_eq(heard[1].why, "berth-shim ended without saying "
	    "whether ignored runs");
}
END_TEST

/* Freed before the loop told it: no callback runs, the task runs on. */
START_TEST(exec_free_before_told)
{
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;
	char *args[] = { "100" };
	struct taskproc *tp;

	drv = new_driver(NULL, NULL);
	tp = start_exec("t", "/bin/sleep", args, 1, NULL, 0, &heard[0]);
	taskproc_handle(tp, &th);
	harness_track_pid(th.pid);
	taskproc_free(tp);
	for (int i = 0; i < 5; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[0].started + heard[0].exited, 0);
	ck_assert(!pid_gone((void *)(intptr_t)th.pid));
	kill(th.pid, SIGKILL);
}
END_TEST

static struct taskproc *
start_priv(struct heard *h)
{
	struct task_spec spec = { 0 };

	spec.kind = TASKDRV_PRIVILEGED;
	spec.alloc = "a1";
	spec.task = "plugin";
	spec.definition = "hostpath";
	spec.plugin_type = "csi";
	spec.plugin_id = "hp";
	return h->tp = taskproc_start(drv, &spec, on_started, on_exited, h);
}

static struct taskproc *
adopt_priv(struct heard *h)
{
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;

	th.pid = (uint32_t)plugin;
	th.start_time = plugin_start;
	return h->tp = taskproc_adopt(drv, TASKDRV_PRIVILEGED, "a1", "plugin",
	    &th, on_started, on_exited, h);
}

/* PluginStarted for the child, with its pidfd, as the mounter sends. */
static void
reply_started(struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PluginStarted ps = BERTH__PLUGIN_STARTED__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;
	int pidfd;

	ck_assert_int_ge(pidfd = pidfd_open(plugin, 0), 0);
	h.pid = (uint32_t)plugin;
	h.start_time = plugin_start;
	ps.handle = &h;
	env.body_case = BERTH__ENVELOPE__BODY_PLUGIN_STARTED;
	env.plugin_started = &ps;
	fake_reply(fp, req, &env, pidfd);
	close(pidfd);
}

static void
notice_exited(pid_t pid, uint64_t start, bool signaled, int code)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PluginExited pe = BERTH__PLUGIN_EXITED__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;

	h.pid = (uint32_t)pid;
	h.start_time = start;
	pe.handle = &h;
	pe.status_known = true;
	pe.signaled = signaled;
	pe.code = code;
	env.body_case = BERTH__ENVELOPE__BODY_PLUGIN_EXITED;
	env.plugin_exited = &pe;
	fake_notice(fp, &env, -1);
}

static void
answer_now(struct fake_peer *p, struct fake_req *req, void *arg)
{
	(void)p;
	(void)arg;
	if (req->env->body_case == BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN)
		fake_reply_ack(fp, req);
	else
		reply_started(req);
}

static bool
held(void *arg)
{
	return fake_pending(fp) >= (size_t)(intptr_t)arg;
}

/* Answered at once; signalled; its exit comes as a notice. */
START_TEST(priv_start_now_signal_exit)
{
	struct fake_req *req;
	Berth__Envelope other = BERTH__ENVELOPE__INIT;

	drv = new_driver(mc, NULL);
	start_priv(&heard[0]);
	ck_assert(fake_run_until(base, held, (void *)1, 5000));
	req = fake_held(fp, BERTH__ENVELOPE__BODY_START_PLUGIN);
	ck_assert_ptr_nonnull(req);
	ck_assert_int_eq(req->env->start_plugin->definition.len, 8);
	ck_assert_int_eq(memcmp(req->env->start_plugin->alloc_id.data, "a1",
	    2), 0);
	reply_started(req);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_int_eq(heard[0].err, 0);
	ck_assert_int_eq(taskproc_pid(heard[0].tp), plugin);
	ck_assert_uint_eq(taskproc_start_time(heard[0].tp), plugin_start);
	/* Signals go to the mounter, by handle; not every one exists. */
	ck_assert_int_eq(taskproc_signal(heard[0].tp, SIGUSR1), -EINVAL);
	ck_assert_int_eq(taskproc_signal(heard[0].tp, SIGTERM), 0);
	ck_assert(fake_run_until(base, held, (void *)1, 5000));
	req = fake_held(fp, BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN);
	ck_assert_ptr_nonnull(req);
	ck_assert_int_eq(req->env->signal_plugin->signal,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM);
	ck_assert_uint_eq(req->env->signal_plugin->handle->pid,
	    (uint32_t)plugin);
	fake_reply_error(fp, req, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "gone");
	/* Another plugin's exit, and a notice that is not an exit. */
	notice_exited(plugin, plugin_start + 1, false, 0);
	other.body_case = BERTH__ENVELOPE__BODY_PING;
	ck_assert(!taskdrv_mounter_notice(drv, &other));
	for (int i = 0; i < 5; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[0].exited, 0);
	notice_exited(plugin, plugin_start, true, SIGTERM);
	ck_assert(fake_run_until(base, exited, &heard[0], 5000));
	ck_assert(heard[0].signaled);
	ck_assert_int_eq(heard[0].code, SIGTERM);
	ck_assert_int_eq(taskproc_signal(heard[0].tp, SIGTERM), -ESRCH);
	/* Once only. */
	notice_exited(plugin, plugin_start, false, 0);
	for (int i = 0; i < 5; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[0].exited, 1);
}
END_TEST

/* Answers that come late and out of order reach their own task. */
START_TEST(priv_late_out_of_order)
{
	drv = new_driver(mc, NULL);
	start_priv(&heard[0]);
	start_priv(&heard[1]);
	ck_assert(fake_run_until(base, held, (void *)2, 5000));
	for (int i = 0; i < 10; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[0].started + heard[1].started, 0);
	fake_reply_error(fp, fake_nth(fp, 1),
	    BERTH__ERROR_CODE__ERROR_BAD_REQUEST, "no such definition");
	ck_assert(fake_run_until(base, started, &heard[1], 5000));
	ck_assert_int_eq(heard[0].started, 0);
	ck_assert_int_eq(heard[1].err, -EIO);
	ck_assert_msg(strstr(heard[1].why, "berth-mounter refused to start "
	    "the plugin: ") == heard[1].why && strstr(heard[1].why,
	    "no such definition") != NULL, "%s", heard[1].why);
	ck_assert_int_eq(taskproc_signal(heard[1].tp, SIGTERM), -ESRCH);
	reply_started(fake_nth(fp, 0));
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_int_eq(heard[0].err, 0);
	/* A failed start hears no exit, even of its pid. */
	notice_exited(plugin, plugin_start, false, 0);
	ck_assert(fake_run_until(base, exited, &heard[0], 5000));
	ck_assert_int_eq(heard[1].exited, 0);
}
END_TEST

/* Never answered: the owner lets go, and a late answer finds no one. */
START_TEST(priv_never_answered)
{
	struct taskproc *tp;

	drv = new_driver(mc, NULL);
	tp = start_priv(&heard[0]);
	ck_assert(fake_run_until(base, held, (void *)1, 5000));
	taskproc_free(tp);
	reply_started(fake_nth(fp, 0));
	for (int i = 0; i < 10; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[0].started, 0);
}
END_TEST

/* Never answered, and the owner waits: the client's deadline fails it. */
START_TEST(priv_never_answered_times_out)
{
	drv = new_driver(mc, NULL);
	start_priv(&heard[0]);
	ck_assert(fake_run_until(base, held, (void *)1, 5000));
	ck_assert(!fake_run_until(base, started, &heard[0],
	    TEST_MCLIENT_MS - 500));
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_int_eq(heard[0].err, -EIO);
	ck_assert_msg(strstr(heard[0].why, "ERROR_TIMEOUT") != NULL, "%s",
	    heard[0].why);
}
END_TEST

/* A reply of the wrong type is refused, not read. */
START_TEST(priv_wrong_reply)
{
	drv = new_driver(mc, NULL);
	start_priv(&heard[0]);
	ck_assert(fake_run_until(base, held, (void *)1, 5000));
	fake_reply_ack(fp, fake_nth(fp, 0));
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_int_eq(heard[0].err, -EIO);
	ck_assert_int_eq(taskproc_pid(heard[0].tp), 0);
}
END_TEST

/* The mounter dies with requests held; then it cannot be asked. */
START_TEST(priv_link_closed)
{
	drv = new_driver(mc, NULL);
	start_priv(&heard[0]);
	adopt_priv(&heard[1]);
	ck_assert(fake_run_until(base, held, (void *)2, 5000));
	fake_close(fp);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert(fake_run_until(base, started, &heard[1], 5000));
	ck_assert_int_eq(heard[0].err, -EIO);
	ck_assert_int_eq(heard[1].err, -ESRCH);
	ck_assert_msg(strncmp(heard[1].why, "ended (status unknown: "
	    "berth-mounter could not adopt it: ", 57) == 0, "%s",
	    heard[1].why);
	start_priv(&heard[2]);
	adopt_priv(&heard[3]);
	ck_assert_int_eq(heard[2].started + heard[3].started, 0);
	ck_assert(fake_run_until(base, started, &heard[2], 5000));
	ck_assert(fake_run_until(base, started, &heard[3], 5000));
	ck_assert_int_eq(heard[2].err, -EPIPE);
	ck_assert_str_eq(heard[2].why, "cannot ask berth-mounter to start "
	    "plugin definition hostpath");
	ck_assert_int_eq(heard[3].err, -EPIPE);
	ck_assert_str_eq(heard[3].why, "ended (status unknown: berth-mounter "
	    "could not be asked to adopt it)");
}
END_TEST

/* Adopted after a restart; signalled with the link gone. */
START_TEST(priv_adopt)
{
	struct fake_req *req;

	drv = new_driver(mc, NULL);
	fake_peer_handler(fp, answer_now, NULL);
	adopt_priv(&heard[0]);
	ck_assert(fake_run_until(base, started, &heard[0], 5000));
	ck_assert_int_eq(heard[0].err, 0);
	ck_assert_uint_eq(fake_count(fp, BERTH__ENVELOPE__BODY_ADOPT_PLUGIN),
	    1);
	fake_peer_handler(fp, NULL, NULL);
	adopt_priv(&heard[1]);
	ck_assert(fake_run_until(base, held, (void *)1, 5000));
	req = fake_held(fp, BERTH__ENVELOPE__BODY_ADOPT_PLUGIN);
	ck_assert_uint_eq(req->env->adopt_plugin->handle->start_time,
	    plugin_start);
	fake_reply_error(fp, req, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
	    "not a plugin of ours");
	ck_assert(fake_run_until(base, started, &heard[1], 5000));
	ck_assert_int_eq(heard[1].err, -ESRCH);
	ck_assert_msg(strstr(heard[1].why, "not a plugin of ours") != NULL,
	    "%s", heard[1].why);
	/* Once the client has heard the close, not before: until then a
	 * send may still be queued. */
	fake_hangup(fp, base, mchan);
	ck_assert_int_eq(taskproc_signal(heard[0].tp, SIGKILL), -EPIPE);
}
END_TEST

/* Its exit comes before the mounter answered the adoption. */
START_TEST(priv_exit_while_asking)
{
	drv = new_driver(mc, NULL);
	adopt_priv(&heard[0]);
	ck_assert(fake_run_until(base, held, (void *)1, 5000));
	notice_exited(plugin, plugin_start, false, 2);
	ck_assert(fake_run_until(base, exited, &heard[0], 5000));
	ck_assert_int_eq(heard[0].started, 1);
	ck_assert_int_eq(heard[0].err, 0);
	ck_assert_int_eq(heard[0].exited_before_started, 0);
	ck_assert_int_eq(heard[0].code, 2);
	reply_started(fake_nth(fp, 0));		/* too late: ignored */
	for (int i = 0; i < 10; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_int_eq(heard[0].started, 1);
	ck_assert_int_eq(heard[0].exited, 1);
}
END_TEST

int
main(int argc, char **argv)
{
	TCase *tc = tcase_create("taskdrv");
	ssize_t n;

	if (getenv("FAKE_SHIM") != NULL)
		return fake_shim(argc, argv);
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return 1;
	self[n] = '\0';
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, exec_exit_status);
	tcase_add_test(tc, exec_signal);
	tcase_add_test(tc, exec_adopt_after_restart);
	tcase_add_test(tc, exec_adopt_ended_while_away);
	tcase_add_test(tc, exec_adopt_gone);
	tcase_add_test(tc, exec_shim_lost);
	tcase_add_test(tc, exec_start_failures);
	tcase_add_test(tc, exec_ended_before_watched);
	tcase_add_test(tc, exec_free_before_told);
	tcase_add_test(tc, priv_start_now_signal_exit);
	tcase_add_test(tc, priv_late_out_of_order);
	tcase_add_test(tc, priv_never_answered);
	tcase_add_test(tc, priv_never_answered_times_out);
	tcase_add_test(tc, priv_wrong_reply);
	tcase_add_test(tc, priv_link_closed);
	tcase_add_test(tc, priv_adopt);
	tcase_add_test(tc, priv_exit_while_asking);
	return harness_run("taskdrv", tc);
}
