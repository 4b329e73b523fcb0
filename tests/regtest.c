/*
 * regtest.c: the registry's test support (see regtest.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "regtest.h"

/* Registries to kill at exit, whatever the test's outcome. */
static pid_t started[64];
static size_t nstarted;
static bool atexit_done;

/* Data directories to remove at exit. */
static char made[16][256];
static size_t nmade;

static void
kill_started(void)
{
	size_t i;

	for (i = 0; i < nstarted; i++)
		if (started[i] > 0 && kill(started[i], SIGKILL) == 0)
			waitpid(started[i], NULL, 0);
	for (i = 0; i < nmade; i++)
		harness_rmtree(made[i]);
}

static void
forget(pid_t pid)
{
	size_t i;

	for (i = 0; i < nstarted; i++)
		if (started[i] == pid)
			started[i] = 0;
}

void
regtest_dir(struct regtest *t, const char *tag)
{
	struct passwd *pw;
	char *d, path[300];

	memset(t, 0, sizeof(*t));
	d = harness_tmpdir(tag);
	snprintf(t->dir, sizeof(t->dir), "%s", d);
	free(d);
	if (!atexit_done) {
		atexit(kill_started);
		atexit_done = true;
	}
	if (nmade < sizeof(made) / sizeof(made[0]))
		snprintf(made[nmade++], sizeof(made[0]), "%s", t->dir);
	if ((pw = getpwnam("berth-registry")) == NULL)
		ck_abort_msg("no user berth-registry");
	snprintf(path, sizeof(path), "%s/registry", t->dir);
	if (mkdir(path, 0700) < 0 || chown(path, pw->pw_uid, pw->pw_gid) < 0 ||
	    chmod(path, 0700) < 0)
		ck_abort_msg("preparing %s: %s", path, strerror(errno));
}

const char *
regtest_path(struct regtest *t, const char *rel)
{
	static char buf[2][512];
	static int next;
	char *b = buf[next++ % 2];

	snprintf(b, sizeof(buf[0]), "%s/%s", t->dir, rel);
	return b;
}

static void
on_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct regtest *t = arg;

	(void)c;
	if (fd >= 0)
		close(fd);
	/* Raw tests see every notice; the client takes its own. */
	if (t->raw_notice != NULL)
		t->raw_notice(env, t->raw_arg);
	if (t->rc != NULL && env->kind == BERTH__KIND__KIND_NOTICE)
		regclient_notice(t->rc, env);
}

static void
on_close(struct chan *c, const char *why, void *arg)
{
	(void)c;
	(void)why;
	(void)arg;
}

static void
on_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	*(bool *)arg = true;
}

bool
regtest_wait(struct regtest *t, const bool *flag, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	struct event *timer;
	bool expired = false;

	if ((timer = evtimer_new(t->base, on_timer, &expired)) == NULL)
		ck_abort_msg("evtimer_new");
	evtimer_add(timer, &tv);
	while (!*flag && !expired) {
		event_base_loop(t->base, EVLOOP_ONCE);
		/* Keep its stderr pipe from filling up. */
		if (t->running)
			proc_drain(&t->proc);
	}
	event_free(timer);
	return *flag;
}

void
regtest_spin(struct regtest *t, int ms)
{
	bool never = false;

	regtest_wait(t, &never, ms);
}

static void
hello_cb(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct rt_res *r = arg;

	(void)c;
	if (fd >= 0)
		close(fd);
	r->code = env->error ? env->error->code : 0;
	r->done = true;
}

static void
spawn(struct regtest *t, int *ours)
{
	char *argv[] = { (char *)harness_bin("berth-registry"), "--spawned",
		"--data-dir", t->dir, "--user", "berth-registry", NULL };
	int sp[2];

	if (!atexit_done) {
		atexit(kill_started);
		atexit_done = true;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		ck_abort_msg("socketpair: %s", strerror(errno));
	proc_start(&t->proc, argv, sp[1]);
	close(sp[1]);
	if (nstarted < sizeof(started) / sizeof(started[0]))
		started[nstarted++] = t->proc.pid;
	else
		started[nstarted - 1] = t->proc.pid;
	*ours = sp[0];
}

void
regtest_start(struct regtest *t)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Hello hello = BERTH__HELLO__INIT;
	struct rt_res r = { 0 };
	int fd;

	spawn(t, &fd);
	t->running = true;
	if (t->base == NULL && (t->base = event_base_new()) == NULL)
		ck_abort_msg("event_base_new");
	t->ops.on_message = on_message;
	t->ops.on_close = on_close;
	if ((t->chan = chan_new(t->base, fd, "berth-registry", &t->ops,
	    t)) == NULL)
		ck_abort_msg("chan_new");
	hello.protocol_version = BERTH_PROTOCOL_VERSION;
	hello.role = BERTH__ROLE__ROLE_SUPERVISOR;
	hello.pid = getpid();
	env.body_case = BERTH__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	ck_assert_int_eq(chan_request(t->chan, &env, -1, 10000, hello_cb, &r),
	    0);
	ck_assert_msg(regtest_wait(t, &r.done, 15000) && r.code == 0,
	    "berth-registry did not answer the hello");
	if ((t->rc = regclient_new(t->base, t->chan, 20000)) == NULL)
		ck_abort_msg("regclient_new");
}

