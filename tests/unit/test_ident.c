/*
 * test_ident.c: the identifier allow-list, the mounter's first defence.
 */
#include <string.h>

#include <check.h>

#include "harness.h"
#include "ident.h"

START_TEST(accepts_plain_identifiers)
{
	ck_assert(ident_valid_str("a"));
	ck_assert(ident_valid_str("hostpath-plugin_1.2"));
	ck_assert(ident_valid_str("rw-file-system-single-node-writer"));
	ck_assert(ident_valid_str("..."));
	ck_assert(ident_valid_str(".hidden"));
	ck_assert(ident_valid_str("5f6a8f5e-3c1b-4d2a-9b7e-0a1b2c3d4e5f"));
}
END_TEST

START_TEST(refuses_dots_slashes_and_empty)
{
	ck_assert(!ident_valid_str(NULL));
	ck_assert(!ident_valid_str(""));
	ck_assert(!ident_valid_str("."));
	ck_assert(!ident_valid_str(".."));
	ck_assert(!ident_valid_str("a/b"));
	ck_assert(!ident_valid_str("/"));
	ck_assert(!ident_valid_str("../etc"));
	ck_assert_str_eq(ident_problem("..", 2), "is '.' or '..'");
	ck_assert_str_eq(ident_problem("a/b", 3), "contains '/'");
}
END_TEST

START_TEST(refuses_embedded_nul)
{
	ck_assert(!ident_valid("ab\0../x", 7));
	ck_assert_str_eq(ident_problem("ab\0", 3), "contains a NUL byte");
}
END_TEST

START_TEST(refuses_other_bytes)
{
	static const char *bad[] = { "a b", "a\tb", "a\nb", "caf\xc3\xa9",
		"a:b", "a*", "$x", "a\\b", "\xff", "a;b", "~" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!ident_valid_str(bad[i]), "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(length_limit_is_128)
{
	char s[BERTH_IDENT_MAX + 2];

	memset(s, 'x', sizeof(s));
	ck_assert(ident_valid(s, BERTH_IDENT_MAX));
	ck_assert(!ident_valid(s, BERTH_IDENT_MAX + 1));
	ck_assert_str_eq(ident_problem(s, 129), "is longer than 128 bytes");
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("ident");

	tcase_add_test(tc, accepts_plain_identifiers);
	tcase_add_test(tc, refuses_dots_slashes_and_empty);
	tcase_add_test(tc, refuses_embedded_nul);
	tcase_add_test(tc, refuses_other_bytes);
	tcase_add_test(tc, length_limit_is_128);
	return harness_run("ident", tc);
}
