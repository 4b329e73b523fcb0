/*
 * api.h: the operator API, HTTP/1.1 and JSON on <run_dir>/api.sock,
 * served with libevent's evhttp, in the spirit of Nomad's /v1/ API.
 *
 * The socket is made by root before the privilege drop (so that it can
 * be given to api_group, a group the supervisor's user need not be in),
 * owned by the supervisor's user, mode 0660. Every request's peer is
 * checked again with SO_PEERCRED: root, the supervisor's own uid and
 * members of the group are served; anyone else gets 403 and a log line.
 *
 * Owns: the routes (one table in api.c), the request checks (methods,
 * bodies, query parameters) and the JSON errors {"code": N, "error":
 * "..."}. Must not: act on anything itself; it reads the managers' state
 * and hands changes to them (allocs_submit, allocs_stop).
 */
#ifndef BERTH_API_H
#define BERTH_API_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"

struct supervisor;
struct api;

#define API_SOCKET_NAME "api.sock"

/*
 * As root, before the drop: bind <run_dir>/api.sock for uid and the
 * group (cfg->api_group, or gid when that is empty), mode 0660, and
 * listen. Returns the descriptor and the group in *group, or -1 with a
 * one-line reason in err.
 */
int api_listen(const struct berth_config *cfg, uid_t uid, gid_t gid,
    gid_t *group, char *err, size_t errlen);
/* Serve on fd (from api_listen); NULL when out of memory. */
struct api *api_new(struct supervisor *sv, int fd, gid_t group);
/* Answers nothing more; unlinks the socket when it can. */
void api_free(struct api *api);

#endif
