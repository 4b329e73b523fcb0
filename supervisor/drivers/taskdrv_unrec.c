/*
 * taskdrv_unrec.c: sandboxes that no task handle names (see taskdrv.h,
 * taskdrv_end_unrecorded()). A sandbox whose start never reached
 * berth-registry (the supervisor, or a helper whose death stops it, died
 * between the start and the handle's write) still runs after a restart,
 * and no adoption finds it. Each is found by its shim's ctl.sock under
 * <data_dir>/shim, asked which run it is (so that its task's end is told
 * with its pid), killed through it, and its end awaited; then crun has a
 * moment to remove its state. A start of the same task waits for all of
 * that, so that it never runs twice nor finds the old container in the
 * way.
 *
 * Owns: the sandboxes being ended, their connections and timers. Must
 * not: connect to a sandbox a handle names (that would take its channel
 * from its adoption), or signal a task's process itself (the shim kills,
 * in the task's pid namespace).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "taskdrv_int.h"
#include "xalloc.h"

/* Its STARTED answer, its end after the kill, crun's clean-up after it. */
#define UNREC_ASK_MS 1000
#define UNREC_WAIT_MS 5000
#define UNREC_SETTLE_MS 300

enum unrec_state { UR_ASKING, UR_ENDING, UR_SETTLING };

struct unrec {
	struct taskdrv *drv;
	char alloc[BERTH_IDENT_MAX + 1], task[BERTH_IDENT_MAX + 1];
	char dir[PATH_MAX];		/* the shim's status directory */
	enum unrec_state state;
	int fd;				/* its ctl.sock connection, or -1 */
	pid_t shim, pid;		/* as this pid namespace sees them */
	uint64_t run_id;		/* 0: it did not say */
	struct task_exit ex;
	struct event *ev;
	struct taskproc *waiter;	/* a start of the same task */
	TAILQ_ENTRY(unrec) entry;
};

static void on_unrec(evutil_socket_t fd, short ev, void *arg);

static int
shim_dir(const struct taskdrv *drv, const char *alloc, const char *task,
    char *buf, size_t n)
{
	char rel[2 * BERTH_IDENT_MAX + 16];

	snprintf(rel, sizeof(rel), LAYOUT_SHIM_DIR "/%s/%s", alloc, task);
	return layout_abs(buf, n, drv->data_dir, rel);
}

static void
rearm(struct unrec *u, int fd, short what, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_del(u->ev);
	event_assign(u->ev, u->drv->base, fd, what, on_unrec, u);
	event_add(u->ev, &tv);
}

/* Told, forgotten; a start that waited goes on. */
static void
unrec_done(struct unrec *u)
{
	struct taskdrv *drv = u->drv;
	struct taskproc *tp = u->waiter;

	TAILQ_REMOVE(&drv->unrecs, u, entry);
	if (u->fd >= 0)
		close(u->fd);
	event_free(u->ev);
	if (drv->unrec_ended != NULL)
		drv->unrec_ended(drv->unrec_arg, u->alloc, u->task, u->pid,
		    &u->ex);
	free(u);
	if (tp != NULL) {
		tp->unrec = NULL;
		sandbox_ask(tp);
	}
}

/* The shim has gone, and its task with it: how, from its status file. */
static void
unrec_ended(struct unrec *u)
{
	close(u->fd);
	u->fd = -1;
	if (u->run_id != 0 && shimchan_read_status(u->dir, u->run_id,
	    &u->ex.signaled, &u->ex.code) == 1)
		u->ex.status_known = true;
	else
		u->ex.unknown = "its shim ended without writing it";
	u->state = UR_SETTLING;
	rearm(u, -1, 0, UNREC_SETTLE_MS);
}

static void
unrec_kill(struct unrec *u)
{
	u->state = UR_ENDING;
	if (shimchan_stop(u->fd, SIGKILL, 0) < 0) {
		unrec_ended(u);
		return;
	}
	rearm(u, u->fd, EV_READ | EV_PERSIST, UNREC_WAIT_MS);
}

static void
on_unrec(evutil_socket_t fd, short ev, void *arg)
{
	struct unrec *u = arg;
	struct shimchan_msg m;
	int r;

	(void)fd;
	if (ev & EV_TIMEOUT) {
		if (u->state == UR_ASKING) {
			unrec_kill(u);	/* killed all the same */
			return;
		}
		if (u->state == UR_ENDING) {
			log_warnx("taskdrv: alloc %s task %s: the sandbox no "
			    "handle names did not end in time after SIGKILL",
			    u->alloc, u->task);
			u->ex.unknown = "it did not end in time after SIGKILL";
		}
		unrec_done(u);
		return;
	}
	while ((r = shimchan_recv(u->fd, &m)) == 1)
		if (m.type == SHIM_MSG_STARTED && u->state == UR_ASKING) {
			u->run_id = m.started.run_id;
			if ((u->pid = sandbox_child(u->shim,
			    m.started.task_pid)) <= 0)
				u->pid = u->shim;
			unrec_kill(u);
			return;
		}
	if (r != -EAGAIN)
		unrec_ended(u);
}

