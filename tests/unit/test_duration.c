/*
 * test_duration.c: Go-style durations, both ways, and every refusal.
 */
#include <string.h>

#include <check.h>

#include "duration.h"
#include "harness.h"

static int64_t
ok(const char *s)
{
	char err[200];
	int64_t ms = -1;

	ck_assert_msg(duration_parse(s, &ms, err, sizeof(err)) == 0,
	    "\"%s\" refused: %s", s, err);
	return ms;
}

static void
refused(const char *s, const char *expect)
{
	char err[200];
	int64_t ms = 7;

	ck_assert_int_eq(duration_parse(s, &ms, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, expect) != NULL, "'%s' lacks '%s'", err,
	    expect);
	ck_assert_int_eq(ms, 7);
}

START_TEST(parses)
{
	ck_assert_int_eq(ok("0s"), 0);
	ck_assert_int_eq(ok("250ms"), 250);
	ck_assert_int_eq(ok("30s"), 30000);
	ck_assert_int_eq(ok("1m30s"), 90000);
	ck_assert_int_eq(ok("2h"), 7200000);
	ck_assert_int_eq(ok("1h1m1s1ms"), 3661001);
	ck_assert_int_eq(ok("720h"), DURATION_MAX_MS);
}
END_TEST

START_TEST(refuses)
{
	refused("", "empty duration");
	refused("30", "needs a unit");
	refused("5x", "unknown unit \"x\"");
	refused("-5s", "is not a duration");
	refused("1.5s", "is not a duration (whole numbers");
	refused(" 5s", "is not a duration");
	refused("721h", "longer than");
	refused("99999999999999999999s", "longer than");
}
END_TEST

START_TEST(formats_back)
{
	static const char *const forms[] = { "0s", "250ms", "30s", "1m30s",
		"2h", "1h1m1s1ms" };
	char buf[32];
	size_t i;

	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		duration_format(ok(forms[i]), buf, sizeof(buf));
		ck_assert_str_eq(buf, forms[i]);
	}
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("duration");

	tcase_add_test(tc, parses);
	tcase_add_test(tc, refuses);
	tcase_add_test(tc, formats_back);
	return harness_run("duration", tc);
}
