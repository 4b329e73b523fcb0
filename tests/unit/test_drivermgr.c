/*
 * test_drivermgr.c: the driver manager on a test event_base: the exec
 * driver's fingerprint as its shim appears, breaks and goes (a real
 * berth-shim, a shim that fails, none), the privileged driver's as a
 * test peer answers pings and then hangs up, the allow and block lists,
 * and the events task handlers hear.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <check.h>

#include "channel.h"
#include "drivermgr.h"
#include "harness.h"
#include "mounter_client.h"

#define NEVENTS 16

static struct event_base *base;
static struct drivermgr *dm;
static char *dir, shim[512];
static struct {
	char who[32], type[32], message[480];
} events[NEVENTS];
static size_t nevents;

static void
heard(void *arg, const char *type, const char *message)
{
	if (nevents == NEVENTS)
		return;
	snprintf(events[nevents].who, sizeof(events[0].who), "%s",
	    (const char *)arg);
	snprintf(events[nevents].type, sizeof(events[0].type), "%s", type);
	snprintf(events[nevents].message, sizeof(events[0].message), "%s",
	    message);
	nevents++;
}

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	ck_assert_ptr_nonnull(base = event_base_new());
	dir = harness_tmpdir("drivermgr");
	snprintf(shim, sizeof(shim), "%s/berth-shim", dir);
	nevents = 0;
}

static void
teardown(void)
{
	drivermgr_free(dm);
	dm = NULL;
	event_base_free(base);
	harness_rmtree(dir);
	free(dir);
}

static void
new_manager(struct mclient *mounter, char *const *allow, char *const *block)
{
	struct drivermgr_conf dc = { 0 };

	dc.shim = shim;
	dc.mounter = mounter;
	dc.fingerprint_ms = 20;
	dc.retry_initial_ms = 20;
	dc.retry_max_ms = 100;
	dc.allow = allow;
	dc.block = block;
	ck_assert_ptr_nonnull(dm = drivermgr_new(base, &dc));
}

/* Run the loop until the driver's latest fingerprint says this. */
static void
wait_for(const char *driver, enum plugin_state state, const char *desc)
{
	while (drivermgr_state(dm, driver) != state ||
	    strstr(drivermgr_desc(dm, driver), desc) == NULL)
		ck_assert_int_eq(event_base_loop(base, EVLOOP_ONCE), 0);
}

START_TEST(exec_follows_its_shim)
{
	struct drv_handler *h, *other;
	char want[600];

	new_manager(NULL, NULL, NULL);
	h = drivermgr_handler(dm, "exec", "a1", "t", heard, "a1/t");
	other = drivermgr_handler(dm, "privileged", "a2", "t", heard, "a2/t");
	drivermgr_start(dm);
	snprintf(want, sizeof(want), "berth-shim is not at %s: No such file",
	    shim);
	wait_for("exec", PLUGIN_UNDETECTED, want);
	/* A shim that is there but does not run: unhealthy. */
	harness_write(shim, "#!/bin/sh\nexit 3\n");
	ck_assert_int_eq(chmod(shim, 0755), 0);
	wait_for("exec", PLUGIN_UNHEALTHY, "does not run: it exited with "
	    "status 3");
	ck_assert_int_eq(unlink(shim), 0);
	ck_assert_int_eq(symlink(harness_bin("berth-shim"), shim), 0);
	wait_for("exec", PLUGIN_HEALTHY, "starts");
	ck_assert_uint_eq(nevents, 0);	/* first healthy: nothing to tell */
	ck_assert_int_eq(unlink(shim), 0);
	wait_for("exec", PLUGIN_UNDETECTED, "berth-shim is not at");
	ck_assert_uint_eq(nevents, 1);
	ck_assert_str_eq(events[0].who, "a1/t");
	ck_assert_str_eq(events[0].type, "DriverUnhealthy");
	snprintf(want, sizeof(want), "driver exec is undetected: berth-shim "
	    "is not at %s", shim);
	ck_assert_msg(strncmp(events[0].message, want, strlen(want)) == 0,
	    "%s", events[0].message);
	ck_assert_int_eq(symlink(harness_bin("berth-shim"), shim), 0);
	wait_for("exec", PLUGIN_HEALTHY, "starts");
	ck_assert_uint_eq(nevents, 2);
	ck_assert_str_eq(events[1].type, "DriverHealthy");
	drv_handler_free(h);
	drv_handler_free(other);
}
END_TEST

