/*
 * berthctl: the command line over berth's operator API (api.sock).
 *
 * Nouns and verbs, as in nomad's CLI: status; version; plugin
 * list|status|snapshots; volume list|status|register|create|delete|expand,
 * volume snapshot create|delete|list; alloc
 * run|stop|list|status|logs; driver list; device list; events [-f]. Tables
 * for people by default, the API's JSON with --json for scripts; help
 * for each command on stdout (help NOUN [VERB], or --help, -h).
 *
 * Exit codes scripts can rely on: 0 done; 1 refused or failed (the API
 * answered an error, an allocation failed, a wait ran out of time, a
 * file could not be read); 2 usage error, ids included, before any
 * request; 3 the supervisor could not be reached, or refused us by its
 * peer check. Must not: keep state of its own, or retry a change.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "duration.h"
#include "ident.h"
#include "log.h"
#include "request.h"
#include "table.h"

#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_UNREACHABLE 3

#define DEFAULT_SOCKET	"/run/berth/api.sock"
#define REQUEST_TIMEOUT_MS 30000
#define VERSION_TIMEOUT_MS 3000
#define POLL_INTERVAL_MS 250

/* The options a command may take, beyond --socket, --json and --help. */
#define O_WAIT		0x01
#define O_WAIT_HEALTHY	0x02
#define O_TIMEOUT	0x04
#define O_FOLLOW	0x08
#define O_INDEX		0x10
#define O_FORCE		0x20
#define O_DISABLE	0x40
#define O_STDERR	0x80

struct cmd {
	const char *noun, *verb;	/* verb NULL: the noun alone */
	const char *arg;		/* "ID", "FILE", "ID TASK", NULL: none */
	const char *opts;		/* its options, as in its synopsis */
	int allowed;			/* O_* */
	const char *summary;
	const char *help;
	void (*run)(const char *arg);
};

static const char *sock_path = DEFAULT_SOCKET;
static bool json_out;
static int64_t wait_timeout_ms = 120 * 1000;
static bool opt_wait, opt_wait_healthy, opt_follow, opt_force, opt_disable;
static bool opt_stderr;
/* A command's second argument ("ID TASK", "ID SIZE"), or NULL. */
static const char *arg2;
static unsigned long long opt_index;
/* What an error answer is about: "allocation", "web". */
static const char *subject_kind, *subject_id;

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
 * One request. The answer's JSON in *out (an error object when the
 * answer is not JSON); returns the HTTP status. Exits 3 when the
 * supervisor cannot be reached.
 */
