/*
 * plugindef.c: a privileged plugin's definition, its format (berth-
 * plugins.d(5): exec, arg, cap, hostns lines) and parser. The mounter
 * runs no parser more complex than protobuf-c's, so a definition is a few
 * lines of printable ASCII, one setting each, no quoting, no escapes, no
 * variables ('$' then a name is refused: nothing expands it), at most
 * PLUGINDEF_MAX bytes. A capability can be granted only if the mounter
 * holds it itself (see sandbox.c); a plugin gets its own UTS, IPC and
 * cgroup namespaces unless "hostns" names one: root's decision, never
 * the supervisor's.
 * Must not: read anything but the one file; the caller (plugin.c) checks
 * who owns it. fuzz/fuzz_plugindef.c includes this file.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>

#include "mounter.h"

/* why, then -1: every refusal ends here. */
static int BERTH_PRINTF(3, 4)
bad(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

static int
grantable(const char *name)
{
	cap_value_t cap;
	int i;

	if (cap_from_name(name, &cap) < 0 || strncmp(name, "CAP_", 4) != 0)
		return -1;
	for (i = 0; i < MOUNTER_NCAPS; i++)
		if (mounter_caps[i] == cap && cap < 64)
			return (int)cap;
	return -1;
}

/* Does the line start with "key "? Copy the rest into val (NUL-ended). */
static int
setting(const char *s, size_t len, const char *key, char *val)
{
	size_t k = strlen(key);

	if (len <= k || memcmp(s, key, k) != 0 || s[k] != ' ')
		return 0;
	if (len - k - 1 >= LAUNCH_STR)
		return -1;
	snprintf(val, LAUNCH_STR, "%.*s", (int)(len - k - 1), s + k + 1);
	return 1;
}

/* Replace val's placeholders: 0; -1: too long; -2: has "$NAME" or "${". */
static int
expand(char *val, const char *ep)
{
	static const char *const ph[2] = { "{csi_endpoint}", "{csi_socket}" };
	char out[LAUNCH_STR], *p;
	size_t at = 0;
	int i;

	for (p = val; (p = strchr(p, '$')) != NULL; p++)
		if (p[1] == '{' || p[1] == '_' || isalpha((unsigned char)p[1]))
			return -2;
	for (i = 0; i < 2; i++, at = 0)	/* ep + 7: past "unix://" */
		while ((p = strstr(val + at, ph[i])) != NULL) {
			at = (size_t)(p - val) + strlen(ep + 7 * i);
			if (snprintf(out, LAUNCH_STR, "%.*s%s%s", (int)(p - val),
			    val, ep + 7 * i, p + strlen(ph[i])) >= LAUNCH_STR)
				return -1;
			memcpy(val, out, sizeof(out));
		}
	return 0;
}

static bool
dotdot(const char *p)
{
	size_t l = strlen(p);

	return strstr(p, "/../") != NULL ||
	    (l >= 3 && strcmp(p + l - 3, "/..") == 0);
}

/* The CLONE_NEW* flag of a namespace name, or 0. */
static uint32_t
hostns(const char *name)
{
	return strcmp(name, "uts") == 0 ? CLONE_NEWUTS :
	    strcmp(name, "ipc") == 0 ? CLONE_NEWIPC :
	    strcmp(name, "cgroup") == 0 ? CLONE_NEWCGROUP : 0;
}

static int
line(const char *s, size_t len, const char *ep, struct plugindef *d,
    char *why, size_t n)
{
	char val[LAUNCH_STR];
	uint32_t ns;
	int cap, r;

	if (len == 0 || s[0] == '#')
		return 0;
	if ((r = setting(s, len, "arg", val)) != 0) {
		if (r > 0 && (r = expand(val, ep)) == -2)
			return bad(why, n, "'%.40s': nothing expands variables;"
			    " write {csi_endpoint} or {csi_socket}", val);
		if (r < 0 || d->nargs >= LAUNCH_ARGS)
			return bad(why, n, "at most %d arguments of %d bytes "
			    "once expanded", LAUNCH_ARGS - 1, LAUNCH_STR - 1);
		memcpy(d->args[d->nargs++], val, sizeof(val));
	} else if ((r = setting(s, len, "exec", val)) != 0) {
		if (r < 0 || d->args[0][0] != '\0' || val[0] != '/' ||
		    dotdot(val))
			return bad(why, n, "exec needs one absolute path "
			    "without '..', shorter than %d bytes", LAUNCH_STR);
		memcpy(d->args[0], val, sizeof(val));
	} else if ((r = setting(s, len, "cap", val)) != 0) {
		if (r < 0 || (cap = grantable(val)) < 0)
			return bad(why, n, "capability '%.64s' cannot be "
			    "granted: berth-mounter grants only what it holds "
			    "(CAP_SYS_ADMIN, CAP_CHOWN)", r < 0 ? "(too long)" :
			    val);
		d->caps |= 1ULL << cap;
	} else if ((r = setting(s, len, "hostns", val)) != 0) {
		if (r < 0 || (ns = hostns(val)) == 0)
			return bad(why, n, "hostns takes uts, ipc or cgroup");
		d->hostns |= ns;
	} else {
		return bad(why, n, "unknown setting (expected exec, arg, cap, "
		    "hostns or #)");
	}
	return 0;
}

int
plugindef_parse(const char *buf, size_t len, const char *ep,
    struct plugindef *d, char *why, size_t n)
{
	char sub[200];
	size_t i, start = 0;
	int lineno = 1;

	memset(d, 0, sizeof(*d));
	d->nargs = 1;
	if (len > PLUGINDEF_MAX)
		return bad(why, n, "is over %d bytes", PLUGINDEF_MAX);
	for (i = 0; i <= len; i++) {
		if (i < len && buf[i] != '\n') {
			if ((unsigned char)buf[i] < 0x20 ||
			    (unsigned char)buf[i] > 0x7e)
				return bad(why, n, "line %d: byte 0x%02x is "
				    "not printable ASCII", lineno,
				    (unsigned char)buf[i]);
			continue;
		}
		if (line(buf + start, i - start, ep, d, sub, sizeof(sub)) < 0)
			return bad(why, n, "line %d: %s", lineno, sub);
		start = i + 1;
		lineno++;
	}
	if (d->args[0][0] == '\0')
		return bad(why, n, "has no exec line");
	return 0;
}
