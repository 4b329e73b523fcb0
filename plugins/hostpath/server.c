/*
 * server.c: berth-csi-hostpath's gRPC server on the gRPC C core.
 *
 * One thread, one completion queue: ask gRPC for the next call, read its
 * one request message, decode it with protobuf-c, run the handler from
 * the method tables, send the reply and the status. Calls are served one
 * at a time, which keeps the handlers free of locking; a plugin that
 * mounts should not race itself anyway. It owns the socket file: made at
 * start, removed at SIGTERM/SIGINT. It must not interpret requests
 * itself; that is the handlers' business.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

/* grpc_security.h declares its no-argument functions without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <grpc/grpc_security.h>
#pragma GCC diagnostic pop

#include "hostpath.h"
#include "log.h"

#define POLL_MS		100	/* how often the loop looks at signals */

enum rpc_state { RPC_WAIT_CALL, RPC_WAIT_REQUEST, RPC_WAIT_SENT };

struct rpc {
	enum rpc_state state;
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array metadata;
	grpc_byte_buffer *request;
	grpc_byte_buffer *response;
	grpc_slice status_details;
	int cancelled;
	struct rpc_reply reply;
};

struct server {
	struct hostpath *hp;
	grpc_server *server;
	grpc_completion_queue *cq;
	bool stopping;
};

static volatile sig_atomic_t stop_signal;

static void
on_signal(int sig)
{
	stop_signal = sig;
}

void
reply_ok(struct rpc_reply *r, const ProtobufCMessage *msg)
{
	r->len = protobuf_c_message_get_packed_size(msg);
	if ((r->buf = malloc(r->len ? r->len : 1)) == NULL)
		fatal("reply_ok: %zu bytes", r->len);
	protobuf_c_message_pack(msg, r->buf);
	r->status = GRPC_STATUS_OK;
}

void
reply_error(struct rpc_reply *r, grpc_status_code code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	r->status = code;
}

/* "unix:///p", "unix:/p" and "/p" name one socket; grpc wants "unix:/p". */
const char *
endpoint_path(const char *endpoint)
{
	const char *p;

	if (strncmp(endpoint, "unix://", 7) == 0)
		p = endpoint + 7;
	else if (strncmp(endpoint, "unix:", 5) == 0)
		p = endpoint + 5;
	else
		p = endpoint;
	if (p[0] != '/' || strlen(p) > SOCKET_PATH_MAX)
		return NULL;
	return p;
}

static const struct rpc_method *
method_find(grpc_slice path)
{
	const struct rpc_method *tables[] = { identity_methods, node_methods,
		controller_methods, expand_methods, snapshot_methods };
	const struct rpc_method *m;
	size_t i;

	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		for (m = tables[i]; m->path != NULL; m++)
			if (grpc_slice_str_cmp(path, m->path) == 0)
				return m;
	return NULL;
}

static bool
method_known(const char *name)
{
	const struct rpc_method *tables[] = { identity_methods, node_methods,
		controller_methods, expand_methods, snapshot_methods };
	const struct rpc_method *m;
	size_t i;

	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		for (m = tables[i]; m->path != NULL; m++)
			if (strcmp(name, m->name) == 0)
				return true;
	return false;
}

static void
rpc_free(struct rpc *rpc)
{
	if (rpc->call != NULL)
		grpc_call_unref(rpc->call);
	grpc_call_details_destroy(&rpc->details);
	grpc_metadata_array_destroy(&rpc->metadata);
	if (rpc->request != NULL)
		grpc_byte_buffer_destroy(rpc->request);
	if (rpc->response != NULL)
		grpc_byte_buffer_destroy(rpc->response);
	grpc_slice_unref(rpc->status_details);
	free(rpc->reply.buf);
	free(rpc);
}

/* Ask gRPC for the next incoming call. */
static void
rpc_listen(struct server *s)
{
	struct rpc *rpc;
	grpc_call_error e;

	if ((rpc = calloc(1, sizeof(*rpc))) == NULL)
		fatal("rpc_listen");
	rpc->state = RPC_WAIT_CALL;
	rpc->status_details = grpc_empty_slice();
	grpc_call_details_init(&rpc->details);
	grpc_metadata_array_init(&rpc->metadata);
	e = grpc_server_request_call(s->server, &rpc->call, &rpc->details,
	    &rpc->metadata, s->cq, s->cq, rpc);
	if (e != GRPC_CALL_OK)
		fatalx("rpc_listen: grpc_server_request_call failed (%d)", e);
}

