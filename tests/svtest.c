/*
 * svtest.c: a whole berth for integration tests (see svtest.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>

#include "http.h"
#include "svtest.h"

/* The longest a single API request may take before the test fails. */
#define API_TIMEOUT_MS 30000

static void
write_config(struct berth *b, const char *heartbeat, const char *extra)
{
	char text[2048];

	/* Its own cgroup parent: no two berths' tasks share a cgroup. */
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\", \"alloc_dir\": \"%s\", "
	    "\"cgroup_parent\": \"%s\", "
	    "\"plugin_heartbeat\": \"%s\", \"plugin_resync\": \"2s\"%s}",
	    b->dir, b->dir, b->allocs, b->cgroup, heartbeat,
	    extra ? extra : "");
	harness_write(b->cfg, text);
}

void
berth_config(struct berth *b, const char *heartbeat, const char *extra)
{
	harness_private_mounts();
	if (mount(harness_bin(""), SV_SANDBOX_BIN, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, SV_SANDBOX_BIN, NULL, MS_REMOUNT | MS_BIND |
	    MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) < 0)
		ck_abort_msg("binding the build dir on " SV_SANDBOX_BIN ": %s",
		    strerror(errno));
	/* Tasks outlive a killed supervisor: they come to us, and we reap. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	b->dir = harness_tmpdir("berth");
	berth_paths(b);
	/* "/berth-test-berth-XXXXXX", the directory's name. */
	snprintf(b->cgroup, sizeof(b->cgroup), "%s", strrchr(b->dir, '/'));
	/* A test that fails does not reach berth_stop(): after the run. */
	harness_track_cgroup(b->cgroup);
	ck_assert_int_eq(mkdir(b->allocs, 0755), 0);
	write_config(b, heartbeat, extra);
}

const char *
sv_sandbox_bin(const char *name)
{
	static char buf[4][512];
	static int next;
	char *b = buf[next++ % 4];

	snprintf(b, sizeof(buf[0]), SV_SANDBOX_BIN "/%s", name);
	return b;
}

void
berth_paths(struct berth *b)
{
	snprintf(b->cfg, sizeof(b->cfg), "%s/berth.json", b->dir);
	snprintf(b->allocs, sizeof(b->allocs), "%s/allocs", b->dir);
	snprintf(b->sock, sizeof(b->sock), "%s/run/api.sock", b->dir);
}

void
berth_reconfig(struct berth *b, const char *heartbeat, const char *extra)
{
	write_config(b, heartbeat, extra);
}

/* One request; -1 when the API cannot be reached (not a failure). */
static int
api_try(struct berth *b, const char *method, const char *path,
    const char *body, int timeout_ms, int *status, json_t **json)
{
	struct http_response resp;
	char why[600];

	if (http_request(b->sock, method, path, body, body != NULL ?
	    strlen(body) : 0, timeout_ms, &resp, why, sizeof(why)) != 0)
		return -1;
	*status = resp.status;
	*json = json_loads(resp.body, 0, NULL);
	http_response_free(&resp);
	return 0;
}

json_t *
sv_api(struct berth *b, const char *method, const char *path,
    const char *body, int *status)
{
	json_t *json;

	ck_assert_msg(api_try(b, method, path, body, API_TIMEOUT_MS, status,
	    &json) == 0, "%s %s: the API did not answer", method, path);
	return json;
}

json_t *
sv_get(struct berth *b, const char *path)
{
	json_t *json;
	int status;

	if (api_try(b, "GET", path, NULL, API_TIMEOUT_MS, &status,
	    &json) != 0)
		return NULL;
	if (status != 200) {
		json_decref(json);
		return NULL;
	}
	return json;
}

static pid_t
helper_pid(json_t *status, const char *name)
{
	json_t *h = json_object_get(json_object_get(status, "helpers"), name);

	return (pid_t)json_integer_value(json_object_get(h, "pid"));
}