struct unrec *
unrec_find(struct taskdrv *drv, const char *alloc, const char *task)
{
	struct unrec *u;

	TAILQ_FOREACH(u, &drv->unrecs, entry)
		if (strcmp(u->alloc, alloc) == 0 && strcmp(u->task, task) == 0)
			return u;
	return NULL;
}

struct unrec *
unrec_stop(struct taskdrv *drv, const char *alloc, const char *task)
{
	struct ucred uc = { 0 };
	socklen_t len = sizeof(uc);
	struct unrec *u;
	char dir[PATH_MAX];
	int fd;

	if (strlen(alloc) > BERTH_IDENT_MAX || strlen(task) > BERTH_IDENT_MAX ||
	    shim_dir(drv, alloc, task, dir, sizeof(dir)) < 0 ||
	    (fd = shimchan_connect(dir)) < 0)
		return NULL;
	u = xcalloc(1, sizeof(*u));
	u->drv = drv;
	snprintf(u->alloc, sizeof(u->alloc), "%s", alloc);
	snprintf(u->task, sizeof(u->task), "%s", task);
	snprintf(u->dir, sizeof(u->dir), "%s", dir);
	u->fd = fd;
	/* The listener's: the shim, as our pid namespace sees it. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0)
		u->shim = u->pid = uc.pid;
	u->ev = xnonnull(event_new(drv->base, -1, 0, on_unrec, u),
	    "taskdrv: an unrecorded sandbox");
	TAILQ_INSERT_TAIL(&drv->unrecs, u, entry);
	log_warnx("taskdrv: alloc %s task %s: berth-shim (pid %ld) runs "
	    "with no handle (a supervisor died as it started): the registry "
	    "never kept its start; killing it and its task", alloc, task,
	    (long)u->shim);
	if (drv->event != NULL)
		drv->event(drv->event_arg, "exec", alloc, task, "Killing",
		    "a sandbox no task handle names (its start was never "
		    "kept): killed, so that it does not run unseen");
	u->state = UR_ASKING;
	rearm(u, fd, EV_READ | EV_PERSIST, UNREC_ASK_MS);
	return u;
}

bool
unrec_wait(struct unrec *u, struct taskproc *tp)
{
	if (u->waiter != NULL && u->waiter != tp)
		return false;
	u->waiter = tp;
	tp->unrec = u;
	return true;
}

void
unrec_unwait(struct taskproc *tp)
{
	if (tp->unrec != NULL)
		tp->unrec->waiter = NULL;
	tp->unrec = NULL;
}

void
unrec_free_all(struct taskdrv *drv)
{
	struct unrec *u;

	while ((u = TAILQ_FIRST(&drv->unrecs)) != NULL) {
		TAILQ_REMOVE(&drv->unrecs, u, entry);
		if (u->fd >= 0)
			close(u->fd);
		if (u->waiter != NULL)
			u->waiter->unrec = NULL;
		event_free(u->ev);
		free(u);
	}
}

/* Each <task> of shim/<alloc> that keep() leaves to its handle. */
static int
sweep_alloc(struct taskdrv *drv, int at, const char *alloc,
    taskdrv_keep_cb keep, void *arg)
{
	struct dirent *de;
	DIR *d;
	int fd, n = 0;

	if ((fd = openat(at, alloc, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL)
		if (ident_valid_str(de->d_name) && !keep(arg, alloc,
		    de->d_name) && unrec_find(drv, alloc, de->d_name) == NULL &&
		    unrec_stop(drv, alloc, de->d_name) != NULL)
			n++;
	closedir(d);
	return n;
}

int
taskdrv_end_unrecorded(struct taskdrv *drv, taskdrv_keep_cb keep,
    taskdrv_unrec_cb ended, void *arg)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0;

	drv->unrec_ended = ended;
	drv->unrec_arg = arg;
	if (layout_abs(dir, sizeof(dir), drv->data_dir, LAYOUT_SHIM_DIR) < 0 ||
	    (d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (ident_valid_str(de->d_name))
			n += sweep_alloc(drv, dirfd(d), de->d_name, keep, arg);
	closedir(d);
	return n;
}
