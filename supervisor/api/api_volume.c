/*
 * api_volume.c: /v1/volume/<id>: read (GET, with its claims), register
 * an existing volume (PUT), create one through its plugin (PUT
 * .../create), delete (DELETE); ?namespace=N everywhere, "default" when
 * absent. The body of a register or create:
 *
 *	{"namespace": "default", "plugin_id": "hostpath",
 *	 "external_id": "vol-1",		(register: the provider's id)
 *	 "access_mode": "single-node-writer",
 *	 "attachment_mode": "file-system",
 *	 "mount_options": {"fs_type": "ext4", "mount_flags": ["noatime"]},
 *	 "context": {"key": "value"},		(register)
 *	 "secrets": {"stage": "ceph-user", "create": "ceph-admin"},
 *						(or one name for every call)
 *	 "on_plugin_restart": "remount",	(or "restart_tasks", "none")
 *	 "capacity_min": 1048576,		(create, bytes)
 *	 "snapshot_id": "snap-1",		(create: from the plugin's
 *					 snapshot; api_snapshot.c)
 *	 "parameters": {"key": "value"},	(create)
 *	 "topology_request": {"required": [{"segments": {"zone": "a"}}],
 *	     "preferred": [...]}}		(create: CSI's requisite, preferred;
 *					 register: required only, where the
 *					 volume can be reached)
 *
 * PUT .../expand asks the plugin for more room (volmgr_expand.c):
 *
 *	{"namespace": "default",
 *	 "capacity_min": 2097152,		(bytes, required)
 *	 "capacity_max": 4194304}		(bytes, optional: no bound)
 *
 * and the capacity the plugin then gives is kept with the volume
 * ("capacity_bytes" in a GET; 0 when no expansion has said it).
 *
 * A GET shows, while the volume is staged or published on this node,
 * its usage and condition as its node plugin last said them ("stats",
 * api_volstats.c).
 *
 * The mount options and the context are kept with the volume and passed
 * at stage and publish, the options merged with the alloc's. A GET shows
 * the fs_type and how many mount flags there are, never the flags: they
 * may hold secrets (Nomad redacts them too). Secrets are named, never
 * given: the names are kept and shown, the values live in root's files
 * (the config's secrets_dir, or systemd's credentials) and are read by
 * the volume manager just before each plugin call that takes them.
 *
 * Every field is checked (alloc_volume_spec_parse(), alloc.c), unknown
 * ones refused, every problem listed, before the volume
 * manager is asked; its answer comes later, so the request is kept until
 * then (and dropped quietly if the client has gone).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "api_int.h"
#include "ident.h"
#include "registry_client.h"
#include "volmgr.h"
#include "xalloc.h"

/* A request kept until the volume manager or the registry answers. */
struct pending {
	struct api *api;
	struct evhttp_request *req;	/* NULL once the client has gone */
	char ns[BERTH_IDENT_MAX + 1], id[BERTH_IDENT_MAX + 1];
	const char *verb;
};

static void
on_gone(struct evhttp_connection *conn, void *arg)
{
	struct pending *p = arg;

	(void)conn;
	p->req = NULL;
}

static struct pending *
keep(struct api_call *c, const char *ns, const char *verb)
{
	struct pending *p = xcalloc(1, sizeof(*p));

	p->api = c->api;
	p->req = c->req;
	p->verb = verb;
	snprintf(p->ns, sizeof(p->ns), "%s", ns);
	snprintf(p->id, sizeof(p->id), "%s", c->id);
	evhttp_connection_set_closecb(evhttp_request_get_connection(c->req),
	    on_gone, p);
	return p;
}

/* The call to answer with, or NULL when the client has gone (p freed). */
static bool
resume(struct pending *p, struct api_call *c)
{
	if (p->req == NULL) {
		free(p);
		return false;
	}
	evhttp_connection_set_closecb(evhttp_request_get_connection(p->req),
	    NULL, NULL);
	memset(c, 0, sizeof(*c));
	c->api = p->api;
	c->d = &p->api->d;
	c->req = p->req;
	c->id = p->id;
	return true;
}

static const char *
namespace_of(struct api_call *c)
{
	const char *ns = api_param(c, "namespace");

	return ns != NULL && ns[0] != '\0' ? ns : ALLOC_DEFAULT_NAMESPACE;
}

