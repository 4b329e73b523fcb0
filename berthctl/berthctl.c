/*
 * berthctl: the command line over berth's operator API (api.sock).
 *
 * Nouns and verbs, as in nomad's CLI: status; plugin list|status;
 * volume list|status|register|create|delete; alloc run|stop|list|status;
 * driver list; device list; events [-f]. Tables for people by default,
 * the API's JSON with --json for scripts.
 *
 * Exit codes scripts can rely on: 0 done; 1 the API answered an error
 * (or a wait ran out of time); 2 usage error; 3 the supervisor could not
 * be reached. Must not: keep state of its own, or retry a change.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "duration.h"
#include "http.h"
#include "log.h"

#define EXIT_API	1
#define EXIT_USAGE	2
#define EXIT_UNREACHABLE 3

#define DEFAULT_SOCKET	"/run/berth/api.sock"
#define REQUEST_TIMEOUT_MS 30000
#define POLL_INTERVAL_MS 250

static const char *sock_path = DEFAULT_SOCKET;
static bool json_out;
static int64_t wait_timeout_ms = 120 * 1000;

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr,
"usage: berthctl [--socket PATH] [--json] COMMAND\n"
"\n"
"  status                         the supervisor, its helpers, counts\n"
"  plugin list\n"
"  plugin status ID [--wait-healthy] [--timeout D]\n"
"  volume list\n"
"  volume status ID\n"
"  volume register FILE           a volume document (JSON) with an \"id\"\n"
"  volume create FILE\n"
"  volume delete ID\n"
"  alloc run FILE [--wait] [--timeout D]\n"
"  alloc stop ID\n"
"  alloc list\n"
"  alloc status ID\n"
"  driver list\n"
"  device list\n"
"  events [-f] [--index N]        the event log; -f follows it\n"
"\n"
"The socket: --socket, else $BERTH_API, else " DEFAULT_SOCKET ".\n"
"Exit: 0 ok, 1 the API answered an error, 2 usage, 3 unreachable.\n");
	exit(EXIT_USAGE);
}

static void die(int code, const char *fmt, ...) BERTH_PRINTF(2, 3)
    __attribute__((noreturn));

static void
die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "berthctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(code);
}

/* ---- talking to the API ---- */

static const char *
socket_hint(void)
{
	return "is berth-supervisor running, and is your user root, its user "
	    "or in its api_group?";
}

/*
 * One request. The answer's JSON in *out (NULL when not JSON); returns
 * the HTTP status. Exits 3 when the supervisor cannot be reached.
 */
static int
call(const char *method, const char *path, const char *body, size_t len,
    int timeout_ms, json_t **out)
{
	struct http_response resp;
	char why[600];

	if (http_request(sock_path, method, path, body, len, timeout_ms,
	    &resp, why, sizeof(why)) < 0)
		die(EXIT_UNREACHABLE, "%s (%s)", why, socket_hint());
	*out = json_loads(resp.body, 0, NULL);
	if (*out == NULL && resp.status < 400)
		die(EXIT_API, "%s %s: the answer (%d) is not JSON: %.200s",
		    method, path, resp.status, resp.body);
	if (*out == NULL)
		*out = json_pack("{s:i, s:s}", "code", resp.status, "error",
		    resp.body);
	http_response_free(&resp);
	return resp.status;
}

static void
print_json(json_t *j)
{
	char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (text != NULL) {
		printf("%s\n", text);
		free(text);
	}
}

/* An error answer: said on stderr (and given whole with --json); exit 1. */
static void __attribute__((noreturn))
api_failed(const char *what, int status, json_t *j)
{
	json_t *probs = json_object_get(j, "problems"), *p;
	const char *err = json_string_value(json_object_get(j, "error"));
	size_t i;

	if (json_out)
		print_json(j);
	fprintf(stderr, "berthctl: %s: %s (%d)\n", what, err != NULL ? err :
	    "error", status);
	json_array_foreach(probs, i, p)
		fprintf(stderr, "  %s\n", json_string_value(p));
	json_decref(j);
	exit(EXIT_API);
}

