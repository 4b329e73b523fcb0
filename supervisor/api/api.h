/*
 * api.h: the operator API, HTTP/1.1 and JSON on <run_dir>/api.sock,
 * served with libevent's evhttp, in the spirit of Nomad's /v1/ API.
 *
 * The socket is made by the supervisor's user after the privilege drop,
 * never by root, mode 0660 from the start; in spawn mode the run
 * directory (the user's, set-group-ID to api_group) gives it the group,
 * a group the user need not be in. Every request's peer is
 * checked again with SO_PEERCRED: root, the supervisor's own uid and
 * members of the group are served; anyone else gets 403 and a log line.
 *
 * Owns: the routes (one table in api.c), the request checks (methods,
 * bodies, query parameters) and the JSON errors {"code": N, "error":
 * "..."}. Must not: act on anything itself; it reads the managers' state
 * and hands changes to them (allocs_submit, allocs_stop), all named in
 * struct api_deps: it never sees the supervisor's own state.
 */
#ifndef BERTH_API_H
#define BERTH_API_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <sys/types.h>

#include <event2/event.h>

#include "config.h"

struct api;
struct allocs;
struct csimgr;
struct devmgr;
struct drivermgr;
struct events;
struct regclient;
struct volmgr;

#define API_SOCKET_NAME "api.sock"

/*
 * The group that may use the API: cfg->api_group's id, or dflt when that
 * is empty. 0, or -1 with a one-line reason in err (no such group).
 */
int api_group_id(const struct berth_config *cfg, gid_t dflt, gid_t *group,
    char *err, size_t errlen);
/*
 * Unprivileged, after the drop: bind <run_dir>/api.sock, mode 0660,
 * group group, and listen. The descriptor, or -1 with a one-line reason
 * in err.
 */
int api_listen(const struct berth_config *cfg, gid_t group, char *err,
    size_t errlen);
/* A helper's link, as GET /v1/status and /v1/health show it. */
struct api_helper {
	const char *name;		/* "berth-mounter" */
	pid_t pid;
	bool ready, exited;
};

/* The helpers, in this order. */
enum { API_HELPER_MOUNTER, API_HELPER_REGISTRY, API_NHELPERS };

/*
 * What the API reads and whom it hands changes to. The managers and the
 * registry client outlive the API; run_dir is copied.
 */
struct api_deps {
	struct event_base *base;
	const char *run_dir;		/* the socket's directory */
	const char *data_dir;		/* where a drain is kept */
	uid_t uid;			/* served, with root and the group */
	struct timespec started;	/* CLOCK_MONOTONIC, for the uptime */
	struct allocs *allocs;		/* list, read, submit, stop */
	struct volmgr *volmgr;		/* register, create, delete */
	struct csimgr *csimgr;		/* the active plugin instances */
	struct devmgr *devmgr;		/* devices */
	struct drivermgr *drivers;	/* task drivers */
	struct events *events;		/* the event log, long polls */
	struct regclient *registry;	/* volumes, read and listed */
	/* Is the supervisor stopping? */
	bool (*stopping)(void *ctx);
	/* The helpers' links now, API_NHELPERS of them. */
	void (*helpers)(void *ctx, struct api_helper h[API_NHELPERS]);
	void *ctx;
};

/* Serve on fd (from api_listen), taken over; NULL when evhttp cannot. */
struct api *api_new(const struct api_deps *d, int fd, gid_t group);
/* Answers nothing more; unlinks the socket when it can. */
void api_free(struct api *api);

#endif