static bool
idents_ok(struct api_call *c, const char *ns)
{
	const char *why;

	if ((why = ident_problem(c->id, strlen(c->id))) != NULL) {
		api_error(c, 400, "volume id \"%s\": %s", c->id, why);
		return false;
	}
	if ((why = ident_problem(ns, strlen(ns))) != NULL) {
		api_error(c, 400, "namespace \"%s\": %s", ns, why);
		return false;
	}
	return true;
}

/* ---- GET ---- */

/* The flags redacted: one "[REDACTED]" in place of the list. */
static json_t *
mount_options_json(const Berth__Volume *v)
{
	json_t *o = api_pack("{s:s, s:I}", "fs_type", v->fs_type != NULL ?
	    v->fs_type : "", "mount_flags_count",
	    (json_int_t)v->n_mount_flags);

	if (o != NULL && v->n_mount_flags > 0)
		api_set(o, "mount_flags", api_pack("s", "[REDACTED]"));
	return o;
}

/* The secrets by call: their names only, never a value (which the
 * supervisor reads only at the call). */
static json_t *
secrets_json(const Berth__Volume *v)
{
	json_t *o = api_object();

	for (size_t i = 0; o != NULL && i < v->n_secrets; i++)
		api_set(o, v->secrets[i]->key, api_pack("s",
		    v->secrets[i]->value));
	return o;
}

/* [{"segments": {"k": "v"}}, ...] */
static json_t *
topologies_json(Berth__Topology *const *t, size_t n)
{
	json_t *a = api_array(), *seg;

	for (size_t i = 0; a != NULL && i < n; i++) {
		seg = api_object();
		for (size_t j = 0; seg != NULL && j < t[i]->n_segments; j++)
			api_set(seg, t[i]->segments[j]->key, api_pack("s",
			    t[i]->segments[j]->value));
		api_append(a, api_pack("{s:o}", "segments", seg));
	}
	return a;
}

/* What create asked, and where the plugin said the volume is reached. */
static void
topology_json(json_t *o, const Berth__Volume *v)
{
	if (v->n_requisite > 0 || v->n_preferred > 0)
		api_set(o, "topology_request", api_pack("{s:o, s:o}",
		    "required", topologies_json(v->requisite, v->n_requisite),
		    "preferred", topologies_json(v->preferred,
		    v->n_preferred)));
	if (v->n_accessible_topology > 0)
		api_set(o, "accessible_topology", topologies_json(
		    v->accessible_topology, v->n_accessible_topology));
}

static json_t *
volume_json(const Berth__VolumeReply *vr, struct volmgr *vm)
{
	const Berth__Volume *v = vr->volume;
	json_t *o, *claims = api_array(), *ctx = api_object();
	size_t i;

	for (i = 0; i < vr->n_claims; i++) {
		const Berth__Claim *cl = vr->claims[i];

		api_append(claims, api_pack("{s:s, s:s, s:s, "
		    "s:s}", "alloc", cl->alloc, "mode", cl->mode ==
		    BERTH__CLAIM_MODE__CLAIM_MODE_WRITE ? "write" : "read",
		    "access_mode", alloc_access_mode_name(cl->access_mode),
		    "attachment_mode",
		    alloc_attachment_mode_name(cl->attachment_mode)));
	}
	for (i = 0; i < v->n_context; i++)
		api_set(ctx, v->context[i]->key,
		    api_pack("s", v->context[i]->value));
	o = api_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:I}", "id", v->id,
	    "namespace", v->namespace_, "plugin_id", v->plugin_id,
	    "external_id", v->external_id, "context", ctx, "claims", claims,
	    "modify_index", (json_int_t)v->modify_index);
	if (o != NULL)
		api_set(o, "capacity_bytes", api_pack("I",
		    (json_int_t)v->capacity_bytes));
	if (o != NULL && v->snapshot_id != NULL && v->snapshot_id[0] != '\0')
		api_set(o, "snapshot_id", api_pack("s", v->snapshot_id));
	if (o != NULL)
		api_set(o, "mount_options", mount_options_json(v));
	if (o != NULL)
		api_set(o, "on_plugin_restart", api_pack("s",
		    v->on_plugin_restart != NULL && v->on_plugin_restart[0] !=
		    '\0' ? v->on_plugin_restart : "remount"));
	if (o != NULL && v->n_secrets > 0)
		api_set(o, "secrets", secrets_json(v));
	if (o != NULL)
		api_set(o, "stats", api_volume_stats(vm, v->namespace_, v->id));
	if (o != NULL)
		topology_json(o, v);
	if (o != NULL && v->n_capabilities > 0)
		api_set(o, "capabilities", api_pack("[{s:s, s:s}]",
		    "access_mode",
		    alloc_access_mode_name(v->capabilities[0]->access_mode),
		    "attachment_mode", alloc_attachment_mode_name(
		    v->capabilities[0]->attachment_mode)));
	return o;
}

