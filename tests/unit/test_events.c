/*
 * test_events.c: the supervisor's event ring: indexes that only grow,
 * reading after an index, the oldest kept once the ring wraps, the
 * notify hook, the epoch and the RFC 3339 times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "events.h"
#include "harness.h"

static int notified;

static void
on_notify(void *arg)
{
	(void)arg;
	notified++;
}

START_TEST(indexes_and_reading_after)
{
	struct events *ev = events_new();
	const struct berth_event *e;

	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(events_last(ev), 0);
	ck_assert_int_eq(events_first(ev), 0);
	ck_assert_ptr_null(events_after(ev, 0));
	events_set_notify(ev, on_notify, NULL);
	events_record(ev, "alloc", "AllocStarted", "a1", NULL, NULL,
	    "running %d task", 1);
	events_record(ev, "task", "Started", "a1", "t", "hp", "pid %d", 42);
	ck_assert_int_eq(notified, 2);
	ck_assert_int_eq(events_last(ev), 2);
	ck_assert_int_eq(events_first(ev), 1);
	e = events_after(ev, 0);
	ck_assert_int_eq(e->index, 1);
	ck_assert_str_eq(e->type, "AllocStarted");
	ck_assert_str_eq(e->task, "");
	ck_assert_str_eq(e->message, "running 1 task");
	e = events_after(ev, 1);
	ck_assert_int_eq(e->index, 2);
	ck_assert_str_eq(e->plugin, "hp");
	ck_assert_ptr_null(events_after(ev, 2));
	ck_assert_ptr_null(events_after(ev, 99));
	/* No log: recording does nothing, and does not crash. */
	events_record(NULL, "task", "Started", NULL, NULL, NULL, "x");
	events_free(ev);
}
END_TEST

START_TEST(ring_keeps_the_newest)
{
	struct events *ev = events_new();
	const struct berth_event *e;
	uint64_t i, n = 0;

	for (i = 0; i < EVENTS_KEPT + 10; i++)
		events_record(ev, "task", "Started", "a", "t", NULL, "%llu",
		    (unsigned long long)i + 1);
	ck_assert_int_eq(events_last(ev), EVENTS_KEPT + 10);
	ck_assert_int_eq(events_first(ev), 11);
	/* Asked from before the oldest kept: from the oldest kept on. */
	e = events_after(ev, 3);
	ck_assert_int_eq(e->index, 11);
	ck_assert_str_eq(e->message, "11");
	for (; e != NULL; e = events_after(ev, e->index))
		n++;
	ck_assert_int_eq(n, EVENTS_KEPT);
	e = events_after(ev, EVENTS_KEPT + 8);
	ck_assert_int_eq(e->index, EVENTS_KEPT + 9);
	events_free(ev);
}
END_TEST

/* Each log has its own epoch: when it was made. */
START_TEST(epoch_names_each_log)
{
	struct events *a, *b;
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	a = events_new();
	usleep(2000);
	b = events_new();
	ck_assert_int_ge(events_epoch(a), now);
	ck_assert_int_lt(events_epoch(a), now + 10 * 1000000);
	ck_assert_int_gt(events_epoch(b), events_epoch(a));
	events_free(a);
	events_free(b);
}
END_TEST

START_TEST(times_are_rfc3339_utc)
{
	struct berth_event e = { 0 };
	struct events *ev = events_new();
	char buf[EVENTS_TIME_BUF];
	struct tm tm = { 0 };
	char *end;

	e.time_ms = 1795513921123LL;	/* 2026-11-24T09:52:01.123Z */
	events_time(&e, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-11-24T09:52:01.123Z");
	e.time_ms = 5;
	events_time(&e, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1970-01-01T00:00:00.005Z");
	/* A recorded event's time is now, and reads back. */
	events_record(ev, "task", "Started", "a", "t", NULL, "x");
	events_time(events_after(ev, 0), buf, sizeof(buf));
	end = strptime(buf, "%Y-%m-%dT%H:%M:%S", &tm);
	ck_assert_ptr_nonnull(end);
	ck_assert_int_eq(strlen(end), 5);
	ck_assert_int_eq(end[4], 'Z');
	ck_assert_int_le(llabs((long long)timegm(&tm) - time(NULL)), 5);
	events_free(ev);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("events");

	tcase_add_test(tc, indexes_and_reading_after);
	tcase_add_test(tc, ring_keeps_the_newest);
	tcase_add_test(tc, epoch_names_each_log);
	tcase_add_test(tc, times_are_rfc3339_utc);
	return harness_run("events", tc);
}
