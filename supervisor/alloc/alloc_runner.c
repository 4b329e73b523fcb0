/*
 * alloc_runner.c: allocations from alloc_dir, their task runners, and
 * recovery after a restart (see alloc_runner.h).
 *
 * Owns: the list of running allocations, the handles read at start, and
 * the clean-up of allocations that are gone. Must not: run a task (the
 * task runner does) or parse a document itself (alloc.c does).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/queue.h>
#include <sys/stat.h>

#include "alloc.h"
#include "alloc_runner.h"
#include "layout.h"
#include "events.h"
#include "drivermgr.h"
#include "supervisor.h"
#include "task_runner.h"
#include "taskdrv.h"
#include "volmgr.h"
#include "watch.h"

#define RESCAN_DELAY_MS 1	/* one scan for the events of one burst */
/* Volume steps that may pass are tried again: 1 s doubling to 30 s. */
#define VOLUME_RETRY_FIRST_MS 1000
#define VOLUME_RETRY_MAX_MS 30000

struct arun {
	struct allocs *am;
	struct alloc *doc;
	char file[256];
	char sig[96];		/* inode, size and mtime of the file read */
	struct trun **tasks;
	size_t ntasks, dead;
	bool stopping;
	/* Volumes: mounting, or waiting to try again (retry armed). */
	bool mounting, running, failed, refuse;
	struct event *retry;
	int64_t retry_ms;
	TAILQ_ENTRY(arun) entry;
};

/* A handle found at start, until a task claims it. */
struct kept {
	char *alloc, *task, *driver;
	Berth__TaskHandle *th;
	bool claimed;
};

/* A file refused, so that it is reported once per version. */
struct refused {
	char file[256], sig[96];
	bool seen, after_run;
	TAILQ_ENTRY(refused) entry;
};

struct allocs {
	struct supervisor *sv;
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
};

static void scan(struct allocs *am);
static void remove_task_files(struct supervisor *sv, const char *alloc);

/* This version of the file ran and failed: not again until it changes. */
static void
refuse_after_run(struct allocs *am, const char *file, const char *sig)
{
	struct refused *r;

	TAILQ_FOREACH(r, &am->refused, entry)
		if (strcmp(r->file, file) == 0)
			break;
	if (r == NULL) {
		if ((r = calloc(1, sizeof(*r))) == NULL)
			return;
		snprintf(r->file, sizeof(r->file), "%s", file);
		TAILQ_INSERT_TAIL(&am->refused, r, entry);
	}
	snprintf(r->sig, sizeof(r->sig), "%s", sig);
	r->seen = r->after_run = true;
}

static void
free_kept(struct allocs *am)
{
	size_t i;

	for (i = 0; i < am->nkept; i++) {
		free(am->kept[i].alloc);
		free(am->kept[i].task);
		free(am->kept[i].driver);
		if (am->kept[i].th != NULL)
			berth__task_handle__free_unpacked(am->kept[i].th, NULL);
	}
	free(am->kept);
	am->kept = NULL;
	am->nkept = 0;
}

static const Berth__TaskHandle *
claim(struct allocs *am, const char *alloc, const char *task,
    const char *driver)
{
	size_t i;

	for (i = 0; i < am->nkept; i++) {
		struct kept *k = &am->kept[i];

		if (!k->claimed && strcmp(k->alloc, alloc) == 0 &&
		    strcmp(k->task, task) == 0 && strcmp(k->driver, driver) ==
		    0) {
			k->claimed = true;
			return k->th;
		}
	}
	return NULL;
}

static struct arun *
find_run(struct allocs *am, const char *alloc)
{
	struct arun *ar;

	TAILQ_FOREACH(ar, &am->runs, entry)
		if (strcmp(ar->doc->id, alloc) == 0)
			return ar;
	return NULL;
}

static void
free_run(struct arun *ar)
{
	size_t i;

	for (i = 0; i < ar->ntasks; i++)
		trun_free(ar->tasks[i]);
	free(ar->tasks);
	if (ar->retry != NULL)
		event_free(ar->retry);
	alloc_free(ar->doc);
	free(ar);
}

static void
on_cleaned(const struct priv_result *res, uint32_t unmounted,
    uint32_t removed, void *arg)
{
	struct arun *ar = arg;
	struct allocs *am = ar->am;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		log_warnx("alloc %s: berth-mounter could not clean it up: %s: "
		    "%s", ar->doc->id, ipc_error_name(res->code), res->message);
	else
		log_info("alloc %s: stopped; %u mounts and %u entries removed",
		    ar->doc->id, unmounted, removed);
	events_record(am->sv->events, "alloc", "AllocStopped", ar->doc->id,
	    NULL, NULL, "stopped; it ran from %s", ar->file);
	TAILQ_REMOVE(&am->runs, ar, entry);
	if (ar->refuse)
		refuse_after_run(am, ar->file, ar->sig);
	free_run(ar);
	/* A changed file: its new version starts now. */
	scan(am);
}

/*
 * type and plugin (or NULL): the plugin task this alloc ran, when no
 * other alloc runs one of that plugin and no volume of it is held: then
 * its mount root goes too, once nothing is left in it.
 */
