/*
 * test_api.c: the operator API alone, through struct api_deps, served
 * on a real unix socket in a temporary run directory: the route and
 * request checks, /v1/health from the deps' callbacks, /v1/events long
 * polls on a real event log, and volumes read through the real registry
 * client from an in-process registry that answers now, late, out of
 * order, with an error, never (it dies), or after the client has gone.
 *
 * /v1/drivers and /v1/devices read a real driver manager (the real
 * berth-shim, no mounter) and device manager (an empty sysfs).
 *
 * Not covered here: the routes that read the alloc runner, the CSI
 * manager or the volume manager (status, metrics, plugins, allocations,
 * volume register/create/delete): those managers are built from struct
 * supervisor until their own dependency structs land.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <check.h>
#include <jansson.h>

#include "api.h"
#include "devmgr.h"
#include "drivermgr.h"
#include "events.h"
#include "fake_peer.h"
#include "harness.h"
#include "registry_client.h"

/* What the deps' callbacks report, set by each test. */
static bool stopping_now;
static struct api_helper helpers_now[API_NHELPERS];

static bool
stopping(void *ctx)
{
	(void)ctx;
	return stopping_now;
}

static void
helpers(void *ctx, struct api_helper h[API_NHELPERS])
{
	(void)ctx;
	memcpy(h, helpers_now, sizeof(helpers_now));
}

/*
 * alloc_runner.c still calls supervisor_stop() (main's) until its own
 * dependency struct lands; nothing here reaches it.
 */
struct supervisor;
void supervisor_stop(struct supervisor *sv, int exit_code, const char *why);
void
supervisor_stop(struct supervisor *sv, int exit_code, const char *why)
{
	(void)sv;
	ck_abort_msg("supervisor_stop(%d, %s) reached from the API", exit_code,
	    why);
}

/* One API under test, with its event log and registry. */
struct rig {
	struct event_base *base;
	struct berth_config cfg;
	char *dir;
	struct events *events;
	struct fake_peer *registry;
	struct chan *chan;
	struct regclient *rc;
	struct devmgr *devmgr;		/* on an empty sysfs */
	struct drivermgr *drivers;	/* the real shim; no mounter */
	char shim[512];
	struct api *api;
};

/* Serve uid (with root and group) from the test's own run directory. */
static void
rig_up_as(struct rig *r, uid_t uid, gid_t group)
{
	static const struct chan_ops ops = { NULL, NULL, NULL, NULL };
	struct drivermgr_conf dc = { 0 };
	struct api_deps d = { 0 };
	char err[256], *sys;
	int fd;

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(config_defaults(&r->cfg), 0);
	r->dir = harness_tmpdir("api");
	free(r->cfg.run_dir);
	r->cfg.run_dir = strdup(r->dir);
	ck_assert_ptr_nonnull(r->base = event_base_new());
	ck_assert_ptr_nonnull(r->events = events_new());
	r->registry = fake_peer_new(r->base, "berth-registry", NULL, &r->chan,
	    &ops, NULL);
	ck_assert_ptr_nonnull(r->rc = regclient_new(r->base, r->chan, 2000));
	ck_assert_int_ge(asprintf(&sys, "%s/sys", r->dir), 0);
	ck_assert_int_eq(mkdir(sys, 0755), 0);
	free(r->cfg.sysfs_root);
	r->cfg.sysfs_root = sys;
	r->cfg.plugin_retry_initial_ms = 10;
	ck_assert_ptr_nonnull(r->devmgr = devmgr_new(r->base, &r->cfg));
	snprintf(r->shim, sizeof(r->shim), "%s/berth-shim", r->dir);
	ck_assert_int_eq(symlink(harness_bin("berth-shim"), r->shim), 0);
	dc.shim = r->shim;
	dc.fingerprint_ms = 20;
	dc.retry_initial_ms = 20;
	dc.retry_max_ms = 100;
	ck_assert_ptr_nonnull(r->drivers = drivermgr_new(r->base, &dc));
	fd = api_listen(&r->cfg, getgid(), err, sizeof(err));
	ck_assert_msg(fd >= 0, "api_listen: %s", err);
	d.base = r->base;
	d.run_dir = r->cfg.run_dir;
	d.uid = uid;
	clock_gettime(CLOCK_MONOTONIC, &d.started);
	d.events = r->events;
	d.registry = r->rc;
	d.devmgr = r->devmgr;
	d.drivers = r->drivers;
	d.stopping = stopping;
	d.helpers = helpers;
	ck_assert_ptr_nonnull(r->api = api_new(&d, fd, group));
	stopping_now = false;
	helpers_now[API_HELPER_MOUNTER] = (struct api_helper){
	    "berth-mounter", 11, true, false };
	helpers_now[API_HELPER_REGISTRY] = (struct api_helper){
	    "berth-registry", 12, true, false };
}

