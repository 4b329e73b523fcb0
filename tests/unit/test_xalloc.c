/*
 * test_xalloc.c: the supervisor's out-of-memory policy. An allocation
 * that fails ends the process with status 1 and one critical line that
 * says what failed; one that succeeds returns usable memory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <check.h>

#include "harness.h"
#include "xalloc.h"

/* Under ASan, a huge malloc returns NULL as glibc's does. */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

enum how { HOW_MALLOC, HOW_CALLOC, HOW_REALLOCARRAY, HOW_NONNULL };

/* Run one failing allocation in a child; its status and stderr. */
static int
fail_in_child(enum how how, char *err, size_t errlen)
{
	int p[2], status;
	size_t len;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		void *q = NULL;

		dup2(p[1], STDERR_FILENO);
		log_init("test-xalloc", 0);
		switch (how) {
		case HOW_MALLOC:
			q = xmalloc(SIZE_MAX - 4096);
			break;
		case HOW_CALLOC:
			q = xcalloc(SIZE_MAX / 2, 4);
			break;
		case HOW_REALLOCARRAY:
			q = xreallocarray(NULL, SIZE_MAX / 2, 4);
			break;
		case HOW_NONNULL:
			q = xnonnull((void *)NULL, "json_object");
			break;
		}
		/* Reached only if the policy did not hold. */
		printf("%p\n", q);
		_exit(42);
	}
	close(p[1]);
	/* Until the child's end closes: ASan writes its warning apart. */
	for (len = 0; len < errlen - 1 && (n = read(p[0], err + len,
	    errlen - 1 - len)) > 0; len += (size_t)n)
		;
	err[len] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_failure_is_fatal)
{
	static const struct { enum how how; const char *what; } cases[] = {
		{ HOW_MALLOC, "out of memory: malloc" },
		{ HOW_CALLOC, "out of memory: calloc" },
		{ HOW_REALLOCARRAY, "out of memory: reallocarray" },
		{ HOW_NONNULL, "out of memory: json_object" },
	};
	char err[1024];
	const char *line;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(fail_in_child(cases[i].how, err, sizeof(err)),
		    1);
		line = strstr(err, cases[i].what);
		ck_assert_msg(line != NULL, "case %zu: stderr was \"%s\"",
		    i, err);
		/* One line of ours, at the critical priority (under ASan,
		 * its own warning about the failed allocation comes first). */
		while (line > err && line[-1] != '\n')
			line--;
		ck_assert_msg(strncmp(line, "<2>", 3) == 0, "%s", err);
		ck_assert_ptr_eq(strchr(line, '\n'), err + strlen(err) - 1);
	}
}
END_TEST

START_TEST(test_success)
{
	char *s = xstrdup("berth"), *t = xstrndup("berthing", 5), *u;
	int *v = xcalloc(4, sizeof(*v));

	ck_assert_str_eq(s, "berth");
	ck_assert_str_eq(t, "berth");
	ck_assert_int_eq(xasprintf(&u, "%s-%d", s, 7), 7);
	ck_assert_str_eq(u, "berth-7");
	ck_assert_int_eq(v[3], 0);
	v = xreallocarray(v, 1000, sizeof(*v));
	v[999] = 1;
	free(v);
	free(u);
	free(t);
	free(s);
	free(xmalloc(0));
	xfree_wiped(NULL, 16);
	xfree_wiped(xstrdup("key=value"), 10);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("xalloc");

	tcase_add_test(tc, test_failure_is_fatal);
	tcase_add_test(tc, test_success);
	return harness_run("xalloc", tc);
}
