/*
 * test_plugin_supervisor.c: one plugin supervisor, alone, through its
 * deps: the real sample plugin (berth-csi-hostpath) on a unix socket in
 * a temporary directory, and an in-process berth-registry (fake_peer)
 * that answers registrations at once, late, out of order, with an error,
 * never, or closes. Every state is passed through: waiting for the
 * socket, GetPluginInfo, registering, running with heartbeats (healthy,
 * unhealthy after failed probes, healthy again), the health timeout, a
 * dead run's leftover socket (not where the timing starts), and stopping
 * with its deregistrations.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <check.h>

#include "csi_client.h"
#include "fake_peer.h"
#include "harness.h"
#include "plugin_supervisor.h"
#include "registry_client.h"
#include "watch.h"

enum answer {
	ANSWER_NOW,		/* registrations are acknowledged at once */
	ANSWER_HOLD,		/* held until the test answers */
	ANSWER_ERROR,		/* refused */
};

static struct {
	struct event_base *base;
	struct csi_client *csi;
	struct watcher *watcher;
	struct fake_peer *fp;
	struct chan *chan;
	struct regclient *rc;
	struct plugsup *ps;
	char *dir, sock[256], state[256];
	struct proc plugin;
	bool plugin_up;
	enum answer answer;
	int errors_left;	/* ANSWER_ERROR: refuse this many, then NOW */
	char provider[128], endpoint[600];
	unsigned reg_types;	/* PLUGSUP_NODE | PLUGSUP_CONTROLLER seen */
	/* What the supervisor was told. */
	bool healthy;
	int health_calls, restarts, done;
	char why[1600];
	char events[64][32], msgs[64][400];
	int nevents;
} fx;

static void
on_event(void *arg, const char *type, const char *message)
{
	(void)arg;
	if (fx.nevents < 64) {
		snprintf(fx.events[fx.nevents], sizeof(fx.events[0]), "%s",
		    type);
		snprintf(fx.msgs[fx.nevents], sizeof(fx.msgs[0]), "%s",
		    message);
		fx.nevents++;
	}
}

static void
on_restart(void *arg, const char *why)
{
	(void)arg;
	fx.restarts++;
	snprintf(fx.why, sizeof(fx.why), "%s", why);
}

static void
on_health(void *arg, bool healthy)
{
	(void)arg;
	fx.health_calls++;
	fx.healthy = healthy;
}

static const struct plugsup_ops ops = { on_event, on_restart, on_health };

/* How many events of this type, and the last one's message. */
static int
events_of(const char *type, const char **msg)
{
	int i, n = 0;

	for (i = 0; i < fx.nevents; i++)
		if (strcmp(fx.events[i], type) == 0) {
			n++;
			if (msg != NULL)
				*msg = fx.msgs[i];
		}
	return n;
}

static void
reply_registered(struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__RegisterPluginReply r = BERTH__REGISTER_PLUGIN_REPLY__INIT;

	r.instance = req->env->register_plugin->instance;
	env.body_case = BERTH__ENVELOPE__BODY_REGISTER_PLUGIN_REPLY;
	env.register_plugin_reply = &r;
	fake_reply(fx.fp, req, &env, -1);
}

static void
reply_deregistered(struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__DeregisterPluginReply r = BERTH__DEREGISTER_PLUGIN_REPLY__INIT;

	env.body_case = BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN_REPLY;
	env.deregister_plugin_reply = &r;
	fake_reply(fx.fp, req, &env, -1);
}

static void
registry(struct fake_peer *fp, struct fake_req *req, void *arg)
{
	const Berth__PluginInstance *pi;

	(void)fp;
	(void)arg;
	if (req->env->body_case == BERTH__ENVELOPE__BODY_REGISTER_PLUGIN) {
		pi = req->env->register_plugin->instance;
		snprintf(fx.provider, sizeof(fx.provider), "%s", pi->provider);
		snprintf(fx.endpoint, sizeof(fx.endpoint), "%s", pi->endpoint);
		fx.reg_types |= pi->type ==
		    BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE ? PLUGSUP_NODE :
		    PLUGSUP_CONTROLLER;
		if (fx.answer == ANSWER_ERROR && fx.errors_left > 0) {
			fx.errors_left--;
			fake_reply_error(fx.fp, req,
			    BERTH__ERROR_CODE__ERROR_INTERNAL, "disk full");
		} else if (fx.answer != ANSWER_HOLD)
			reply_registered(req);
	} else if (req->env->body_case ==
	    BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN &&
	    fx.answer != ANSWER_HOLD)
		reply_deregistered(req);
}

