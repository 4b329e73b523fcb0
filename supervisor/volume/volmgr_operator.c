/*
 * volmgr_operator.c: the operator's volumes: register one that exists
 * with its mount options, context and secret references (asking the
 * controller to validate it when there is one), create one
 * on the plugin's controller then register it, delete one no alloc
 * claims. Each is one unit that goes through enum op_state. Must not:
 * touch a volume an alloc uses.
 */
#include <stdlib.h>

#include "volmgr_int.h"
#include "xalloc.h"

static void
put_volume(struct unit *u, const char *external_id, const struct kvs *ctx)
{
	Berth__Volume v = BERTH__VOLUME__INIT;
	Berth__VolumeCapability vc = BERTH__VOLUME_CAPABILITY__INIT, *vcs[1];
	Berth__KeyValue kv[CTX_MAX], *kvp[CTX_MAX];
	Berth__KeyValue sk[CTX_MAX], *skp[CTX_MAX];
	const struct volmgr_spec *s = &u->spec;

	v.namespace_ = (char *)s->ns;
	v.id = (char *)s->id;
	v.plugin_id = (char *)s->plugin;
	v.external_id = (char *)external_id;
	vc.access_mode = s->access;
	vc.attachment_mode = s->attachment;
	vcs[0] = &vc;
	v.n_capabilities = 1;
	v.capabilities = vcs;
	for (size_t i = 0; ctx != NULL && i < ctx->n; i++) {
		berth__key_value__init(&kv[i]);
		kv[i].key = ctx->key[i];
		kv[i].value = ctx->value[i];
		kvp[i] = &kv[i];
	}
	v.n_context = ctx != NULL ? ctx->n : 0;
	v.context = kvp;
	/* Kept for stage and publish, merged with each alloc's there. */
	v.fs_type = (char *)(s->fs_type != NULL ? s->fs_type : "");
	v.on_plugin_restart = (char *)(s->on_plugin_restart != NULL ?
	    s->on_plugin_restart : "");
	v.n_mount_flags = s->nflags;
	v.mount_flags = (char **)s->flags;
	/* The secrets' names only: their values are never stored. */
	for (size_t i = 0; i < s->nsecrets; i++) {
		berth__key_value__init(&sk[i]);
		sk[i].key = (char *)s->secrets[i].key;
		sk[i].value = (char *)s->secrets[i].value;
		skp[i] = &sk[i];
	}
	v.n_secrets = s->nsecrets;
	v.secrets = skp;
	volume_topologies(&v, s);
	v.capacity_bytes = u->capacity;	/* 0: the registry keeps its own */
	v.snapshot_id = (char *)(s->snapshot_id != NULL ? s->snapshot_id : "");
	u->st.op = OS_PUT;
	call_registry(u, regclient_put_volume(u->job->vm->d.registry, &v,
	    on_registry, reg_ticket(u)));
	volume_topologies_free(&v);
}

/* The spec's capability, as the one the request asks for. */
static void
spec_capability(const struct volmgr_spec *s, struct capbuf *cb,
    Csi__V1__VolumeCapability **caps)
{
	caps[0] = capability(cb, s->access, s->attachment, s->fs_type,
	    s->flags, s->nflags);
}

/* The spec's secret references, as secrets_load() takes them. */
static void
spec_secrets(const struct volmgr_spec *s, struct kvs *k)
{
	kvs_clear(k);
	for (size_t i = 0; i < s->nsecrets; i++)
		kvs_add(k, s->secrets[i].key, s->secrets[i].value);
}

/* ---- register ---- */

/* The operator's volume context, as the plugin gets it. */
static void
spec_context(const struct volmgr_spec *s, struct kvs *k)
{
	for (size_t i = 0; i < s->ncontext; i++)
		kvs_add(k, s->context[i].key, s->context[i].value);
}