static void
on_volume(const struct regclient_result *res, void *arg)
{
	struct pending *p = arg;
	struct api_call c;

	if (!resume(p, &c))
		return;
	/* A success is a volume_reply: the channel checked (ipc_reply.c). */
	if (res->code == BERTH__ERROR_CODE__ERROR_NONE &&
	    res->reply->volume_reply->volume != NULL)
		api_reply(&c, 200, volume_json(res->reply->volume_reply,
		    c.d->volmgr));
	else if (res->code == BERTH__ERROR_CODE__ERROR_NONE ||
	    res->code == BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		api_error(&c, 404, "no volume %s in namespace %s", p->id,
		    p->ns);
	else
		api_error(&c, 503, "berth-registry: %s: %s",
		    ipc_error_name(res->code), res->message);
	free(p);
}

void
api_volume(struct api_call *c)
{
	const char *ns = namespace_of(c);
	struct pending *p;

	if (!idents_ok(c, ns))
		return;
	p = keep(c, ns, "read");
	if (regclient_get_volume(c->d->registry, ns, c->id,
	    on_volume, p) < 0) {
		evhttp_connection_set_closecb(evhttp_request_get_connection(
		    c->req), NULL, NULL);
		free(p);
		api_error(c, 503, "cannot reach berth-registry");
	}
}

static void
on_volumes(const struct regclient_result *res, Berth__VolumeReply *const *items,
    size_t n, void *arg)
{
	struct pending *p = arg;
	struct api_call c;
	json_t *list;

	if (!resume(p, &c))
		return;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		api_error(&c, 503, "berth-registry: %s: %s",
		    ipc_error_name(res->code), res->message);
	} else {
		list = api_array();
		for (size_t i = 0; i < n; i++)
			api_append(list, volume_json(items[i],
			    c.d->volmgr));
		api_reply(&c, 200, api_pack("{s:o}", "volumes", list));
	}
	free(p);
}

/* GET /v1/volumes[?namespace=N]: every volume (of N), with its claims. */
void
api_volumes(struct api_call *c)
{
	const char *ns = api_param(c, "namespace"), *why;
	struct pending *p;

	if (ns != NULL && ns[0] != '\0' && (why = ident_problem(ns,
	    strlen(ns))) != NULL) {
		api_error(c, 400, "namespace \"%s\": %s", ns, why);
		return;
	}
	c->id = "";
	p = keep(c, ns != NULL ? ns : "", "list");
	if (regclient_list_volumes(c->d->registry, ns, on_volumes,
	    p) < 0) {
		evhttp_connection_set_closecb(evhttp_request_get_connection(
		    c->req), NULL, NULL);
		free(p);
		api_error(c, 503, "cannot reach berth-registry");
	}
}

/* ---- PUT: register and create ---- */

/* Every problem, in a "problems" list and summed up in the error. */
static void
refuse(struct api_call *c, const struct alloc_problems *pr, bool create)
{
	json_t *list = api_array();
	size_t i;

	for (i = 0; i < pr->n; i++)
		api_append(list, api_pack("s", pr->items[i]));
	api_error_with(c, 400, api_pack("{s:o}", "problems", list),
	    "the volume was not %s: %s%s", create ? "created" : "registered",
	    pr->n > 0 ? pr->items[0] : "refused", pr->n > 1 ?
	    " (and more: see problems)" : "");
}