static void
plugin_start(void)
{
	char ep[300];
	char *argv[] = { (char *)harness_bin("berth-csi-hostpath"), "--strict",
	    "--endpoint", ep, "--node-id", "node-1", "--state-dir", fx.state,
	    NULL };

	snprintf(ep, sizeof(ep), "unix://%s", fx.sock);
	proc_start(&fx.plugin, argv, -1);
	fx.plugin_up = true;
	ck_assert_msg(proc_wait_log(&fx.plugin, "listening on", 10000),
	    "plugin did not start: %s", fx.plugin.log);
}

/* A supervisor for plugin "hp" of alloc "a1", a monolith. */
static void
setup_with(unsigned reg_timeout_ms, int64_t health_timeout_ms)
{
	static const struct chan_ops client_ops = { NULL, NULL, NULL, NULL };
	struct plugsup_deps deps;
	struct plugsup_conf conf = { 0 };

	memset(&fx, 0, sizeof(fx));
	fx.dir = harness_tmpdir("plugsup");
	snprintf(fx.sock, sizeof(fx.sock), "%s/csi.sock", fx.dir);
	snprintf(fx.state, sizeof(fx.state), "%s/state", fx.dir);
	ck_assert_ptr_nonnull(fx.base = event_base_new());
	ck_assert_ptr_nonnull(fx.csi = csi_client_new(fx.base));
	ck_assert_ptr_nonnull(fx.watcher = watcher_new(fx.base));
	fx.fp = fake_peer_new(fx.base, "berth-registry", NULL, &fx.chan,
	    &client_ops, NULL);
	fake_peer_handler(fx.fp, registry, NULL);
	ck_assert_ptr_nonnull(fx.rc = regclient_new(fx.base, fx.chan,
	    reg_timeout_ms));
	deps.base = fx.base;
	deps.registry = fx.rc;
	deps.csi = fx.csi;
	deps.watcher = fx.watcher;
	deps.csimgr = NULL;
	conf.alloc = "a1";
	conf.task = "plugin";
	conf.id = "hp";
	conf.type = PLUGSUP_MONOLITH;
	conf.health_timeout_ms = health_timeout_ms;
	conf.heartbeat_ms = 100;
	conf.socket = fx.sock;
	ck_assert_ptr_nonnull(fx.ps = plugsup_new(&deps, &conf, &ops, NULL));
}

static void
setup(void)
{
	setup_with(5000, 20000);
}

static void
setup_short(void)
{
	setup_with(300, 20000);
}

static void
setup_deadline(void)
{
	setup_with(5000, 1000);
}

static void
teardown(void)
{
	plugsup_free(fx.ps);
	regclient_free(fx.rc);
	chan_free(fx.chan);
	fake_peer_free(fx.fp);
	csi_client_free(fx.csi);
	watcher_free(fx.watcher);
	event_base_free(fx.base);
	if (fx.plugin_up) {
		kill(fx.plugin.pid, SIGCONT);
		proc_kill(&fx.plugin);
	}
	harness_rmtree(fx.dir);
	free(fx.dir);
}

static bool
is_healthy(void *arg)
{
	(void)arg;
	return fx.healthy;
}

static bool
is_unhealthy(void *arg)
{
	(void)arg;
	return !fx.healthy;
}

static bool
is_done(void *arg)
{
	(void)arg;
	return fx.done > 0;
}

static bool
restarted(void *arg)
{
	(void)arg;
	return fx.restarts > 0;
}

static bool
held(void *arg)
{
	return fake_pending(fx.fp) >= (size_t)(intptr_t)arg;
}

