/*
 * alloc_int.h: what the alloc runner's files share: the manager, one
 * allocation and its life cycle, the handles kept from before a restart,
 * and the stale tasks being stopped.
 *
 * alloc_runner.c	the manager: start, resync, the API's views
 * alloc_life.c		one allocation, from its file's start to its end
 * alloc_dir.c		alloc_dir: the watch, the scan, refused files,
 *			the API's submit and stop
 * alloc_recover.c	after a restart: the handles kept, the plugin
 *			registrations of allocs not running
 * alloc_stale.c	tasks and volumes of allocs that are gone
 * alloc_files.c	what tasks left in their directories, and the
 *			mounter's clean-up of an alloc
 */
#ifndef BERTH_ALLOC_INT_H
#define BERTH_ALLOC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>

#include "alloc.h"
#include "alloc_runner.h"
#include "layout.h"
#include "mounter_client.h"
#include "task_runner.h"

#define RESCAN_DELAY_MS 1	/* one scan for the events of one burst */
/* Volume steps that may pass are tried again: 1 s doubling to 30 s (a
 * mount no longer than volume_wait in all). */
#define VOLUME_RETRY_FIRST_MS 1000
#define VOLUME_RETRY_MAX_MS 30000

/*
 * An allocation's life cycle. In flight: a call to the volume manager
 * or the mounter is out, its callback moves on; _WAIT: it failed in a
 * way that may pass, and the retry timer tries again.
 */
enum arun_state {
	ARUN_MOUNTING,		/* its volumes are set up (in flight) */
	ARUN_MOUNT_WAIT,	/* not in place yet: mounted again later */
	ARUN_STOP_MOUNTING,	/* stop asked while a mount is in flight */
	ARUN_RUNNING,		/* its tasks run */
	ARUN_UNDOING,		/* its volumes failed: undone (in flight) */
	ARUN_UNDO_WAIT,		/* the undo failed: undone again later */
	ARUN_STOPPING,		/* its tasks are stopped */
	ARUN_UNMOUNTING,	/* tasks dead: volumes taken back (in flight) */
	ARUN_UNMOUNT_WAIT,	/* the take-back failed: again later */
	ARUN_CLEANING,		/* the mounter clears what is left */
	ARUN_ENDED,		/* its tasks ended for good, its volumes given
				 * back; its directory kept until it stops */
};

/* An allocation whose tasks' restart policies start none again. */
enum arun_end {
	AEND_NONE,
	AEND_COMPLETE,		/* every task exited 0 */
	AEND_FAILED,		/* a task's policy gave up after a failure */
};

struct arun {
	struct allocs *am;
	struct alloc *doc;
	char file[256];
	char sig[96];		/* inode, size and mtime of the file read */
	struct trun **tasks;
	size_t ntasks, dead;
	enum arun_state state;
	bool adopted;		/* tasks adopted before its volumes were in */
	bool refuse;		/* this version does not start again */
	bool failed;		/* its set-up failed for good */
	enum arun_end end;	/* on its way to ARUN_ENDED, or there */
	bool stop_asked;	/* stopped while ending: cleaned up after */
	struct event *retry;
	int64_t retry_ms;
	/* The step that failed or waits, why, and when it is tried again
	 * (wall clock, ms; 0: not); "" when none. */
	char step[16], reason[400];
	int64_t next_retry_ms;
	/* Since when (wall clock, ms) its volumes wait, tried again; 0: they
	 * do not. Bounded by volume_wait. */
	int64_t waiting_since_ms;
	/* Its task id (registry's AllocateIds): asked once at its start;
	 * its volumes are mounted for its group once it is held, then its
	 * tasks start. */
	struct ids_req *ids;		/* in flight or waiting to retry */
	uint32_t task_id;		/* 0: not held (or not needed) */
	bool run_wanted;		/* waiting for it to go on */
	TAILQ_ENTRY(arun) entry;
};

/* A handle found at start, until a task claims it. */
struct kept {
	char *alloc, *task, *driver;
	Berth__TaskHandle *th;
	bool claimed;
};

/*
 * A file refused, so that it is reported once per version. One that was
 * read (doc) is an allocation that failed: the API lists it, with the
 * step that failed and why, until its file changes or goes.
 */
struct refused {
	char file[256], sig[96];
	bool seen, after_run;
	struct alloc *doc;		/* NULL: not read */
	char step[16], reason[400];
	TAILQ_ENTRY(refused) entry;
};

