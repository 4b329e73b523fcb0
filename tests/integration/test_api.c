/*
 * test_api.c: the operator API and berthctl against the real supervisor
 * in spawn mode, through a real unix-socket HTTP client (berthctl/http.c,
 * and raw requests for HEAD): every route, each 4xx answer, the peer check with
 * SO_PEERCRED (children that setuid() to other users), the event log's
 * long poll, and berthctl's commands, help, usage errors, ids, tables,
 * --json, output and exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <jansson.h>

#include "http.h"
#include "svtest.h"

static void
api_up(struct berth *b, const char *extra)
{
	struct passwd *pw = getpwnam("berth");
	char text[2048], more[1200];

	ck_assert_ptr_nonnull(pw);
	berth_config(b, "1s", NULL);
	/* The API writes allocation documents here as the supervisor. */
	ck_assert_int_eq(chown(b->allocs, pw->pw_uid, pw->pw_gid), 0);
	/* A sysfs of one disk, for the device manager. */
	snprintf(text, sizeof(text), "mkdir -p %s/sys/block/vdz/device "
	    "%s/sys/block/vdz/queue && echo 2048 > %s/sys/block/vdz/size && "
	    "echo TESTDISK > %s/sys/block/vdz/device/model && echo 0 > "
	    "%s/sys/block/vdz/removable", b->dir, b->dir, b->dir, b->dir,
	    b->dir);
	ck_assert_int_eq(system(text), 0);
	snprintf(more, sizeof(more), ", \"sysfs_root\": \"%s/sys\"%s", b->dir,
	    extra != NULL ? extra : "");
	berth_reconfig(b, "1s", more);
	berth_start(b);
}

/* Every task pid the events name, tracked so that it dies with the test. */
static void
track_tasks(struct berth *b)
{
	task_pids(b, NULL);
}

/*
 * SIGTERM, and a clean exit: under the sanitizers a leak or an error in
 * the supervisor (the API's shutdown with polls waiting included) fails
 * the test here.
 */
static void
api_down(struct berth *b)
{
	track_tasks(b);
	ck_assert_int_eq(kill(b->sv.pid, SIGTERM), 0);
	ck_assert_msg(proc_wait_exit(&b->sv, 20000), "%s", b->sv.log);
	ck_assert_msg(WIFEXITED(b->sv.status) && WEXITSTATUS(b->sv.status) ==
	    0, "supervisor exit status %d:\n%s", b->sv.status, b->sv.log);
	proc_kill(&b->sv);
	ck_assert(pid_wait_gone(b->mounter, 3000));
	ck_assert(pid_wait_gone(b->registry, 3000));
	harness_rmtree(b->dir);
	free(b->dir);
}

/* One request; the answer's status, its JSON (or NULL) and Allow. */
struct answer {
	int status;
	json_t *json;
	char allow[128], body[65536];
};

static void
request(struct berth *b, const char *method, const char *path,
    const char *body, size_t len, struct answer *a)
{
	struct http_response resp;
	char why[600];

	memset(a, 0, sizeof(*a));
	ck_assert_msg(http_request(b->sock, method, path, body, len, 30000,
	    &resp, why, sizeof(why)) == 0, "%s %s: %s", method, path, why);
	a->status = resp.status;
	a->json = json_loads(resp.body, 0, NULL);
	if (http_header(&resp, "Allow", a->allow, sizeof(a->allow)) == NULL)
		a->allow[0] = '\0';
	snprintf(a->body, sizeof(a->body), "%s", resp.body);
	http_response_free(&resp);
}

static json_t *
api_ok(struct berth *b, const char *method, const char *path,
    const char *body)
{
	struct answer a;

	request(b, method, path, body, body != NULL ? strlen(body) : 0, &a);
	ck_assert_msg(a.status == 200 && a.json != NULL, "%s %s: %d %s",
	    method, path, a.status, a.body);
	return a.json;
}

/* A 4xx/5xx answer in the API's form; its message must name what. */
static json_t *
api_fails(struct berth *b, const char *method, const char *path,
    const char *body, size_t len, int status, const char *what)
{
	struct answer a;

	request(b, method, path, body, len, &a);
	ck_assert_msg(a.status == status, "%s %s: %d, not %d: %s", method,
	    path, a.status, status, a.body);
	ck_assert_msg(a.json != NULL, "%s %s: not JSON: %s", method, path,
	    a.body);
	ck_assert_int_eq(json_integer_value(json_object_get(a.json, "code")),
	    status);
	ck_assert_msg(strstr(json_string_value(json_object_get(a.json,
	    "error")), what) != NULL, "%s %s: \"%s\" not in %s", method, path,
	    what, a.body);
	return a.json;
}

static const char *
jstr(json_t *o, const char *path)
{
	json_t *v = json_object_get(o, path);

	return json_is_string(v) ? json_string_value(v) : "";
}

/* An alloc running berth-csi-hostpath as an exec task, as a document. */
static void
hostpath_doc(char *text, size_t n, const char *alloc, const char *id)
{
	snprintf(text, n, "{\"id\": \"%s\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"%s\", \"args\": [\"--node-id\", \"n1\", \"--state-dir\", "
	    "\"state\", \"--mode\", \"monolith\"]}, \"csi_plugin\": {\"id\": "
	    "\"%s\", \"type\": \"monolith\", \"health_timeout\": \"10s\"}}]}",
	    alloc, sv_sandbox_bin("berth-csi-hostpath"), id);
}

/* Poll a plugin until it is healthy (the test's bound, not a figure). */
static json_t *
wait_plugin_healthy(struct berth *b, const char *id)
{
	struct answer a;
	char path[256];
	int i;

	snprintf(path, sizeof(path), "/v1/plugin/%s", id);
	for (i = 0; i < 200; i++) {
		request(b, "GET", path, NULL, 0, &a);
		if (a.status == 200 && json_is_true(json_object_get(a.json,
		    "healthy")))
			return a.json;
		json_decref(a.json);
		usleep(50000);
	}
	ck_abort_msg("plugin %s never became healthy:\n%s", id, b->sv.log);
	return NULL;
}

