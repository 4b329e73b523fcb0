/*
 * peers.c: the supervisor's side of its links to berth-mounter and
 * berth-registry: the hello handshake, pings, the shutdown notice, and
 * what to do when a helper stops answering or dies.
 *
 * What follows from that is the supervisor's (struct peer_hooks).
 *
 * Must not: signal a helper. After the drop the supervisor has no right
 * to, by design; a helper is stopped by asking, and in the worst case by
 * the end of its socket.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "metrics.h"
#include "peers.h"
#include "spawn.h"

static void
peer_on_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct peer *p = arg;

	(void)c;
	if (fd >= 0)
		close(fd);
	if (p->client != NULL && env->kind == BERTH__KIND__KIND_NOTICE &&
	    regclient_notice(p->client, env))
		return;
	if (env->kind == BERTH__KIND__KIND_NOTICE &&
	    p->hooks->notice(p, env, p->hooks->ctx))
		return;
	log_warnx("peer_on_message: %s sent an unexpected %s; dropped",
	    p->name, ipc_body_name(env->body_case));
}

/* A started or adopted plugin's reply carries its pidfd; a started
 * task's, its pidfd and the shim channel's end (ipc_body_fds()). */
static bool
mounter_takes_fd(Berth__Envelope__BodyCase body)
{
	return body == BERTH__ENVELOPE__BODY_PLUGIN_STARTED ||
	    body == BERTH__ENVELOPE__BODY_TASK_STARTED;
}

/* Every mounter verb's outcome, for GET /v1/metrics. */
static void
mounter_answer(struct chan *c, Berth__Envelope__BodyCase request,
    const Berth__Envelope *answer, void *arg)
{
	(void)c;
	(void)arg;
	if (request == BERTH__ENVELOPE__BODY_HELLO ||
	    request == BERTH__ENVELOPE__BODY_PING)
		return;
	metrics_mount_op(ipc_body_name(request), answer->error == NULL ?
	    "ok" : ipc_error_name(answer->error->code));
}

static void
peer_on_close(struct chan *c, const char *why, void *arg)
{
	struct peer *p = arg;

	(void)c;
	/* Its exit status, reaped on SIGCHLD, is the fuller story. */
	if (!p->hooks->stopping(p->hooks->ctx) && p->spawned)
		log_warnx("peer_on_close: %s (pid %ld): %s", p->name,
		    (long)p->pid, why);
	/* Service mode: not our child; the end of its socket is its end. */
	if (!p->spawned && !p->exited)
		peer_ended(p, why);
}

static bool
reply_failed(struct peer *p, Berth__Envelope *env, const char *what)
{
	if (env->error == NULL)
		return false;
	log_errx("%s: %s (pid %ld): %s: %s", what, p->name, (long)p->pid,
	    ipc_error_name(env->error->code),
	    env->error->message ? env->error->message : "");
	return true;
}

static void
peer_hello_done(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct peer *p = arg;
	char why[160];

	(void)c;
	if (fd >= 0)
		close(fd);
	if (reply_failed(p, env, "peer_hello_done"))
		goto fail;
	if (env->body_case != BERTH__ENVELOPE__BODY_HELLO_REPLY ||
	    env->hello_reply->role != p->role ||
	    env->hello_reply->protocol_version != BERTH_PROTOCOL_VERSION ||
	    (p->spawned && (pid_t)env->hello_reply->pid != p->pid)) {
		log_errx("peer_hello_done: %s (pid %ld) answered the hello "
		    "with something else (%s)", p->name, (long)p->pid,
		    ipc_body_name(env->body_case));
		goto fail;
	}
	/* Service mode: systemd started it; its pid is for the logs. */
	p->pid = (pid_t)env->hello_reply->pid;
	p->ready = true;
	p->hooks->ready(p, p->hooks->ctx);
	return;
fail:
	snprintf(why, sizeof(why), "%s failed its handshake", p->name);
	p->hooks->failed(p, why, p->hooks->ctx);
}

int
peer_start(struct peer *p, struct event_base *base,
    const struct peer_hooks *hooks, int fd)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Hello hello = BERTH__HELLO__INIT;

	p->hooks = hooks;
	p->ops.on_message = peer_on_message;
	p->ops.on_close = peer_on_close;
	if (p->role == BERTH__ROLE__ROLE_MOUNTER) {
		p->ops.takes_fd = mounter_takes_fd;
		p->ops.on_answer = mounter_answer;
	}
	if ((p->chan = chan_new(base, fd, p->name, &p->ops, p)) == NULL) {
		close(fd);
		return -1;
	}
	hello.protocol_version = BERTH_PROTOCOL_VERSION;
	hello.role = BERTH__ROLE__ROLE_SUPERVISOR;
	hello.pid = getpid();
	env.body_case = BERTH__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	return chan_request(p->chan, &env, -1, PEER_TIMEOUT_MS,
	    peer_hello_done, p);
}

static void
peer_pong(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct peer *p = arg;
	char why[160];

	(void)c;
	if (fd >= 0)
		close(fd);
	if (p->hooks->stopping(p->hooks->ctx) || p->exited)
		return;
	if (reply_failed(p, env, "peer_pong") ||
	    env->body_case != BERTH__ENVELOPE__BODY_PONG ||
	    env->pong->nonce != p->nonce) {
		snprintf(why, sizeof(why), "%s does not answer pings",
		    p->name);
		p->hooks->failed(p, why, p->hooks->ctx);
	}
}

void
peer_ping(struct peer *p)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping ping = BERTH__PING__INIT;

	if (!p->ready || p->exited || p->chan == NULL)
		return;
	ping.nonce = ++p->nonce;
	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &ping;
	if (chan_request(p->chan, &env, -1, PEER_TIMEOUT_MS, peer_pong,
	    p) < 0)
		log_warnx("peer_ping: cannot ping %s", p->name);
}

void
peer_ask_stop(struct peer *p, const char *reason)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Shutdown sd = BERTH__SHUTDOWN__INIT;

	p->asked_to_stop = true;
	if (p->chan == NULL || chan_closed(p->chan))
		return;
	sd.reason = (char *)reason;
	env.body_case = BERTH__ENVELOPE__BODY_SHUTDOWN;
	env.shutdown = &sd;
	if (chan_notice(p->chan, &env, -1) < 0)
		log_warnx("peer_ask_stop: cannot tell %s to stop", p->name);
}

void
peer_reaped(struct peer *p, int status)
{
	char how[96];

	p->status = status;
	peer_ended(p, spawn_describe_status(status, how, sizeof(how)));
}

void
peer_ended(struct peer *p, const char *how)
{
	p->exited = true;
	if (p->hooks->stopping(p->hooks->ctx) && p->asked_to_stop) {
		log_info("peer_reaped: %s (pid %ld) %s", p->name, (long)p->pid,
		    how);
		p->hooks->stopped(p, p->hooks->ctx);
	} else {
		char why[192];

		log_errx("peer_reaped: %s (pid %ld) %s", p->name,
		    (long)p->pid, how);
		snprintf(why, sizeof(why), "%s (pid %ld) %s", p->name,
		    (long)p->pid, how);
		p->hooks->failed(p, why, p->hooks->ctx);
	}
}
