/*
 * test_channel.c: the typed IPC channel, with a real socketpair and a real
 * libevent loop: request/reply, notices, timeouts, hang-ups, descriptor
 * passing, and every kind of bad input a peer can send. Bad input is sent
 * raw from the other end so that nothing of the channel's own encoder is
 * trusted to build it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <check.h>

#include "channel.h"
#include "harness.h"
#include "ipc_reply.h"

static struct event_base *base;
static struct chan *srv;	/* the channel under test */
static int raw = -1;		/* the peer's end, driven by hand */

/* What the server side saw. */
static int srv_requests, srv_notices, srv_closed, srv_fd_cloexec;
static int srv_last_fd = -1;
/* What a client's on_answer observer saw. */
static int answers, answers_ok, answers_timeout, answers_closed;
static Berth__Envelope__BodyCase answered_body;

static bool
ping_takes_fd(Berth__Envelope__BodyCase body)
{
	/* For these tests a Ping carries a descriptor; nothing else does. */
	return body == BERTH__ENVELOPE__BODY_PING;
}

static void
srv_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	Berth__Envelope rep = BERTH__ENVELOPE__INIT;
	Berth__Pong pong = BERTH__PONG__INIT;

	(void)arg;
	if (fd >= 0) {
		srv_fd_cloexec = (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
		if (srv_last_fd >= 0)
			close(srv_last_fd);
		srv_last_fd = fd;
	}
	if (env->kind == BERTH__KIND__KIND_NOTICE) {
		srv_notices++;
		return;
	}
	srv_requests++;
	if (env->body_case == BERTH__ENVELOPE__BODY_PING) {
		pong.nonce = env->ping->nonce;
		rep.body_case = BERTH__ENVELOPE__BODY_PONG;
		rep.pong = &pong;
		chan_reply(c, env, &rep, -1);
	}
	/* Anything else is left unanswered, to exercise timeouts. */
}

static void
srv_close(struct chan *c, const char *why, void *arg)
{
	(void)c;
	(void)why;
	(void)arg;
	srv_closed++;
}

static struct chan_ops srv_ops = { srv_message, srv_close, ping_takes_fd,
	NULL };

static void
setup(void)
{
	int sp[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sp), 0);
	base = event_base_new();
	srv = chan_new(base, sp[0], "peer", &srv_ops, NULL);
	ck_assert_ptr_nonnull(srv);
	raw = sp[1];
	srv_requests = srv_notices = srv_closed = srv_fd_cloexec = 0;
	answers = answers_ok = answers_timeout = answers_closed = 0;
	srv_last_fd = -1;
}

static void
teardown(void)
{
	chan_free(srv);
	if (raw >= 0)
		close(raw);
	if (srv_last_fd >= 0)
		close(srv_last_fd);
	event_base_free(base);
}

static long
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
pump(int ms)
{
	long end = ms_now() + ms;

	do {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	} while (ms_now() < end);
}

static void
raw_send(const void *buf, size_t len, const int *fds, int nfds)
{
	harness_send(raw, buf, len, fds, nfds);
}

static void
raw_send_env(Berth__Envelope *env, const int *fds, int nfds)
{
	harness_send_env(raw, env, fds, nfds);
}

/* Pump the loop until the raw end has a datagram; decode it. */
static Berth__Envelope *
raw_recv(int ms)
{
	uint8_t buf[BERTH_IPC_MAX];
	long end = ms_now() + ms;
	ssize_t n;

	for (;;) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		n = recv(raw, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			return berth__envelope__unpack(NULL, n, buf);
		if (ms_now() > end)
			return NULL;
		usleep(1000);
	}
}

static void
raw_ping(uint64_t id, uint64_t nonce, const int *fds, int nfds)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping ping = BERTH__PING__INIT;

	env.version = BERTH_PROTOCOL_VERSION;
	env.kind = BERTH__KIND__KIND_REQUEST;
	env.request_id = id;
	ping.nonce = nonce;
	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &ping;
	raw_send_env(&env, fds, nfds);
}