START_TEST(read_routes_answer)
{
	struct berth b;
	json_t *j, *h;
	struct stat st;

	api_up(&b, NULL);
	ck_assert_int_eq(stat(b.sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0660);
	/* The default api_group: not berth, the helpers' sockets' group. */
	ck_assert_uint_eq(st.st_gid, getgrnam("berth-api")->gr_gid);

	j = api_ok(&b, "GET", "/v1/status", NULL);
	ck_assert_str_eq(jstr(j, "version"), "0.1.0");
	h = json_object_get(json_object_get(j, "helpers"), "berth-mounter");
	ck_assert(json_is_true(json_object_get(h, "ready")));
	ck_assert_int_eq(json_integer_value(json_object_get(h, "pid")),
	    b.mounter);
	h = json_object_get(json_object_get(j, "helpers"), "berth-registry");
	ck_assert_int_eq(json_integer_value(json_object_get(h, "pid")),
	    b.registry);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j,
	    "counts"), "allocations")), 0);
	json_decref(j);

	j = api_ok(&b, "GET", "/v1/health", NULL);
	ck_assert(json_is_true(json_object_get(j, "healthy")));
	json_decref(j);
	j = api_ok(&b, "GET", "/v1/plugins", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "plugins")), 0);
	json_decref(j);
	j = api_ok(&b, "GET", "/v1/allocations", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "allocations")),
	    0);
	json_decref(j);
	j = api_ok(&b, "GET", "/v1/drivers", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "drivers")), 2);
	ck_assert_str_eq(jstr(json_array_get(json_object_get(j, "drivers"), 0),
	    "name"), "exec");
	ck_assert(json_is_true(json_object_get(json_array_get(
	    json_object_get(j, "drivers"), 1), "healthy")));
	json_decref(j);
	/* The driver manager's states, and the device manager's one disk. */
	j = api_ok(&b, "GET", "/v1/drivers", NULL);
	ck_assert_str_eq(jstr(json_array_get(json_object_get(j, "drivers"), 0),
	    "state"), "healthy");
	ck_assert(json_is_true(json_object_get(json_array_get(
	    json_object_get(j, "drivers"), 0), "allowed")));
	json_decref(j);
	j = api_ok(&b, "GET", "/v1/devices", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "devices")), 1);
	ck_assert_str_eq(jstr(json_array_get(json_object_get(j, "devices"), 0),
	    "name"), "TESTDISK");
	ck_assert_str_eq(jstr(json_array_get(json_object_get(json_array_get(
	    json_object_get(j, "devices"), 0), "devices"), 0), "id"), "vdz");
	ck_assert_int_ge(json_array_size(json_object_get(j, "plugins")), 1);
	json_decref(j);
	j = api_ok(&b, "GET", "/v1/events?index=0&timeout=0", NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "index")), 0);
	ck_assert_int_eq(json_array_size(json_object_get(j, "events")), 0);
	json_decref(j);
	api_down(&b);
}
END_TEST

START_TEST(bad_requests_say_what_was_wrong)
{
	/* Volumes: each refusal says what was wrong. */
	static const char *volume_routes[][5] = {
		{ "GET", "/v1/volume/v1", NULL, "404", "no volume v1" },
		{ "DELETE", "/v1/volume/v1", NULL, "404", "no volume v1" },
		{ "PUT", "/v1/volume/v1", "{}", "400",
		    "plugin_id: is required" },
		{ "PUT", "/v1/volume/v1/create", "{}", "400",
		    "plugin_id: is required" },
		{ "PUT", "/v1/volume/v1", "{\"plugin_id\": \"p\", "
		    "\"access_mode\": \"single-node-writer\", "
		    "\"colour\": 1}", "400", "colour: unknown field" },
		{ "PUT", "/v1/volume/v1/create", "{\"plugin_id\": \"p\", "
		    "\"access_mode\": \"some\"}", "400",
		    "access_mode: must be one of" },
		{ "PUT", "/v1/volume/v1/create", "{\"plugin_id\": \"p\", "
		    "\"access_mode\": \"single-node-writer\", "
		    "\"external_id\": \"x\"}", "400",
		    "external_id: unknown field" },
		{ "PUT", "/v1/volume/v1", "[1]", "400", "must be an object" },
		{ "PUT", "/v1/volume/v1/create", "{\"plugin_id\": \"p\", "
		    "\"access_mode\": \"single-node-writer\"}", "400",
		    "plugin p has no healthy controller instance" },
		{ "GET", "/v1/volume/a..b%2Fc", NULL, "400", "is not an identifier" },
		{ "GET", "/v1/volumes?namespace=a%2Fb", NULL, "400",
		    "namespace \"a/b\"" },
		{ "GET", "/v1/volumes?colour=red", NULL, "400", "colour" },
	};
	struct berth b;
	struct answer a;
	json_t *j, *probs;
	const char *doc;
	char *big;
	size_t i;

	api_up(&b, NULL);
	json_decref(api_fails(&b, "GET", "/v1/nope", NULL, 0, 404,
	    "no such route: /v1/nope"));
	json_decref(api_fails(&b, "GET", "/", NULL, 0, 404, "no such route"));
	json_decref(api_fails(&b, "GET", "/v1/allocation/nope", NULL, 0, 404,
	    "no allocation nope"));
	json_decref(api_fails(&b, "DELETE", "/v1/allocation/nope", NULL, 0,
	    404, "no alloc nope"));
	json_decref(api_fails(&b, "GET", "/v1/plugin/nope", NULL, 0, 404,
	    "no plugin nope"));
	/* Ids are identifiers, after decoding: no way out of alloc_dir. */
	json_decref(api_fails(&b, "DELETE", "/v1/allocation/..%2F..%2Fx", NULL,
	    0, 400, "is not an identifier"));
	json_decref(api_fails(&b, "GET", "/v1/allocation/a%00b", NULL, 0, 400,
	    "is not an identifier"));
	json_decref(api_fails(&b, "GET", "/v1/plugin/..", NULL, 0, 400,
	    "is not an identifier"));

	/* Wrong methods: 405 with Allow. */
	request(&b, "POST", "/v1/status", NULL, 0, &a);
	ck_assert_int_eq(a.status, 405);
	ck_assert_str_eq(a.allow, "GET, HEAD");
	ck_assert_ptr_nonnull(strstr(jstr(a.json, "error"), "POST is not "
	    "allowed on /v1/status"));
	json_decref(a.json);
	request(&b, "POST", "/v1/allocations", "{}", 2, &a);
	ck_assert_int_eq(a.status, 405);
	ck_assert_str_eq(a.allow, "GET, HEAD, PUT");
	json_decref(a.json);
	request(&b, "PATCH", "/v1/allocation/x", NULL, 0, &a);
	ck_assert_int_eq(a.status, 405);
	ck_assert_str_eq(a.allow, "GET, HEAD, DELETE");
	json_decref(a.json);

	for (i = 0; i < sizeof(volume_routes) / sizeof(volume_routes[0]); i++)
		json_decref(api_fails(&b, volume_routes[i][0],
		    volume_routes[i][1], volume_routes[i][2],
		    volume_routes[i][2] != NULL ? strlen(volume_routes[i][2]) :
		    0, atoi(volume_routes[i][3]), volume_routes[i][4]));
	/* A parameter too long for the plugin is refused, never cut. */
	{
		char body[2048];
		int n;

		n = snprintf(body, sizeof(body), "{\"plugin_id\": \"p\", "
		    "\"access_mode\": \"single-node-writer\", "
		    "\"parameters\": {\"big\": \"%01100d\"}}", 0);
		j = api_fails(&b, "PUT", "/v1/volume/v1/create", body,
		    (size_t)n, 400, "parameters.big: is 1100 bytes, more "
		    "than the 1024 allowed");
		ck_assert_uint_eq(json_array_size(json_object_get(j,
		    "problems")), 1);
		json_decref(j);
	}

	/* Bodies. */
	json_decref(api_fails(&b, "PUT", "/v1/allocations", "{\"id\": ", 7,
	    400, "malformed JSON at line 1"));
	json_decref(api_fails(&b, "PUT", "/v1/allocations", NULL, 0, 400,
	    "it is empty"));
	json_decref(api_fails(&b, "GET", "/v1/status", "{}", 2, 400,
	    "takes no request body"));
	doc = "{\"id\": \"a\", \"colour\": \"red\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}}]}";
	j = api_fails(&b, "PUT", "/v1/allocations", doc, strlen(doc), 400,
	    "1 problem");
	probs = json_object_get(j, "problems");
	ck_assert_int_eq(json_array_size(probs), 1);
	ck_assert_str_eq(json_string_value(json_array_get(probs, 0)),
	    "colour: unknown field; remove it");
	json_decref(j);
	/* Every problem, by path, in document order. */
	doc = "{\"id\": \"b c\", \"tasks\": [{\"name\": \"x\", \"driver\": "
	    "\"nope\", \"bogus\": 1}]}";
	j = api_fails(&b, "PUT", "/v1/allocations", doc, strlen(doc), 400,
	    "4 problems");
	probs = json_object_get(j, "problems");
	ck_assert_int_eq(json_array_size(probs), 4);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_array_get(probs,
	    0)), "id: "));
	ck_assert_str_eq(json_string_value(json_array_get(probs, 1)),
	    "tasks[0].driver: must be one of \"exec\", \"privileged\", not "
	    "\"nope\"");
	ck_assert_str_eq(json_string_value(json_array_get(probs, 2)),
	    "tasks[0].bogus: unknown field; remove it");
	ck_assert_str_eq(json_string_value(json_array_get(probs, 3)),
	    "tasks[0].config: is required");
	json_decref(j);
	/* Over our limit: our 413; far over it: evhttp's, still 413. */
	ck_assert_ptr_nonnull(big = malloc(2 * 1024 * 1024));
	memset(big, ' ', 2 * 1024 * 1024);
	json_decref(api_fails(&b, "PUT", "/v1/allocations", big, 300000, 413,
	    "over the limit of 262144 bytes"));
	request(&b, "PUT", "/v1/allocations", big, 2 * 1024 * 1024, &a);
	ck_assert_int_eq(a.status, 413);
	json_decref(a.json);
	free(big);

	/* Query parameters. */
	json_decref(api_fails(&b, "GET", "/v1/status?verbose=1", NULL, 0, 400,
	    "unknown query parameter \"verbose\""));
	json_decref(api_fails(&b, "GET", "/v1/events?index=-1", NULL, 0, 400,
	    "index must be a whole number"));
	json_decref(api_fails(&b, "GET", "/v1/events?timeout=10x", NULL, 0,
	    400, "timeout: "));
	json_decref(api_fails(&b, "GET", "/v1/events?timeout=6m", NULL, 0,
	    400, "at most 5m"));
	json_decref(api_fails(&b, "GET", "/v1/events?since=1", NULL, 0, 400,
	    "this route takes: index,timeout"));

	/* Still serving after all that. */
	json_decref(api_ok(&b, "GET", "/v1/health", NULL));
	api_down(&b);
}
END_TEST

