/*
 * grpc_loop.h: the gRPC C core's completion queue, finished on libevent.
 *
 * gRPC completes operations on a queue that someone must wait on. A
 * grpc_loop owns one queue and one thread that does only that: it puts
 * every finished operation on a locked list and rings an eventfd that the
 * event loop watches, and the loop's thread then runs each operation's
 * done callback. So callers see no threads: everything but the waiting
 * happens on the loop. An eventfd rather than event_active() from the
 * thread: that needs evthread_use_pthreads() before the caller's base was
 * made, a process-wide choice this module should not impose, and a burst
 * of completions shares one wakeup. The thread blocks every signal.
 *
 * Used by the supervisor's CSI client and the registry's etcd client.
 */
#ifndef BERTH_GRPC_LOOP_H
#define BERTH_GRPC_LOOP_H

#include <stdbool.h>
#include <sys/queue.h>

#include <event2/event.h>
#include <grpc/grpc.h>

/*
 * One operation out on the queue: embedded in the caller's own struct,
 * its address the tag given to gRPC. done runs on the loop's thread with
 * whether the operation succeeded (grpc_event.success).
 */
struct grpc_loop_op {
	void (*done)(struct grpc_loop_op *, bool ok);
	bool ok;
	TAILQ_ENTRY(grpc_loop_op) entry;
};

struct grpc_loop;

/* grpc_init(), the queue and its thread; NULL (logged) on failure. */
struct grpc_loop *grpc_loop_new(struct event_base *, const char *who);
grpc_completion_queue *grpc_loop_cq(struct grpc_loop *);
/*
 * Shut the queue down and wait for the thread: operations still out must
 * have been cancelled (they come back first), and their done callbacks
 * run from here. After it, the queue takes nothing new.
 */
void grpc_loop_shutdown(struct grpc_loop *);
/* After grpc_loop_shutdown(): the queue destroyed, grpc_shutdown(). */
void grpc_loop_free(struct grpc_loop *);

#endif