/* Expect an error (reply or notice) with this code; free it. */
static void
expect_error(Berth__ErrorCode code, Berth__Kind kind, uint64_t id)
{
	Berth__Envelope *e = raw_recv(2000);

	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(e->error);
	ck_assert_msg(e->error->code == code, "got %s, want %s",
	    ipc_error_name(e->error->code), ipc_error_name(code));
	ck_assert_int_eq(e->kind, kind);
	ck_assert_uint_eq(e->request_id, id);
	ck_assert_ptr_nonnull(e->error->message);
	ck_assert_int_gt(strlen(e->error->message), 0);
	berth__envelope__free_unpacked(e, NULL);
}

/* The connection still works: a ping (with its descriptor) gets a pong. */
static void
expect_alive(uint64_t id)
{
	Berth__Envelope *e;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	raw_ping(id, id * 7, &p[0], 1);
	close(p[0]);
	close(p[1]);
	e = raw_recv(2000);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_null(e->error);
	ck_assert_int_eq(e->body_case, BERTH__ENVELOPE__BODY_PONG);
	ck_assert_uint_eq(e->pong->nonce, id * 7);
	ck_assert_uint_eq(e->request_id, id);
	berth__envelope__free_unpacked(e, NULL);
	ck_assert_int_eq(srv_closed, 0);
}

/* What a client channel saw. */
static int got, code, got_timeout, got_closed, closed_cb;
static uint64_t nonce;

static void
pong_cb(struct chan *c, Berth__Envelope *e, int fd, void *arg)
{
	(void)c;
	(void)arg;
	got++;
	code = e->error ? (int)e->error->code : 0;
	nonce = e->body_case == BERTH__ENVELOPE__BODY_PONG ? e->pong->nonce : 0;
	if (fd >= 0)
		close(fd);
}

static void
fail_cb(struct chan *c, Berth__Envelope *e, int fd, void *arg)
{
	(void)c;
	(void)fd;
	(void)arg;
	ck_assert_ptr_nonnull(e->error);
	if (e->error->code == BERTH__ERROR_CODE__ERROR_TIMEOUT)
		got_timeout++;
	if (e->error->code == BERTH__ERROR_CODE__ERROR_CLOSED)
		got_closed++;
}

static void
cli_close(struct chan *c, const char *why, void *arg)
{
	(void)c;
	(void)why;
	(void)arg;
	closed_cb++;
}

/* chan_ops.on_answer: what it saw, before each request's callback. */
static void
count_answer(struct chan *c, Berth__Envelope__BodyCase request,
    const Berth__Envelope *answer, void *arg)
{
	(void)c;
	(void)arg;
	answers++;
	answered_body = request;
	if (answer->error == NULL)
		answers_ok++;
	else if (answer->error->code == BERTH__ERROR_CODE__ERROR_TIMEOUT)
		answers_timeout++;
	else if (answer->error->code == BERTH__ERROR_CODE__ERROR_CLOSED)
		answers_closed++;
}

START_TEST(request_reply_between_two_channels)
{
	/* Replace the raw end by a second channel: both sides for real. */
	static struct chan_ops cli_ops = { NULL, NULL, ping_takes_fd,
		count_answer };
	chan_reply_cb cb = pong_cb;
	struct chan *cli;
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping ping = BERTH__PING__INIT;
	int p[2], i;

	cli = chan_new(base, raw, "srv", &cli_ops, NULL);
	raw = -1;
	got = 0;
	for (i = 1; i <= 100; i++) {
		ck_assert_int_eq(pipe(p), 0);
		close(p[1]);
		ping.nonce = i;
		env.body_case = BERTH__ENVELOPE__BODY_PING;
		env.ping = &ping;
		ck_assert_int_eq(chan_request(cli, &env, p[0], 2000, cb, NULL),
		    0);
	}
	ck_assert_uint_eq(chan_pending(cli), 100);
	for (i = 0; i < 2000 && got < 100; i++)
		pump(1);
	ck_assert_int_eq(got, 100);
	ck_assert_int_eq(answers, 100);
	ck_assert_int_eq(answers_ok, 100);
	ck_assert_int_eq(answered_body, BERTH__ENVELOPE__BODY_PING);
	ck_assert_int_eq(code, 0);
	ck_assert_uint_eq(nonce, 100);
	ck_assert_int_eq(srv_requests, 100);
	ck_assert_int_eq(srv_fd_cloexec, 1);
	ck_assert_uint_eq(chan_pending(cli), 0);
	/* A request needs a deadline and a body. */
	ck_assert_int_eq(chan_request(cli, &env, -1, 0, cb, NULL), -EINVAL);
	env.body_case = BERTH__ENVELOPE__BODY__NOT_SET;
	ck_assert_int_eq(chan_request(cli, &env, -1, 100, cb, NULL), -EINVAL);
	chan_free(cli);
}
END_TEST