/* A long poll from index: answered by the next event, not before. */
static int
poll_start(struct berth *b, unsigned long long index)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char req[256];
	int fd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", b->sock);
	ck_assert_int_ge(fd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	snprintf(req, sizeof(req), "GET /v1/events?index=%llu&timeout=60s "
	    "HTTP/1.1\r\nHost: berth\r\nConnection: close\r\n\r\n", index);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	return fd;
}

static json_t *
poll_finish(int fd)
{
	static char buf[65536];
	struct pollfd p = { fd, POLLIN, 0 };
	size_t len = 0;
	ssize_t n;
	char *body;

	while (len < sizeof(buf) - 1) {
		ck_assert_msg(poll(&p, 1, 30000) == 1, "the poll never ended");
		if ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
	ck_assert_ptr_nonnull(body = strstr(buf, "\r\n\r\n"));
	return json_loads(body + 4, 0, NULL);
}

static bool
has_event(json_t *events, const char *topic, const char *type,
    const char *alloc)
{
	json_t *e;
	size_t i;

	json_array_foreach(events, i, e)
		if (strcmp(jstr(e, "topic"), topic) == 0 &&
		    strcmp(jstr(e, "type"), type) == 0 &&
		    strcmp(jstr(e, "alloc"), alloc) == 0)
			return true;
	return false;
}

START_TEST(allocations_plugins_events_and_metrics)
{
	struct berth b;
	struct pollfd p;
	json_t *j, *t, *in, *ev;
	char doc[2048], path[1024], file[1024];
	unsigned long long last;
	size_t i;
	int fd;

	api_up(&b, NULL);
	hostpath_doc(doc, sizeof(doc), "a1", "hostpath");
	j = api_ok(&b, "PUT", "/v1/allocations", doc);
	ck_assert_str_eq(jstr(j, "id"), "a1");
	ck_assert_str_eq(jstr(j, "file"), "a1.json");
	json_decref(j);
	/* Written whole into alloc_dir, and no temporary file is left. */
	snprintf(file, sizeof(file), "%s/a1.json", b.allocs);
	ck_assert_int_eq(access(file, R_OK), 0);

	j = wait_plugin_healthy(&b, "hostpath");
	ck_assert_str_eq(jstr(j, "provider"), "hostpath.csi.berth.dev");
	ck_assert_int_eq(json_array_size(json_object_get(j, "instances")), 2);
	json_array_foreach(json_object_get(j, "instances"), i, in) {
		ck_assert_str_eq(jstr(in, "alloc"), "a1");
		ck_assert(json_is_true(json_object_get(in, "healthy")));
		ck_assert_str_eq(jstr(json_object_get(in, "fingerprint"),
		    "provider"), "hostpath.csi.berth.dev");
		if (strcmp(jstr(in, "type"), "node") == 0)
			ck_assert_str_eq(jstr(json_object_get(in,
			    "fingerprint"), "node_id"), "n1");
		else
			ck_assert(json_is_true(json_object_get(
			    json_object_get(in, "fingerprint"),
			    "create_delete")));
	}
	t = json_array_get(json_object_get(j, "tasks"), 0);
	ck_assert_str_eq(jstr(t, "alloc"), "a1");
	ck_assert_str_eq(jstr(t, "state"), "running");
	json_decref(j);
	j = api_ok(&b, "GET", "/v1/plugins", NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "plugins")), 1);
	json_decref(j);

	j = api_ok(&b, "GET", "/v1/allocation/a1", NULL);
	ck_assert_str_eq(jstr(j, "status"), "running");
	t = json_array_get(json_object_get(j, "tasks"), 0);
	ck_assert_str_eq(jstr(t, "name"), "plugin");
	ck_assert_str_eq(jstr(t, "state"), "running");
	ck_assert_int_gt(json_integer_value(json_object_get(t, "pid")), 0);
	harness_track_pid((pid_t)json_integer_value(json_object_get(t,
	    "pid")));
	ck_assert_str_eq(jstr(json_array_get(json_object_get(t, "events"), 0),
	    "type"), "Started");
	ck_assert_str_eq(jstr(json_object_get(j, "document"), "namespace"),
	    "default");
	json_decref(j);
	j = api_ok(&b, "GET", "/v1/allocations", NULL);
	ck_assert_str_eq(jstr(json_array_get(json_object_get(j,
	    "allocations"), 0), "id"), "a1");
	json_decref(j);

	/* The event log from 0: the alloc, its task, the plugin's health. */
	j = api_ok(&b, "GET", "/v1/events?index=0", NULL);
	ev = json_object_get(j, "events");
	ck_assert(has_event(ev, "alloc", "AllocStarted", "a1"));
	ck_assert(has_event(ev, "task", "Started", "a1"));
	ck_assert(has_event(ev, "plugin", "PluginHealthy", "a1"));
	for (i = 0; i < json_array_size(ev); i++)
		ck_assert_int_eq(json_integer_value(json_object_get(
		    json_array_get(ev, i), "index")), i + 1);
	last = (unsigned long long)json_integer_value(json_object_get(j,
	    "index"));
	ck_assert_int_eq(last, json_array_size(ev));
	json_decref(j);
	/* From an index: only what follows it. */
	snprintf(path, sizeof(path), "/v1/events?index=%llu", last - 1);
	j = api_ok(&b, "GET", path, NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "events")), 1);
	json_decref(j);
	/* Nothing new: a short poll ends empty at its timeout. */
	snprintf(path, sizeof(path), "/v1/events?index=%llu&timeout=200ms",
	    last);
	j = api_ok(&b, "GET", path, NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "events")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "index")),
	    last);
	json_decref(j);

	/* Metrics: health gauge, probe latency, mounter verbs, writes. */
	{
		struct answer a;

		request(&b, "GET", "/v1/metrics", NULL, 0, &a);
		ck_assert_int_eq(a.status, 200);
		ck_assert_msg(strstr(a.body, "berth_plugin_healthy{plugin=\""
		    "hostpath\",type=\"node\",alloc=\"a1\"} 1\n") != NULL,
		    "%s", a.body);
		ck_assert_ptr_nonnull(strstr(a.body, "# TYPE "
		    "berth_plugin_probe_duration_seconds histogram"));
		ck_assert_ptr_nonnull(strstr(a.body,
		    "berth_plugin_probe_duration_seconds_count{plugin="
		    "\"hostpath\"} "));
		ck_assert_ptr_null(strstr(a.body,
		    "berth_plugin_probe_duration_seconds_count{plugin="
		    "\"hostpath\"} 0\n"));
		ck_assert_ptr_nonnull(strstr(a.body, "berth_mount_operations_"
		    "total{verb=\"prepare_task\",result=\"ok\"} 1\n"));
		ck_assert_ptr_nonnull(strstr(a.body, "berth_registry_write_"
		    "duration_seconds_count{verb=\"register_plugin\"} "));
		ck_assert_ptr_null(strstr(a.body, "berth_registry_write_"
		    "duration_seconds_count{verb=\"register_plugin\"} 0\n"));
		ck_assert_ptr_nonnull(strstr(a.body,
		    "# TYPE berth_csi_rpc_errors_total counter"));
		ck_assert_ptr_nonnull(strstr(a.body, "berth_allocations 1\n"));
		json_decref(a.json);
	}

	/* Another file runs "dup": the API neither replaces nor removes it. */
	hostpath_doc(doc, sizeof(doc), "dup", "other");
	snprintf(file, sizeof(file), "%s/mine.json", b.allocs);
	harness_write(file, doc);
	for (i = 0; i < 200; i++) {
		struct answer a;

		request(&b, "GET", "/v1/allocation/dup", NULL, 0, &a);
		json_decref(a.json);
		if (a.status == 200)
			break;
		usleep(50000);
	}
	json_decref(api_fails(&b, "PUT", "/v1/allocations", doc, strlen(doc),
	    409, "already runs from mine.json"));
	json_decref(api_fails(&b, "DELETE", "/v1/allocation/dup", NULL, 0, 409,
	    "runs from mine.json"));
	ck_assert_int_eq(unlink(file), 0);
	wait_event(&b, "AllocStopped", "dup", NULL, 10000);
	track_tasks(&b);

	/* A long poll waits, then the stop's events end it. */
	j = api_ok(&b, "GET", "/v1/events?index=0&timeout=0", NULL);
	last = (unsigned long long)json_integer_value(json_object_get(j,
	    "index"));
	json_decref(j);
	fd = poll_start(&b, last);
	p.fd = fd;
	p.events = POLLIN;
	ck_assert_int_eq(poll(&p, 1, 300), 0);
	j = api_ok(&b, "DELETE", "/v1/allocation/a1", NULL);
	ck_assert_str_eq(jstr(j, "status"), "stopping");
	json_decref(j);
	j = poll_finish(fd);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_gt(json_array_size(json_object_get(j, "events")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(
	    json_object_get(j, "events"), 0), "index")), last + 1);
	json_decref(j);
	snprintf(file, sizeof(file), "%s/a1.json", b.allocs);
	ck_assert_int_eq(access(file, F_OK), -1);
	for (i = 0; i < 200; i++) {
		j = api_ok(&b, "GET", "/v1/allocations", NULL);
		if (json_array_size(json_object_get(j, "allocations")) == 0)
			break;
		json_decref(j);
		usleep(50000);
	}
	ck_assert_int_eq(json_array_size(json_object_get(j, "allocations")),
	    0);
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/events?index=%llu", last);
	j = api_ok(&b, "GET", path, NULL);
	ck_assert(has_event(json_object_get(j, "events"), "alloc",
	    "AllocStopped", "a1"));
	json_decref(j);

	/* alloc_dir not writable: 503, and it says where. */
	ck_assert_int_eq(chmod(b.allocs, 0555), 0);
	hostpath_doc(doc, sizeof(doc), "a2", "hostpath");
	json_decref(api_fails(&b, "PUT", "/v1/allocations", doc, strlen(doc),
	    503, "cannot write into alloc_dir"));
	/* The supervisor stops cleanly with a poll still waiting. */
	j = api_ok(&b, "GET", "/v1/events?index=0&timeout=0", NULL);
	fd = poll_start(&b, (unsigned long long)json_integer_value(
	    json_object_get(j, "index")));
	json_decref(j);
	api_down(&b);
	close(fd);
}
END_TEST

