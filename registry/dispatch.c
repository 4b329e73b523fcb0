/*
 * dispatch.c: berth-registry's requests, in two steps as in vmd's priv.c:
 * first every field of a request is checked (identifiers with the shared
 * allow-list, enums against the values this version knows, sizes against
 * the record bounds), and only a request that passes is queued for the
 * group commit, where registry_act() runs it.
 *
 * Requests are not trusted, even from the supervisor. Must not: touch the
 * database (the actions in plugins.c, claims.c, handles.c and events.c do,
 * inside the batch's transaction).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ident.h"
#include "registry.h"

struct check {
	const char *body;
	char msg[256];
};

static bool
bad(struct check *ck, const char *fmt, ...) BERTH_PRINTF(2, 3);

static bool
bad(struct check *ck, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(ck->msg, sizeof(ck->msg), "%s: %s", ck->body, what);
	return false;
}

static bool
ident(struct check *ck, const char *field, const char *s)
{
	const char *why;

	if (s == NULL)
		return bad(ck, "%s is missing", field);
	if ((why = ident_problem(s, strlen(s))) != NULL)
		return bad(ck, "%s %s", field, why);
	return true;
}

static bool
ident_or_empty(struct check *ck, const char *field, const char *s)
{
	return (s != NULL && s[0] == '\0') || ident(ck, field, s);
}

/* Printable text: no control bytes, at most max bytes. */
static bool
text(struct check *ck, const char *field, const char *s, size_t max,
    bool empty_ok)
{
	size_t len, i;

	if (s == NULL)
		return bad(ck, "%s is missing", field);
	if ((len = strlen(s)) == 0 && !empty_ok)
		return bad(ck, "%s is empty", field);
	if (len > max)
		return bad(ck, "%s is %zu bytes, over the %zu-byte bound",
		    field, len, max);
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return bad(ck, "%s contains a control character",
			    field);
	return true;
}

static bool
blob(struct check *ck, const char *field, const ProtobufCBinaryData *b)
{
	if (b->len > REG_BLOB_MAX)
		return bad(ck, "%s is %zu bytes, over the %d-byte bound",
		    field, b->len, REG_BLOB_MAX);
	return true;
}

static bool
plugin_type(struct check *ck, Berth__PluginType t, bool zero_ok)
{
	if ((t == 0 && zero_ok) ||
	    (t >= BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER &&
	    t <= BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DEVICE))
		return true;
	return bad(ck, "plugin type %d is not one this registry knows", t);
}

static bool
access_mode(struct check *ck, Berth__AccessMode m)
{
	if (m >= BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY &&
	    m <= BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_MULTI_WRITER)
		return true;
	return bad(ck, "access mode %d is not one this registry knows", m);
}

static bool
attachment_mode(struct check *ck, Berth__AttachmentMode m)
{
	if (m == BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM ||
	    m == BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE)
		return true;
	return bad(ck, "attachment mode %d is not one this registry knows",
	    m);
}

static bool
plugin_key(struct check *ck, const Berth__PluginKey *k, bool alloc_opt)
{
	if (k == NULL)
		return bad(ck, "key is missing");
	return plugin_type(ck, k->type, false) && ident(ck, "name", k->name) &&
	    (alloc_opt ? ident_or_empty(ck, "alloc", k->alloc) :
	    ident(ck, "alloc", k->alloc));
}

static bool
check_register(struct check *ck, const Berth__RegisterPlugin *rp)
{
	const Berth__PluginInstance *pi = rp->instance;

	if (pi == NULL)
		return bad(ck, "instance is missing");
	return plugin_type(ck, pi->type, false) &&
	    ident(ck, "name", pi->name) && ident(ck, "alloc", pi->alloc) &&
	    text(ck, "endpoint", pi->endpoint, REG_ENDPOINT_MAX, false) &&
	    ident_or_empty(ck, "provider", pi->provider) &&
	    text(ck, "provider_version", pi->provider_version, REG_TEXT_MAX,
	    true) && blob(ck, "capabilities", &pi->capabilities);
}

