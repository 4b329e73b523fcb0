/*
 * api.c: the operator API's socket, peer check, routes and replies (see
 * api.h). The handlers live by area in api_node.c, api_alloc.c,
 * api_logs.c and api_events.c.
 *
 * A new route is one line in the table below; a route whose handler is
 * NULL answers 501 (none now). HEAD is served wherever GET is.
 *
 * Every answer of ours is JSON, 405 for each of evhttp's nine methods
 * that a path does not take. A request evhttp cannot parse (a malformed
 * request line or header, a method it does not know, headers or a body
 * over the limits) is answered by libevent 2.1 itself, with its HTML
 * error page (400, 501, 413), before any callback of ours runs; the
 * buffer callback in api_guard.c writes that page again as JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "api.h"
#include "api_int.h"
#include "events.h"
#include "ident.h"
#include "xalloc.h"

#define GET	EVHTTP_REQ_GET
#define PUT	EVHTTP_REQ_PUT
#define DELETE	EVHTTP_REQ_DELETE

struct route {
	const char *pattern;		/* '*' matches one path segment */
	enum evhttp_cmd_type method;
	const char *params;		/* query parameters, "a,b"; NULL none */
	api_handler handler;		/* NULL: 501, not in this build yet */
	bool body;			/* takes a request body */
};

static const struct route routes[] = {
	{ "/v1/status", GET, NULL, api_status, false },
	{ "/v1/health", GET, NULL, api_health, false },
	{ "/v1/plugins", GET, NULL, api_plugins, false },
	{ "/v1/plugin/*", GET, NULL, api_plugin, false },
	{ "/v1/volumes", GET, "namespace", api_volumes, false },
	{ "/v1/volume/*", GET, "namespace", api_volume, false },
	{ "/v1/volume/*", PUT, NULL, api_volume_register, true },
	{ "/v1/volume/*", DELETE, "namespace", api_volume_delete, false },
	{ "/v1/volume/*/create", PUT, NULL, api_volume_create, true },
	{ "/v1/volume/*/expand", PUT, NULL, api_volume_expand, true },
	{ "/v1/volume/*/snapshot", PUT, NULL, api_snapshot_create, true },
	{ "/v1/volume/*/snapshot", DELETE, "namespace,snapshot_id",
	    api_snapshot_delete, false },
	{ "/v1/volume/*/snapshots", GET, "namespace", api_snapshots, false },
	{ "/v1/snapshots", GET, "plugin", api_snapshots, false },
	{ "/v1/allocations", GET, NULL, api_allocs, false },
	{ "/v1/allocations", PUT, NULL, api_alloc_submit, true },
	{ "/v1/allocation/*", GET, NULL, api_alloc, false },
	{ "/v1/allocation/*", DELETE, "force", api_alloc_stop, false },
	{ "/v1/node/drain", GET, NULL, api_drain_get, false },
	{ "/v1/node/drain", PUT, NULL, api_drain_start, false },
	{ "/v1/node/drain", DELETE, NULL, api_drain_stop, false },
	{ "/v1/allocation/*/logs", GET, "task,stream,file,offset",
	    api_alloc_logs, false },
	{ "/v1/drivers", GET, NULL, api_drivers, false },
	{ "/v1/devices", GET, NULL, api_devices, false },
	{ "/v1/events", GET, "index,timeout,epoch", api_events, false },
	{ "/v1/metrics", GET, NULL, api_metrics, false },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static const struct {
	enum evhttp_cmd_type method;
	const char *name;
} methods[] = {
	{ EVHTTP_REQ_GET, "GET" }, { EVHTTP_REQ_POST, "POST" },
	{ EVHTTP_REQ_HEAD, "HEAD" }, { EVHTTP_REQ_PUT, "PUT" },
	{ EVHTTP_REQ_DELETE, "DELETE" }, { EVHTTP_REQ_OPTIONS, "OPTIONS" },
	{ EVHTTP_REQ_PATCH, "PATCH" }, { EVHTTP_REQ_TRACE, "TRACE" },
	{ EVHTTP_REQ_CONNECT, "CONNECT" },
};

static const char *
method_name(enum evhttp_cmd_type m)
{
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (methods[i].method == m)
			return methods[i].name;
	return "?";
}

static const char *
status_text(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

void
api_reply(struct api_call *c, int code, json_t *root)
{
	struct evbuffer *out = evhttp_request_get_output_buffer(c->req);
	struct evkeyvalq *h = evhttp_request_get_output_headers(c->req);
	char index[32];
	char *text;

	/* Only a value jansson refused (logged by api_pack) leaves none. */
	if (root == NULL) {
		code = 500;
		evbuffer_add_printf(out, "{\"code\": 500, \"error\": \"the "
		    "answer could not be written as JSON\"}\n");
	} else {
		text = json_dumps(root, JSON_COMPACT);
		xnonnull(text, "json_dumps");
		json_decref(root);
		evbuffer_add(out, text, strlen(text));
		evbuffer_add(out, "\n", 1);
		free(text);
	}
	snprintf(index, sizeof(index), "%llu",
	    (unsigned long long)events_last(c->d->events));
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "X-Berth-Index", index);
	/* HEAD: the GET's headers, its length, and no body. */
	if (evhttp_request_get_command(c->req) == EVHTTP_REQ_HEAD) {
		snprintf(index, sizeof(index), "%zu", evbuffer_get_length(out));
		evhttp_add_header(h, "Content-Length", index);
		evbuffer_drain(out, evbuffer_get_length(out));
	}
	evhttp_send_reply(c->req, code, status_text(code), NULL);
}

static void
verror(struct api_call *c, int code, json_t *extra, const char *fmt,
    va_list ap)
{
	char msg[1024];
	json_t *root;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	root = extra != NULL ? extra : api_object();
	api_set(root, "code", api_pack("i", code));
	api_set(root, "error", api_pack("s", msg));
	api_reply(c, code, root);
}

void
api_error(struct api_call *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(c, code, NULL, fmt, ap);
	va_end(ap);
}

void
api_error_with(struct api_call *c, int code, json_t *extra, const char *fmt,
    ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(c, code, extra, fmt, ap);
	va_end(ap);
}

const char *
api_param(struct api_call *c, const char *name)
{
	return evhttp_find_header(&c->query, name);
}

int64_t
api_uptime_ms(const struct api *api)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - api->d.started.tv_sec) * 1000 +
	    (now.tv_nsec - api->d.started.tv_nsec) / 1000000;
}