static void
rig_up(struct rig *r)
{
	rig_up_as(r, getuid(), getgid());
}

static void
rig_down(struct rig *r)
{
	api_free(r->api);
	drivermgr_free(r->drivers);
	devmgr_free(r->devmgr);
	regclient_free(r->rc);
	chan_free(r->chan);
	fake_peer_free(r->registry);
	events_free(r->events);
	event_base_free(r->base);
	harness_rmtree(r->dir);
	free(r->dir);
	config_free(&r->cfg);
}

/* A client on the socket; the API closes after each answer. */
struct http {
	int fd;
	char buf[65536];
	size_t len;
	bool eof;
	char req[64];			/* its first line, for messages */
	char *out;			/* the request, sent as the API reads */
	size_t outlen, sent;
};

/* Send what the socket takes now, without blocking the loop. */
static void
http_pump(struct http *h)
{
	ssize_t n;

	while (h->sent < h->outlen) {
		n = send(h->fd, h->out + h->sent, h->outlen - h->sent,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n <= 0)
			break;
		h->sent += (size_t)n;
	}
}

static void
http_send(struct rig *r, struct http *h, const char *req)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	memset(h, 0, sizeof(*h));
	snprintf(h->req, sizeof(h->req), "%.*s", (int)strcspn(req, "\r"),
	    req);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s", r->dir,
	    API_SOCKET_NAME);
	ck_assert_int_ge(h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
	    0), 0);
	ck_assert_int_eq(connect(h->fd, (struct sockaddr *)&sun,
	    sizeof(sun)), 0);
	ck_assert_int_eq(fcntl(h->fd, F_SETFL, O_NONBLOCK), 0);
	h->out = strdup(req);
	h->outlen = strlen(req);
	http_pump(h);
}

static bool
http_done(void *arg)
{
	struct http *h = arg;
	ssize_t n;

	http_pump(h);
	while (!h->eof && h->len < sizeof(h->buf) - 1) {
		n = recv(h->fd, h->buf + h->len, sizeof(h->buf) - 1 - h->len,
		    0);
		if (n > 0)
			h->len += (size_t)n;
		else if (n == 0 || errno != EAGAIN)
			h->eof = true;
		else
			break;
	}
	h->buf[h->len] = '\0';
	return h->eof;
}

/* Run until the answer is whole: its status; body gets the JSON. */
static int
http_wait(struct rig *r, struct http *h, json_t **body)
{
	const char *b;
	int code = 0;

	ck_assert_msg(fake_run_until(r->base, http_done, h, 5000),
	    "no whole answer in 5s to %.60s; got: %s", h->req, h->buf);
	close(h->fd);
	free(h->out);
	ck_assert_int_eq(sscanf(h->buf, "HTTP/1.1 %d", &code), 1);
	if (body != NULL) {
		ck_assert_ptr_nonnull(b = strstr(h->buf, "\r\n\r\n"));
		*body = json_loads(b + 4, 0, NULL);
		ck_assert_msg(*body != NULL, "not JSON: %s", b + 4);
	}
	return code;
}

/* One whole request: its status, and its JSON body in *body. */
static int
http(struct rig *r, const char *method, const char *path, const char *body,
    json_t **out)
{
	struct http h;
	char *req;

	ck_assert_int_ge(asprintf(&req, "%s %s HTTP/1.1\r\nHost: berth\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n%s", method, path,
	    body != NULL ? strlen(body) : 0, body != NULL ? body : ""), 0);
	http_send(r, &h, req);
	free(req);
	return http_wait(r, &h, out);
}