static bool
registrations(void *arg)
{
	return fake_count(fx.fp, BERTH__ENVELOPE__BODY_REGISTER_PLUGIN) >=
	    (unsigned)(intptr_t)arg;
}

static bool
never(void *arg)
{
	(void)arg;
	return false;
}

static void
idle(int ms)
{
	fake_run_until(fx.base, never, NULL, ms);
}

static void
stopped(void *arg)
{
	(void)arg;
	fx.done++;
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Probe, GetPluginInfo, register both types, heartbeat, deregister. */
START_TEST(test_register_heartbeat_stop)
{
	const char *msg = NULL;

	setup();
	plugin_start();
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
	ck_assert(plugsup_healthy(fx.ps));
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN), 2);
	ck_assert_uint_eq(fx.reg_types, PLUGSUP_NODE | PLUGSUP_CONTROLLER);
	ck_assert_str_eq(fx.provider, "hostpath.csi.berth.dev");
	ck_assert(strncmp(fx.endpoint, "unix://", 7) == 0 &&
	    strcmp(fx.endpoint + 7, fx.sock) == 0);
	ck_assert_int_eq(events_of("PluginHealthy", &msg), 1);
	ck_assert_ptr_nonnull(strstr(msg, "registered as controller and "
	    "node"));
	/* Heartbeats pass: no new event, no new registration. */
	idle(600);
	ck_assert(fx.healthy);
	ck_assert_int_eq(fx.nevents, 1);
	ck_assert_int_eq(fx.health_calls, 1);
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN), 2);
	plugsup_stop(fx.ps, stopped, NULL);
	ck_assert(fake_run_until(fx.base, is_done, NULL, 5000));
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN), 2);
	ck_assert_int_eq(events_of("PluginDeregistered", NULL), 1);
	ck_assert(!fx.healthy);
	ck_assert(!plugsup_healthy(fx.ps));
	/* Stopped: no more probes, registrations or callbacks. */
	idle(300);
	ck_assert_int_eq(fx.done, 1);
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN), 2);
}
END_TEST

/* A stopped plugin fails its heartbeats: unhealthy after two, not one. */
START_TEST(test_unhealthy_after_failed_heartbeats)
{
	const char *msg = NULL;
	long long t0, waited;

	setup();
	plugin_start();
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
	ck_assert_int_eq(kill(fx.plugin.pid, SIGSTOP), 0);
	t0 = now_ms();
	ck_assert(fake_run_until(fx.base, is_unhealthy, NULL, 10000));
	waited = now_ms() - t0;
	/* Each probe waits out its 1 s deadline: one failure is not enough. */
	ck_assert_msg(waited >= 1050, "unhealthy after %lld ms", waited);
	ck_assert_int_eq(events_of("PluginUnhealthy", &msg), 1);
	ck_assert_ptr_nonnull(strstr(msg, "2 probes in a row failed"));
	ck_assert(!plugsup_healthy(fx.ps));
	/* Still registered: an unhealthy plugin is not re-registered. */
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN), 2);
	ck_assert_int_eq(kill(fx.plugin.pid, SIGCONT), 0);
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
	ck_assert_int_eq(events_of("PluginHealthy", &msg), 2);
	ck_assert_ptr_nonnull(strstr(msg, "healthy again"));
	ck_assert_int_eq(fx.restarts, 0);
}
END_TEST

/* No socket yet: it waits, and the socket's appearance wakes it. */
START_TEST(test_socket_appears_late)
{
	const char *msg = NULL;

	setup();
	plugsup_start(fx.ps, false, false);
	idle(300);
	ck_assert(!fx.healthy);
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN), 0);
	ck_assert_int_eq(fx.nevents, 0);
	plugin_start();
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
	ck_assert_int_eq(events_of("PluginHealthy", &msg), 1);
	ck_assert_ptr_nonnull(strstr(msg, "after its socket appeared"));
}
END_TEST

