/*
 * test_restarts.c: the restart policy's rules (supervisor/alloc/
 * restarts.c) on a clock the test sets: attempts per interval, the
 * interval that begins again, mode fail and mode delay, no attempts.
 */
#include <string.h>

#include <check.h>

#include "harness.h"
#include "restarts.h"

#define MIN (60 * 1000)

static const struct alloc_restart fail3 = { 3, 10 * MIN, 15000,
	ALLOC_RESTART_FAIL };
static const struct alloc_restart delay2 = { 2, 10 * MIN, 15000,
	ALLOC_RESTART_DELAY };

/* The verdict at now: true with the delay, or false. */
static bool
next(struct restarts *r, const struct alloc_restart *p, int64_t now,
    int64_t *delay, char *why)
{
	return restarts_next(r, p, now, delay, why, 256);
}

START_TEST(attempts_then_fail)
{
	struct restarts r = { 0, 0 };
	char why[256];
	int64_t d;

	restarts_begin(&r, 1000);
	ck_assert(next(&r, &fail3, 2000, &d, why));
	ck_assert_int_eq(d, 15000);
	ck_assert_str_eq(why, "restart 1 of 3 within 10m");
	ck_assert(next(&r, &fail3, 20000, &d, why));
	ck_assert(next(&r, &fail3, 40000, &d, why));
	ck_assert_str_eq(why, "restart 3 of 3 within 10m");
	ck_assert(!next(&r, &fail3, 60000, &d, why));
	ck_assert_int_eq(d, 0);
	ck_assert_str_eq(why, "3 restarts within 10m used up and the restart "
	    "mode is \"fail\"");
}
END_TEST

/* The interval runs from the first start; an end after it starts anew. */
START_TEST(a_new_interval_gives_the_attempts_back)
{
	struct restarts r = { 0, 0 };
	char why[256];
	int64_t d;

	restarts_begin(&r, 1000);
	ck_assert(next(&r, &fail3, 2000, &d, why));
	ck_assert(next(&r, &fail3, 3000, &d, why));
	ck_assert(next(&r, &fail3, 4000, &d, why));
	/* Just inside the interval: given up. */
	ck_assert(!next(&r, &fail3, 1000 + 10 * MIN - 1, &d, why));
	r = (struct restarts){ 0, 0 };
	restarts_begin(&r, 1000);
	ck_assert(next(&r, &fail3, 2000, &d, why));
	ck_assert(next(&r, &fail3, 3000, &d, why));
	ck_assert(next(&r, &fail3, 4000, &d, why));
	/* At its end: the first of the next interval. */
	ck_assert(next(&r, &fail3, 1000 + 10 * MIN, &d, why));
	ck_assert_str_eq(why, "restart 1 of 3 within 10m");
	ck_assert_int_eq(r.interval_start_ms, 1000 + 10 * MIN);
	/* restarts_begin does not move a running interval. */
	restarts_begin(&r, 5 * 10 * MIN);
	ck_assert_int_eq(r.interval_start_ms, 1000 + 10 * MIN);
}
END_TEST

/* Mode delay: past its attempts, the rest of the interval, at least
 * delay; then the count begins again. */
START_TEST(mode_delay_waits_for_the_interval)
{
	struct restarts r = { 0, 0 };
	char why[256];
	int64_t d;

	restarts_begin(&r, 1000);
	ck_assert(next(&r, &delay2, 2000, &d, why));
	ck_assert(next(&r, &delay2, 3000, &d, why));
	ck_assert(next(&r, &delay2, 4000, &d, why));
	ck_assert_int_eq(d, 10 * MIN - 3000);
	ck_assert_str_eq(why, "2 restarts within 10m used up; the restart "
	    "mode is \"delay\": the next in 9m57s, when the interval is over");
	/* Near the interval's end: never less than delay. */
	ck_assert(next(&r, &delay2, 10 * MIN, &d, why));
	ck_assert_int_eq(d, 15000);
	/* The next end is in a new interval. */
	ck_assert(next(&r, &delay2, 10 * MIN + 15000, &d, why));
	ck_assert_int_eq(d, 15000);
	ck_assert_str_eq(why, "restart 1 of 2 within 10m");
}
END_TEST

START_TEST(no_attempts_no_restart)
{
	const struct alloc_restart once = { 0, 30 * MIN, 15000,
		ALLOC_RESTART_FAIL };
	struct restarts r = { 0, 0 };
	char why[256];
	int64_t d;

	ck_assert(!next(&r, &once, 5000, &d, why));
	ck_assert_str_eq(why, "the restart policy allows no restarts");
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("restarts");

	tcase_add_test(tc, attempts_then_fail);
	tcase_add_test(tc, a_new_interval_gives_the_attempts_back);
	tcase_add_test(tc, mode_delay_waits_for_the_interval);
	tcase_add_test(tc, no_attempts_no_restart);
	return harness_run("restarts", tc);
}