json_t *
api_pack(const char *fmt, ...)
{
	json_error_t err;
	json_t *j;
	va_list ap;

	va_start(ap, fmt);
	j = json_vpack_ex(&err, 0, fmt, ap);
	va_end(ap);
	if (j == NULL && json_error_code(&err) == json_error_out_of_memory)
		oom("json_pack");
	if (j == NULL)
		log_warnx_limited("api: a value left out of an answer: %s",
		    err.text);
	return j;
}

json_t *
api_object(void)
{
	json_t *o = json_object();

	return xnonnull(o, "json_object");
}

json_t *
api_array(void)
{
	json_t *a = json_array();

	return xnonnull(a, "json_array");
}

void
api_set(json_t *o, const char *key, json_t *v)
{
	if (o == NULL) {
		json_decref(v);
		return;
	}
	if (v == NULL || json_object_set_new(o, key, v) == 0)
		return;
	/* A key jansson refuses (not UTF-8) is logged by api_pack. */
	if (api_pack("s", key) != NULL)
		oom("json_object_set");
}

void
api_append(json_t *a, json_t *v)
{
	if (a == NULL) {
		json_decref(v);
		return;
	}
	if (v != NULL && json_array_append_new(a, v) < 0)
		oom("json_array_append");
}

/*
 * Does path match the pattern? A '*' takes one non-empty segment, which
 * goes to *id (percent-decoded into idbuf); *why is NULL when it is an
 * identifier, else what is wrong with it.
 */
static bool
match(const char *pattern, const char *path, const char **id, char *idbuf,
    size_t idlen, const char **why)
{
	const char *p = pattern, *s = path, *end;
	size_t declen;
	char *dec;

	while (*p != '\0') {
		if (*p == '*') {
			end = strchr(s, '/');
			if (end == NULL)
				end = s + strlen(s);
			if (end == s || (size_t)(end - s) >= idlen)
				return false;
			memcpy(idbuf, s, (size_t)(end - s));
			idbuf[end - s] = '\0';
			s = end;
			p++;
			continue;
		}
		if (*p++ != *s++)
			return false;
	}
	if (*s != '\0')
		return false;
	if (strchr(pattern, '*') != NULL) {
		dec = evhttp_uridecode(idbuf, 0, &declen);
		xnonnull(dec, "evhttp_uridecode");
		/* "%00" and "%2F" must not slip through: checked as is. */
		*why = ident_problem(dec, declen);
		snprintf(idbuf, idlen, "%s", dec);
		free(dec);
		*id = idbuf;
	}
	return true;
}

