/*
 * fake_peer.c: an in-process helper for component tests (fake_peer.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "fake_peer.h"

#define FAKE_BODIES 512

struct fake_peer {
	struct chan *chan;		/* the helper's end */
	struct fake_req *held;		/* oldest first */
	fake_handler fn;
	void *arg;
	unsigned counts[FAKE_BODIES];
	struct chan_ops ops;
};

static void
fake_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct fake_peer *fp = arg;
	struct fake_req *req, **tail;
	uint8_t *buf;
	size_t n;

	(void)c;
	if (env->kind != BERTH__KIND__KIND_REQUEST) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if ((unsigned)env->body_case < FAKE_BODIES)
		fp->counts[env->body_case]++;
	/* A copy of its own: env is freed when this returns. */
	n = berth__envelope__get_packed_size(env);
	if ((buf = malloc(n != 0 ? n : 1)) == NULL ||
	    (req = calloc(1, sizeof(*req))) == NULL)
		abort();
	berth__envelope__pack(env, buf);
	req->env = berth__envelope__unpack(NULL, n, buf);
	free(buf);
	if (req->env == NULL)
		abort();
	req->fd = fd;
	for (tail = &fp->held; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = req;
	if (fp->fn != NULL)
		fp->fn(fp, req, fp->arg);
}

static void
fake_closed(struct chan *c, const char *why, void *arg)
{
	(void)c;
	(void)why;
	(void)arg;
}

struct fake_peer *
fake_peer_new(struct event_base *base, const char *name,
    bool (*takes_fd)(Berth__Envelope__BodyCase), struct chan **client,
    const struct chan_ops *client_ops, void *client_arg)
{
	struct fake_peer *fp;
	int sp[2];

	if ((fp = calloc(1, sizeof(*fp))) == NULL ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
		abort();
	fp->ops.on_message = fake_message;
	fp->ops.on_close = fake_closed;
	fp->ops.takes_fd = takes_fd;
	if ((fp->chan = chan_new(base, sp[1], "supervisor", &fp->ops,
	    fp)) == NULL ||
	    (*client = chan_new(base, sp[0], name, client_ops,
	    client_arg)) == NULL)
		abort();
	return fp;
}

static void
unlink_req(struct fake_peer *fp, struct fake_req *req)
{
	struct fake_req **pp;

	for (pp = &fp->held; *pp != NULL; pp = &(*pp)->next)
		if (*pp == req) {
			*pp = req->next;
			break;
		}
	berth__envelope__free_unpacked(req->env, NULL);
	if (req->fd >= 0)
		close(req->fd);
	free(req);
}

void
fake_peer_free(struct fake_peer *fp)
{
	if (fp == NULL)
		return;
	while (fp->held != NULL)
		unlink_req(fp, fp->held);
	if (fp->chan != NULL)
		chan_free(fp->chan);
	free(fp);
}

void
fake_peer_handler(struct fake_peer *fp, fake_handler fn, void *arg)
{
	fp->fn = fn;
	fp->arg = arg;
}

size_t
fake_pending(const struct fake_peer *fp)
{
	size_t n = 0;

	for (const struct fake_req *r = fp->held; r != NULL; r = r->next)
		n++;
	return n;
}

struct fake_req *
fake_held(struct fake_peer *fp, Berth__Envelope__BodyCase body)
{
	for (struct fake_req *r = fp->held; r != NULL; r = r->next)
		if (r->env->body_case == body)
			return r;
	return NULL;
}

struct fake_req *
fake_nth(struct fake_peer *fp, size_t n)
{
	struct fake_req *r = fp->held;

	while (r != NULL && n-- > 0)
		r = r->next;
	return r;
}

unsigned
fake_count(const struct fake_peer *fp, Berth__Envelope__BodyCase body)
{
	return (unsigned)body < FAKE_BODIES ? fp->counts[body] : 0;
}

void
fake_reply(struct fake_peer *fp, struct fake_req *req, Berth__Envelope *env,
    int fd)
{
	if (fp->chan != NULL)
		chan_reply(fp->chan, req->env, env, fd);
	unlink_req(fp, req);
}

void
fake_reply_ack(struct fake_peer *fp, struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ack ack = BERTH__ACK__INIT;

	env.body_case = BERTH__ENVELOPE__BODY_ACK;
	env.ack = &ack;
	fake_reply(fp, req, &env, -1);
}

void
fake_reply_error(struct fake_peer *fp, struct fake_req *req,
    Berth__ErrorCode code, const char *msg)
{
	if (fp->chan != NULL)
		chan_reply_error(fp->chan, req->env, code, "%s", msg);
	unlink_req(fp, req);
}

void
fake_drop(struct fake_peer *fp, struct fake_req *req)
{
	unlink_req(fp, req);
}

void
fake_notice(struct fake_peer *fp, Berth__Envelope *env, int fd)
{
	if (fp->chan != NULL)
		chan_notice(fp->chan, env, fd);
}

void
fake_close(struct fake_peer *fp)
{
	while (fp->held != NULL)
		unlink_req(fp, fp->held);
	if (fp->chan != NULL) {
		chan_free(fp->chan);
		fp->chan = NULL;
	}
}

static bool
client_closed(void *arg)
{
	return chan_closed(arg);
}

void
fake_hangup(struct fake_peer *fp, struct event_base *base,
    struct chan *client)
{
	fake_close(fp);
	if (!fake_run_until(base, client_closed, client, 2000))
		abort();
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool
fake_run_until(struct event_base *base, bool (*cond)(void *), void *arg,
    int ms)
{
	long long end = now_ms() + ms;

	while (!cond(arg)) {
		if (now_ms() >= end)
			return false;
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (!cond(arg)) {
			struct timespec ts = { 0, 2 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	return true;
}