static void
on_done(enum volmgr_status st, const char *why, void *arg)
{
	struct pending *p = arg;
	struct api_call c;

	if (!resume(p, &c))
		return;
	if (st == VOLMGR_OK)
		api_reply(&c, 200, api_pack("{s:s, s:s, s:s}", "id", p->id,
		    "namespace", p->ns, "status", p->verb));
	else
		api_error(&c, st == VOLMGR_RETRY ? 503 : strstr(why,
		    "claimed") != NULL || strstr(why, "CONFLICT") != NULL ||
		    strstr(why, "registered already") != NULL ? 409 :
		    strstr(why, "not registered") != NULL || strstr(why,
		    "NOT_FOUND") != NULL || strstr(why, "no volume ") != NULL ?
		    404 : 400, "volume %s: %s", p->id, why);
	free(p);
}

/* The document's topologies as the volume manager takes them. */
static struct volmgr_topology *
spec_topologies(const struct alloc_topology *t, size_t n)
{
	struct volmgr_topology *v = xcalloc(n + 1, sizeof(*v));

	for (size_t i = 0; i < n; i++) {
		/* Same layout: { key, value } of const char *. */
		struct volmgr_param *seg = xcalloc(t[i].nseg + 1,
		    sizeof(*seg));

		for (size_t j = 0; j < t[i].nseg; j++) {
			seg[j].key = t[i].seg[j].key;
			seg[j].value = t[i].seg[j].value;
		}
		v[i].seg = seg;
		v[i].nseg = t[i].nseg;
	}
	return v;
}

static void
spec_topologies_free(const struct volmgr_topology *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((struct volmgr_param *)v[i].seg);
	free((struct volmgr_topology *)v);
}

static void
put_volume(struct api_call *c, bool create)
{
	struct alloc_volume_spec *as;
	struct alloc_problems pr;
	struct volmgr_param params[ALLOC_MAX_PARAMS];
	struct volmgr_param ctx[ALLOC_MAX_CONTEXT];
	struct volmgr_param secrets[ALLOC_SECRET_CALLS];
	struct volmgr_spec s;
	struct pending *p;
	size_t i;

	if (c->body == NULL) {
		api_error(c, 400, "the body must be a volume (JSON); it is "
		    "empty");
		return;
	}
	if (ident_problem(c->id, strlen(c->id)) != NULL) {
		api_error(c, 400, "volume id \"%s\": %s", c->id,
		    ident_problem(c->id, strlen(c->id)));
		return;
	}
	if (alloc_volume_spec_parse(c->body, c->body_len, c->id, create, &as,
	    &pr) < 0) {
		refuse(c, &pr, create);
		alloc_problems_free(&pr);
		return;
	}
	alloc_problems_free(&pr);
	/* The volume manager copies what it keeps of s. */
	memset(&s, 0, sizeof(s));
	s.ns = as->ns;
	s.id = c->id;
	s.plugin = as->plugin;
	s.external_id = as->external_id != NULL ? as->external_id : c->id;
	s.access = as->vol.access_mode;
	s.attachment = as->vol.attachment_mode;
	s.fs_type = as->vol.fs_type;
	s.on_plugin_restart = as->on_plugin_restart;
	s.flags = as->vol.mount_flags;
	s.nflags = as->vol.nflags;
	s.capacity_min = as->capacity_min;
	s.snapshot_id = as->snapshot_id;
	for (i = 0; i < as->nparams; i++) {
		params[i].key = as->params[i].key;
		params[i].value = as->params[i].value;
	}
	s.params = params;
	s.nparams = as->nparams;
	for (i = 0; i < as->ncontext; i++) {
		ctx[i].key = as->context[i].key;
		ctx[i].value = as->context[i].value;
	}
	s.context = ctx;
	s.ncontext = as->ncontext;
	s.secrets = secrets;
	for (i = 0; i < ALLOC_SECRET_CALLS; i++)
		if (as->secrets[i] != NULL) {
			secrets[s.nsecrets].key = alloc_secret_calls[i];
			secrets[s.nsecrets++].value = as->secrets[i];
		}
	s.requisite = spec_topologies(as->requisite, as->nrequisite);
	s.nrequisite = as->nrequisite;
	s.preferred = spec_topologies(as->preferred, as->npreferred);
	s.npreferred = as->npreferred;
	/* Registered: what is required is where the volume is. */
	if (!create) {
		s.accessible = s.requisite;
		s.naccessible = s.nrequisite;
		s.requisite = NULL;
		s.nrequisite = 0;
	}
	p = keep(c, s.ns, create ? "created" : "registered");
	if (create)
		volmgr_create(c->d->volmgr, &s, on_done, p);
	else
		volmgr_register(c->d->volmgr, &s, on_done, p);
	spec_topologies_free(s.requisite, s.nrequisite);
	spec_topologies_free(s.preferred, s.npreferred);
	spec_topologies_free(s.accessible, s.naccessible);
	alloc_volume_spec_free(as);
}