/* The test's side of the mounter link: answers pings while it is open. */
static void
peer_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	Berth__Envelope reply = BERTH__ENVELOPE__INIT;
	Berth__Pong pong = BERTH__PONG__INIT;

	(void)arg;
	if (fd >= 0)
		close(fd);
	ck_assert_int_eq(env->body_case, BERTH__ENVELOPE__BODY_PING);
	pong.nonce = env->ping->nonce;
	reply.body_case = BERTH__ENVELOPE__BODY_PONG;
	reply.pong = &pong;
	ck_assert_int_eq(chan_reply(c, env, &reply, -1), 0);
}

static void
peer_close(struct chan *c, const char *why, void *arg)
{
	(void)c;
	(void)why;
	(void)arg;
}

START_TEST(privileged_follows_the_mounter)
{
	struct chan_ops ops = { .on_message = peer_message,
	    .on_close = peer_close };
	struct chan *ours, *theirs;
	struct mclient *mc;
	char line[128];
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_ptr_nonnull(ours = chan_new(base, sv[0], "berth-mounter",
	    &ops, NULL));
	ck_assert_ptr_nonnull(theirs = chan_new(base, sv[1], "supervisor",
	    &ops, NULL));
	ck_assert_ptr_nonnull(mc = mclient_new(ours, 0));
	new_manager(mc, NULL, NULL);
	drivermgr_start(dm);
	wait_for("privileged", PLUGIN_HEALTHY, "berth-mounter answers");
	wait_for("exec", PLUGIN_UNDETECTED, "berth-shim is not at");
	drivermgr_states(dm, line, sizeof(line));
	ck_assert_str_eq(line, "drivers: exec=undetected privileged=healthy");
	/* The mounter hangs up: its driver is unhealthy, not undetected. */
	chan_free(theirs);
	wait_for("privileged", PLUGIN_UNHEALTHY, "berth-mounter");
	drivermgr_free(dm);
	dm = NULL;
	mclient_free(mc);
	chan_free(ours);
}
END_TEST

START_TEST(blocked_and_allowed)
{
	char *const block[] = { "exec", NULL };
	char *const allow[] = { "privileged", NULL };
	char line[128];

	new_manager(NULL, NULL, block);
	ck_assert(!drivermgr_allowed(dm, "exec"));
	ck_assert(drivermgr_allowed(dm, "privileged"));
	drivermgr_start(dm);
	wait_for("privileged", PLUGIN_UNDETECTED, "no berth-mounter");
	ck_assert_int_eq(drivermgr_state(dm, "exec"), PLUGIN_BLOCKED);
	drivermgr_states(dm, line, sizeof(line));
	ck_assert_str_eq(line, "drivers: exec=blocked privileged=undetected");
	drivermgr_free(dm);
	new_manager(NULL, allow, NULL);
	ck_assert(!drivermgr_allowed(dm, "exec"));
	ck_assert(drivermgr_allowed(dm, "privileged"));
	ck_assert(!drivermgr_allowed(dm, "docker"));
}
END_TEST

/* A driver's event about a task reaches that task's handler alone. */
START_TEST(task_events_reach_their_handler)
{
	struct drv_handler *a, *b, *c;

	new_manager(NULL, NULL, NULL);
	a = drivermgr_handler(dm, "exec", "a1", "t", heard, "exec a1/t");
	b = drivermgr_handler(dm, "exec", "a1", "u", heard, "exec a1/u");
	c = drivermgr_handler(dm, "privileged", "a1", "t", heard,
	    "privileged a1/t");
	drivermgr_task_event(dm, "exec", "a1", "u", "ShimLost", "gone");
	drivermgr_task_event(dm, "privileged", "a1", "t", "X", "y");
	drivermgr_task_event(dm, "exec", "a9", "t", "X", "nobody");
	ck_assert_uint_eq(nevents, 2);
	ck_assert_str_eq(events[0].who, "exec a1/u");
	ck_assert_str_eq(events[0].type, "ShimLost");
	ck_assert_str_eq(events[0].message, "gone");
	ck_assert_str_eq(events[1].who, "privileged a1/t");
	drv_handler_free(b);
	drivermgr_task_event(dm, "exec", "a1", "u", "ShimLost", "again");
	ck_assert_uint_eq(nevents, 2);
	drv_handler_free(a);
	drv_handler_free(c);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("drivermgr");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, exec_follows_its_shim);
	tcase_add_test(tc, privileged_follows_the_mounter);
	tcase_add_test(tc, blocked_and_allowed);
	tcase_add_test(tc, task_events_reach_their_handler);
	return harness_run("drivermgr", tc);
}
