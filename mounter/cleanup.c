/*
 * cleanup.c: CleanupAlloc, in bounded steps. What berth made for an alloc
 * is found by the layout's patterns below and walked for at most STEP_NS
 * per turn of the event loop, so the mounter answers a ping however big a
 * tree a peer planted; the answer goes when the walk ends.
 * A walk never enters a mount berth did not make (RESOLVE_NO_XDEV; a
 * plugin's root only if it is berth's self-bind), and changes the owner
 * of nothing but a directory berth gave away (a socket or status dir),
 * by descriptor, once any mount on it is gone.
 * Must not: follow a symlink, cross a mount a plugin stacked, act by a
 * path; remove what the layout does not name, or a non-empty file but in
 * a directory of the alloc's that is root's (FILES).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mounter.h"

#define STEP_NS 5000000		/* a turn of the event loop's work */
#define DEPTH 16
#define QUEUED_MAX 1024		/* cleanups waiting; more are refused */

/*
 * Components: a name; "*" any identifier; "+" any but the socket tree;
 * "@a", "@t", "@p" the request's alloc, plugin type, plugin id. own: from
 * this component down, the alloc's, removed; bind: this component is
 * berth's self-bind (0: none); deep: from this component on, "*" at any
 * depth (crun's mount points in a bundle's rootfs/). TAKE: component 2, a directory berth gave
 * its owner (who may have shut it), is root's again before it is entered;
 * FILES: a leaf that is no directory is unlinked, whatever its size;
 * PRUNE: leaves removed if empty, never unmounted; ROOT: the plugin's
 * root, if it is empty; PLUGIN: only when the request names a plugin.
 */
enum { TAKE = 1, FILES = 2, PRUNE = 4, ROOT = 8, PLUGIN = 16 };
static const struct phase {
	const char *comp[DEPTH];
	int own, bind, flags, deep;
} phases[] = {
	/* Tasks first: their binds hold references to the publish mounts.
	 * TAKE: a task dir an older berth gave to the task's user. */
	{ { "allocs", "@a", "*", "volumes", "*" }, 1, 0, TAKE, 0 },
	{ { "csi", "+", "*", "per-alloc", "@a", "*", "*" }, 4, 2, 0, 0 },
	{ { "csi", "plugins", "@a", "*" }, 2, 0, TAKE | FILES, 0 },
	/* StartTask's: the bundle, root's; the status dir, the task's. */
	{ { "mounter", "tasks", "@a", "*", "*" }, 2, 0, FILES, 5 },
	{ { LAYOUT_SHIM_DIR, "@a", "*", "*" }, 1, 0, TAKE | FILES, 0 },
	/* The plugin's last alloc: what the layout says berth made. */
	{ { "csi", "@t", "@p", "staging", "*", "*", "*" }, 3, 2,
	    PRUNE | PLUGIN, 0 },
	{ { "csi", "@t", "@p", "per-alloc", "*", "*", "*" }, 3, 2,
	    PRUNE | PLUGIN, 0 },
	{ { "csi", "@t", "@p" }, 3, 0, ROOT | PLUGIN, 0 },
};
#define NPHASES (int)(sizeof(phases) / sizeof(phases[0]))

struct level {
	DIR *d;			/* a directory whose entries are matched */
	bool done;		/* a literal component: visited */
	char name[MREQ_IDENT];	/* its own name in the level above */
};

struct job {
	struct mounter *m;
	struct mreq rq;
	struct mreply out;
	int phase, depth;	/* depth 0: the phase is not started */
	struct level lv[DEPTH];	/* lv[0]: the data dir */
	struct job *next;
};

struct cleanups {
	struct event *ev;
	struct job *head;
	int n;
};

static const char *
comp(const struct job *j, int k)
{
	const struct phase *ph = &phases[j->phase];
	const char *c = k >= DEPTH ? NULL : ph->deep && k >= ph->deep ? "*" :
	    ph->comp[k];

	if (c == NULL || c[0] != '@')
		return c;
	return c[1] == 'a' ? j->rq.alloc : c[1] == 't' ? j->rq.type :
	    j->rq.plugin;
}

static int
lfd(const struct job *j, int k)
{
	return k == 0 ? j->m->data_fd : dirfd(j->lv[k].d);
}

static void
sweep_entry(struct job *j, int dirfd, const char *name)
{
	int r;

	if ((r = res_unmount_all(dirfd, name)) < 0) {
		log_warnx("sweep_entry: unmounting %s: %s", name, strerror(-r));
		return;
	}
	j->out.unmounted += r;
	if ((phases[j->phase].flags & FILES) && unlinkat(dirfd, name, 0) == 0)
		j->out.removed++;
	else
		j->out.removed += res_remove(dirfd, name);
}

static void
leaf(struct job *j, int dirfd, const char *name)
{
	int flags = phases[j->phase].flags, fd, n = 0;

	if (flags & PRUNE)
		j->out.removed += res_remove(dirfd, name);
	else if (!(flags & ROOT))
		sweep_entry(j, dirfd, name);
	/* The plugin's root, berth's self-bind, if nothing is left in it. */
	else if ((fd = res_self_bind(dirfd, name, O_PATH)) >= 0) {
		n = res_entries(fd, NULL, NULL);
		close(fd);
		if (n == 2)
			sweep_entry(j, dirfd, name);
	}
}

