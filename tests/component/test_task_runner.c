/*
 * test_task_runner.c: one task runner alone, through its trun_deps: the
 * registry and the mounter are fakes on real channels (fake_peer.h), the
 * task driver is a fake operations table whose started and exited
 * callbacks the test calls, the driver manager is a real one (never
 * started). Every state: pending, preparing, starting, running,
 * restarting (as its restart policy says), stopping, dead, and ended for
 * good, complete or failed; adoption after a restart, an end kept from
 * before it; mounter replies that come late, fail, or never come.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "alloc.h"
#include "csi_client.h"
#include "drivermgr.h"
#include "events.h"
#include "fake_driver.h"
#include "fake_peer.h"
#include "harness.h"
#include "mounter_client.h"
#include "registry_client.h"
#include "task_runner.h"
#include "watch.h"

/* ---- the fixture (the task driver: fake_driver.c) ---- */

static struct event_base *base;
static struct fake_peer *reg_fp, *mnt_fp;
static struct chan *reg_chan, *mnt_chan;
static struct regclient *rc;
static struct mclient *mc;
static struct events *events;
static struct drivermgr *dm;
static struct trun_deps deps;
static char *dir;
static struct alloc *doc;
static int nstopped, nplugsups, nended;
static struct trun *last_ended;

static struct plugsup *
no_plugsup(void *ctx, const struct plugsup_conf *conf,
    const struct plugsup_ops *ops, void *arg)
{
	(void)ctx;
	(void)conf;
	(void)ops;
	(void)arg;
	nplugsups++;
	return NULL;
}

static void
stopped(struct trun *tr, void *arg)
{
	(void)arg;
	ck_assert(trun_dead(tr));
	nstopped++;
}

static void
ended(struct trun *tr, void *arg)
{
	(void)arg;
	ck_assert(trun_ended(tr));
	nended++;
	last_ended = tr;
}

static const struct chan_ops no_ops = { NULL, NULL, NULL, NULL };

/* The fixture's task again, with this "restart" block. */
static void
use_restart(const char *restart)
{
	struct alloc_problems probs = { 0 };
	char json[1024];

	snprintf(json, sizeof(json), "{\"id\": \"a1\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}, \"kill_timeout\": \"300ms\", \"restart\": %s}]}",
	    restart);
	alloc_free(doc);
	ck_assert_int_eq(alloc_parse(json, strlen(json), &doc, &probs), 0);
	alloc_problems_free(&probs);
}

static void
setup(void)
{
	struct drivermgr_conf dc = { 0 };
	struct alloc_problems probs = { 0 };
	static const char json[] = "{\"id\": \"a1\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}, \"kill_timeout\": \"300ms\"}]}";

	nprocs = 0;
	nstopped = nplugsups = nended = 0;
	last_ended = NULL;
	ck_assert_ptr_nonnull(base = event_base_new());
	reg_fp = fake_peer_new(base, "berth-registry", NULL, &reg_chan,
	    &no_ops, NULL);
	mnt_fp = fake_peer_new(base, "berth-mounter", NULL, &mnt_chan,
	    &no_ops, NULL);
	ck_assert_ptr_nonnull(rc = regclient_new(base, reg_chan, 5000));
	ck_assert_ptr_nonnull(mc = mclient_new(mnt_chan, 0));
	ck_assert_ptr_nonnull(events = events_new());
	dc.shim = "/nonexistent/berth-shim";
	dc.fingerprint_ms = 1000;
	dc.retry_initial_ms = 1000;
	dc.retry_max_ms = 1000;
	ck_assert_ptr_nonnull(dm = drivermgr_new(base, &dc));
	dir = harness_tmpdir("trun");
	ck_assert_int_eq(alloc_parse(json, strlen(json), &doc, &probs), 0);
	alloc_problems_free(&probs);
	deps = (struct trun_deps){
		.base = base, .registry = rc, .mounter = mc, .events = events,
		.drivers = dm, .driver = &fake_driver, .driver_ctx = NULL,
		.plugsup_new = no_plugsup, .plugsup_ctx = NULL,
		.data_dir = dir, .heartbeat_ms = 1000, .uid = getuid(),
		.gid = getgid(), .ended = ended,
	};
}

