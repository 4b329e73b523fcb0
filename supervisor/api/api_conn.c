/*
 * api_conn.c: the API's connections, counted and bounded (see api_int.h).
 *
 * libevent 2.1's evhttp has no bound on connections (that is 2.2's
 * evhttp_set_max_connections) and no accept hook that gives the
 * descriptor. What 2.1 does give is evhttp_set_bevcb(): evhttp asks us
 * for the bufferevent of every connection it accepts, then sets the
 * descriptor on it. We hold a reference on that bufferevent only until a
 * fresh turn of the loop, right after the accept, reads its descriptor
 * and its peer's uid (SO_PEERCRED); from then on a connection is its
 * descriptor and the socket's inode, which no other open socket shares:
 * when fstat() no longer shows that inode there, evhttp has closed it.
 * (Keeping the bufferevent referenced for longer would keep its event on
 * a descriptor number that evhttp closed and the kernel hands out again.)
 *
 * Bounds: api->max_conns in all, API_MAX_CONNS_PER_PEER per uid. Over a
 * bound, the connection (the peer's own, or anyone's) that has waited
 * longest since it was accepted or last answered, and that no handler
 * is answering now, is shut down (evhttp sees the end and frees it);
 * when none can go, the newcomer gets 503 and is shut down. Each is
 * logged, rate-limited.
 *
 * Must not: free a bufferevent or a connection itself; evhttp does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "api_int.h"
#include "xalloc.h"

struct api_conn {
	struct bufferevent *bev;	/* until admitted, then NULL */
	int fd;
	ino_t ino;			/* the socket's, while fd is it */
	uid_t uid;
	bool closing;
	int busy;			/* requests a handler holds */
	int64_t last_ms;		/* accepted, or last answered */
	TAILQ_ENTRY(api_conn) entry;	/* least recently active first */
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Is c's descriptor still the socket we admitted? */
static bool
alive(const struct api_conn *c)
{
	struct stat st;

	return fstat(c->fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_ino == c->ino;
}

static void
conn_forget(struct api *api, struct api_conn *c)
{
	TAILQ_REMOVE(&api->conns, c, entry);
	api->tracked--;
	if (!c->closing)
		api->nconns--;
	free(c);
}

/* Forget the connections evhttp has ended. */
static void
sweep(struct api *api)
{
	struct api_conn *c, *next;

	for (c = TAILQ_FIRST(&api->conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (!alive(c))
			conn_forget(api, c);
	}
}

static void
shut(struct api *api, struct api_conn *c)
{
	c->closing = true;
	api->nconns--;
	if (alive(c))
		(void)shutdown(c->fd, SHUT_RDWR);
}

/* The least recently active connection that may go: uid's, or anyone's. */
static struct api_conn *
oldest_idle(struct api *api, struct api_conn *except, bool any, uid_t uid)
{
	struct api_conn *c;

	TAILQ_FOREACH(c, &api->conns, entry)
		if (c != except && !c->closing && c->busy == 0 &&
		    (any || c->uid == uid))
			return c;
	return NULL;
}

static size_t
peer_conns(struct api *api, uid_t uid)
{
	struct api_conn *c;
	size_t n = 0;

	TAILQ_FOREACH(c, &api->conns, entry)
		if (!c->closing && c->uid == uid)
			n++;
	return n;
}

/* No room and nothing idle to close: tell the newcomer, and let it go. */
static void
refuse(struct api *api, struct api_conn *c, const char *bound)
{
	static const char body[] = "{\"code\": 503, \"error\": \"too many "
	    "connections; try again later\"}\n";
	char reply[256];
	int n;

	log_warnx_limited("api: refused a connection from uid %ld: %s, and "
	    "none is idle", (long)c->uid, bound);
	/* Best effort: nothing of evhttp's is written on it yet. */
	n = snprintf(reply, sizeof(reply), "HTTP/1.1 503 Service Unavailable"
	    "\r\nContent-Type: application/json\r\nConnection: close\r\n"
	    "Content-Length: %zu\r\n\r\n%s", sizeof(body) - 1, body);
	(void)send(c->fd, reply, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	shut(api, c);
	api->refused++;
}

/*
 * Make room for c under one bound (n of max used, counting c); false
 * when c itself had to go. Counts are made true by a sweep first.
 */
static bool
make_room(struct api *api, struct api_conn *c, bool any, size_t max,
    const char *bound)
{
	struct api_conn *old;
	size_t n;

	if ((any ? api->nconns : peer_conns(api, c->uid)) <= max)
		return true;
	sweep(api);
	for (n = any ? api->nconns : peer_conns(api, c->uid); n > max; n--) {
		if ((old = oldest_idle(api, c, any, c->uid)) == NULL) {
			refuse(api, c, bound);
			return false;
		}
		log_info_limited("api: closed the connection of uid %ld idle "
		    "for %lld ms to make room (%s)", (long)old->uid,
		    (long long)(now_ms() - old->last_ms), bound);
		shut(api, old);
		api->evicted++;
	}
	return true;
}

/* Learn c's descriptor and peer, and count it; false: it is gone. */
static bool
admit(struct api *api, struct api_conn *c)
{
	bufferevent_data_cb rd;
	bufferevent_event_cb ev;
	struct ucred uc;
	socklen_t len = sizeof(uc);
	struct stat st;

	/* bufferevent_free() clears the callbacks: evhttp gave up on it. */
	bufferevent_getcb(c->bev, &rd, NULL, &ev, NULL);
	c->fd = bufferevent_getfd(c->bev);
	bufferevent_decref(c->bev);
	c->bev = NULL;
	if ((rd == NULL && ev == NULL) || c->fd < 0 || fstat(c->fd, &st) < 0 ||
	    !S_ISSOCK(st.st_mode))
		return false;
	c->ino = st.st_ino;
	TAILQ_INSERT_TAIL(&api->conns, c, entry);
	api->tracked++;
	api->nconns++;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0) {
		/* Not a connection we can count: it does not stay. */
		c->uid = (uid_t)-1;
		shut(api, c);
		return true;
	}
	c->uid = uc.uid;
	if (make_room(api, c, false, API_MAX_CONNS_PER_PEER,
	    "the bound per peer"))
		make_room(api, c, true, api->max_conns,
		    "the bound on all connections");
	return true;
}

/* From a fresh turn of the loop, after evhttp has set the descriptors. */
static void
on_admit(evutil_socket_t fd, short what, void *arg)
{
	struct api *api = arg;
	struct api_conn *c;

	(void)fd;
	(void)what;
	/*
	 * Clients that connect and hang up quickly leave entries until the
	 * next sweep: never let them make each count here long.
	 */
	if (api->tracked > 2 * api->max_conns)
		sweep(api);
	while ((c = TAILQ_FIRST(&api->fresh)) != NULL) {
		TAILQ_REMOVE(&api->fresh, c, entry);
		if (!admit(api, c))
			free(c);
	}
}

static struct bufferevent *
new_bev(struct event_base *base, void *arg)
{
	struct api *api = arg;
	struct api_conn *c;

	/* evhttp closes the descriptor itself when the connection ends. */
	c = xcalloc(1, sizeof(*c));
	c->bev = bufferevent_socket_new(base, -1, 0);
	xnonnull(c->bev, "bufferevent_socket_new");
	api_guard(c->bev);
	bufferevent_incref(c->bev);
	c->fd = -1;
	c->last_ms = now_ms();
	TAILQ_INSERT_TAIL(&api->fresh, c, entry);
	event_active(api->admit, 0, 0);
	return c->bev;
}

static struct api_conn *
find(struct api *api, struct evhttp_request *req)
{
	struct evhttp_connection *con = evhttp_request_get_connection(req);
	struct bufferevent *bev;
	struct api_conn *c;
	int fd;

	if (con == NULL || (bev = evhttp_connection_get_bufferevent(con)) ==
	    NULL || (fd = bufferevent_getfd(bev)) < 0)
		return NULL;
	TAILQ_FOREACH(c, &api->conns, entry)
		if (c->fd == fd && alive(c))
			return c;
	return NULL;
}

/* The reply is written: idle again, and the most recently active. */
static void
on_answered(struct evhttp_request *req, void *arg)
{
	struct api *api = arg;
	struct api_conn *c = find(api, req);

	if (c == NULL)
		return;
	if (c->busy > 0)
		c->busy--;
	c->last_ms = now_ms();
	TAILQ_REMOVE(&api->conns, c, entry);
	TAILQ_INSERT_TAIL(&api->conns, c, entry);
}

void
api_conn_busy(struct api *api, struct evhttp_request *req)
{
	struct api_conn *c = find(api, req);

	if (c == NULL)
		return;
	c->busy++;
	evhttp_request_set_on_complete_cb(req, on_answered, api);
}

static void
on_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct api *api = arg;
	struct timeval tv = { 1, 0 };

	(void)fd;
	(void)what;
	sweep(api);
	evtimer_add(api->sweeper, &tv);
}

/*
 * accept() failed for want of descriptors or memory: the socket stays
 * readable, so accepting again at once would only spin. Pause it.
 */
static void
on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct api *api = arg;
	struct timeval tv = { 0, API_ACCEPT_PAUSE_MS * 1000 };
	int e = errno;

	log_warnx_limited("api: accepting a connection: %s; pausing for %d "
	    "ms (%zu connections open)", strerror(e), API_ACCEPT_PAUSE_MS,
	    api->nconns);
	evconnlistener_disable(lev);
	evtimer_add(api->resume, &tv);
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct api *api = arg;

	(void)fd;
	(void)what;
	if (api->listener != NULL)
		evconnlistener_enable(api->listener);
}

