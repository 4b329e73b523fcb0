/*
 * api_alloc.c: /v1/allocations and /v1/allocation/<id>: list, read,
 * submit (PUT, the allocation document as the body) and stop (DELETE).
 *
 * A submitted document is checked whole by alloc.c; with any problem the
 * answer is 400 with every problem ("problems": ["<path>: <reason>"]).
 * A good one is handed to the alloc runner, which writes it to alloc_dir
 * where its watch starts it; one this node cannot run (a driver the
 * config does not allow, a plugin definition that is not there, a volume
 * the registry does not have, or one this node's plugin cannot take: a
 * block device of a volume not made or registered as one, an access
 * mode it does not advertise, a topology it does not match) is
 * refused with 400 and why. Its volumes
 * are looked up first, so the request is kept until the registry answers
 * (and dropped quietly if the client has gone); a registry that cannot
 * be reached leaves the check to the alloc runner.
 *
 * Each allocation says its "state" in Nomad's words (pending, running,
 * complete, failed); one whose set-up waits or failed says the "step"
 * ("volumes", "driver", "plugin", or "restart" when a task's restart
 * policy gave up), the "reason", and "next_retry" (RFC 3339, UTC) when it
 * is tried again; a complete one says its "reason" too. Each task says
 * its "last_exit" ({"code": N} or {"signal": N, "name": "SIGKILL"}) once
 * it has exited, and once ended for good its "reason". A complete or
 * failed one stays listed until its document is changed or stopped.
 * Must not: start or stop tasks itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "alloc_runner.h"
#include "api_int.h"
#include "cgroup.h"
#include "registry_client.h"
#include "task_runner.h"
#include "volmgr.h"
#include "xalloc.h"

/* A submit kept while its volumes are looked up, one after the other. */
struct submit {
	struct api *api;
	struct evhttp_request *req;	/* NULL once the client has gone */
	struct alloc *a;
	size_t next;			/* the volume looked up */
};

static void look_up(struct submit *s);

/* "running" once every task runs (or has completed), "stopping",
 * "failed", "complete", else "pending". */
static const char *
alloc_status(const struct alloc_view *v)
{
	size_t i;

	if (strcmp(v->status, "failed") == 0)
		return "failed";
	if (v->stopping)
		return "stopping";
	if (strcmp(v->status, "complete") == 0)
		return "complete";
	for (i = 0; i < v->ntasks; i++)
		if (!trun_ended(v->tasks[i]) &&
		    strcmp(trun_state(v->tasks[i]), "running") != 0)
			return "pending";
	return "running";
}

/* How it ended last, if it ever exited; its end for good, if it did. */
static void
task_end(json_t *o, const struct trun *tr)
{
	const char *abbr, *reason;
	bool signaled;
	int code;

	if (trun_last_exit(tr, &signaled, &code)) {
		abbr = signaled ? sigabbrev_np(code) : NULL;
		if (signaled)
			api_set(o, "last_exit", api_pack("{s:i, s:s+}",
			    "signal", code, "name", "SIG", abbr != NULL ?
			    abbr : "?"));
		else
			api_set(o, "last_exit", api_pack("{s:i}", "code",
			    code));
	}
	if ((reason = trun_end_reason(tr)) != NULL)
		api_set(o, "reason", api_pack("s", reason));
}

/* A running sandboxed task's cgroup: CPU time and memory now. */
static json_t *
usage_json(const struct cgroup_usage *u)
{
	json_t *o = api_pack("{s:I}", "oom_kills", (json_int_t)u->oom_kills);

	if (o != NULL && u->have_cpu)
		api_set(o, "cpu_ns", api_pack("I", (json_int_t)u->cpu_ns));
	if (o != NULL && u->have_memory)
		api_set(o, "memory_bytes", api_pack("I",
		    (json_int_t)u->memory_bytes));
	return o;
}

static json_t *
task_json(const struct alloc_task *t, const struct trun *tr, bool events)
{
	struct cgroup_usage u;
	json_t *o, *list;
	size_t i;
	int healthy = trun_plugin_healthy(tr);

	o = api_pack("{s:s, s:s, s:s, s:I, s:I}", "name", t->name, "driver",
	    alloc_driver_name(t->driver), "state", trun_state(tr), "pid",
	    (json_int_t)trun_pid(tr), "restarts",
	    (json_int_t)trun_restarts(tr));
	if (o == NULL)
		return NULL;
	if (t->csi.type != ALLOC_CSI_NONE)
		api_set(o, "csi_plugin", api_pack("{s:s?, s:s, "
		    "s:b}", "id", t->csi.id, "type",
		    alloc_csi_type_name(t->csi.type), "healthy", healthy == 1));
	task_end(o, tr);
	if (trun_usage(tr, &u))
		api_set(o, "usage", usage_json(&u));
	if (!events)
		return o;
	list = api_array();
	for (i = 0; i < trun_nevents(tr); i++) {
		const struct task_event *e = trun_event(tr, i);

		api_append(list, api_pack("{s:I, s:s, s:s}",
		    "time", (json_int_t)e->at, "type", e->type, "message",
		    e->message));
	}
	api_set(o, "events", list);
	return o;
}

