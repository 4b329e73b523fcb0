/*
 * taskdrv_int.h: what the task driver's files share, and nothing else
 * includes: a task's record and its states (taskdrv.c), and the calls
 * into the exec driver (taskdrv_exec.c) and the privileged driver
 * (taskdrv_priv.c).
 */
#ifndef BERTH_TASKDRV_INT_H
#define BERTH_TASKDRV_INT_H

#include <limits.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "ident.h"
#include "layout.h"
#include "log.h"
#include "mounter_client.h"
#include "shimchan.h"
#include "taskdrv.h"

/*
 * A task's life as its owner hears it. The started callback is told on
 * the way out of the first three states, the exited callback on the way
 * into TP_EXITED; FAILED and EXITED are final.
 */
enum tp_state {
	TP_STARTING,		/* started is due from the event loop */
	TP_ENDED_EARLY,		/* started, then exited: both due */
	TP_ASKING,		/* the mounter has not answered yet */
	TP_RUNNING,		/* started told; its exit is to come */
	TP_FAILED,		/* told it did not start or adopt */
	TP_EXITED,		/* told how it ended */
};

struct taskproc {
	struct taskdrv *drv;
	enum taskdrv_kind kind;
	enum tp_state state;
	pid_t pid;
	uint64_t start_time;
	/* exec only */
	pid_t shim_pid;			/* 0 for a legacy handle */
	uint64_t shim_start;
	int pidfd;			/* the shim's (legacy: the task's) */
	int task_pidfd;			/* the task's, for signals */
	struct event *ev;		/* pidfd readable */
	char dir[PATH_MAX];	/* the task directory */
	/* exec, sandboxed: pid and start_time are crun's, pidfd its */
	uint64_t run_id;		/* 0: not sandboxed */
	int chan;			/* the shim's channel, or -1 */
	struct event *chan_ev;
	struct shimchan_spec *pending;	/* sent once the sandbox runs */
	struct priv_task *ask;		/* StartTask, once nothing is in
					 * the way (see sandbox_start) */
	struct unrec *unrec;		/* waited for before the start */
	bool exit_seen;			/* SHIM_MSG_EXIT came: early */
	unsigned grace_ms;		/* a stop's, then SIGKILL */
	/* both */
	struct event *later;		/* tells from the event loop */
	struct task_exit early;		/* TP_ENDED_EARLY: how */
	char alloc[BERTH_IDENT_MAX + 1], task[BERTH_IDENT_MAX + 1];
	int err;
	char why[256];
	taskproc_started_cb started;
	taskproc_exited_cb exited;
	void *arg;
	TAILQ_ENTRY(taskproc) entry;
};

struct taskdrv {
	struct event_base *base;
	struct mclient *mounter;
	char data_dir[PATH_MAX];
	char shim[PATH_MAX];
	const struct cgroup_mounts *cgroups;
	const char *cgroup_parent;
	taskdrv_event_cb event;
	void *event_arg;
	TAILQ_HEAD(, taskproc) procs;
	/* Sandboxes no handle names, being ended (taskdrv_unrec.c). */
	TAILQ_HEAD(, unrec) unrecs;
	taskdrv_unrec_cb unrec_ended;
	void *unrec_arg;
};

/* taskdrv.c: the transitions. */
void tp_tell_later(struct taskproc *tp, int err);
void tp_ended_early(struct taskproc *tp, const struct task_exit *ex);
void tp_tell_started(struct taskproc *tp, int err);
void tp_tell_exited(struct taskproc *tp, const struct task_exit *ex);
void tp_event(struct taskproc *tp, const char *type, const char *fmt, ...)
    BERTH_PRINTF(3, 4);

/* taskdrv_exec.c: tasks under berth-shim. */
/* 0: started, 1: started and ended already, or -errno with tp->why. */
int exec_start(struct taskproc *tp, const struct task_spec *spec);
void exec_adopt(struct taskproc *tp, const Berth__TaskHandle *h);
int exec_signal(struct taskproc *tp, int sig);
/* Stop watching (it ended); forget also closes the task's pidfd. */
void exec_unwatch(struct taskproc *tp);
void exec_forget(struct taskproc *tp);

/* taskdrv_sandbox.c: exec tasks under crun, through berth-mounter. */
void sandbox_start(struct taskproc *tp, const struct task_spec *spec);
void sandbox_adopt(struct taskproc *tp, const Berth__TaskHandle *h);
int sandbox_signal(struct taskproc *tp, int sig);
void sandbox_forget(struct taskproc *tp);
/* Ask the mounter for the sandbox (once nothing is in the way). */
void sandbox_ask(struct taskproc *tp);
/* The child of parent whose pid in its own namespace is want_ns (0: the
 * first); 0 if none. */
pid_t sandbox_child(pid_t parent, pid_t want_ns);

/* taskdrv_unrec.c: sandboxes no handle names, killed and waited for. */
struct unrec;
struct unrec *unrec_find(struct taskdrv *drv, const char *alloc,
    const char *task);
/* Kill the one answering for alloc and task: NULL if none answers. */
struct unrec *unrec_stop(struct taskdrv *drv, const char *alloc,
    const char *task);
/* tp starts once u has ended (false: another start waits already). */
bool unrec_wait(struct unrec *u, struct taskproc *tp);
/* tp waits for none any more (it is freed). */
void unrec_unwait(struct taskproc *tp);
void unrec_free_all(struct taskdrv *drv);

/* taskdrv_priv.c: plugins berth-mounter starts and watches. */
void priv_task_start(struct taskproc *tp, const struct task_spec *spec);
void priv_task_adopt(struct taskproc *tp);	/* by tp->pid, start_time */
int priv_task_signal(struct taskproc *tp, int sig);
void priv_task_forget(struct taskproc *tp);

#endif