static void
cleanup_alloc(struct supervisor *sv, const char *alloc, const char *type,
    const char *plugin, priv_cleanup_cb cb, void *arg)
{
	const struct priv_result unreachable = {
		BERTH__ERROR_CODE__ERROR_CLOSED, MCLIENT_UNREACHABLE };

	remove_task_files(sv, alloc);
	if (priv_cleanup_alloc(sv->mounter.mclient, alloc, type, plugin, cb,
	    arg) < 0)
		cb(&unreachable, 0, 0, arg);
}

static void volumes_down(struct arun *ar);
static void last_plugin_cleanup(struct arun *ar);

static void
arm_retry(struct arun *ar)
{
	struct timeval tv = { ar->retry_ms / 1000, (ar->retry_ms % 1000) *
		1000 };

	evtimer_add(ar->retry, &tv);
	ar->retry_ms = ar->retry_ms * 2 > VOLUME_RETRY_MAX_MS ?
	    VOLUME_RETRY_MAX_MS : ar->retry_ms * 2;
}

/* Volumes taken back (or none held): the mounter cleans up the rest. */
static void
on_unmounted(enum volmgr_status st, const char *why, void *arg)
{
	struct arun *ar = arg;

	if (st != VOLMGR_OK) {
		log_warnx("alloc %s: taking its volumes back: %s; trying again "
		    "in %lld ms", ar->doc->id, why, (long long)ar->retry_ms);
		arm_retry(ar);
		return;
	}
	last_plugin_cleanup(ar);
}

/*
 * Remove dirfd/name and all under it, as the supervisor's user: never
 * following a symlink, never entering a mount point (a volume's bind).
 */