/* In a child as uid:gid with groups; what the API said (status), or
 * 1000 + errno when connect() failed. */
static int
as_user(struct berth *b, uid_t uid, gid_t gid, const gid_t *groups,
    size_t ngroups)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct http_response resp;
	char why[600];
	pid_t pid;
	int status, fd;

	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		if (setgroups(ngroups, groups) < 0 || setgid(gid) < 0 ||
		    setuid(uid) < 0)
			_exit(250);
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", b->sock);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			_exit(errno == EACCES ? 1 : 251);
		close(fd);
		if (http_request(b->sock, "GET", "/v1/status", NULL, 0, 10000,
		    &resp, why, sizeof(why)) < 0)
			_exit(252);
		_exit(resp.status / 100 * 10 + resp.status % 10);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(peer_credentials_are_checked)
{
	struct berth b;
	struct stat st;
	gid_t nogroup = getgrnam("nogroup")->gr_gid, other = 54321;

	api_up(&b, ", \"api_group\": \"nogroup\"");
	ck_assert_int_eq(stat(b.sock, &st), 0);
	ck_assert_uint_eq(st.st_gid, nogroup);
	ck_assert_int_eq(st.st_mode & 07777, 0660);
	/* 20 means 200 (exit codes are a byte); 43 means 403. */
	ck_assert_int_eq(as_user(&b, 54321, other, NULL, 0), 1);
	ck_assert_int_eq(as_user(&b, 54321, other, &nogroup, 1), 20);
	ck_assert_int_eq(as_user(&b, 54321, nogroup, NULL, 0), 20);
	/* The file mode is one gate; SO_PEERCRED is the other. */
	ck_assert_int_eq(chmod(b.sock, 0666), 0);
	ck_assert_int_eq(as_user(&b, 54321, other, NULL, 0), 43);
	/*
	 * Log wording kept: a refused client is told only "forbidden"; the
	 * audit line with its pid and ids is the feature under test.
	 */
	ck_assert_msg(proc_wait_log(&b.sv, "api: refused GET /v1/status from "
	    "pid ", 5000), "%s", b.sv.log);
	ck_assert_ptr_nonnull(strstr(b.sv.log, "uid 54321 gid 54321: not "
	    "root"));
	/* Root is always served. */
	json_decref(api_ok(&b, "GET", "/v1/health", NULL));
	api_down(&b);
}
END_TEST