START_TEST(timeout_then_close_fail_pending_requests)
{
	static struct chan_ops cli_ops = { NULL, cli_close, NULL,
		count_answer };
	chan_reply_cb cb = fail_cb;
	struct chan *cli;
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Shutdown sd = BERTH__SHUTDOWN__INIT;
	long t0;

	cli = chan_new(base, raw, "srv", &cli_ops, NULL);
	raw = -1;
	/* The server never answers a Shutdown request. */
	env.body_case = BERTH__ENVELOPE__BODY_SHUTDOWN;
	env.shutdown = &sd;
	t0 = ms_now();
	ck_assert_int_eq(chan_request(cli, &env, -1, 50, cb, NULL), 0);
	while (got_timeout == 0 && ms_now() - t0 < 2000)
		pump(1);
	ck_assert_int_eq(got_timeout, 1);
	ck_assert_int_ge(ms_now() - t0, 45);
	/* A second one is pending when the server goes away. */
	ck_assert_int_eq(chan_request(cli, &env, -1, 5000, cb, NULL), 0);
	pump(10);
	chan_free(srv);
	srv = NULL;
	t0 = ms_now();
	while (closed_cb == 0 && ms_now() - t0 < 2000)
		pump(1);
	ck_assert_int_eq(got_closed, 1);
	ck_assert_int_eq(closed_cb, 1);
	/* The observer saw both ends, with the request's body. */
	ck_assert_int_eq(answers, 2);
	ck_assert_int_eq(answers_timeout, 1);
	ck_assert_int_eq(answers_closed, 1);
	ck_assert_int_eq(answered_body, BERTH__ENVELOPE__BODY_SHUTDOWN);
	ck_assert(chan_closed(cli));
	/* Sending on a closed channel fails cleanly. */
	ck_assert_int_eq(chan_request(cli, &env, -1, 100, cb, NULL), -EPIPE);
	chan_free(cli);
}
END_TEST

START_TEST(descriptor_passing_only_where_expected)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Pong pong = BERTH__PONG__INIT;
	int p[2];
	char c;

	/* Expected: delivered, close-on-exec, usable. */
	expect_alive(1);
	ck_assert_int_eq(srv_fd_cloexec, 1);
	ck_assert_int_ge(srv_last_fd, 0);

	/* A Pong request takes no descriptor: refused and closed. */
	ck_assert_int_eq(pipe(p), 0);
	env.version = BERTH_PROTOCOL_VERSION;
	env.kind = BERTH__KIND__KIND_REQUEST;
	env.request_id = 2;
	env.body_case = BERTH__ENVELOPE__BODY_PONG;
	env.pong = &pong;
	raw_send_env(&env, &p[1], 1);
	close(p[1]);
	expect_error(BERTH__ERROR_CODE__ERROR_BAD_FD, BERTH__KIND__KIND_REPLY, 2);
	/* The channel closed its copy of the write end: we read EOF. */
	ck_assert_int_eq(read(p[0], &c, 1), 0);
	close(p[0]);

	/* A Ping without its descriptor is refused too. */
	raw_ping(3, 3, NULL, 0);
	expect_error(BERTH__ERROR_CODE__ERROR_BAD_FD, BERTH__KIND__KIND_REPLY, 3);
	ck_assert_int_eq(srv_requests, 1);
	expect_alive(4);
}
END_TEST

