/*
 * channel.c: typed request/reply IPC over SOCK_SEQPACKET (see channel.h).
 *
 * Owns: the socket's read and write events, the queue of datagrams the
 * kernel could not take yet, and the table of requests awaiting replies.
 * Must not: trust anything the peer sends. Every datagram is bounded,
 * decoded by protobuf-c only, and checked for version, kind, body and
 * descriptor before a callback sees it.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "ipc_reply.h"

/* Datagrams handled per wake-up, so one busy peer cannot starve others. */
#define CHAN_BATCH 64
/*
 * Back-pressure: with this many replies queued (the peer is not reading
 * them), stop reading its requests until half have gone. A reply is
 * never dropped: each request read makes at most one, so the queue of
 * replies stays under CHAN_HIGH + CHAN_BATCH.
 */
#define CHAN_HIGH (BERTH_IPC_QUEUE_MAX / 2)

struct pending {
	TAILQ_ENTRY(pending) entry;
	struct chan *chan;
	uint64_t id;
	Berth__Envelope__BodyCase body;
	chan_reply_cb cb;
	void *arg;
	struct event *timer;
};

struct outmsg {
	TAILQ_ENTRY(outmsg) entry;
	uint8_t *buf;
	size_t len;
	int fd, fd2;
	bool reply;
};

struct chan {
	struct event_base *base;
	int fd;
	char peer[32];
	const struct chan_ops *ops;
	void *arg;
	struct event *rev, *wev, *defer;
	uint64_t next_id;
	TAILQ_HEAD(, pending) pending;
	TAILQ_HEAD(, outmsg) outq;
	size_t npending, nout, nreplies;
	bool paused;		/* reading stopped: too many replies queued */
	uint8_t *rbuf;
	int depth;		/* callbacks in progress */
	bool closed, free_later;
	int fd2;		/* a message's second descriptor, in dispatch */
	char why[128];		/* why a deferred close happens */
};

static void chan_read(evutil_socket_t, short, void *);
static void chan_write(evutil_socket_t, short, void *);
static void chan_deferred(evutil_socket_t, short, void *);
static void chan_close(struct chan *c, const char *why);

const char *
ipc_error_name(Berth__ErrorCode code)
{
	const ProtobufCEnumValue *v;

	v = protobuf_c_enum_descriptor_get_value(&berth__error_code__descriptor,
	    code);
	return v != NULL ? v->name : "ERROR_UNKNOWN_CODE";
}

const char *
ipc_body_name(Berth__Envelope__BodyCase body)
{
	const ProtobufCFieldDescriptor *f;

	if (body == BERTH__ENVELOPE__BODY__NOT_SET)
		return "(none)";
	f = protobuf_c_message_descriptor_get_field(&berth__envelope__descriptor,
	    body);
	return f != NULL ? f->name : "(unknown)";
}

struct chan *
chan_new(struct event_base *base, int fd, const char *peer,
    const struct chan_ops *ops, void *arg)
{
	struct chan *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->base = base;
	c->fd = fd;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->ops = ops;
	c->arg = arg;
	c->next_id = 1;
	c->fd2 = -1;
	TAILQ_INIT(&c->pending);
	TAILQ_INIT(&c->outq);
	if (evutil_make_socket_nonblocking(fd) < 0 ||
	    (c->rbuf = malloc(BERTH_IPC_MAX)) == NULL ||
	    (c->rev = event_new(base, fd, EV_READ | EV_PERSIST, chan_read,
	    c)) == NULL ||
	    (c->wev = event_new(base, fd, EV_WRITE, chan_write, c)) == NULL ||
	    (c->defer = event_new(base, -1, 0, chan_deferred, c)) == NULL ||
	    event_add(c->rev, NULL) < 0) {
		if (c->rev != NULL)
			event_free(c->rev);
		if (c->wev != NULL)
			event_free(c->wev);
		if (c->defer != NULL)
			event_free(c->defer);
		free(c->rbuf);
		free(c);
		return NULL;
	}
	return c;
}