static void
remove_tree(int at, const char *name, int depth)
{
	struct statx stx;
	struct dirent *de;
	DIR *d;
	int fd;

	if (statx(at, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) < 0 ||
	    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return;
	if (!S_ISDIR(stx.stx_mode)) {
		unlinkat(at, name, 0);
		return;
	}
	if (depth > 32 || (fd = openat(at, name, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") !=
		    0)
			remove_tree(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	unlinkat(at, name, AT_REMOVEDIR);
}

/*
 * What the alloc's tasks left in their directories (logs, exit status,
 * their own files) goes; volumes/ is root's and the mounter's to clear.
 * Every task directory, so that an alloc known only from what it left
 * (after a restart) is cleared too.
 */
static void
remove_task_files(struct supervisor *sv, const char *alloc)
{
	char path[BERTH_PATH_BUF];
	struct dirent *de, *te;
	DIR *d, *t;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", sv->cfg.data_dir,
	    LAYOUT_ALLOCS_DIR, alloc);
	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || (fd = openat(dirfd(d), de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			continue;
		if ((t = fdopendir(fd)) == NULL) {
			close(fd);
			continue;
		}
		while ((te = readdir(t)) != NULL)
			if (strcmp(te->d_name, ".") != 0 && strcmp(te->d_name,
			    "..") != 0 && strcmp(te->d_name, "volumes") != 0)
				remove_tree(dirfd(t), te->d_name, 0);
		closedir(t);
	}
	closedir(d);
}

/* The mounter cleans up; the plugin's mount root too if this was its last. */
static void
last_plugin_cleanup(struct arun *ar)
{
	struct allocs *am = ar->am;
	const struct alloc_task *t = NULL, *u;
	struct arun *other;
	size_t i, k;

	for (i = 0; i < ar->doc->ntasks; i++)
		if (ar->doc->tasks[i].csi.type != ALLOC_CSI_NONE)
			t = &ar->doc->tasks[i];
	TAILQ_FOREACH(other, &am->runs, entry)
		for (k = 0; t != NULL && other != ar && k < other->doc->ntasks;
		    k++) {
			u = &other->doc->tasks[k];
			if (u->csi.type == t->csi.type &&
			    strcmp(u->csi.id, t->csi.id) == 0)
				t = NULL;
		}
	if (t != NULL && volmgr_uses_plugin(am->sv->volmgr, t->csi.id))
		t = NULL;
	cleanup_alloc(am->sv, ar->doc->id, t != NULL ?
	    alloc_csi_type_name(t->csi.type) : NULL, t != NULL ? t->csi.id :
	    NULL, on_cleaned, ar);
}

static void
volumes_down(struct arun *ar)
{
	ar->running = false;
	volmgr_unmount(ar->am->sv->volmgr, ar->doc->id, ar->doc, on_unmounted,
	    ar);
}

static void
task_stopped(struct trun *tr, void *arg)
{
	struct arun *ar = arg;

	(void)tr;
	if (++ar->dead < ar->ntasks)
		return;
	ar->retry_ms = VOLUME_RETRY_FIRST_MS;
	volumes_down(ar);
}

static void
stop_run(struct arun *ar, const char *why)
{
	size_t i, n = ar->ntasks;

	if (ar->stopping)
		return;
	ar->stopping = true;
	evtimer_del(ar->retry);
	log_info("alloc %s: stopping (%s)", ar->doc->id, why);
	/* A mount in flight ends first; on_mounted stops the tasks. */
	if (ar->mounting)
		return;
	for (i = 0; i < n; i++)
		trun_stop(ar->tasks[i]);
}

/* Start every task not running yet (adopted ones run already). */
static void
run_tasks(struct arun *ar)
{
	bool first = !ar->running;
	size_t i;

	ar->running = true;
	for (i = 0; i < ar->ntasks; i++)
		trun_run(ar->tasks[i]);
	if (first && ar->ntasks < ar->doc->ntasks)
		stop_run(ar, "out of memory");
}

/* Adopt the tasks that still run from before; start none. */
static void
adopt_tasks(struct arun *ar)
{
	size_t i;

	ar->running = true;
	if (ar->ntasks < ar->doc->ntasks) {
		stop_run(ar, "out of memory");
		return;
	}
	for (i = 0; i < ar->ntasks; i++)
		trun_adopt(ar->tasks[i]);
}

static void mount_volumes(struct arun *ar);

/* A failed mount, undone: this version of the file does not run. */
static void
on_undone(enum volmgr_status st, const char *why, void *arg)
{
	struct arun *ar = arg;

	if (st != VOLMGR_OK) {
		log_warnx("alloc %s: undoing its volumes: %s; trying again in "
		    "%lld ms", ar->doc->id, why, (long long)ar->retry_ms);
		arm_retry(ar);
		return;
	}
	ar->failed = false;
	ar->refuse = true;
	stop_run(ar, "its volumes could not be set up; it starts again "
	    "when its file changes");
}

static void
on_mounted(enum volmgr_status st, const char *why, void *arg)
{
	struct arun *ar = arg;

	ar->mounting = false;
	if (ar->stopping) {
		ar->stopping = false;
		stop_run(ar, "stopped while its volumes were set up");
		return;
	}
	if (st == VOLMGR_OK) {
		log_info("alloc %s: %zu volume%s in place", ar->doc->id,
		    ar->doc->nvolumes, ar->doc->nvolumes == 1 ? "" : "s");
		ar->retry_ms = VOLUME_RETRY_FIRST_MS;
		run_tasks(ar);
		return;
	}
	if (st == VOLMGR_RETRY) {
		/* Kept as far as it went; the next try goes on from there.
		 * The first wait is routine (after a restart the plugin
		 * registers again a moment after the allocs are read):
		 * only one that lasts is a warning. */
		if (ar->retry_ms <= VOLUME_RETRY_FIRST_MS)
			log_info("alloc %s: volumes not in place yet: %s; "
			    "trying again in %lld ms", ar->doc->id, why,
			    (long long)ar->retry_ms);
		else
			log_warnx("alloc %s: volumes not in place yet: %s; "
			    "trying again in %lld ms", ar->doc->id, why,
			    (long long)ar->retry_ms);
		arm_retry(ar);
		return;
	}
	if (ar->running) {
		/* Adopted tasks run on what is in place: leave it. */
		log_warnx("alloc %s: checking its volumes: %s", ar->doc->id,
		    why);
		return;
	}
	log_warnx("alloc %s: volumes failed, undoing what was done; tasks not "
	    "started: %s", ar->doc->id, why);
	ar->failed = true;
	ar->retry_ms = VOLUME_RETRY_FIRST_MS;
	volmgr_unmount(ar->am->sv->volmgr, ar->doc->id, ar->doc, on_undone,
	    ar);
}

static void
mount_volumes(struct arun *ar)
{
	ar->mounting = true;
	volmgr_mount(ar->am->sv->volmgr, ar->doc, on_mounted, ar);
}

static void
on_retry(evutil_socket_t fd, short ev, void *arg)
{
	struct arun *ar = arg;

	(void)fd;
	(void)ev;
	if (ar->dead == ar->ntasks && ar->stopping) {
		volumes_down(ar);	/* a take-back that failed */
		return;
	}
	if (ar->failed) {
		/* An undo that failed: undo again; a failed version does
		 * not start again until its file changes. */
		volmgr_unmount(ar->am->sv->volmgr, ar->doc->id, ar->doc,
		    on_undone, ar);
		return;
	}
	mount_volumes(ar);
}

/* What alloc.c cannot know: limits of this supervisor's layout. */
static int
runnable(const struct alloc *a, char *why, size_t n)
{
	size_t i, plugins = 0;

	for (i = 0; i < a->ntasks; i++)
		if (a->tasks[i].csi.type != ALLOC_CSI_NONE)
			plugins++;
	if (plugins > 1) {
		snprintf(why, n, "%zu tasks have a csi_plugin block; an alloc "
		    "may run one plugin task, because its socket is "
		    "csi/plugins/<alloc>/csi.sock", plugins);
		return -1;
	}
	return 0;
}

static bool
refused_before(struct allocs *am, const char *file, const char *sig)
{
	struct refused *r;

	TAILQ_FOREACH(r, &am->refused, entry)
		if (strcmp(r->file, file) == 0) {
			r->seen = true;
			if (strcmp(r->sig, sig) == 0)
				return true;
			snprintf(r->sig, sizeof(r->sig), "%s", sig);
			return false;
		}
	if ((r = calloc(1, sizeof(*r))) != NULL) {
		snprintf(r->file, sizeof(r->file), "%s", file);
		snprintf(r->sig, sizeof(r->sig), "%s", sig);
		r->seen = true;
		TAILQ_INSERT_TAIL(&am->refused, r, entry);
	}
	return false;
}

/* This version of the file was refused after it ran (its volumes). */
static bool
refused_still(struct allocs *am, const char *file, const char *sig)
{
	struct refused *r;

	TAILQ_FOREACH(r, &am->refused, entry)
		if (r->after_run && strcmp(r->file, file) == 0 &&
		    strcmp(r->sig, sig) == 0) {
			r->seen = true;
			return true;
		}
	return false;
}

/* A driver the config blocks runs nothing; its stale tasks are stopped. */
static int
drivers_allowed(struct allocs *am, const struct alloc *a, const char *file,
    const char *sig)
{
	const char *name;
	size_t i;

	for (i = 0; i < a->ntasks; i++) {
		name = alloc_driver_name(a->tasks[i].driver);
		if (drivermgr_allowed(am->sv->drivers, name))
			continue;
		if (!refused_before(am, file, sig))
			log_warnx("alloc file %s refused: task %s uses driver %s, "
			    "which driver_allow or driver_block in the config "
			    "does not allow", file, a->tasks[i].name, name);
		return -1;
	}
	return 0;
}

static void
start_run(struct allocs *am, const char *file, const char *sig)
{
	struct alloc_problems probs = { 0 };
	struct alloc *doc = NULL;
	struct arun *ar, *other;
	char path[BERTH_PATH_BUF], why[256];
	bool adopting = false;
	size_t i;

	if (refused_still(am, file, sig))
		return;
	snprintf(path, sizeof(path), "%s/%s", am->sv->cfg.alloc_dir, file);
	if (alloc_load_file(path, &doc, &probs) < 0) {
		if (!refused_before(am, file, sig)) {
			log_warnx("alloc file %s refused, nothing started; %zu "
			    "problem%s:", path, probs.n + probs.dropped,
			    probs.n + probs.dropped == 1 ? "" : "s");
			for (i = 0; i < probs.n; i++)
				log_warnx("alloc file %s: %s", file,
				    probs.items[i]);
		}
		alloc_problems_free(&probs);
		return;
	}
	alloc_problems_free(&probs);
	if ((other = find_run(am, doc->id)) != NULL &&
	    strcmp(other->file, file) != 0) {
		if (!refused_before(am, file, sig))
			log_warnx("alloc file %s refused: alloc id %s is "
			    "already run from %s", file, doc->id, other->file);
		alloc_free(doc);
		return;
	}
	why[0] = '\0';
	if (other != NULL || runnable(doc, why, sizeof(why)) < 0 ||
	    drivers_allowed(am, doc, file, sig) < 0) {
		if (other == NULL && why[0] != '\0' &&
		    !refused_before(am, file, sig))
			log_warnx("alloc file %s refused: %s", file, why);
		alloc_free(doc);
		return;
	}
	if ((ar = calloc(1, sizeof(*ar))) == NULL ||
	    (ar->tasks = calloc(doc->ntasks, sizeof(*ar->tasks))) == NULL) {
		free(ar);
		alloc_free(doc);
		log_warnx("start_run: out of memory");
		return;
	}
	ar->am = am;
	ar->doc = doc;
	ar->retry_ms = VOLUME_RETRY_FIRST_MS;
	if ((ar->retry = evtimer_new(am->sv->base, on_retry, ar)) == NULL)
		fatal("start_run");
	snprintf(ar->file, sizeof(ar->file), "%s", file);
	snprintf(ar->sig, sizeof(ar->sig), "%s", sig);
	for (i = 0; i < doc->ntasks; i++) {
		const struct alloc_task *t = &doc->tasks[i];
		const Berth__TaskHandle *th = claim(am, doc->id, t->name,
		    t->driver == ALLOC_DRIVER_EXEC ? "exec" : "privileged");

		adopting |= th != NULL;
		ar->tasks[i] = trun_new(am->sv, doc, t, th, task_stopped, ar);
		if (ar->tasks[i] == NULL) {
			log_warnx("start_run: alloc %s: out of memory", doc->id);
			break;
		}
	}
	ar->ntasks = i;
	TAILQ_INSERT_TAIL(&am->runs, ar, entry);
	log_info("alloc %s: running %zu task%s from %s", doc->id, ar->ntasks,
	    ar->ntasks == 1 ? "" : "s", file);
	events_record(am->sv->events, "alloc", "AllocStarted", doc->id, NULL,
	    NULL, "running %zu task%s from %s", ar->ntasks, ar->ntasks == 1 ?
	    "" : "s", file);
	/*
	 * A task starts only once its volumes are in place. Tasks still
	 * running from before a restart are adopted at once; the volume
	 * manager then finds their volumes in place and keeps them. One
	 * that ended meanwhile (after a reboot, its volumes are gone too)
	 * starts with the others, once the volumes are in place.
	 */
	if (doc->nvolumes == 0)
		run_tasks(ar);
	else {
		if (adopting)
			adopt_tasks(ar);
		mount_volumes(ar);
	}
}

static bool
doc_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".json") ==
	    0;
}

static void
scan(struct allocs *am)
{
	struct arun *ar;
	struct refused *r, *rnext;
	struct dirent *de;
	struct stat st;
	char sig[96];
	DIR *d;

	if (!am->ready)
		return;
	TAILQ_FOREACH(r, &am->refused, entry)
		r->seen = false;
	if ((d = opendir(am->sv->cfg.alloc_dir)) == NULL) {
		if (!am->told_missing)
			log_warn("alloc_dir %s (no allocations until it can "
			    "be read)", am->sv->cfg.alloc_dir);
		am->told_missing = true;
	} else
		am->told_missing = false;
	/* Files gone or changed: their allocations stop. */
	TAILQ_FOREACH(ar, &am->runs, entry) {
		if (ar->stopping)
			continue;
		if (d == NULL || fstatat(dirfd(d), ar->file, &st, 0) < 0) {
			if (d != NULL)
				stop_run(ar, "its file was removed");
			continue;
		}
		snprintf(sig, sizeof(sig), "%lu-%lld-%lld.%09ld",
		    (unsigned long)st.st_ino, (long long)st.st_size,
		    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		if (strcmp(sig, ar->sig) != 0)
			stop_run(ar, "its file changed; the new version "
			    "starts once it has stopped");
	}
	while (d != NULL && (de = readdir(d)) != NULL) {
		if (!doc_name(de->d_name) || fstatat(dirfd(d), de->d_name, &st,
		    0) < 0 || !S_ISREG(st.st_mode))
			continue;
		snprintf(sig, sizeof(sig), "%lu-%lld-%lld.%09ld",
		    (unsigned long)st.st_ino, (long long)st.st_size,
		    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		TAILQ_FOREACH(ar, &am->runs, entry)
			if (strcmp(ar->file, de->d_name) == 0)
				break;
		if (ar == NULL)
			start_run(am, de->d_name, sig);
	}
	if (d != NULL)
		closedir(d);
	for (r = TAILQ_FIRST(&am->refused); r != NULL; r = rnext) {
		rnext = TAILQ_NEXT(r, entry);
		if (!r->seen) {
			TAILQ_REMOVE(&am->refused, r, entry);
			free(r);
		}
	}
}

static void
on_rescan(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	scan(arg);
}

/*
 * Volumes held by allocs that are not running (their records outlived a
 * restart, or a take-back that failed): taken back, then cleaned up.
 */
struct stale_vol {
	struct allocs *am;
	char alloc[];
};

static void on_stale_cleaned(const struct priv_result *res,
    uint32_t unmounted, uint32_t removed, void *arg);

static bool
stale_vols_busy(struct allocs *am, const char *alloc)
{
	for (size_t i = 0; i < am->nstale_vols; i++)
		if (strcmp(am->stale_vols[i], alloc) == 0)
			return true;
	return false;
}

static void
stale_vols_forget(struct allocs *am, const char *alloc)
{
	for (size_t i = 0; i < am->nstale_vols; i++)
		if (strcmp(am->stale_vols[i], alloc) == 0) {
			free(am->stale_vols[i]);
			am->stale_vols[i] = am->stale_vols[--am->nstale_vols];
			return;
		}
}

static void
on_stale_vols(enum volmgr_status st, const char *why, void *arg)
{
	struct stale_vol *sv = arg;

	if (st == VOLMGR_OK) {
		log_info("alloc %s: the volumes it held are taken back",
		    sv->alloc);
		cleanup_alloc(sv->am->sv, sv->alloc, NULL, NULL,
		    on_stale_cleaned, NULL);
	} else
		log_warnx("alloc %s: taking back the volumes it held: %s; "
		    "trying again at the next resync", sv->alloc, why);
	stale_vols_forget(sv->am, sv->alloc);
	free(sv);
}

static void
stale_vols_one(const char *alloc, void *arg)
{
	struct allocs *am = arg;
	struct stale_vol *sv;
	char **more, *name = NULL;

	if (find_run(am, alloc) != NULL || stale_vols_busy(am, alloc))
		return;
	/*
	 * Everything that can fail is done before am->stale_vols changes,
	 * and the array is stored the moment reallocarray returns it: a
	 * moved array must never be lost, whatever fails after it.
	 */
	if ((sv = malloc(sizeof(*sv) + strlen(alloc) + 1)) == NULL ||
	    (name = strdup(alloc)) == NULL ||
	    (more = reallocarray(am->stale_vols, am->nstale_vols + 1,
	    sizeof(*more))) == NULL) {
		log_warn("%s: alloc %s: taking back its volumes; trying "
		    "again at the next resync", __func__, alloc);
		free(name);
		free(sv);
		return;
	}
	am->stale_vols = more;
	am->stale_vols[am->nstale_vols++] = name;
	sv->am = am;
	memcpy(sv->alloc, alloc, strlen(alloc) + 1);
	log_info("alloc %s: not running, but it holds volumes: taking them "
	    "back", alloc);
	volmgr_unmount(am->sv->volmgr, alloc, NULL, on_stale_vols, sv);
}

static void
sweep_stale_vols(struct allocs *am)
{
	struct timeval tv = { 0, 100 * 1000 };

	if (!volmgr_ready(am->sv->volmgr)) {
		evtimer_add(am->stale_vols_timer, &tv);
		return;
	}
	volmgr_each_alloc(am->sv->volmgr, stale_vols_one, am);
}

static void
on_stale_vols_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	sweep_stale_vols(arg);
}

static void
on_resync(evutil_socket_t fd, short ev, void *arg)
{
	struct allocs *am = arg;
	struct timeval tv = { am->sv->cfg.plugin_resync_ms / 1000,
		(am->sv->cfg.plugin_resync_ms % 1000) * 1000 };

	(void)fd;
	(void)ev;
	scan(am);
	sweep_stale_vols(am);
	evtimer_add(am->resync, &tv);
}

static void
on_dir_event(struct watch *w, uint32_t mask, const char *name, void *arg)
{
	struct allocs *am = arg;
	struct timeval tv = { 0, RESCAN_DELAY_MS * 1000 };

	(void)w;
	(void)mask;
	if (name[0] != '\0' && !doc_name(name))
		return;
	evtimer_add(am->rescan, &tv);
}

/* A task left from an allocation that is gone: stop it, forget it. */
struct stale {
	struct allocs *am;
	char *alloc, *task, *driver;
	struct taskproc *tp;
	struct event *timer;
	TAILQ_ENTRY(stale) entry;
};

static void
on_stale_forgotten(const struct regclient_result *res, void *arg)
{
	(void)arg;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE &&
	    res->code != BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		log_warnx("alloc_runner: forgetting a stale task's handle: "
		    "%s: %s", ipc_error_name(res->code), res->message);
}

static void
on_stale_cleaned(const struct priv_result *res, uint32_t unmounted,
    uint32_t removed, void *arg)
{
	(void)unmounted;
	(void)removed;
	(void)arg;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		log_warnx("alloc_runner: cleaning up a stale alloc: %s: %s",
		    ipc_error_name(res->code), res->message);
}

static void free_stale(struct stale *st);

static void
stale_done(struct stale *st)
{
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__ReattachHandle rh = BERTH__REATTACH_HANDLE__INIT;

	rh.type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER;
	rh.name = st->driver;
	rh.alloc = st->alloc;
	rh.task = st->task;
	h.handle_case = BERTH__HANDLE__HANDLE_REATTACH;
	h.reattach = &rh;
	if (regclient_delete_handle(st->am->sv->registry.client, &h,
	    on_stale_forgotten, NULL) < 0)
		log_warnx("alloc_runner: cannot reach berth-registry");
	if (find_run(st->am, st->alloc) == NULL)
		cleanup_alloc(st->am->sv, st->alloc, NULL, NULL,
		    on_stale_cleaned, NULL);
	free_stale(st);
}

static void
free_stale(struct stale *st)
{
	TAILQ_REMOVE(&st->am->stale, st, entry);
	if (st->tp != NULL)
		taskproc_free(st->tp);
	event_free(st->timer);
	free(st->alloc);
	free(st->task);
	free(st->driver);
	free(st);
}

/* A stale task's end, as a task event like any other task's. */
static void
stale_event(struct stale *st, struct taskproc *tp, const char *how,
    const char *when)
{
	log_info("event: alloc=%s task=%s type=Terminated message=\"pid %ld "
	    "%s%s (a stale task)\"", st->alloc, st->task,
	    (long)taskproc_pid(tp), how, when);
	events_record(st->am->sv->events, "task", "Terminated", st->alloc,
	    st->task, NULL, "pid %ld %s%s (a stale task)",
	    (long)taskproc_pid(tp), how, when);
}

static void
on_stale_exited(struct taskproc *tp, const struct task_exit *ex, void *arg)
{
	struct stale *st = arg;
	char how[128];

	task_exit_describe(ex, how, sizeof(how));
	stale_event(st, tp, how, "");
	stale_done(st);
}

static void
on_stale_timer(evutil_socket_t fd, short ev, void *arg)
{
	struct stale *st = arg;

	(void)fd;
	(void)ev;
	log_warnx("alloc %s task %s: the stale task ignored SIGTERM; "
	    "sending SIGKILL", st->alloc, st->task);
	taskproc_signal(st->tp, SIGKILL);
}

static void
on_stale_adopted(struct taskproc *tp, int err, const char *why, void *arg)
{
	struct stale *st = arg;
	struct timeval tv = { ALLOC_DEFAULT_KILL_TIMEOUT_MS / 1000, 0 };

	if (err != 0) {
		/* It ended while no supervisor ran: its exit, as its shim
		 * kept it, is not lost. */
		stale_event(st, tp, why, " while the supervisor was not running");
		stale_done(st);
		return;
	}
	log_info("alloc %s task %s: its allocation is gone; stopping the "
	    "task it left running (pid %ld)", st->alloc, st->task,
	    (long)taskproc_pid(tp));
	taskproc_signal(tp, SIGTERM);
	evtimer_add(st->timer, &tv);
}

static void
stop_stale(struct allocs *am, const struct kept *k)
{
	struct stale *st;

	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->alloc = strdup(k->alloc)) == NULL ||
	    (st->task = strdup(k->task)) == NULL ||
	    (st->driver = strdup(k->driver)) == NULL ||
	    (st->timer = evtimer_new(am->sv->base, on_stale_timer, st)) ==
	    NULL) {
		log_warnx("stop_stale: out of memory");
		if (st != NULL) {
			free(st->alloc);
			free(st->task);
			free(st->driver);
			free(st);
		}
		return;
	}
	st->am = am;
	TAILQ_INSERT_TAIL(&am->stale, st, entry);
	if (!drivermgr_allowed(am->sv->drivers, k->driver))
		log_info("alloc %s task %s: driver %s is blocked by the config "
		    "now; its task, if still running, is stopped", k->alloc,
		    k->task, k->driver);
	st->tp = taskproc_adopt(am->sv->drv, strcmp(k->driver, "exec") == 0 ?
	    TASKDRV_EXEC : TASKDRV_PRIVILEGED, k->alloc, k->task, k->th,
	    on_stale_adopted, on_stale_exited, st);
	if (st->tp == NULL)
		stale_done(st);
}

static void
on_deregistered_stale(const struct regclient_result *res, void *arg)
{
	(void)arg;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE &&
	    res->code != BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		log_warnx("alloc_runner: removing a stale plugin registration: "
		    "%s: %s", ipc_error_name(res->code), res->message);
}

/* Registrations of allocations that are not running go. */
static void
on_plugins_listed(const struct regclient_result *res,
    Berth__PluginInstance *const *items, size_t n, void *arg)
{
	struct allocs *am = arg;
	size_t i;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		log_warnx("alloc_runner: listing plugins: %s: %s",
		    ipc_error_name(res->code), res->message);
		return;
	}
	for (i = 0; i < n; i++) {
		const Berth__PluginInstance *pi = items[i];

		if ((pi->type != BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE &&
		    pi->type != BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER) ||
		    find_run(am, pi->alloc) != NULL)
			continue;
		log_info("alloc_runner: plugin %s of alloc %s is registered "
		    "but its allocation is not running: deregistering it",
		    pi->name, pi->alloc);
		regclient_deregister(am->sv->registry.client, pi->type,
		    pi->name, pi->alloc, on_deregistered_stale, am);
	}
}