static void
teardown(void)
{
	/* Whatever is still in flight is answered now, not leaked. */
	fake_hangup(reg_fp, base, reg_chan);
	fake_hangup(mnt_fp, base, mnt_chan);
	alloc_free(doc);
	drivermgr_free(dm);
	events_free(events);
	mclient_free(mc);
	regclient_free(rc);
	chan_free(mnt_chan);
	chan_free(reg_chan);
	fake_peer_free(mnt_fp);
	fake_peer_free(reg_fp);
	event_base_free(base);
	harness_rmtree(dir);
	free(dir);
}

static struct trun *
new_runner(const Berth__TaskHandle *adopt)
{
	struct trun *tr = trun_new(&deps, doc, &doc->tasks[0], adopt, stopped,
	    NULL);

	ck_assert_ptr_nonnull(tr);
	/* Its alloc's task id, as the alloc runner sets it. */
	trun_set_id(tr, 70000);
	return tr;
}

/* Wait on the loop for one more request of this body to be held. */
struct want_req {
	struct fake_peer *fp;
	Berth__Envelope__BodyCase body;
	unsigned n;
};

static bool
req_count_reached(void *arg)
{
	struct want_req *w = arg;

	return fake_count(w->fp, w->body) >= w->n;
}

static void
wait_requests(struct fake_peer *fp, Berth__Envelope__BodyCase body,
    unsigned n)
{
	struct want_req w = { fp, body, n };

	ck_assert_msg(fake_run_until(base, req_count_reached, &w, 3000),
	    "%u requests of body %d never came (%u did)", n, (int)body,
	    fake_count(fp, body));
}

struct want_state {
	struct trun *tr;
	const char *state;
};

static bool
state_reached(void *arg)
{
	struct want_state *w = arg;

	return strcmp(trun_state(w->tr), w->state) == 0;
}

static void
wait_state(struct trun *tr, const char *state, int ms)
{
	struct want_state w = { tr, state };

	ck_assert_msg(fake_run_until(base, state_reached, &w, ms),
	    "task never %s (it is %s)", state, trun_state(tr));
}

static struct fake_req *
held(struct fake_peer *fp, Berth__Envelope__BodyCase body)
{
	struct fake_req *r = fake_held(fp, body);

	ck_assert_msg(r != NULL, "no request of body %d held", (int)body);
	return r;
}

static bool
has_event(struct trun *tr, const char *type)
{
	for (size_t i = 0; i < trun_nevents(tr); i++)
		if (strcmp(trun_event(tr, i)->type, type) == 0)
			return true;
	return false;
}

/* Run the loop for ms, whatever happens. */
static void
run_for(int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static bool
got_signal(void *arg)
{
	return ((struct taskproc *)arg)->nsigs >= 1;
}

static bool
got_two_signals(void *arg)
{
	return ((struct taskproc *)arg)->nsigs >= 2;
}

/* From pending to running: the directory, then the driver's start. */
static struct taskproc *
bring_up(struct trun *tr, unsigned nth)
{
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, nth);
	ck_assert_str_eq(trun_state(tr), "preparing");
	fake_reply_ack(mnt_fp, held(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK));
	wait_state(tr, "starting", 3000);
	proc_started(last_proc(), 0, NULL);
	ck_assert_str_eq(trun_state(tr), "running");
	return last_proc();
}

