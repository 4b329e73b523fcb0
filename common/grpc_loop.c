/*
 * grpc_loop.c: a gRPC completion queue waited on by one thread and
 * finished on libevent through an eventfd (grpc_loop.h).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/support/time.h>

#include "grpc_loop.h"
#include "log.h"

TAILQ_HEAD(op_list, grpc_loop_op);

struct grpc_loop {
	const char *who;		/* for log lines: "csi", "etcd" */
	grpc_completion_queue *cq;
	pthread_t thread;
	int efd;
	struct event *ev_done;
	pthread_mutex_t lock;		/* guards done */
	struct op_list done;		/* operations the thread handed back */
};

static void *
cq_thread(void *arg)
{
	struct grpc_loop *l = arg;
	struct grpc_loop_op *op;
	uint64_t one = 1;
	grpc_event ev;

	for (;;) {
		ev = grpc_completion_queue_next(l->cq,
		    gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		op = ev.tag;
		op->ok = ev.success != 0;
		pthread_mutex_lock(&l->lock);
		TAILQ_INSERT_TAIL(&l->done, op, entry);
		pthread_mutex_unlock(&l->lock);
		/* Only fails when the counter is full: a wakeup is pending. */
		if (write(l->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("%s: cq_thread: eventfd write", l->who);
	}
	return NULL;
}

static void
done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct grpc_loop *l = arg;
	struct op_list batch = TAILQ_HEAD_INITIALIZER(batch);
	struct grpc_loop_op *op;
	uint64_t n;

	if (read(l->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("%s: done_cb: eventfd read", l->who);
	pthread_mutex_lock(&l->lock);
	TAILQ_CONCAT(&batch, &l->done, entry);
	pthread_mutex_unlock(&l->lock);
	while ((op = TAILQ_FIRST(&batch)) != NULL) {
		TAILQ_REMOVE(&batch, op, entry);
		op->done(op, op->ok);
	}
}

struct grpc_loop *
grpc_loop_new(struct event_base *base, const char *who)
{
	struct grpc_loop *l;
	sigset_t all, old;
	int e;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		fatal("grpc_loop_new: calloc");
	l->who = who;
	TAILQ_INIT(&l->done);
	pthread_mutex_init(&l->lock, NULL);
	if ((l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		log_warn("%s: eventfd", who);
		goto fail;
	}
	l->ev_done = event_new(base, l->efd, EV_READ | EV_PERSIST, done_cb, l);
	if (l->ev_done == NULL || event_add(l->ev_done, NULL) < 0) {
		log_warnx("%s: cannot watch the eventfd", who);
		goto fail;
	}
	grpc_init();
	l->cq = grpc_completion_queue_create_for_next(NULL);

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&l->thread, NULL, cq_thread, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		errno = e;
		log_warn("%s: pthread_create", who);
		grpc_completion_queue_shutdown(l->cq);
		grpc_completion_queue_destroy(l->cq);
		grpc_shutdown();
		goto fail;
	}
	return l;
fail:
	if (l->ev_done != NULL)
		event_free(l->ev_done);
	if (l->efd >= 0)
		close(l->efd);
	pthread_mutex_destroy(&l->lock);
	free(l);
	return NULL;
}

grpc_completion_queue *
grpc_loop_cq(struct grpc_loop *l)
{
	return l->cq;
}

void
grpc_loop_shutdown(struct grpc_loop *l)
{
	/* The queue ends only after every operation is handed back. */
	grpc_completion_queue_shutdown(l->cq);
	pthread_join(l->thread, NULL);
	done_cb(l->efd, EV_READ, l);
}

void
grpc_loop_free(struct grpc_loop *l)
{
	grpc_completion_queue_destroy(l->cq);
	grpc_shutdown();
	event_free(l->ev_done);
	close(l->efd);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* ---- one unary exchange ---- */

void
grpc_unary_clear(struct grpc_unary *u)
{
	if (u->call != NULL)
		grpc_call_unref(u->call);
	u->call = NULL;
	grpc_metadata_array_destroy(&u->initial_md);
	grpc_metadata_array_destroy(&u->trailing_md);
	if (u->send_buf != NULL)
		grpc_byte_buffer_destroy(u->send_buf);
	if (u->recv_buf != NULL)
		grpc_byte_buffer_destroy(u->recv_buf);
	u->send_buf = u->recv_buf = NULL;
	grpc_slice_unref(u->details);
	u->details = grpc_empty_slice();
}

grpc_call_error
grpc_unary_start(struct grpc_unary *u, struct grpc_loop *loop,
    grpc_channel *ch, const char *path, gpr_timespec deadline,
    const uint8_t *req, size_t len, grpc_metadata *md, size_t nmd)
{
	grpc_op ops[6], *op = ops;
	grpc_call_error e;
	grpc_slice data;

	grpc_metadata_array_init(&u->initial_md);
	grpc_metadata_array_init(&u->trailing_md);
	u->details = grpc_empty_slice();
	u->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS,
	    grpc_loop_cq(loop), grpc_slice_from_static_string(path), NULL,
	    deadline, NULL);
	data = grpc_slice_from_copied_buffer((const char *)req, len);
	u->send_buf = grpc_raw_byte_buffer_create(&data, 1);
	grpc_slice_unref(data);

	memset(ops, 0, sizeof(ops));
	op->op = GRPC_OP_SEND_INITIAL_METADATA;
	op->data.send_initial_metadata.count = nmd;
	op->data.send_initial_metadata.metadata = md;
	op++;
	op->op = GRPC_OP_SEND_MESSAGE;
	op->data.send_message.send_message = u->send_buf;
	op++;
	op->op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	op++;
	op->op = GRPC_OP_RECV_INITIAL_METADATA;
	op->data.recv_initial_metadata.recv_initial_metadata = &u->initial_md;
	op++;
	op->op = GRPC_OP_RECV_MESSAGE;
	op->data.recv_message.recv_message = &u->recv_buf;
	op++;
	op->op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	op->data.recv_status_on_client.trailing_metadata = &u->trailing_md;
	op->data.recv_status_on_client.status = &u->status;
	op->data.recv_status_on_client.status_details = &u->details;
	op++;

	if ((e = grpc_call_start_batch(u->call, ops, op - ops, &u->op,
	    NULL)) != GRPC_CALL_OK)
		grpc_unary_clear(u);
	return e;
}

ProtobufCMessage *
grpc_unary_reply(struct grpc_unary *u, const ProtobufCMessageDescriptor *d)
{
	grpc_byte_buffer_reader reader;
	ProtobufCMessage *msg;
	grpc_slice all;

	if (u->recv_buf == NULL ||
	    !grpc_byte_buffer_reader_init(&reader, u->recv_buf))
		return NULL;
	all = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	msg = protobuf_c_message_unpack(d, NULL, GRPC_SLICE_LENGTH(all),
	    GRPC_SLICE_START_PTR(all));
	grpc_slice_unref(all);
	return msg;
}