static void
on_handles(const struct regclient_result *res, Berth__Handle *const *items,
    size_t n, void *arg)
{
	struct allocs *am = arg;
	struct timeval tv = { am->sv->cfg.plugin_resync_ms / 1000,
		(am->sv->cfg.plugin_resync_ms % 1000) * 1000 };
	size_t i;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		/* Starting without them could start tasks twice. */
		log_errx("alloc_runner: reading task handles from "
		    "berth-registry: %s: %s", ipc_error_name(res->code),
		    res->message);
		supervisor_stop(am->sv, 1, "the registry's task handles "
		    "cannot be read");
		return;
	}
	if ((am->kept = calloc(n + 1, sizeof(*am->kept))) == NULL) {
		supervisor_stop(am->sv, 1, "out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		const Berth__ReattachHandle *rh = items[i]->reattach;
		struct kept *k = &am->kept[am->nkept];

		if (items[i]->handle_case != BERTH__HANDLE__HANDLE_REATTACH ||
		    rh->type != BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER)
			continue;
		k->alloc = strdup(rh->alloc);
		k->task = strdup(rh->task);
		k->driver = strdup(rh->name);
		k->th = berth__task_handle__unpack(NULL, rh->state.len,
		    rh->state.data);
		am->nkept++;
		if (k->alloc == NULL || k->task == NULL || k->driver == NULL) {
			supervisor_stop(am->sv, 1, "out of memory");
			return;
		}
	}
	log_info("alloc_runner: %zu task handle%s kept from before", am->nkept,
	    am->nkept == 1 ? "" : "s");
	am->ready = true;
	scan(am);
	for (i = 0; i < am->nkept; i++)
		if (!am->kept[i].claimed)
			stop_stale(am, &am->kept[i]);
	sweep_stale_vols(am);
	free_kept(am);
	if (regclient_list_plugins(am->sv->registry.client,
	    BERTH__PLUGIN_TYPE__PLUGIN_TYPE_UNKNOWN, NULL, on_plugins_listed,
	    am) < 0)
		log_warnx("alloc_runner: cannot list plugins");
	evtimer_add(am->resync, &tv);
}