static const char *
error_of(json_t *o)
{
	return json_string_value(json_object_get(o, "error"));
}

START_TEST(test_routes_and_checks)
{
	struct rig r;
	json_t *o;
	char *big;

	rig_up(&r);
	ck_assert_int_eq(http(&r, "GET", "/v1/nothing", NULL, &o), 404);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "code")), 404);
	ck_assert_ptr_nonnull(strstr(error_of(o), "no such route"));
	json_decref(o);
	ck_assert_int_eq(http(&r, "POST", "/v1/health", NULL, &o), 405);
	ck_assert_ptr_nonnull(strstr(error_of(o), "allowed: GET"));
	json_decref(o);
	ck_assert_int_eq(http(&r, "GET", "/v1/volume/a%2Fb", NULL, &o), 400);
	ck_assert_ptr_nonnull(strstr(error_of(o), "not an identifier"));
	json_decref(o);
	ck_assert_int_eq(http(&r, "GET", "/v1/health?x=1", NULL, &o), 400);
	ck_assert_ptr_nonnull(strstr(error_of(o), "unknown query parameter"));
	json_decref(o);
	ck_assert_int_eq(http(&r, "GET", "/v1/health", "{}", &o), 400);
	ck_assert_ptr_nonnull(strstr(error_of(o), "takes no request body"));
	json_decref(o);
	big = malloc(300 * 1024);
	memset(big, 'x', 300 * 1024 - 1);
	big[300 * 1024 - 1] = '\0';
	ck_assert_int_eq(http(&r, "PUT", "/v1/allocations", big, &o), 413);
	json_decref(o);
	free(big);
	/* Nothing of that reached the registry. */
	ck_assert_uint_eq(fake_pending(r.registry), 0);
	rig_down(&r);
}
END_TEST

START_TEST(test_health_from_callbacks)
{
	struct rig r;
	json_t *o;

	rig_up(&r);
	ck_assert_int_eq(http(&r, "GET", "/v1/health", NULL, &o), 200);
	ck_assert(json_is_true(json_object_get(o, "healthy")));
	json_decref(o);
	helpers_now[API_HELPER_MOUNTER].ready = false;
	ck_assert_int_eq(http(&r, "GET", "/v1/health", NULL, &o), 503);
	ck_assert_str_eq(error_of(o), "berth-mounter is not ready yet");
	ck_assert(json_is_false(json_object_get(o, "healthy")));
	json_decref(o);
	helpers_now[API_HELPER_MOUNTER].ready = true;
	helpers_now[API_HELPER_REGISTRY].exited = true;
	ck_assert_int_eq(http(&r, "GET", "/v1/health", NULL, &o), 503);
	ck_assert_str_eq(error_of(o), "berth-registry is gone");
	json_decref(o);
	stopping_now = true;
	ck_assert_int_eq(http(&r, "GET", "/v1/health", NULL, &o), 503);
	ck_assert_str_eq(error_of(o), "the supervisor is stopping");
	json_decref(o);
	rig_down(&r);
}
END_TEST

/*
 * A stranger (neither root, the served uid nor in the group) gets 403;
 * root is served whatever the uid and group.
 */
START_TEST(test_peer_check)
{
	struct rig r;
	json_t *o;

	rig_up_as(&r, getuid() + 1000, getgid() + 1000);
	if (getuid() == 0) {
		ck_assert_int_eq(http(&r, "GET", "/v1/health", NULL, &o), 200);
	} else {
		ck_assert_int_eq(http(&r, "GET", "/v1/health", NULL, &o), 403);
		ck_assert_ptr_nonnull(strstr(error_of(o), "this socket serves "
		    "root"));
	}
	json_decref(o);
	rig_down(&r);
}
END_TEST