/* berthctl ARGS...: its exit code, stdout and stderr. */
static int
ctl(struct berth *b, char *out, size_t outlen, char *err, size_t errlen,
    ...)
{
	char *argv[16], outf[600], errf[600];
	va_list ap;
	pid_t pid;
	int n = 0, status, fd;
	FILE *f;

	argv[n++] = (char *)harness_bin("berthctl");
	va_start(ap, errlen);
	while (n < 15 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	snprintf(outf, sizeof(outf), "%s/ctl.out", b->dir);
	snprintf(errf, sizeof(errf), "%s/ctl.err", b->dir);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		setenv("BERTH_API", b->sock, 1);
		if ((fd = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
		    dup2(fd, 1) < 0 || (fd = open(errf, O_WRONLY | O_CREAT |
		    O_TRUNC, 0644)) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_ptr_nonnull(f = fopen(outf, "r"));
	out[fread(out, 1, outlen - 1, f)] = '\0';
	fclose(f);
	ck_assert_ptr_nonnull(f = fopen(errf, "r"));
	err[fread(err, 1, errlen - 1, f)] = '\0';
	fclose(f);
	return WEXITSTATUS(status);
}

/* berthctl ARGS... with its stderr on a terminal: what it drew there. */
static void
ctl_tty(struct berth *b, char *err, size_t errlen, const char *a1,
    const char *a2, const char *a3, const char *a4)
{
	char *argv[] = { (char *)harness_bin("berthctl"), (char *)a1,
		(char *)a2, (char *)a3, (char *)a4, NULL };
	size_t len = 0;
	ssize_t n;
	pid_t pid;
	int m, s, status;

	ck_assert_int_ge(m = posix_openpt(O_RDWR | O_NOCTTY), 0);
	ck_assert_int_eq(grantpt(m), 0);
	ck_assert_int_eq(unlockpt(m), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		setenv("BERTH_API", b->sock, 1);
		if ((s = open(ptsname(m), O_RDWR | O_NOCTTY)) < 0 ||
		    dup2(s, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fcntl(m, F_SETFL, O_NONBLOCK);
	while (len < errlen - 1 && (n = read(m, err + len, errlen - 1 - len)) >
	    0)
		len += (size_t)n;
	err[len] = '\0';
	close(m);
}

START_TEST(berthctl_drives_the_supervisor)
{
	static char out[65536], err[8192];
	char doc[2048], file[1024];
	struct berth b;
	json_t *j;

	api_up(&b, NULL);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "status",
	    NULL), 0);
	ck_assert_msg(strstr(out, "berth-mounter     pid ") != NULL, "%s",
	    out);
	ck_assert_ptr_nonnull(strstr(out, ", ready\n"));

	hostpath_doc(doc, sizeof(doc), "a1", "hostpath");
	snprintf(file, sizeof(file), "%s/a1-doc.json", b.dir);
	harness_write(file, doc);
	ck_assert_msg(ctl(&b, out, sizeof(out), err, sizeof(err), "alloc",
	    "run", "--wait", file, NULL) == 0, "%s%s", out, err);
	track_tasks(&b);
	/* Not a terminal: plain lines, the last one says it runs. */
	ck_assert_msg(strstr(err, "alloc a1: running\n") != NULL, "%s", err);
	ck_assert_ptr_null(strchr(err, '\r'));
	ck_assert_ptr_nonnull(strstr(out, "Status     running\n"));

	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "plugin",
	    "status", "hostpath", "--wait-healthy", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "Healthy   yes\n"));
	/* On a terminal: one line, redrawn in place. */
	ctl_tty(&b, err, sizeof(err), "plugin", "status", "hostpath",
	    "--wait-healthy");
	ck_assert_msg(strstr(err, "\r\033[K[") != NULL && strstr(err,
	    "plugin hostpath: healthy") != NULL, "%s", err);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "plugin",
	    "list", NULL), 0);
	ck_assert_msg(strncmp(out, "ID        PROVIDER                VERSION"
	    "  HEALTHY  INSTANCES  TASKS\nhostpath  hostpath.csi.berth.dev  "
	    "0.1.0    yes      2          1\n", 200) == 0, "%s", out);

	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "--json",
	    "alloc", "list", NULL), 0);
	ck_assert_ptr_nonnull(j = json_loads(out, 0, NULL));
	ck_assert_str_eq(jstr(json_array_get(json_object_get(j, "allocations"),
	    0), "id"), "a1");
	json_decref(j);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "alloc",
	    "status", "a1", NULL), 0);
	/* A sandboxed plugin has CPU and memory columns too: the state is
	 * cut to fit. */
	ck_assert_msg(strstr(out, "plugin  exec    run") != NULL, "%s", out);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "driver",
	    "list", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "\nexec        yes       yes"));
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "device",
	    "list", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "TESTDISK"));
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "events",
	    NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, " AllocStarted "));
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "--json",
	    "events", "--index", "1", NULL), 0);
	ck_assert_ptr_nonnull(j = json_loads(out, JSON_DISABLE_EOF_CHECK,
	    NULL));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "index")), 2);
	json_decref(j);

	/* The API's errors: exit 1, the message on stderr. */
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "alloc",
	    "status", "nope", NULL), 1);
	ck_assert_msg(strcmp(err, "berthctl: allocation nope not found\n") ==
	    0, "%s", err);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "volume",
	    "status", "nope", NULL), 1);
	ck_assert_msg(strcmp(err, "berthctl: volume default/nope not found\n")
	    == 0, "%s", err);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "volume",
	    "list", NULL), 0);
	ck_assert_str_eq(out, "ID  NAMESPACE  PLUGIN  ACCESS  ATTACHMENT  "
	    "CLAIMS\n");
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "--json",
	    "volume", "list", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"volumes\": []"));
	harness_write(file, "{\"id\": \"bad\", \"tasks\": []}");
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "alloc",
	    "run", file, NULL), 1);
	ck_assert_msg(strstr(err, "\n  tasks: ") != NULL, "%s", err);
	/* Usage: 2. Unreachable: 3. */
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "alloc",
	    "frobnicate", "x", NULL), 2);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "status",
	    "--wait", NULL), 2);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err),
	    "--socket", "/nonexistent/api.sock", "status", NULL), 3);
	ck_assert_ptr_nonnull(strstr(err, "cannot connect to "
	    "/nonexistent/api.sock"));

	/* events -f follows: the stop's events reach it as they happen. */
	{
		char *argv[] = { (char *)harness_bin("berthctl"), "events",
			"-f", "--index", "3", NULL };
		char path[600], text[16384];
		pid_t pid;
		int fd, i;
		FILE *f;

		snprintf(path, sizeof(path), "%s/follow.out", b.dir);
		ck_assert_int_ge(pid = fork(), 0);
		if (pid == 0) {
			setenv("BERTH_API", b.sock, 1);
			if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC,
			    0644)) < 0 || dup2(fd, 1) < 0)
				_exit(127);
			execv(argv[0], argv);
			_exit(127);
		}
		harness_track_pid(pid);
		ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err),
		    "alloc", "stop", "a1", NULL), 0);
		ck_assert_str_eq(out, "alloc a1 stopping\n");
		wait_event(&b, "AllocStopped", "a1", NULL, 10000);
		for (i = 0, text[0] = '\0'; i < 200 && strstr(text,
		    " AllocStopped ") == NULL; i++) {
			usleep(50000);
			ck_assert_ptr_nonnull(f = fopen(path, "r"));
			text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
			fclose(f);
		}
		ck_assert_msg(strstr(text, " AllocStopped ") != NULL, "%s",
		    text);
		/* From index 3 on: event 4 first, nothing before it. */
		ck_assert_msg(strncmp(text, "4 ", 2) == 0, "%s", text);
		ck_assert_int_eq(kill(pid, SIGTERM), 0);
		ck_assert_int_eq(waitpid(pid, &i, 0), pid);
	}
	api_down(&b);
}
END_TEST