struct allocs *
allocs_new(struct supervisor *sv)
{
	struct allocs *am;

	if ((am = calloc(1, sizeof(*am))) == NULL)
		return NULL;
	am->sv = sv;
	TAILQ_INIT(&am->runs);
	TAILQ_INIT(&am->refused);
	TAILQ_INIT(&am->stale);
	if ((am->rescan = evtimer_new(sv->base, on_rescan, am)) == NULL ||
	    (am->resync = evtimer_new(sv->base, on_resync, am)) == NULL ||
	    (am->stale_vols_timer = evtimer_new(sv->base, on_stale_vols_timer,
	    am)) == NULL) {
		allocs_free(am);
		return NULL;
	}
	return am;
}

void
allocs_start(struct allocs *am)
{
	if (am->started)
		return;
	am->started = true;
	am->watch = watch_add(am->sv->watcher, am->sv->cfg.alloc_dir,
	    IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
	    IN_ATTRIB, on_dir_event, am);
	if (am->watch == NULL)
		log_warn("allocs_start: cannot watch alloc_dir %s; reading it "
		    "every %lld ms instead", am->sv->cfg.alloc_dir,
		    (long long)am->sv->cfg.plugin_resync_ms);
	if (regclient_list_handles(am->sv->registry.client,
	    BERTH__HANDLE_KIND__HANDLE_KIND_REATTACH, on_handles, am) < 0)
		supervisor_stop(am->sv, 1, "cannot ask berth-registry for "
		    "task handles");
}