START_TEST(test_start_run_exit_restart_after_delay)
{
	struct trun *tr;
	struct taskproc *tp;

	use_restart("{\"attempts\": 3, \"interval\": \"1m\", \"delay\": "
	    "\"1s\"}");
	tr = new_runner(NULL);
	ck_assert_str_eq(trun_state(tr), "pending");
	trun_run(tr);
	tp = bring_up(tr, 1);
	ck_assert_str_eq(tp->alloc, "a1");
	ck_assert_str_eq(tp->task, "t");
	ck_assert_ptr_nonnull(strstr(tp->dir, dir));
	ck_assert_int_eq(trun_pid(tr), tp->pid);
	ck_assert(has_event(tr, "Started"));
	/* Its handle goes to the registry, with the driver's pid. */
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_PUT_HANDLE, 1);
	ck_assert_uint_eq(held(reg_fp, BERTH__ENVELOPE__BODY_PUT_HANDLE)->env->
	    put_handle->handle->reattach->state.len > 0, 1);

	proc_exits(tp, 3);
	ck_assert(tp->freed);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_uint_eq(trun_restarts(tr), 1);
	ck_assert(has_event(tr, "Terminated"));
	ck_assert(has_event(tr, "Restarting"));
	/* The policy's delay, 1 s, then it prepares and starts again. */
	run_for(700);
	ck_assert_str_eq(trun_state(tr), "restarting");
	tp = bring_up(tr, 2);
	/* An exit 0 is restarted too (a service), after the same delay. */
	proc_exits(tp, 0);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_uint_eq(trun_restarts(tr), 2);
	run_for(700);
	ck_assert_str_eq(trun_state(tr), "restarting");
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, 3);
	ck_assert_int_eq(nstopped, 0);
	ck_assert_int_eq(nended, 0);
	trun_free(tr);
}
END_TEST

/* The newest event of a type, or NULL. */
static const char *
event_message(struct trun *tr, const char *type)
{
	const char *m = NULL;

	for (size_t i = 0; i < trun_nevents(tr); i++)
		if (strcmp(trun_event(tr, i)->type, type) == 0)
			m = trun_event(tr, i)->message;
	return m;
}

/* The handle the registry was asked last to keep (held, unanswered). */
static Berth__TaskHandle *
kept_handle(void)
{
	struct fake_req *r, *last = NULL;
	const Berth__ReattachHandle *rh;

	for (size_t i = 0; (r = fake_nth(reg_fp, i)) != NULL; i++)
		if (r->env->body_case == BERTH__ENVELOPE__BODY_PUT_HANDLE)
			last = r;
	ck_assert_ptr_nonnull(last);
	rh = last->env->put_handle->handle->reattach;
	return berth__task_handle__unpack(NULL, rh->state.len,
	    rh->state.data);
}

static void
answer_puts(void)
{
	struct fake_req *r;

	while ((r = fake_held(reg_fp, BERTH__ENVELOPE__BODY_PUT_HANDLE)) !=
	    NULL)
		fake_reply_ack(reg_fp, r);
}

/* Mode "fail": attempts restarts, then failed for good, with why. */
START_TEST(test_policy_fail_gives_up_after_attempts)
{
	Berth__TaskHandle *th;
	struct trun *tr;
	bool sig;
	int code;

	use_restart("{\"attempts\": 2, \"interval\": \"1m\", \"delay\": "
	    "\"100ms\", \"mode\": \"fail\"}");
	tr = new_runner(NULL);
	trun_set_version(tr, "v7");
	trun_run(tr);
	proc_exits(bring_up(tr, 1), 1);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_ptr_nonnull(strstr(event_message(tr, "Restarting"),
	    "starting again in 100ms: restart 1 of 2 within 1m"));
	proc_exits(bring_up(tr, 2), 1);
	ck_assert_str_eq(trun_state(tr), "restarting");
	answer_puts();
	proc_exits(bring_up(tr, 3), 3);
	ck_assert_str_eq(trun_state(tr), "failed");
	ck_assert(trun_ended(tr) && trun_failed(tr));
	ck_assert_int_eq(nended, 1);
	ck_assert_ptr_eq(last_ended, tr);
	ck_assert_uint_eq(trun_restarts(tr), 2);
	ck_assert(trun_last_exit(tr, &sig, &code));
	ck_assert(!sig);
	ck_assert_int_eq(code, 3);
	ck_assert_str_eq(trun_end_reason(tr), "exited with status 3; 2 "
	    "restarts within 1m used up and the restart mode is \"fail\"");
	ck_assert_str_eq(event_message(tr, "NotRestarting"),
	    trun_end_reason(tr));
	/* Never started again, and its end is kept in the registry. */
	run_for(400);
	ck_assert_uint_eq(fake_count(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK), 3);
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_PUT_HANDLE, 4);
	th = kept_handle();
	ck_assert_ptr_nonnull(th->end);
	ck_assert(th->end->failed && th->end->exited && !th->end->signaled);
	ck_assert_int_eq(th->end->code, 3);
	ck_assert_str_eq(th->end->version, "v7");
	ck_assert_str_eq(th->end->reason, trun_end_reason(tr));
	berth__task_handle__free_unpacked(th, NULL);
	/* trun_run does not start an ended task; a stop forgets it. */
	trun_run(tr);
	ck_assert_str_eq(trun_state(tr), "failed");
	ck_assert_int_eq(fake_count(reg_fp,
	    BERTH__ENVELOPE__BODY_DELETE_HANDLE), 0);
	trun_stop(tr);
	ck_assert_str_eq(trun_state(tr), "dead");
	ck_assert_int_eq(nstopped, 1);
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_DELETE_HANDLE, 1);
	trun_free(tr);
}
END_TEST