/* berthctl A1...: a usage error, exit 2, whose message names what. */
static int
ctl_usage(struct berth *b, const char *what, const char *a1, const char *a2,
    const char *a3, const char *a4)
{
	static char out[8192], err[8192];
	int rc = ctl(b, out, sizeof(out), err, sizeof(err), a1, a2, a3, a4,
	    NULL);

	ck_assert_msg(rc == 2, "%s %s %s: exit %d: %s", a1, a2 ? a2 : "",
	    a3 ? a3 : "", rc, err);
	ck_assert_msg(strstr(err, what) != NULL, "\"%s\" not in: %s", what,
	    err);
	ck_assert_ptr_nonnull(strstr(err, "Run 'berthctl help"));
	ck_assert_str_eq(out, "");
	return rc;
}

static void
ctl_help(struct berth *b, const char *first, const char *a1, const char *a2,
    const char *a3)
{
	static char out[8192], err[8192];

	ck_assert_int_eq(ctl(b, out, sizeof(out), err, sizeof(err), a1, a2, a3,
	    NULL), 0);
	ck_assert_msg(strncmp(out, first, strlen(first)) == 0, "%s %s: %s",
	    a1, a2 ? a2 : "", out);
	ck_assert_str_eq(err, "");
}

START_TEST(berthctl_help_usage_and_ids)
{
	static char out[65536], err[8192];
	char file[1024];
	struct berth b;
	json_t *j;

	api_up(&b, NULL);
	/* Help: on stdout, exit 0, for the command asked about. */
	ctl_help(&b, "usage: berthctl [--socket", "--help", NULL, NULL);
	ctl_help(&b, "usage: berthctl [--socket", "-h", NULL, NULL);
	ctl_help(&b, "usage: berthctl [--socket", "help", NULL, NULL);
	ctl_help(&b, "usage: berthctl alloc VERB", "help", "alloc", NULL);
	ctl_help(&b, "usage: berthctl alloc VERB", "alloc", "--help", NULL);
	ctl_help(&b, "usage: berthctl alloc run FILE [--wait [--timeout D]]\n",
	    "alloc", "run", "--help");
	ctl_help(&b, "usage: berthctl alloc run FILE", "help", "alloc", "run");
	ctl_help(&b, "usage: berthctl events [-f] [--index N]\n", "events",
	    "-h", NULL);
	ctl_help(&b, "usage: berthctl volume status ID\n", "volume", "status",
	    "-h");

	/* The version: ours, and the server's. */
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err),
	    "--version", NULL), 0);
	ck_assert_str_eq(out, "Client  " BERTH_VERSION "\nServer  "
	    BERTH_VERSION "\n");
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "--json",
	    "version", NULL), 0);
	ck_assert_ptr_nonnull(j = json_loads(out, 0, NULL));
	ck_assert_str_eq(jstr(j, "server"), BERTH_VERSION);
	json_decref(j);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err),
	    "--socket", "/nonexistent/api.sock", "version", NULL), 0);
	ck_assert_str_eq(out, "Client  " BERTH_VERSION "\nServer  not "
	    "reachable\n");

	/* Usage errors: exit 2, and what was wrong. */
	ctl_usage(&b, "no command given", NULL, NULL, NULL, NULL);
	ctl_usage(&b, "unknown command \"allocs\"", "allocs", NULL, NULL,
	    NULL);
	ctl_usage(&b, "alloc: unknown verb \"frob\" (one of: run, stop, list, "
	    "status, logs)", "alloc", "frob", "x", NULL);
	ctl_usage(&b, "alloc: which one?", "alloc", NULL, NULL, NULL);
	ctl_usage(&b, "alloc status: missing ID", "alloc", "status", NULL,
	    NULL);
	ctl_usage(&b, "alloc list: unexpected argument \"x\"", "alloc", "list",
	    "x", NULL);
	ctl_usage(&b, "alloc list does not take --wait", "alloc", "list",
	    "--wait", NULL);
	ctl_usage(&b, "unknown option --colour", "--colour", "status", NULL,
	    NULL);
	ctl_usage(&b, "--timeout needs a value", "alloc", "run", "x",
	    "--timeout");
	ctl_usage(&b, "--timeout goes with --wait", "alloc", "run", "x",
	    "--timeout=1s");
	ctl_usage(&b, "help: no command \"frob\"", "help", "frob", NULL, NULL);
	ctl_usage(&b, "--version takes no command", "--version", "status",
	    NULL, NULL);
	/* Ids: the server's rules, before any request. */
	ctl_usage(&b, "\"writer#frag\" is not an id: it contains a character "
	    "outside", "alloc", "status", "writer#frag", NULL);
	ctl_usage(&b, "is not an id", "alloc", "stop", "a\r\nb", NULL);
	ctl_usage(&b, "\"..\" is not an id: it is '.' or '..'", "volume",
	    "delete", "..", NULL);
	ctl_usage(&b, "is not an id: it contains '/'", "plugin", "status",
	    "a/b", NULL);
	/* Refused or failed: 1; a file that cannot be read is not usage. */
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "alloc",
	    "run", "/nonexistent/alloc.json", NULL), 1);
	ck_assert_msg(strstr(err, "cannot read /nonexistent/alloc.json: No "
	    "such file") != NULL, "%s", err);
	snprintf(file, sizeof(file), "%s/odd.json", b.dir);
	harness_write(file, "{\"id\": \"a b\", \"tasks\": []}");
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "alloc",
	    "run", file, NULL), 1);
	ck_assert_msg(strstr(err, "the id \"a b\" contains a character") !=
	    NULL, "%s", err);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "plugin",
	    "status", "nope", NULL), 1);
	ck_assert_str_eq(err, "berthctl: plugin nope not found\n");
	/* With --json the error answer too, on stdout. */
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "--json",
	    "volume", "delete", "nope", NULL), 1);
	ck_assert_ptr_nonnull(j = json_loads(out, 0, NULL));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "code")), 404);
	json_decref(j);
	ck_assert_str_eq(err, "berthctl: volume default/nope not found\n");
	api_down(&b);
}
END_TEST