void
berth_start(struct berth *b)
{
	char *argv[] = { (char *)harness_bin("berth-supervisor"), "-c", b->cfg,
		NULL };
	json_t *st = NULL;
	int i, status = 0;

	memset(&b->sv, 0, sizeof(b->sv));
	b->since = 0;
	proc_start(&b->sv, argv, -1);
	/* Healthy: the API listens and both helpers are ready. */
	for (i = 0; i < 200 && status != 200; i++) {
		if (api_try(b, "GET", "/v1/health", NULL, 2000, &status,
		    &st) == 0)
			json_decref(st);
		if (status != 200)
			usleep(50000);
	}
	proc_drain(&b->sv);
	ck_assert_msg(status == 200, "supervisor never became healthy:\n%s",
	    b->sv.log);
	st = sv_get(b, "/v1/status");
	ck_assert_ptr_nonnull(st);
	b->mounter = helper_pid(st, "berth-mounter");
	b->registry = helper_pid(st, "berth-registry");
	json_decref(st);
	ck_assert_int_gt(b->mounter, 0);
	ck_assert_int_gt(b->registry, 0);
	harness_track_pid(b->mounter);
	harness_track_pid(b->registry);
}

static bool
field_is(json_t *o, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL && strcmp(v, want) == 0;
}

static bool
event_matches(json_t *e, const char *type, const char *subject,
    const char *text)
{
	const char *msg = json_string_value(json_object_get(e, "message"));
	char who[300];

	if (type != NULL && !field_is(e, "type", type))
		return false;
	if (text != NULL && (msg == NULL || strstr(msg, text) == NULL))
		return false;
	if (subject == NULL)
		return true;
	if (field_is(e, "topic", "plugin"))
		return field_is(e, "plugin", subject);
	if (strchr(subject, '/') == NULL)
		return field_is(e, "alloc", subject);
	snprintf(who, sizeof(who), "%s/%s", json_string_value(json_object_get(e,
	    "alloc")) ?: "", json_string_value(json_object_get(e, "task")) ?:
	    "");
	return strcmp(who, subject) == 0;
}

/* GET /v1/events after the index, waiting up to ms (0: answered at once). */
static json_t *
events_from(struct berth *b, uint64_t after, int ms)
{
	char path[128];
	json_t *json;
	int status;

	snprintf(path, sizeof(path), "/v1/events?index=%llu&timeout=%dms",
	    (unsigned long long)after, ms);
	if (api_try(b, "GET", path, NULL, ms + API_TIMEOUT_MS, &status,
	    &json) != 0)
		return NULL;
	ck_assert_msg(status == 200 && json != NULL, "GET %s: %d", path,
	    status);
	return json;
}

/* The matching events above b->since, as a new array (NULL: no API). */
static json_t *
matching(struct berth *b, const char *type, const char *subject,
    const char *text, uint64_t *last)
{
	json_t *all, *list, *e;
	size_t i;

	if ((all = events_from(b, b->since, 0)) == NULL)
		return NULL;
	list = json_array();
	json_array_foreach(json_object_get(all, "events"), i, e)
		if (event_matches(e, type, subject, text))
			json_array_append(list, e);
	if (last != NULL)
		*last = (uint64_t)json_integer_value(json_object_get(all,
		    "index"));
	json_decref(all);
	return list;
}

uint64_t
wait_event(struct berth *b, const char *type, const char *subject,
    const char *text, int ms)
{
	int64_t end = http_now_ms() + ms, left;
	json_t *list, *polled;
	uint64_t last = 0, index;

	for (;;) {
		list = matching(b, type, subject, text, &last);
		ck_assert_msg(list != NULL, "the API did not answer");
		if (json_array_size(list) > 0) {
			index = (uint64_t)json_integer_value(json_object_get(
			    json_array_get(list, 0), "index"));
			json_decref(list);
			return index;
		}
		json_decref(list);
		if ((left = end - http_now_ms()) <= 0)
			break;
		/* The long poll answers when the next event is recorded. */
		if ((polled = events_from(b, last, (int)left)) != NULL)
			json_decref(polled);
	}
	proc_drain(&b->sv);
	ck_abort_msg("no event type=%s subject=%s text=\"%s\" within %d ms; "
	    "the log:\n%s", type ? type : "any", subject ? subject : "any",
	    text ? text : "", ms, b->sv.log);
	return 0;
}

