/*
 * channel.h: one typed IPC connection on a SOCK_SEQPACKET socket, driven
 * by libevent.
 *
 * One Envelope per datagram; the kernel keeps message boundaries. Every
 * datagram is checked against BERTH_IPC_MAX before it is decoded, and
 * truncated ones (MSG_TRUNC, MSG_CTRUNC) are refused. A descriptor is
 * accepted (SCM_RIGHTS, received with MSG_CMSG_CLOEXEC) only with a body
 * for which ops->takes_fd says so; any other is closed. Such a body carries
 * one descriptor, or exactly ipc_body_fds() of them (chan_take_fd2()). Requests get ids,
 * replies are matched to them, and every request has a deadline. A reply
 * without an error must carry the body that ipc_reply_body() names for
 * its request; any other reaches the callback as ERROR_INTERNAL, so a
 * callback that sees no error may read that body's member unchecked.
 *
 * Bad input from the peer is logged and answered (an error reply to a
 * request, an error notice otherwise); the connection is kept. It ends on
 * EOF or a socket error, and then every pending request fails with
 * ERROR_CLOSED before ops->on_close runs.
 *
 * Descriptors passed to the send functions are owned by the channel from
 * then on (closed after sending, or on failure). Descriptors handed to
 * callbacks are owned by the callback.
 */
#ifndef BERTH_CHANNEL_H
#define BERTH_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "ipc.pb-c.h"
#include "log.h"

#define BERTH_PROTOCOL_VERSION 1
#define BERTH_IPC_MAX (64 * 1024)
/* Requests and notices queued while the socket is full (replies are never
 * dropped: see CHAN_HIGH in channel.c). */
#define BERTH_IPC_QUEUE_MAX 4096

struct chan;

/*
 * A reply, or a local failure (ERROR_TIMEOUT, ERROR_CLOSED, ERROR_INTERNAL
 * for a reply of the wrong body) presented as a reply with env->error set.
 * Without env->error, env carries ipc_reply_body() of the request's body.
 * env is freed when the callback returns.
 */
typedef void (*chan_reply_cb)(struct chan *c, Berth__Envelope *env, int fd,
    void *arg);

struct chan_ops {
	/* A request or notice from the peer; env is freed on return. */
	void (*on_message)(struct chan *c, Berth__Envelope *env, int fd,
	    void *arg);
	/* The connection ended; the channel may be freed from here. */
	void (*on_close)(struct chan *c, const char *why, void *arg);
	/* Does this body carry a descriptor? NULL: no body ever does. */
	bool (*takes_fd)(Berth__Envelope__BodyCase body);
	/*
	 * Optional: every answer to one of our requests (timeouts and
	 * closes included), with the request's body, just before the
	 * request's own callback; for counting, never for acting.
	 */
	void (*on_answer)(struct chan *c, Berth__Envelope__BodyCase request,
	    const Berth__Envelope *answer, void *arg);
};

struct chan *chan_new(struct event_base *base, int fd, const char *peer,
    const struct chan_ops *ops, void *arg);
void chan_free(struct chan *c);
const char *chan_peer(const struct chan *c);
bool chan_closed(const struct chan *c);
size_t chan_pending(const struct chan *c);

/* Send env (body set by the caller) as a request; 0 or -errno. */
int chan_request(struct chan *c, Berth__Envelope *env, int fd,
    unsigned timeout_ms, chan_reply_cb cb, void *arg);
/*
 * The requests made with this callback arg: their replies (or timeouts)
 * still come, but reach no callback. For an owner that goes away first.
 */
void chan_forget(struct chan *c, void *arg);
/* Answer the request req with env's body; 0 or -errno. */
int chan_reply(struct chan *c, const Berth__Envelope *req,
    Berth__Envelope *env, int fd);
/* The same with a second descriptor (fd2 only with fd): ipc_body_fds(). */
int chan_reply2(struct chan *c, const Berth__Envelope *req,
    Berth__Envelope *env, int fd, int fd2);
/*
 * In a callback that got fd, for a body that carries two: the second,
 * the caller's from then on; -1 once taken. Closed if never taken.
 */
int chan_take_fd2(struct chan *c);
int chan_reply_error(struct chan *c, const Berth__Envelope *req,
    Berth__ErrorCode code, const char *fmt, ...) BERTH_PRINTF(4, 5);
/* One-way message; 0 or -errno. */
int chan_notice(struct chan *c, Berth__Envelope *env, int fd);

/* Short names for logs. */
const char *ipc_error_name(Berth__ErrorCode code);
const char *ipc_body_name(Berth__Envelope__BodyCase body);

#endif