static void
validate(struct unit *u)
{
	Csi__V1__ValidateVolumeCapabilitiesRequest req =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_REQUEST__INIT;
	const struct volmgr_spec *s = &u->spec;
	Csi__V1__VolumeCapability *caps[1];
	struct volmgr_plugin ctl;
	struct capbuf cb;

	struct kv_entry e[CTX_MAX], es[CTX_MAX];
	void *ptrs[CTX_MAX], *ps[CTX_MAX];
	struct kvs sec;

	spec_context(s, &u->created_ctx);
	if (spec_refused(u))
		return;
	/* Without a controller service, nothing to ask. */
	if (controller_sick(u, s->plugin))
		return;
	if (!controller_of(u->job->vm, s->plugin, &ctl)) {
		put_volume(u, s->external_id, &u->created_ctx);
		return;
	}
	spec_secrets(s, &u->srefs);
	if (!secrets_load(u, NULL, &u->srefs, "validate", &sec))
		return;
	spec_capability(s, &cb, caps);
	req.volume_id = (char *)s->external_id;
	req.n_volume_capabilities = 1;
	req.volume_capabilities = caps;
	req.n_volume_context = u->created_ctx.n;
	req.volume_context = kv_entries(&u->created_ctx,
	    &csi__v1__validate_volume_capabilities_request__volume_context_entry__descriptor,
	    e, ptrs);
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__validate_volume_capabilities_request__secrets_entry__descriptor,
	    es, ps);
	u->st.op = OS_VALIDATE;
	csi_send(u, ctl.conn, CSI_VALIDATE_VOLUME_CAPABILITIES, &req.base);
	secrets_wipe(&sec);
}

static void
validated(struct unit *u, const ProtobufCMessage *reply)
{
	Csi__V1__ValidateVolumeCapabilitiesRequest req =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_REQUEST__INIT;
	const struct volmgr_spec *s = &u->spec;
	Csi__V1__VolumeCapability *caps[1];
	struct capbuf cb;
	char why[512];

	spec_capability(s, &cb, caps);
	req.volume_id = (char *)s->external_id;
	req.n_volume_capabilities = 1;
	req.volume_capabilities = caps;
	if (csi_validation_check(&req, (const void *)reply, why,
	    sizeof(why)) == CSI_VALIDATION_MISMATCH) {
		unit_fail(u, VOLMGR_FAILED, "ValidateVolumeCapabilities: %s",
		    why);
		unit_end(u);
		return;
	}
	put_volume(u, s->external_id, &u->created_ctx);
}

void
register_step(struct unit *u, const struct vreply *r)
{
	switch (u->st.op) {
	case OS_START:
		validate(u);
		break;
	case OS_VALIDATE:
		validated(u, r->csi);
		break;
	default:
		if (u->st.op == OS_PUT)
			unit_event(u, "VolumeRegistered", u->spec.plugin,
			    "registered");
		unit_end(u);
		break;
	}
}

/* ---- create ---- */

static void
create(struct unit *u)
{
	Csi__V1__CreateVolumeRequest req = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__CapacityRange range = CSI__V1__CAPACITY_RANGE__INIT;
	const struct volmgr_spec *s = &u->spec;
	Csi__V1__VolumeCapability *caps[1];
	struct kv_entry e[CTX_MAX], es[CTX_MAX];
	void *ptrs[CTX_MAX], *ps[CTX_MAX];
	Csi__V1__VolumeContentSource src = CSI__V1__VOLUME_CONTENT_SOURCE__INIT;
	Csi__V1__VolumeContentSource__SnapshotSource snap =
	    CSI__V1__VOLUME_CONTENT_SOURCE__SNAPSHOT_SOURCE__INIT;
	struct kvs params = { 0 }, sec;
	struct volmgr_plugin ctl;
	struct capbuf cb;

	if (spec_refused(u) || controller_sick(u, s->plugin))
		return;
	if (!controller_of(u->job->vm, s->plugin, &ctl)) {
		unit_fail(u, VOLMGR_FAILED, "plugin %s has no healthy "
		    "controller instance", s->plugin);
		unit_end(u);
		return;
	}
	if (!ctl.fp->create_delete) {
		unit_fail(u, VOLMGR_FAILED, "plugin %s's controller does not "
		    "advertise CREATE_DELETE_VOLUME", s->plugin);
		unit_end(u);
		return;
	}
	if (s->snapshot_id != NULL && !ctl.fp->snapshots) {
		unit_fail(u, VOLMGR_FAILED, "plugin %s's controller does not "
		    "advertise CREATE_DELETE_SNAPSHOT: it cannot create a "
		    "volume from snapshot %s", s->plugin, s->snapshot_id);
		unit_end(u);
		return;
	}
	spec_secrets(s, &u->srefs);
	if (!secrets_load(u, NULL, &u->srefs, "create", &sec))
		return;
	spec_capability(s, &cb, caps);
	req.name = (char *)s->id;
	req.n_volume_capabilities = 1;
	req.volume_capabilities = caps;
	if (s->capacity_min > 0) {
		range.required_bytes = s->capacity_min;
		req.capacity_range = &range;
	}
	for (size_t i = 0; i < s->nparams; i++)
		kvs_add(&params, s->params[i].key, s->params[i].value);
	req.n_parameters = params.n;
	req.parameters = kv_entries(&params,
	    &csi__v1__create_volume_request__parameters_entry__descriptor, e,
	    ptrs);
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__create_volume_request__secrets_entry__descriptor, es,
	    ps);
	req.accessibility_requirements = csi_requirement(s);
	if (s->snapshot_id != NULL) {
		snap.snapshot_id = (char *)s->snapshot_id;
		src.type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT;
		src.snapshot = &snap;
		req.volume_content_source = &src;
	}
	u->st.op = OS_CREATE;
	csi_send(u, ctl.conn, CSI_CREATE_VOLUME, &req.base);
	csi_requirement_free(req.accessibility_requirements);
	kvs_clear(&params);
	secrets_wipe(&sec);
}

