/*
 * xalloc.h: the supervisor's one policy for running out of memory.
 *
 * berth-supervisor does not carry on after an allocation fails. A
 * manager that carried on would have to leave something undone (a stale
 * task unstopped, a plugin unfollowed, an event unsent), and no caller
 * can tell which. It logs "out of memory" with what it was doing and
 * exits 1 instead. Nothing is lost by that: the registry holds every
 * acknowledged record, tasks keep running, and the supervisor that
 * systemd restarts adopts them (docs/ARCHITECTURE.md, "Restarts").
 *
 * Every allocation in the supervisor's own code goes through these. A
 * library call that returns NULL only for lack of memory (jansson,
 * protobuf-c, libevent) is checked with xnonnull().
 */
#ifndef BERTH_XALLOC_H
#define BERTH_XALLOC_H

#include <stddef.h>

#include "log.h"

/* Never NULL, and the compiler is told so. */
#define XALLOC_NONNULL __attribute__((returns_nonnull))

void *xmalloc(size_t n) XALLOC_NONNULL;
void *xcalloc(size_t n, size_t size) XALLOC_NONNULL;
void *xreallocarray(void *p, size_t n, size_t size) XALLOC_NONNULL;
char *xstrdup(const char *s) XALLOC_NONNULL;
char *xstrndup(const char *s, size_t n) XALLOC_NONNULL;
int xasprintf(char **out, const char *fmt, ...) BERTH_PRINTF(2, 3);
/* Wipe n bytes of p (a secret's copy), then free it; p may be NULL. */
void xfree_wiped(void *p, size_t n);

/* Log what failed and exit 1; for the checks the x-functions cannot do. */
void oom(const char *what) __attribute__((noreturn));

/* p, or oom(what) when p is NULL; p is evaluated once. */
static inline void *
xnonnull(void *p, const char *what)
{
	if (p == NULL)
		oom(what);
	return p;
}

#endif