static void
chan_destroy(struct chan *c)
{
	struct outmsg *o;

	c->free_later = false;
	chan_close(c, NULL);
	while ((o = TAILQ_FIRST(&c->outq)) != NULL) {
		TAILQ_REMOVE(&c->outq, o, entry);
		if (o->fd >= 0)
			close(o->fd);
		if (o->fd2 >= 0)
			close(o->fd2);
		free(o->buf);
		free(o);
	}
	event_free(c->rev);
	event_free(c->wev);
	event_free(c->defer);
	if (c->fd >= 0)
		close(c->fd);
	free(c->rbuf);
	free(c);
}

void
chan_free(struct chan *c)
{
	if (c == NULL)
		return;
	if (c->depth > 0) {
		/* Inside one of our callbacks: free when it returns. */
		c->free_later = true;
		c->ops = NULL;
		return;
	}
	chan_destroy(c);
}

const char *
chan_peer(const struct chan *c)
{
	return c->peer;
}

bool
chan_closed(const struct chan *c)
{
	return c->closed;
}

size_t
chan_pending(const struct chan *c)
{
	return c->npending;
}

/* Callback bracket: the channel outlives any chan_free() made inside. */
static void
enter(struct chan *c)
{
	c->depth++;
}

static bool
leave(struct chan *c)
{
	if (--c->depth == 0 && c->free_later) {
		chan_destroy(c);
		return false;
	}
	return !c->free_later;
}

static void
deliver_local(struct chan *c, struct pending *p, Berth__ErrorCode code,
    const char *msg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Error err = BERTH__ERROR__INIT;

	env.version = BERTH_PROTOCOL_VERSION;
	env.request_id = p->id;
	env.kind = BERTH__KIND__KIND_REPLY;
	err.code = code;
	err.message = (char *)msg;
	env.error = &err;
	if (c->ops != NULL && c->ops->on_answer != NULL)
		c->ops->on_answer(c, p->body, &env, c->arg);
	p->cb(c, &env, -1, p->arg);
}

static void
pending_remove(struct chan *c, struct pending *p)
{
	TAILQ_REMOVE(&c->pending, p, entry);
	c->npending--;
	event_free(p->timer);
}

static void
chan_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct pending *p = arg;
	struct chan *c = p->chan;
	char msg[128];

	(void)fd;
	(void)ev;
	pending_remove(c, p);
	log_warnx("chan_timeout: %s did not answer %s request %llu in time",
	    c->peer, ipc_body_name(p->body), (unsigned long long)p->id);
	snprintf(msg, sizeof(msg), "%s did not answer in time", c->peer);
	enter(c);
	if (c->ops != NULL)
		deliver_local(c, p, BERTH__ERROR_CODE__ERROR_TIMEOUT, msg);
	free(p);
	leave(c);
}

/*
 * Stop all I/O, fail every pending request with ERROR_CLOSED and tell the
 * owner. why == NULL: quietly, from chan_free().
 */
static void
chan_close(struct chan *c, const char *why)
{
	struct pending *p;
	char msg[160];

	if (c->closed)
		return;
	c->closed = true;
	event_del(c->rev);
	event_del(c->wev);
	event_del(c->defer);
	snprintf(msg, sizeof(msg), "connection to %s closed%s%s", c->peer,
	    why != NULL ? ": " : "", why != NULL ? why : "");
	enter(c);
	while ((p = TAILQ_FIRST(&c->pending)) != NULL) {
		pending_remove(c, p);
		if (why != NULL && c->ops != NULL)
			deliver_local(c, p, BERTH__ERROR_CODE__ERROR_CLOSED, msg);
		free(p);
	}
	if (why != NULL && c->ops != NULL && c->ops->on_close != NULL)
		c->ops->on_close(c, why, c->arg);
	leave(c);
}

static void
chan_deferred(evutil_socket_t fd, short ev, void *arg)
{
	struct chan *c = arg;

	(void)fd;
	(void)ev;
	chan_close(c, c->why);
}

/* Close from inside a call the owner made: finish that call first. */
static void
chan_fail_later(struct chan *c, const char *why)
{
	if (c->closed || c->why[0] != '\0')
		return;
	snprintf(c->why, sizeof(c->why), "%s", why);
	event_active(c->defer, 0, 0);
}

