/*
 * regtest.h: what the registry's tests share: a real berth-registry
 * started with its socket as descriptor 3 (the test is its parent, as the
 * supervisor is), the hello, a registry client on the test's own event
 * loop, and calls made synchronous for readable tests.
 *
 * Every registry started here is SIGKILLed by pid at exit, and its data
 * directory removed, even when an assertion fails; it also dies with the
 * test process (it asks for that itself).
 */
#ifndef BERTH_TEST_REGTEST_H
#define BERTH_TEST_REGTEST_H

#include <stdbool.h>

#include <event2/event.h>

#include "harness.h"
#include "registry_client.h"

struct regtest {
	char dir[256];			/* the data directory */
	struct proc proc;
	bool running;
	struct event_base *base;
	struct chan *chan;
	struct chan_ops ops;
	struct regclient *rc;
	/* Notices the client did not take (for raw tests). */
	void (*raw_notice)(const Berth__Envelope *env, void *arg);
	void *raw_arg;
};

/* A synchronous call's outcome; env is a copy the test frees with rt_done. */
struct rt_res {
	bool done;
	Berth__ErrorCode code;
	char msg[512];
	Berth__Envelope *env;
	void **items;			/* list calls: copies */
	size_t n;
	bool plugins;
};

/* A data directory whose registry/ belongs to berth-registry, 0700. */
void regtest_dir(struct regtest *t, const char *tag);
/* Start berth-registry on t->dir and say hello; fails the test if it can't. */
void regtest_start(struct regtest *t);
/* Start it and expect it to exit with code, its log containing text. */
void regtest_expect_refusal(struct regtest *t, int code, const char *text);
/* Ask it to stop and wait for a clean exit. */
void regtest_stop(struct regtest *t);
/* SIGKILL it now. */
void regtest_kill(struct regtest *t);
/* Remove the data directory. */
void regtest_cleanup(struct regtest *t);
/* Run the test's loop until *flag or ms pass; false on timeout. */
bool regtest_wait(struct regtest *t, const bool *flag, int ms);
/* Run the loop for ms. */
void regtest_spin(struct regtest *t, int ms);
/* A path under the data directory. */
const char *regtest_path(struct regtest *t, const char *rel);

/* Callbacks for rt_res. */
void rt_cb(const struct regclient_result *res, void *arg);
void rt_plugins_cb(const struct regclient_result *res,
    Berth__PluginInstance *const *items, size_t n, void *arg);
void rt_handles_cb(const struct regclient_result *res,
    Berth__Handle *const *items, size_t n, void *arg);
void rt_volumes_cb(const struct regclient_result *res,
    Berth__VolumeReply *const *items, size_t n, void *arg);
void rt_done(struct rt_res *r);

/* Issue a call with rt_* callback into a fresh res, wait, assert it ran. */
#define RT(t, res, call) do {						\
	memset(&(res), 0, sizeof(res));					\
	ck_assert_int_eq((call), 0);					\
	ck_assert_msg(regtest_wait((t), &(res).done, 15000),		\
	    "no answer to " #call);					\
} while (0)

/* A filled-in plugin instance for tests. */
void rt_instance(Berth__PluginInstance *pi, Berth__PluginType type,
    const char *name, const char *alloc, const char *endpoint);

#endif
