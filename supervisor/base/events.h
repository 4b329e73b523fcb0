/*
 * events.h: the supervisor-wide event log behind GET /v1/events: task
 * events, plugin health changes, allocations started and stopped, each
 * with an index that only grows (1, 2, ...), kept in a ring of the last
 * EVENTS_KEPT.
 *
 * Owns: the ring and the index. The index starts at 1 with each
 * supervisor; an API client that sees a smaller last index than it had
 * knows the supervisor restarted. Must not: persist anything (the
 * registry's event log is the durable one), or call back into its
 * callers other than through the one notify hook (the API's long polls).
 */
#ifndef BERTH_EVENTS_H
#define BERTH_EVENTS_H

#include <stdint.h>

#include "log.h"

#define EVENTS_KEPT 1024

struct events;

struct berth_event {
	uint64_t index;
	int64_t time_ms;		/* wall clock, milliseconds */
	char topic[16];			/* "task", "plugin", "alloc" */
	char type[32];			/* "Started", "PluginHealthy", ... */
	char alloc[128], task[128], plugin[128];	/* "" when none */
	char message[480];
};

struct events *events_new(void);
void events_free(struct events *ev);
/* Record one event; ev NULL (no log) is allowed and does nothing. */
void events_record(struct events *ev, const char *topic, const char *type,
    const char *alloc, const char *task, const char *plugin,
    const char *fmt, ...) BERTH_PRINTF(7, 8);
/* The newest index (0: none yet), and the oldest still kept. */
uint64_t events_last(const struct events *ev);
uint64_t events_first(const struct events *ev);
/* The first event kept with an index above after, or NULL. */
const struct berth_event *events_after(const struct events *ev,
    uint64_t after);
/* Called after every record (the API answers its waiting polls). */
void events_set_notify(struct events *ev, void (*cb)(void *arg), void *arg);

#endif
