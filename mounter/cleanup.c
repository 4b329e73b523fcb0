/*
 * cleanup.c: CleanupAlloc, in bounded steps. What berth made for an alloc
 * is found by the layout's patterns below and walked STEP entries per turn
 * of the event loop, so the mounter answers a ping however big a tree a
 * peer planted; the answer goes when the walk ends. A walk never enters a
 * mount berth did not make (RESOLVE_NO_XDEV; a plugin's root only if it is
 * berth's self-bind), and changes the owner of nothing but a socket dir
 * berth made, by descriptor, once its mount is gone.
 * Must not: follow a symlink, cross a mount a plugin stacked, act by a
 * path; remove what is not empty, or what the layout does not name.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mounter.h"

#define STEP 128		/* directory entries per turn of the loop, */
#define STEP_NS 5000000		/* or this long, whichever is first */
#define DEPTH 8
#define QUEUED_MAX 1024		/* cleanups waiting; more are refused */

/*
 * Components: a name; "*" any identifier; "+" any but the socket tree;
 * "@a", "@t", "@p" the request's alloc, plugin type, plugin id.
 */
enum { SOCKETS = 1, PRUNE = 2, PLUGIN = 4 };
static const struct phase {
	const char *pat;
	int own;	/* from this component down: the alloc's, removed */
	int bind;	/* this component is berth's self-bind (0: none) */
	int flags;	/* PRUNE: leaves removed if empty, never unmounted */
} phases[] = {
	/* Tasks first: their binds hold references to the publish mounts. */
	{ "allocs/@a/*/volumes/*", 1, 0, 0 },
	{ "csi/+/*/per-alloc/@a/*/*", 4, 2, 0 },
	{ "csi/plugins/@a/*", 2, 0, SOCKETS },
	/* The plugin's last alloc: what the layout says berth made. */
	{ "csi/@t/@p/staging/*/*/*", 3, 2, PRUNE | PLUGIN },
	{ "csi/@t/@p/per-alloc/*/*/*", 3, 2, PRUNE | PLUGIN },
};
#define NPHASES (int)(sizeof(phases) / sizeof(phases[0]))

struct level {
	int fd;			/* a directory whose entries are matched */
	DIR *d;			/* reading it, for "*" and "+" */
	bool done;		/* a literal component: visited */
	char name[MREQ_IDENT];	/* its own name in the level above */
};

struct job {
	struct mounter *m;
	struct mreq rq;
	struct mreply out;
	int phase, depth;
	char comp[DEPTH][MREQ_IDENT];
	int ncomp;
	struct level lv[DEPTH];
	struct job *next;
};

struct cleanups {
	struct event *ev;
	struct job *head, **tail;
	int n;
};

static void step(evutil_socket_t fd, short ev, void *arg);

/* Unmount what is stacked on one entry, then remove it if empty. */
static void
sweep_entry(struct job *j, int dirfd, const char *name)
{
	int r;

	if ((r = res_unmount_all(dirfd, name)) < 0) {
		log_warnx("sweep_entry: unmounting %s: %s", name, strerror(-r));
		return;
	}
	j->out.unmounted += r;
	j->out.removed += res_remove(dirfd, name);
}

static void
leaf(struct job *j, int dirfd, const char *name)
{
	const struct phase *ph = &phases[j->phase];
	size_t len = strlen(name);

	if (ph->flags & PRUNE)
		j->out.removed += res_remove(dirfd, name);
	else if ((ph->flags & SOCKETS) && len > 7 &&
	    (strcmp(name + len - 7, ".stdout") == 0 ||
	    strcmp(name + len - 7, ".stderr") == 0) &&
	    unlinkat(dirfd, name, 0) == 0)
		j->out.removed++;
	else
		sweep_entry(j, dirfd, name);
}

/*
 * csi/plugins/<alloc>: its self-bind and whatever a plugin stacked go
 * first; then the directory beneath, on the data dir's mount in root's
 * csi/plugins/, is root's again, by descriptor, to be emptied.
 */
static int
take_back(struct job *j, int dirfd, const char *name)
{
	int fd, r;

	if ((r = res_unmount_all(dirfd, name)) > 0)
		j->out.unmounted += r;
	if ((fd = res_open_here(dirfd, name, O_PATH | O_DIRECTORY)) < 0)
		return fd;
	if ((r = res_chown_dir(fd, 0, 0)) < 0) {
		close(fd);
		return r;
	}
	r = res_open_here(fd, ".", O_RDONLY | O_DIRECTORY);
	close(fd);
	return r;
}

/* The next entry of level k to match component k; "" to skip; NULL: end. */
static const char *
next(struct job *j, struct level *l, int k)
{
	const char *c = j->comp[k];
	struct dirent *de;

	if (strcmp(c, "*") != 0 && strcmp(c, "+") != 0) {
		if (l->done)
			return NULL;
		l->done = true;
		return c;
	}
	if (l->d == NULL && (l->d = fdopendir(l->fd)) == NULL)
		return NULL;
	if ((de = readdir(l->d)) == NULL)
		return NULL;
	if (!ident_valid_str(de->d_name) || (c[0] == '+' &&
	    strcmp(de->d_name, "plugins") == 0))
		return "";
	return de->d_name;
}

