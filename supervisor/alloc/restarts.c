/*
 * restarts.c: the restart policy's rules (see restarts.h). As in Nomad:
 * at most attempts restarts in an interval, which begins with the first
 * start and again with the first end after it is over; each restart
 * waits delay. Past the attempts, mode "fail" gives up and mode "delay"
 * waits for the interval to end (never less than delay). A successful
 * exit counts as any other: berth's tasks are services, so a task ends
 * for good, complete, only once its policy restarts it no more (with
 * attempts = 0, at its first exit).
 */
#include <stdio.h>

#include "duration.h"
#include "restarts.h"

void
restarts_begin(struct restarts *r, int64_t now_ms)
{
	if (r->interval_start_ms == 0)
		r->interval_start_ms = now_ms;
}

bool
restarts_next(struct restarts *r, const struct alloc_restart *p,
    int64_t now_ms, int64_t *delay_ms, char *why, size_t n)
{
	char iv[32], dl[32];
	int64_t end;

	*delay_ms = 0;
	duration_format(p->interval_ms, iv, sizeof(iv));
	if (p->attempts == 0) {
		snprintf(why, n, "the restart policy allows no restarts");
		return false;
	}
	restarts_begin(r, now_ms);
	if (now_ms >= r->interval_start_ms + p->interval_ms) {
		r->count = 0;
		r->interval_start_ms = now_ms;
	}
	if (++r->count <= p->attempts) {
		*delay_ms = p->delay_ms;
		snprintf(why, n, "restart %d of %d within %s", r->count,
		    p->attempts, iv);
		return true;
	}
	if (p->mode == ALLOC_RESTART_FAIL) {
		snprintf(why, n, "%d restart%s within %s used up and the "
		    "restart mode is \"fail\"", p->attempts, p->attempts == 1 ?
		    "" : "s", iv);
		return false;
	}
	end = r->interval_start_ms + p->interval_ms;
	*delay_ms = end - now_ms > p->delay_ms ? end - now_ms : p->delay_ms;
	duration_format(*delay_ms, dl, sizeof(dl));
	snprintf(why, n, "%d restart%s within %s used up; the restart mode is "
	    "\"delay\": the next in %s, when the interval is over",
	    p->attempts, p->attempts == 1 ? "" : "s", iv, dl);
	return true;
}