START_TEST(several_descriptors_are_refused)
{
	int p[2], q[2], fds[3];
	char c;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(pipe(q), 0);
	/* Two fit the control buffer; three are truncated (MSG_CTRUNC). */
	fds[0] = p[1];
	fds[1] = q[1];
	fds[2] = p[1];
	raw_ping(5, 5, fds, 2);
	expect_error(BERTH__ERROR_CODE__ERROR_BAD_FD, BERTH__KIND__KIND_NOTICE, 0);
	raw_ping(6, 6, fds, 3);
	expect_error(BERTH__ERROR_CODE__ERROR_BAD_FD, BERTH__KIND__KIND_NOTICE, 0);
	close(p[1]);
	close(q[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 0);
	ck_assert_int_eq(read(q[0], &c, 1), 0);
	close(p[0]);
	close(q[0]);
	ck_assert_int_eq(srv_requests, 0);
	expect_alive(7);
}
END_TEST

START_TEST(oversized_and_garbage_datagrams)
{
	static uint8_t big[BERTH_IPC_MAX + 100];
	uint8_t junk[64];
	int sz = 4 * BERTH_IPC_MAX, p[2];
	size_t i;
	char c;

	setsockopt(raw, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	memset(big, 0x0a, sizeof(big));
	raw_send(big, sizeof(big), NULL, 0);
	expect_error(BERTH__ERROR_CODE__ERROR_TOO_LARGE,
	    BERTH__KIND__KIND_NOTICE, 0);
	/* Oversized with a descriptor: the descriptor is closed as well. */
	ck_assert_int_eq(pipe(p), 0);
	raw_send(big, sizeof(big), &p[1], 1);
	close(p[1]);
	expect_error(BERTH__ERROR_CODE__ERROR_TOO_LARGE,
	    BERTH__KIND__KIND_NOTICE, 0);
	ck_assert_int_eq(read(p[0], &c, 1), 0);
	close(p[0]);
	expect_alive(10);

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(0xff - i);
	raw_send(junk, sizeof(junk), NULL, 0);
	expect_error(BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
	    BERTH__KIND__KIND_NOTICE, 0);
	/* A valid prefix cut short (a truncated envelope). */
	{
		Berth__Envelope env = BERTH__ENVELOPE__INIT;
		Berth__Ping ping = BERTH__PING__INIT;
		uint8_t buf[256];
		size_t len;

		env.version = 1;
		env.kind = BERTH__KIND__KIND_REQUEST;
		env.request_id = 11;
		ping.nonce = 0x123456789abcULL;
		env.body_case = BERTH__ENVELOPE__BODY_PING;
		env.ping = &ping;
		len = berth__envelope__pack(&env, buf);
		raw_send(buf, len - 3, NULL, 0);
		expect_error(BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
		    BERTH__KIND__KIND_NOTICE, 0);
	}
	/* An empty datagram is bad input, not a hang-up. */
	raw_send("", 0, NULL, 0);
	expect_error(BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
	    BERTH__KIND__KIND_NOTICE, 0);
	ck_assert_int_eq(srv_closed, 0);
	/* Only the liveness ping above reached the owner. */
	ck_assert_int_eq(srv_requests, 1);
	expect_alive(12);
}
END_TEST

START_TEST(bad_envelopes_get_typed_errors)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping ping = BERTH__PING__INIT;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &ping;

	/* Another protocol version. */
	env.version = 99;
	env.kind = BERTH__KIND__KIND_REQUEST;
	env.request_id = 20;
	raw_send_env(&env, &p[0], 1);
	expect_error(BERTH__ERROR_CODE__ERROR_VERSION, BERTH__KIND__KIND_REPLY,
	    20);

	/* No body at all (or one this version does not know). */
	env.version = 1;
	env.request_id = 21;
	env.body_case = BERTH__ENVELOPE__BODY__NOT_SET;
	raw_send_env(&env, NULL, 0);
	expect_error(BERTH__ERROR_CODE__ERROR_UNSUPPORTED,
	    BERTH__KIND__KIND_REPLY, 21);

	/* A request without an id. */
	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.request_id = 0;
	raw_send_env(&env, &p[0], 1);
	expect_error(BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
	    BERTH__KIND__KIND_NOTICE, 0);

	/* An unknown kind. */
	env.kind = (Berth__Kind)42;
	env.request_id = 22;
	raw_send_env(&env, &p[0], 1);
	expect_error(BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
	    BERTH__KIND__KIND_NOTICE, 0);

	/* A reply nobody asked for is dropped without an answer. */
	env.kind = BERTH__KIND__KIND_REPLY;
	env.request_id = 23;
	raw_send_env(&env, NULL, 0);
	/* An error notice is logged, never answered (no error ping-pong). */
	{
		Berth__Envelope n = BERTH__ENVELOPE__INIT;
		Berth__Error err = BERTH__ERROR__INIT;

		n.version = 1;
		n.kind = BERTH__KIND__KIND_NOTICE;
		err.code = BERTH__ERROR_CODE__ERROR_INTERNAL;
		err.message = "peer's complaint";
		n.error = &err;
		raw_send_env(&n, NULL, 0);
	}
	pump(30);
	{
		uint8_t b[64];

		ck_assert_int_lt(recv(raw, b, sizeof(b), MSG_DONTWAIT), 0);
	}
	ck_assert_int_eq(srv_requests, 0);
	ck_assert_int_eq(srv_notices, 0);
	close(p[0]);
	close(p[1]);
	expect_alive(24);
}
END_TEST

START_TEST(oversized_send_is_refused_locally)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Shutdown sd = BERTH__SHUTDOWN__INIT;
	char *reason = malloc(BERTH_IPC_MAX + 1);

	memset(reason, 'r', BERTH_IPC_MAX);
	reason[BERTH_IPC_MAX] = '\0';
	sd.reason = reason;
	env.body_case = BERTH__ENVELOPE__BODY_SHUTDOWN;
	env.shutdown = &sd;
	ck_assert_int_eq(chan_notice(srv, &env, -1), -EMSGSIZE);
	free(reason);
	/* And a normal notice goes through. */
	sd.reason = "bye";
	ck_assert_int_eq(chan_notice(srv, &env, -1), 0);
	{
		Berth__Envelope *e = raw_recv(1000);

		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(e->kind, BERTH__KIND__KIND_NOTICE);
		ck_assert_str_eq(e->shutdown->reason, "bye");
		berth__envelope__free_unpacked(e, NULL);
	}
}
END_TEST

