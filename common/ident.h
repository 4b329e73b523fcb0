/*
 * ident.h: the one identifier allow-list that every process uses.
 *
 * An identifier (plugin id, plugin type, alloc id, task name, volume
 * namespace and id, usage, volume name) is 1 to BERTH_IDENT_MAX bytes of
 * [A-Za-z0-9._-], and is neither "." nor "..". Identifiers are what the
 * mounter accepts instead of paths, so this check is a security boundary:
 * it is given the length explicitly so that an embedded NUL is refused
 * rather than silently truncating the name.
 */
#ifndef BERTH_IDENT_H
#define BERTH_IDENT_H

#include <stdbool.h>
#include <stddef.h>

#define BERTH_IDENT_MAX 128

/* Returns NULL when valid, else a static reason ("contains '/'", ...). */
const char *ident_problem(const char *s, size_t len);
bool ident_valid(const char *s, size_t len);
/* Convenience for NUL-terminated strings; NULL is invalid. */
bool ident_valid_str(const char *s);

#endif