static long
call(const char *method, const char *path, const char *body, size_t len,
    long timeout_ms, json_t **out)
{
	struct answer a;
	char why[600];
	long status;

	if (request(sock_path, method, path, body, len, timeout_ms, &a, why,
	    sizeof(why)) < 0)
		die(EXIT_UNREACHABLE, "%s (%s)", why, socket_hint());
	*out = json_loads(a.body, 0, NULL);
	if (*out == NULL && a.status < 400)
		die(EXIT_FAIL, "the answer to %s %s (%ld) is not JSON", method,
		    path, a.status);
	if (*out == NULL)
		*out = json_pack("{s:I, s:s}", "code", (json_int_t)a.status,
		    "error", "the request was refused");
	answer_free(&a);
	status = a.status;
	return status;
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

static bool
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * The API's message in the operator's words: no helper's name
 * ("berth-registry: ") and no enum ("ERROR_NOT_FOUND: ") in front.
 */
static void
plain_words(const char *in, char *out, size_t n)
{
	size_t o = 0, k;

	while (*in != '\0' && o + 1 < n) {
		k = 0;
		if (starts(in, "berth-"))
			k = strspn(in + 6, "abcdefghijklmnopqrstuvwxyz") + 6;
		else if (starts(in, "ERROR_"))
			k = strspn(in + 6, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") + 6;
		if (k > 6 && in[k] == ':' && in[k + 1] == ' ') {
			in += k + 2;
			continue;
		}
		if (starts(in, "cannot reach berth-registry")) {
			o += (size_t)snprintf(out + o, n - o, "the volume "
			    "registry is not available");
			in += strlen("cannot reach berth-registry");
			continue;
		}
		out[o++] = *in++;
	}
	out[o < n ? o : n - 1] = '\0';
}

/*
 * An error answer: said on stderr (and given whole with --json); exit 1,
 * or 3 when the socket's peer check refused us.
 */
static void __attribute__((noreturn))
api_failed(long status, json_t *j)
{
	json_t *probs = json_object_get(j, "problems"), *p;
	const char *err = json_string_value(json_object_get(j, "error"));
	char words[1024];
	size_t i;

	if (json_out)
		print_json(j);
	plain_words(err != NULL ? err : "refused", words, sizeof(words));
	if (status == 404 && subject_kind != NULL)
		fprintf(stderr, "berthctl: %s %s not found\n", subject_kind,
		    subject_id);
	else if (status == 403) {
		fprintf(stderr, "berthctl: not allowed: %s (%s)\n", words,
		    socket_hint());
		json_decref(j);
		exit(EXIT_UNREACHABLE);
	} else
		fprintf(stderr, "berthctl: %s\n", words);
	json_array_foreach(probs, i, p)
		fprintf(stderr, "  %s\n", json_string_value(p));
	json_array_foreach(json_object_get(j, "volumes"), i, p)
		fprintf(stderr, "  volume %s\n", json_string_value(p));
	json_decref(j);
	exit(EXIT_FAIL);
}

/* A request that must succeed: its answer, or exit 1 on an error. */
static json_t *
must(const char *method, const char *path, const char *body, size_t len)
{
	json_t *j;
	long status = call(method, path, body, len, REQUEST_TIMEOUT_MS, &j);

	if (status >= 400)
		api_failed(status, j);
	return j;
}

/* GET for a table; NULL when --json printed the answer as it is. */
static json_t *
get_table(const char *path)
{
	json_t *j = must("GET", path, NULL, 0);

	if (!json_out)
		return j;
	print_json(j);
	json_decref(j);
	return NULL;
}

/* An id in a path: ids are [A-Za-z0-9._-] (checked), so none is escaped. */
static const char *
path_of(char *buf, size_t n, const char *fmt, const char *id)
{
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
		die(EXIT_FAIL, "cannot read %s: %s", path, strerror(errno));
	*len = 0;
	do {
		if (cap - *len < 4096 && (buf = realloc(buf, (cap = cap * 2 +
		    8192) + 1)) == NULL)
			die(EXIT_FAIL, "out of memory");
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n > 0 && *len < 4 * 1024 * 1024);
	if (ferror(f))
		die(EXIT_FAIL, "cannot read %s: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	buf[*len] = '\0';
	return buf;
}

/* ---- cells ---- */

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
		fprintf(stderr, "\r\033[K[%5.1fs] %s", (double)(now_ms() -
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

static void
cmd_status(const char *arg)
{
	json_t *j = get_table("/v1/status"), *h, *c, *p;
	struct table t = { 2, 0, 0, NULL };
	char a[64], b[32], d[32], line[128];
	const char *name;

	(void)arg;
	if (j == NULL)
		return;
	h = json_object_get(j, "helpers");
	c = json_object_get(j, "counts");
	table_row(&t, "Version", str(j, "version"));
	snprintf(a, sizeof(a), "%.1fs", (double)json_integer_value(
	    json_object_get(j, "uptime_ms")) / 1000);
	table_row(&t, "Uptime", a);
	table_row(&t, "Supervisor pid", num(j, "pid", b, sizeof(b)));
	json_object_foreach(h, name, p) {
		snprintf(line, sizeof(line), "pid %s, %s",
		    num(p, "pid", d, sizeof(d)), json_is_true(json_object_get(p,
		    "ready")) ? "ready" : json_is_true(json_object_get(p,
		    "exited")) ? "exited" : "not ready");
		table_row(&t, name, line);
	}
	table_row(&t, "Allocations", num(c, "allocations", b, sizeof(b)));
	snprintf(a, sizeof(a), "%s running of ", num(c, "tasks_running", b,
	    sizeof(b)));
	snprintf(a + strlen(a), sizeof(a) - strlen(a), "%s", num(c, "tasks", b,
	    sizeof(b)));
	table_row(&t, "Tasks", a);
	snprintf(a, sizeof(a), "%s healthy of ", num(c,
	    "plugin_instances_healthy", b, sizeof(b)));
	snprintf(a + strlen(a), sizeof(a) - strlen(a), "%s", num(c,
	    "plugin_instances", b, sizeof(b)));
	table_row(&t, "Plugin instances", a);
	table_row(&t, "Event index", num(j, "events_index", b, sizeof(b)));
	table_print(&t);
	json_decref(j);
}

/* The client's version, and the server's when it answers in time. */
static void
cmd_version(const char *arg)
{
	const char *server = NULL;
	struct answer a;
	char why[600];
	json_t *j = NULL;

	(void)arg;
	if (request(sock_path, "GET", "/v1/status", NULL, 0,
	    VERSION_TIMEOUT_MS, &a, why, sizeof(why)) == 0) {
		if (a.status == 200 && (j = json_loads(a.body, 0, NULL)) !=
		    NULL)
			server = json_string_value(json_object_get(j,
			    "version"));
		else
			snprintf(why, sizeof(why), "the server answered %ld",
			    a.status);
		answer_free(&a);
	}
	if (json_out)
		printf("{\"client\": \"%s\", \"server\": %s%s%s}\n",
		    BERTH_VERSION, server != NULL ? "\"" : "", server != NULL ?
		    server : "null", server != NULL ? "\"" : "");
	else {
		printf("Client  %s\n", BERTH_VERSION);
		if (server != NULL)
			printf("Server  %s\n", server);
		else {
			printf("Server  not reachable\n");
			fprintf(stderr, "berthctl: %s\n", why);
		}
	}
	json_decref(j);
}

static void
cmd_plugin_list(const char *arg)
{
	json_t *j = get_table("/v1/plugins"), *p;
	struct table t = { 6, 0, 0, NULL };
	char a[32], b[32];
	size_t i;

	(void)arg;
	if (j == NULL)
		return;
	table_row(&t, "ID", "PROVIDER", "VERSION", "HEALTHY", "INSTANCES",
	    "TASKS");
	json_array_foreach(json_object_get(j, "plugins"), i, p) {
		snprintf(a, sizeof(a), "%zu", json_array_size(json_object_get(p,
		    "instances")));
		snprintf(b, sizeof(b), "%zu", json_array_size(json_object_get(p,
		    "tasks")));
		table_row(&t, str(p, "id"), str(p, "provider"), str(p,
		    "version"), yesno(p, "healthy"), a, b);
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

	table_row(&t, "ID", str(p, "id"));
	table_row(&t, "Provider", str(p, "provider"));
	table_row(&t, "Version", str(p, "version"));
	table_row(&t, "Healthy", yesno(p, "healthy"));
	table_print(&t);
	printf("\nInstances\n");
	t.ncols = 4;
	table_row(&t, "TYPE", "ALLOC", "HEALTHY", "HEALTH");
	json_array_foreach(json_object_get(p, "instances"), i, v)
		table_row(&t, str(v, "type"), str(v, "alloc"), yesno(v,
		    "healthy"), str(v, "health"));
	table_print(&t);
	printf("\nTasks\n");
	t.ncols = 5;
	table_row(&t, "ALLOC", "TASK", "TYPE", "STATE", "HEALTHY");
	json_array_foreach(json_object_get(p, "tasks"), i, v)
		table_row(&t, str(v, "alloc"), str(v, "task"), str(v, "type"),
		    str(v, "state"), yesno(v, "healthy"));
	table_print(&t);
}

static void
cmd_plugin_status(const char *id)
{
	char path[512];
	int64_t since = now_ms();
	json_t *j;
	long status;

	subject_kind = "plugin";
	path_of(path, sizeof(path), "/v1/plugin/%s", id);
	for (;;) {
		status = call("GET", path, NULL, 0, REQUEST_TIMEOUT_MS, &j);
		if (!opt_wait_healthy && status >= 400)
			api_failed(status, j);
		if (!opt_wait_healthy || (status == 200 &&
		    json_is_true(json_object_get(j, "healthy"))))
			break;
		if (status >= 400 && status != 404)
			api_failed(status, j);
		progress(since, "plugin %s: waiting for it to be %s", id,
		    status == 404 ? "known" : "healthy");
		if (now_ms() - since > wait_timeout_ms) {
			progress_end();
			json_decref(j);
			die(EXIT_FAIL, "plugin %s: not healthy within the "
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

/* ---- volumes ---- */

static const char *
first_mode(json_t *v, const char *key)
{
	return str(json_array_get(json_object_get(v, "capabilities"), 0), key);
}

static void
cmd_volume_list(const char *arg)
{
	json_t *j = get_table("/v1/volumes"), *v;
	struct table t = { 6, 0, 0, NULL };
	char n[32];
	size_t i;

	(void)arg;
	if (j == NULL)
		return;
	table_row(&t, "ID", "NAMESPACE", "PLUGIN", "ACCESS", "ATTACHMENT",
	    "CLAIMS");
	json_array_foreach(json_object_get(j, "volumes"), i, v) {
		snprintf(n, sizeof(n), "%zu", json_array_size(json_object_get(v,
		    "claims")));
		table_row(&t, str(v, "id"), str(v, "namespace"), str(v,
		    "plugin_id"), first_mode(v, "access_mode"), first_mode(v,
		    "attachment_mode"), n);
	}
	table_print(&t);
	json_decref(j);
}

/* "1048576 used of 16777216, 15728640 available", or why there is none. */
static const char *
usage_line(json_t *stats, const char *key, const char *free_key, char *buf,
    size_t n)
{
	json_t *u = json_object_get(stats, key);

	if (json_is_string(u))
		return json_string_value(u);
	if (!json_is_object(u))
		return "-";
	snprintf(buf, n, "%lld used of %lld, %lld %s", (long long)
	    json_integer_value(json_object_get(u, "used")), (long long)
	    json_integer_value(json_object_get(u, "total")), (long long)
	    json_integer_value(json_object_get(u, free_key)), free_key);
	return buf;
}

static const char *
condition_line(json_t *stats, char *buf, size_t n)
{
	json_t *c = json_object_get(stats, "condition");

	if (json_is_string(c))
		return json_string_value(c);
	if (!json_is_object(c))
		return "-";
	if (!json_is_true(json_object_get(c, "abnormal")))
		return "normal";
	snprintf(buf, n, "abnormal: %s", str(c, "message"));
	return buf;
}

/* Usage and condition, while the volume is in use on this node. */
static void
show_volume_stats(struct table *t, json_t *stats)
{
	char line[1024], n[32];

	if (stats == NULL) {
		table_row(t, "Usage", "not in use on this node");
		return;
	}
	table_row(t, "Bytes", usage_line(stats, "bytes", "available", line,
	    sizeof(line)));
	table_row(t, "Inodes", usage_line(stats, "inodes", "free", line,
	    sizeof(line)));
	table_row(t, "Condition", condition_line(stats, line, sizeof(line)));
	if (json_is_true(json_object_get(stats, "answered")))
		snprintf(line, sizeof(line), "%s ms ago", num(stats, "age_ms",
		    n, sizeof(n)));
	else
		snprintf(line, sizeof(line), "not yet");
	table_row(t, "Stats asked", line);
	if (json_object_get(stats, "error") != NULL)
		table_row(t, "Stats error", str(stats, "error"));
}

static void
show_volume(json_t *v)
{
	struct table t = { 2, 0, 0, NULL };
	json_t *mo = json_object_get(v, "mount_options"), *c;
	const char *key;
	char n[32], line[512];
	size_t i;

	table_row(&t, "ID", str(v, "id"));
	table_row(&t, "Namespace", str(v, "namespace"));
	table_row(&t, "Plugin", str(v, "plugin_id"));
	table_row(&t, "External id", str(v, "external_id"));
	table_row(&t, "Access mode", first_mode(v, "access_mode"));
	table_row(&t, "Attachment", first_mode(v, "attachment_mode"));
	table_row(&t, "File system", mo != NULL && *str(mo, "fs_type") !=
	    '\0' ? str(mo, "fs_type") : "-");
	table_row(&t, "Mount flags", num(mo, "mount_flags_count", n,
	    sizeof(n)));
	table_row(&t, "On plugin restart", str(v, "on_plugin_restart"));
	table_row(&t, "Capacity", json_integer_value(json_object_get(v,
	    "capacity_bytes")) > 0 ? num(v, "capacity_bytes", n, sizeof(n)) :
	    "not known");
	if (json_object_get(v, "snapshot_id") != NULL)
		table_row(&t, "From snapshot", str(v, "snapshot_id"));
	json_object_foreach(json_object_get(v, "context"), key, c) {
		snprintf(line, sizeof(line), "Context %s", key);
		table_row(&t, line, json_string_value(c));
	}
	show_volume_stats(&t, json_object_get(v, "stats"));
	table_print(&t);
	printf("\nClaims\n");
	t.ncols = 3;
	table_row(&t, "ALLOC", "MODE", "ACCESS");
	json_array_foreach(json_object_get(v, "claims"), i, c)
		table_row(&t, str(c, "alloc"), str(c, "mode"), str(c,
		    "access_mode"));
	table_print(&t);
}

static void
volume_subject(const char *id)
{
	static char buf[300];

	snprintf(buf, sizeof(buf), "default/%s", id);
	subject_kind = "volume";
	subject_id = buf;
}

static void
cmd_volume_status(const char *id)
{
	char path[512];
	json_t *j;

	volume_subject(id);
	j = get_table(path_of(path, sizeof(path), "/v1/volume/%s", id));
	if (j == NULL)
		return;
	show_volume(j);
	json_decref(j);
}

/* A change's answer: the JSON, or "volume default/x deleted". */
static void
volume_done(json_t *j)
{
	if (json_out)
		print_json(j);
	else
		printf("volume %s/%s %s\n", str(j, "namespace"), str(j, "id"),
		    str(j, "status"));
	json_decref(j);
}

static void
cmd_volume_delete(const char *id)
{
	char path[512];

	volume_subject(id);
	volume_done(must("DELETE", path_of(path, sizeof(path),
	    "/v1/volume/%s", id), NULL, 0));
}

/* register and create: the id (and namespace) from the document. */
static void
volume_put(const char *file, bool create)
{
	static char subj[300];
	const char *id, *ns, *why;
	char path[512], *body;
	json_t *doc;
	size_t len;

	body = read_file(file, &len);
	if ((doc = json_loads(body, 0, NULL)) == NULL || (id =
	    json_string_value(json_object_get(doc, "id"))) == NULL)
		die(EXIT_FAIL, "%s: a volume document is a JSON object with "
		    "an \"id\"", file);
	if ((why = ident_problem(id, strlen(id))) != NULL)
		die(EXIT_FAIL, "%s: the id \"%s\" %s (an id is 1 to %d of "
		    "A-Z a-z 0-9 . _ -)", file, id, why, BERTH_IDENT_MAX);
	ns = json_string_value(json_object_get(doc, "namespace"));
	snprintf(subj, sizeof(subj), "%s/%s", ns != NULL ? ns : "default",
	    id);
	subject_kind = "volume";
	subject_id = subj;
	path_of(path, sizeof(path), create ? "/v1/volume/%s/create" :
	    "/v1/volume/%s", id);
	json_decref(doc);
	volume_done(must("PUT", path, body, len));
	free(body);
}

/* SIZE: bytes, or a number with K, M, G or T (powers of 1024; "KiB",
 * "Gi" and "G" alike). */
static int64_t
parse_size(const char *s)
{
	static const char units[] = "KMGT";
	const char *u;
	unsigned long long n;
	char *end;
	int shift = 0;

	errno = 0;
	n = strtoull(s, &end, 10);
	if (end != s && *end != '\0' && (u = strchr(units, *end)) != NULL) {
		shift = 10 * (int)(u - units + 1);
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B')
			end++;
	}
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || n == 0 ||
	    n > (unsigned long long)INT64_MAX >> shift)
		die(EXIT_USAGE, "volume expand: \"%s\" is not a size (a "
		    "positive number of bytes, or with K, M, G or T: 2G)", s);
	return (int64_t)(n << shift);
}

/* The answer shows the capacity the volume has now. */
static void
cmd_volume_expand(const char *id)
{
	char path[512], *body;
	json_t *j;

	volume_subject(id);
	j = json_pack("{s:I}", "capacity_min", (json_int_t)parse_size(
	    arg2));
	body = json_dumps(j, 0);
	json_decref(j);
	j = must("PUT", path_of(path, sizeof(path), "/v1/volume/%s/expand",
	    id), body, strlen(body));
	free(body);
	if (json_out) {
		print_json(j);
		json_decref(j);
		return;
	}
	json_decref(j);
	j = must("GET", path_of(path, sizeof(path), "/v1/volume/%s", id),
	    NULL, 0);
	printf("volume %s/%s expanded: capacity %lld bytes\n", str(j,
	    "namespace"), str(j, "id"), (long long)json_integer_value(
	    json_object_get(j, "capacity_bytes")));
	json_decref(j);
}

/* ---- volume snapshot create|delete|list, plugin snapshots ---- */

static void
snapshot_table(json_t *j)
{
	struct table t = { 6, 0, 0, NULL };
	char n[32];
	size_t i;
	json_t *v;

	table_row(&t, "SNAPSHOT", "SOURCE", "PLUGIN", "SIZE", "CREATED",
	    "READY");
	json_array_foreach(json_object_get(j, "snapshots"), i, v)
		table_row(&t, str(v, "snapshot_id"), str(v, "source_volume_id"),
		    str(v, "plugin_id"), num(v, "size_bytes", n, sizeof(n)),
		    str(v, "creation_time"), yesno(v, "ready_to_use"));
	table_print(&t);
}

static void
cmd_snapshot_create(const char *id)
{
	char path[512], *body;
	json_t *j;

	volume_subject(id);
	j = json_pack("{s:s}", "name", arg2);
	body = json_dumps(j, 0);
	json_decref(j);
	j = must("PUT", path_of(path, sizeof(path), "/v1/volume/%s/snapshot",
	    id), body, strlen(body));
	free(body);
	if (json_out)
		print_json(j);
	else
		printf("snapshot %s of volume default/%s created\n", str(j,
		    "snapshot_id"), id);
	json_decref(j);
}

static void
cmd_snapshot_delete(const char *id)
{
	char path[600];
	json_t *j;

	volume_subject(id);
	snprintf(path, sizeof(path), "/v1/volume/%s/snapshot?snapshot_id=%s",
	    id, arg2);
	j = must("DELETE", path, NULL, 0);
	if (json_out)
		print_json(j);
	else
		printf("snapshot %s of volume default/%s deleted\n", arg2, id);
	json_decref(j);
}

static void
cmd_snapshot_list(const char *id)
{
	char path[512];
	json_t *j;

	volume_subject(id);
	if ((j = get_table(path_of(path, sizeof(path),
	    "/v1/volume/%s/snapshots", id))) == NULL)
		return;
	snapshot_table(j);
	json_decref(j);
}

static void
cmd_plugin_snapshots(const char *id)
{
	char path[512];
	json_t *j;

	subject_kind = "plugin";
	if ((j = get_table(path_of(path, sizeof(path),
	    "/v1/snapshots?plugin=%s", id))) == NULL)
		return;
	snapshot_table(j);
	json_decref(j);
}

static void
cmd_volume_register(const char *file)
{
	volume_put(file, false);
}

static void
cmd_volume_create(const char *file)
{
	volume_put(file, true);
}

/* ---- allocations ---- */

/* Its state in Nomad's words, from "state", else the older "status". */
static const char *
alloc_state(json_t *a)
{
	return json_object_get(a, "state") != NULL ? str(a, "state") :
	    str(a, "status");
}

/* A task's last exit: "code 1", "signal 9 (SIGKILL)", or "-". */
static const char *
exit_text(json_t *task, char *buf, size_t n)
{
	json_t *e = json_object_get(task, "last_exit");

	if (json_object_get(e, "signal") != NULL)
		snprintf(buf, n, "signal %lld (%s)", (long long)
		    json_integer_value(json_object_get(e, "signal")), str(e,
		    "name"));
	else if (json_object_get(e, "code") != NULL)
		snprintf(buf, n, "code %lld", (long long)json_integer_value(
		    json_object_get(e, "code")));
	else
		snprintf(buf, n, "-");
	return buf;
}

/* The alloc's last exit: its failed task's, else the last one's told. */
static const char *
alloc_exit(json_t *a, char *buf, size_t n)
{
	json_t *task, *pick = NULL;
	size_t i;

	json_array_foreach(json_object_get(a, "tasks"), i, task) {
		if (json_object_get(task, "last_exit") == NULL)
			continue;
		if (strcmp(str(task, "state"), "failed") == 0) {
			pick = task;
			break;
		}
		pick = task;
	}
	return exit_text(pick, buf, n);
}

static void
cmd_alloc_list(const char *arg)
{
	json_t *j = get_table("/v1/allocations"), *a;
	struct table t = { 5, 0, 0, NULL };
	char n[32], ex[64];
	size_t i;

	(void)arg;
	if (j == NULL)
		return;
	table_row(&t, "ID", "STATE", "TASKS", "LAST EXIT", "REASON");
	json_array_foreach(json_object_get(j, "allocations"), i, a) {
		snprintf(n, sizeof(n), "%zu", json_array_size(json_object_get(a,
		    "tasks")));
		table_row(&t, str(a, "id"), alloc_state(a), n, alloc_exit(a,
		    ex, sizeof(ex)), str(a, "reason"));
	}
	table_print(&t);
	json_decref(j);
}

/* A running sandboxed task's CPU time and memory ("-" when not known). */
static void
usage_text(json_t *u, char *cpu, size_t cn, char *mem, size_t mn)
{
	json_t *c = json_object_get(u, "cpu_ns"), *m = json_object_get(u,
	    "memory_bytes");

	if (json_is_integer(c))
		snprintf(cpu, cn, "%.1fs", (double)json_integer_value(c) / 1e9);
	else
		snprintf(cpu, cn, "-");
	if (json_is_integer(m))
		snprintf(mem, mn, "%.1f MiB", (double)json_integer_value(m) /
		    (1024 * 1024));
	else
		snprintf(mem, mn, "-");
}

static void
show_alloc(json_t *a)
{
	struct table t = { 2, 0, 0, NULL };
	json_t *task, *e, *plugin;
	char pid[32], restarts[32], when[32], ex[64], cpu[32], mem[32];
	size_t i, k;

	table_row(&t, "ID", str(a, "id"));
	table_row(&t, "Namespace", str(a, "namespace"));
	table_row(&t, "Status", alloc_state(a));
	if (json_object_get(a, "step") != NULL)
		table_row(&t, "Step", str(a, "step"));
	if (json_object_get(a, "reason") != NULL)
		table_row(&t, "Reason", str(a, "reason"));
	table_row(&t, "Last exit", alloc_exit(a, ex, sizeof(ex)));
	if (json_object_get(a, "next_retry") != NULL)
		table_row(&t, "Next retry", str(a, "next_retry"));
	table_row(&t, "File", str(a, "file"));
	table_print(&t);
	printf("\nTasks\n");
	t.ncols = 10;
	table_row(&t, "NAME", "DRIVER", "STATE", "PID", "RESTARTS",
	    "LAST EXIT", "CPU", "MEMORY", "PLUGIN", "HEALTHY");
	json_array_foreach(json_object_get(a, "tasks"), i, task) {
		plugin = json_object_get(task, "csi_plugin");
		usage_text(json_object_get(task, "usage"), cpu, sizeof(cpu),
		    mem, sizeof(mem));
		table_row(&t, str(task, "name"), str(task, "driver"), str(task,
		    "state"), num(task, "pid", pid, sizeof(pid)), num(task,
		    "restarts", restarts, sizeof(restarts)), exit_text(task, ex,
		    sizeof(ex)), cpu, mem, plugin != NULL ? str(plugin, "id") :
		    "-", plugin != NULL ? yesno(plugin, "healthy") : "-");
	}
	table_print(&t);
	printf("\nRecent events\n");
	t.ncols = 4;
	table_row(&t, "TIME", "TASK", "TYPE", "MESSAGE");
	json_array_foreach(json_object_get(a, "tasks"), i, task)
		json_array_foreach(json_object_get(task, "events"), k, e) {
			time_t at = (time_t)json_integer_value(
			    json_object_get(e, "time"));
			struct tm tm;

			localtime_r(&at, &tm);
			strftime(when, sizeof(when), "%H:%M:%S", &tm);
			table_row(&t, when, str(task, "name"), str(e, "type"),
			    str(e, "message"));
		}
	table_print(&t);
}

/* Every task running (or complete), and a plugin task healthy too; else
 * what is not. */
static bool
alloc_ready(json_t *a, char *what, size_t n)
{
	json_t *task, *plugin;
	size_t i;

	if (json_object_get(a, "step") != NULL)
		snprintf(what, n, "%s, at step %s", alloc_state(a), str(a,
		    "step"));
	else
		snprintf(what, n, "%s", alloc_state(a));
	json_array_foreach(json_object_get(a, "tasks"), i, task) {
		plugin = json_object_get(task, "csi_plugin");
		/* One that ran and ended well leaves the others to run. */
		if (strcmp(str(task, "state"), "complete") == 0)
			continue;
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
	return strcmp(alloc_state(a), "running") == 0;
}

/* A failed allocation ends the wait at once: why, and exit 1. */
static void
alloc_failed(const char *id, json_t *a)
{
	json_t *retry = json_object_get(a, "next_retry");

	progress_end();
	if (json_out)
		print_json(a);
	fprintf(stderr, "berthctl: alloc %s failed%s%s: %s", id,
	    json_object_get(a, "step") != NULL ? " at step " : "",
	    json_object_get(a, "step") != NULL ? str(a, "step") : "",
	    json_object_get(a, "reason") != NULL ? str(a, "reason") :
	    "no reason given");
	if (json_is_string(retry))
		fprintf(stderr, " (next retry at %s)",
		    json_string_value(retry));
	fprintf(stderr, "\n");
	json_decref(a);
	exit(EXIT_FAIL);
}

static void
alloc_wait(const char *id)
{
	char path[512], what[256];
	int64_t since = now_ms();
	json_t *j;
	long status;

	path_of(path, sizeof(path), "/v1/allocation/%s", id);
	for (;;) {
		/* 404 until the runner has read the file. */
		status = call("GET", path, NULL, 0, REQUEST_TIMEOUT_MS, &j);
		if (status >= 400 && status != 404)
			api_failed(status, j);
		if (status == 200 && strcmp(alloc_state(j), "failed") == 0)
			alloc_failed(id, j);
		if (status == 200 && alloc_ready(j, what, sizeof(what)))
			break;
		/* Its tasks ran, and ended well before the next look. */
		if (status == 200 && strcmp(alloc_state(j), "complete") == 0)
			break;
		progress(since, "alloc %s: waiting for it to run: %s", id,
		    status == 404 ? "not taken up yet" : what);
		json_decref(j);
		if (now_ms() - since > wait_timeout_ms) {
			progress_end();
			die(EXIT_FAIL, "alloc %s: not running within the "
			    "timeout", id);
		}
		sleep_ms(POLL_INTERVAL_MS);
	}
	progress(since, "alloc %s: %s", id, alloc_state(j));
	progress_end();
	if (json_out)
		print_json(j);
	else
		show_alloc(j);
	json_decref(j);
}

static void
cmd_alloc_run(const char *file)
{
	const char *id, *why;
	char *body;
	json_t *doc, *j;
	size_t len;

	body = read_file(file, &len);
	/* An id the server would refuse is refused here, before sending. */
	if ((doc = json_loads(body, 0, NULL)) != NULL && (id =
	    json_string_value(json_object_get(doc, "id"))) != NULL &&
	    (why = ident_problem(id, strlen(id))) != NULL)
		die(EXIT_FAIL, "%s: the id \"%s\" %s (an id is 1 to %d of "
		    "A-Z a-z 0-9 . _ -)", file, id, why, BERTH_IDENT_MAX);
	json_decref(doc);
	j = must("PUT", "/v1/allocations", body, len);
	free(body);
	if (!json_is_string(json_object_get(j, "id")) || ident_problem(str(j,
	    "id"), strlen(str(j, "id"))) != NULL)
		die(EXIT_FAIL, "the answer names no allocation");
	subject_kind = "allocation";
	subject_id = strdup(str(j, "id"));
	if (!opt_wait) {
		if (json_out)
			print_json(j);
		else
			printf("alloc %s submitted\n", str(j, "id"));
	} else
		alloc_wait(subject_id);
	json_decref(j);
}

static void
cmd_alloc_stop(const char *id)
{
	char path[512];
	json_t *j;

	subject_kind = "allocation";
	path_of(path, sizeof(path), "/v1/allocation/%s", id);
	if (opt_force)
		snprintf(path + strlen(path), sizeof(path) - strlen(path),
		    "?force=true");
	j = must("DELETE", path, NULL, 0);
	if (json_out)
		print_json(j);
	else
		printf("alloc %s stopping\n", id);
	json_decref(j);
}

static void
cmd_alloc_status(const char *id)
{
	char path[512];
	json_t *j;

	subject_kind = "allocation";
	j = get_table(path_of(path, sizeof(path), "/v1/allocation/%s", id));
	if (j == NULL)
		return;
	show_alloc(j);
	json_decref(j);
}

/* ---- the node ---- */

static void
cmd_driver_list(const char *arg)
{
	json_t *j = get_table("/v1/drivers"), *d;
	struct table t = { 4, 0, 0, NULL };
	size_t i;

	(void)arg;
	if (j == NULL)
		return;
	table_row(&t, "NAME", "DETECTED", "HEALTHY", "DESCRIPTION");
	json_array_foreach(json_object_get(j, "drivers"), i, d)
		table_row(&t, str(d, "name"), yesno(d, "detected"), yesno(d,
		    "healthy"), str(d, "description"));
	table_print(&t);
	json_decref(j);
}

static void
cmd_device_list(const char *arg)
{
	json_t *j = get_table("/v1/devices"), *g, *d;
	struct table t = { 6, 0, 0, NULL };
	char line[512];
	size_t i, k;

	(void)arg;
	if (j == NULL)
		return;
	if (json_array_size(json_object_get(j, "devices")) == 0) {
		snprintf(line, sizeof(line), "no devices%s%s%s",
		    json_object_get(j, "note") ? " (" : "", json_object_get(j,
		    "note") ? str(j, "note") : "", json_object_get(j, "note") ?
		    ")" : "");
		table_line(line);
	} else {
		/* One row per device, under its group (vendor, type, name). */
		table_row(&t, "TYPE", "VENDOR", "NAME", "ID", "HEALTHY",
		    "GONE");
		json_array_foreach(json_object_get(j, "devices"), i, g)
			json_array_foreach(json_object_get(g, "devices"), k, d)
				table_row(&t, str(g, "type"), str(g, "vendor"),
				    str(g, "name"), str(d, "id"), yesno(d,
				    "healthy"), yesno(d, "gone"));
		table_print(&t);
	}
	json_decref(j);
}

static void
print_event(json_t *e)
{
	char when[32], who[400], line[2048];
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
	snprintf(line, sizeof(line), "%-6lld %s %-7s %-18s %s: %s",
	    (long long)json_integer_value(json_object_get(e, "index")), when,
	    str(e, "topic"), str(e, "type"), who, str(e, "message"));
	table_line(line);
}

static void
cmd_events(const char *arg)
{
	unsigned long long index = opt_index;
	long long epoch = 0;	/* the supervisor's, once known */
	char path[160];
	json_t *j, *e;
	size_t i;
	long status;

	(void)arg;
	for (;;) {
		snprintf(path, sizeof(path), "/v1/events?index=%llu&timeout=%s",
		    index, opt_follow ? "60s" : "0");
		/* Another epoch: the supervisor restarted; it says "lost". */
		if (epoch != 0)
			snprintf(path + strlen(path), sizeof(path) -
			    strlen(path), "&epoch=%lld", epoch);
		/* The server holds a poll up to 60s: wait longer than that. */
		if ((status = call("GET", path, NULL, 0, 90 * 1000, &j)) >= 400)
			api_failed(status, j);
		if (json_is_true(json_object_get(j, "lost")))
			fprintf(stderr, "berthctl: events after %llu may have "
			    "been missed (no longer kept, or the supervisor "
			    "restarted); going on from %lld\n", index,
			    (long long)json_integer_value(json_object_get(j,
			    "first")));
		json_array_foreach(json_object_get(j, "events"), i, e)
			print_event(e);
		fflush(stdout);
		/* A restarted supervisor's answer starts over by itself. */
		index = (unsigned long long)json_integer_value(
		    json_object_get(j, "index"));
		epoch = json_integer_value(json_object_get(j, "epoch"));
		json_decref(j);
		if (!opt_follow)
			return;
	}
}

/* A drain's state in words: "draining: node plugins (2 left)". */
static void
drain_words(json_t *j, char *buf, size_t n)
{
	if (strcmp(str(j, "state"), "draining") == 0)
		snprintf(buf, n, "draining: stopping the %s (%lld left; %lld "
		    "stopped so far)", str(j, "wave"), (long long)
		    json_integer_value(json_object_get(j, "left")), (long long)
		    json_integer_value(json_object_get(j, "stopped")));
	else if (strcmp(str(j, "state"), "drained") == 0)
		snprintf(buf, n, "drained: %lld allocations stopped; %lld "
		    "volumes staged, %lld published", (long long)
		    json_integer_value(json_object_get(j, "stopped")),
		    (long long)json_integer_value(json_object_get(j,
		    "volumes_staged")), (long long)json_integer_value(
		    json_object_get(j, "volumes_published")));
	else
		snprintf(buf, n, "not draining: new allocations are accepted");
}

static void
cmd_node_drain(const char *arg)
{
	int64_t since = now_ms();
	char words[512];
	json_t *j;

	(void)arg;
	j = must(opt_disable ? "DELETE" : "PUT", "/v1/node/drain", NULL, 0);
	while (opt_wait && strcmp(str(j, "state"), "draining") == 0) {
		drain_words(j, words, sizeof(words));
		progress(since, "%s", words);
		json_decref(j);
		if (now_ms() - since > wait_timeout_ms) {
			progress_end();
			die(EXIT_FAIL, "not drained within the timeout");
		}
		sleep_ms(POLL_INTERVAL_MS);
		j = must("GET", "/v1/node/drain", NULL, 0);
	}
	progress_end();
	if (json_out)
		print_json(j);
	else {
		drain_words(j, words, sizeof(words));
		printf("%s\n", words);
		if (json_is_string(json_object_get(j, "not_stopped")))
			printf("not stopped (they run from files the API did "
			    "not write): %s\n", str(j, "not_stopped"));
	}
	json_decref(j);
}

/* A number header of a, or dflt without it. */
static long long
header_ll(const struct answer *a, const char *name, long long dflt)
{
	char v[32];

	return answer_header(a, name, v, sizeof(v)) ? atoll(v) : dflt;
}

/*
 * A task's log, from the start of its oldest file kept through its
 * current one; with -f, what comes next too, asked for every
 * POLL_INTERVAL_MS until the allocation stops running (then what is left
 * is printed) or the user interrupts. Each request names the file and
 * offset the last answer gave, so that a rotation in between neither
 * loses nor repeats a line (api_logs.c).
 */
static void
cmd_alloc_logs(const char *id)
{
	long long offset = 0, file = -1, next, size;
	char path[700], why[600];
	bool at_end, told = false;
	struct answer a;
	json_t *j;

	for (;;) {
		snprintf(path, sizeof(path), "/v1/allocation/%s/logs?task=%s&"
		    "stream=%s&offset=%lld", id, arg2, opt_stderr ? "stderr" :
		    "stdout", offset);
		if (file >= 0)
			snprintf(path + strlen(path), sizeof(path) -
			    strlen(path), "&file=%lld", file);
		if (request(sock_path, "GET", path, NULL, 0,
		    REQUEST_TIMEOUT_MS, &a, why, sizeof(why)) < 0)
			die(EXIT_UNREACHABLE, "%s (%s)", why, socket_hint());
		if (a.status >= 400) {
			if ((j = json_loads(a.body, 0, NULL)) == NULL)
				j = json_pack("{s:I, s:s}", "code", (json_int_t)
				    a.status, "error", "the request was refused");
			answer_free(&a);
			api_failed(a.status, j);	/* says task or alloc */
		}
		if (header_ll(&a, "X-Berth-Log-Lost", 0) == 1 && !told) {
			fprintf(stderr, "berthctl: the log was rotated past what "
			    "was read; going on from its oldest file kept\n");
			told = true;
		}
		fwrite(a.body, 1, a.len, stdout);
		fflush(stdout);
		file = header_ll(&a, "X-Berth-Log-File", file);
		next = header_ll(&a, "X-Berth-Log-Next", offset +
		    (long long)a.len);
		size = header_ll(&a, "X-Berth-Log-Size", next);
		offset = next;
		at_end = next >= size && header_ll(&a, "X-Berth-Log-Current",
		    1) == 1;
		if (at_end && (!opt_follow || (a.len == 0 && header_ll(&a,
		    "X-Berth-Log-Running", 0) != 1))) {
			answer_free(&a);
			return;
		}
		answer_free(&a);
		if (at_end)
			sleep_ms(POLL_INTERVAL_MS);
	}
}

/* ---- the commands, their help, and usage ---- */

static const struct cmd cmds[] = {
	{ "status", NULL, NULL, NULL, 0,
	"the supervisor, its helpers, counts",
	"The supervisor's version, uptime and pid, each helper's pid and\n"
	"readiness, and counts of allocations, tasks and plugin instances.\n",
	cmd_status },
	{ "version", NULL, NULL, NULL, 0,
	"berthctl's version, and the supervisor's",
	"berthctl's own version, and the supervisor's when it answers\n"
	"within 3 seconds (else why not). Exit 0 either way.\n",
	cmd_version },
	{ "plugin", "list", NULL, NULL, 0,
	"every CSI plugin with its instances and health",
	"Every CSI plugin: its provider name, version, health, and how many\n"
	"instances and tasks serve it.\n",
	cmd_plugin_list },
	{ "plugin", "status", "ID", "[--wait-healthy [--timeout D]]",
	    O_WAIT_HEALTHY | O_TIMEOUT,
	"one plugin; --wait-healthy waits for it",
	"One plugin: its instances per allocation and their health, and its\n"
	"tasks. With --wait-healthy, wait until it is healthy (at most\n"
	"--timeout, 2m by default) and exit 1 if it is not.\n",
	cmd_plugin_status },
	{ "plugin", "snapshots", "ID", NULL, 0,
	"every snapshot a plugin has",
	"Every snapshot the controller of plugin ID lists (LIST_SNAPSHOTS),\n"
	"of any volume, registered here or not.\n",
	cmd_plugin_snapshots },
	{ "volume", "list", NULL, NULL, 0,
	"every registered volume",
	"Every registered volume: its namespace, plugin, access and\n"
	"attachment modes, and how many allocations claim it.\n",
	cmd_volume_list },
	{ "volume", "status", "ID", NULL, 0,
	"one volume and its claims",
	"One volume of the namespace \"default\": its plugin, external id,\n"
	"capabilities, context, mount options (flags only counted: they may\n"
	"hold secrets), claims, and while it is in use on this node its\n"
	"usage (bytes, inodes) and condition as its node plugin reports\n"
	"them (\"not reported\" when it does not).\n",
	cmd_volume_status },
	{ "volume", "register", "FILE", NULL, 0,
	"register an existing volume",
	"Register an existing volume described by FILE (JSON; - reads\n"
	"standard input): \"id\", \"plugin_id\", \"external_id\",\n"
	"\"access_mode\", \"attachment_mode\", and optionally \"namespace\",\n"
	"\"mount_options\" and \"context\". See berthctl(1).\n",
	cmd_volume_register },
	{ "volume", "create", "FILE", NULL, 0,
	"create a volume through its plugin",
	"Create the volume FILE describes (JSON, as for register, without\n"
	"\"external_id\") through its controller plugin, then register it.\n",
	cmd_volume_create },
	{ "volume", "delete", "ID", NULL, 0,
	"delete a volume through its plugin",
	"Delete a volume of the namespace \"default\" through its\n"
	"controller plugin, and deregister it. A claimed volume is refused.\n",
	cmd_volume_delete },
	{ "volume", "expand", "ID SIZE", NULL, 0,
	"give a volume more room through its plugin",
	"Expand a volume of the namespace \"default\" to at least SIZE\n"
	"(bytes, or with K, M, G or T, powers of 1024: 2G) through its\n"
	"controller plugin, then on every path it is published at on this\n"
	"node, and keep the capacity the plugin gives. A plugin that expands\n"
	"only offline is refused while the volume is claimed.\n",
	cmd_volume_expand },
	{ "volume", "snapshot create", "ID NAME", NULL, 0,
	"take a snapshot of a volume through its plugin",
	"Ask the controller plugin of volume ID (namespace \"default\") for\n"
	"a snapshot named NAME, and print the plugin's id for it. Taken again\n"
	"with the same name it is the same snapshot; a name another volume's\n"
	"snapshot has is refused. A plugin that does not advertise\n"
	"CREATE_DELETE_SNAPSHOT is refused. Create a volume from it with\n"
	"\"snapshot_id\" in the create document (berth-volume(5)).\n",
	cmd_snapshot_create },
	{ "volume", "snapshot delete", "ID SNAPSHOT", NULL, 0,
	"delete a snapshot of a volume",
	"Delete the snapshot whose plugin id is SNAPSHOT through the\n"
	"controller plugin of volume ID, with the volume's \"snapshot\"\n"
	"secret. Volumes created from it stay.\n",
	cmd_snapshot_delete },
	{ "volume", "snapshot list", "ID", NULL, 0,
	"the snapshots of a volume",
	"The snapshots the controller plugin of volume ID has of it, as the\n"
	"plugin lists them (LIST_SNAPSHOTS): id, size, creation time (UTC)\n"
	"and whether it is ready to create a volume from.\n",
	cmd_snapshot_list },
	{ "alloc", "run", "FILE", "[--wait [--timeout D]]", O_WAIT | O_TIMEOUT,
	"submit an allocation; --wait waits until it runs",
	"Submit the allocation document FILE (JSON; - reads standard\n"
	"input). With --wait, wait until every task runs and every plugin\n"
	"task is healthy, showing what it waits for, at most --timeout (2m\n"
	"by default). A failed allocation ends the wait at once: its reason\n"
	"is printed and the exit status is 1; one whose tasks all ended well\n"
	"(complete) ends it too, with exit status 0.\n",
	cmd_alloc_run },
	{ "alloc", "stop", "ID", "[--force]", O_FORCE,
	"stop an allocation",
	"Stop an allocation's tasks and release its volumes. An allocation\n"
	"that serves a CSI plugin as a node, while volumes of that plugin\n"
	"are still staged or published and no other allocation serves it,\n"
	"is refused with the volumes named, unless --force.\n",
	cmd_alloc_stop },
	{ "alloc", "list", NULL, NULL, 0,
	"every allocation with its state",
	"Every allocation: its state (pending, running, complete, failed),\n"
	"its number of tasks, its last exit (code or signal), and why it\n"
	"failed or completed.\n",
	cmd_alloc_list },
	{ "alloc", "status", "ID", NULL, 0,
	"one allocation, its tasks and events",
	"One allocation: its state (and the failing step, reason and next\n"
	"retry when it failed; the reason when it completed), its last exit,\n"
	"its tasks with their restarts and last exits, and their recent\n"
	"events.\n",
	cmd_alloc_status },
	{ "alloc", "logs", "ID TASK", "[-f] [--stderr]", O_FOLLOW | O_STDERR,
	"a task's stdout or stderr; -f follows it",
	"What task TASK of allocation ID wrote on its standard output (with\n"
	"--stderr, its standard error): its rotated files, oldest first,\n"
	"then the current one, as long as they are kept (the \"logs\" block).\n"
	"With -f (--follow), what it writes next too, until the allocation\n"
	"stops running or you interrupt. A privileged plugin's task is read\n"
	"the same way. Once the allocation has stopped, its logs are kept for\n"
	"the configuration's log_retention (1h by default). --json changes\n"
	"nothing: a log is printed as it was written.\n",
	cmd_alloc_logs },
	{ "driver", "list", NULL, NULL, 0,
	"every task driver with its health",
	"Every task driver: detected, healthy, and what it runs.\n",
	cmd_driver_list },
	{ "device", "list", NULL, NULL, 0,
	"every device with its health",
	"Every device plugin's devices, by type, vendor and name, with\n"
	"their health.\n",
	cmd_device_list },
	{ "node", "drain", NULL, "[--disable] [--wait [--timeout D]]",
	    O_DISABLE | O_WAIT | O_TIMEOUT,
	"stop everything on the node, in order",
	"Drain the node: new allocations are refused, and allocations are\n"
	"stopped in three waves, each once the one before has gone: the\n"
	"workloads (those using volumes among them), then the node plugins,\n"
	"then the controller plugins. With --wait, show its progress until\n"
	"it is drained (at most --timeout, 2m by default). --disable ends\n"
	"the drain: new allocations are accepted again.\n",
	cmd_node_drain },
	{ "events", NULL, NULL, "[-f] [--index N]", O_FOLLOW | O_INDEX,
	"the event log; -f follows it",
	"The event log (plugins, health, allocations, tasks) after index N\n"
	"(0 by default). With -f (--follow), keep following new events\n"
	"until interrupted.\n",
	cmd_events },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char global_opts[] =
"\nOptions for every command:\n"
"  --socket PATH  the API's socket: else $BERTH_API, else " DEFAULT_SOCKET "\n"
"  --json         print the API's JSON instead of a table\n"
"  -h, --help     help for the command\n";

static const char exit_codes[] =
"\nExit: 0 done, 1 refused or failed, 2 usage error, 3 berth unreachable.\n";

static void
synopsis(FILE *f, const struct cmd *c, bool aligned)
{
	char s[128];

	snprintf(s, sizeof(s), "%s%s%s%s%s", c->noun, c->verb ? " " : "",
	    c->verb ? c->verb : "", c->arg ? " " : "", c->arg ? c->arg : "");
	if (aligned) {
		fprintf(f, "  %-20s  %s\n", s, c->summary);
		return;
	}
	snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s%s", c->opts ? " " :
	    "", c->opts ? c->opts : "");
	fprintf(f, "usage: berthctl %s\n", s);
}

static void __attribute__((noreturn))
help_all(void)
{
	size_t i;

	printf("usage: berthctl [--socket PATH] [--json] COMMAND [ARG] "
	    "[OPTIONS]\n\nCommands:\n");
	for (i = 0; i < NCMDS; i++)
		synopsis(stdout, &cmds[i], true);
	printf("  %-20s  %s\n\n%s\nberthctl help COMMAND, or berthctl COMMAND "
	    "--help, says more.\n%s", "help [COMMAND]", "this, or a "
	    "command's help", global_opts, exit_codes);
	exit(0);
}

static void __attribute__((noreturn))
help_noun(const char *noun)
{
	size_t i;

	printf("usage: berthctl %s VERB ...\n\nVerbs:\n", noun);
	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].noun, noun) == 0)
			synopsis(stdout, &cmds[i], true);
	printf("\nberthctl help %s VERB says more.\n", noun);
	exit(0);
}

static void __attribute__((noreturn))
help_cmd(const struct cmd *c)
{
	synopsis(stdout, c, false);
	printf("\n%s\n", c->help);
	if (c->allowed != 0)
		printf("Options:\n");
	if (c->allowed & O_WAIT)
		printf("  --wait         wait until it %s\n", c->allowed &
		    O_DISABLE ? "is drained" : "runs");
	if (c->allowed & O_FORCE)
		printf("  --force        stop it even under published volumes\n");
	if (c->allowed & O_DISABLE)
		printf("  --disable      end the drain\n");
	if (c->allowed & O_WAIT_HEALTHY)
		printf("  --wait-healthy wait until it is healthy\n");
	if (c->allowed & (O_WAIT | O_WAIT_HEALTHY))
		printf("  --timeout D    how long to wait: \"30s\", \"2m\"\n");
	if (c->allowed & O_FOLLOW)
		printf("  -f, --follow   follow what is new\n");
	if (c->allowed & O_INDEX)
		printf("  --index N      start after event N\n");
	if (c->allowed & O_STDERR)
		printf("  --stderr       standard error, not standard output\n");
	printf("%s%s", global_opts, exit_codes);
	exit(0);
}

/* What was wrong, and where help is; exit 2. */
static void usage_error(const char *noun, const char *fmt, ...)
    BERTH_PRINTF(2, 3) __attribute__((noreturn));

static void
usage_error(const char *noun, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "berthctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nRun 'berthctl help%s%s' for usage.\n", noun ? " " :
	    "", noun ? noun : "");
	exit(EXIT_USAGE);
}

static bool
noun_known(const char *noun)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].noun, noun) == 0)
			return true;
	return false;
}

/* The command for noun [verb]; NULL when verb is not one of noun's. */
static const struct cmd *
find(const char *noun, const char *verb)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].noun, noun) == 0 && (cmds[i].verb == NULL ||
		    (verb != NULL && strcmp(cmds[i].verb, verb) == 0)))
			return &cmds[i];
	return NULL;
}