START_TEST(hangup_is_seen)
{
	close(raw);
	raw = -1;
	pump(20);
	ck_assert_int_eq(srv_closed, 1);
	ck_assert(chan_closed(srv));
}
END_TEST

START_TEST(full_socket_queues_then_drains)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Shutdown sd = BERTH__SHUTDOWN__INIT;
	char reason[8000];
	int i, n = 0;
	Berth__Envelope *e;

	memset(reason, 'q', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	sd.reason = reason;
	env.body_case = BERTH__ENVELOPE__BODY_SHUTDOWN;
	env.shutdown = &sd;
	/* Far more than the socket buffer holds: the rest waits in order. */
	for (i = 0; i < 300; i++)
		ck_assert_int_eq(chan_notice(srv, &env, -1), 0);
	while ((e = raw_recv(500)) != NULL) {
		ck_assert_int_eq(e->body_case, BERTH__ENVELOPE__BODY_SHUTDOWN);
		berth__envelope__free_unpacked(e, NULL);
		n++;
	}
	ck_assert_int_eq(n, 300);
}
END_TEST

/* What reply_cb saw of the one request in flight. */
static int replied, reply_code;
static Berth__Envelope__BodyCase reply_body;
static char reply_msg[256];

static void
reply_cb(struct chan *c, Berth__Envelope *e, int fd, void *arg)
{
	(void)c;
	(void)arg;
	replied++;
	reply_code = e->error ? (int)e->error->code : 0;
	snprintf(reply_msg, sizeof(reply_msg), "%s",
	    e->error && e->error->message ? e->error->message : "");
	reply_body = e->body_case;
	if (fd >= 0)
		close(fd);
}

/* Set env's body to an empty message of that case; free with free(). */
static void *
set_body(Berth__Envelope *env, Berth__Envelope__BodyCase body)
{
	const ProtobufCFieldDescriptor *f;
	void *m;

	env->body_case = body;
	if (body == BERTH__ENVELOPE__BODY__NOT_SET)
		return NULL;
	f = protobuf_c_message_descriptor_get_field(
	    &berth__envelope__descriptor, body);
	ck_assert_ptr_nonnull(f);
	m = calloc(1, ((const ProtobufCMessageDescriptor *)
	    f->descriptor)->sizeof_message);
	ck_assert_ptr_nonnull(m);
	protobuf_c_message_init(f->descriptor, m);
	memcpy((char *)env + f->offset, &m, sizeof(m));
	return m;
}