static void
created(struct unit *u, const ProtobufCMessage *reply)
{
	const Csi__V1__CreateVolumeResponse *r = (const void *)reply;

	if (r == NULL || r->volume == NULL || r->volume->volume_id == NULL ||
	    r->volume->volume_id[0] == '\0') {
		unit_fail(u, VOLMGR_FAILED, "CreateVolume: the plugin "
		    "answered no volume id");
		unit_end(u);
		return;
	}
	u->created_id = xstrdup(r->volume->volume_id);
	u->capacity = r->volume->capacity_bytes > 0 ?
	    r->volume->capacity_bytes : 0;
	for (size_t i = 0; i < r->volume->n_volume_context; i++)
		kvs_add(&u->created_ctx, r->volume->volume_context[i]->key,
		    r->volume->volume_context[i]->value);
	spec_take_accessible(&u->spec, r->volume->accessible_topology,
	    r->volume->n_accessible_topology);
	put_volume(u, u->created_id, &u->created_ctx);
}

void
create_step(struct unit *u, const struct vreply *r)
{
	switch (u->st.op) {
	case OS_START:
		create(u);
		break;
	case OS_CREATE:
		created(u, r->csi);
		break;
	default:
		if (u->st.op == OS_PUT)
			unit_event(u, "VolumeCreated", u->spec.plugin,
			    "created");
		unit_end(u);
		break;
	}
}

/* ---- delete ---- */

static void
forget_volume(struct unit *u)
{
	u->st.op = OS_FORGET;
	call_registry(u, regclient_delete_volume(u->job->vm->d.registry,
	    u->ns, u->vol, on_registry, reg_ticket(u)));
}

/* Refused while claimed; DeleteVolume when the controller can. */
static void
delete_volume(struct unit *u, const Berth__VolumeReply *vr)
{
	Csi__V1__DeleteVolumeRequest req = CSI__V1__DELETE_VOLUME_REQUEST__INIT;
	struct kv_entry es[CTX_MAX];
	void *ps[CTX_MAX];
	struct volmgr_plugin ctl;
	struct kvs sec;

	if (vr->volume == NULL) {
		unit_fail(u, VOLMGR_FAILED, "volume %s/%s: not registered",
		    u->ns, u->vol);
		unit_end(u);
		return;
	}
	if (vr->n_claims > 0) {
		unit_fail(u, VOLMGR_FAILED, "volume %s/%s is claimed by alloc "
		    "%s%s", u->ns, u->vol, vr->claims[0]->alloc,
		    vr->n_claims > 1 ? " and others" : "");
		unit_end(u);
		return;
	}
	if (controller_sick(u, vr->volume->plugin_id))
		return;
	if (!controller_of(u->job->vm, vr->volume->plugin_id, &ctl) ||
	    !ctl.fp->create_delete) {
		forget_volume(u);
		return;
	}
	kvs_clear(&u->srefs);
	for (size_t i = 0; i < vr->volume->n_secrets; i++)
		kvs_add(&u->srefs, vr->volume->secrets[i]->key,
		    vr->volume->secrets[i]->value);
	if (!secrets_load(u, NULL, &u->srefs, "delete", &sec))
		return;
	req.volume_id = vr->volume->external_id != NULL &&
	    vr->volume->external_id[0] != '\0' ? vr->volume->external_id :
	    vr->volume->id;
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__delete_volume_request__secrets_entry__descriptor, es,
	    ps);
	u->st.op = OS_DELETE;
	csi_send(u, ctl.conn, CSI_DELETE_VOLUME, &req.base);
	secrets_wipe(&sec);
}