static void
rpc_read_request(struct rpc *rpc)
{
	grpc_op op;
	grpc_call_error e;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &rpc->request;
	rpc->state = RPC_WAIT_REQUEST;
	e = grpc_call_start_batch(rpc->call, &op, 1, rpc, NULL);
	if (e != GRPC_CALL_OK)
		fatalx("rpc_read_request: grpc_call_start_batch failed (%d)", e);
}

static ProtobufCMessage *
rpc_decode(struct rpc *rpc, const ProtobufCMessageDescriptor *desc)
{
	grpc_byte_buffer_reader reader;
	ProtobufCMessage *msg;
	grpc_slice all;

	if (rpc->request == NULL)
		return NULL;
	if (!grpc_byte_buffer_reader_init(&reader, rpc->request))
		return NULL;
	all = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	msg = protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(all),
	    GRPC_SLICE_START_PTR(all));
	grpc_slice_unref(all);
	return msg;
}

static void
rpc_dispatch(struct server *s, struct rpc *rpc)
{
	struct hostpath *hp = s->hp;
	struct rpc_reply *r = &rpc->reply;
	const struct rpc_method *m;
	ProtobufCMessage *req;
	char *name;

	r->status = GRPC_STATUS_INTERNAL;
	snprintf(r->message, sizeof(r->message), "handler gave no answer");
	if ((m = method_find(rpc->details.method)) == NULL) {
		name = grpc_slice_to_c_string(rpc->details.method);
		reply_error(r, GRPC_STATUS_UNIMPLEMENTED,
		    "%s: no such method in this plugin", name);
		gpr_free(name);
		return;
	}
	if (m->service != 0 && (hp->mode & m->service) == 0) {
		reply_error(r, GRPC_STATUS_UNIMPLEMENTED,
		    "%s: this plugin runs without the %s service", m->name,
		    m->service == HOSTPATH_NODE ? "Node" : "Controller");
		return;
	}
	if ((req = rpc_decode(rpc, m->request)) == NULL) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "%s: request is missing or is not a %s", m->name,
		    m->request->name);
		return;
	}
	if (hp->fault_exit_in != NULL && strcmp(hp->fault_exit_in,
	    m->name) == 0) {
		log_warnx("exiting in %s, as --fault-exit-in asks", m->name);
		_exit(3);
	}
	log_debug("%s", m->name);
	m->handler(hp, req, r);
	protobuf_c_message_free_unpacked(req, NULL);
	if (hp->fault_slow_reply != NULL && strcmp(hp->fault_slow_reply,
	    m->name) == 0) {
		log_info("%s done; answering %d ms later, as "
		    "--fault-slow-reply asks", m->name,
		    hp->fault_slow_reply_ms);
		usleep((useconds_t)hp->fault_slow_reply_ms * 1000);
	}
	if (r->status != GRPC_STATUS_OK && strncmp(r->message, m->name,
	    strlen(m->name)) == 0)
		log_info("%s", r->message);
	else if (r->status != GRPC_STATUS_OK)
		log_info("%s: %s", m->name, r->message);
}

static void
rpc_send_reply(struct rpc *rpc)
{
	grpc_op ops[4], *op = ops;
	grpc_call_error e;
	grpc_slice data;

	memset(ops, 0, sizeof(ops));
	op->op = GRPC_OP_SEND_INITIAL_METADATA;
	op++;
	if (rpc->reply.status == GRPC_STATUS_OK) {
		data = grpc_slice_from_copied_buffer((char *)rpc->reply.buf,
		    rpc->reply.len);
		rpc->response = grpc_raw_byte_buffer_create(&data, 1);
		grpc_slice_unref(data);
		op->op = GRPC_OP_SEND_MESSAGE;
		op->data.send_message.send_message = rpc->response;
		op++;
	} else
		rpc->status_details = grpc_slice_from_copied_string(
		    rpc->reply.message);
	op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	op->data.send_status_from_server.status = rpc->reply.status;
	op->data.send_status_from_server.status_details =
	    rpc->reply.status == GRPC_STATUS_OK ? NULL : &rpc->status_details;
	op++;
	op->op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op->data.recv_close_on_server.cancelled = &rpc->cancelled;
	op++;
	rpc->state = RPC_WAIT_SENT;
	e = grpc_call_start_batch(rpc->call, ops, op - ops, rpc, NULL);
	if (e != GRPC_CALL_OK)
		fatalx("rpc_send_reply: grpc_call_start_batch failed (%d)", e);
}

