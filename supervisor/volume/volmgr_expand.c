/*
 * volmgr_expand.c: the operator's expansion of a volume, one unit
 * (U_EXPAND) through enum op_state: the volume from the registry;
 * ControllerExpandVolume when the plugin's controller advertises
 * EXPAND_VOLUME; then NodeExpandVolume on each path where the volume is
 * published on this node (with its staging path when the node stages),
 * when the controller's reply asks for it, or, with no controller
 * expansion, when the node service advertises EXPAND_VOLUME; last, the
 * new capacity kept with the volume in the registry, and an event.
 *
 * A plugin that expands only OFFLINE (PluginCapability.VolumeExpansion)
 * is refused while the volume is claimed, with the reason, before any
 * call. The calls get the secret the volume names for "expand". Units on
 * one volume never overlap, so no mount or unmount of it runs meanwhile.
 * Must not: shrink, mount, or touch a volume that no alloc of this node
 * publishes other than through its controller.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "volmgr_int.h"
#include "xalloc.h"

#define ONLINE CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__ONLINE
#define OFFLINE CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__OFFLINE

static void
range_of(const struct unit *u, Csi__V1__CapacityRange *range)
{
	csi__v1__capacity_range__init(range);
	range->required_bytes = u->spec.capacity_min;
	range->limit_bytes = u->spec.capacity_max;
}

/* The k-th pub of the unit's volume published here, or NULL. */
static struct vpub *
nth_published(struct volmgr *vm, const struct unit *u, size_t k)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (p->published && strcmp(p->ns, u->ns) == 0 &&
		    strcmp(p->vol, u->vol) == 0 && k-- == 0)
			return p;
	return NULL;
}

static void
reread(struct unit *u)
{
	u->st.op = OS_REREAD;
	call_registry(u, regclient_get_volume(u->job->vm->d.registry, u->ns,
	    u->vol, on_registry, reg_ticket(u)));
}

/* Kept with the volume: the capacity the plugin said, else the one
 * asked, which the plugin took without a word. */
static void
put_capacity(struct unit *u, const Berth__VolumeReply *vr)
{
	Berth__Volume v;

	if (vr->volume == NULL) {
		unit_fail(u, VOLMGR_FAILED, "volume %s/%s: not registered "
		    "any more", u->ns, u->vol);
		unit_end(u);
		return;
	}
	v = *vr->volume;
	v.capacity_bytes = u->capacity > 0 ? u->capacity :
	    u->spec.capacity_min;
	u->capacity = v.capacity_bytes;
	u->st.op = OS_PUT;
	call_registry(u, regclient_put_volume(u->job->vm->d.registry, &v,
	    on_registry, reg_ticket(u)));
}

/* NodeExpandVolume on the next published path, or the registry. */
static void
node_next(struct unit *u)
{
	Csi__V1__NodeExpandVolumeRequest req =
	    CSI__V1__NODE_EXPAND_VOLUME_REQUEST__INIT;
	struct volmgr *vm = u->job->vm;
	Csi__V1__CapacityRange range;
	struct volmgr_plugin node;
	Berth__AttachmentMode att;
	Berth__AccessMode acc;
	char target[4096], staging[4096];
	struct kv_entry es[CTX_MAX];
	void *ps[CTX_MAX];
	struct capbuf cb;
	struct vpub *p;
	struct kvs sec;
	bool ro;

	if (!u->expand_node || (p = nth_published(vm, u,
	    u->expand_next++)) == NULL) {
		reread(u);
		return;
	}
	if (!node_of(vm, p->plugin, &node)) {
		unit_fail(u, VOLMGR_RETRY, "plugin %s: no healthy node "
		    "instance for NodeExpandVolume (alloc %s); ask again",
		    p->plugin, p->alloc);
		unit_end(u);
		return;
	}
	pub_mount_type(vm, p, &node);
	pub_csi_path(vm, p, false, target, sizeof(target));
	pub_csi_path(vm, p, true, staging, sizeof(staging));
	if (!secrets_load(u, NULL, &u->srefs, "expand", &sec))
		return;
	if (!usage_parse(p->usage, &ro, &att, &acc)) {
		att = p->attachment;
		acc = p->access;
	}
	range_of(u, &range);
	req.volume_id = u->created_id;
	req.volume_path = target;
	req.capacity_range = &range;
	if (node.fp->stage_unstage && p->staged)
		req.staging_target_path = staging;
	req.volume_capability = capability(&cb, acc, att, p->fs_type,
	    p->flags, p->nflags);
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__node_expand_volume_request__secrets_entry__descriptor,
	    es, ps);
	u->st.op = OS_NEXPAND;
	csi_send(u, node.conn, CSI_NODE_EXPAND_VOLUME, &req.base);
	secrets_wipe(&sec);
}

