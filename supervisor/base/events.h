/*
 * events.h: the supervisor-wide event log behind GET /v1/events: task
 * events, plugin health changes, allocations started and stopped, each
 * with an index that only grows (1, 2, ...), kept in a ring of the last
 * EVENTS_KEPT.
 *
 * Owns: the ring, the index and the epoch. The index starts at 1 with
 * each supervisor; the epoch (the wall-clock time the log was made, in
 * microseconds) names this run of the index, so that a client that had
 * another epoch knows to start over. Must not: persist anything (the
 * registry's event log is the durable one), or call back into its
 * callers other than through the one notify hook (the API's long polls).
 */
#ifndef BERTH_EVENTS_H
#define BERTH_EVENTS_H

#include <stddef.h>
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
/* This log's epoch: when it was made, microseconds since 1970. */
int64_t events_epoch(const struct events *ev);
/* e's time in RFC 3339, in UTC with milliseconds
 * ("2026-11-24T09:52:01.123Z"); buf holds at least EVENTS_TIME_BUF. */
#define EVENTS_TIME_BUF	32
void events_time(const struct berth_event *e, char *buf, size_t n);
/* The newest index (0: none yet), and the oldest still kept. */
uint64_t events_last(const struct events *ev);
uint64_t events_first(const struct events *ev);
/* The first event kept with an index above after, or NULL. */
const struct berth_event *events_after(const struct events *ev,
    uint64_t after);
/* Called after every record (the API answers its waiting polls). */
void events_set_notify(struct events *ev, void (*cb)(void *arg), void *arg);

#endif