/* A dead run left its socket: a socket that nothing accepts on. */
static void
leave_socket(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	ck_assert_uint_lt(strlen(path), sizeof(sun.sun_path));
	memcpy(sun.sun_path, path, strlen(path));
	ck_assert_int_ge(fd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
}

/*
 * Restarted over a dead run's socket: that socket is not the plugin's,
 * and "healthy N ms after its socket appeared" counts from the socket
 * the new run made, not from the leftover (here a second older).
 */
START_TEST(test_restart_timing_from_new_socket)
{
	const char *msg = NULL, *at;
	long long t0;
	double ms;

	setup();
	leave_socket(fx.sock);
	idle(1000);
	plugsup_launching(fx.ps);
	plugsup_start(fx.ps, false, false);
	idle(300);
	ck_assert(!fx.healthy);
	ck_assert_int_eq(fx.nevents, 0);
	t0 = now_ms();
	plugin_start();
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
	ck_assert_int_eq(events_of("PluginHealthy", &msg), 1);
	ck_assert_ptr_nonnull(at = strstr(msg, "; healthy "));
	ck_assert_ptr_nonnull(strstr(msg, "ms after its socket appeared"));
	ms = strtod(at + 10, NULL);
	/* Not more than since the plugin started (the coarse clock that
	 * stamps inodes may lag by a tick). */
	ck_assert_msg(ms <= (double)(now_ms() - t0) + 20, "%s", msg);
}
END_TEST

/* Never healthy: a restart is asked once, and probing ends. */
START_TEST(test_health_timeout)
{
	const char *msg = NULL;

	setup_deadline();
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, restarted, NULL, 5000));
	ck_assert_ptr_nonnull(strstr(fx.why, "was not healthy within"));
	ck_assert_ptr_nonnull(strstr(fx.why, "no socket at"));
	ck_assert_int_eq(events_of("PluginUnhealthy", &msg), 1);
	/* The plugin comes up now, too late: nothing probes it. */
	plugin_start();
	idle(500);
	ck_assert_int_eq(fx.restarts, 1);
	ck_assert(!fx.healthy);
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN), 0);
	/* Started again (the task restarted), it registers. */
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
}
END_TEST

/* The registry refuses: unhealthy, back to probing, then registered. */
START_TEST(test_registry_error)
{
	const char *msg = NULL;

	setup();
	fx.answer = ANSWER_ERROR;
	fx.errors_left = 1;
	plugin_start();
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
	ck_assert_int_eq(events_of("PluginUnhealthy", &msg), 1);
	ck_assert_ptr_nonnull(strstr(msg, "registering with berth-registry"));
	ck_assert_ptr_nonnull(strstr(msg, "disk full"));
	/* Both types again: a half-registered plugin is not running. */
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN), 4);
	ck_assert_int_eq(events_of("PluginHealthy", NULL), 1);
}
END_TEST

/* Registrations answered late and in the other order. */
START_TEST(test_registry_late_out_of_order)
{
	setup();
	fx.answer = ANSWER_HOLD;
	plugin_start();
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, held, (void *)2, 10000));
	idle(300);
	ck_assert(!fx.healthy);
	ck_assert_int_eq(fx.nevents, 0);
	reply_registered(fake_nth(fx.fp, 1));
	idle(100);
	ck_assert(!fx.healthy);	/* one of two is not registered */
	reply_registered(fake_nth(fx.fp, 0));
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 2000));
	ck_assert_int_eq(events_of("PluginHealthy", NULL), 1);
}
END_TEST

/* Registrations never answered: they time out and are sent again. */
START_TEST(test_registry_never)
{
	const char *msg = NULL;

	setup_short();
	fx.answer = ANSWER_HOLD;
	plugin_start();
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, registrations, (void *)4, 10000));
	ck_assert(!fx.healthy);
	ck_assert_int_ge(events_of("PluginUnhealthy", &msg), 1);
	ck_assert_ptr_nonnull(strstr(msg, "registering with berth-registry"));
	fx.answer = ANSWER_NOW;
	while (fake_pending(fx.fp) > 0)
		fake_drop(fx.fp, fake_nth(fx.fp, 0));
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
}
END_TEST

