/*
 * peers.h: the supervisor's link to one helper process (berth-mounter,
 * berth-registry): the hello, pings, the shutdown notice and its end
 * (peers.c). What the supervisor does about it (start the managers, stop
 * in order, exit non-zero) comes back through struct peer_hooks.
 */
#ifndef BERTH_PEERS_H
#define BERTH_PEERS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>

#include "channel.h"
#include "mounter_client.h"
#include "registry_client.h"

/* How long a helper may take to answer the hello, a ping, or to exit. */
#define PEER_TIMEOUT_MS 5000

struct peer;

/* The supervisor's side of every helper's link; ctx is the peer's. */
struct peer_hooks {
	/* It answered the hello. */
	void (*ready)(struct peer *p, void *ctx);
	/* It failed: the supervisor stops, and exits 1, because of why. */
	void (*failed)(struct peer *p, const char *why, void *ctx);
	/* It ended as asked while the supervisor stops: the next one. */
	void (*stopped)(struct peer *p, void *ctx);
	/* Is the supervisor stopping? */
	bool (*stopping)(void *ctx);
	/* A notice the registry client did not take; true when taken. */
	bool (*notice)(struct peer *p, Berth__Envelope *env, void *ctx);
	void *ctx;
};

struct peer {
	const char *name;		/* "berth-mounter" */
	Berth__Role role;
	pid_t pid;
	int status;			/* wait status once exited */
	int fd;				/* our end of its socket, until peer_start() */
	bool spawned;			/* our child (spawn mode), reaped by us */
	bool exited, ready, asked_to_stop;
	struct chan *chan;
	struct chan_ops ops;
	const struct peer_hooks *hooks;
	uint64_t nonce;
	/* berth-registry's: where its event notices go (registry_client.c). */
	struct regclient *client;
	/* berth-mounter's: every request to it (mounter_client.c). */
	struct mclient *mclient;
};

/* Talk to p on fd (taken over) and say hello. 0, or -1. */
int peer_start(struct peer *p, struct event_base *base,
    const struct peer_hooks *hooks, int fd);
/* Ping it, if it is ready; a wrong or missing pong fails it. */
void peer_ping(struct peer *p);
void peer_ask_stop(struct peer *p, const char *reason);
void peer_reaped(struct peer *p, int status);
/* It is gone ("exited with status 1", "connection closed"). */
void peer_ended(struct peer *p, const char *how);

#endif