void
allocs_free(struct allocs *am)
{
	struct arun *ar;
	struct refused *r;

	if (am == NULL)
		return;
	while ((ar = TAILQ_FIRST(&am->runs)) != NULL) {
		TAILQ_REMOVE(&am->runs, ar, entry);
		priv_forget(am->sv->mounter.mclient, ar);
		free_run(ar);
	}
	while (TAILQ_FIRST(&am->stale) != NULL)
		free_stale(TAILQ_FIRST(&am->stale));
	while ((r = TAILQ_FIRST(&am->refused)) != NULL) {
		TAILQ_REMOVE(&am->refused, r, entry);
		free(r);
	}
	free_kept(am);
	watch_rm(am->watch);
	if (am->rescan != NULL)
		event_free(am->rescan);
	if (am->resync != NULL)
		event_free(am->resync);
	if (am->stale_vols_timer != NULL)
		event_free(am->stale_vols_timer);
	for (size_t i = 0; i < am->nstale_vols; i++)
		free(am->stale_vols[i]);
	free(am->stale_vols);
	free(am);
}

const char *
allocs_node_plugin_type(struct allocs *am, const char *alloc,
    const char *plugin)
{
	struct arun *ar = find_run(am, alloc);
	const struct alloc_csi_plugin *c;
	size_t i;

	/* Not the controller task: an alloc may run both for one plugin. */
	for (i = 0; ar != NULL && i < ar->doc->ntasks; i++) {
		c = &ar->doc->tasks[i].csi;
		if ((c->type == ALLOC_CSI_NODE ||
		    c->type == ALLOC_CSI_MONOLITH) && strcmp(c->id, plugin) == 0)
			return alloc_csi_type_name(c->type);
	}
	return NULL;
}