/* Stopped while registering; the registry's late answer changes nothing,
 * and its link closing ends the deregistrations. */
START_TEST(test_stop_while_registering_link_closed)
{
	setup();
	fx.answer = ANSWER_HOLD;
	plugin_start();
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, held, (void *)2, 10000));
	plugsup_stop(fx.ps, stopped, NULL);
	ck_assert(fake_run_until(fx.base, held, (void *)4, 2000));
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN), 2);
	reply_registered(fake_held(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN));
	reply_registered(fake_held(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN));
	idle(200);
	ck_assert(!fx.healthy);
	ck_assert_int_eq(fx.done, 0);	/* deregistrations still out */
	ck_assert_int_eq(events_of("PluginHealthy", NULL), 0);
	fake_close(fx.fp);
	ck_assert(fake_run_until(fx.base, is_done, NULL, 2000));
	ck_assert_int_eq(fx.done, 1);
	ck_assert(!fx.healthy);
}
END_TEST

/* Adopting a plugin that was healthy is not news; freeing it with a
 * probe in flight is safe. */
START_TEST(test_adopted_healthy_then_freed)
{
	setup();
	plugin_start();
	plugsup_start(fx.ps, true, true);
	ck_assert(plugsup_healthy(fx.ps));
	ck_assert(fake_run_until(fx.base, registrations, (void *)2, 10000));
	idle(300);
	ck_assert(plugsup_healthy(fx.ps));
	ck_assert_int_eq(fx.health_calls, 0);
	ck_assert_int_eq(fx.nevents, 0);
	plugsup_free(fx.ps);
	fx.ps = NULL;
	idle(300);
	ck_assert_int_eq(fx.nevents, 0);
	ck_assert_int_eq(fx.health_calls, 0);
}
END_TEST

/* Stopped while it waits for the socket, then started again. */
START_TEST(test_stop_while_waiting_start_again)
{
	setup();
	plugsup_start(fx.ps, false, false);
	idle(100);
	plugsup_stop(fx.ps, stopped, NULL);
	ck_assert(fake_run_until(fx.base, is_done, NULL, 5000));
	ck_assert_int_eq(fx.nevents, 0);	/* never healthy: no news */
	ck_assert_int_eq(fx.health_calls, 0);
	/* Stopped: the socket appearing wakes nothing. */
	plugin_start();
	idle(300);
	ck_assert_uint_eq(fake_count(fx.fp,
	    BERTH__ENVELOPE__BODY_REGISTER_PLUGIN), 0);
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, is_healthy, NULL, 10000));
	ck_assert_int_eq(events_of("PluginHealthy", NULL), 1);
	ck_assert_int_eq(fx.done, 1);
}
END_TEST

/* The link to the registry closed before it could register. */
START_TEST(test_registry_closed)
{
	setup_deadline();
	fx.answer = ANSWER_HOLD;
	plugin_start();
	fake_close(fx.fp);
	plugsup_start(fx.ps, false, false);
	ck_assert(fake_run_until(fx.base, restarted, NULL, 5000));
	ck_assert(!fx.healthy);
	ck_assert_int_ge(events_of("PluginUnhealthy", NULL), 1);
	ck_assert_ptr_nonnull(strstr(fx.why, "berth-registry"));
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("plugin_supervisor");

	/* Each test sets up its own timeouts; teardown runs in the child. */
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_register_heartbeat_stop);
	tcase_add_test(tc, test_unhealthy_after_failed_heartbeats);
	tcase_add_test(tc, test_socket_appears_late);
	tcase_add_test(tc, test_restart_timing_from_new_socket);
	tcase_add_test(tc, test_health_timeout);
	tcase_add_test(tc, test_registry_error);
	tcase_add_test(tc, test_registry_late_out_of_order);
	tcase_add_test(tc, test_registry_never);
	tcase_add_test(tc, test_stop_while_registering_link_closed);
	tcase_add_test(tc, test_adopted_healthy_then_freed);
	tcase_add_test(tc, test_registry_closed);
	tcase_add_test(tc, test_stop_while_waiting_start_again);
	return harness_run("plugin_supervisor", tc);
}