/* Every line of text at most n bytes. */
static void
assert_width(const char *text, size_t n)
{
	const char *p = text, *nl;

	for (; *p != '\0'; p = nl + 1) {
		ck_assert_ptr_nonnull(nl = strchr(p, '\n'));
		ck_assert_msg((size_t)(nl - p) <= n, "a line over %zu: %.*s",
		    n, (int)(nl - p), p);
	}
}

START_TEST(berthctl_tables_fit_and_json_everywhere)
{
	static char out[65536], err[8192];
	static const char *lists[][2] = {
		{ "status", NULL }, { "plugin", "list" }, { "volume", "list" },
		{ "alloc", "list" }, { "driver", "list" }, { "device", "list" },
	};
	struct berth b;
	json_t *j;
	size_t i;

	api_up(&b, NULL);
	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		/* A table by default, cut to $COLUMNS off a terminal. */
		setenv("COLUMNS", "30", 1);
		ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err),
		    lists[i][0], lists[i][1], NULL), 0);
		unsetenv("COLUMNS");
		ck_assert_msg(out[0] != '{' && out[0] != '\0', "%s: %s",
		    lists[i][0], out);
		assert_width(out, 30);
		ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err),
		    "--json", lists[i][0], lists[i][1], NULL), 0);
		ck_assert_msg((j = json_loads(out, JSON_DISABLE_EOF_CHECK,
		    NULL)) != NULL, "%s: %s", lists[i][0], out);
		json_decref(j);
	}
	/* Cut cells end in "...", and a word is never wrapped. */
	setenv("COLUMNS", "30", 1);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "driver",
	    "list", NULL), 0);
	unsetenv("COLUMNS");
	ck_assert_msg(strstr(out, "...\n") != NULL, "%s", out);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "driver",
	    "list", NULL), 0);
	assert_width(out, 80);
	api_down(&b);
}
END_TEST