/* "volume snapshot create": a verb of two words, joined into p[1] when
 * one is known; the words after it move up. */
static void
join_verb(char **p, int *n)
{
	static char verb[64];
	size_t i;

	if (*n < 3)
		return;
	snprintf(verb, sizeof(verb), "%s %s", p[1], p[2]);
	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].noun, p[0]) == 0 && cmds[i].verb != NULL &&
		    strcmp(cmds[i].verb, verb) == 0) {
			p[1] = verb;
			memmove(&p[2], &p[3], (size_t)(*n - 3) * sizeof(*p));
			(*n)--;
			return;
		}
}

static void __attribute__((noreturn))
unknown_verb(const char *noun, const char *verb)
{
	char verbs[128] = "";
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].noun, noun) == 0)
			snprintf(verbs + strlen(verbs), sizeof(verbs) -
			    strlen(verbs), "%s%s", verbs[0] ? ", " : "",
			    cmds[i].verb);
	if (verb == NULL)
		usage_error(noun, "%s: which one? %s", noun, verbs);
	usage_error(noun, "%s: unknown verb \"%s\" (one of: %s)", noun, verb,
	    verbs);
}

/* berthctl help [NOUN [VERB]] */
static void __attribute__((noreturn))
help(char **p, int n)
{
	const struct cmd *c;

	if (n == 0)
		help_all();
	join_verb(p, &n);
	if (!noun_known(p[0]))
		usage_error(NULL, "help: no command \"%s\"", p[0]);
	c = find(p[0], n > 1 ? p[1] : NULL);
	if (c != NULL && (c->verb == NULL || n > 1))
		help_cmd(c);
	if (n == 1)
		help_noun(p[0]);
	unknown_verb(p[0], p[1]);
}

