/*
 * ident.c: identifier validation (see ident.h). Pure, no allocation, so
 * the mounter can call it on every request before it acts.
 */
#include <string.h>

#include "ident.h"

const char *
ident_problem(const char *s, size_t len)
{
	size_t i;

	if (s == NULL || len == 0)
		return "is empty";
	if (len > BERTH_IDENT_MAX)
		return "is longer than 128 bytes";
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return "is '.' or '..'";
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\0')
			return "contains a NUL byte";
		if (c == '/')
			return "contains '/'";
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return "contains a character outside [A-Za-z0-9._-]";
	}
	return NULL;
}

bool
ident_valid(const char *s, size_t len)
{
	return ident_problem(s, len) == NULL;
}

bool
ident_valid_str(const char *s)
{
	return s != NULL && ident_valid(s, strlen(s));
}
