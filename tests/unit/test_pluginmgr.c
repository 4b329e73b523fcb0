/*
 * test_pluginmgr.c: the shared plugin manager with a test plugin on a real
 * event_base: health transitions (healthy, unhealthy, undetected and
 * back) and the one log line per change, a plugin that never
 * fingerprinted staying undetected when it fails, the backoff doubling up
 * to its cap and resetting once healthy, shutdown during a backoff wait
 * (nothing left pending, no further start), the allow and block lists
 * (also for a plugin added after the start), and the stats stream with
 * its own backoff.
 *
 * The test plugin plays a script: one report per turn of the loop, then
 * the test's `done` action.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "harness.h"
#include "pluginmgr.h"

#define NSCRIPT 8
#define NREC 32

struct tplug {
	struct plugin *p;
	const char *name;
	int fail_starts;		/* start() fails this many times first */
	int fail_stats;			/* stats() reports a failure this often */
	enum plugin_state script[NSCRIPT];
	size_t nscript, step;
	void (*done)(struct tplug *);	/* when the script ran out */
	unsigned starts, shutdowns, stats_starts;
	int64_t backoffs[NREC], stats_backoffs[NREC];
	bool running, stats_running;
	struct event *tick, *stats_tick;
};

static struct event_base *base;
static struct pluginmgr *mgr;
static enum plugin_state seen[NREC];	/* states the owner heard of */
static size_t nseen;

static void
fp_free(void *data)
{
	free(data);
}

static void *
payload(unsigned v)
{
	unsigned *d = malloc(sizeof(*d));

	ck_assert_ptr_nonnull(d);
	*d = v;
	return d;
}

static void
on_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct tplug *t = arg;
	char desc[64];

	(void)fd;
	(void)ev;
	if (t->step < t->nscript) {
		snprintf(desc, sizeof(desc), "step %zu", t->step);
		plugin_fingerprint(t->p, t->script[t->step], desc,
		    payload((unsigned)t->step));
		t->step++;
		event_active(t->tick, 0, 0);
		return;
	}
	if (t->done != NULL)
		t->done(t);
}

static int
tp_start(struct plugin *p)
{
	struct tplug *t = plugin_arg(p);

	ck_assert(!t->running);
	ck_assert_uint_lt(t->starts, NREC);
	t->backoffs[t->starts++] = plugin_last_backoff_ms(p);
	if (t->fail_starts > 0) {
		t->fail_starts--;
		plugin_failed(p, "no runtime (attempt %u)", t->starts);
		return -1;
	}
	t->running = true;
	t->step = 0;
	event_active(t->tick, 0, 0);
	return 0;
}

static void
tp_shutdown(struct plugin *p)
{
	struct tplug *t = plugin_arg(p);

	ck_assert(t->running);
	t->running = t->stats_running = false;
	t->shutdowns++;
	event_del(t->tick);
	event_del(t->stats_tick);
}

static void
on_stats_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct tplug *t = arg;

	(void)fd;
	(void)ev;
	if (t->fail_stats > 0) {
		t->fail_stats--;
		t->stats_running = false;
		plugin_stats_failed(t->p, "counter file unreadable");
		return;
	}
	plugin_stats(t->p, payload(t->stats_starts));
	event_base_loopbreak(base);
}

static int
tp_stats(struct plugin *p)
{
	struct tplug *t = plugin_arg(p);

	ck_assert(t->running && !t->stats_running);
	ck_assert_uint_lt(t->stats_starts, NREC);
	t->stats_backoffs[t->stats_starts++] =
	    plugin_stats_last_backoff_ms(p);
	t->stats_running = true;
	event_active(t->stats_tick, 0, 0);
	return 0;
}

static const struct plugin_ops tp_ops = {
	.start = tp_start,
	.shutdown = tp_shutdown,
	.fp_free = fp_free,
	.stats_free = fp_free,
};

static const struct plugin_ops tp_stats_ops = {
	.start = tp_start,
	.stats = tp_stats,
	.shutdown = tp_shutdown,
	.fp_free = fp_free,
	.stats_free = fp_free,
};

static void
on_changed(struct plugin *p, enum plugin_event ev, void *arg)
{
	(void)arg;
	if (ev == PLUGIN_EV_STATS)
		return;
	ck_assert_uint_lt(nseen, NREC);
	seen[nseen++] = plugin_get_state(p);
}

static void
manager(int64_t initial, int64_t max, char *const *allow, char *const *block)
{
	struct pluginmgr_params prm = {
		.name = "test",
		.retry_initial_ms = initial,
		.retry_max_ms = max,
		.allow = allow,
		.block = block,
		.changed = on_changed,
	};

	ck_assert_ptr_nonnull(base = event_base_new());
	ck_assert_ptr_nonnull(mgr = pluginmgr_new(base, &prm));
	nseen = 0;
}