static void
pop(struct job *j)
{
	struct level *l = &j->lv[--j->depth];

	if (l->d != NULL)
		closedir(l->d);
	else if (l->fd != j->m->data_fd)
		close(l->fd);
	/* Below the alloc's own component: emptied, so removed. */
	if (j->depth > 0 && j->depth - 1 >= phases[j->phase].own)
		j->out.removed += res_remove(j->lv[j->depth - 1].d != NULL ?
		    dirfd(j->lv[j->depth - 1].d) : j->lv[j->depth - 1].fd,
		    l->name);
}

/* Enter dirfd/name for component k + 1, crossing no mount not berth's. */
static void
enter(struct job *j, int dirfd, const char *name, int k)
{
	const struct phase *ph = &phases[j->phase];
	struct level *l;
	int fd;

	if ((ph->flags & SOCKETS) && k == 2)
		fd = take_back(j, dirfd, name);
	else if (k == ph->bind)
		fd = res_self_bind(dirfd, name, O_RDONLY);
	else
		fd = res_open_here(dirfd, name, O_RDONLY | O_DIRECTORY);
	if (fd == -EXDEV)
		log_warnx("cleanup: not entering %s (alloc %s): a mount berth "
		    "did not make", name, j->rq.alloc);
	if (fd < 0)
		return;
	l = &j->lv[j->depth++];
	memset(l, 0, sizeof(*l));
	l->fd = fd;
	/* An identifier or a pattern's name: it fits. */
	memcpy(l->name, name, strlen(name) + 1);
}

/* Start phase j->phase: its components, the data dir as level 0. */
static bool
start(struct job *j)
{
	char pat[MREQ_IDENT], *c, *save = NULL;

	for (; j->phase < NPHASES; j->phase++)
		if (!(phases[j->phase].flags & PLUGIN) || j->rq.plugin[0])
			break;
	if (j->phase == NPHASES)
		return false;
	snprintf(pat, sizeof(pat), "%s", phases[j->phase].pat);
	for (j->ncomp = 0, c = strtok_r(pat, "/", &save); c != NULL;
	    c = strtok_r(NULL, "/", &save), j->ncomp++)
		snprintf(j->comp[j->ncomp], MREQ_IDENT, "%s", strcmp(c, "@a") ==
		    0 ? j->rq.alloc : strcmp(c, "@t") == 0 ? j->rq.type :
		    strcmp(c, "@p") == 0 ? j->rq.plugin : c);
	memset(&j->lv[0], 0, sizeof(j->lv[0]));
	j->lv[0].fd = j->m->data_fd;
	j->depth = 1;
	return true;
}

/* The plugin's root, when nothing is left in it: its self-bind, itself. */
static void
plugin_root(struct job *j)
{
	char rel[MREQ_PATH];
	int pfd, fd;
	DIR *d;
	struct dirent *de;
	bool empty = true;

	snprintf(rel, sizeof(rel), "csi/%s", j->rq.type);
	if ((pfd = res_open_here(j->m->data_fd, rel, O_PATH |
	    O_DIRECTORY)) < 0)
		return;
	if ((fd = res_self_bind(pfd, j->rq.plugin, O_RDONLY)) >= 0 &&
	    (d = fdopendir(fd)) != NULL) {
		while (empty && (de = readdir(d)) != NULL)
			empty = strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0;
		closedir(d);
		if (empty)
			sweep_entry(j, pfd, j->rq.plugin);
	} else if (fd >= 0)
		close(fd);
	close(pfd);
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Up to *budget entries of j, until the deadline; true when it is done. */
static bool
work(struct job *j, int *budget, int64_t deadline)
{
	const char *name;
	struct level *l;
	int k;

	while (*budget > 0 && now_ns() < deadline) {
		if (j->depth == 0 && !start(j)) {
			if (j->rq.plugin[0])
				plugin_root(j);
			return true;
		}
		(*budget)--;
		k = j->depth - 1;
		l = &j->lv[k];
		if ((name = next(j, l, k)) == NULL) {
			pop(j);
			if (j->depth == 0)
				j->phase++;
		} else if (name[0] == '\0')
			continue;
		else if (k == j->ncomp - 1)
			leaf(j, l->d != NULL ? dirfd(l->d) : l->fd, name);
		else if (j->depth < DEPTH)
			enter(j, l->d != NULL ? dirfd(l->d) : l->fd, name, k);
	}
	return false;
}

static void
step(evutil_socket_t fd, short ev, void *arg)
{
	struct cleanups *q = arg;
	struct timeval now = { 0, 0 };
	int budget = STEP;
	struct job *j;

	(void)fd;
	(void)ev;
	int64_t deadline = now_ns() + STEP_NS;

	while (budget > 0 && (j = q->head) != NULL && work(j, &budget,
	    deadline)) {
		if ((q->head = j->next) == NULL)
			q->tail = &q->head;
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
	struct job *j;

	if (q == NULL && (q = m->cleanups = calloc(1, sizeof(*q))) != NULL &&
	    (q->ev = evtimer_new(m->h.base, step, q)) != NULL)
		q->tail = &q->head;
	if (q == NULL || q->ev == NULL || q->n >= QUEUED_MAX ||
	    (j = calloc(1, sizeof(*j))) == NULL)
		return fail(why, BERTH__ERROR_CODE__ERROR_CONFLICT, "%d "
		    "cleanups are in progress; try again when one is done",
		    q != NULL ? q->n : 0);
	j->m = m;
	j->rq = *rq;
	j->out.pidfd = -1;
	*q->tail = j;
	q->tail = &j->next;
	if (q->n++ == 0)
		evtimer_add(q->ev, &now);
	out->later = true;
	return BERTH__ERROR_CODE__ERROR_NONE;
}
