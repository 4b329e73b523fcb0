/*
 * helper.h: what berth-mounter and berth-registry share.
 *
 * Each helper serves exactly one connected SOCK_SEQPACKET socket. This
 * module checks that socket and its peer (SO_PEERCRED), answers the hello
 * handshake, pings and the shutdown notice, and refuses every other
 * request until the hello is done. The helper's own bodies go to its
 * dispatch function.
 */
#ifndef BERTH_HELPER_H
#define BERTH_HELPER_H

#include <stdbool.h>
#include <sys/types.h>

#include "channel.h"

/* In spawn mode the supervisor hands the socket over as this descriptor. */
#define BERTH_HELPER_FD 3

struct helper;

typedef void (*helper_dispatch_fn)(struct helper *h, Berth__Envelope *env,
    int fd);

struct helper {
	const char *name;		/* for logs: "berth-mounter" */
	Berth__Role role;
	struct event_base *base;
	struct chan *chan;
	helper_dispatch_fn dispatch;	/* NULL: only the common bodies */
	bool (*takes_fd)(Berth__Envelope__BodyCase body);
	bool hello_done;
	int exit_code;
	void *arg;
	/* Last work that still needs the channel (answers owed); may be NULL. */
	void (*before_close)(struct helper *h);
	struct chan_ops ops;		/* filled by helper_init() */
};

/*
 * Check that fd is a connected SOCK_SEQPACKET unix socket whose peer is
 * expect_pid (spawn mode: our parent). Returns 0 or -1 with err set.
 */
int helper_check_socket(int fd, pid_t expect_pid, char *err, size_t errlen);
/* Make fd 0 /dev/null and close every descriptor above keep_fd. */
int helper_close_inherited(int keep_fd);
/* Set up the channel on fd; call before any sandboxing that forbids it. */
int helper_init(struct helper *h, int fd);
/* Run until the peer hangs up or says shutdown; returns the exit code. */
int helper_serve(struct helper *h);

#endif
