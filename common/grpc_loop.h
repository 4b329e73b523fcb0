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
#include <protobuf-c/protobuf-c.h>

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

/*
 * One unary exchange on the queue, as the CSI and etcd clients make
 * them: the request's bytes out and the reply, status and details back,
 * in one batch tagged with op. Embedded in the caller's struct, zeroed
 * but for details (an empty slice) and op.done, before the first start.
 */
struct grpc_unary {
	grpc_call *call;
	grpc_metadata_array initial_md, trailing_md;
	grpc_byte_buffer *send_buf, *recv_buf;
	grpc_status_code status;
	grpc_slice details;
	struct grpc_loop_op op;
};

/*
 * Call path on ch with len bytes of req and nmd metadata (md: the
 * caller's, kept until the call ends), due by deadline. GRPC_CALL_OK, or
 * gRPC's refusal with the exchange cleared again.
 */
grpc_call_error grpc_unary_start(struct grpc_unary *u, struct grpc_loop *,
    grpc_channel *ch, const char *path, gpr_timespec deadline,
    const uint8_t *req, size_t len, grpc_metadata *md, size_t nmd);
/* After a GRPC_STATUS_OK: the reply as d, or NULL (none, or not one). */
ProtobufCMessage *grpc_unary_reply(struct grpc_unary *u,
    const ProtobufCMessageDescriptor *d);
/* What an exchange holds, released; ready for the next start. */
void grpc_unary_clear(struct grpc_unary *u);

#endif
