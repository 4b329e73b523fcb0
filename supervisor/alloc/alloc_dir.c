/*
 * alloc_dir.c: the allocations' files in alloc_dir: the watch and the
 * scan that starts, stops and restarts them, the files refused (each
 * version reported once), and the operator API's submit and stop.
 *
 * Must not: write into alloc_dir other than through allocs_submit and
 * allocs_stop, or parse a document itself (alloc.c does).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "alloc_int.h"
#include "drivermgr.h"
#include "layout.h"
#include "xalloc.h"

/* Listed as failed: doc (taken) failed at step. */
static void
keep_failed(struct refused *r, struct alloc *doc, const char *step,
    const char *reason)
{
	alloc_free(r->doc);
	r->doc = doc;
	snprintf(r->step, sizeof(r->step), "%s", step);
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
}

static void
refused_drop(struct refused *r)
{
	alloc_free(r->doc);
	free(r);
}

struct refused *
find_failed(struct allocs *am, const char *alloc)
{
	struct refused *r;

	TAILQ_FOREACH(r, &am->refused, entry)
		if (r->doc != NULL && strcmp(r->doc->id, alloc) == 0)
			return r;
	return NULL;
}

/* This version of the file ran and failed: not again until it changes. */
void
refuse_after_run(struct allocs *am, const char *file, const char *sig,
    struct alloc *doc, const char *step, const char *reason)
{
	struct refused *r;

	TAILQ_FOREACH(r, &am->refused, entry)
		if (strcmp(r->file, file) == 0)
			break;
	if (r == NULL) {
		r = xcalloc(1, sizeof(*r));
		snprintf(r->file, sizeof(r->file), "%s", file);
		TAILQ_INSERT_TAIL(&am->refused, r, entry);
	}
	snprintf(r->sig, sizeof(r->sig), "%s", sig);
	r->seen = r->after_run = true;
	keep_failed(r, doc, step, reason);
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
			r->after_run = false;
			keep_failed(r, NULL, "", "");
			return false;
		}
	r = xcalloc(1, sizeof(*r));
	snprintf(r->file, sizeof(r->file), "%s", file);
	snprintf(r->sig, sizeof(r->sig), "%s", sig);
	r->seen = true;
	TAILQ_INSERT_TAIL(&am->refused, r, entry);
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

/* A driver the config does not allow: -1 with why. */
static int
drivers_allowed(struct allocs *am, const struct alloc *a, char *why,
    size_t n)
{
	const char *name;
	size_t i;

	for (i = 0; i < a->ntasks; i++) {
		name = alloc_driver_name(a->tasks[i].driver);
		if (drivermgr_allowed(am->d.drivers, name))
			continue;
		snprintf(why, n, "task %s uses driver %s, which driver_allow or "
		    "driver_block in the config does not allow",
		    a->tasks[i].name, name);
		return -1;
	}
	return 0;
}

/*
 * A privileged task whose definition is not in plugins_dir: -1 with why.
 * One that cannot be looked at (not searchable) is left to the mounter.
 */
static int
definitions_found(struct allocs *am, const struct alloc *a, char *why,
    size_t n)
{
	char path[BERTH_PATH_BUF];
	struct stat st;
	size_t i;

	for (i = 0; am->d.plugins_dir != NULL && i < a->ntasks; i++) {
		if (a->tasks[i].plugin == NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s.conf", am->d.plugins_dir,
		    a->tasks[i].plugin);
		if (stat(path, &st) == 0 || errno != ENOENT)
			continue;
		snprintf(why, n, "task %s: no plugin definition %s in "
		    "plugins_dir %s", a->tasks[i].name, a->tasks[i].plugin,
		    am->d.plugins_dir);
		return -1;
	}
	return 0;
}

/*
 * A driver the config blocks, a plugin definition that is not there, or
 * more plugin tasks than one, runs nothing (stale tasks are stopped):
 * the alloc is listed as failed at step, for good, until its file
 * changes. doc is taken.
 */
