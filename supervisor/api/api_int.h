/*
 * api_int.h: what the API's files share (see api.h): the request being
 * answered, the reply helpers and each area's handlers.
 */
#ifndef BERTH_API_INT_H
#define BERTH_API_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "api.h"
#include "log.h"

/* Bodies above this get 413 from us; far above it, from evhttp itself. */
#define API_MAX_BODY		(256 * 1024)
#define API_HARD_MAX_BODY	(4 * API_MAX_BODY)
/* Long polls of /v1/events: default and longest wait, and how many. */
#define API_POLL_DEFAULT_MS	(30 * 1000)
#define API_POLL_MAX_MS		(5 * 60 * 1000)
#define API_POLL_MAX_WAITERS	256

/*
 * Connections (api_conn.c): at most API_MAX_CONNS in all (fewer when the
 * descriptor limit less API_FD_RESERVE is lower), API_MAX_CONNS_PER_PEER
 * per uid; accept pauses API_ACCEPT_PAUSE_MS when it fails.
 */
#define API_MAX_CONNS		4096
#define API_MAX_CONNS_PER_PEER	1024
#define API_FD_RESERVE		256
#define API_ACCEPT_PAUSE_MS	100

struct api_waiter;
struct api_conn;
struct evconnlistener;

struct api {
	struct api_deps d;		/* d.run_dir: read by api_new() only */
	struct evhttp *http;
	gid_t group;
	char path[512];			/* the socket's, to unlink */
	struct event *wake;		/* new events: answer the polls */
	TAILQ_HEAD(, api_waiter) waiters;
	size_t nwaiters;
	TAILQ_HEAD(, api_conn) conns;	/* least recently active first */
	TAILQ_HEAD(, api_conn) fresh;	/* accepted, not yet admitted */
	size_t nconns, max_conns;	/* counted: admitted, not closing */
	size_t tracked;			/* on conns, ended or not */
	unsigned long evicted, refused;
	struct event *admit, *sweeper, *resume;
	struct evconnlistener *listener;
	struct api_drain *drain;	/* NULL until the first drain */
};

/* One request, as a handler sees it. */
struct api_call {
	struct api *api;
	const struct api_deps *d;	/* &api->d */
	struct evhttp_request *req;
	const char *id;			/* the route's '*' segment, or NULL */
	struct evkeyvalq query;
	const char *body;		/* NUL-terminated; NULL when empty */
	size_t body_len;
};

typedef void (*api_handler)(struct api_call *c);

/* Send root (a reference is taken over) with the HTTP status code. */
void api_reply(struct api_call *c, int code, json_t *root);
void api_error(struct api_call *c, int code, const char *fmt, ...)
    BERTH_PRINTF(3, 4);
/* Like api_error, with extra fields (a reference is taken over). */
void api_error_with(struct api_call *c, int code, json_t *extra,
    const char *fmt, ...) BERTH_PRINTF(4, 5);
/* A query parameter, or NULL. */
const char *api_param(struct api_call *c, const char *name);
/* Milliseconds since the supervisor started. */
int64_t api_uptime_ms(const struct api *api);
/*
 * json_pack(), ending the supervisor when memory runs out. NULL, with a
 * log line, only for a value jansson refuses (a NULL string, bad UTF-8):
 * the callers leave such a value out, as they always have.
 */
json_t *api_pack(const char *fmt, ...);
/* Fresh containers: they fail only for want of memory. */
json_t *api_object(void);
json_t *api_array(void);
/*
 * json_object_set_new() and json_array_append_new(), v taken over: a v
 * refused by api_pack() (NULL), a key that is not UTF-8 or a NULL o or a
 * is left out; a failure for want of memory ends the supervisor.
 */
void api_set(json_t *o, const char *key, json_t *v);
void api_append(json_t *a, json_t *v);

/* api_node.c: the supervisor, its plugins, drivers, devices, metrics */
void api_status(struct api_call *c);
void api_health(struct api_call *c);
void api_plugins(struct api_call *c);
void api_plugin(struct api_call *c);
void api_drivers(struct api_call *c);
void api_devices(struct api_call *c);
void api_metrics(struct api_call *c);

/* api_alloc.c */
void api_allocs(struct api_call *c);
void api_alloc(struct api_call *c);
void api_alloc_submit(struct api_call *c);
void api_alloc_stop(struct api_call *c);
/* api_logs.c */
void api_alloc_logs(struct api_call *c);

/* api_volume.c */
void api_volumes(struct api_call *c);
void api_volume(struct api_call *c);
void api_volume_register(struct api_call *c);
void api_volume_create(struct api_call *c);
void api_volume_delete(struct api_call *c);
void api_volume_expand(struct api_call *c);
/* api_snapshot.c */
void api_snapshot_create(struct api_call *c);
void api_snapshot_delete(struct api_call *c);
void api_snapshots(struct api_call *c);

/* api_volstats.c: usage and condition; the volume's "stats" or NULL */
json_t *api_volume_stats(struct volmgr *vm, const char *ns, const char *id);
void api_volume_metrics(struct volmgr *vm, struct evbuffer *out);

/* api_conn.c: every connection counted and bounded */
void api_conns_init(struct api *api);
void api_conns_listen(struct api *api, struct evhttp_bound_socket *bound);
/* A handler has the request: its connection is not idle until answered. */
void api_conn_busy(struct api *api, struct evhttp_request *req);
void api_conns_free(struct api *api);

/* api_guard.c: evhttp's own HTML error pages on bev become JSON. */
struct bufferevent;
void api_guard(struct bufferevent *bev);

/* api_drain.c: PUT, GET and DELETE /v1/node/drain. */
void api_drain_start(struct api_call *c);
void api_drain_get(struct api_call *c);
void api_drain_stop(struct api_call *c);
void api_drain_free(struct api *api);
/* At start: a drain kept from before a restart goes on. */
void api_drain_resume(struct api *api);
/* Draining or drained: new allocations are refused. */
bool api_drain_refuses(const struct api *api);
/* DELETE /v1/allocation/<id> would leave a node plugin's volumes: 409
 * answered, true. */
bool api_drain_guard_stop(struct api_call *c);

/* api_events.c */
void api_events(struct api_call *c);
/* The wake-up for waiting polls, hooked to the event log. */
void api_events_init(struct api *api);
/* Forget the waiting polls (evhttp_free drops their requests). */
void api_events_free(struct api *api);

#endif