static void
node_expanded(struct unit *u, const ProtobufCMessage *reply)
{
	const Csi__V1__NodeExpandVolumeResponse *r = (const void *)reply;

	/* Optional: the controller's word, when there was one, stands. */
	if (!u->expand_ctl && r != NULL && r->capacity_bytes >
	    u->capacity)
		u->capacity = r->capacity_bytes;
	node_next(u);
}

static void
controller_expand(struct unit *u, const Berth__Volume *v,
    const struct volmgr_plugin *ctl)
{
	Csi__V1__ControllerExpandVolumeRequest req =
	    CSI__V1__CONTROLLER_EXPAND_VOLUME_REQUEST__INIT;
	Csi__V1__CapacityRange range;
	struct kv_entry es[CTX_MAX];
	void *ps[CTX_MAX];
	struct capbuf cb;
	struct kvs sec;

	if (!secrets_load(u, NULL, &u->srefs, "expand", &sec))
		return;
	range_of(u, &range);
	req.volume_id = u->created_id;
	req.capacity_range = &range;
	if (v->n_capabilities > 0)
		req.volume_capability = capability(&cb,
		    v->capabilities[0]->access_mode,
		    v->capabilities[0]->attachment_mode, v->fs_type,
		    v->mount_flags, v->n_mount_flags);
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__controller_expand_volume_request__secrets_entry__descriptor,
	    es, ps);
	u->st.op = OS_CEXPAND;
	csi_send(u, ctl->conn, CSI_CONTROLLER_EXPAND_VOLUME, &req.base);
	secrets_wipe(&sec);
}

static void
controller_expanded(struct unit *u, const ProtobufCMessage *reply)
{
	const Csi__V1__ControllerExpandVolumeResponse *r = (const void *)reply;
	const struct volmgr_spec *s = &u->spec;

	if (r == NULL || r->capacity_bytes < s->capacity_min ||
	    (s->capacity_max > 0 && r->capacity_bytes > s->capacity_max)) {
		unit_fail(u, VOLMGR_FAILED, "ControllerExpandVolume: the "
		    "plugin answered %" PRId64 " bytes, outside the range "
		    "asked", r != NULL ? r->capacity_bytes : 0);
		unit_end(u);
		return;
	}
	u->capacity = r->capacity_bytes;
	u->expand_node = r->node_expansion_required;
	node_next(u);
}

/* Is the volume published here, at any path? */
static bool
published_here(struct volmgr *vm, const struct unit *u)
{
	return nth_published(vm, u, 0) != NULL;
}

/* The refusals that come before any call; false when one ended u. */
static bool
expansion_allowed(struct unit *u, const Berth__VolumeReply *vr,
    const struct volmgr_plugin *ctl, bool ctl_expand, bool node_expand)
{
	const char *plugin = vr->volume->plugin_id;
	int mode = ctl->fp != NULL ? ctl->fp->expansion : 0;

	if (!ctl_expand && ctl->fp == NULL) {
		unit_fail(u, VOLMGR_RETRY, "plugin %s: no healthy controller "
		    "or node instance to ask", plugin);
		unit_end(u);
		return false;
	}
	if (!ctl_expand && !node_expand) {
		unit_fail(u, VOLMGR_FAILED, "plugin %s advertises "
		    "EXPAND_VOLUME on neither its controller nor its node "
		    "service: the volume cannot be expanded", plugin);
		unit_end(u);
		return false;
	}
	if (mode == OFFLINE && vr->n_claims > 0) {
		unit_fail(u, VOLMGR_FAILED, "volume %s/%s is claimed by alloc "
		    "%s%s, and plugin %s expands volumes only offline "
		    "(VolumeExpansion OFFLINE): stop the allocations that use "
		    "it, then expand", u->ns, u->vol, vr->claims[0]->alloc,
		    vr->n_claims > 1 ? " and others" : "", plugin);
		unit_end(u);
		return false;
	}
	if (!ctl_expand && !published_here(u->job->vm, u)) {
		unit_fail(u, VOLMGR_FAILED, "plugin %s expands volumes on the "
		    "node only (no controller EXPAND_VOLUME), and volume "
		    "%s/%s is published on no path of this node", plugin,
		    u->ns, u->vol);
		unit_end(u);
		return false;
	}
	return true;
}

