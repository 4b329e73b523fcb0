/*
 * api_snapshot.c: a volume's snapshots, through its plugin's controller
 * (volmgr_snapshot.c):
 *
 *	PUT /v1/volume/<id>/snapshot	{"namespace": "default",
 *					 "name": "nightly-1"}
 *	DELETE /v1/volume/<id>/snapshot?namespace=N&snapshot_id=S
 *	GET /v1/volume/<id>/snapshots?namespace=N
 *	GET /v1/snapshots?plugin=P	(every snapshot of the plugin)
 *
 * A create answers the snapshot, a list {"snapshots": [...]}, each
 * {"snapshot_id", "source_volume_id", "plugin_id", "size_bytes",
 * "creation_time" (RFC 3339, UTC), "ready_to_use"}; ids are the plugin's.
 * A volume is created from one with the create document's "snapshot_id"
 * (api_volume.c). A plugin without the capability is refused with 400
 * that names it, a name taken by a snapshot of another volume with 409.
 * Must not: answer a client that has gone (the answer is dropped).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "api_int.h"
#include "ident.h"
#include "volmgr.h"
#include "xalloc.h"

/* A request kept until the volume manager answers, with its list. */
struct snap_call {
	struct api *api;
	struct evhttp_request *req;	/* NULL once the client has gone */
	char vol[BERTH_IDENT_MAX + 1], id[BERTH_IDENT_MAX + 1];
	enum { SC_CREATE, SC_DELETE, SC_LIST } what;
	struct volmgr_snapshots out;
};

static void
on_gone(struct evhttp_connection *conn, void *arg)
{
	struct snap_call *k = arg;

	(void)conn;
	k->req = NULL;
}

static struct snap_call *
keep(struct api_call *c, int what, const char *id)
{
	struct snap_call *k = xcalloc(1, sizeof(*k));

	k->api = c->api;
	k->req = c->req;
	k->what = what;
	snprintf(k->vol, sizeof(k->vol), "%s", c->id != NULL ? c->id : "");
	snprintf(k->id, sizeof(k->id), "%s", id != NULL ? id : "");
	evhttp_connection_set_closecb(evhttp_request_get_connection(c->req),
	    on_gone, k);
	return k;
}

static json_t *
snapshot_json(const struct volmgr_snapshot *s)
{
	char when[64];
	struct tm tm;
	time_t t = (time_t)s->created_sec;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return api_pack("{s:s, s:s, s:s, s:I, s:s, s:b}", "snapshot_id",
	    s->id, "source_volume_id", s->source, "plugin_id", s->plugin,
	    "size_bytes", (json_int_t)s->size_bytes, "creation_time", when,
	    "ready_to_use", s->ready);
}

static int
status_of(enum volmgr_status st, const char *why)
{
	if (st == VOLMGR_RETRY)
		return 503;
	if (strstr(why, "ALREADY_EXISTS") != NULL)
		return 409;
	if (strstr(why, "not registered") != NULL || strstr(why,
	    "NOT_FOUND") != NULL || strstr(why, "no volume ") != NULL)
		return 404;
	return 400;
}

static void
on_done(enum volmgr_status st, const char *why, void *arg)
{
	struct snap_call *k = arg;
	struct api_call c = { 0 };
	json_t *list;

	if (k->req == NULL)
		goto out;
	evhttp_connection_set_closecb(evhttp_request_get_connection(k->req),
	    NULL, NULL);
	c.api = k->api;
	c.d = &k->api->d;
	c.req = k->req;
	c.id = k->vol;
	if (st != VOLMGR_OK)
		api_error(&c, status_of(st, why), "%s%s: %s",
		    k->vol[0] != '\0' ? "volume " : "snapshots", k->vol, why);
	else if (k->what == SC_CREATE && k->out.n == 1)
		api_reply(&c, 200, snapshot_json(&k->out.v[0]));
	else if (k->what == SC_DELETE)
		api_reply(&c, 200, api_pack("{s:s, s:s}", "snapshot_id", k->id,
		    "status", "deleted"));
	else {
		list = api_array();
		for (size_t i = 0; i < k->out.n; i++)
			api_append(list, snapshot_json(&k->out.v[i]));
		api_reply(&c, 200, api_pack("{s:o}", "snapshots", list));
	}
out:
	volmgr_snapshots_free(&k->out);
	free(k);
}

