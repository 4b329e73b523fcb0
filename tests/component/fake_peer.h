/*
 * fake_peer.h: an in-process berth-registry or berth-mounter for the
 * supervisor's component tests.
 *
 * The fake is the far end of a socketpair, served on the test's own
 * event loop through the real channel (common/channel.c), so the
 * manager under test talks to it through its real registry or mounter
 * client. Every request is kept until the test answers it: at once
 * from a handler, later, out of order, or never. The test can also
 * send notices, and close the link as a dying helper would.
 */
#ifndef BERTH_FAKE_PEER_H
#define BERTH_FAKE_PEER_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

#include "channel.h"

struct fake_peer;

/* One request the fake has received and not answered yet. */
struct fake_req {
	Berth__Envelope *env;		/* the request, whole */
	int fd;				/* a descriptor that came with it */
	struct fake_req *next;
};

/*
 * Called for each request as it arrives. It may answer with
 * fake_reply*() (then req is gone), or leave it held for later.
 */
typedef void (*fake_handler)(struct fake_peer *fp, struct fake_req *req,
    void *arg);

/*
 * A fake named name ("berth-registry"); *client is the supervisor's end
 * of the link, a channel on base for regclient_new() or mclient_new().
 * takes_fd says which bodies carry a descriptor, on either side.
 */
struct fake_peer *fake_peer_new(struct event_base *base, const char *name,
    bool (*takes_fd)(Berth__Envelope__BodyCase), struct chan **client,
    const struct chan_ops *client_ops, void *client_arg);
void fake_peer_free(struct fake_peer *fp);
void fake_peer_handler(struct fake_peer *fp, fake_handler fn, void *arg);

/* Requests held, oldest first; the first with this body, or NULL. */
size_t fake_pending(const struct fake_peer *fp);
struct fake_req *fake_held(struct fake_peer *fp,
    Berth__Envelope__BodyCase body);
/* The n-th held request, from 0, or NULL. */
struct fake_req *fake_nth(struct fake_peer *fp, size_t n);
/* How many requests with this body came, answered or not. */
unsigned fake_count(const struct fake_peer *fp,
    Berth__Envelope__BodyCase body);

/* Answer a held request; the body's case and member are set in env. */
void fake_reply(struct fake_peer *fp, struct fake_req *req,
    Berth__Envelope *env, int fd);
/* Answer with an Ack, whatever the request expected. */
void fake_reply_ack(struct fake_peer *fp, struct fake_req *req);
void fake_reply_error(struct fake_peer *fp, struct fake_req *req,
    Berth__ErrorCode code, const char *msg);
/* Drop a held request unanswered (its caller times out). */
void fake_drop(struct fake_peer *fp, struct fake_req *req);
/* Send a notice (an event, an exit) as the helper would. */
void fake_notice(struct fake_peer *fp, Berth__Envelope *env, int fd);
/* The helper dies: its end closes; held requests are dropped. */
void fake_close(struct fake_peer *fp);

/*
 * The helper dies and the client's end hears it: what the client still
 * waited for is answered ERROR_CLOSED. A test calls it before it frees
 * the manager, so that no call is left in flight to leak.
 */
void fake_hangup(struct fake_peer *fp, struct event_base *base,
    struct chan *client);

/* Run base until cond(arg) holds or ms pass; whether it held. */
bool fake_run_until(struct event_base *base, bool (*cond)(void *),
    void *arg, int ms);

#endif