/* Enter dirfd/name, matched by component k: no mount but berth's. */
static int
enter(struct job *j, int dirfd, const char *name, int k)
{
	const struct phase *ph = &phases[j->phase];
	struct level *l = &j->lv[j->depth];
	int fd, r;

	if ((ph->flags & TAKE) && k == 2) {
		/* Its self-bind, and whatever a plugin stacked, go first; the
		 * directory beneath is on a mount of root's, in root's dir. */
		if ((r = res_unmount_all(dirfd, name)) > 0)
			j->out.unmounted += r;
		if ((r = fd = res_open_here(dirfd, name, O_PATH |
		    O_DIRECTORY)) >= 0) {
			fd = res_take_back(r, (gid_t)-1);
			close(r);
		}
	} else if (k == ph->bind)
		fd = res_self_bind(dirfd, name, O_RDONLY);
	else
		fd = res_open_here(dirfd, name, O_RDONLY | O_DIRECTORY);
	if (fd == -EXDEV)
		log_warnx("cleanup: not entering %s (alloc %s): a mount berth "
		    "did not make", name, j->rq.alloc);
	if (fd < 0 || (l->d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return fd < 0 ? fd : -errno;
	}
	l->done = false;
	/* An identifier or a pattern's name: it fits. */
	memcpy(l->name, name, strlen(name) + 1);
	j->depth++;
	return 0;
}

/* The next entry of level k to match component k; "" to skip; NULL: end. */
static const char *
next(struct job *j, int k)
{
	const char *c = comp(j, k);
	struct dirent *de;

	if (c[0] != '*' && c[0] != '+') {
		if (j->lv[k].done)
			return NULL;
		j->lv[k].done = true;
		return c;
	}
	if ((de = readdir(j->lv[k].d)) == NULL)
		return NULL;
	if (!ident_valid_str(de->d_name) || (c[0] == '+' &&
	    strcmp(de->d_name, "plugins") == 0))
		return "";
	return de->d_name;
}

/* Level k is read: closed, and removed if it is the alloc's own. */
static void
pop(struct job *j)
{
	int k = --j->depth;

	if (k == 0)
		return;
	closedir(j->lv[k].d);
	if (k - 1 >= phases[j->phase].own)
		j->out.removed += res_remove(lfd(j, k - 1), j->lv[k].name);
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Walk j until the deadline, one entry at least; true when it is done. */
static bool
work(struct job *j, int64_t deadline)
{
	const char *name;
	int k;

	do {
		while (j->depth == 0 && j->phase < NPHASES &&
		    (phases[j->phase].flags & PLUGIN) && !j->rq.plugin[0])
			j->phase++;
		if (j->phase == NPHASES)
			return true;
		if (j->depth == 0) {
			j->lv[0].done = false;
			j->depth = 1;
		}
		k = j->depth - 1;
		if ((name = next(j, k)) == NULL) {
			pop(j);
			if (j->depth == 0)
				j->phase++;
		} else if (name[0] == '\0')
			continue;
		/* Deep, what is no directory (or too deep) is a leaf. */
		else if (comp(j, k + 1) == NULL || ((j->depth == DEPTH ? -ENOTDIR
		    : enter(j, lfd(j, k), name, k)) < 0 &&
		    phases[j->phase].deep && k + 1 >= phases[j->phase].deep))
			leaf(j, lfd(j, k), name);
	} while (now_ns() < deadline);
	return false;
}

static void
step(evutil_socket_t fd, short ev, void *arg)
{
	struct cleanups *q = arg;
	struct timeval now = { 0, 0 };
	int64_t deadline = now_ns() + STEP_NS;
	struct job *j;

	while ((j = q->head) != NULL && work(j, deadline)) {
		q->head = j->next;
		q->n--;
		mounter_answer(j->m, &j->rq, &j->out);
		free(j);
	}
	/* A zero timeout: the loop polls the socket before the next step. */
	if (q->head != NULL)
		evtimer_add(q->ev, &now);
}

/* Best effort: what cannot be unmounted or removed is logged and left. */
Berth__ErrorCode
volume_cleanup(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	struct cleanups *q = m->cleanups;
	struct timeval now = { 0, 0 };
	struct job *j, **end;

	if (q == NULL && (q = m->cleanups = calloc(1, sizeof(*q))) != NULL)
		q->ev = evtimer_new(m->h.base, step, q);
	if (q == NULL || q->ev == NULL || q->n >= QUEUED_MAX ||
	    (j = calloc(1, sizeof(*j))) == NULL)
		return fail(why, BERTH__ERROR_CODE__ERROR_CONFLICT, "%d "
		    "cleanups are in progress; try again when one is done",
		    q != NULL ? q->n : 0);
	j->m = m;
	j->rq = *rq;
	j->out.pidfd = j->out.chanfd = -1;
	for (end = &q->head; *end != NULL; end = &(*end)->next)
		;
	*end = j;
	if (q->n++ == 0)
		evtimer_add(q->ev, &now);
	out->later = true;
	return BERTH__ERROR_CODE__ERROR_NONE;
}