static bool
ident_ok(struct api_call *c, const char *what, const char *s)
{
	const char *why;

	if (s == NULL || (why = ident_problem(s, strlen(s))) != NULL) {
		api_error(c, 400, "%s \"%s\": %s", what, s != NULL ? s : "",
		    s != NULL ? why : "is missing");
		return false;
	}
	return true;
}

static const char *
namespace_of(struct api_call *c)
{
	const char *ns = api_param(c, "namespace");

	return ns != NULL && ns[0] != '\0' ? ns : ALLOC_DEFAULT_NAMESPACE;
}

/* The body's string key (def when absent), or NULL (answered). */
static const char *
body_string(struct api_call *c, json_t *doc, const char *key,
    const char *def)
{
	json_t *v = json_object_get(doc, key);

	if (v == NULL && def != NULL)
		return def;
	if (v == NULL || !json_is_string(v)) {
		api_error(c, 400, "no snapshot was taken: %s must be a "
		    "string%s", key, v == NULL ? " (it is missing)" : "");
		return NULL;
	}
	if (json_string_value(v)[0] == '\0')
		return def != NULL ? def : "";
	return json_string_value(v);
}

void
api_snapshot_create(struct api_call *c)
{
	const char *ns, *name, *key;
	struct snap_call *k;
	json_t *doc, *v;

	if (c->body == NULL || (doc = json_loadb(c->body, c->body_len, 0,
	    NULL)) == NULL || !json_is_object(doc)) {
		if (c->body != NULL && doc != NULL)
			json_decref(doc);
		api_error(c, 400, "the body must be a JSON object: "
		    "{\"name\": NAME[, \"namespace\": NS]}");
		return;
	}
	json_object_foreach(doc, key, v)
		if (strcmp(key, "namespace") != 0 && strcmp(key, "name") != 0) {
			api_error(c, 400, "no snapshot was taken: unknown "
			    "field \"%s\" (namespace, name)", key);
			json_decref(doc);
			return;
		}
	if ((ns = body_string(c, doc, "namespace", ALLOC_DEFAULT_NAMESPACE)) ==
	    NULL || (name = body_string(c, doc, "name", NULL)) == NULL ||
	    !ident_ok(c, "volume id", c->id) || !ident_ok(c, "namespace", ns) ||
	    !ident_ok(c, "snapshot name", name)) {
		json_decref(doc);
		return;
	}
	k = keep(c, SC_CREATE, name);
	volmgr_snapshot_create(c->d->volmgr, ns, c->id, name, &k->out,
	    on_done, k);
	json_decref(doc);
}

void
api_snapshot_delete(struct api_call *c)
{
	const char *ns = namespace_of(c), *id = api_param(c, "snapshot_id");

	if (!ident_ok(c, "volume id", c->id) || !ident_ok(c, "namespace",
	    ns) || !ident_ok(c, "snapshot_id", id))
		return;
	volmgr_snapshot_delete(c->d->volmgr, ns, c->id, id, on_done,
	    keep(c, SC_DELETE, id));
}

/* A volume's (GET .../snapshots), or a plugin's (GET /v1/snapshots). */
void
api_snapshots(struct api_call *c)
{
	const char *ns = namespace_of(c), *plugin = api_param(c, "plugin");
	struct snap_call *k;

	if (c->id == NULL) {
		if (plugin == NULL) {
			api_error(c, 400, "which plugin's snapshots? give "
			    "?plugin=NAME, or ask a volume's at "
			    "/v1/volume/<id>/snapshots");
			return;
		}
		if (!ident_ok(c, "plugin", plugin))
			return;
		k = keep(c, SC_LIST, NULL);
		volmgr_snapshot_list(c->d->volmgr, NULL, NULL, plugin, &k->out,
		    on_done, k);
		return;
	}
	if (!ident_ok(c, "volume id", c->id) || !ident_ok(c, "namespace", ns))
		return;
	k = keep(c, SC_LIST, NULL);
	volmgr_snapshot_list(c->d->volmgr, ns, c->id, NULL, &k->out, on_done,
	    k);
}
