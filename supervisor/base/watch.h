/*
 * watch.h: one inotify descriptor for the whole supervisor, shared by
 * everything that waits for a file to appear (a plugin's socket, an
 * allocation document), so that a hundred plugins do not use a hundred
 * inotify instances (the default limit per user is 128).
 */
#ifndef BERTH_WATCH_H
#define BERTH_WATCH_H

#include <stdint.h>

#include <event2/event.h>

struct watcher;
struct watch;

/* name: the entry in the directory that changed (may be ""). */
typedef void (*watch_cb)(struct watch *w, uint32_t mask, const char *name,
    void *arg);

struct watcher *watcher_new(struct event_base *base);
void watcher_free(struct watcher *wr);
/* Watch the directory dir for mask (IN_*); NULL with errno set. */
struct watch *watch_add(struct watcher *wr, const char *dir, uint32_t mask,
    watch_cb cb, void *arg);
void watch_rm(struct watch *w);

#endif