int
count_events(struct berth *b, const char *type, const char *subject,
    const char *text)
{
	json_t *list = matching(b, type, subject, text, NULL);
	int n;

	ck_assert_msg(list != NULL, "the API did not answer");
	n = (int)json_array_size(list);
	json_decref(list);
	return n;
}

uint64_t
event_index(struct berth *b, const char *type, const char *subject,
    const char *text)
{
	json_t *list = matching(b, type, subject, text, NULL);
	uint64_t i;

	ck_assert_msg(list != NULL, "the API did not answer");
	i = (uint64_t)json_integer_value(json_object_get(json_array_get(list,
	    0), "index"));
	json_decref(list);
	return i;
}

void
event_mark(struct berth *b)
{
	json_t *all = events_from(b, 0, 0);

	ck_assert_msg(all != NULL, "the API did not answer");
	b->since = (uint64_t)json_integer_value(json_object_get(all, "index"));
	json_decref(all);
}

void
wait_alloc(struct berth *b, const char *id, const char *status, int ms)
{
	int64_t end = http_now_ms() + ms;
	char path[300];
	json_t *a;
	int code;

	snprintf(path, sizeof(path), "/v1/allocation/%s", id);
	do {
		a = sv_api(b, "GET", path, NULL, &code);
		if (status == NULL ? code == 404 : code == 200 && field_is(a,
		    "status", status)) {
			json_decref(a);
			return;
		}
		json_decref(a);
		usleep(50000);
	} while (http_now_ms() < end);
	proc_drain(&b->sv);
	ck_abort_msg("allocation %s not %s within %d ms; the log:\n%s", id,
	    status ? status : "gone", ms, b->sv.log);
}

/* The plugin's instance of type, a new reference; NULL if none. */
static json_t *
instance_of(struct berth *b, const char *id, const char *type)
{
	char path[300];
	json_t *p, *in, *found = NULL;
	size_t i;
	int status;

	snprintf(path, sizeof(path), "/v1/plugin/%s", id);
	/* Unknown (404) has no instance; anything but 200 else fails. */
	p = sv_api(b, "GET", path, NULL, &status);
	ck_assert_msg(status == 200 || status == 404, "GET %s: %d", path,
	    status);
	if (status == 404) {
		json_decref(p);
		return NULL;
	}
	json_array_foreach(json_object_get(p, "instances"), i, in)
		if (field_is(in, "type", type))
			found = json_incref(in);
	json_decref(p);
	return found;
}

json_t *
wait_instance(struct berth *b, const char *id, const char *type,
    const char *alloc, bool healthy, int ms)
{
	int64_t end = http_now_ms() + ms;
	json_t *in;

	do {
		in = instance_of(b, id, type);
		if (alloc == NULL && in == NULL)
			return NULL;
		if (alloc != NULL && in != NULL && field_is(in, "alloc",
		    alloc) && (!healthy || json_is_true(json_object_get(in,
		    "healthy"))))
			return in;
		json_decref(in);
		usleep(50000);
	} while (http_now_ms() < end);
	proc_drain(&b->sv);
	ck_abort_msg("plugin %s: no %s%s instance %s%s within %d ms; the "
	    "log:\n%s", id, healthy ? "healthy " : "", type, alloc ? "for "
	    : "left", alloc ? alloc : "", ms, b->sv.log);
	return NULL;
}

int
task_pids(struct berth *b, pid_t *last)
{
	uint64_t since = b->since;
	json_t *list, *e;
	const char *msg;
	pid_t pid = 0;
	size_t i;
	int n = 0;

	/* Every task this supervisor started, whatever the mark. */
	b->since = 0;
	list = matching(b, "Started", NULL, NULL, NULL);
	b->since = since;
	/* A supervisor already gone has no events left to read. */
	json_array_foreach(list, i, e) {
		msg = json_string_value(json_object_get(e, "message"));
		if (msg == NULL || strncmp(msg, "pid ", 4) != 0)
			continue;
		pid = (pid_t)atol(msg + 4);
		harness_track_pid(pid);
		n++;
	}
	json_decref(list);
	if (last != NULL)
		*last = pid;
	return n;
}

int
count(struct berth *b, const char *text)
{
	const char *p = b->sv.log;
	int n = 0;

	proc_drain(&b->sv);
	while ((p = strstr(p, text)) != NULL) {
		n++;
		p += strlen(text);
	}
	return n;
}