static bool
waiting(void *arg)
{
	struct rig *r = arg;

	event_base_loop(r->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	return false;
}

START_TEST(test_events_long_poll)
{
	struct rig r;
	struct http h;
	json_t *o, *list;

	rig_up(&r);
	events_record(r.events, "alloc", "started", "a1", "t1", "", "first");
	ck_assert_int_eq(http(&r, "GET", "/v1/events?index=0", NULL, &o),
	    200);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "index")), 1);
	list = json_object_get(o, "events");
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
	    list, 0), "alloc")), "a1");
	ck_assert_ptr_null(json_object_get(json_array_get(list, 0), "plugin"));
	json_decref(o);
	/* Nothing after 1 yet: the poll waits for the next event. */
	http_send(&r, &h, "GET /v1/events?index=1&timeout=10s HTTP/1.1\r\n"
	    "Host: berth\r\nConnection: close\r\n\r\n");
	fake_run_until(r.base, waiting, &r, 200);
	ck_assert(!http_done(&h));
	events_record(r.events, "plugin", "healthy", "", "", "hp", "second");
	ck_assert_int_eq(http_wait(&r, &h, &o), 200);
	list = json_object_get(o, "events");
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
	    list, 0), "plugin")), "hp");
	json_decref(o);
	/* A poll with nothing new ends at its timeout, empty. */
	ck_assert_int_eq(http(&r, "GET", "/v1/events?index=2&timeout=100ms",
	    NULL, &o), 200);
	ck_assert_uint_eq(json_array_size(json_object_get(o, "events")), 0);
	json_decref(o);
	ck_assert_int_eq(http(&r, "GET", "/v1/events?index=-1", NULL, &o),
	    400);
	json_decref(o);
	rig_down(&r);
}
END_TEST

static bool
exec_healthy(void *arg)
{
	struct rig *r = arg;

	return drivermgr_state(r->drivers, "exec") == PLUGIN_HEALTHY;
}

/* /v1/drivers and /v1/devices read the managers in the deps. */
START_TEST(test_drivers_and_devices)
{
	struct rig r;
	json_t *o, *list, *e;
	size_t i;
	bool exec = false, privileged = false;

	rig_up(&r);
	drivermgr_start(r.drivers);
	devmgr_start(r.devmgr);
	ck_assert(fake_run_until(r.base, exec_healthy, &r, 5000));
	ck_assert_int_eq(http(&r, "GET", "/v1/drivers", NULL, &o), 200);
	list = json_object_get(o, "drivers");
	ck_assert_uint_eq(json_array_size(list), 2);
	json_array_foreach(list, i, e) {
		const char *name = json_string_value(json_object_get(e,
		    "name"));

		if (strcmp(name, "exec") == 0) {
			exec = true;
			ck_assert_str_eq(json_string_value(json_object_get(e,
			    "state")), "healthy");
			ck_assert(json_is_true(json_object_get(e, "healthy")));
		} else if (strcmp(name, "privileged") == 0) {
			privileged = true;
			/* No mounter link: it cannot be healthy. */
			ck_assert(json_is_false(json_object_get(e,
			    "healthy")));
		}
	}
	ck_assert(exec && privileged);
	json_decref(o);
	ck_assert_int_eq(http(&r, "GET", "/v1/devices", NULL, &o), 200);
	list = json_object_get(o, "plugins");
	ck_assert_uint_ge(json_array_size(list), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
	    list, 0), "name")), "sysfs");
	/* An empty sysfs: no device. */
	ck_assert_uint_eq(json_array_size(json_object_get(o, "devices")), 0);
	json_decref(o);
	rig_down(&r);
}
END_TEST

static bool
held(void *arg)
{
	return fake_pending(arg) > 0;
}

static bool
two_held(void *arg)
{
	return fake_pending(arg) == 2;
}

/* Answer a held get_volume with volume id, or NOT_FOUND when NULL. */
static void
volume_reply(struct fake_peer *fp, struct fake_req *req, const char *id)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__VolumeReply vr = BERTH__VOLUME_REPLY__INIT;
	Berth__Volume v = BERTH__VOLUME__INIT;

	if (id == NULL) {
		fake_reply_error(fp, req, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
		    "no such volume");
		return;
	}
	v.namespace_ = "default";
	v.id = (char *)id;
	v.plugin_id = "hostpath";
	v.external_id = "ext-1";
	v.modify_index = 7;
	vr.volume = &v;
	env.body_case = BERTH__ENVELOPE__BODY_VOLUME_REPLY;
	env.volume_reply = &vr;
	fake_reply(fp, req, &env, -1);
}