/* Killed by a signal: the last exit says which. */
START_TEST(test_policy_no_attempts_signal_fails_at_once)
{
	struct trun *tr;
	struct taskproc *tp;
	bool sig;
	int code;

	use_restart("{\"attempts\": 0}");
	tr = new_runner(NULL);
	trun_run(tr);
	tp = bring_up(tr, 1);
	tp->exited(tp, &(struct task_exit){ true, true, 9, NULL, false }, tp->arg);
	ck_assert_str_eq(trun_state(tr), "failed");
	ck_assert(trun_last_exit(tr, &sig, &code));
	ck_assert(sig);
	ck_assert_int_eq(code, 9);
	ck_assert_str_eq(trun_end_reason(tr), "was killed by signal 9 "
	    "(SIGKILL); the restart policy allows no restarts");
	ck_assert_uint_eq(trun_restarts(tr), 0);
	trun_free(tr);
}
END_TEST

/* An exit 0 that the policy restarts no more: complete. */
START_TEST(test_exit_zero_without_restart_left_completes)
{
	struct trun *tr;

	use_restart("{\"attempts\": 1, \"interval\": \"1m\", \"delay\": "
	    "\"0s\"}");
	tr = new_runner(NULL);
	trun_run(tr);
	proc_exits(bring_up(tr, 1), 0);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_int_eq(nended, 0);
	proc_exits(bring_up(tr, 2), 0);
	ck_assert_str_eq(trun_state(tr), "complete");
	ck_assert(trun_ended(tr) && !trun_failed(tr));
	ck_assert_int_eq(nended, 1);
	ck_assert_str_eq(trun_end_reason(tr), "exited with status 0; 1 restart "
	    "within 1m used up and the restart mode is \"fail\"");
	/* Only a failure is a warning-level event; this one is routine. */
	ck_assert(has_event(tr, "NotRestarting"));
	trun_free(tr);
}
END_TEST

/*
 * Mode "delay": past the attempts it waits for the interval to end, then
 * the count starts again.
 */
START_TEST(test_policy_delay_waits_for_the_next_interval)
{
	struct trun *tr;
	struct timespec t0, t1;

	use_restart("{\"attempts\": 1, \"interval\": \"5s\", \"delay\": "
	    "\"0s\", \"mode\": \"delay\"}");
	tr = new_runner(NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	trun_run(tr);
	proc_exits(bring_up(tr, 1), 1);
	ck_assert_ptr_nonnull(strstr(event_message(tr, "Restarting"),
	    "restart 1 of 1 within 5s"));
	proc_exits(bring_up(tr, 2), 1);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_ptr_nonnull(strstr(event_message(tr, "Restarting"),
	    "1 restart within 5s used up; the restart mode is \"delay\": "
	    "the next in "));
	/* Not before the interval is over. */
	run_for(3000);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_uint_eq(fake_count(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK), 2);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, 3);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_ge((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec -
	    t0.tv_nsec) / 1000000, 4500);
	fake_reply_ack(mnt_fp, held(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK));
	wait_state(tr, "starting", 3000);
	proc_started(last_proc(), 0, NULL);
	/* A new interval: its first restart again, never an end. */
	proc_exits(last_proc(), 1);
	ck_assert_ptr_nonnull(strstr(event_message(tr, "Restarting"),
	    "restart 1 of 1 within 5s"));
	ck_assert_int_eq(nended, 0);
	trun_free(tr);
}
END_TEST