/* ---- the operator API's entries ---- */

/* "<id>.json": the file the API writes for an alloc, and removes. */
static int
api_file(const char *id, char *file, size_t n)
{
	return (size_t)snprintf(file, n, "%s.json", id) >= n ? -ENAMETOOLONG :
	    0;
}

int
allocs_submit(struct allocs *am, const struct alloc *a, char *why, size_t n)
{
	struct arun *ar;
	char file[256], tmp[BERTH_PATH_BUF], path[BERTH_PATH_BUF], *text;
	size_t len, off = 0;
	ssize_t w;
	int fd, r = 0;

	if (api_file(a->id, file, sizeof(file)) < 0) {
		snprintf(why, n, "alloc id %s is too long for a file name",
		    a->id);
		return -ENAMETOOLONG;
	}
	if ((ar = find_run(am, a->id)) != NULL && strcmp(ar->file, file) !=
	    0) {
		snprintf(why, n, "alloc %s already runs from %s in alloc_dir, "
		    "a file the API did not write; change or remove that file "
		    "instead", a->id, ar->file);
		return -EEXIST;
	}
	if (runnable(a, why, n) < 0)
		return -EINVAL;
	if ((text = alloc_to_json(a)) == NULL) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	len = strlen(text);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", am->sv->cfg.alloc_dir,
	    file);
	snprintf(path, sizeof(path), "%s/%s", am->sv->cfg.alloc_dir, file);
	/* Written whole, then renamed: the watcher never reads half. */
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		r = -errno;
		snprintf(why, n, "cannot write into alloc_dir %s: %s",
		    am->sv->cfg.alloc_dir, strerror(-r));
		free(text);
		return r;
	}
	while (off < len) {
		if ((w = write(fd, text + off, len - off)) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		off += (size_t)w;
	}
	free(text);
	if (r == 0 && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlink(tmp);
		snprintf(why, n, "cannot write %s: %s", path, strerror(-r));
		return r;
	}
	log_info("alloc %s: submitted through the API as %s", a->id, path);
	return 0;
}