/* fd2 goes only with fd. */
static int
send_one(struct chan *c, const uint8_t *buf, size_t len, int fd, int fd2)
{
	struct msghdr msg = { 0 };
	struct iovec iov = { (void *)buf, len };
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct cmsghdr *cmsg;
	int fds[2] = { fd, fd2 };
	size_t nfd = fd2 >= 0 ? 2 : 1;

	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		memset(&cm, 0, sizeof(cm));
		msg.msg_control = cm.space;
		msg.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(cmsg), fds, nfd * sizeof(int));
	}
	if (sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

static void
chan_write(evutil_socket_t sfd, short ev, void *arg)
{
	struct chan *c = arg;
	struct outmsg *o;
	char why[96];
	int r;

	(void)sfd;
	(void)ev;
	while ((o = TAILQ_FIRST(&c->outq)) != NULL) {
		r = send_one(c, o->buf, o->len, o->fd, o->fd2);
		if (r == -EAGAIN || r == -EWOULDBLOCK || r == -ENOBUFS) {
			event_add(c->wev, NULL);
			return;
		}
		TAILQ_REMOVE(&c->outq, o, entry);
		c->nout--;
		c->nreplies -= o->reply;
		if (o->fd >= 0)
			close(o->fd);
		if (o->fd2 >= 0)
			close(o->fd2);
		free(o->buf);
		free(o);
		if (r < 0) {
			snprintf(why, sizeof(why), "send: %s", strerror(-r));
			chan_close(c, why);
			return;
		}
		if (c->paused && c->nreplies < CHAN_HIGH / 2 && !c->closed) {
			c->paused = false;
			event_add(c->rev, NULL);
		}
	}
}

/* Pack and send env, or queue it when the socket is full. */
static int
chan_send(struct chan *c, Berth__Envelope *env, int fd, int fd2)
{
	struct outmsg *o;
	uint8_t *buf;
	size_t len;
	char why[96];
	int r;

	if (c->closed || c->why[0] != '\0') {
		r = -EPIPE;
		goto fail;
	}
	len = berth__envelope__get_packed_size(env);
	if (len > BERTH_IPC_MAX) {
		log_warnx("chan_send: %s message to %s is %zu bytes, over the "
		    "%d-byte cap", ipc_body_name(env->body_case), c->peer, len,
		    BERTH_IPC_MAX);
		r = -EMSGSIZE;
		goto fail;
	}
	if ((buf = malloc(len ? len : 1)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	berth__envelope__pack(env, buf);
	if (TAILQ_EMPTY(&c->outq)) {
		r = send_one(c, buf, len, fd, fd2);
		if (r == 0) {
			if (fd >= 0)
				close(fd);
			if (fd2 >= 0)
				close(fd2);
			free(buf);
			return 0;
		}
		if (r != -EAGAIN && r != -EWOULDBLOCK && r != -ENOBUFS) {
			free(buf);
			snprintf(why, sizeof(why), "send: %s", strerror(-r));
			chan_fail_later(c, why);
			goto fail;
		}
	}
	/* Replies are bounded by back-pressure (chan_read), never dropped. */
	if ((c->nout >= BERTH_IPC_QUEUE_MAX &&
	    env->kind != BERTH__KIND__KIND_REPLY) ||
	    (o = calloc(1, sizeof(*o))) == NULL) {
		free(buf);
		log_warnx("chan_send: queue to %s is full", c->peer);
		r = -ENOBUFS;
		goto fail;
	}
	o->buf = buf;
	o->len = len;
	o->fd = fd;
	o->fd2 = fd2;
	o->reply = env->kind == BERTH__KIND__KIND_REPLY;
	TAILQ_INSERT_TAIL(&c->outq, o, entry);
	c->nout++;
	c->nreplies += o->reply;
	event_add(c->wev, NULL);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (fd2 >= 0)
		close(fd2);
	return r;
}

/* A forgotten request's reply: only its descriptor needs closing. */
static void
forgotten(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	(void)c;
	(void)env;
	(void)arg;
	if (fd >= 0)
		close(fd);
}

void
chan_forget(struct chan *c, void *arg)
{
	struct pending *p;

	if (c == NULL)
		return;
	TAILQ_FOREACH(p, &c->pending, entry)
		if (p->arg == arg) {
			p->cb = forgotten;
			p->arg = NULL;
		}
}

int
chan_request(struct chan *c, Berth__Envelope *env, int fd,
    unsigned timeout_ms, chan_reply_cb cb, void *arg)
{
	struct pending *p;
	struct timeval tv;
	int r;

	if (timeout_ms == 0 || cb == NULL ||
	    env->body_case == BERTH__ENVELOPE__BODY__NOT_SET) {
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->timer = evtimer_new(c->base, chan_timeout, p)) == NULL) {
		free(p);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	env->version = BERTH_PROTOCOL_VERSION;
	env->kind = BERTH__KIND__KIND_REQUEST;
	env->request_id = c->next_id++;
	env->error = NULL;
	if ((r = chan_send(c, env, fd, -1)) < 0) {
		event_free(p->timer);
		free(p);
		return r;
	}
	p->chan = c;
	p->id = env->request_id;
	p->body = env->body_case;
	p->cb = cb;
	p->arg = arg;
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	evtimer_add(p->timer, &tv);
	TAILQ_INSERT_TAIL(&c->pending, p, entry);
	c->npending++;
	return 0;
}

int
chan_reply(struct chan *c, const Berth__Envelope *req, Berth__Envelope *env,
    int fd)
{
	return chan_reply2(c, req, env, fd, -1);
}

int
chan_reply2(struct chan *c, const Berth__Envelope *req, Berth__Envelope *env,
    int fd, int fd2)
{
	env->version = BERTH_PROTOCOL_VERSION;
	env->kind = BERTH__KIND__KIND_REPLY;
	env->request_id = req->request_id;
	if (fd < 0 && fd2 >= 0) {
		close(fd2);
		return -EINVAL;
	}
	return chan_send(c, env, fd, fd2);
}

int
chan_take_fd2(struct chan *c)
{
	int fd = c->fd2;

	c->fd2 = -1;
	return fd;
}

static int
send_error(struct chan *c, Berth__Kind kind, uint64_t id,
    Berth__ErrorCode code, const char *fmt, va_list ap)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Error err = BERTH__ERROR__INIT;
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	env.version = BERTH_PROTOCOL_VERSION;
	env.kind = kind;
	env.request_id = id;
	err.code = code;
	err.message = msg;
	env.error = &err;
	return chan_send(c, &env, -1, -1);
}

int
chan_reply_error(struct chan *c, const Berth__Envelope *req,
    Berth__ErrorCode code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = send_error(c, BERTH__KIND__KIND_REPLY, req->request_id, code, fmt,
	    ap);
	va_end(ap);
	return r;
}

/* Tell the peer what was wrong with something that had no usable id. */
static void
notice_error(struct chan *c, Berth__ErrorCode code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	send_error(c, BERTH__KIND__KIND_NOTICE, 0, code, fmt, ap);
	va_end(ap);
}

int
chan_notice(struct chan *c, Berth__Envelope *env, int fd)
{
	env->version = BERTH_PROTOCOL_VERSION;
	env->kind = BERTH__KIND__KIND_NOTICE;
	env->request_id = 0;
	return chan_send(c, env, fd, -1);
}

static bool
takes_fd(struct chan *c, Berth__Envelope__BodyCase body)
{
	return c->ops != NULL && c->ops->takes_fd != NULL &&
	    c->ops->takes_fd(body);
}

static void
handle_reply(struct chan *c, Berth__Envelope *env, int fd)
{
	struct pending *p;
	char msg[160];

	TAILQ_FOREACH(p, &c->pending, entry)
		if (p->id == env->request_id)
			break;
	if (p == NULL) {
		log_warnx_limited(
		    "handle_reply: %s sent a reply to request %llu, "
		    "which is not pending (late or bogus); dropped", c->peer,
		    (unsigned long long)env->request_id);
		if (fd >= 0)
			close(fd);
		return;
	}
	pending_remove(c, p);
	if (env->error == NULL &&
	    env->body_case != ipc_reply_body(p->body)) {
		/* Fail closed: no caller reads a union member not sent. */
		snprintf(msg, sizeof(msg), "%s answered %s to a %s request",
		    c->peer, ipc_body_name(env->body_case),
		    ipc_body_name(p->body));
		log_warnx_limited("handle_reply: %s (request %llu)", msg,
		    (unsigned long long)p->id);
		if (fd >= 0)
			close(fd);
		deliver_local(c, p, BERTH__ERROR_CODE__ERROR_INTERNAL, msg);
	} else if (fd >= 0 && !takes_fd(c, env->body_case)) {
		log_warnx_limited(
		    "handle_reply: %s sent a descriptor with a %s reply; "
		    "closed it", c->peer, ipc_body_name(env->body_case));
		close(fd);
		deliver_local(c, p, BERTH__ERROR_CODE__ERROR_BAD_FD,
		    "reply carried an unexpected descriptor");
	} else if (env->error == NULL && fd < 0 &&
	    takes_fd(c, env->body_case)) {
		deliver_local(c, p, BERTH__ERROR_CODE__ERROR_BAD_FD,
		    "reply lacks its descriptor");
	} else {
		if (c->ops != NULL && c->ops->on_answer != NULL)
			c->ops->on_answer(c, p->body, env, c->arg);
		p->cb(c, env, fd, p->arg);
	}
	free(p);
}

/* Check one decoded envelope and hand it to its owner. */
static void
dispatch(struct chan *c, Berth__Envelope *env, int fd)
{
	bool is_req = env->kind == BERTH__KIND__KIND_REQUEST;

	if (env->version != BERTH_PROTOCOL_VERSION) {
		log_warnx_limited(
		    "dispatch: %s speaks protocol version %u, not %u",
		    c->peer, env->version, BERTH_PROTOCOL_VERSION);
		if (is_req)
			chan_reply_error(c, env, BERTH__ERROR_CODE__ERROR_VERSION,
			    "protocol version %u is not %u", env->version,
			    BERTH_PROTOCOL_VERSION);
		goto drop;
	}
	switch (env->kind) {
	case BERTH__KIND__KIND_REPLY:
		handle_reply(c, env, fd);
		return;
	case BERTH__KIND__KIND_NOTICE:
		if (env->error != NULL &&
		    env->body_case == BERTH__ENVELOPE__BODY__NOT_SET) {
			/* The peer's word on something we sent: never answered. */
			log_warnx_limited(
			    "dispatch: %s reports %s: %s", c->peer,
			    ipc_error_name(env->error->code),
			    env->error->message ? env->error->message : "");
			goto drop;
		}
		break;
	case BERTH__KIND__KIND_REQUEST:
		if (env->request_id == 0) {
			log_warnx_limited(
			    "dispatch: %s sent a request without an id",
			    c->peer);
			notice_error(c, BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
			    "request without an id");
			goto drop;
		}
		break;
	default:
		log_warnx_limited(
		    "dispatch: %s sent a message of unknown kind %d",
		    c->peer, env->kind);
		notice_error(c, BERTH__ERROR_CODE__ERROR_BAD_REQUEST,
		    "unknown message kind %d", env->kind);
		goto drop;
	}
	if (env->body_case == BERTH__ENVELOPE__BODY__NOT_SET) {
		log_warnx_limited(
		    "dispatch: %s sent a %s with no body, or a body "
		    "type this version does not know", c->peer,
		    is_req ? "request" : "notice");
		if (is_req)
			chan_reply_error(c, env,
			    BERTH__ERROR_CODE__ERROR_UNSUPPORTED,
			    "no body, or an unknown body type");
		goto drop;
	}
	if (fd >= 0 && !takes_fd(c, env->body_case)) {
		log_warnx_limited(
		    "dispatch: %s sent a descriptor with %s, which takes "
		    "none; closed it", c->peer, ipc_body_name(env->body_case));
		if (is_req)
			chan_reply_error(c, env, BERTH__ERROR_CODE__ERROR_BAD_FD,
			    "%s takes no descriptor",
			    ipc_body_name(env->body_case));
		goto drop;
	}
	if (fd < 0 && takes_fd(c, env->body_case)) {
		log_warnx_limited("dispatch: %s sent %s without its descriptor",
		    c->peer, ipc_body_name(env->body_case));
		if (is_req)
			chan_reply_error(c, env, BERTH__ERROR_CODE__ERROR_BAD_FD,
			    "%s needs a descriptor",
			    ipc_body_name(env->body_case));
		goto drop;
	}
	if (c->ops != NULL && c->ops->on_message != NULL) {
		c->ops->on_message(c, env, fd, c->arg);
		return;
	}
drop:
	if (fd >= 0)
		close(fd);
}

/* Take the descriptors out of a received control buffer. */
static int
collect_fds(struct msghdr *msg, int *fds, int max)
{
	struct cmsghdr *cmsg;
	int n = 0, i, cnt, f;

	for (cmsg = CMSG_FIRSTHDR(msg); cmsg != NULL;
	    cmsg = CMSG_NXTHDR(msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < cnt; i++) {
			memcpy(&f, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = f;
			else
				close(f);
		}
	}
	return n;
}

/* A zero-length read is EOF only if the peer really hung up. */
static bool
peer_hung_up(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLRDHUP };

	if (poll(&pfd, 1, 0) < 0)
		return true;
	return (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static void
chan_read(evutil_socket_t sfd, short ev, void *arg)
{
	struct chan *c = arg;
	Berth__Envelope *env;
	struct msghdr msg;
	struct iovec iov;
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	int fds[4], nfd, i, batch;
	ssize_t n;
	char why[96];

	(void)ev;
	enter(c);
	for (batch = 0; batch < CHAN_BATCH && !c->closed; batch++) {
		if (c->nreplies >= CHAN_HIGH) {
			/* chan_write reads on once the peer has caught up. */
			c->paused = true;
			event_del(c->rev);
			break;
		}
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = c->rbuf;
		iov.iov_len = BERTH_IPC_MAX;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cm.space;
		msg.msg_controllen = sizeof(cm.space);
		n = recvmsg(sfd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				break;
			snprintf(why, sizeof(why), "receive: %s",
			    strerror(errno));
			chan_close(c, why);
			break;
		}
		nfd = collect_fds(&msg, fds, 4);
		if (n == 0 && nfd == 0 && peer_hung_up(sfd)) {
			chan_close(c, "peer hung up");
			break;
		}
		if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || nfd > 2) {
			for (i = 0; i < nfd; i++)
				close(fds[i]);
			if (msg.msg_flags & MSG_TRUNC) {
				log_warnx_limited(
				    "chan_read: %s sent a datagram over "
				    "the %d-byte cap; dropped", c->peer,
				    BERTH_IPC_MAX);
				notice_error(c,
				    BERTH__ERROR_CODE__ERROR_TOO_LARGE,
				    "datagram over the %d-byte cap",
				    BERTH_IPC_MAX);
			} else {
				log_warnx_limited(
				    "chan_read: %s sent more than one "
				    "descriptor; dropped", c->peer);
				notice_error(c, BERTH__ERROR_CODE__ERROR_BAD_FD,
				    "at most two descriptors per message");
			}
			continue;
		}
		env = n > 0 ? berth__envelope__unpack(NULL, n, c->rbuf) : NULL;
		if (env == NULL || (nfd == 2 &&
		    ipc_body_fds(env->body_case) != 2)) {
			log_warnx_limited(
			    "chan_read: %s sent %zd bytes that do not "
			    "decode as an envelope, or two descriptors with a "
			    "body that takes fewer; dropped", c->peer, n);
			for (i = 0; i < nfd; i++)
				close(fds[i]);
			notice_error(c, env == NULL ?
			    BERTH__ERROR_CODE__ERROR_BAD_REQUEST :
			    BERTH__ERROR_CODE__ERROR_BAD_FD,
			    "undecodable datagram of %zd bytes, or two "
			    "descriptors where fewer belong", n);
			if (env != NULL)
				berth__envelope__free_unpacked(env, NULL);
			continue;
		}
		/* One of two is none: dispatch() finds the descriptor missing. */
		if (nfd == 1 && ipc_body_fds(env->body_case) == 2) {
			close(fds[0]);
			nfd = 0;
		}
		c->fd2 = nfd == 2 ? fds[1] : -1;
		dispatch(c, env, nfd >= 1 ? fds[0] : -1);
		if (c->fd2 >= 0)
			close(c->fd2);
		c->fd2 = -1;
		berth__envelope__free_unpacked(env, NULL);
		if (c->free_later)
			break;
	}
	leave(c);
}