/* A task that ran longer than the interval has its attempts back. */
START_TEST(test_interval_window_resets_attempts)
{
	struct trun *tr;
	struct taskproc *tp;

	use_restart("{\"attempts\": 1, \"interval\": \"5s\", \"delay\": "
	    "\"0s\", \"mode\": \"fail\"}");
	tr = new_runner(NULL);
	trun_run(tr);
	proc_exits(bring_up(tr, 1), 1);
	tp = bring_up(tr, 2);
	run_for(5200);
	/* The first interval is over: restart 1 of 1 of the next one. */
	proc_exits(tp, 1);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_ptr_nonnull(strstr(event_message(tr, "Restarting"),
	    "restart 1 of 1 within 5s"));
	/* At once again: that interval's attempt is used up. */
	proc_exits(bring_up(tr, 3), 1);
	ck_assert_str_eq(trun_state(tr), "failed");
	ck_assert_uint_eq(trun_restarts(tr), 2);
	trun_free(tr);
}
END_TEST

/* A start that fails (no such command) counts under the same policy. */
START_TEST(test_failed_starts_fail_under_the_policy)
{
	struct trun *tr;
	bool sig;
	int code;

	use_restart("{\"attempts\": 1, \"interval\": \"1m\", \"delay\": "
	    "\"0s\"}");
	tr = new_runner(NULL);
	trun_run(tr);
	for (unsigned n = 1; n <= 2; n++) {
		wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, n);
		fake_reply_ack(mnt_fp, held(mnt_fp,
		    BERTH__ENVELOPE__BODY_PREPARE_TASK));
		wait_state(tr, "starting", 3000);
		proc_started(last_proc(), ENOENT, "cannot run /nonexistent: "
		    "No such file or directory");
	}
	ck_assert_str_eq(trun_state(tr), "failed");
	ck_assert(!trun_last_exit(tr, &sig, &code));
	ck_assert_str_eq(trun_end_reason(tr), "could not start: cannot run "
	    "/nonexistent: No such file or directory; 1 restart within 1m "
	    "used up and the restart mode is \"fail\"");
	ck_assert_uint_eq(trun_restarts(tr), 1);
	trun_free(tr);
}
END_TEST

/* Ended before a supervisor restart: so it stays, and never starts. */
START_TEST(test_kept_end_is_restored_not_started)
{
	Berth__TaskHandle h = BERTH__TASK_HANDLE__INIT;
	Berth__TaskEnd e = BERTH__TASK_END__INIT;
	struct trun *tr;
	bool sig;
	int code;

	h.pid = 4245;
	h.restarts = 2;
	e.failed = false;
	e.exited = true;
	e.code = 0;
	e.reason = "exited with status 0; the restart policy allows no "
	    "restarts";
	e.version = "v1";
	h.end = &e;
	tr = new_runner(&h);
	ck_assert_str_eq(trun_state(tr), "complete");
	ck_assert_str_eq(trun_end_reason(tr), e.reason);
	ck_assert(trun_last_exit(tr, &sig, &code) && !sig && code == 0);
	trun_adopt(tr);
	trun_run(tr);
	run_for(100);
	ck_assert_int_eq(nprocs, 0);
	ck_assert_uint_eq(fake_count(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK), 0);
	/* trun_forget drops its record, with no stopped callback. */
	trun_forget(tr);
	ck_assert_str_eq(trun_state(tr), "dead");
	ck_assert_int_eq(nstopped, 0);
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_DELETE_HANDLE, 1);
	trun_free(tr);
}
END_TEST