static const char *
option_name(int bit)
{
	switch (bit) {
	case O_WAIT: return "--wait";
	case O_WAIT_HEALTHY: return "--wait-healthy";
	case O_TIMEOUT: return "--timeout";
	case O_FOLLOW: return "--follow";
	case O_FORCE: return "--force";
	case O_DISABLE: return "--disable";
	case O_STDERR: return "--stderr";
	default: return "--index";
	}
}

/* The command's arguments and options make sense, its id is an id. */
static void
check(const struct cmd *c, char **rest, int nrest, int given)
{
	const char *name = c->verb ? c->verb : "", *why, *second;
	int bit, nargs = c->arg == NULL ? 0 : strchr(c->arg, ' ') ? 2 : 1;
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "%s%s%s", c->noun, c->verb ? " " : "",
	    name);
	second = nargs == 2 ? strchr(c->arg, ' ') + 1 : NULL;
	if (nrest < nargs)
		usage_error(c->noun, "%s: missing %s", cmd, nrest == 1 ?
		    second : c->arg);
	if (nrest > nargs)
		usage_error(c->noun, "%s: unexpected argument \"%s\"", cmd,
		    rest[nargs]);
	for (bit = 1; bit <= O_STDERR; bit <<= 1)
		if ((given & bit) && !(c->allowed & bit))
			usage_error(c->noun, "%s does not take %s", cmd,
			    option_name(bit));
	if ((given & O_TIMEOUT) && !(given & (O_WAIT | O_WAIT_HEALTHY)))
		usage_error(c->noun, "%s: --timeout goes with %s", cmd,
		    c->allowed & O_WAIT ? "--wait" : "--wait-healthy");
	if (c->arg != NULL && strncmp(c->arg, "ID", 2) == 0 && (why =
	    ident_problem(rest[0], strlen(rest[0]))) != NULL)
		usage_error(c->noun, "%s: \"%s\" is not an id: it %s", cmd,
		    rest[0], why);
	if (second != NULL && (strcmp(second, "TASK") == 0 ||
	    strcmp(second, "NAME") == 0 || strcmp(second, "SNAPSHOT") == 0) &&
	    (why = ident_problem(rest[1],
	    strlen(rest[1]))) != NULL)
		usage_error(c->noun, "%s: \"%s\" is not a %s: it %s",
		    cmd, rest[1], strcmp(second, "TASK") == 0 ? "task name" :
		    strcmp(second, "NAME") == 0 ? "snapshot name" :
		    "snapshot id", why);
}