/* GET path, and exit on any error. */
static json_t *
get(const char *what, const char *path)
{
	json_t *j;
	int status = call("GET", path, NULL, 0, REQUEST_TIMEOUT_MS, &j);

	if (status >= 400)
		api_failed(what, status, j);
	return j;
}

/* GET for a table; NULL when --json printed the answer as it is. */
static json_t *
get_table(const char *what, const char *path)
{
	json_t *j = get(what, path);

	if (!json_out)
		return j;
	print_json(j);
	json_decref(j);
	return NULL;
}

/* An id in a path: the API's ids need no escaping, but refuse a '/'. */
static const char *
path_of(char *buf, size_t n, const char *fmt, const char *id)
{
	if (strchr(id, '/') != NULL || strchr(id, '?') != NULL ||
	    strchr(id, '%') != NULL || *id == '\0')
		die(EXIT_USAGE, "\"%s\" is not an identifier", id);
	snprintf(buf, n, fmt, id);
	return buf;
}

static char *
read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n;

	if (f == NULL)
		die(EXIT_USAGE, "cannot read %s: %s", path, strerror(errno));
	*len = 0;
	do {
		if (cap - *len < 4096 && (buf = realloc(buf, (cap = cap * 2 +
		    8192) + 1)) == NULL)
			die(EXIT_USAGE, "out of memory");
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n > 0 && *len < 4 * 1024 * 1024);
	if (ferror(f))
		die(EXIT_USAGE, "cannot read %s: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	buf[*len] = '\0';
	return buf;
}

/* ---- tables ---- */

struct table {
	size_t ncols, nrows, cap;
	char **cells;
};

static void
row(struct table *t, ...)
{
	va_list ap;
	size_t i;

	if (t->nrows == t->cap) {
		t->cap = t->cap * 2 + 8;
		if ((t->cells = realloc(t->cells, t->cap * t->ncols *
		    sizeof(char *))) == NULL)
			die(EXIT_API, "out of memory");
	}
	va_start(ap, t);
	for (i = 0; i < t->ncols; i++) {
		const char *c = va_arg(ap, const char *);

		if ((t->cells[t->nrows * t->ncols + i] = strdup(c != NULL ? c :
		    "-")) == NULL)
			die(EXIT_API, "out of memory");
	}
	va_end(ap);
	t->nrows++;
}

/* Aligned columns, two spaces apart; the last column is not padded. */
static void
table_print(struct table *t)
{
	size_t w[16] = { 0 }, i, j, len;

	for (i = 0; i < t->nrows; i++)
		for (j = 0; j < t->ncols && j < 16; j++)
			if ((len = strlen(t->cells[i * t->ncols + j])) > w[j])
				w[j] = len;
	for (i = 0; i < t->nrows; i++) {
		for (j = 0; j < t->ncols; j++) {
			const char *c = t->cells[i * t->ncols + j];

			if (j + 1 < t->ncols)
				printf("%-*s  ", (int)w[j], c);
			else
				printf("%s\n", c);
			free((char *)c);
		}
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

static const char *
str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "-";
}

static const char *
num(json_t *o, const char *key, char *buf, size_t n)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, n, "%s", json_is_true(v) ? "yes" : "no");
	else
		snprintf(buf, n, "-");
	return buf;
}

static const char *
yesno(json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key)) ? "yes" : "no";
}

/* ---- progress while waiting ---- */

static bool tty;
static char last_line[512];

/* On a terminal one line redrawn; elsewhere a line per change. */
static void
progress(int64_t since, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (tty) {
		fprintf(stderr, "\r\033[K[%5.1fs] %s", (double)(http_now_ms() -
		    since) / 1000, line);
		fflush(stderr);
	} else if (strcmp(line, last_line) != 0)
		fprintf(stderr, "%s\n", line);
	snprintf(last_line, sizeof(last_line), "%s", line);
}

