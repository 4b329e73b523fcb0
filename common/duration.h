/*
 * duration.h: Go-style durations ("30s", "1m30s", "250ms"), the form
 * Nomad's jobspec and berth's config use for every time setting.
 */
#ifndef BERTH_DURATION_H
#define BERTH_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* The longest duration accepted: 30 days. */
#define DURATION_MAX_MS (30LL * 24 * 3600 * 1000)

/*
 * Parse s into milliseconds. Units: ms, s, m, h; one or more number-unit
 * pairs, each number a non-negative integer, no sign, no spaces. Returns
 * 0, or -1 with the reason in err ("\"5x\": unknown unit \"x\" (use ms,
 * s, m or h)").
 */
int duration_parse(const char *s, int64_t *ms, char *err, size_t errlen);
/* "1m30s", "250ms", "0s": the shortest form duration_parse() reads back. */
void duration_format(int64_t ms, char *buf, size_t len);

#endif