static void
refuse_failed(struct allocs *am, struct alloc *doc, const char *file,
    const char *sig, const char *step, const char *why)
{
	struct refused *r;

	if (refused_before(am, file, sig)) {
		alloc_free(doc);
		return;
	}
	log_warnx("alloc file %s refused: %s", file, why);
	alloc_failed(am, doc->id, step, why);
	TAILQ_FOREACH(r, &am->refused, entry)
		if (strcmp(r->file, file) == 0)
			break;
	keep_failed(r, doc, step, why);
}

static void
start_run(struct allocs *am, const char *file, const char *sig)
{
	struct alloc_problems probs = { 0 };
	struct alloc *doc = NULL;
	struct arun *other;
	char path[BERTH_PATH_BUF], why[256];
	size_t i;

	if (refused_still(am, file, sig))
		return;
	snprintf(path, sizeof(path), "%s/%s", am->d.alloc_dir, file);
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
	if (other != NULL) {
		alloc_free(doc);
		return;
	}
	if (runnable(doc, why, sizeof(why)) < 0) {
		refuse_failed(am, doc, file, sig, "plugin", why);
		return;
	}
	if (drivers_allowed(am, doc, why, sizeof(why)) < 0) {
		refuse_failed(am, doc, file, sig, "driver", why);
		return;
	}
	if (definitions_found(am, doc, why, sizeof(why)) < 0) {
		refuse_failed(am, doc, file, sig, "plugin", why);
		return;
	}
	arun_start(am, doc, file, sig);
}

bool
doc_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".json") ==
	    0;
}

void
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
	if ((d = opendir(am->d.alloc_dir)) == NULL) {
		if (!am->told_missing)
			log_warn("alloc_dir %s (no allocations until it can "
			    "be read)", am->d.alloc_dir);
		am->told_missing = true;
	} else
		am->told_missing = false;
	/* Files gone or changed: their allocations stop. */
	TAILQ_FOREACH(ar, &am->runs, entry) {
		if (arun_stopping(ar))
			continue;
		if (d == NULL || fstatat(dirfd(d), ar->file, &st, 0) < 0) {
			if (d != NULL)
				arun_stop(ar, "its file was removed");
			continue;
		}
		snprintf(sig, sizeof(sig), "%lu-%lld-%lld.%09ld",
		    (unsigned long)st.st_ino, (long long)st.st_size,
		    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		if (strcmp(sig, ar->sig) != 0)
			arun_stop(ar, "its file changed; the new version "
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
			refused_drop(r);
		}
	}
}

void
on_rescan(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	scan(arg);
}

void
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
	if (runnable(a, why, n) < 0 || drivers_allowed(am, a, why, n) < 0 ||
	    definitions_found(am, a, why, n) < 0)
		return -EINVAL;
	if ((text = alloc_to_json(a)) == NULL)
		oom("allocs_submit");
	len = strlen(text);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", am->d.alloc_dir,
	    file);
	snprintf(path, sizeof(path), "%s/%s", am->d.alloc_dir, file);
	/* Written whole, then renamed: the watcher never reads half. */
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		r = -errno;
		snprintf(why, n, "cannot write into alloc_dir %s: %s",
		    am->d.alloc_dir, strerror(-r));
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
	struct refused *f = ar == NULL ? find_failed(am, id) : NULL;
	const char *from = ar != NULL ? ar->file : f != NULL ? f->file : NULL;
	char file[256], path[BERTH_PATH_BUF];
	int r;

	if (api_file(id, file, sizeof(file)) < 0) {
		snprintf(why, n, "no alloc %s", id);
		return -ENOENT;
	}
	if (from != NULL && strcmp(from, file) != 0) {
		snprintf(why, n, "alloc %s runs from %s in alloc_dir, a file "
		    "the API did not write; remove that file to stop it", id,
		    from);
		return -EEXIST;
	}
	snprintf(path, sizeof(path), "%s/%s", am->d.alloc_dir, file);
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

void
refused_free(struct allocs *am)
{
	struct refused *r;

	while ((r = TAILQ_FIRST(&am->refused)) != NULL) {
		TAILQ_REMOVE(&am->refused, r, entry);
		refused_drop(r);
	}
}