/* One completion: move that call one step on. */
static void
rpc_step(struct server *s, struct rpc *rpc, bool success)
{
	switch (rpc->state) {
	case RPC_WAIT_CALL:
		if (!s->stopping)
			rpc_listen(s);
		if (!success || s->stopping)
			break;
		rpc_read_request(rpc);
		return;
	case RPC_WAIT_REQUEST:
		if (!success || s->stopping)
			break;
		rpc_dispatch(s, rpc);
		rpc_send_reply(rpc);
		return;
	case RPC_WAIT_SENT:
		break;
	}
	rpc_free(rpc);
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { 0, 20 * 1000000 };

	for (; ms > 0 && !stop_signal; ms -= 20)
		nanosleep(&ts, NULL);
}

static void
server_stop(struct server *s, const char *path)
{
	grpc_event ev;
	int shutdown_tag;

	s->stopping = true;
	grpc_server_shutdown_and_notify(s->server, s->cq, &shutdown_tag);
	grpc_server_cancel_all_calls(s->server);
	for (;;) {
		ev = grpc_completion_queue_next(s->cq,
		    gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		if (ev.type != GRPC_OP_COMPLETE)
			fatalx("server_stop: completion queue ended early");
		if (ev.tag == &shutdown_tag)
			break;
		rpc_step(s, ev.tag, false);
	}
	grpc_server_destroy(s->server);
	grpc_completion_queue_shutdown(s->cq);
	for (;;) {
		ev = grpc_completion_queue_next(s->cq,
		    gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE)
			rpc_step(s, ev.tag, false);
	}
	grpc_completion_queue_destroy(s->cq);
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn("server_stop: unlink %s", path);
}

int
server_run(struct hostpath *hp, const char *endpoint)
{
	struct server s = { .hp = hp };
	grpc_server_credentials *creds;
	struct sigaction sa;
	grpc_event ev;
	const char *path;
	char addr[SOCKET_PATH_MAX + 8];

	if (hp->fault_exit_in != NULL && !method_known(hp->fault_exit_in))
		fatalx("--fault-exit-in %s: no such RPC (give its name, as "
		    "NodeGetInfo)", hp->fault_exit_in);
	if (hp->fault_slow_reply != NULL && !method_known(hp->fault_slow_reply))
		fatalx("--fault-slow-reply %s: no such RPC (give its name, as "
		    "NodePublishVolume)", hp->fault_slow_reply);
	if ((path = endpoint_path(endpoint)) == NULL)
		fatalx("endpoint %s: not unix:///absolute/path of at most "
		    "%d bytes", endpoint, SOCKET_PATH_MAX);
	snprintf(addr, sizeof(addr), "unix:%s", path);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	grpc_init();
	/* A socket left by a killed predecessor would make the bind fail. */
	if (unlink(path) < 0 && errno != ENOENT)
		fatal("unlink stale socket %s", path);
	s.cq = grpc_completion_queue_create_for_next(NULL);
	s.server = grpc_server_create(NULL, NULL);
	grpc_server_register_completion_queue(s.server, s.cq, NULL);
	creds = grpc_insecure_server_credentials_create();
	if (grpc_server_add_http2_port(s.server, addr, creds) == 0)
		fatalx("listen on %s failed (does the directory exist, is "
		    "another plugin serving it?)", addr);
	grpc_server_credentials_release(creds);
	grpc_server_start(s.server);
	log_info("berth-csi-hostpath pid %ld listening on %s",
	    (long)getpid(), addr);

	if (hp->fault_slow_start_ms > 0) {
		log_info("serving nothing for %d ms (--fault-slow-start-ms)",
		    hp->fault_slow_start_ms);
		sleep_ms(hp->fault_slow_start_ms);
	}
	rpc_listen(&s);
	while (!stop_signal) {
		ev = grpc_completion_queue_next(s.cq, gpr_time_add(
		    gpr_now(GPR_CLOCK_MONOTONIC),
		    gpr_time_from_millis(POLL_MS, GPR_TIMESPAN)), NULL);
		if (ev.type == GRPC_OP_COMPLETE)
			rpc_step(&s, ev.tag, ev.success != 0);
	}
	log_info("stopping on signal %d", (int)stop_signal);
	server_stop(&s, path);
	grpc_shutdown_blocking();
	return 0;
}
