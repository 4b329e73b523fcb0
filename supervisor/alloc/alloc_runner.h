/*
 * alloc_runner.h: the allocations the operator asked for, and their
 * tasks. Until the operator API exists, an allocation is a JSON document
 * in the config's alloc_dir (one file per allocation, "<name>.json"): a
 * new file starts it, a removed file stops it, a changed file stops it
 * and starts the new version. The directory is watched with inotify and
 * read again every plugin_resync as a backstop.
 *
 * At start it first reads the task handles the registry kept, so that
 * tasks still running from before a supervisor restart are adopted, not
 * started again; tasks of allocations that are gone are stopped, and
 * plugin registrations of allocations that are not running are removed.
 *
 * The operator API writes and removes files named "<id>.json" there
 * (allocs_submit, allocs_stop), atomically, and leaves every other file
 * alone: the inotify watch then starts and stops them like any other.
 *
 * Must not: write into alloc_dir other than through allocs_submit and
 * allocs_stop, or stop tasks when the supervisor stops.
 */
#ifndef BERTH_ALLOC_RUNNER_H
#define BERTH_ALLOC_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "task_runner.h"
#include "volmgr.h"

struct allocs;
struct alloc;
struct drivermgr;
struct events;
struct mclient;
struct regclient;
struct trun;
struct watcher;

/*
 * What the alloc runner asks of the volume manager: volmgr.c's functions
 * in the supervisor (allocs_volmgr_ops, ctx the struct volmgr), fakes in
 * a test.
 */
struct allocs_volume_ops {
	/* group: the alloc's gid (its task id; 0: none), the mount group
	 * of a volume request that names none. */
	void (*mount)(void *ctx, const struct alloc *a, gid_t group,
	    volmgr_cb cb, void *arg);
	void (*unmount)(void *ctx, const char *alloc, const struct alloc *a,
	    volmgr_cb cb, void *arg);
	void (*each_alloc)(void *ctx, void (*fn)(const char *alloc,
	    void *arg), void *arg);
	bool (*ready)(void *ctx);
	bool (*uses_plugin)(void *ctx, const char *plugin);
};
extern const struct allocs_volume_ops allocs_volmgr_ops;

/*
 * What the alloc runner uses, owned by the caller and outliving it; the
 * struct itself is copied. The task runners get the same links.
 */
struct allocs_deps {
	struct event_base *base;
	struct regclient *registry;	/* task handles, plugin registrations */
	struct mclient *mounter;	/* directories and clean-up */
	struct watcher *watcher;	/* alloc_dir */
	struct events *events;
	struct drivermgr *drivers;	/* driver_allow, driver_block */
	const struct allocs_volume_ops *volumes;
	void *volumes_ctx;
	const struct trun_driver_ops *driver;
	void *driver_ctx;
	trun_plugsup_fn plugsup_new;
	void *plugsup_ctx;
	const char *alloc_dir, *data_dir;
	/* Privileged plugins' definitions (NULL: not looked at). */
	const char *plugins_dir;
	int64_t resync_ms;		/* plugin_resync_ms */
	int64_t heartbeat_ms;		/* plugin_heartbeat_ms */
	/* Tasks' logs kept after their alloc stops (0: not kept). */
	int64_t log_retention_ms;
	/* volume_wait: how long an alloc's volumes may wait (a plugin
	 * instance not healthy, a call that may pass) before it fails;
	 * 0: no bound. */
	int64_t volume_wait_ms;
	uid_t uid;
	gid_t gid;
	/* task_ids: each alloc's sandboxed tasks run as one id of these,
	 * held in berth-registry until the alloc is gone. */
	uint32_t task_id_first, task_id_count;
	/* The tasks' cgroups, read for their use of CPU and memory. */
	const struct cgroup_mounts *cgroups;
	const char *cgroup_parent;
	/* The supervisor cannot go on safely (the registry's task handles
	 * cannot be read): stop it, with exit status 1. */
	void (*fail)(void *ctx, const char *why);
	void *ctx;
};

/*
 * One allocation, as the API reads it; valid until the loop turns. One
 * whose set-up failed stays, "failed", until its file changes or goes;
 * so does one whose tasks ended for good, "complete" or "failed" (step
 * "restart"), with the reason.
 */
struct alloc_view {
	const struct alloc *doc;
	const char *file;		/* its file in alloc_dir */
	bool stopping;
	const char *state;		/* "mounting", "running", ... */
	/* Nomad's words: "pending", "running", "complete", "failed". */
	const char *status;
	/* What failed or waits ("volumes", "driver", "plugin", "restart")
	 * and why; NULL when nothing does. A complete one has a reason
	 * and no step. */
	const char *step, *reason;
	int64_t next_retry_ms;		/* wall clock; 0: not retried */
	struct trun *const *tasks;
	size_t ntasks;
};

struct allocs *allocs_new(const struct allocs_deps *d);
/* Recover, then run: once the registry and the mounter are ready. */
void allocs_start(struct allocs *am);
/* Forget everything; tasks keep running. */
void allocs_free(struct allocs *am);
/* The csi_plugin type ("node" or "monolith") the task of alloc that
 * serves plugin as a node declared; NULL if no such task runs. */
const char *allocs_node_plugin_type(struct allocs *am, const char *alloc,
    const char *plugin);

/*
 * A volume of plugin left this node: every alloc waiting to set up its
 * volumes tries again at once (on the loop's next turn), not at its next
 * retry; one waiting for room (max_volumes_per_node) may get it now.
 */
void allocs_room(struct allocs *am, const char *plugin);

/* Restart the running tasks of alloc (trun_restart): a volume's
 * on_plugin_restart "restart_tasks" (volmgr_recover.c). */
void allocs_restart_tasks(struct allocs *am, const char *alloc,
    const char *why);

/*
 * Write a checked alloc to alloc_dir as "<id>.json" (a temporary file
 * renamed into place); the watch starts it. 0, or -errno with why set:
 * -EEXIST when another file already runs that id, -EINVAL when this
 * supervisor cannot run it (one plugin task per alloc, ...), else the
 * filesystem's error (alloc_dir not writable: -EACCES, -EROFS, -ENOENT).
 * A driver the config does not allow, or a privileged task whose
 * plugin definition plugins_dir does not have, is -EINVAL too.
 */
int allocs_submit(struct allocs *am, const struct alloc *a, char *why,
    size_t n);
/* Remove "<id>.json": the alloc stops. -ENOENT: none; -EEXIST: it runs
 * from a file the API did not write. */
int allocs_stop(struct allocs *am, const char *id, char *why, size_t n);
size_t allocs_count(const struct allocs *am);
/* Have the allocations from before a restart been read? */
bool allocs_ready(const struct allocs *am);
bool allocs_get(const struct allocs *am, size_t i, struct alloc_view *v);
bool allocs_find(struct allocs *am, const char *id, struct alloc_view *v);

#endif