void
api_volume_register(struct api_call *c)
{
	put_volume(c, false);
}

void
api_volume_create(struct api_call *c)
{
	put_volume(c, true);
}

void
api_volume_delete(struct api_call *c)
{
	const char *ns = namespace_of(c);
	struct pending *p;

	if (!idents_ok(c, ns))
		return;
	p = keep(c, ns, "deleted");
	volmgr_delete(c->d->volmgr, ns, c->id, on_done, p);
}

/* ---- PUT .../expand ---- */

/* A size in bytes: a positive integer, or absent (0) when optional. */
static bool
bytes_of(struct api_call *c, json_t *doc, const char *key, bool required,
    int64_t *out)
{
	json_t *v = json_object_get(doc, key);

	*out = 0;
	if (v == NULL && !required)
		return true;
	if (v == NULL || !json_is_integer(v) || json_integer_value(v) <= 0) {
		api_error(c, 400, "the volume was not expanded: %s must be a "
		    "positive number of bytes%s", key, v == NULL ?
		    " (it is missing)" : "");
		return false;
	}
	*out = json_integer_value(v);
	return true;
}

/* The body's namespace, "default" when absent, or NULL (answered). */
static const char *
expand_namespace(struct api_call *c, json_t *doc)
{
	json_t *v = json_object_get(doc, "namespace");
	const char *ns;

	if (v == NULL)
		return ALLOC_DEFAULT_NAMESPACE;
	if (!json_is_string(v)) {
		api_error(c, 400, "the volume was not expanded: namespace must "
		    "be a string");
		return NULL;
	}
	ns = json_string_value(v);
	return ns[0] != '\0' ? ns : ALLOC_DEFAULT_NAMESPACE;
}

static bool
expand_keys_ok(struct api_call *c, json_t *doc)
{
	const char *key;
	json_t *v;

	json_object_foreach(doc, key, v)
		if (strcmp(key, "namespace") != 0 && strcmp(key,
		    "capacity_min") != 0 && strcmp(key, "capacity_max") != 0) {
			api_error(c, 400, "the volume was not expanded: "
			    "unknown field \"%s\" (namespace, capacity_min, "
			    "capacity_max)", key);
			return false;
		}
	return true;
}

void
api_volume_expand(struct api_call *c)
{
	int64_t min, max;
	const char *ns;
	json_t *doc;

	if (c->body == NULL || (doc = json_loadb(c->body, c->body_len, 0,
	    NULL)) == NULL || !json_is_object(doc)) {
		if (c->body != NULL && doc != NULL)
			json_decref(doc);
		api_error(c, 400, "the body must be a JSON object: "
		    "{\"capacity_min\": BYTES[, \"capacity_max\": BYTES]}");
		return;
	}
	if (!expand_keys_ok(c, doc) || (ns = expand_namespace(c, doc)) ==
	    NULL || !idents_ok(c, ns) || !bytes_of(c, doc, "capacity_min",
	    true, &min) || !bytes_of(c, doc, "capacity_max", false, &max)) {
		json_decref(doc);
		return;
	}
	if (max > 0 && max < min) {
		api_error(c, 400, "the volume was not expanded: capacity_max "
		    "%lld is below capacity_min %lld", (long long)max,
		    (long long)min);
		json_decref(doc);
		return;
	}
	volmgr_expand(c->d->volmgr, ns, c->id, min, max, on_done, keep(c, ns,
	    "expanded"));
	json_decref(doc);
}
