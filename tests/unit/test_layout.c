/*
 * test_layout.c: the on-disk layout of DESIGN.md, built from identifiers.
 */
#include <errno.h>
#include <string.h>

#include <check.h>

#include "harness.h"
#include "layout.h"

START_TEST(paths_follow_the_design)
{
	char b[512], u[128];

	ck_assert_int_eq(layout_usage(u, sizeof(u), false, "file-system",
	    "single-node-writer"), 0);
	ck_assert_str_eq(u, "rw-file-system-single-node-writer");
	ck_assert_int_eq(layout_usage(u, sizeof(u), true, "block-device",
	    "multi-node-reader-only"), 0);
	ck_assert_str_eq(u, "ro-block-device-multi-node-reader-only");

	ck_assert_int_eq(layout_plugin_socket(b, sizeof(b), "a1"), 0);
	ck_assert_str_eq(b, "csi/plugins/a1/csi.sock");
	ck_assert_int_eq(layout_plugin_socket_dir(b, sizeof(b), "a1"), 0);
	ck_assert_str_eq(b, "csi/plugins/a1");
	ck_assert_int_eq(layout_plugin_root(b, sizeof(b), "node", "hp"), 0);
	ck_assert_str_eq(b, "csi/node/hp");
	/* One staging path per volume, whatever its usages. */
	ck_assert_int_eq(layout_staging(b, sizeof(b), "node", "hp", "default",
	    "vol1", NULL), 0);
	ck_assert_str_eq(b, "csi/node/hp/staging/default/vol1");
	/* The per-usage path of older berths, kept while staged there. */
	ck_assert_int_eq(layout_staging(b, sizeof(b), "node", "hp", "default",
	    "vol1", u), 0);
	ck_assert_str_eq(b, "csi/node/hp/staging/default/vol1/"
	    "ro-block-device-multi-node-reader-only");
	ck_assert_int_eq(layout_publish(b, sizeof(b), "node", "hp", "a1",
	    "vol1", "rw-file-system-single-node-writer"), 0);
	ck_assert_str_eq(b, "csi/node/hp/per-alloc/a1/vol1/"
	    "rw-file-system-single-node-writer");
	ck_assert_int_eq(layout_task_dir(b, sizeof(b), "a1", "web"), 0);
	ck_assert_str_eq(b, "allocs/a1/web");
	ck_assert_int_eq(layout_task_volume(b, sizeof(b), "a1", "web", "data"),
	    0);
	ck_assert_str_eq(b, "allocs/a1/web/volumes/data");
	ck_assert_int_eq(layout_abs(b, sizeof(b), "/var/lib/berth",
	    "allocs/a1"), 0);
	ck_assert_str_eq(b, "/var/lib/berth/allocs/a1");
	ck_assert_int_eq(layout_abs(b, sizeof(b), "/", "allocs"), 0);
	ck_assert_str_eq(b, "/allocs");
}
END_TEST

START_TEST(bad_identifiers_are_refused)
{
	char b[512];

	ck_assert_int_eq(layout_plugin_socket(b, sizeof(b), ".."), -EINVAL);
	ck_assert_int_eq(layout_plugin_socket(b, sizeof(b), "a/b"), -EINVAL);
	ck_assert_int_eq(layout_plugin_root(b, sizeof(b), "node", ""), -EINVAL);
	ck_assert_int_eq(layout_plugin_root(b, sizeof(b), NULL, "x"), -EINVAL);
	/* "plugins" would collide with the socket tree. */
	ck_assert_int_eq(layout_plugin_root(b, sizeof(b), "plugins", "x"),
	    -EINVAL);
	ck_assert_int_eq(layout_staging(b, sizeof(b), "node", "hp", "ns", "..",
	    "rw-x"), -EINVAL);
	ck_assert_int_eq(layout_staging(b, sizeof(b), "node", "hp", "ns", "..",
	    NULL), -EINVAL);
	ck_assert_int_eq(layout_staging(b, sizeof(b), "node", "hp", "ns", "v",
	    ""), -EINVAL);
	ck_assert_int_eq(layout_staging(b, sizeof(b), "plugins", "hp", "ns",
	    "v", NULL), -EINVAL);
	ck_assert_int_eq(layout_publish(b, sizeof(b), "node", "hp", "a", "v",
	    "../x"), -EINVAL);
	ck_assert_int_eq(layout_task_volume(b, sizeof(b), "a", "t", "."),
	    -EINVAL);
	ck_assert_int_eq(layout_usage(b, sizeof(b), false, "file-system",
	    "single-node-sometimes"), -EINVAL);
	ck_assert_int_eq(layout_usage(b, sizeof(b), false, "tape",
	    "single-node-writer"), -EINVAL);
	ck_assert_int_eq(layout_abs(b, sizeof(b), "relative", "x"), -EINVAL);
	ck_assert_int_eq(layout_abs(b, sizeof(b), "/d", "/abs"), -EINVAL);
}
END_TEST

START_TEST(too_long_is_enametoolong)
{
	char b[32];

	ck_assert_int_eq(layout_task_volume(b, sizeof(b), "alloc-0123456789",
	    "task", "name"), -ENAMETOOLONG);
	ck_assert_int_eq(layout_abs(b, sizeof(b), "/a/very/long/data/directory",
	    "allocs"), -ENAMETOOLONG);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("layout");

	tcase_add_test(tc, paths_follow_the_design);
	tcase_add_test(tc, bad_identifiers_are_refused);
	tcase_add_test(tc, too_long_is_enametoolong);
	return harness_run("layout", tc);
}