/* A raw request, the whole answer read until the server closes. */
static void
raw(struct berth *b, const char *req, char *out, size_t n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = 0;
	ssize_t got;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", b->sock);
	ck_assert_int_ge(fd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (len + 1 < n && (got = read(fd, out + len, n - 1 - len)) > 0)
		len += (size_t)got;
	out[len] = '\0';
	close(fd);
}

START_TEST(head_is_get_without_the_body)
{
	static char out[65536];
	struct berth b;
	const char *end;
	long len;

	api_up(&b, NULL);
	raw(&b, "HEAD /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	    "\r\n", out, sizeof(out));
	ck_assert_msg(strncmp(out, "HTTP/1.1 200 ", 13) == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "Content-Type: application/json"));
	ck_assert_ptr_nonnull(end = strstr(out, "\r\n\r\n"));
	ck_assert_msg(end[4] == '\0', "a body after HEAD: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "Content-Length: "));
	len = strtol(strstr(out, "Content-Length: ") + 16, NULL, 10);
	ck_assert_int_gt(len, 10);
	/* An error too: its status and no body. */
	raw(&b, "HEAD /v1/allocation/nope HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n", out, sizeof(out));
	ck_assert_msg(strncmp(out, "HTTP/1.1 404 ", 13) == 0, "%s", out);
	ck_assert_ptr_nonnull(end = strstr(out, "\r\n\r\n"));
	ck_assert_msg(end[4] == '\0', "a body after HEAD: %s", out);
	/* Allow names HEAD beside GET. */
	raw(&b, "PATCH /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	    "\r\n", out, sizeof(out));
	ck_assert_msg(strncmp(out, "HTTP/1.1 405 ", 13) == 0, "%s", out);
	ck_assert_msg(strstr(out, "Allow: GET, HEAD\r\n") != NULL, "%s", out);
	/* Each method evhttp knows is ours to refuse, in JSON. */
	raw(&b, "TRACE /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	    "\r\n", out, sizeof(out));
	ck_assert_msg(strncmp(out, "HTTP/1.1 405 ", 13) == 0 && strstr(out,
	    "\r\n\r\n{\"code\":405,\"error\":\"TRACE is not allowed") !=
	    NULL, "%s", out);
	api_down(&b);
}
END_TEST

/* out holds one JSON error answer with this status, and nothing HTML. */
static void
assert_json_error(const char *out, int code)
{
	char status[32];
	const char *body;
	json_t *j;

	snprintf(status, sizeof(status), "HTTP/1.1 %d ", code);
	ck_assert_msg(strncmp(out, status, strlen(status)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "Content-Type: application/json\r\n") !=
	    NULL, "%s", out);
	ck_assert_msg(strcasestr(out, "<html") == NULL, "%s", out);
	ck_assert_ptr_nonnull(body = strstr(out, "\r\n\r\n"));
	ck_assert_msg((j = json_loads(body + 4, 0, NULL)) != NULL, "%s", out);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "code")), code);
	ck_assert_ptr_nonnull(json_string_value(json_object_get(j, "error")));
	json_decref(j);
}

START_TEST(requests_evhttp_refuses_are_answered_in_json)
{
	static char out[65536], big[80 * 1024];
	const char *p, *q;
	struct berth b;

	api_up(&b, NULL);
	/* A request line that is not one. */
	raw(&b, "GARBAGE\r\n\r\n", out, sizeof(out));
	assert_json_error(out, 400);
	raw(&b, "GET /v1/status HTTP/9x\r\nHost: x\r\n\r\n", out, sizeof(out));
	assert_json_error(out, 400);
	/* A method evhttp does not know. */
	raw(&b, "BREW /v1/status HTTP/1.1\r\nHost: x\r\n\r\n", out, sizeof(out));
	ck_assert_msg(strncmp(out, "HTTP/1.1 4", 10) == 0 ||
	    strncmp(out, "HTTP/1.1 5", 10) == 0, "%s", out);
	assert_json_error(out, atoi(out + 9));
	/* A header line without a colon. */
	raw(&b, "GET /v1/status HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
	    out, sizeof(out));
	assert_json_error(out, 400);
	/* Headers over the limit (16 KiB). */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /v1/status HTTP/1.1\r\nX-Big: ", 32);
	memcpy(big + sizeof(big) - 5, "\r\n\r\n", 5);
	raw(&b, big, out, sizeof(out));
	ck_assert_msg(strncmp(out, "HTTP/1.1 4", 10) == 0, "%s", out);
	assert_json_error(out, atoi(out + 9));
	/* A body over the limit, said by its length. */
	raw(&b, "PUT /v1/allocation/x HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 99999999\r\n\r\n{", out, sizeof(out));
	ck_assert_msg(strncmp(out, "HTTP/1.1 4", 10) == 0, "%s", out);
	assert_json_error(out, atoi(out + 9));
	/*
	 * Answers that are ours pass unchanged on one connection: a GET, a
	 * HEAD (a length and no body), a GET again, then a malformed one.
	 */
	raw(&b, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"
	    "HEAD /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET / HTTP/1.1\r\nbad header\r\n\r\n", out, sizeof(out));
	ck_assert_msg(strncmp(out, "HTTP/1.1 200 ", 13) == 0, "%s", out);
	ck_assert_ptr_nonnull(p = strstr(out + 1, "HTTP/1.1 200 "));
	ck_assert_ptr_nonnull(q = strstr(p + 1, "HTTP/1.1 "));
	ck_assert_ptr_nonnull(strstr(q, "\"healthy\""));
	ck_assert_ptr_nonnull(q = strstr(q + 1, "HTTP/1.1 400 "));
	assert_json_error(q, 400);
	api_down(&b);
}
END_TEST

/* GET /v1/events with a query; the answer. */
static json_t *
events_q(struct berth *b, const char *fmt, ...)
{
	char path[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return api_ok(b, "GET", path, NULL);
}

static long long
jint(json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* /v1/metrics passes `promtool check metrics`; the page, to free(). */
static char *
metrics_lint(struct berth *b)
{
	char file[1024], cmd[1200], out[4096];
	struct answer a;
	size_t n;
	FILE *p;
	int st;

	ck_assert_msg(system("command -v promtool >/dev/null") == 0,
	    "promtool is missing (Debian's prometheus; scripts/setup.sh)");
	request(b, "GET", "/v1/metrics", NULL, 0, &a);
	ck_assert_int_eq(a.status, 200);
	snprintf(file, sizeof(file), "%s/metrics.txt", b->dir);
	harness_write(file, a.body);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", file);
	ck_assert_ptr_nonnull(p = popen(cmd, "r"));
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && n == 0,
	    "promtool check metrics: %d: %s\n%s", st, out, a.body);
	return strdup(a.body);
}

/* "2026-11-24T09:52:01.123Z": RFC 3339, in UTC. */
static void
assert_rfc3339(const char *t)
{
	struct tm tm = { 0 };
	const char *end = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm);

	ck_assert_msg(end != NULL && strlen(end) == 5 && end[0] == '.' &&
	    end[4] == 'Z', "not RFC 3339 in UTC: %s", t);
	ck_assert_int_ge(tm.tm_year, 120);
}

/*
 * A follower across a supervisor restart: the index starts over and the
 * epoch changes, and both an index beyond the last and the old epoch
 * answer at once with lost and the new log from its start. The metrics
 * pass promtool before and after, with the plugin's labels, the task
 * restarts, build and process metrics, and no error for the re-adopted
 * plugin's binds.
 */
START_TEST(events_follow_a_restart_and_metrics_pass_lint)
{
	struct berth b;
	json_t *j, *ev, *e;
	char doc[2048], *m, out[65536], err[4096], big[32];
	long long epoch, last;
	struct timespec t0, t1;
	size_t i;

	api_up(&b, NULL);
	hostpath_doc(doc, sizeof(doc), "a1", "hostpath");
	json_decref(api_ok(&b, "PUT", "/v1/allocations", doc));
	json_decref(wait_plugin_healthy(&b, "hostpath"));
	m = metrics_lint(&b);
	ck_assert_ptr_nonnull(strstr(m, "\nberth_build_info{version=\""));
	ck_assert_ptr_nonnull(strstr(m, "\nberth_task_restarts_total{alloc="
	    "\"a1\",task=\"plugin\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(m, "\nberth_volumes_in_use 0\n"));
	ck_assert_ptr_nonnull(strstr(m, "\nprocess_resident_memory_bytes "));
	ck_assert_ptr_nonnull(strstr(m, "\nprocess_cpu_seconds_total "));
	ck_assert_ptr_nonnull(strstr(m, "\nprocess_open_fds "));
	ck_assert_ptr_nonnull(strstr(m, "# TYPE berth_events_index gauge\n"));
	free(m);

	j = events_q(&b, "/v1/events?index=0");
	epoch = jint(j, "epoch");
	last = jint(j, "index");
	ck_assert_int_gt(epoch, 0);
	ck_assert_int_ge(last, 3);
	ck_assert(json_is_false(json_object_get(j, "lost")));
	ev = json_object_get(j, "events");
	json_array_foreach(ev, i, e)
		assert_rfc3339(jstr(e, "time"));
	json_decref(j);
	/* Caught up, same epoch: nothing lost, nothing new. */
	j = events_q(&b, "/v1/events?index=%lld&epoch=%lld&timeout=0", last,
	    epoch);
	ck_assert(json_is_false(json_object_get(j, "lost")));
	ck_assert_int_eq(json_array_size(json_object_get(j, "events")), 0);
	json_decref(j);

	berth_kill(&b);
	berth_start(&b);
	json_decref(wait_plugin_healthy(&b, "hostpath"));
	/* Beyond the last index: at once, lost, from the start. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	j = events_q(&b, "/v1/events?index=%lld&timeout=30s", last + 1000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 5);
	ck_assert(json_is_true(json_object_get(j, "lost")));
	ck_assert_int_ne(jint(j, "epoch"), epoch);
	ck_assert_int_eq(jint(json_array_get(json_object_get(j, "events"), 0),
	    "index"), 1);
	json_decref(j);
	/* berthctl says so, and goes on from the new log's start. */
	snprintf(big, sizeof(big), "%lld", last + 1000);
	ck_assert_int_eq(ctl(&b, out, sizeof(out), err, sizeof(err), "events",
	    "--index", big, NULL), 0);
	ck_assert_msg(strstr(err, "may have been missed") != NULL, "%s", err);
	/* The old epoch, at an index the new log has: lost, from 1. */
	j = events_q(&b, "/v1/events?index=1&epoch=%lld&timeout=30s", epoch);
	ck_assert(json_is_true(json_object_get(j, "lost")));
	ck_assert_int_eq(jint(json_array_get(json_object_get(j, "events"), 0),
	    "index"), 1);
	last = jint(j, "index");
	epoch = jint(j, "epoch");
	json_decref(j);
	/* The new epoch: followed as before. */
	j = events_q(&b, "/v1/events?index=%lld&epoch=%lld&timeout=0", last,
	    epoch);
	ck_assert(json_is_false(json_object_get(j, "lost")));
	json_decref(j);

	/* The plugin was adopted: its restarts and binds are no error. */
	m = metrics_lint(&b);
	ck_assert_ptr_nonnull(strstr(m, "\nberth_task_restarts_total{alloc="
	    "\"a1\",task=\"plugin\"} 0\n"));
	ck_assert_ptr_null(strstr(m, "result=\"ERROR_CONFLICT\""));
	free(m);
	json_decref(api_ok(&b, "DELETE", "/v1/allocation/a1", NULL));
	wait_event(&b, "AllocStopped", "a1", NULL, 10000);
	api_down(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("api");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, read_routes_answer);
	tcase_add_test(tc, bad_requests_say_what_was_wrong);
	tcase_add_test(tc, allocations_plugins_events_and_metrics);
	tcase_add_test(tc, peer_credentials_are_checked);
	tcase_add_test(tc, berthctl_drives_the_supervisor);
	tcase_add_test(tc, berthctl_help_usage_and_ids);
	tcase_add_test(tc, berthctl_tables_fit_and_json_everywhere);
	tcase_add_test(tc, head_is_get_without_the_body);
	tcase_add_test(tc, requests_evhttp_refuses_are_answered_in_json);
	tcase_add_test(tc, events_follow_a_restart_and_metrics_pass_lint);
	return harness_run("api", tc);
}