/* Unknown query parameters are refused rather than ignored. */
static int
check_params(struct api_call *c, const struct route *r)
{
	struct evkeyval *kv;
	size_t len;
	const char *p;

	TAILQ_FOREACH(kv, &c->query, next) {
		len = strlen(kv->key);
		for (p = r->params; p != NULL; p = strchr(p, ',')) {
			if (*p == ',')
				p++;
			if (strncmp(p, kv->key, len) == 0 && (p[len] == ',' ||
			    p[len] == '\0'))
				break;
		}
		if (p == NULL) {
			api_error(c, 400, "unknown query parameter \"%s\"; "
			    "%s%s", kv->key, r->params != NULL ? "this route "
			    "takes: " : "this route takes none", r->params ?
			    r->params : "");
			return -1;
		}
	}
	return 0;
}

/* Root, the supervisor's uid, or a member of the group (SO_PEERGROUPS). */
static bool
peer_allowed(struct api *api, struct evhttp_request *req, struct ucred *uc)
{
	struct evhttp_connection *con = evhttp_request_get_connection(req);
	struct bufferevent *bev;
	gid_t groups[256];
	socklen_t len = sizeof(*uc);
	size_t i;
	int fd;

	memset(uc, 0, sizeof(*uc));
	uc->uid = (uid_t)-1;
	if (con == NULL || (bev = evhttp_connection_get_bufferevent(con)) ==
	    NULL || (fd = bufferevent_getfd(bev)) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, uc, &len) < 0)
		return false;
	if (uc->uid == 0 || uc->uid == api->d.uid || uc->gid == api->group)
		return true;
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == api->group)
			return true;
	return false;
}

static void
serve(struct evhttp_request *req, void *arg)
{
	struct api *api = arg;
	struct api_call c = { api, &api->d, req, NULL, { 0 }, NULL, 0 };
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	/* HEAD is answered as GET, without the body (api_reply). */
	enum evhttp_cmd_type want = m == EVHTTP_REQ_HEAD ? GET : m;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	const struct route *r = NULL;
	char idbuf[512], allow[128], *body = NULL;
	const char *path, *query, *id = NULL, *bad_id = NULL;
	struct ucred uc;
	size_t i;

	TAILQ_INIT(&c.query);
	api_conn_busy(api, req);
	if (!peer_allowed(api, req, &uc)) {
		log_warnx_limited("api: refused %s %s from pid %ld uid %ld gid %ld: "
		    "not root, not uid %ld and not in group %ld",
		    method_name(m), evhttp_request_get_uri(req),
		    (long)uc.pid, (long)uc.uid, (long)uc.gid,
		    (long)api->d.uid, (long)api->group);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Connection", "close");
		api_error(&c, 403, "this socket serves root, uid %ld and "
		    "group %ld; you are uid %ld gid %ld", (long)api->d.uid,
		    (long)api->group, (long)uc.uid, (long)uc.gid);
		return;
	}
	path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	if (path == NULL || *path == '\0') {
		api_error(&c, 400, "the request has no path");
		return;
	}
	allow[0] = '\0';
	for (i = 0; i < NROUTES; i++) {
		const char *rid = NULL, *rwhy = NULL;

		if (!match(routes[i].pattern, path, &rid, idbuf,
		    sizeof(idbuf), &rwhy))
			continue;
		if (routes[i].method == want) {
			r = &routes[i];
			id = rid;
			bad_id = rwhy;
			break;
		}
		snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow),
		    "%s%s%s", allow[0] ? ", " : "",
		    method_name(routes[i].method), routes[i].method == GET ?
		    ", HEAD" : "");
	}
	if (r == NULL && allow[0] != '\0') {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Allow", allow);
		api_error(&c, 405, "%s is not allowed on %s; allowed: %s",
		    method_name(m), path, allow);
		return;
	}
	if (r == NULL) {
		api_error(&c, 404, "no such route: %s (the API's routes are "
		    "under /v1/: status, health, plugins, volumes, "
		    "allocations, drivers, devices, events, metrics, node)", path);
		return;
	}
	if (bad_id != NULL) {
		api_error(&c, 400, "the id in %s is not an identifier (1 to %d "
		    "of A-Z a-z 0-9 . _ -): %s", path, BERTH_IDENT_MAX, bad_id);
		return;
	}
	c.id = id;
	query = evhttp_uri_get_query(uri);
	if (query != NULL && evhttp_parse_query_str(query, &c.query) < 0) {
		api_error(&c, 400, "malformed query string: %s", query);
		return;
	}
	if (check_params(&c, r) < 0)
		goto out;
	c.body_len = evbuffer_get_length(in);
	if (c.body_len > 0 && !r->body) {
		api_error(&c, 400, "%s %s takes no request body (%zu bytes "
		    "sent)", method_name(m), r->pattern, c.body_len);
		goto out;
	}
	if (c.body_len > API_MAX_BODY) {
		api_error(&c, 413, "the request body is %zu bytes, over the "
		    "limit of %d bytes", c.body_len, API_MAX_BODY);
		goto out;
	}
	if (c.body_len > 0) {
		body = xmalloc(c.body_len + 1);
		evbuffer_copyout(in, body, c.body_len);
		body[c.body_len] = '\0';
		c.body = body;
	}
	if (r->handler == NULL)
		api_error(&c, 501, "%s %s is not available in this build yet",
		    method_name(m),
		    r->pattern);
	else
		r->handler(&c);