void
delete_step(struct unit *u, const struct vreply *r)
{
	switch (u->st.op) {
	case OS_START:
		u->st.op = OS_GET;
		call_registry(u, regclient_get_volume(u->job->vm->d.registry,
		    u->ns, u->vol, on_registry, reg_ticket(u)));
		break;
	case OS_GET:
		delete_volume(u, r->reg->volume_reply);
		break;
	case OS_DELETE:
		forget_volume(u);
		break;
	default:
		if (u->st.op == OS_FORGET)
			unit_event(u, "VolumeDeleted", NULL, "deleted");
		unit_end(u);
		break;
	}
}

/* ---- the operator's spec, copied: the caller's need not outlive it ---- */

static char **
strv_copy(char *const *v, size_t n)
{
	char **c = xcalloc(n + 1, sizeof(*c));

	for (size_t i = 0; i < n; i++)
		c[i] = xstrdup(v[i]);
	return c;
}

static struct volmgr_param *
params_copy(const struct volmgr_param *p, size_t n)
{
	struct volmgr_param *c = xcalloc(n + 1, sizeof(*c));

	for (size_t i = 0; i < n; i++) {
		c[i].key = xstrdup(p[i].key);
		c[i].value = xstrdup(p[i].value);
	}
	return c;
}

static char *
dup_or_empty(const char *s)
{
	return xstrdup(s != NULL ? s : "");
}

void
spec_copy(struct volmgr_spec *d, const struct volmgr_spec *s)
{
	*d = *s;
	d->ns = dup_or_empty(s->ns);
	d->id = dup_or_empty(s->id);
	d->plugin = dup_or_empty(s->plugin);
	d->external_id = dup_or_empty(s->external_id);
	d->fs_type = s->fs_type != NULL ? xstrdup(s->fs_type) : NULL;
	d->snapshot_id = s->snapshot_id != NULL ? xstrdup(s->snapshot_id) :
	    NULL;
	d->on_plugin_restart = s->on_plugin_restart != NULL ?
	    xstrdup(s->on_plugin_restart) : NULL;
	d->flags = strv_copy(s->flags, s->nflags);
	d->params = params_copy(s->params, s->nparams);
	d->context = params_copy(s->context, s->ncontext);
	d->secrets = params_copy(s->secrets, s->nsecrets);
	spec_topology_copy(d, s);
}

void
spec_free(struct volmgr_spec *s)
{
	if (s->ns == NULL)
		return;
	free((char *)s->ns);
	free((char *)s->id);
	free((char *)s->plugin);
	free((char *)s->external_id);
	free((char *)s->fs_type);
	free((char *)s->snapshot_id);
	free((char *)s->on_plugin_restart);
	for (size_t i = 0; i < s->nflags; i++)
		free(s->flags[i]);
	for (size_t i = 0; i < s->nparams; i++) {
		free((char *)s->params[i].key);
		free((char *)s->params[i].value);
	}
	for (size_t i = 0; i < s->ncontext; i++) {
		free((char *)s->context[i].key);
		free((char *)s->context[i].value);
	}
	free((char **)s->flags);
	free((struct volmgr_param *)s->params);
	for (size_t i = 0; i < s->nsecrets; i++) {
		free((char *)s->secrets[i].key);
		free((char *)s->secrets[i].value);
	}
	free((struct volmgr_param *)s->context);
	free((struct volmgr_param *)s->secrets);
	spec_topology_free(s);
}