START_TEST(test_stop_term_then_kill)
{
	struct trun *tr = new_runner(NULL);
	struct taskproc *tp;

	trun_run(tr);
	tp = bring_up(tr, 1);
	trun_stop(tr);
	ck_assert_str_eq(trun_state(tr), "stopping");
	ck_assert_int_eq(tp->nsigs, 1);
	ck_assert_int_eq(tp->sigs[0], SIGTERM);
	/* It ignores TERM: KILL after kill_timeout (300 ms). */
	run_for(150);
	ck_assert_int_eq(tp->nsigs, 1);
	run_for(400);
	ck_assert_int_eq(tp->nsigs, 2);
	ck_assert_int_eq(tp->sigs[1], SIGKILL);
	ck_assert_int_eq(nstopped, 0);
	proc_exits(tp, 137);
	ck_assert_str_eq(trun_state(tr), "dead");
	ck_assert_int_eq(nstopped, 1);
	ck_assert(has_event(tr, "Killed"));
	/* Its handle is forgotten; the put, never answered, holds nothing. */
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_DELETE_HANDLE, 1);
	ck_assert_uint_eq(fake_count(reg_fp, BERTH__ENVELOPE__BODY_PUT_HANDLE),
	    1);
	/* A second stop does nothing. */
	trun_stop(tr);
	ck_assert_int_eq(nstopped, 1);
	trun_free(tr);
}
END_TEST

START_TEST(test_stop_while_preparing_reply_late)
{
	struct trun *tr = new_runner(NULL);

	trun_run(tr);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, 1);
	trun_stop(tr);
	ck_assert_str_eq(trun_state(tr), "preparing");
	run_for(200);
	ck_assert_int_eq(nstopped, 0);
	fake_reply_ack(mnt_fp, held(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK));
	wait_state(tr, "dead", 3000);
	ck_assert_int_eq(nstopped, 1);
	ck_assert_int_eq(nprocs, 0);
	trun_free(tr);
}
END_TEST

START_TEST(test_stop_while_starting)
{
	struct trun *tr = new_runner(NULL);
	struct taskproc *tp;

	trun_run(tr);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, 1);
	fake_reply_ack(mnt_fp, held(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK));
	wait_state(tr, "starting", 3000);
	tp = last_proc();
	trun_stop(tr);
	ck_assert_str_eq(trun_state(tr), "starting");
	/* It came up meanwhile: it is stopped at once. */
	proc_started(tp, 0, NULL);
	ck_assert_str_eq(trun_state(tr), "stopping");
	ck_assert_int_eq(tp->sigs[0], SIGTERM);
	proc_exits(tp, 0);
	ck_assert_str_eq(trun_state(tr), "dead");
	ck_assert_int_eq(nstopped, 1);
	trun_free(tr);
}
END_TEST

START_TEST(test_mounter_error_late_and_closed)
{
	struct trun *tr = new_runner(NULL);

	trun_run(tr);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, 1);
	fake_reply_error(mnt_fp, held(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK),
	    BERTH__ERROR_CODE__ERROR_INTERNAL, "no space");
	wait_state(tr, "restarting", 3000);
	ck_assert(has_event(tr, "SetupFailure"));
	ck_assert_int_eq(nprocs, 0);
	/* The next try's request never gets an answer: the mounter dies. */
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, 2);
	ck_assert_str_eq(trun_state(tr), "preparing");
	fake_close(mnt_fp);
	wait_state(tr, "restarting", 3000);
	ck_assert_int_eq(nprocs, 0);
	/* With no mounter, the next try fails at once and waits again. */
	run_for(2200);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_str_eq(trun_event(tr, trun_nevents(tr) - 2)->type,
	    "SetupFailure");
	ck_assert_ptr_nonnull(strstr(trun_event(tr, trun_nevents(tr) - 2)->
	    message, MCLIENT_UNREACHABLE));
	ck_assert_int_eq(nprocs, 0);
	trun_stop(tr);
	ck_assert_str_eq(trun_state(tr), "dead");
	ck_assert_int_eq(nstopped, 1);
	trun_free(tr);
}
END_TEST

START_TEST(test_driver_failure_restarts)
{
	struct trun *tr = new_runner(NULL);

	trun_run(tr);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, 1);
	fake_reply_ack(mnt_fp, held(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK));
	wait_state(tr, "starting", 3000);
	proc_started(last_proc(), EIO, "exec failed");
	ck_assert(last_proc()->freed);
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert(has_event(tr, "DriverFailure"));
	ck_assert_uint_eq(fake_count(reg_fp, BERTH__ENVELOPE__BODY_PUT_HANDLE),
	    0);
	trun_free(tr);
}
END_TEST

