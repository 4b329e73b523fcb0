/*
 * test_mounter_client.c: the supervisor's mounter client over a real
 * channel and socketpair, with the mounter's end driven by hand: each
 * priv_<verb>() sends its verb with the fields it was given, each reply
 * reaches its typed callback, and an unreachable mounter, a forgotten
 * caller and a freed client run no callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <check.h>

#include "harness.h"
#include "mounter_client.h"

static struct event_base *base;
static struct chan *chan;	/* the supervisor's end */
static struct mclient *mc;
static int raw = -1;		/* the mounter's end */

/* What the last callback saw. */
static int calls, code, pidfd = -1, chanfd = -1;
static bool mounted;
static uint32_t unmounted, removed;
static pid_t pid;
static uint64_t start_time;

static bool
takes_fd(Berth__Envelope__BodyCase body)
{
	return body == BERTH__ENVELOPE__BODY_PLUGIN_STARTED ||
	    body == BERTH__ENVELOPE__BODY_TASK_STARTED;
}

static const struct chan_ops ops = { NULL, NULL, takes_fd, NULL };

static void
setup(void)
{
	int sp[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sp), 0);
	base = event_base_new();
	chan = chan_new(base, sp[0], "berth-mounter", &ops, NULL);
	ck_assert_ptr_nonnull(chan);
	mc = mclient_new(chan, 0);
	ck_assert_ptr_nonnull(mc);
	raw = sp[1];
	calls = code = 0;
	pidfd = chanfd = -1;
}

static void
teardown(void)
{
	mclient_free(mc);
	chan_free(chan);
	close(raw);
	if (pidfd >= 0)
		close(pidfd);
	if (chanfd >= 0)
		close(chanfd);
	event_base_free(base);
}

static void
done_cb(const struct priv_result *res, void *arg)
{
	(void)arg;
	calls++;
	code = res->code;
}

static void
volume_cb(const struct priv_result *res, bool m, void *arg)
{
	done_cb(res, arg);
	mounted = m;
}

static void
cleanup_cb(const struct priv_result *res, uint32_t u, uint32_t r, void *arg)
{
	done_cb(res, arg);
	unmounted = u;
	removed = r;
}

static void
plugin_cb(const struct priv_result *res, pid_t p, uint64_t st, int fd,
    void *arg)
{
	done_cb(res, arg);
	pid = p;
	start_time = st;
	pidfd = fd;
}

static void
task_cb(const struct priv_result *res, pid_t p, uint64_t st, int fd, int fd2,
    void *arg)
{
	plugin_cb(res, p, st, fd, arg);
	chanfd = fd2;
}

/* The request the mounter's end got; the caller frees it. */
static Berth__Envelope *
mounter_gets(Berth__Envelope__BodyCase body)
{
	Berth__Envelope *e;
	int i;

	for (i = 0; i < 2000; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		if ((e = harness_recv_env(raw, 1)) != NULL)
			break;
	}
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->kind, BERTH__KIND__KIND_REQUEST);
	ck_assert_int_eq(e->body_case, body);
	return e;
}

