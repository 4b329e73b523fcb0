/*
 * duration.c: Go-style durations (see duration.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"

static const struct unit {
	const char *name;
	int64_t ms;
} units[] = {
	{ "ms", 1 }, { "s", 1000 }, { "m", 60 * 1000 }, { "h", 3600 * 1000 },
};

int
duration_parse(const char *s, int64_t *ms, char *err, size_t errlen)
{
	const char *p = s;
	int64_t total = 0, n;
	size_t i, ulen;

	if (*p == '\0') {
		snprintf(err, errlen, "empty duration (write for example "
		    "\"30s\" or \"1m30s\")");
		return -1;
	}
	while (*p != '\0') {
		if (!isdigit((unsigned char)*p)) {
			snprintf(err, errlen, "\"%s\" is not a duration (write "
			    "for example \"30s\" or \"1m30s\")", s);
			return -1;
		}
		for (n = 0; isdigit((unsigned char)*p); p++) {
			n = n * 10 + (*p - '0');
			if (n > DURATION_MAX_MS)
				goto too_long;
		}
		for (ulen = 0; isalpha((unsigned char)p[ulen]); ulen++)
			;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strlen(units[i].name) == ulen &&
			    strncmp(p, units[i].name, ulen) == 0)
				break;
		if (ulen == 0 && *p != '\0') {
			snprintf(err, errlen, "\"%s\" is not a duration (whole "
			    "numbers with a unit, for example \"1500ms\")", s);
			return -1;
		}
		if (ulen == 0 || i == sizeof(units) / sizeof(units[0])) {
			snprintf(err, errlen, "\"%s\": %s \"%.*s\" (use ms, s, "
			    "m or h)", s, ulen ? "unknown unit" : "a number "
			    "needs a unit, like", ulen ? (int)ulen : 1,
			    ulen ? p : "s");
			return -1;
		}
		if (n > (DURATION_MAX_MS - total) / units[i].ms)
			goto too_long;
		total += n * units[i].ms;
		p += ulen;
	}
	*ms = total;
	return 0;
too_long:
	snprintf(err, errlen, "\"%s\" is longer than the longest duration "
	    "berth accepts (720h)", s);
	return -1;
}

void
duration_format(int64_t ms, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	if (ms <= 0) {
		snprintf(buf, len, "0s");
		return;
	}
	for (i = 3; i >= 0 && off < len; i--) {
		if (ms / units[i].ms == 0)
			continue;
		off += snprintf(buf + off, len - off, "%lld%s",
		    (long long)(ms / units[i].ms), units[i].name);
		ms %= units[i].ms;
	}
}
