/*
 * xalloc.c: allocation that succeeds or ends the supervisor (see
 * xalloc.h for why).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void
oom(const char *what)
{
	fatalx("out of memory: %s", what);
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n != 0 ? n : 1);

	if (p == NULL)
		oom("malloc");
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n != 0 ? n : 1, size != 0 ? size : 1);

	if (p == NULL)
		oom("calloc");
	return p;
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	void *q = reallocarray(p, n != 0 ? n : 1, size != 0 ? size : 1);

	if (q == NULL)
		oom("reallocarray");
	return q;
}

char *
xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		oom("strdup");
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (p == NULL)
		oom("strndup");
	return p;
}

int
xasprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom("asprintf");
	return n;
}

void
xfree_wiped(void *p, size_t n)
{
	if (p == NULL)
		return;
	explicit_bzero(p, n);
	free(p);
}