static void
add(struct tplug *t, const char *name, const struct plugin_ops *ops)
{
	t->name = name;
	ck_assert_ptr_nonnull(t->tick = event_new(base, -1, 0, on_tick, t));
	ck_assert_ptr_nonnull(t->stats_tick = evtimer_new(base, on_stats_tick,
	    t));
	ck_assert_ptr_nonnull(t->p = pluginmgr_add(mgr, name, ops, t));
}

static void
release(struct tplug *t, size_t n)
{
	size_t i;

	pluginmgr_free(mgr);
	for (i = 0; i < n; i++) {
		ck_assert(!t[i].running);
		event_free(t[i].tick);
		event_free(t[i].stats_tick);
	}
	event_base_free(base);
}

/* Turn the loop until pred holds; something must stay pending till then. */
static void
run_until(bool (*pred)(struct tplug *), struct tplug *t)
{
	while (!pred(t))
		ck_assert_int_eq(event_base_loop(base, EVLOOP_ONCE), 0);
}

static void
stop_loop(struct tplug *t)
{
	(void)t;
	event_base_loopbreak(base);
}

static unsigned
count(const char *hay, const char *needle)
{
	unsigned n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

START_TEST(transitions_and_state_line)
{
	struct tplug t[2] = {
		{ .script = { PLUGIN_HEALTHY, PLUGIN_HEALTHY, PLUGIN_UNHEALTHY,
		    PLUGIN_UNDETECTED, PLUGIN_UNDETECTED, PLUGIN_HEALTHY },
		  .nscript = 6, .done = stop_loop },
		{ .nscript = 0 },
	};
	const enum plugin_state want[] = { PLUGIN_HEALTHY, PLUGIN_HEALTHY,
		PLUGIN_UNHEALTHY, PLUGIN_UNDETECTED, PLUGIN_UNDETECTED,
		PLUGIN_HEALTHY };
	const char *log, *a, *b, *c, *d;
	size_t i;

	harness_capture_stderr();
	manager(1000, 8000, NULL, NULL);
	add(&t[0], "exec", &tp_ops);
	add(&t[1], "quiet", &tp_ops);
	ck_assert_int_eq(plugin_get_state(t[0].p), PLUGIN_UNDETECTED);
	pluginmgr_start(mgr);
	event_base_dispatch(base);

	ck_assert_uint_eq(nseen, 6);
	for (i = 0; i < nseen; i++)
		ck_assert_int_eq(seen[i], want[i]);
	ck_assert_int_eq(plugin_get_state(t[0].p), PLUGIN_HEALTHY);
	ck_assert_str_eq(plugin_desc(t[0].p), "step 5");
	ck_assert_uint_eq(*(unsigned *)plugin_fp_data(t[0].p), 5);
	/* Started, but never reported: undetected, not detected. */
	ck_assert_uint_eq(t[1].starts, 1);
	ck_assert_int_eq(plugin_get_state(t[1].p), PLUGIN_UNDETECTED);
	release(t, 2);

	log = harness_captured_stderr();
	/* Once at start, then once per change: repeats are not changes. */
	ck_assert_uint_eq(count(log, "]: test: "), 5);
	ck_assert_ptr_nonnull(a = strstr(log,
	    "]: test: exec=undetected quiet=undetected\n"));
	ck_assert_ptr_nonnull(b = strstr(a,
	    "]: test: exec=healthy quiet=undetected\n"));
	ck_assert_ptr_nonnull(c = strstr(b,
	    "]: test: exec=unhealthy quiet=undetected\n"));
	ck_assert_ptr_nonnull(d = strstr(c,
	    "]: test: exec=undetected quiet=undetected\n"));
	ck_assert_ptr_nonnull(strstr(d,
	    "]: test: exec=healthy quiet=undetected\n"));
}
END_TEST

/* Fail asynchronously once, after the script; then run it again. */
static void
fail_once(struct tplug *t)
{
	if (t->shutdowns == 0)
		plugin_failed(t->p, "stream ended");
	else
		event_base_loopbreak(base);
}

static bool
both_restarted(struct tplug *t)
{
	return t[0].starts == 3 && t[1].starts == 2 && t[1].step == 1;
}

START_TEST(failure_keeps_undetected_or_makes_unhealthy)
{
	struct tplug t[2] = {
		/* Never fingerprints, fails twice. */
		{ .fail_starts = 2, .nscript = 0, .done = NULL },
		/* Detected, then its stream ends. */
		{ .script = { PLUGIN_HEALTHY }, .nscript = 1,
		  .done = fail_once },
	};
	char line[256];
	size_t i;

	manager(5, 10, NULL, NULL);
	add(&t[0], "never", &tp_ops);
	add(&t[1], "flaky", &tp_ops);
	pluginmgr_start(mgr);
	run_until(both_restarted, t);

	ck_assert_uint_eq(t[0].starts, 3);
	ck_assert_int_eq(plugin_get_state(t[0].p), PLUGIN_UNDETECTED);
	/* The failure's reason is kept as the description. */
	ck_assert_str_eq(plugin_desc(t[0].p), "no runtime (attempt 2)");
	/* Healthy, then unhealthy when it failed, then healthy again. */
	ck_assert_uint_eq(t[1].starts, 2);
	ck_assert_uint_eq(t[1].shutdowns, 1);
	for (i = 0; i < nseen && seen[i] != PLUGIN_UNHEALTHY; i++)
		;
	ck_assert_uint_lt(i, nseen);
	ck_assert_int_eq(plugin_get_state(t[1].p), PLUGIN_HEALTHY);
	pluginmgr_states(mgr, line, sizeof(line));
	ck_assert_str_eq(line, "test: never=undetected flaky=healthy");
	release(t, 2);
}
END_TEST

/* Healthy at last: fail once more to see the backoff start over. */
static void
fail_after_healthy(struct tplug *t)
{
	if (t->shutdowns == 0)
		plugin_failed(t->p, "stream ended");
	else
		event_base_loopbreak(base);
}

START_TEST(backoff_doubles_to_cap_and_resets)
{
	struct tplug t = { .fail_starts = 5, .script = { PLUGIN_HEALTHY },
		.nscript = 1, .done = fail_after_healthy };
	const int64_t want[] = { 0, 10, 20, 40, 40, 40, 10 };
	size_t i;

	manager(10, 40, NULL, NULL);
	add(&t, "slow", &tp_ops);
	pluginmgr_start(mgr);
	event_base_dispatch(base);

	ck_assert_uint_eq(t.starts, 7);
	for (i = 0; i < t.starts; i++)
		ck_assert_int_eq(t.backoffs[i], want[i]);
	release(&t, 1);
}
END_TEST

static bool
both_waiting(struct tplug *t)
{
	return t[0].starts == 1 && t[1].shutdowns == 1;
}

START_TEST(shutdown_during_backoff_stops_at_once)
{
	struct tplug t[2] = {
		{ .fail_starts = 100, .nscript = 0 },
		{ .script = { PLUGIN_HEALTHY }, .nscript = 1,
		  .done = fail_once },
	};

	/* A minute's wait: only shutdown can end this loop in time. */
	manager(60000, 120000, NULL, NULL);
	add(&t[0], "failing", &tp_ops);
	add(&t[1], "ended", &tp_ops);
	pluginmgr_start(mgr);
	run_until(both_waiting, t);
	/* Both wait for their retry now. */
	ck_assert_int_eq(event_base_get_num_events(base,
	    EVENT_BASE_COUNT_ADDED), 2);
	pluginmgr_shutdown(mgr);
	ck_assert_int_eq(event_base_get_num_events(base,
	    EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE), 0);
	/* Returns at once: nothing is pending any more. */
	ck_assert_int_eq(event_base_dispatch(base), 1);
	ck_assert_uint_eq(t[0].starts, 1);
	ck_assert_uint_eq(t[0].shutdowns, 0);
	ck_assert_uint_eq(t[1].starts, 1);
	ck_assert_uint_eq(t[1].shutdowns, 1);
	/* Shutting down again, or starting again, starts nothing. */
	pluginmgr_shutdown(mgr);
	pluginmgr_start(mgr);
	event_base_loop(base, EVLOOP_NONBLOCK);
	ck_assert_uint_eq(t[0].starts, 1);
	ck_assert_uint_eq(t[1].starts, 1);
	release(t, 2);
}
END_TEST

START_TEST(shutdown_of_running_plugins)
{
	struct tplug t = { .script = { PLUGIN_HEALTHY }, .nscript = 1,
		.done = stop_loop };

	manager(10, 40, NULL, NULL);
	add(&t, "exec", &tp_ops);
	pluginmgr_start(mgr);
	event_base_dispatch(base);
	ck_assert(t.running);
	pluginmgr_shutdown(mgr);
	ck_assert(!t.running);
	ck_assert_uint_eq(t.shutdowns, 1);
	/* Reports after shutdown are dropped (and their data freed). */
	plugin_fingerprint(t.p, PLUGIN_UNHEALTHY, "late", payload(9));
	ck_assert_int_eq(plugin_get_state(t.p), PLUGIN_HEALTHY);
	release(&t, 1);
	ck_assert_uint_eq(t.shutdowns, 1);
}
END_TEST

START_TEST(allow_and_block_lists)
{
	char *allow[] = { "exec", "privileged", NULL };
	char *block[] = { "privileged", NULL };
	char *none[] = { NULL };
	struct tplug t[3] = {
		{ .script = { PLUGIN_HEALTHY }, .nscript = 1,
		  .done = stop_loop },
		{ .script = { PLUGIN_HEALTHY }, .nscript = 1 },
		{ .script = { PLUGIN_HEALTHY }, .nscript = 1 },
	};
	char line[256];
	const char *log;

	harness_capture_stderr();
	manager(10, 40, allow, block);
	add(&t[0], "exec", &tp_ops);
	add(&t[1], "privileged", &tp_ops);
	add(&t[2], "raw_exec", &tp_ops);
	ck_assert(pluginmgr_allowed(mgr, "exec"));
	ck_assert(!pluginmgr_allowed(mgr, "privileged"));
	ck_assert(!pluginmgr_allowed(mgr, "raw_exec"));
	pluginmgr_start(mgr);
	event_base_dispatch(base);
	ck_assert_uint_eq(t[0].starts, 1);
	ck_assert_uint_eq(t[1].starts, 0);
	ck_assert_uint_eq(t[2].starts, 0);
	ck_assert_int_eq(plugin_get_state(t[1].p), PLUGIN_BLOCKED);
	ck_assert_str_eq(plugin_desc(t[1].p), "in the block list");
	ck_assert_str_eq(plugin_desc(t[2].p), "not in the allow list");
	pluginmgr_states(mgr, line, sizeof(line));
	ck_assert_str_eq(line,
	    "test: exec=healthy privileged=blocked raw_exec=blocked");
	release(t, 3);
	log = harness_captured_stderr();
	ck_assert_ptr_nonnull(strstr(log,
	    "]: test: exec=undetected privileged=blocked raw_exec=blocked\n"));

	/* An empty allow list allows all; the block list still blocks. */
	manager(10, 40, none, block);
	ck_assert(pluginmgr_allowed(mgr, "raw_exec"));
	ck_assert(!pluginmgr_allowed(mgr, "privileged"));
	pluginmgr_free(mgr);
	event_base_free(base);
}
END_TEST

START_TEST(plugin_added_after_start)
{
	char *block[] = { "banned", NULL };
	struct tplug t[2] = {
		{ .script = { PLUGIN_HEALTHY }, .nscript = 1,
		  .done = stop_loop },
		{ .script = { PLUGIN_HEALTHY }, .nscript = 1 },
	};
	char line[256];

	manager(10, 40, NULL, block);
	pluginmgr_start(mgr);
	add(&t[0], "late", &tp_ops);
	add(&t[1], "banned", &tp_ops);
	event_base_dispatch(base);
	ck_assert_uint_eq(t[0].starts, 1);
	ck_assert_uint_eq(t[1].starts, 0);
	pluginmgr_states(mgr, line, sizeof(line));
	ck_assert_str_eq(line, "test: late=healthy banned=blocked");
	release(t, 2);
}
END_TEST

START_TEST(stats_stream_and_its_backoff)
{
	struct tplug t = { .fail_stats = 3, .script = { PLUGIN_HEALTHY },
		.nscript = 1 };
	const int64_t want[] = { 0, 10, 20, 40 };
	size_t i;

	manager(10, 40, NULL, NULL);
	add(&t, "gpu", &tp_stats_ops);
	pluginmgr_start(mgr);
	/* on_stats_tick breaks the loop at the first report. */
	event_base_dispatch(base);

	ck_assert_uint_eq(t.stats_starts, 4);
	for (i = 0; i < t.stats_starts; i++)
		ck_assert_int_eq(t.stats_backoffs[i], want[i]);
	ck_assert_ptr_nonnull(plugin_stats_data(t.p));
	ck_assert_uint_eq(*(unsigned *)plugin_stats_data(t.p), 4);
	/* The fingerprint stream was never restarted for it. */
	ck_assert_uint_eq(t.starts, 1);
	pluginmgr_shutdown(mgr);
	ck_assert(!t.stats_running);
	release(&t, 1);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("pluginmgr");

	tcase_add_test(tc, transitions_and_state_line);
	tcase_add_test(tc, failure_keeps_undetected_or_makes_unhealthy);
	tcase_add_test(tc, backoff_doubles_to_cap_and_resets);
	tcase_add_test(tc, shutdown_during_backoff_stops_at_once);
	tcase_add_test(tc, shutdown_of_running_plugins);
	tcase_add_test(tc, allow_and_block_lists);
	tcase_add_test(tc, plugin_added_after_start);
	tcase_add_test(tc, stats_stream_and_its_backoff);
	return harness_run("pluginmgr", tc);
}
