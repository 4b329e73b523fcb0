/*
 * watch.c: the supervisor's one inotify descriptor (see watch.h). Several
 * watches may name one directory: inotify gives them one descriptor, and
 * each gets every event of it. Must not: block, or call back into a
 * watch that was removed during the same read.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/queue.h>

#include "log.h"
#include "watch.h"
#include "xalloc.h"

struct watch {
	struct watcher *wr;
	int wd;
	bool gone;
	watch_cb cb;
	void *arg;
	TAILQ_ENTRY(watch) entry;
};

struct watcher {
	int fd;
	struct event *ev;
	bool reading;
	TAILQ_HEAD(, watch) watches;
};

static void
reap(struct watcher *wr)
{
	struct watch *w, *next;

	for (w = TAILQ_FIRST(&wr->watches); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (!w->gone)
			continue;
		TAILQ_REMOVE(&wr->watches, w, entry);
		free(w);
	}
}

static void
on_inotify(evutil_socket_t fd, short ev, void *arg)
{
	struct watcher *wr = arg;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ie;
	struct watch *w;
	ssize_t n;
	char *p;

	(void)ev;
	wr->reading = true;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (p = buf; p < buf + n; p += sizeof(*ie) + ie->len) {
			ie = (const struct inotify_event *)p;
			TAILQ_FOREACH(w, &wr->watches, entry) {
				if (w->gone || w->wd != ie->wd)
					continue;
				w->cb(w, ie->mask, ie->len ? ie->name : "",
				    w->arg);
				/* The directory went: its number may be reused. */
				if (ie->mask & IN_IGNORED)
					w->wd = -1;
			}
		}
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		log_warn("on_inotify: reading events");
	wr->reading = false;
	reap(wr);
}

struct watcher *
watcher_new(struct event_base *base)
{
	struct watcher *wr;

	wr = xcalloc(1, sizeof(*wr));
	TAILQ_INIT(&wr->watches);
	if ((wr->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		log_warn("watcher_new: inotify_init1");
		free(wr);
		return NULL;
	}
	wr->ev = xnonnull(event_new(base, wr->fd, EV_READ | EV_PERSIST,
	    on_inotify, wr), "watcher_new: event_new");
	if (event_add(wr->ev, NULL) < 0) {
		event_free(wr->ev);
		close(wr->fd);
		free(wr);
		return NULL;
	}
	return wr;
}

void
watcher_free(struct watcher *wr)
{
	struct watch *w;

	if (wr == NULL)
		return;
	while ((w = TAILQ_FIRST(&wr->watches)) != NULL) {
		TAILQ_REMOVE(&wr->watches, w, entry);
		free(w);
	}
	event_free(wr->ev);
	close(wr->fd);
	free(wr);
}

struct watch *
watch_add(struct watcher *wr, const char *dir, uint32_t mask, watch_cb cb,
    void *arg)
{
	struct watch *w;
	int wd;

	/* IN_MASK_ADD: another watch of this directory keeps its events. */
	if ((wd = inotify_add_watch(wr->fd, dir, mask | IN_MASK_ADD |
	    IN_ONLYDIR)) < 0)
		return NULL;
	w = xcalloc(1, sizeof(*w));
	w->wr = wr;
	w->wd = wd;
	w->cb = cb;
	w->arg = arg;
	TAILQ_INSERT_TAIL(&wr->watches, w, entry);
	return w;
}

void
watch_rm(struct watch *w)
{
	struct watcher *wr;
	struct watch *o;
	bool shared = false;

	if (w == NULL)
		return;
	wr = w->wr;
	w->gone = true;
	TAILQ_FOREACH(o, &wr->watches, entry)
		if (o != w && !o->gone && o->wd == w->wd)
			shared = true;
	/* The kernel's watch is one per directory: keep it while shared. */
	if (!shared && w->wd >= 0)
		inotify_rm_watch(wr->fd, w->wd);
	if (!wr->reading)
		reap(wr);
}