START_TEST(test_adopt_running_task)
{
	Berth__TaskHandle h = BERTH__TASK_HANDLE__INIT;
	struct trun *tr;

	h.pid = 4242;
	h.start_time = 7;
	h.restarts = 5;
	tr = new_runner(&h);
	trun_adopt(tr);
	ck_assert_str_eq(trun_state(tr), "starting");
	ck_assert(last_proc()->adopted);
	ck_assert_int_eq(last_proc()->pid, 4242);
	proc_started(last_proc(), 0, NULL);
	ck_assert_str_eq(trun_state(tr), "running");
	ck_assert_uint_eq(trun_restarts(tr), 5);
	/* Adopted: no directory asked for, no new Started, no new handle. */
	run_for(100);
	ck_assert_uint_eq(fake_count(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK), 0);
	ck_assert_uint_eq(fake_count(reg_fp, BERTH__ENVELOPE__BODY_PUT_HANDLE),
	    0);
	ck_assert(!has_event(tr, "Started"));
	/* trun_run on a running task starts nothing. */
	trun_run(tr);
	ck_assert_int_eq(nprocs, 1);
	trun_free(tr);
}
END_TEST

START_TEST(test_adopt_ended_waits_for_run)
{
	Berth__TaskHandle h = BERTH__TASK_HANDLE__INIT;
	struct trun *tr;

	h.pid = 4243;
	tr = new_runner(&h);
	trun_adopt(tr);
	proc_started(last_proc(), ESRCH, "exited with status 0");
	/* Ended while no supervisor ran: pending until its alloc says. */
	ck_assert_str_eq(trun_state(tr), "pending");
	ck_assert(has_event(tr, "Terminated"));
	run_for(100);
	ck_assert_uint_eq(fake_count(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK), 0);
	trun_run(tr);
	bring_up(tr, 1);
	ck_assert(!last_proc()->adopted);
	trun_free(tr);
}
END_TEST

START_TEST(test_adopt_ended_then_run_starts_at_once)
{
	Berth__TaskHandle h = BERTH__TASK_HANDLE__INIT;
	struct trun *tr;

	h.pid = 4244;
	tr = new_runner(&h);
	/* trun_run on a runner with a handle adopts; an end starts anew. */
	trun_run(tr);
	ck_assert(last_proc()->adopted);
	proc_started(last_proc(), ESRCH, "exited with status 1");
	bring_up(tr, 1);
	trun_free(tr);
}
END_TEST

START_TEST(test_stop_pending_and_restarting)
{
	struct trun *a = new_runner(NULL), *b = new_runner(NULL);

	trun_stop(a);
	ck_assert_str_eq(trun_state(a), "dead");
	ck_assert_int_eq(nstopped, 1);
	trun_run(b);
	proc_exits(bring_up(b, 1), 1);
	ck_assert_str_eq(trun_state(b), "restarting");
	trun_stop(b);
	ck_assert_str_eq(trun_state(b), "dead");
	ck_assert_int_eq(nstopped, 2);
	/* Its restart timer does not fire after it is dead. */
	run_for(1300);
	ck_assert_str_eq(trun_state(b), "dead");
	trun_free(a);
	trun_free(b);
}
END_TEST

START_TEST(test_plugin_task_without_supervisor_is_refused)
{
	static const char json[] = "{\"id\": \"p1\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"node\"}}]}";
	struct alloc_problems probs = { 0 };
	struct alloc *p;

	ck_assert_int_eq(alloc_parse(json, strlen(json), &p, &probs), 0);
	alloc_problems_free(&probs);
	ck_assert_ptr_null(trun_new(&deps, p, &p->tasks[0], NULL, stopped,
	    NULL));
	ck_assert_int_eq(nplugsups, 1);
	alloc_free(p);
}
END_TEST

static struct plugsup *
real_plugsup(void *ctx, const struct plugsup_conf *conf,
    const struct plugsup_ops *ops, void *arg)
{
	const struct plugsup_deps *pd = ctx;

	nplugsups++;
	return plugsup_new(pd, conf, ops, arg);
}