int
allocs_stop(struct allocs *am, const char *id, char *why, size_t n)
{
	struct arun *ar = find_run(am, id);
	char file[256], path[BERTH_PATH_BUF];
	int r;

	if (api_file(id, file, sizeof(file)) < 0) {
		snprintf(why, n, "no alloc %s", id);
		return -ENOENT;
	}
	if (ar != NULL && strcmp(ar->file, file) != 0) {
		snprintf(why, n, "alloc %s runs from %s in alloc_dir, a file "
		    "the API did not write; remove that file to stop it", id,
		    ar->file);
		return -EEXIST;
	}
	snprintf(path, sizeof(path), "%s/%s", am->sv->cfg.alloc_dir, file);
	if (unlink(path) < 0) {
		r = -errno;
		if (r == -ENOENT)
			snprintf(why, n, "no alloc %s", id);
		else
			snprintf(why, n, "cannot remove %s: %s", path,
			    strerror(-r));
		return r;
	}
	log_info("alloc %s: stop asked through the API; %s removed", id, path);
	return 0;
}

static void
view(const struct arun *ar, struct alloc_view *v)
{
	v->doc = ar->doc;
	v->file = ar->file;
	v->stopping = ar->stopping;
	v->tasks = ar->tasks;
	v->ntasks = ar->ntasks;
}

size_t
allocs_count(const struct allocs *am)
{
	const struct arun *ar;
	size_t n = 0;

	TAILQ_FOREACH(ar, &am->runs, entry)
		n++;
	return n;
}

bool
allocs_get(const struct allocs *am, size_t i, struct alloc_view *v)
{
	const struct arun *ar;

	TAILQ_FOREACH(ar, &am->runs, entry)
		if (i-- == 0) {
			view(ar, v);
			return true;
		}
	return false;
}

bool
allocs_find(struct allocs *am, const char *id, struct alloc_view *v)
{
	const struct arun *ar = find_run(am, id);

	if (ar != NULL)
		view(ar, v);
	return ar != NULL;
}