static void
parse_index(const char *s)
{
	char *end;

	errno = 0;
	opt_index = strtoull(s, &end, 10);
	if (*s == '\0' || *s == '-' || *end != '\0' || errno != 0)
		usage_error(NULL, "--index: \"%s\" is not a whole number", s);
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
		{ "force", no_argument, NULL, 'F' },
		{ "disable", no_argument, NULL, 'D' },
		{ "stderr", no_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd *c;
	const char *env;
	char why[200], **p;
	bool want_help = false, want_version = false;
	int ch, n, given = 0, skip;

	if ((env = getenv("BERTH_API")) != NULL && *env != '\0')
		sock_path = env;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
		switch (ch) {
		case 's': sock_path = optarg; break;
		case 'j': json_out = true; break;
		case 'w': opt_wait = true; given |= O_WAIT; break;
		case 'H': opt_wait_healthy = true; given |= O_WAIT_HEALTHY;
			break;
		case 'f': opt_follow = true; given |= O_FOLLOW; break;
		case 'F': opt_force = true; given |= O_FORCE; break;
		case 'D': opt_disable = true; given |= O_DISABLE; break;
		case 'E': opt_stderr = true; given |= O_STDERR; break;
		case 'h': want_help = true; break;
		case 'V': want_version = true; break;
		case 't':
			if (duration_parse(optarg, &wait_timeout_ms, why,
			    sizeof(why)) < 0)
				usage_error(NULL, "--timeout: %s", why);
			given |= O_TIMEOUT;
			break;
		case 'i': parse_index(optarg); given |= O_INDEX; break;
		case ':':
			usage_error(NULL, "%s needs a value", argv[optind - 1]);
		default:
			if (optopt != 0)
				usage_error(NULL, "unknown option -%c", optopt);
			usage_error(NULL, "unknown option %s",
			    argv[optind - 1]);
		}
	}
	p = argv + optind;
	n = argc - optind;
	tty = isatty(STDERR_FILENO);
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
		die(EXIT_FAIL, "libcurl cannot start");
	if (want_version && n > 0)
		usage_error(NULL, "--version takes no command");
	if (want_version)
		cmd_version(NULL);
	else if (n == 0 && want_help)
		help_all();
	else if (n == 0)
		usage_error(NULL, "no command given");
	if (want_version)
		return 0;
	if (strcmp(p[0], "help") == 0)
		help(p + 1, n - 1);
	join_verb(p, &n);
	if (!noun_known(p[0]))
		usage_error(NULL, "unknown command \"%s\"", p[0]);
	if ((c = find(p[0], n > 1 ? p[1] : NULL)) == NULL) {
		if (want_help && n == 1)
			help_noun(p[0]);
		unknown_verb(p[0], n > 1 ? p[1] : NULL);
	}
	if (want_help)
		help_cmd(c);
	skip = c->verb != NULL ? 2 : 1;
	check(c, p + skip, n - skip, given);
	subject_id = n > skip ? p[skip] : NULL;
	arg2 = n > skip + 1 ? p[skip + 1] : NULL;
	c->run(n > skip ? p[skip] : NULL);
	return 0;
}
