/*
 * test_events.c: the supervisor's event ring: indexes that only grow,
 * reading after an index, the oldest kept once the ring wraps, and the
 * notify hook.
 */
#include <stdio.h>
#include <string.h>

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

int
main(void)
{
	TCase *tc = tcase_create("events");

	tcase_add_test(tc, indexes_and_reading_after);
	tcase_add_test(tc, ring_keeps_the_newest);
	return harness_run("events", tc);
}