static bool
volume_key(struct check *ck, const Berth__VolumeKey *k)
{
	if (k == NULL)
		return bad(ck, "key is missing");
	return ident(ck, "namespace", k->namespace_) && ident(ck, "id", k->id);
}

/* A volume's topologies: bounded, printable key = value segments. */
static bool
topologies(struct check *ck, const char *field, Berth__Topology *const *t,
    size_t n)
{
	if (n > REG_CAPS_MAX)
		return bad(ck, "%zu %s topologies, over the bound of %d", n,
		    field, REG_CAPS_MAX);
	for (size_t i = 0; i < n; i++) {
		if (t[i]->n_segments > REG_CAPS_MAX)
			return bad(ck, "%s: %zu segments, over the bound of %d",
			    field, t[i]->n_segments, REG_CAPS_MAX);
		for (size_t j = 0; j < t[i]->n_segments; j++)
			if (!text(ck, "topology key", t[i]->segments[j]->key,
			    REG_TEXT_MAX, false) || !text(ck, "topology value",
			    t[i]->segments[j]->value, REG_TEXT_MAX, true))
				return false;
	}
	return true;
}

static bool
check_volume(struct check *ck, const Berth__Volume *v)
{
	size_t i;

	if (v == NULL)
		return bad(ck, "volume is missing");
	if (!ident(ck, "namespace", v->namespace_) || !ident(ck, "id", v->id) ||
	    !ident(ck, "plugin_id", v->plugin_id) ||
	    !text(ck, "external_id", v->external_id, REG_TEXT_MAX, false))
		return false;
	if (v->n_capabilities > REG_CAPS_MAX)
		return bad(ck, "%zu capabilities, over the bound of %d",
		    v->n_capabilities, REG_CAPS_MAX);
	for (i = 0; i < v->n_capabilities; i++)
		if (!access_mode(ck, v->capabilities[i]->access_mode) ||
		    !attachment_mode(ck, v->capabilities[i]->attachment_mode))
			return false;
	if (v->n_context > REG_CONTEXT_MAX)
		return bad(ck, "%zu context entries, over the bound of %d",
		    v->n_context, REG_CONTEXT_MAX);
	for (i = 0; i < v->n_context; i++)
		if (!text(ck, "context key", v->context[i]->key, REG_TEXT_MAX,
		    false) || !text(ck, "context value", v->context[i]->value,
		    REG_CONTEXT_VALUE_MAX, true))
			return false;
	if (!text(ck, "fs_type", v->fs_type, REG_TEXT_MAX, true))
		return false;
	if (v->on_plugin_restart != NULL && v->on_plugin_restart[0] != '\0' &&
	    strcmp(v->on_plugin_restart, "remount") != 0 &&
	    strcmp(v->on_plugin_restart, "restart_tasks") != 0 &&
	    strcmp(v->on_plugin_restart, "none") != 0)
		return bad(ck, "on_plugin_restart is not remount, "
		    "restart_tasks or none");
	if (v->n_mount_flags > REG_FLAGS_MAX)
		return bad(ck, "%zu mount flags, over the bound of %d",
		    v->n_mount_flags, REG_FLAGS_MAX);
	/* Flags may hold secrets: the error names none. */
	for (i = 0; i < v->n_mount_flags; i++)
		if (!text(ck, "a mount flag", v->mount_flags[i], REG_TEXT_MAX,
		    false))
			return false;
	/* Names of secrets, by the call that gets them; never values. */
	if (v->n_secrets > REG_CONTEXT_MAX)
		return bad(ck, "%zu secret references, over the bound of %d",
		    v->n_secrets, REG_CONTEXT_MAX);
	for (i = 0; i < v->n_secrets; i++)
		if (!text(ck, "secret call", v->secrets[i]->key, REG_TEXT_MAX,
		    false) || !ident(ck, "secret name", v->secrets[i]->value))
			return false;
	if (!topologies(ck, "requisite", v->requisite, v->n_requisite) ||
	    !topologies(ck, "preferred", v->preferred, v->n_preferred) ||
	    !topologies(ck, "accessible_topology", v->accessible_topology,
	    v->n_accessible_topology))
		return false;
	if (v->capacity_bytes < 0)
		return bad(ck, "capacity_bytes %lld is negative",
		    (long long)v->capacity_bytes);
	if (!text(ck, "snapshot_id", v->snapshot_id, REG_TEXT_MAX, true))
		return false;
	/* With its claims, a volume must still fit one reply. */
	if (berth__volume__get_packed_size(v) > REG_BLOB_MAX)
		return bad(ck, "the volume record is %zu bytes, over the "
		    "%d-byte bound", berth__volume__get_packed_size(v),
		    REG_BLOB_MAX);
	return true;
}

