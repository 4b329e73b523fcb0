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
 *	 "capacity_min": 1048576,		(create, bytes)
 *	 "parameters": {"key": "value"}}	(create)
 *
 * Every field is checked, unknown ones refused, before the volume
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
#include "supervisor.h"
#include "volmgr.h"

#define FLAGS_MAX 16
#define PARAMS_MAX 32

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
	struct pending *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		api_error(c, 500, "out of memory");
		return NULL;
	}
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
	c->sv = p->api->sv;
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

static json_t *
volume_json(const Berth__VolumeReply *vr)
{
	const Berth__Volume *v = vr->volume;
	json_t *o, *claims = json_array(), *ctx = json_object();
	size_t i;

	for (i = 0; i < vr->n_claims; i++) {
		const Berth__Claim *cl = vr->claims[i];

		json_array_append_new(claims, json_pack("{s:s, s:s, s:s, "
		    "s:s}", "alloc", cl->alloc, "mode", cl->mode ==
		    BERTH__CLAIM_MODE__CLAIM_MODE_WRITE ? "write" : "read",
		    "access_mode", alloc_access_mode_name(cl->access_mode),
		    "attachment_mode",
		    alloc_attachment_mode_name(cl->attachment_mode)));
	}
	for (i = 0; i < v->n_context; i++)
		json_object_set_new(ctx, v->context[i]->key,
		    json_string(v->context[i]->value));
	o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:I}", "id", v->id,
	    "namespace", v->namespace_, "plugin_id", v->plugin_id,
	    "external_id", v->external_id, "context", ctx, "claims", claims,
	    "modify_index", (json_int_t)v->modify_index);
	if (o != NULL && v->n_capabilities > 0)
		json_object_set_new(o, "capabilities", json_pack("[{s:s, s:s}]",
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
		api_reply(&c, 200, volume_json(res->reply->volume_reply));
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

	if (!idents_ok(c, ns) || (p = keep(c, ns, "read")) == NULL)
		return;
	if (regclient_get_volume(c->sv->registry.client, ns, c->id,
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
		list = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(list, volume_json(items[i]));
		api_reply(&c, 200, json_pack("{s:o}", "volumes", list));
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
	if ((p = keep(c, ns != NULL ? ns : "", "list")) == NULL)
		return;
	if (regclient_list_volumes(c->sv->registry.client, ns, on_volumes,
	    p) < 0) {
		evhttp_connection_set_closecb(evhttp_request_get_connection(
		    c->req), NULL, NULL);
		free(p);
		api_error(c, 503, "cannot reach berth-registry");
	}
}

/* ---- PUT: register and create ---- */

static bool
enum_of(const char *s, const char *(*name)(int), int max, int *out)
{
	for (int i = 1; i <= max; i++)
		if (strcmp(s, name(i)) == 0) {
			*out = i;
			return true;
		}
	return false;
}

static const char *
access_name(int i)
{
	return alloc_access_mode_name(i);
}

static const char *
attachment_name(int i)
{
	return alloc_attachment_mode_name(i);
}

/* Strings kept for the spec: borrowed from root, which outlives it. */
struct spec_buf {
	struct volmgr_spec s;
	const char *flags[FLAGS_MAX];
	char params[PARAMS_MAX][512];
	char *pp[PARAMS_MAX];
};

/* 0, or -1 with a 400 answered. */
static int
parse_spec(struct api_call *c, json_t *root, bool create, struct spec_buf *b)
{
	static const char *const known[] = { "id", "namespace", "plugin_id",
		"external_id", "access_mode", "attachment_mode",
		"mount_options", "capacity_min", "parameters", NULL };
	const char *key, *why, *s;
	json_t *v, *mo;
	int mode;
	size_t i;

	memset(b, 0, sizeof(*b));
	b->s.id = c->id;
	b->s.ns = ALLOC_DEFAULT_NAMESPACE;
	b->s.attachment =
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	if (!json_is_object(root)) {
		api_error(c, 400, "the body must be a JSON object");
		return -1;
	}
	json_object_foreach(root, key, v) {
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(key, known[i]) == 0)
				break;
		if (known[i] == NULL || (!create && (strcmp(key,
		    "capacity_min") == 0 || strcmp(key, "parameters") == 0)) ||
		    (create && strcmp(key, "external_id") == 0)) {
			api_error(c, 400, "%s: unknown field for %s", key,
			    create ? "create" : "register");
			return -1;
		}
	}
#define STR(field, dst, required) do {					\
	v = json_object_get(root, field);				\
	if (v == NULL && required) {					\
		api_error(c, 400, "%s: required", field);		\
		return -1;						\
	}								\
	if (v != NULL && !json_is_string(v)) {				\
		api_error(c, 400, "%s: must be a string", field);	\
		return -1;						\
	}								\
	if (v != NULL)							\
		dst = json_string_value(v);				\
} while (0)
	STR("namespace", b->s.ns, false);
	STR("plugin_id", b->s.plugin, true);
	if (!create)
		STR("external_id", b->s.external_id, false);
	s = NULL;
	STR("access_mode", s, true);
	if (!enum_of(s, access_name, 5, &mode)) {
		api_error(c, 400, "access_mode: \"%s\" is not one of "
		    "single-node-reader-only, single-node-writer, "
		    "multi-node-reader-only, multi-node-single-writer, "
		    "multi-node-multi-writer", s);
		return -1;
	}
	b->s.access = mode;
	s = NULL;
	STR("attachment_mode", s, false);
	if (s != NULL) {
		if (!enum_of(s, attachment_name, 2, &mode)) {
			api_error(c, 400, "attachment_mode: \"%s\" is not one "
			    "of file-system, block-device", s);
			return -1;
		}
		b->s.attachment = mode;
	}
	s = NULL;
	STR("id", s, false);
	if (s != NULL && strcmp(s, c->id) != 0) {
		api_error(c, 400, "id: \"%s\" differs from the path's \"%s\"",
		    s, c->id);
		return -1;
	}
#undef STR
	if ((why = ident_problem(b->s.ns, strlen(b->s.ns))) != NULL ||
	    (why = ident_problem(b->s.plugin, strlen(b->s.plugin))) != NULL) {
		api_error(c, 400, "namespace or plugin_id: %s", why);
		return -1;
	}
	if (b->s.external_id == NULL)
		b->s.external_id = c->id;
	if ((mo = json_object_get(root, "mount_options")) != NULL) {
		json_t *fs = json_object_get(mo, "fs_type");
		json_t *fl = json_object_get(mo, "mount_flags");

		if (!json_is_object(mo) || json_object_size(mo) != (size_t)(fs !=
		    NULL) + (fl != NULL) || (fs != NULL && !json_is_string(fs))
		    || (fl != NULL && (!json_is_array(fl) ||
		    json_array_size(fl) > FLAGS_MAX))) {
			api_error(c, 400, "mount_options: an object with "
			    "fs_type (a string) and mount_flags (at most %d "
			    "strings), nothing else", FLAGS_MAX);
			return -1;
		}
		if (fs != NULL)
			b->s.fs_type = json_string_value(fs);
		for (i = 0; fl != NULL && i < json_array_size(fl); i++) {
			if (!json_is_string(json_array_get(fl, i))) {
				api_error(c, 400, "mount_options.mount_flags[%zu]: "
				    "must be a string", i);
				return -1;
			}
			b->flags[i] = json_string_value(json_array_get(fl, i));
		}
		b->s.flags = (char *const *)b->flags;
		b->s.nflags = fl != NULL ? json_array_size(fl) : 0;
	}
	if ((v = json_object_get(root, "capacity_min")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			api_error(c, 400, "capacity_min: bytes, a whole number "
			    "of at least 0");
			return -1;
		}
		b->s.capacity_min = json_integer_value(v);
	}
	if ((v = json_object_get(root, "parameters")) != NULL) {
		json_t *pv;

		if (!json_is_object(v) || json_object_size(v) > PARAMS_MAX) {
			api_error(c, 400, "parameters: an object of at most %d "
			    "strings", PARAMS_MAX);
			return -1;
		}
		i = 0;
		json_object_foreach(v, key, pv) {
			if (!json_is_string(pv)) {
				api_error(c, 400, "parameters.%s: must be a "
				    "string", key);
				return -1;
			}
			snprintf(b->params[i], sizeof(b->params[i]), "%s=%s",
			    key, json_string_value(pv));
			b->pp[i] = b->params[i];
			i++;
		}
		b->s.params = b->pp;
		b->s.nparams = i;
	}
	return 0;
}

static void
on_done(enum volmgr_status st, const char *why, void *arg)
{
	struct pending *p = arg;
	struct api_call c;

	if (!resume(p, &c))
		return;
	if (st == VOLMGR_OK)
		api_reply(&c, 200, json_pack("{s:s, s:s, s:s}", "id", p->id,
		    "namespace", p->ns, "status", p->verb));
	else
		api_error(&c, st == VOLMGR_RETRY ? 503 : strstr(why,
		    "claimed") != NULL || strstr(why, "CONFLICT") != NULL ?
		    409 : strstr(why, "not registered") != NULL || strstr(why,
		    "NOT_FOUND") != NULL ? 404 : 400, "volume %s: %s", p->id,
		    why);
	free(p);
}

static void
put_volume(struct api_call *c, bool create)
{
	struct spec_buf b;
	struct pending *p;
	json_error_t jerr;
	json_t *root;

	if (c->body == NULL) {
		api_error(c, 400, "the body must be a volume (JSON); it is "
		    "empty");
		return;
	}
	if ((root = json_loadb(c->body, c->body_len, JSON_REJECT_DUPLICATES,
	    &jerr)) == NULL) {
		api_error(c, 400, "malformed JSON at line %d column %d: %s",
		    jerr.line, jerr.column, jerr.text);
		return;
	}
	if (ident_problem(c->id, strlen(c->id)) != NULL)
		api_error(c, 400, "volume id \"%s\": %s", c->id,
		    ident_problem(c->id, strlen(c->id)));
	else if (parse_spec(c, root, create, &b) == 0 &&
	    (p = keep(c, b.s.ns, create ? "created" : "registered")) != NULL) {
		/* The volume manager copies what it keeps of b. */
		if (create)
			volmgr_create(c->sv->volmgr, &b.s, on_done, p);
		else
			volmgr_register(c->sv->volmgr, &b.s, on_done, p);
	}
	json_decref(root);
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

	if (!idents_ok(c, ns) || (p = keep(c, ns, "deleted")) == NULL)
		return;
	volmgr_delete(c->sv->volmgr, ns, c->id, on_done, p);
}
