/*
 * helper.c: the part of a helper's IPC loop that does not depend on its
 * role (see helper.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "helper.h"

int
helper_check_socket(int fd, pid_t expect_pid, char *err, size_t errlen)
{
	struct ucred cred;
	socklen_t len;
	int type, domain;

	len = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) {
		snprintf(err, errlen, "descriptor %d is not a socket: %s "
		    "(start berth helpers through berth-supervisor)", fd,
		    strerror(errno));
		return -1;
	}
	len = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    domain != AF_UNIX || type != SOCK_SEQPACKET) {
		snprintf(err, errlen, "descriptor %d is not a unix "
		    "SOCK_SEQPACKET socket", fd);
		return -1;
	}
	len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(err, errlen, "SO_PEERCRED on descriptor %d: %s", fd,
		    strerror(errno));
		return -1;
	}
	if (cred.pid != expect_pid) {
		snprintf(err, errlen, "peer of descriptor %d is pid %ld, not "
		    "our parent %ld: refusing it", fd, (long)cred.pid,
		    (long)expect_pid);
		return -1;
	}
	return 0;
}

int
helper_close_inherited(int keep_fd)
{
	int null;

	if ((null = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (null != STDIN_FILENO) {
		if (dup2(null, STDIN_FILENO) < 0) {
			close(null);
			return -errno;
		}
		close(null);
	}
	if (syscall(SYS_close_range, keep_fd + 1, ~0U, 0) < 0)
		return -errno;
	return 0;
}

static void
helper_hello(struct helper *h, Berth__Envelope *env)
{
	Berth__Envelope rep = BERTH__ENVELOPE__INIT;
	Berth__HelloReply hr = BERTH__HELLO_REPLY__INIT;
	Berth__Hello *hello = env->hello;

	if (h->hello_done) {
		chan_reply_error(h->chan, env, BERTH__ERROR_CODE__ERROR_CONFLICT,
		    "hello was already done on this connection");
		return;
	}
	if (hello->protocol_version != BERTH_PROTOCOL_VERSION ||
	    hello->role != BERTH__ROLE__ROLE_SUPERVISOR) {
		log_errx("helper_hello: peer says protocol %u role %d; "
		    "%s speaks protocol %u to a supervisor only: exiting",
		    hello->protocol_version, hello->role, h->name,
		    BERTH_PROTOCOL_VERSION);
		chan_reply_error(h->chan, env, BERTH__ERROR_CODE__ERROR_VERSION,
		    "%s speaks protocol %u with a supervisor", h->name,
		    BERTH_PROTOCOL_VERSION);
		h->exit_code = 1;
		event_base_loopexit(h->base, NULL);
		return;
	}
	hr.protocol_version = BERTH_PROTOCOL_VERSION;
	hr.role = h->role;
	hr.pid = getpid();
	rep.body_case = BERTH__ENVELOPE__BODY_HELLO_REPLY;
	rep.hello_reply = &hr;
	if (chan_reply(h->chan, env, &rep, -1) == 0) {
		h->hello_done = true;
		log_info("helper_hello: supervisor pid %u connected", hello->pid);
	}
}

static void
helper_on_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct helper *h = arg;
	Berth__Envelope rep = BERTH__ENVELOPE__INIT;
	Berth__Pong pong = BERTH__PONG__INIT;

	if (env->body_case == BERTH__ENVELOPE__BODY_SHUTDOWN) {
		log_info("helper_on_message: supervisor asks us to stop (%s)",
		    env->shutdown->reason ? env->shutdown->reason : "");
		if (fd >= 0)
			close(fd);
		if (env->kind == BERTH__KIND__KIND_REQUEST) {
			rep.body_case = BERTH__ENVELOPE__BODY_ACK;
			rep.ack = &(Berth__Ack)BERTH__ACK__INIT;
			chan_reply(c, env, &rep, -1);
		}
		event_base_loopexit(h->base, NULL);
		return;
	}
	if (env->kind != BERTH__KIND__KIND_REQUEST) {
		if (h->dispatch != NULL && h->hello_done) {
			h->dispatch(h, env, fd);
			return;
		}
		log_warnx("helper_on_message: unexpected %s notice; dropped",
		    ipc_body_name(env->body_case));
		if (fd >= 0)
			close(fd);
		return;
	}
	if (env->body_case == BERTH__ENVELOPE__BODY_HELLO) {
		if (fd >= 0)
			close(fd);
		helper_hello(h, env);
		return;
	}
	if (!h->hello_done) {
		log_warnx("helper_on_message: %s before the hello; refused",
		    ipc_body_name(env->body_case));
		if (fd >= 0)
			close(fd);
		chan_reply_error(c, env, BERTH__ERROR_CODE__ERROR_HANDSHAKE,
		    "say hello first");
		return;
	}
	if (env->body_case == BERTH__ENVELOPE__BODY_PING) {
		if (fd >= 0)
			close(fd);
		pong.nonce = env->ping->nonce;
		rep.body_case = BERTH__ENVELOPE__BODY_PONG;
		rep.pong = &pong;
		chan_reply(c, env, &rep, -1);
		return;
	}
	if (h->dispatch != NULL) {
		h->dispatch(h, env, fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	log_warnx("helper_on_message: %s does not serve %s", h->name,
	    ipc_body_name(env->body_case));
	chan_reply_error(c, env, BERTH__ERROR_CODE__ERROR_UNSUPPORTED,
	    "%s does not serve %s", h->name, ipc_body_name(env->body_case));
}

static void
helper_on_close(struct chan *c, const char *why, void *arg)
{
	struct helper *h = arg;

	(void)c;
	log_info("helper_on_close: supervisor connection ended (%s); exiting",
	    why);
	event_base_loopexit(h->base, NULL);
}

static bool
helper_takes_fd(Berth__Envelope__BodyCase body)
{
	(void)body;
	return false;
}

int
helper_init(struct helper *h, int fd)
{
	h->ops.on_message = helper_on_message;
	h->ops.on_close = helper_on_close;
	h->ops.takes_fd = h->takes_fd != NULL ? h->takes_fd : helper_takes_fd;
	if (h->base == NULL && (h->base = event_base_new()) == NULL)
		return -ENOMEM;
	if ((h->chan = chan_new(h->base, fd, "supervisor", &h->ops, h)) == NULL)
		return -ENOMEM;
	return 0;
}

int
helper_serve(struct helper *h)
{
	event_base_dispatch(h->base);
	if (h->before_close != NULL)
		h->before_close(h);
	chan_free(h->chan);
	h->chan = NULL;
	return h->exit_code;
}