static void
got_volume(struct unit *u, const Berth__VolumeReply *vr)
{
	struct volmgr *vm = u->job->vm;
	struct volmgr_plugin ctl = { 0 }, node = { 0 };
	bool ctl_expand, node_expand, has_ctl, has_node;
	const Berth__Volume *v = vr->volume;
	struct vpub *p;

	if (v == NULL) {
		unit_fail(u, VOLMGR_FAILED, "volume %s/%s: not registered",
		    u->ns, u->vol);
		unit_end(u);
		return;
	}
	if (controller_sick(u, v->plugin_id))
		return;
	has_ctl = controller_of(vm, v->plugin_id, &ctl);
	has_node = node_of(vm, v->plugin_id, &node);
	ctl_expand = has_ctl && ctl.fp->expand;
	node_expand = has_node && node.fp->expand;
	/* The plugin's VolumeExpansion, from whichever instance there is. */
	if (!has_ctl)
		ctl.fp = has_node ? node.fp : NULL;
	if (!expansion_allowed(u, vr, &ctl, ctl_expand, node_expand))
		return;
	u->created_id = xstrdup(v->external_id != NULL &&
	    v->external_id[0] != '\0' ? v->external_id : v->id);
	snprintf(u->expand_plugin, sizeof(u->expand_plugin), "%s",
	    v->plugin_id);
	kvs_clear(&u->srefs);
	for (size_t i = 0; i < v->n_secrets; i++)
		kvs_add(&u->srefs, v->secrets[i]->key, v->secrets[i]->value);
	/* The pubs' mount options, for the node's volume_capability. */
	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (strcmp(p->ns, u->ns) == 0 && strcmp(p->vol, u->vol) == 0)
			take_volume(p, v);
	u->expand_ctl = ctl_expand;
	if (ctl_expand) {
		controller_expand(u, v, &ctl);
		return;
	}
	u->expand_node = true;
	node_next(u);
}

void
expand_step(struct unit *u, const struct vreply *r)
{
	char done[96];
	size_t n;

	switch (u->st.op) {
	case OS_START:
		u->st.op = OS_GET;
		call_registry(u, regclient_get_volume(u->job->vm->d.registry,
		    u->ns, u->vol, on_registry, reg_ticket(u)));
		break;
	case OS_GET:
		got_volume(u, r->reg->volume_reply);
		break;
	case OS_CEXPAND:
		controller_expanded(u, r->csi);
		break;
	case OS_NEXPAND:
		node_expanded(u, r->csi);
		break;
	case OS_REREAD:
		put_capacity(u, r->reg->volume_reply);
		break;
	default:
		if (u->st.op == OS_PUT) {
			snprintf(done, sizeof(done), "expanded to %" PRId64
			    " bytes", u->capacity);
			unit_event(u, "VolumeExpanded", u->expand_plugin, done);
			/* expand_next went one past the last path. */
			n = u->expand_next > 0 ? u->expand_next - 1 : 0;
			log_info("volmgr: volume %s/%s %s (by %sthe node at "
			    "%zu path%s)", u->ns, u->vol, done, u->expand_ctl ?
			    "the controller, and " : "", n, n == 1 ? "" : "s");
		}
		unit_end(u);
		break;
	}
}

void
volmgr_expand(struct volmgr *vm, const char *ns, const char *id,
    int64_t min_bytes, int64_t max_bytes, volmgr_cb cb, void *arg)
{
	struct volmgr_spec s = { .ns = ns, .id = id, .capacity_min =
	    min_bytes, .capacity_max = max_bytes };

	/* The paths to expand at are the records': wait for them. */
	if (!vm->ready) {
		cb(VOLMGR_RETRY, "the volume manager is still reading its "
		    "mount records; ask again", arg);
		return;
	}
	operator_job(vm, U_EXPAND, &s, ns, id, cb, arg);
}