/* The document as alloc.c wrote it, read back into the answer. */
static json_t *
document(const char *doc)
{
	json_error_t jerr;
	json_t *j;

	if ((j = json_loads(doc, 0, &jerr)) == NULL &&
	    json_error_code(&jerr) == json_error_out_of_memory)
		oom("json_loads");
	return j;
}

/* What waits or failed: step, reason and, if retried, next_retry. */
static void
failure(json_t *o, const struct alloc_view *v)
{
	char at[32];
	struct tm tm;
	time_t t;

	if (v->reason != NULL && (v->step == NULL || v->step[0] == '\0') &&
	    strcmp(v->status, "complete") == 0)
		api_set(o, "reason", api_pack("s", v->reason));
	if (v->step == NULL || v->step[0] == '\0')
		return;
	api_set(o, "step", api_pack("s", v->step));
	api_set(o, "reason", api_pack("s", v->reason));
	if (v->next_retry_ms <= 0)
		return;
	t = (time_t)(v->next_retry_ms / 1000);
	gmtime_r(&t, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	api_set(o, "next_retry", api_pack("s", at));
}

static json_t *
alloc_json(const struct alloc_view *v, bool full)
{
	json_t *o, *tasks;
	char *doc;
	size_t i;

	o = api_pack("{s:s, s:s, s:s, s:s, s:s}", "id", v->doc->id,
	    "namespace", v->doc->ns, "status", alloc_status(v), "state",
	    v->status, "file", v->file);
	if (o == NULL)
		return NULL;
	failure(o, v);
	tasks = api_array();
	for (i = 0; i < v->ntasks; i++)
		api_append(tasks, task_json(&v->doc->tasks[i],
		    v->tasks[i], full));
	api_set(o, "tasks", tasks);
	if (full && (doc = alloc_to_json(v->doc)) != NULL) {
		api_set(o, "document", document(doc));
		free(doc);
	}
	return o;
}

void
api_allocs(struct api_call *c)
{
	struct alloc_view v;
	json_t *list = api_array();
	size_t i;

	for (i = 0; allocs_get(c->d->allocs, i, &v); i++)
		api_append(list, alloc_json(&v, false));
	api_reply(c, 200, api_pack("{s:o}", "allocations", list));
}

void
api_alloc(struct api_call *c)
{
	struct alloc_view v;

	if (!allocs_find(c->d->allocs, c->id, &v)) {
		api_error(c, 404, "no allocation %s is running", c->id);
		return;
	}
	api_reply(c, 200, alloc_json(&v, true));
}

/* Hand it to the alloc runner, and answer. */
static void
submit(struct api_call *c, struct alloc *a)
{
	char why[1024];
	int r;

	if ((r = allocs_submit(c->d->allocs, a, why, sizeof(why))) < 0) {
		api_error(c, r == -EINVAL ? 400 : r == -EEXIST ? 409 : 503,
		    "%s", why);
		return;
	}
	api_reply(c, 200, api_pack("{s:s, s:s+}", "id", a->id, "file", a->id,
	    ".json"));
}

static void
on_gone(struct evhttp_connection *conn, void *arg)
{
	struct submit *s = arg;

	(void)conn;
	s->req = NULL;
}

static void
submit_free(struct submit *s)
{
	if (s->req != NULL)
		evhttp_connection_set_closecb(evhttp_request_get_connection(
		    s->req), NULL, NULL);
	alloc_free(s->a);
	free(s);
}

/* The call to answer with; false when the client has gone (s freed). */
static bool
resume(struct submit *s, struct api_call *c)
{
	if (s->req == NULL) {
		submit_free(s);
		return false;
	}
	memset(c, 0, sizeof(*c));
	c->api = s->api;
	c->d = &s->api->d;
	c->req = s->req;
	c->id = s->a->id;
	return true;
}

/*
 * A block device asked of a volume not made or registered as one: the
 * plugin accepted (CreateVolume) or confirmed (ValidateVolumeCapabilities,
 * at register) only the volume's capabilities, so why into why: true.
 * A volume that lists none is left to the claim.
 */
static bool
block_refused(const struct alloc_volume *av, const Berth__Volume *v,
    char *why, size_t n)
{
	size_t i;

	if (av->attachment_mode !=
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE ||
	    v->n_capabilities == 0)
		return false;
	for (i = 0; i < v->n_capabilities; i++)
		if (v->capabilities[i]->attachment_mode ==
		    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE)
			return false;
	snprintf(why, n, "volume %s/%s is not a block device: it was created "
	    "or registered for file-system attachment only, and plugin %s "
	    "was never asked to serve it as one", v->namespace_, v->id,
	    v->plugin_id);
	return true;
}

static void
on_volume(const struct regclient_result *res, void *arg)
{
	struct submit *s = arg;
	const struct alloc_volume *v = &s->a->volumes[s->next];
	struct api_call c;
	char why[1024];

	if (!resume(s, &c))
		return;
	if (res->code == BERTH__ERROR_CODE__ERROR_NOT_FOUND ||
	    (res->code == BERTH__ERROR_CODE__ERROR_NONE &&
	    res->reply->volume_reply->volume == NULL)) {
		api_error(&c, 400, "volumes.%s: no volume %s in namespace %s; "
		    "nothing started", v->name, v->source, s->a->ns);
		submit_free(s);
		return;
	}
	/* One this node's plugin cannot take (block, mode, topology). */
	if (res->code == BERTH__ERROR_CODE__ERROR_NONE &&
	    (block_refused(v, res->reply->volume_reply->volume, why,
	    sizeof(why)) || (c.d->volmgr != NULL && volmgr_refuses(
	    c.d->volmgr, res->reply->volume_reply->volume, v->access_mode,
	    why, sizeof(why))))) {
		api_error(&c, 400, "volumes.%s: %s; nothing started", v->name,
		    why);
		submit_free(s);
		return;
	}
	/* Found, or not known now: the alloc runner checks it again. */
	s->next++;
	look_up(s);
}

/* The next volume, or, all looked up, the submit itself. */
static void
look_up(struct submit *s)
{
	struct api_call c;

	if (s->next < s->a->nvolumes && regclient_get_volume(s->api->d.registry,
	    s->a->ns, s->a->volumes[s->next].source, on_volume, s) == 0)
		return;
	/* Done, or the registry cannot be reached: submitted as it is. */
	if (!resume(s, &c))
		return;
	submit(&c, s->a);
	submit_free(s);
}

void
api_alloc_submit(struct api_call *c)
{
	struct alloc_problems probs;
	struct alloc *a = NULL;
	struct submit *s;
	json_error_t jerr;
	json_t *root, *list;
	size_t i;

	if (api_drain_refuses(c->api)) {
		api_error(c, 409, "the node is draining or drained: new "
		    "allocations are refused until the drain is ended "
		    "(berthctl node drain --disable)");
		return;
	}
	if (c->body == NULL) {
		api_error(c, 400, "the body must be an allocation document "
		    "(JSON); it is empty");
		return;
	}
	/* Malformed JSON is said as such, with where. */
	if ((root = json_loadb(c->body, c->body_len, JSON_REJECT_DUPLICATES,
	    &jerr)) == NULL) {
		if (json_error_code(&jerr) == json_error_out_of_memory)
			oom("json_loadb");
		api_error(c, 400, "malformed JSON at line %d column %d: %s",
		    jerr.line, jerr.column, jerr.text);
		return;
	}
	json_decref(root);
	if (alloc_parse(c->body, c->body_len, &a, &probs) < 0) {
		list = api_array();
		for (i = 0; i < probs.n; i++)
			api_append(list,
			    api_pack("s", probs.items[i]));
		api_error_with(c, 400, api_pack("{s:o}", "problems", list),
		    "the allocation was refused, nothing started; %zu "
		    "problem%s", probs.n + probs.dropped, probs.n +
		    probs.dropped == 1 ? "" : "s");
		alloc_problems_free(&probs);
		return;
	}
	alloc_problems_free(&probs);
	if (a->nvolumes == 0 || c->d->registry == NULL) {
		submit(c, a);
		alloc_free(a);
		return;
	}
	s = xcalloc(1, sizeof(*s));
	s->api = c->api;
	s->req = c->req;
	s->a = a;
	evhttp_connection_set_closecb(evhttp_request_get_connection(c->req),
	    on_gone, s);
	look_up(s);
}

void
api_alloc_stop(struct api_call *c)
{
	char why[1024];
	int r;

	if (api_drain_guard_stop(c))
		return;
	if ((r = allocs_stop(c->d->allocs, c->id, why, sizeof(why))) < 0) {
		api_error(c, r == -ENOENT ? 404 : r == -EEXIST ? 409 : 503,
		    "%s", why);
		return;
	}
	api_reply(c, 200, api_pack("{s:s, s:s}", "id", c->id, "status",
	    "stopping"));
}