START_TEST(test_plugin_never_healthy_is_restarted)
{
	static const char json[] = "{\"id\": \"p2\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}, \"kill_timeout\": \"300ms\", \"csi_plugin\": "
	    "{\"id\": \"hp\", \"type\": \"node\", \"health_timeout\": "
	    "\"300ms\"}}]}";
	struct alloc_problems probs = { 0 };
	struct csi_client *csi;
	struct fake_req *r;
	struct watcher *w;
	struct taskproc *tp;
	struct trun *tr;
	struct alloc *p;

	ck_assert_ptr_nonnull(csi = csi_client_new(base));
	ck_assert_ptr_nonnull(w = watcher_new(base));
	deps.plugsup_new = real_plugsup;
	deps.plugsup_ctx = &(struct plugsup_deps){ base, rc, csi, w, NULL };
	ck_assert_int_eq(alloc_parse(json, strlen(json), &p, &probs), 0);
	alloc_problems_free(&probs);
	tr = trun_new(&deps, p, &p->tasks[0], NULL, stopped, NULL);
	ck_assert_ptr_nonnull(tr);
	/* Sandboxed like any exec task: it waits for its alloc's id. */
	trun_set_id(tr, 70000);
	ck_assert_int_eq(trun_plugin_healthy(tr), 0);
	trun_run(tr);
	/* Its task directory and its plugin's socket directory, the task
	 * id's (for our group). */
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_TASK, 1);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_PLUGIN, 1);
	r = held(mnt_fp, BERTH__ENVELOPE__BODY_PREPARE_PLUGIN);
	ck_assert_uint_eq(r->env->prepare_plugin->owner_uid, 70000);
	fake_reply_ack(mnt_fp, r);
	run_for(100);
	ck_assert_str_eq(trun_state(tr), "preparing");
	fake_reply_ack(mnt_fp, held(mnt_fp,
	    BERTH__ENVELOPE__BODY_PREPARE_TASK));
	wait_state(tr, "starting", 3000);
	tp = last_proc();
	proc_started(tp, 0, NULL);
	ck_assert_str_eq(trun_state(tr), "running");
	/* No socket ever answers: after health_timeout, a restart: TERM,
	 * then KILL after kill_timeout. */
	ck_assert(fake_run_until(base, got_signal, tp, 3000));
	ck_assert_int_eq(tp->sigs[0], SIGTERM);
	ck_assert(has_event(tr, "Restarting"));
	ck_assert(fake_run_until(base, got_two_signals, tp, 3000));
	ck_assert_int_eq(tp->sigs[1], SIGKILL);
	proc_exits(tp, 137);
	/* Asked by berth: not a failure, and it starts again. */
	ck_assert_str_eq(trun_state(tr), "restarting");
	ck_assert_uint_eq(trun_restarts(tr), 1);
	ck_assert_int_eq(nplugsups, 1);
	trun_stop(tr);
	ck_assert_str_eq(trun_state(tr), "dead");
	trun_free(tr);
	alloc_free(p);
	watcher_free(w);
	csi_client_free(csi);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("task_runner");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_start_run_exit_restart_after_delay);
	tcase_add_test(tc, test_policy_fail_gives_up_after_attempts);
	tcase_add_test(tc, test_policy_no_attempts_signal_fails_at_once);
	tcase_add_test(tc, test_exit_zero_without_restart_left_completes);
	tcase_add_test(tc, test_policy_delay_waits_for_the_next_interval);
	tcase_add_test(tc, test_interval_window_resets_attempts);
	tcase_add_test(tc, test_failed_starts_fail_under_the_policy);
	tcase_add_test(tc, test_kept_end_is_restored_not_started);
	tcase_add_test(tc, test_stop_term_then_kill);
	tcase_add_test(tc, test_stop_while_preparing_reply_late);
	tcase_add_test(tc, test_stop_while_starting);
	tcase_add_test(tc, test_mounter_error_late_and_closed);
	tcase_add_test(tc, test_driver_failure_restarts);
	tcase_add_test(tc, test_adopt_running_task);
	tcase_add_test(tc, test_adopt_ended_waits_for_run);
	tcase_add_test(tc, test_adopt_ended_then_run_starts_at_once);
	tcase_add_test(tc, test_stop_pending_and_restarting);
	tcase_add_test(tc, test_plugin_task_without_supervisor_is_refused);
	tcase_add_test(tc, test_plugin_never_healthy_is_restarted);
	return harness_run("task_runner", tc);
}
