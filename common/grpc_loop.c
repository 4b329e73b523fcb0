/*
 * grpc_loop.c: a gRPC completion queue waited on by one thread and
 * finished on libevent through an eventfd (grpc_loop.h).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/eventfd.h>

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