out:
	free(body);
	evhttp_clear_headers(&c.query);
}

int
api_group_id(const struct berth_config *cfg, gid_t dflt, gid_t *group,
    char *err, size_t errlen)
{
	struct group *gr;

	*group = dflt;
	if (cfg->api_group[0] == '\0')
		return 0;
	if ((gr = getgrnam(cfg->api_group)) == NULL) {
		snprintf(err, errlen, "config %s: \"api_group\" names group "
		    "%s, which does not exist: create it or choose another",
		    cfg->path, cfg->api_group);
		return -1;
	}
	*group = gr->gr_gid;
	return 0;
}

/*
 * Bind <run_dir>/api.sock as the user that serves it (never as root: the
 * run directory is that user's). The umask gives mode 0660 from the
 * start; the run directory's set-group-ID bit gives the group (spawn
 * mode), else we set it on a name that is ours, not following a link.
 */
int
api_listen(const struct berth_config *cfg, gid_t group, char *err,
    size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t mask;
	int dir, fd = -1, r;

	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s",
	    cfg->run_dir, API_SOCKET_NAME) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "api socket path under %s is too long",
		    cfg->run_dir);
		return -1;
	}
	if ((dir = open(cfg->run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "run directory %s: %s", cfg->run_dir,
		    strerror(errno));
		return -1;
	}
	/* A socket left by an earlier run goes; anything else stays. */
	if (fstatat(dir, API_SOCKET_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket: "
			    "move it away", sun.sun_path);
			goto fail;
		}
		(void)unlinkat(dir, API_SOCKET_NAME, 0);
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) < 0) {
		snprintf(err, errlen, "api socket: %s", strerror(errno));
		goto fail;
	}
	/* 0660 at once: never reachable by others, not even for a moment. */
	mask = umask(0117);
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(mask);
	if (r < 0 || fstatat(dir, API_SOCKET_NAME, &st,
	    AT_SYMLINK_NOFOLLOW) < 0 || (st.st_gid != group &&
	    fchownat(dir, API_SOCKET_NAME, (uid_t)-1, group,
	    AT_SYMLINK_NOFOLLOW) < 0) || listen(fd, 128) < 0) {
		snprintf(err, errlen, "api socket %s: %s%s", sun.sun_path,
		    strerror(errno), r == 0 && errno == EPERM ? " (giving "
		    "it to api_group: the supervisor's user must be in that "
		    "group, or the run directory set-group-ID to it)" : "");
		goto fail;
	}
	close(dir);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	close(dir);
	return -1;
}

struct api *
api_new(const struct api_deps *d, int fd, gid_t group)
{
	struct evhttp_bound_socket *bound;
	struct api *api;

	api = xcalloc(1, sizeof(*api));
	api->d = *d;
	api->group = group;
	TAILQ_INIT(&api->waiters);
	TAILQ_INIT(&api->conns);
	TAILQ_INIT(&api->fresh);
	snprintf(api->path, sizeof(api->path), "%s/%s", d->run_dir,
	    API_SOCKET_NAME);
	api->http = evhttp_new(d->base);
	xnonnull(api->http, "evhttp_new");
	api_events_init(api);
	api_drain_resume(api);
	api_conns_init(api);
	evhttp_set_allowed_methods(api->http, EVHTTP_REQ_GET |
	    EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
	    EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH |
	    EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT);
	evhttp_set_max_body_size(api->http, API_HARD_MAX_BODY);
	evhttp_set_max_headers_size(api->http, 16 * 1024);
	evhttp_set_timeout(api->http, 60);
	evhttp_set_gencb(api->http, serve, api);
	if ((bound = evhttp_accept_socket_with_handle(api->http, fd)) ==
	    NULL) {
		api_free(api);
		close(fd);
		return NULL;
	}
	api_conns_listen(api, bound);
	log_info("api: serving on %s (root, uid %ld, group %ld; at most %zu "
	    "connections, %d per uid)", api->path, (long)d->uid,
	    (long)group, api->max_conns, API_MAX_CONNS_PER_PEER);
	return api;
}

void
api_free(struct api *api)
{
	if (api == NULL)
		return;
	api_events_free(api);
	api_drain_free(api);
	if (api->http != NULL) {
		evhttp_free(api->http);
		(void)unlink(api->path);
	}
	api_conns_free(api);
	free(api);
}