static bool
reader_only(Berth__AccessMode m)
{
	return m == BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY ||
	    m == BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_READER_ONLY;
}

static bool
check_claim(struct check *ck, const Berth__Claim *c)
{
	if (c == NULL)
		return bad(ck, "claim is missing");
	if (!ident(ck, "namespace", c->namespace_) ||
	    !ident(ck, "volume", c->volume) || !ident(ck, "alloc", c->alloc) ||
	    !access_mode(ck, c->access_mode) ||
	    !attachment_mode(ck, c->attachment_mode))
		return false;
	if (c->mode != BERTH__CLAIM_MODE__CLAIM_MODE_READ &&
	    c->mode != BERTH__CLAIM_MODE__CLAIM_MODE_WRITE)
		return bad(ck, "claim mode %d is neither read nor write",
		    c->mode);
	if (c->mode == BERTH__CLAIM_MODE__CLAIM_MODE_WRITE &&
	    reader_only(c->access_mode))
		return bad(ck, "access mode %s allows no write claim",
		    reg_access_mode_name(c->access_mode));
	return true;
}

static bool
check_handle(struct check *ck, const Berth__Handle *h, bool key_only)
{
	const Berth__ReattachHandle *ra;
	const Berth__ProcessHandle *ph;
	const Berth__MountHandle *mh;

	if (h == NULL)
		return bad(ck, "handle is missing");
	switch (h->handle_case) {
	case BERTH__HANDLE__HANDLE_REATTACH:
		ra = h->reattach;
		if (ra->type != BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER &&
		    ra->type != BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DEVICE)
			return bad(ck, "reattach state is for drivers and "
			    "devices, not plugin type %d", ra->type);
		return ident(ck, "name", ra->name) &&
		    ident(ck, "alloc", ra->alloc) &&
		    ident(ck, "task", ra->task) &&
		    (key_only || blob(ck, "state", &ra->state));
	case BERTH__HANDLE__HANDLE_PROCESS:
		ph = h->process;
		if (!ident(ck, "plugin", ph->plugin) ||
		    !ident(ck, "alloc", ph->alloc))
			return false;
		if (!key_only && (ph->pid <= 1 || ph->start_time == 0))
			return bad(ck, "process pid %d start time %llu is not "
			    "a process berth could have started", ph->pid,
			    (unsigned long long)ph->start_time);
		return true;
	case BERTH__HANDLE__HANDLE_MOUNT:
		mh = h->mount;
		return ident(ck, "plugin", mh->plugin) &&
		    ident(ck, "namespace", mh->namespace_) &&
		    ident(ck, "volume", mh->volume) &&
		    ident(ck, "alloc", mh->alloc) &&
		    ident(ck, "task", mh->task) &&
		    ident(ck, "usage", mh->usage) &&
		    (mh->stage_usage[0] == '\0' ||
		    ident(ck, "stage_usage", mh->stage_usage));
	default:
		return bad(ck, "handle of no kind this registry knows");
	}
}