START_TEST(test_volume_read_through_registry)
{
	struct rig r;
	struct http a, b;
	json_t *o;

	rig_up(&r);
	/* Two reads held, answered in the other order. */
	http_send(&r, &a, "GET /v1/volume/va HTTP/1.1\r\nHost: berth\r\n"
	    "Connection: close\r\n\r\n");
	ck_assert(fake_run_until(r.base, held, r.registry, 2000));
	http_send(&r, &b, "GET /v1/volume/vb?namespace=other HTTP/1.1\r\n"
	    "Host: berth\r\nConnection: close\r\n\r\n");
	ck_assert(fake_run_until(r.base, two_held, r.registry, 2000));
	ck_assert_str_eq(fake_nth(r.registry, 1)->env->get_volume->key->
	    namespace_, "other");
	volume_reply(r.registry, fake_nth(r.registry, 1), NULL);
	ck_assert_int_eq(http_wait(&r, &b, &o), 404);
	ck_assert_str_eq(error_of(o), "no volume vb in namespace other");
	json_decref(o);
	ck_assert(!http_done(&a));
	volume_reply(r.registry, fake_nth(r.registry, 0), "va");
	ck_assert_int_eq(http_wait(&r, &a, &o), 200);
	ck_assert_str_eq(json_string_value(json_object_get(o, "id")), "va");
	ck_assert_str_eq(json_string_value(json_object_get(o,
	    "external_id")), "ext-1");
	ck_assert_int_eq(json_integer_value(json_object_get(o,
	    "modify_index")), 7);
	json_decref(o);
	/* The registry's failure is the API's 503. */
	http_send(&r, &a, "GET /v1/volume/vc HTTP/1.1\r\nHost: berth\r\n"
	    "Connection: close\r\n\r\n");
	ck_assert(fake_run_until(r.base, held, r.registry, 2000));
	fake_reply_error(r.registry, fake_nth(r.registry, 0),
	    BERTH__ERROR_CODE__ERROR_INTERNAL, "disk on fire");
	ck_assert_int_eq(http_wait(&r, &a, &o), 503);
	ck_assert_ptr_nonnull(strstr(error_of(o), "disk on fire"));
	json_decref(o);
	/* A wrong body is refused by the channel: 503, not a misread. */
	http_send(&r, &a, "GET /v1/volume/vd HTTP/1.1\r\nHost: berth\r\n"
	    "Connection: close\r\n\r\n");
	ck_assert(fake_run_until(r.base, held, r.registry, 2000));
	fake_reply_ack(r.registry, fake_nth(r.registry, 0));
	ck_assert_int_eq(http_wait(&r, &a, &o), 503);
	json_decref(o);
	rig_down(&r);
}
END_TEST

static bool
client_gone(void *arg)
{
	(void)arg;
	return false;
}

/* A page of volumes: id, each with one claim, more to come or not. */
static void
volume_page(struct fake_peer *fp, struct fake_req *req, const char *id,
    bool more)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__VolumeList list = BERTH__VOLUME_LIST__INIT;
	Berth__VolumeReply vr = BERTH__VOLUME_REPLY__INIT, *vrs[1] = { &vr };
	Berth__Volume v = BERTH__VOLUME__INIT;
	Berth__Claim cl = BERTH__CLAIM__INIT, *cls[1] = { &cl };

	v.namespace_ = "default";
	v.id = (char *)id;
	v.plugin_id = "hostpath";
	v.external_id = (char *)id;
	cl.namespace_ = "default";
	cl.volume = (char *)id;
	cl.alloc = "a1";
	cl.mode = BERTH__CLAIM_MODE__CLAIM_MODE_WRITE;
	vr.volume = &v;
	vr.n_claims = 1;
	vr.claims = cls;
	list.n_volumes = 1;
	list.volumes = vrs;
	list.more = more;
	list.next_namespace = "default";
	list.next_id = (char *)id;
	env.body_case = BERTH__ENVELOPE__BODY_VOLUME_LIST;
	env.volume_list = &list;
	fake_reply(fp, req, &env, -1);
}