/* Answer req with rep (its body set, or an error) and nfd of fds. */
static void
mounter_answers_fds(Berth__Envelope *req, Berth__Envelope *rep,
    const int *fds, int nfd)
{
	int i;

	rep->version = BERTH_PROTOCOL_VERSION;
	rep->kind = BERTH__KIND__KIND_REPLY;
	rep->request_id = req->request_id;
	harness_send_env(raw, rep, nfd > 0 ? fds : NULL, nfd);
	berth__envelope__free_unpacked(req, NULL);
	for (i = 0; i < 2000 && calls == 0; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
}

/* Answer req with rep (its body set, or an error), then run the loop. */
static void
mounter_answers(Berth__Envelope *req, Berth__Envelope *rep, int fd)
{
	mounter_answers_fds(req, rep, &fd, fd >= 0);
}

static bool
is(ProtobufCBinaryData b, const char *s)
{
	return b.len == strlen(s) && memcmp(b.data, s, b.len) == 0;
}

START_TEST(each_verb_carries_its_fields_and_its_typed_reply)
{
	struct priv_volume v = { "node", "hp", "ns1", "a1", "vol1", true,
		BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM,
		BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER, false, NULL, 0 };
	Berth__Envelope rep = BERTH__ENVELOPE__INIT, *req;
	Berth__PrepareVolumeReply pvr = BERTH__PREPARE_VOLUME_REPLY__INIT;
	Berth__CleanupReply cr = BERTH__CLEANUP_REPLY__INIT;
	Berth__PluginStarted ps = BERTH__PLUGIN_STARTED__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;
	Berth__Ack ack = BERTH__ACK__INIT;
	Berth__Error err = BERTH__ERROR__INIT;
	int p[2];

	/* Staging: the namespace, never the alloc. */
	ck_assert_int_eq(priv_prepare_volume(mc,
	    BERTH__VOLUME_DIR__VOLUME_DIR_STAGING, &v, volume_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_PREPARE_VOLUME);
	ck_assert(is(req->prepare_volume->volume_ns, "ns1"));
	ck_assert_uint_eq(req->prepare_volume->alloc_id.len, 0);
	ck_assert(is(req->prepare_volume->volume_id, "vol1"));
	/* One staging path per volume: no usage in it. */
	ck_assert_ptr_null(req->prepare_volume->usage);
	pvr.mounted = true;
	rep.body_case = BERTH__ENVELOPE__BODY_PREPARE_VOLUME_REPLY;
	rep.prepare_volume_reply = &pvr;
	mounter_answers(req, &rep, -1);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(code, 0);
	ck_assert(mounted);
	/* But an older per-usage one names its usage. */
	v.per_usage = true;
	calls = 0;
	ck_assert_int_eq(priv_prepare_volume(mc,
	    BERTH__VOLUME_DIR__VOLUME_DIR_STAGING, &v, volume_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_PREPARE_VOLUME);
	ck_assert(req->prepare_volume->usage->read_only);
	mounter_answers(req, &rep, -1);
	ck_assert_int_eq(calls, 1);
	v.per_usage = false;

	/* Bind: the bind's own read-only flag and the task's name. */
	calls = 0;
	ck_assert_int_eq(priv_bind_volume(mc, &v, "web", "data", false,
	    done_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_BIND_VOLUME);
	ck_assert(is(req->bind_volume->alloc_id, "a1"));
	ck_assert(is(req->bind_volume->task, "web"));
	ck_assert(is(req->bind_volume->name, "data"));
	ck_assert(!req->bind_volume->read_only);
	rep.body_case = BERTH__ENVELOPE__BODY_ACK;
	rep.ack = &ack;
	mounter_answers(req, &rep, -1);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(code, 0);

	/* Cleanup without a plugin: neither plugin field. */
	calls = 0;
	ck_assert_int_eq(priv_cleanup_alloc(mc, "a1", NULL, NULL, cleanup_cb,
	    NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_CLEANUP_ALLOC);
	ck_assert_uint_eq(req->cleanup_alloc->plugin_id.len, 0);
	cr.unmounted = 3;
	cr.removed = 7;
	rep.body_case = BERTH__ENVELOPE__BODY_CLEANUP_REPLY;
	rep.cleanup_reply = &cr;
	mounter_answers(req, &rep, -1);
	ck_assert_int_eq(calls, 1);
	ck_assert_uint_eq(unmounted, 3);
	ck_assert_uint_eq(removed, 7);

	/* Start: the handle and the pidfd reach the callback. */
	calls = 0;
	ck_assert_int_eq(priv_start_plugin(mc, "lvm", "node", "lvm", "a1",
	    plugin_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_START_PLUGIN);
	ck_assert(is(req->start_plugin->definition, "lvm"));
	h.pid = 4242;
	h.start_time = 99;
	ps.handle = &h;
	rep.body_case = BERTH__ENVELOPE__BODY_PLUGIN_STARTED;
	rep.plugin_started = &ps;
	ck_assert_int_eq(pipe(p), 0);
	mounter_answers(req, &rep, p[0]);
	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(code, 0);
	ck_assert_int_eq(pid, 4242);
	ck_assert_uint_eq(start_time, 99);
	ck_assert_int_ge(pidfd, 0);

	/* Signal: the mounter's typed error reaches the caller as it is. */
	calls = 0;
	ck_assert_int_eq(priv_signal_plugin(mc, 4242, 99,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM, done_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN);
	ck_assert_uint_eq(req->signal_plugin->handle->pid, 4242);
	ck_assert_int_eq(req->signal_plugin->signal,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM);
	rep = (Berth__Envelope)BERTH__ENVELOPE__INIT;
	err.code = BERTH__ERROR_CODE__ERROR_PERMISSION;
	err.message = "not ours";
	rep.error = &err;
	mounter_answers(req, &rep, -1);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(code, BERTH__ERROR_CODE__ERROR_PERMISSION);
}
END_TEST

START_TEST(a_start_without_a_handle_is_an_error)
{
	Berth__Envelope rep = BERTH__ENVELOPE__INIT, *req;
	Berth__PluginStarted ps = BERTH__PLUGIN_STARTED__INIT;
	int p[2];

	ck_assert_int_eq(priv_adopt_plugin(mc, 7, 8, plugin_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_ADOPT_PLUGIN);
	ck_assert_uint_eq(req->adopt_plugin->handle->start_time, 8);
	rep.body_case = BERTH__ENVELOPE__BODY_PLUGIN_STARTED;
	rep.plugin_started = &ps;
	ck_assert_int_eq(pipe(p), 0);
	mounter_answers(req, &rep, p[0]);
	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(code, BERTH__ERROR_CODE__ERROR_INTERNAL);
	ck_assert_int_eq(pidfd, -1);
}
END_TEST

/* TaskStarted carries two descriptors: both reach the callback, or none. */
START_TEST(a_task_start_carries_its_fields_and_two_descriptors)
{
	struct priv_task t = { "a1", "web", 70001, 70001, "svc", true,
		64 << 20, 80 << 20, 512, 100, "node", "hp" };
	Berth__Envelope rep = BERTH__ENVELOPE__INIT, *req;
	Berth__TaskStarted ts = BERTH__TASK_STARTED__INIT;
	struct stat st;
	int p[2], sp[2];

	ck_assert_int_eq(priv_start_task(mc, &t, task_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_START_TASK);
	ck_assert(is(req->start_task->alloc_id, "a1"));
	ck_assert(is(req->start_task->task, "web"));
	ck_assert(is(req->start_task->user, "svc"));
	ck_assert_uint_eq(req->start_task->uid, 70001);
	ck_assert_uint_eq(req->start_task->gid, 70001);
	ck_assert(req->start_task->network_none);
	ck_assert_uint_eq(req->start_task->memory_bytes, 64 << 20);
	ck_assert_uint_eq(req->start_task->memory_max_bytes, 80 << 20);
	ck_assert_uint_eq(req->start_task->cpu_shares, 512);
	ck_assert_uint_eq(req->start_task->pids_max, 100);
	ck_assert(is(req->start_task->plugin_type, "node"));
	ck_assert(is(req->start_task->plugin_id, "hp"));
	ts.pid = 4243;
	ts.start_time = 77;
	rep.body_case = BERTH__ENVELOPE__BODY_TASK_STARTED;
	rep.task_started = &ts;
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), 0);
	mounter_answers_fds(req, &rep, (int[]){ p[0], sp[0] }, 2);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(code, 0);
	ck_assert_int_eq(pid, 4243);
	ck_assert_uint_eq(start_time, 77);
	ck_assert_int_ge(pidfd, 0);
	ck_assert_int_ge(chanfd, 0);
	ck_assert_int_eq(fstat(chanfd, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(fstat(pidfd, &st), 0);
	ck_assert(S_ISFIFO(st.st_mode));
	close(pidfd);
	close(chanfd);
	pidfd = chanfd = -1;

	/* One descriptor of the two: refused, and none reaches the caller. */
	calls = 0;
	ck_assert_int_eq(priv_start_task(mc, &t, task_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_START_TASK);
	mounter_answers(req, &rep, p[0]);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(code, BERTH__ERROR_CODE__ERROR_BAD_FD);
	ck_assert_int_eq(pidfd, -1);
	ck_assert_int_eq(chanfd, -1);
	close(p[0]);
	close(p[1]);
	close(sp[0]);
	close(sp[1]);
}
END_TEST

START_TEST(unreachable_forgotten_and_freed_run_no_callback)
{
	struct mclient *none = mclient_new(NULL, 0);
	Berth__Envelope rep = BERTH__ENVELOPE__INIT, *req;
	Berth__Ack ack = BERTH__ACK__INIT;
	int i;

	/* No channel: -errno and no callback. */
	ck_assert_int_eq(priv_unbind_volume(none, "a1", "web", "data",
	    done_cb, NULL), -ENOTCONN);
	mclient_free(none);
	/* A forgotten caller's reply goes nowhere. */
	ck_assert_int_eq(priv_prepare_task(mc, "a1", "web", 1000, 1000,
	    done_cb, &calls), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_PREPARE_TASK);
	priv_forget(mc, &calls);
	rep.body_case = BERTH__ENVELOPE__BODY_ACK;
	rep.ack = &ack;
	mounter_answers(req, &rep, -1);
	ck_assert_int_eq(calls, 0);
	/* A call in flight when the client goes reaches nothing either. */
	ck_assert_int_eq(priv_prepare_plugin(mc, "node", "hp", "a1", 0, 0,
	    done_cb, NULL), 0);
	req = mounter_gets(BERTH__ENVELOPE__BODY_PREPARE_PLUGIN);
	mclient_free(mc);
	mc = NULL;
	mounter_answers(req, &rep, -1);
	ck_assert_int_eq(calls, 0);
	/* A closed channel is out of reach too. */
	mc = mclient_new(chan, 0);
	close(raw);
	raw = -1;
	for (i = 0; i < 50 && !chan_closed(chan); i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	ck_assert_int_eq(priv_cleanup_alloc(mc, "a1", NULL, NULL, cleanup_cb,
	    NULL), -ENOTCONN);
	ck_assert_int_eq(calls, 0);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("mounter_client");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, each_verb_carries_its_fields_and_its_typed_reply);
	tcase_add_test(tc, a_start_without_a_handle_is_an_error);
	tcase_add_test(tc, a_task_start_carries_its_fields_and_two_descriptors);
	tcase_add_test(tc, unreachable_forgotten_and_freed_run_no_callback);
	return harness_run("mounter_client", tc);
}