static bool
handle_kind(struct check *ck, const char *field, Berth__HandleKind k)
{
	if (k >= 0 && k <= BERTH__HANDLE_KIND__HANDLE_KIND_MOUNT)
		return true;
	return bad(ck, "%s %d is not a handle kind this registry knows",
	    field, k);
}

/* A range that holds ids only: never 0 (root), never past 2^31 - 1
 * (what the kernel and chown take as a uid). */
static bool
check_ids(struct check *ck, const Berth__AllocateIds *ai)
{
	if (!ident(ck, "alloc", ai->alloc))
		return false;
	if (ai->first == 0)
		return bad(ck, "first is 0, which is root's id");
	if (ai->count == 0 || ai->count > REG_IDS_MAX)
		return bad(ck, "count %u is not from 1 to %d", ai->count,
		    REG_IDS_MAX);
	if ((uint64_t)ai->first + ai->count - 1 > INT32_MAX)
		return bad(ck, "the range %u + %u goes past %d", ai->first,
		    ai->count, INT32_MAX);
	return true;
}

/* Is env a request this registry serves, with every field valid? */
static bool
check(struct check *ck, const Berth__Envelope *env)
{
	ck->body = ipc_body_name(env->body_case);
	switch (env->body_case) {
	case BERTH__ENVELOPE__BODY_REGISTER_PLUGIN:
		return check_register(ck, env->register_plugin);
	case BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN:
		return plugin_key(ck, env->deregister_plugin->key, false);
	case BERTH__ENVELOPE__BODY_GET_PLUGIN:
		return plugin_key(ck, env->get_plugin->key, true);
	case BERTH__ENVELOPE__BODY_LIST_PLUGINS:
		if (env->list_plugins->after < 0)
			return bad(ck, "after is negative");
		return plugin_type(ck, env->list_plugins->type, true) &&
		    ident_or_empty(ck, "name", env->list_plugins->name);
	case BERTH__ENVELOPE__BODY_PUT_VOLUME:
		return check_volume(ck, env->put_volume->volume);
	case BERTH__ENVELOPE__BODY_GET_VOLUME:
		return volume_key(ck, env->get_volume->key);
	case BERTH__ENVELOPE__BODY_LIST_VOLUMES: {
		const Berth__ListVolumes *lv = env->list_volumes;

		if ((lv->after_namespace[0] == '\0') != (lv->after_id[0] ==
		    '\0'))
			return bad(ck, "after_namespace and after_id go "
			    "together");
		return ident_or_empty(ck, "namespace", lv->namespace_) &&
		    ident_or_empty(ck, "after_namespace",
		    lv->after_namespace) && ident_or_empty(ck, "after_id",
		    lv->after_id);
	}
	case BERTH__ENVELOPE__BODY_DELETE_VOLUME:
		return volume_key(ck, env->delete_volume->key);
	case BERTH__ENVELOPE__BODY_CLAIM_VOLUME:
		return check_claim(ck, env->claim_volume->claim);
	case BERTH__ENVELOPE__BODY_RELEASE_CLAIM:
		return ident(ck, "namespace", env->release_claim->namespace_) &&
		    ident(ck, "volume", env->release_claim->volume) &&
		    ident(ck, "alloc", env->release_claim->alloc);
	case BERTH__ENVELOPE__BODY_PUT_HANDLE:
		return check_handle(ck, env->put_handle->handle, false);
	case BERTH__ENVELOPE__BODY_DELETE_HANDLE:
		return check_handle(ck, env->delete_handle->handle, true);
	case BERTH__ENVELOPE__BODY_LIST_HANDLES:
		if (env->list_handles->after < 0)
			return bad(ck, "after is negative");
		return handle_kind(ck, "kind", env->list_handles->kind) &&
		    handle_kind(ck, "after_kind", env->list_handles->after_kind);
	case BERTH__ENVELOPE__BODY_ALLOCATE_IDS:
		return check_ids(ck, env->allocate_ids);
	case BERTH__ENVELOPE__BODY_RELEASE_IDS:
		return ident(ck, "alloc", env->release_ids->alloc);
	case BERTH__ENVELOPE__BODY_SUBSCRIBE:
	case BERTH__ENVELOPE__BODY_UNSUBSCRIBE:
		return true;
	default:
		return false;
	}
}