void
api_conns_listen(struct api *api, struct evhttp_bound_socket *bound)
{
	api->listener = evhttp_bound_socket_get_listener(bound);
	evconnlistener_set_error_cb(api->listener, on_accept_error);
}

/* Room for the connections, the helpers, tasks' pidfds and the rest. */
static size_t
max_conns(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return API_MAX_CONNS;
	if (rl.rlim_cur <= 2 * API_FD_RESERVE)
		return rl.rlim_cur / 2;
	if (rl.rlim_cur - API_FD_RESERVE < API_MAX_CONNS)
		return rl.rlim_cur - API_FD_RESERVE;
	return API_MAX_CONNS;
}

void
api_conns_init(struct api *api)
{
	struct timeval tv = { 1, 0 };

	TAILQ_INIT(&api->conns);
	TAILQ_INIT(&api->fresh);
	api->max_conns = max_conns();
	api->admit = event_new(api->d.base, -1, 0, on_admit, api);
	xnonnull(api->admit, "event_new");
	api->sweeper = evtimer_new(api->d.base, on_sweep, api);
	xnonnull(api->sweeper, "evtimer_new");
	api->resume = evtimer_new(api->d.base, on_resume, api);
	xnonnull(api->resume, "evtimer_new");
	evtimer_add(api->sweeper, &tv);
	evhttp_set_bevcb(api->http, new_bev, api);
}

/* After evhttp_free(), which ended every connection. */
void
api_conns_free(struct api *api)
{
	struct api_conn *c;

	while ((c = TAILQ_FIRST(&api->fresh)) != NULL) {
		TAILQ_REMOVE(&api->fresh, c, entry);
		bufferevent_decref(c->bev);
		free(c);
	}
	while ((c = TAILQ_FIRST(&api->conns)) != NULL) {
		TAILQ_REMOVE(&api->conns, c, entry);
		free(c);
	}
	if (api->admit != NULL)
		event_free(api->admit);
	if (api->sweeper != NULL)
		event_free(api->sweeper);
	if (api->resume != NULL)
		event_free(api->resume);
}