struct stale;

struct allocs {
	struct allocs_deps d;
	struct trun_deps task;		/* for every task runner */
	struct watch *watch;
	struct event *rescan, *resync;
	bool started, ready, told_missing;
	struct kept *kept;
	size_t nkept;
	TAILQ_HEAD(, arun) runs;
	TAILQ_HEAD(, refused) refused;
	TAILQ_HEAD(, stale) stale;
	/* Allocs not running whose volumes are being taken back. */
	char **stale_vols;
	size_t nstale_vols;
	struct event *stale_vols_timer;
	/* alloc_logs.c: logs/, and its expiry's timer */
	char logs_dir[BERTH_PATH_BUF];
	struct event *logs_timer;
};

/* alloc_ids.c */
/* Ask for ar's task id if its tasks need one. */
void ids_start(struct arun *ar);
/* Its volumes and tasks may go on (volumes_then_run): now, or once its
 * id is held. */
void ids_then(struct arun *ar);
void ids_free(struct arun *ar);
/* The alloc is gone, files and processes: its id goes back. */
void ids_release(struct allocs *am, const char *alloc);
/* alloc_life.c, for alloc_ids.c */
void run_tasks(struct arun *ar);
void stop_tasks(struct arun *ar);
/* Its volumes mounted for its group, then its tasks run. */
void volumes_then_run(struct arun *ar);

/* alloc_runner.c */
struct arun *find_run(struct allocs *am, const char *alloc);

/* alloc_life.c */
/* Run doc (taken) from file, its tasks adopting what claim() finds. */
void arun_start(struct allocs *am, struct alloc *doc, const char *file,
    const char *sig);
void arun_stop(struct arun *ar, const char *why);
/* A task ended for good (trun_deps' ended): the alloc may end too. */
void arun_task_ended(struct trun *tr, void *arg);
/* Asked to stop, or stopping: the scan leaves it alone. */
bool arun_stopping(const struct arun *ar);
void arun_free(struct arun *ar);
const char *arun_state_name(enum arun_state s);
/* In Nomad's words: "pending", "running", "complete" or "failed". */
const char *arun_status(const struct arun *ar);
int64_t wall_ms(void);

/* alloc_dir.c */
void scan(struct allocs *am);
void on_rescan(evutil_socket_t fd, short ev, void *arg);
bool doc_name(const char *name);
void on_dir_event(struct watch *w, uint32_t mask, const char *name,
    void *arg);
/* This version failed after it ran (doc taken, may be NULL). */
void refuse_after_run(struct allocs *am, const char *file, const char *sig,
    struct alloc *doc, const char *step, const char *reason);
/* The alloc failed at step: its event; logged as a warning. */
void alloc_failed(struct allocs *am, const char *alloc, const char *step,
    const char *reason);
struct refused *find_failed(struct allocs *am, const char *alloc);
void refused_free(struct allocs *am);

/* alloc_recover.c */
void recover_start(struct allocs *am);
/* The kept handle of this task, claimed: NULL if none. */
struct kept *claim(struct allocs *am, const char *alloc, const char *task,
    const char *driver);
void free_kept(struct allocs *am);

/* alloc_stale.c */
void stop_stale(struct allocs *am, const struct kept *k);
/* After a restart, with the handles kept: kill the sandboxes none names. */
void end_unrecorded(struct allocs *am);
void free_stale(struct stale *st);
void stale_free_all(struct allocs *am);
void sweep_stale_vols(struct allocs *am);
void on_stale_vols_timer(evutil_socket_t fd, short ev, void *arg);
void stale_vols_free(struct allocs *am);

/* alloc_files.c */
/*
 * Remove what the alloc's tasks left, then the mounter's CleanupAlloc;
 * cb runs once, with an error when the mounter cannot be reached.
 */
void cleanup_alloc(struct allocs *am, const char *alloc, const char *type,
    const char *plugin, priv_cleanup_cb cb, void *arg);
/* at/name and all under it, as the supervisor's user. */
void files_remove_tree(int at, const char *name, int depth);

/* alloc_logs.c */
/* The alloc's tasks' logs, copied into logs/<alloc>/ for retention. */
void logs_keep(struct allocs *am, const char *alloc);
/* Expire kept logs now and from time to time. */
void logs_start(struct allocs *am);
void logs_free(struct allocs *am);

#endif