/* Run one checked request inside the batch's transaction. */
int
registry_act(struct registry *r, struct op *op)
{
	switch (op->req->body_case) {
	case BERTH__ENVELOPE__BODY_REGISTER_PLUGIN:
		return plugins_register(r, op);
	case BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN:
		return plugins_deregister(r, op);
	case BERTH__ENVELOPE__BODY_GET_PLUGIN:
		return plugins_get(r, op);
	case BERTH__ENVELOPE__BODY_LIST_PLUGINS:
		return plugins_list(r, op);
	case BERTH__ENVELOPE__BODY_PUT_VOLUME:
		return claims_put_volume(r, op);
	case BERTH__ENVELOPE__BODY_GET_VOLUME:
		return claims_get_volume(r, op);
	case BERTH__ENVELOPE__BODY_LIST_VOLUMES:
		return claims_list_volumes(r, op);
	case BERTH__ENVELOPE__BODY_DELETE_VOLUME:
		return claims_delete_volume(r, op);
	case BERTH__ENVELOPE__BODY_CLAIM_VOLUME:
		return claims_claim(r, op);
	case BERTH__ENVELOPE__BODY_RELEASE_CLAIM:
		return claims_release(r, op);
	case BERTH__ENVELOPE__BODY_PUT_HANDLE:
		return handles_put(r, op);
	case BERTH__ENVELOPE__BODY_DELETE_HANDLE:
		return handles_delete(r, op);
	case BERTH__ENVELOPE__BODY_LIST_HANDLES:
		return handles_list(r, op);
	case BERTH__ENVELOPE__BODY_ALLOCATE_IDS:
		return ids_allocate(r, op);
	case BERTH__ENVELOPE__BODY_RELEASE_IDS:
		return ids_release(r, op);
	case BERTH__ENVELOPE__BODY_SUBSCRIBE:
		return events_subscribe(r, op);
	default:
		return op_fail(op, BERTH__ERROR_CODE__ERROR_UNSUPPORTED,
		    "%s is not a registry request",
		    ipc_body_name(op->req->body_case));
	}
}

void
registry_dispatch(struct helper *h, Berth__Envelope *env, int fd)
{
	struct registry *r = h->arg;
	struct check ck = { 0 };

	if (fd >= 0)
		close(fd);	/* no registry body takes one */
	if (env->kind == BERTH__KIND__KIND_NOTICE) {
		if (env->body_case == BERTH__ENVELOPE__BODY_EVENT_ACK)
			events_ack(r, env->event_ack);
		else
			log_warnx("registry_dispatch: unexpected %s notice; "
			    "dropped", ipc_body_name(env->body_case));
		return;
	}
	if (!check(&ck, env)) {
		if (ck.msg[0] == '\0') {
			log_warnx("registry_dispatch: %s is not a registry "
			    "request", ck.body);
			chan_reply_error(h->chan, env,
			    BERTH__ERROR_CODE__ERROR_UNSUPPORTED,
			    "berth-registry does not serve %s", ck.body);
			return;
		}
		log_warnx("registry_dispatch: refused: %s", ck.msg);
		chan_reply_error(h->chan, env,
		    BERTH__ERROR_CODE__ERROR_BAD_REQUEST, "%s", ck.msg);
		return;
	}
	if (env->body_case == BERTH__ENVELOPE__BODY_UNSUBSCRIBE) {
		events_unsubscribe(r, env);
		return;
	}
	batch_add(r, env);
}
