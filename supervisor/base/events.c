/*
 * events.c: the supervisor's event ring (see events.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "events.h"
#include "xalloc.h"

struct events {
	struct berth_event ring[EVENTS_KEPT];
	uint64_t last;			/* ring[(i - 1) % EVENTS_KEPT] is i */
	int64_t epoch;
	void (*notify)(void *arg);
	void *arg;
};

struct events *
events_new(void)
{
	struct events *ev = xcalloc(1, sizeof(struct events));
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ev->epoch = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	return ev;
}

void
events_free(struct events *ev)
{
	free(ev);
}

void
events_record(struct events *ev, const char *topic, const char *type,
    const char *alloc, const char *task, const char *plugin,
    const char *fmt, ...)
{
	struct berth_event *e;
	struct timespec ts;
	va_list ap;

	if (ev == NULL)
		return;
	e = &ev->ring[ev->last % EVENTS_KEPT];
	e->index = ++ev->last;
	clock_gettime(CLOCK_REALTIME, &ts);
	e->time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	snprintf(e->topic, sizeof(e->topic), "%s", topic);
	snprintf(e->type, sizeof(e->type), "%s", type);
	snprintf(e->alloc, sizeof(e->alloc), "%s", alloc ? alloc : "");
	snprintf(e->task, sizeof(e->task), "%s", task ? task : "");
	snprintf(e->plugin, sizeof(e->plugin), "%s", plugin ? plugin : "");
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	if (ev->notify != NULL)
		ev->notify(ev->arg);
}

int64_t
events_epoch(const struct events *ev)
{
	return ev->epoch;
}

void
events_time(const struct berth_event *e, char *buf, size_t n)
{
	time_t secs = (time_t)(e->time_ms / 1000);
	struct tm tm;
	char day[24];

	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(day, sizeof(day), "1970-01-01T00:00:00");
	snprintf(buf, n, "%s.%03dZ", day, (int)(e->time_ms % 1000));
}

uint64_t
events_last(const struct events *ev)
{
	return ev->last;
}

uint64_t
events_first(const struct events *ev)
{
	if (ev->last == 0)
		return 0;
	return ev->last > EVENTS_KEPT ? ev->last - EVENTS_KEPT + 1 : 1;
}

const struct berth_event *
events_after(const struct events *ev, uint64_t after)
{
	uint64_t first = events_first(ev);

	if (after >= ev->last)
		return NULL;
	if (after < first)
		after = first - 1;
	return &ev->ring[after % EVENTS_KEPT];
}

void
events_set_notify(struct events *ev, void (*cb)(void *arg), void *arg)
{
	ev->notify = cb;
	ev->arg = arg;
}