void
wait_log(struct berth *b, const char *text, int ms)
{
	ck_assert_msg(proc_wait_log(&b->sv, text, ms), "no \"%s\" in:\n%s",
	    text, b->sv.log);
}

void
berth_kill(struct berth *b)
{
	task_pids(b, NULL);
	proc_kill(&b->sv);
	ck_assert(pid_wait_gone(b->mounter, 3000));
	ck_assert(pid_wait_gone(b->registry, 3000));
}

void
berth_stop(struct berth *b)
{
	berth_kill(b);
	harness_cgroup_remove(b->cgroup);
	harness_rmtree(b->dir);
	free(b->dir);
}

void
berth_alloc(struct berth *b, const char *file, const char *text)
{
	char tmp[1024], path[1024];

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", b->allocs, file);
	snprintf(path, sizeof(path), "%s/%s", b->allocs, file);
	harness_write(tmp, text);
	ck_assert_int_eq(rename(tmp, path), 0);
}

void
remove_alloc(struct berth *b, const char *file)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", b->allocs, file);
	ck_assert_int_eq(unlink(path), 0);
}

void
sv_put_alloc(struct berth *b, const char *name, const char *doc)
{
	char file[300];

	snprintf(file, sizeof(file), "%s.json", name);
	berth_alloc(b, file, doc);
}

void
sv_stop_alloc(struct berth *b, const char *name)
{
	char file[300];

	snprintf(file, sizeof(file), "%s.json", name);
	remove_alloc(b, file);
	wait_event(b, "AllocStopped", name, NULL, 15000);
	wait_alloc(b, name, NULL, 5000);
}

void
sv_plugin_up(struct berth *b)
{
	sv_put_alloc(b, "plugin", "{\"id\": \"plugin\", \"tasks\": [{"
	    "\"name\": \"hostpath\", \"driver\": \"privileged\", "
	    "\"config\": {\"plugin\": \"hostpath\"}, \"csi_plugin\": {"
	    "\"id\": \"hp\", \"type\": \"monolith\"}}]}");
	json_decref(wait_instance(b, "hp", "node", "plugin", true, 15000));
	json_decref(wait_instance(b, "hp", "controller", "plugin", true,
	    15000));
	task_pids(b, NULL);
}

void
sv_secret(struct berth *b, const char *name, const char *text)
{
	struct passwd *pw = getpwnam("berth");
	char path[1024];

	ck_assert_ptr_nonnull(pw);
	snprintf(path, sizeof(path), "%s/secrets", b->dir);
	ck_assert_int_eq(mkdir(path, 0700) == 0 || errno == EEXIST, 1);
	ck_assert_int_eq(chown(path, pw->pw_uid, 0), 0);
	snprintf(path, sizeof(path), "%s/secrets/%s", b->dir, name);
	harness_write(path, text);
	ck_assert_int_eq(chown(path, pw->pw_uid, pw->pw_gid), 0);
	ck_assert_int_eq(chmod(path, 0400), 0);
}

/* berthctl ARGS...: its exit code and what it printed on stdout. */
int
berth_mounts(struct berth *b, const char *part)
{
	char line[4096], mp[4096], data[600];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int n = 0;

	snprintf(data, sizeof(data), "%s/data/", b->dir);
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
		    strncmp(mp, data, strlen(data)) == 0 && (part == NULL ||
		    strstr(mp, part) != NULL))
			n++;
	if (f != NULL)
		fclose(f);
	return n;
}

int
sv_ctl(struct berth *b, char *out, size_t outlen, ...)
{
	char *argv[8], outf[600];
	va_list ap;
	pid_t pid;
	int n = 0, status, fd;
	FILE *f;

	argv[n++] = (char *)harness_bin("berthctl");
	va_start(ap, outlen);
	while (n < 7 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	snprintf(outf, sizeof(outf), "%s/ctl.out", b->dir);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		setenv("BERTH_API", b->sock, 1);
		if ((fd = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
		    dup2(fd, 1) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_ptr_nonnull(f = fopen(outf, "r"));
	out[fread(out, 1, outlen - 1, f)] = '\0';
	fclose(f);
	return WEXITSTATUS(status);
}