START_TEST(test_volume_list_pages)
{
	struct rig r;
	struct http a;
	json_t *o, *list;

	rig_up(&r);
	http_send(&r, &a, "GET /v1/volumes?namespace=default HTTP/1.1\r\n"
	    "Host: berth\r\nConnection: close\r\n\r\n");
	ck_assert(fake_run_until(r.base, held, r.registry, 2000));
	volume_page(r.registry, fake_nth(r.registry, 0), "v1", true);
	/* The client follows the page: one answer for both. */
	ck_assert(fake_run_until(r.base, held, r.registry, 2000));
	ck_assert_str_eq(fake_nth(r.registry, 0)->env->list_volumes->after_id,
	    "v1");
	ck_assert(!http_done(&a));
	volume_page(r.registry, fake_nth(r.registry, 0), "v2", false);
	ck_assert_int_eq(http_wait(&r, &a, &o), 200);
	list = json_object_get(o, "volumes");
	ck_assert_uint_eq(json_array_size(list), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
	    list, 1), "id")), "v2");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
	    json_object_get(json_array_get(list, 0), "claims"), 0), "mode")),
	    "write");
	json_decref(o);
	ck_assert_uint_eq(fake_count(r.registry,
	    BERTH__ENVELOPE__BODY_LIST_VOLUMES), 2);
	rig_down(&r);
}
END_TEST

START_TEST(test_volume_client_gone_then_late_answer)
{
	struct rig r;
	struct http a;
	json_t *o;

	rig_up(&r);
	http_send(&r, &a, "GET /v1/volume/va HTTP/1.1\r\nHost: berth\r\n"
	    "Connection: close\r\n\r\n");
	ck_assert(fake_run_until(r.base, held, r.registry, 2000));
	close(a.fd);
	free(a.out);
	/* evhttp sees the close; the late answer then goes nowhere. */
	fake_run_until(r.base, client_gone, NULL, 300);
	volume_reply(r.registry, fake_nth(r.registry, 0), "va");
	fake_run_until(r.base, client_gone, NULL, 200);
	ck_assert_uint_eq(fake_pending(r.registry), 0);
	/* And the API still answers. */
	ck_assert_int_eq(http(&r, "GET", "/v1/health", NULL, &o), 200);
	json_decref(o);
	rig_down(&r);
}
END_TEST

START_TEST(test_volume_registry_never_answers)
{
	struct rig r;
	struct http a, b;
	json_t *o;

	rig_up(&r);
	/* One the registry drops (the client's timeout), one it dies on. */
	http_send(&r, &a, "GET /v1/volume/va HTTP/1.1\r\nHost: berth\r\n"
	    "Connection: close\r\n\r\n");
	ck_assert(fake_run_until(r.base, held, r.registry, 2000));
	fake_drop(r.registry, fake_nth(r.registry, 0));
	ck_assert_int_eq(http_wait(&r, &a, &o), 503);
	json_decref(o);
	http_send(&r, &b, "GET /v1/volumes HTTP/1.1\r\nHost: berth\r\n"
	    "Connection: close\r\n\r\n");
	ck_assert(fake_run_until(r.base, held, r.registry, 2000));
	ck_assert_uint_eq(fake_count(r.registry,
	    BERTH__ENVELOPE__BODY_LIST_VOLUMES), 1);
	fake_close(r.registry);
	ck_assert_int_eq(http_wait(&r, &b, &o), 503);
	json_decref(o);
	/* With the registry gone, a read is refused at once. */
	ck_assert_int_eq(http(&r, "GET", "/v1/volume/vc", NULL, &o), 503);
	ck_assert_ptr_nonnull(strstr(error_of(o), "berth-registry"));
	json_decref(o);
	rig_down(&r);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("api");

	/* As the supervisor does: a client that left is not a signal. */
	signal(SIGPIPE, SIG_IGN);

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_routes_and_checks);
	tcase_add_test(tc, test_health_from_callbacks);
	tcase_add_test(tc, test_peer_check);
	tcase_add_test(tc, test_drivers_and_devices);
	tcase_add_test(tc, test_events_long_poll);
	tcase_add_test(tc, test_volume_read_through_registry);
	tcase_add_test(tc, test_volume_list_pages);
	tcase_add_test(tc, test_volume_client_gone_then_late_answer);
	tcase_add_test(tc, test_volume_registry_never_answers);
	return harness_run("api", tc);
}