void
regtest_expect_refusal(struct regtest *t, int code, const char *text)
{
	int fd;

	spawn(t, &fd);
	ck_assert_msg(proc_wait_exit(&t->proc, 15000),
	    "berth-registry did not exit");
	close(fd);
	forget(t->proc.pid);
	ck_assert_msg(WIFEXITED(t->proc.status) &&
	    WEXITSTATUS(t->proc.status) == code,
	    "berth-registry: status 0x%x, not exit %d", t->proc.status, code);
	ck_assert_msg(strstr(t->proc.log, text) != NULL,
	    "berth-registry's log lacks \"%s\": %s", text, t->proc.log);
	proc_kill(&t->proc);
}

static void
drop_chan(struct regtest *t)
{
	regclient_free(t->rc);
	t->rc = NULL;
	chan_free(t->chan);
	t->chan = NULL;
}

void
regtest_stop(struct regtest *t)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Shutdown sd = BERTH__SHUTDOWN__INIT;

	if (!t->running)
		return;
	sd.reason = "test";
	env.body_case = BERTH__ENVELOPE__BODY_SHUTDOWN;
	env.shutdown = &sd;
	chan_notice(t->chan, &env, -1);
	regtest_spin(t, 20);
	ck_assert_msg(proc_wait_exit(&t->proc, 15000),
	    "berth-registry did not stop when asked");
	forget(t->proc.pid);
	ck_assert_msg(WIFEXITED(t->proc.status) &&
	    WEXITSTATUS(t->proc.status) == 0, "berth-registry stopped with "
	    "status 0x%x", t->proc.status);
	proc_kill(&t->proc);
	drop_chan(t);
	t->running = false;
}

void
regtest_kill(struct regtest *t)
{
	int i;

	if (!t->running)
		return;
	proc_kill(&t->proc);
	forget(t->proc.pid);
	/* Let the channel see the end, so calls in flight get ERROR_CLOSED. */
	for (i = 0; i < 200 && t->chan != NULL && !chan_closed(t->chan); i++)
		regtest_spin(t, 10);
	drop_chan(t);
	t->running = false;
}

void
regtest_cleanup(struct regtest *t)
{
	regtest_kill(t);
	if (t->base != NULL)
		event_base_free(t->base);
	t->base = NULL;
	harness_rmtree(t->dir);
}

static void
take(struct rt_res *r, const struct regclient_result *res)
{
	size_t len;
	uint8_t *buf;

	r->done = true;
	r->code = res->code;
	snprintf(r->msg, sizeof(r->msg), "%s", res->message ? res->message :
	    "");
	if (res->reply != NULL && res->code == 0) {
		len = berth__envelope__get_packed_size(res->reply);
		buf = malloc(len ? len : 1);
		berth__envelope__pack(res->reply, buf);
		r->env = berth__envelope__unpack(NULL, len, buf);
		free(buf);
	}
}

void
rt_cb(const struct regclient_result *res, void *arg)
{
	take(arg, res);
}

static void *
copy(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	void *out;

	protobuf_c_message_pack(m, buf);
	out = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	free(buf);
	return out;
}

void
rt_plugins_cb(const struct regclient_result *res,
    Berth__PluginInstance *const *items, size_t n, void *arg)
{
	struct rt_res *r = arg;
	size_t i;

	take(r, res);
	r->plugins = true;
	r->items = calloc(n + 1, sizeof(void *));
	for (i = 0; i < n; i++)
		r->items[i] = copy(&items[i]->base);
	r->n = n;
}

void
rt_handles_cb(const struct regclient_result *res,
    Berth__Handle *const *items, size_t n, void *arg)
{
	struct rt_res *r = arg;
	size_t i;

	take(r, res);
	r->items = calloc(n + 1, sizeof(void *));
	for (i = 0; i < n; i++)
		r->items[i] = copy(&items[i]->base);
	r->n = n;
}

void
rt_volumes_cb(const struct regclient_result *res,
    Berth__VolumeReply *const *items, size_t n, void *arg)
{
	struct rt_res *r = arg;
	size_t i;

	take(r, res);
	r->items = calloc(n + 1, sizeof(void *));
	for (i = 0; i < n; i++)
		r->items[i] = copy(&items[i]->base);
	r->n = n;
}

void
rt_done(struct rt_res *r)
{
	size_t i;

	if (r->env != NULL)
		berth__envelope__free_unpacked(r->env, NULL);
	for (i = 0; i < r->n; i++)
		protobuf_c_message_free_unpacked(r->items[i], NULL);
	free(r->items);
	memset(r, 0, sizeof(*r));
}

void
rt_instance(Berth__PluginInstance *pi, Berth__PluginType type,
    const char *name, const char *alloc, const char *endpoint)
{
	berth__plugin_instance__init(pi);
	pi->type = type;
	pi->name = (char *)name;
	pi->alloc = (char *)alloc;
	pi->endpoint = (char *)endpoint;
	pi->provider = (char *)name;
	pi->provider_version = "1.0.0";
	pi->capabilities.data = (uint8_t *)"caps";
	pi->capabilities.len = 4;
}