/* Request body req from the peer; it answers with body ans, no error. */
static void
answer_with(Berth__Envelope__BodyCase req, Berth__Envelope__BodyCase ans)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Envelope rep = BERTH__ENVELOPE__INIT;
	Berth__Envelope *got_req;
	void *m, *rm;

	m = set_body(&env, req);
	replied = 0;
	ck_assert_int_eq(chan_request(srv, &env, -1, 2000, reply_cb, NULL), 0);
	free(m);
	got_req = raw_recv(2000);
	ck_assert_ptr_nonnull(got_req);
	rep.version = BERTH_PROTOCOL_VERSION;
	rep.kind = BERTH__KIND__KIND_REPLY;
	rep.request_id = got_req->request_id;
	berth__envelope__free_unpacked(got_req, NULL);
	rm = set_body(&rep, ans);
	raw_send_env(&rep, NULL, 0);
	free(rm);
	while (replied == 0)
		pump(1);
	ck_assert_int_eq(replied, 1);
}

START_TEST(replies_of_the_wrong_body_fail_closed)
{
	const ProtobufCMessageDescriptor *d = &berth__envelope__descriptor;
	Berth__Envelope__BodyCase req, want, wrong;
	char expect[256];
	unsigned i, nreq = 0;

	for (i = 0; i < d->n_fields; i++) {
		if (!(d->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			continue;
		req = d->fields[i].id;
		if ((want = ipc_reply_body(req)) ==
		    BERTH__ENVELOPE__BODY__NOT_SET)
			continue;
		nreq++;
		/* The body the table names gets through as it came. */
		answer_with(req, want);
		ck_assert_msg(reply_code == 0, "%s: %s", ipc_body_name(req),
		    reply_msg);
		ck_assert_int_eq(reply_body, want);
		/* Another body, and none at all, are the caller's error. */
		wrong = want == BERTH__ENVELOPE__BODY_ACK ?
		    BERTH__ENVELOPE__BODY_PONG : BERTH__ENVELOPE__BODY_ACK;
		answer_with(req, wrong);
		ck_assert_int_eq(reply_code, BERTH__ERROR_CODE__ERROR_INTERNAL);
		ck_assert_int_eq(reply_body, BERTH__ENVELOPE__BODY__NOT_SET);
		snprintf(expect, sizeof(expect), "peer answered %s to a %s "
		    "request", ipc_body_name(wrong), ipc_body_name(req));
		ck_assert_str_eq(reply_msg, expect);
		answer_with(req, BERTH__ENVELOPE__BODY__NOT_SET);
		ck_assert_int_eq(reply_code, BERTH__ERROR_CODE__ERROR_INTERNAL);
	}
	/* Hello, ping, shutdown; ten mounter verbs; seventeen registry. */
	ck_assert_uint_eq(nreq, 3 + 10 + 17);
	/* A body no peer serves as a request may only fail. */
	answer_with(BERTH__ENVELOPE__BODY_PLUGIN_STARTED,
	    BERTH__ENVELOPE__BODY_PLUGIN_STARTED);
	ck_assert_int_eq(reply_code, BERTH__ERROR_CODE__ERROR_INTERNAL);
	ck_assert_int_eq(srv_closed, 0);
	expect_alive(1);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("channel");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, request_reply_between_two_channels);
	tcase_add_test(tc, timeout_then_close_fail_pending_requests);
	tcase_add_test(tc, descriptor_passing_only_where_expected);
	tcase_add_test(tc, several_descriptors_are_refused);
	tcase_add_test(tc, oversized_and_garbage_datagrams);
	tcase_add_test(tc, bad_envelopes_get_typed_errors);
	tcase_add_test(tc, oversized_send_is_refused_locally);
	tcase_add_test(tc, hangup_is_seen);
	tcase_add_test(tc, full_socket_queues_then_drains);
	tcase_add_test(tc, replies_of_the_wrong_body_fail_closed);
	return harness_run("channel", tc);
}