static void
progress_end(void)
{
	if (tty && last_line[0] != '\0')
		fprintf(stderr, "\n");
	last_line[0] = '\0';
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- commands ---- */

static bool opt_wait, opt_wait_healthy, opt_follow, opt_timeout;
static unsigned long long opt_index;

static void
cmd_status(void)
{
	json_t *j = get_table("status", "/v1/status"), *h, *c;
	char a[32], b[32], d[32];
	struct table t = { 2, 0, 0, NULL };
	const char *name;
	json_t *p;

	if (j == NULL)
		return;
	h = json_object_get(j, "helpers");
	c = json_object_get(j, "counts");
	row(&t, "Version", str(j, "version"));
	snprintf(a, sizeof(a), "%.1fs", (double)json_integer_value(
	    json_object_get(j, "uptime_ms")) / 1000);
	row(&t, "Uptime", a);
	row(&t, "Supervisor pid", num(j, "pid", b, sizeof(b)));
	json_object_foreach(h, name, p) {
		char line[128];

		snprintf(line, sizeof(line), "pid %s, %s",
		    num(p, "pid", d, sizeof(d)), json_is_true(json_object_get(p,
		    "ready")) ? "ready" : json_is_true(json_object_get(p,
		    "exited")) ? "exited" : "not ready");
		row(&t, name, line);
	}
	snprintf(a, sizeof(a), "%s", num(c, "allocations", b, sizeof(b)));
	row(&t, "Allocations", a);
	snprintf(a, sizeof(a), "%s running of ", num(c, "tasks_running", b,
	    sizeof(b)));
	snprintf(a + strlen(a), sizeof(a) - strlen(a), "%s", num(c, "tasks", b,
	    sizeof(b)));
	row(&t, "Tasks", a);
	snprintf(a, sizeof(a), "%s healthy of ", num(c,
	    "plugin_instances_healthy", b, sizeof(b)));
	snprintf(a + strlen(a), sizeof(a) - strlen(a), "%s", num(c,
	    "plugin_instances", b, sizeof(b)));
	row(&t, "Plugin instances", a);
	row(&t, "Event index", num(j, "events_index", b, sizeof(b)));
	table_print(&t);
	json_decref(j);
}

static void
cmd_plugin_list(void)
{
	json_t *j = get_table("plugin list", "/v1/plugins"), *p;
	struct table t = { 6, 0, 0, NULL };
	char a[32], b[32];
	size_t i;

	if (j == NULL)
		return;
	row(&t, "ID", "PROVIDER", "VERSION", "HEALTHY", "INSTANCES", "TASKS");
	json_array_foreach(json_object_get(j, "plugins"), i, p) {
		snprintf(a, sizeof(a), "%zu", json_array_size(json_object_get(p,
		    "instances")));
		snprintf(b, sizeof(b), "%zu", json_array_size(json_object_get(p,
		    "tasks")));
		row(&t, str(p, "id"), str(p, "provider"), str(p, "version"),
		    yesno(p, "healthy"), a, b);
	}
	table_print(&t);
	json_decref(j);
}

static void
show_plugin(json_t *p)
{
	struct table t = { 2, 0, 0, NULL };
	json_t *v;
	size_t i;

	row(&t, "ID", str(p, "id"));
	row(&t, "Provider", str(p, "provider"));
	row(&t, "Version", str(p, "version"));
	row(&t, "Healthy", yesno(p, "healthy"));
	table_print(&t);
	printf("\nInstances\n");
	t.ncols = 4;
	row(&t, "TYPE", "ALLOC", "HEALTHY", "HEALTH");
	json_array_foreach(json_object_get(p, "instances"), i, v)
		row(&t, str(v, "type"), str(v, "alloc"), yesno(v, "healthy"),
		    str(v, "health"));
	table_print(&t);
	printf("\nTasks\n");
	t.ncols = 5;
	row(&t, "ALLOC", "TASK", "TYPE", "STATE", "HEALTHY");
	json_array_foreach(json_object_get(p, "tasks"), i, v)
		row(&t, str(v, "alloc"), str(v, "task"), str(v, "type"),
		    str(v, "state"), yesno(v, "healthy"));
	table_print(&t);
}

static void
cmd_plugin_status(const char *id)
{
	char path[512];
	int64_t since = http_now_ms();
	json_t *j;
	int status;

	path_of(path, sizeof(path), "/v1/plugin/%s", id);
	for (;;) {
		status = call("GET", path, NULL, 0, REQUEST_TIMEOUT_MS, &j);
		if (!opt_wait_healthy && status >= 400)
			api_failed("plugin status", status, j);
		if (!opt_wait_healthy || (status == 200 &&
		    json_is_true(json_object_get(j, "healthy"))))
			break;
		if (status >= 400 && status != 404)
			api_failed("plugin status", status, j);
		progress(since, "plugin %s: %s", id, status == 404 ?
		    "not known yet" : "not healthy yet");
		if (http_now_ms() - since > wait_timeout_ms) {
			progress_end();
			json_decref(j);
			die(EXIT_API, "plugin %s: not healthy within the "
			    "timeout", id);
		}
		json_decref(j);
		sleep_ms(POLL_INTERVAL_MS);
	}
	if (opt_wait_healthy)
		progress(since, "plugin %s: healthy", id);
	progress_end();
	if (json_out)
		print_json(j);
	else
		show_plugin(j);
	json_decref(j);
}

/* A change (PUT or DELETE); the answer's JSON, or exit 1 on an error. */
static json_t *
change(const char *what, const char *method, const char *path,
    const char *body, size_t len)
{
	json_t *j;
	int status = call(method, path, body, len, REQUEST_TIMEOUT_MS, &j);

	if (status >= 400)
		api_failed(what, status, j);
	return j;
}

static void
cmd_volume(const char *verb, const char *arg)
{
	char path[512], *body;
	json_t *j, *doc;
	size_t len;

	if (strcmp(verb, "list") == 0 && arg == NULL)
		j = get("volume list", "/v1/volumes");
	else if (strcmp(verb, "status") == 0 && arg != NULL)
		j = get("volume status", path_of(path, sizeof(path),
		    "/v1/volume/%s", arg));
	else if (strcmp(verb, "delete") == 0 && arg != NULL)
		j = change("volume delete", "DELETE", path_of(path,
		    sizeof(path), "/v1/volume/%s", arg), NULL, 0);
	else if ((strcmp(verb, "register") == 0 || strcmp(verb, "create") ==
	    0) && arg != NULL) {
		body = read_file(arg, &len);
		if ((doc = json_loads(body, 0, NULL)) == NULL ||
		    json_string_value(json_object_get(doc, "id")) == NULL)
			die(EXIT_USAGE, "%s: a volume document is a JSON "
			    "object with an \"id\"", arg);
		path_of(path, sizeof(path), strcmp(verb, "create") == 0 ?
		    "/v1/volume/%s/create" : "/v1/volume/%s",
		    json_string_value(json_object_get(doc, "id")));
		json_decref(doc);
		j = change(strcmp(verb, "create") == 0 ? "volume create" :
		    "volume register", "PUT", path, body, len);
		free(body);
	} else
		usage();
	print_json(j);
	json_decref(j);
}

static void
cmd_alloc_list(void)
{
	json_t *j = get_table("alloc list", "/v1/allocations"), *a;
	struct table t = { 4, 0, 0, NULL };
	char n[32];
	size_t i;

	if (j == NULL)
		return;
	row(&t, "ID", "STATUS", "TASKS", "FILE");
	json_array_foreach(json_object_get(j, "allocations"), i, a) {
		snprintf(n, sizeof(n), "%zu", json_array_size(json_object_get(a,
		    "tasks")));
		row(&t, str(a, "id"), str(a, "status"), n, str(a, "file"));
	}
	table_print(&t);
	json_decref(j);
}

static void
show_alloc(json_t *a)
{
	struct table t = { 2, 0, 0, NULL };
	json_t *task, *e, *plugin;
	char pid[32], restarts[32], when[32];
	size_t i, k;

	row(&t, "ID", str(a, "id"));
	row(&t, "Namespace", str(a, "namespace"));
	row(&t, "Status", str(a, "status"));
	row(&t, "File", str(a, "file"));
	table_print(&t);
	printf("\nTasks\n");
	t.ncols = 7;
	row(&t, "NAME", "DRIVER", "STATE", "PID", "RESTARTS", "PLUGIN",
	    "HEALTHY");
	json_array_foreach(json_object_get(a, "tasks"), i, task) {
		plugin = json_object_get(task, "csi_plugin");
		row(&t, str(task, "name"), str(task, "driver"), str(task,
		    "state"), num(task, "pid", pid, sizeof(pid)), num(task,
		    "restarts", restarts, sizeof(restarts)), plugin != NULL ?
		    str(plugin, "id") : "-", plugin != NULL ? yesno(plugin,
		    "healthy") : "-");
	}
	table_print(&t);
	printf("\nRecent events\n");
	t.ncols = 4;
	row(&t, "TIME", "TASK", "TYPE", "MESSAGE");
	json_array_foreach(json_object_get(a, "tasks"), i, task)
		json_array_foreach(json_object_get(task, "events"), k, e) {
			time_t at = (time_t)json_integer_value(
			    json_object_get(e, "time"));
			struct tm tm;

			localtime_r(&at, &tm);
			strftime(when, sizeof(when), "%H:%M:%S", &tm);
			row(&t, when, str(task, "name"), str(e, "type"),
			    str(e, "message"));
		}
	table_print(&t);
}

/* Every task running, and a plugin task healthy too. */
static bool
alloc_ready(json_t *a, char *what, size_t n)
{
	json_t *task, *plugin;
	size_t i;

	snprintf(what, n, "%s", str(a, "status"));
	json_array_foreach(json_object_get(a, "tasks"), i, task) {
		plugin = json_object_get(task, "csi_plugin");
		if (strcmp(str(task, "state"), "running") != 0) {
			snprintf(what, n, "task %s %s", str(task, "name"),
			    str(task, "state"));
			return false;
		}
		if (plugin != NULL && !json_is_true(json_object_get(plugin,
		    "healthy"))) {
			snprintf(what, n, "task %s running, plugin %s not "
			    "healthy yet", str(task, "name"), str(plugin,
			    "id"));
			return false;
		}
	}
	return strcmp(str(a, "status"), "running") == 0;
}

static void
cmd_alloc_run(const char *file)
{
	char path[512], what[256], *body;
	int64_t since;
	json_t *j;
	size_t len;
	int status;

	body = read_file(file, &len);
	j = change("alloc run", "PUT", "/v1/allocations", body, len);
	free(body);
	path_of(path, sizeof(path), "/v1/allocation/%s", str(j, "id"));
	if (!opt_wait) {
		if (json_out)
			print_json(j);
		else
			printf("alloc %s submitted (%s)\n", str(j, "id"),
			    str(j, "file"));
		json_decref(j);
		return;
	}
	json_decref(j);
	since = http_now_ms();
	for (;;) {
		/* 404 until the runner has read the file. */
		status = call("GET", path, NULL, 0, REQUEST_TIMEOUT_MS, &j);
		if (status >= 400 && status != 404)
			api_failed("alloc run", status, j);
		if (status == 200 && alloc_ready(j, what, sizeof(what)))
			break;
		progress(since, "alloc %s: %s", path + strlen(
		    "/v1/allocation/"), status == 404 ? "submitted, not "
		    "started yet" : what);
		json_decref(j);
		if (http_now_ms() - since > wait_timeout_ms) {
			progress_end();
			die(EXIT_API, "alloc %s: not running within the "
			    "timeout", path + strlen("/v1/allocation/"));
		}
		sleep_ms(POLL_INTERVAL_MS);
	}
	progress(since, "alloc %s: running", str(j, "id"));
	progress_end();
	if (json_out)
		print_json(j);
	else
		show_alloc(j);
	json_decref(j);
}

static void
cmd_alloc(const char *verb, const char *arg)
{
	char path[512];
	json_t *j;

	if (strcmp(verb, "list") == 0 && arg == NULL) {
		cmd_alloc_list();
		return;
	}
	if (arg == NULL)
		usage();
	if (strcmp(verb, "run") == 0) {
		cmd_alloc_run(arg);
		return;
	}
	if (strcmp(verb, "stop") == 0) {
		j = change("alloc stop", "DELETE", path_of(path, sizeof(path),
		    "/v1/allocation/%s", arg), NULL, 0);
		if (json_out)
			print_json(j);
		else
			printf("alloc %s stopping\n", arg);
	} else if (strcmp(verb, "status") == 0) {
		j = get("alloc status", path_of(path, sizeof(path),
		    "/v1/allocation/%s", arg));
		if (json_out)
			print_json(j);
		else
			show_alloc(j);
	} else
		usage();
	json_decref(j);
}

static void
cmd_driver_list(void)
{
	json_t *j = get_table("driver list", "/v1/drivers"), *d;
	struct table t = { 4, 0, 0, NULL };
	size_t i;

	if (j == NULL)
		return;
	row(&t, "NAME", "DETECTED", "HEALTHY", "DESCRIPTION");
	json_array_foreach(json_object_get(j, "drivers"), i, d)
		row(&t, str(d, "name"), yesno(d, "detected"), yesno(d,
		    "healthy"), str(d, "description"));
	table_print(&t);
	json_decref(j);
}

static void
cmd_device_list(void)
{
	json_t *j = get_table("device list", "/v1/devices"), *g, *d;
	struct table t = { 6, 0, 0, NULL };
	size_t i, k;

	if (j == NULL)
		return;
	if (json_array_size(json_object_get(j, "devices")) == 0)
		printf("no devices%s%s%s\n", json_object_get(j, "note") ?
		    " (" : "", json_object_get(j, "note") ? str(j, "note") :
		    "", json_object_get(j, "note") ? ")" : "");
	else {
		/* One row per device, under its group (vendor, type, name). */
		row(&t, "TYPE", "VENDOR", "NAME", "ID", "HEALTHY", "GONE");
		json_array_foreach(json_object_get(j, "devices"), i, g)
			json_array_foreach(json_object_get(g, "devices"), k, d)
				row(&t, str(g, "type"), str(g, "vendor"),
				    str(g, "name"), str(d, "id"), yesno(d,
				    "healthy"), yesno(d, "gone"));
		table_print(&t);
	}
	json_decref(j);
}

static void
print_event(json_t *e)
{
	char when[32], who[400];
	time_t at = (time_t)(json_integer_value(json_object_get(e,
	    "time_ms")) / 1000);
	struct tm tm;

	if (json_out) {
		char *text = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);

		printf("%s\n", text != NULL ? text : "{}");
		free(text);
		return;
	}
	localtime_r(&at, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(who, sizeof(who), "%s%s%s%s%s%s", json_object_get(e, "alloc") ?
	    "alloc=" : "", json_object_get(e, "alloc") ? str(e, "alloc") : "",
	    json_object_get(e, "task") ? " task=" : "",
	    json_object_get(e, "task") ? str(e, "task") : "",
	    json_object_get(e, "plugin") ? " plugin=" : "",
	    json_object_get(e, "plugin") ? str(e, "plugin") : "");
	printf("%-6lld %s %-7s %-18s %s: %s\n", (long long)json_integer_value(
	    json_object_get(e, "index")), when, str(e, "topic"), str(e,
	    "type"), who, str(e, "message"));
}

static void
cmd_events(void)
{
	unsigned long long index = opt_index;
	char path[128];
	json_t *j, *e;
	size_t i;
	int status;

	for (;;) {
		snprintf(path, sizeof(path), "/v1/events?index=%llu&timeout=%s",
		    index, opt_follow ? "60s" : "0");
		/* The server holds a poll up to 60s: wait longer than that. */
		if ((status = call("GET", path, NULL, 0, 90 * 1000, &j)) >= 400)
			api_failed("events", status, j);
		if (json_is_true(json_object_get(j, "lost")))
			fprintf(stderr, "berthctl: events after %llu are no "
			    "longer kept; going on from %lld\n", index,
			    (long long)json_integer_value(json_object_get(j,
			    "first")));
		json_array_foreach(json_object_get(j, "events"), i, e)
			print_event(e);
		fflush(stdout);
		/* A restarted supervisor counts from 1 again. */
		if ((unsigned long long)json_integer_value(json_object_get(j,
		    "index")) < index)
			index = 0;
		else
			index = (unsigned long long)json_integer_value(
			    json_object_get(j, "index"));
		json_decref(j);
		if (!opt_follow)
			return;
	}
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "wait", no_argument, NULL, 'w' },
		{ "wait-healthy", no_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ "follow", no_argument, NULL, 'f' },
		{ "index", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *noun, *verb, *arg, *env;
	char why[200], *end;
	int ch, nargs;

	if ((env = getenv("BERTH_API")) != NULL && *env != '\0')
		sock_path = env;
	while ((ch = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		switch (ch) {
		case 's': sock_path = optarg; break;
		case 'j': json_out = true; break;
		case 'w': opt_wait = true; break;
		case 'H': opt_wait_healthy = true; break;
		case 'f': opt_follow = true; break;
		case 't':
			if (duration_parse(optarg, &wait_timeout_ms, why,
			    sizeof(why)) < 0)
				die(EXIT_USAGE, "--timeout: %s", why);
			opt_timeout = true;
			break;
		case 'i':
			errno = 0;
			opt_index = strtoull(optarg, &end, 10);
			if (*optarg == '\0' || *optarg == '-' || *end != '\0' ||
			    errno != 0)
				die(EXIT_USAGE, "--index: \"%s\" is not a "
				    "whole number", optarg);
			break;
		default: usage();
		}
	}
	nargs = argc - optind;
	if (nargs < 1)
		usage();
	noun = argv[optind];
	verb = nargs > 1 ? argv[optind + 1] : NULL;
	arg = nargs > 2 ? argv[optind + 2] : NULL;
	if (nargs > 3)
		usage();
	tty = isatty(STDERR_FILENO);
	signal(SIGPIPE, SIG_IGN);
	/* An option another command takes is a mistake here, not a no-op. */
	if ((opt_wait && (strcmp(noun, "alloc") != 0 || verb == NULL ||
	    strcmp(verb, "run") != 0)) || (opt_wait_healthy &&
	    (strcmp(noun, "plugin") != 0 || verb == NULL || strcmp(verb,
	    "status") != 0)) || (opt_timeout && !opt_wait &&
	    !opt_wait_healthy) || ((opt_follow || opt_index) &&
	    strcmp(noun, "events") != 0))
		usage();
	if (strcmp(noun, "status") == 0 && verb == NULL)
		cmd_status();
	else if (strcmp(noun, "plugin") == 0 && verb != NULL &&
	    strcmp(verb, "list") == 0 && arg == NULL)
		cmd_plugin_list();
	else if (strcmp(noun, "plugin") == 0 && verb != NULL &&
	    strcmp(verb, "status") == 0 && arg != NULL)
		cmd_plugin_status(arg);
	else if (strcmp(noun, "volume") == 0 && verb != NULL)
		cmd_volume(verb, arg);
	else if (strcmp(noun, "alloc") == 0 && verb != NULL)
		cmd_alloc(verb, arg);
	else if (strcmp(noun, "driver") == 0 && verb != NULL &&
	    strcmp(verb, "list") == 0 && arg == NULL)
		cmd_driver_list();
	else if (strcmp(noun, "device") == 0 && verb != NULL &&
	    strcmp(verb, "list") == 0 && arg == NULL)
		cmd_device_list();
	else if (strcmp(noun, "events") == 0 && verb == NULL)
		cmd_events();
	else
		usage();
	return 0;
}
