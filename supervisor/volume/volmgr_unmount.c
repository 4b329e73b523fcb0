/*
 * volmgr_unmount.c: taking one volume of an alloc back, and unbinding it
 * from a task. The unmount unit goes through enum unmount_state, the
 * mount's steps backwards: unpublish (always), unstage when the last
 * user of the staging path goes, controller unpublish when the last user
 * of the volume on this node goes, release the claim when the alloc's
 * last use of the volume goes, forget the record. NOT_FOUND from the
 * registry or the plugin is what is gone already: not a failure here.
 * Must not: stop at a step that finds nothing to do.
 */
#include "layout.h"
#include "volmgr_int.h"
#include "xalloc.h"

static void
get_volume(struct unit *u)
{
	struct vpub *p = u->pub;

	u->st.unmount = US_GET;
	call_registry(u, regclient_get_volume(u->job->vm->d.registry, p->ns,
	    p->vol, on_registry, reg_ticket(u)));
}

/* Always: a crash may have come between the plugin's publish and our
 * record of it; unpublish is idempotent. */
static void
unpublish(struct unit *u)
{
	Csi__V1__NodeUnpublishVolumeRequest req =
	    CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;
	struct volmgr_plugin node;
	char path[BERTH_PATH_BUF];

	if (!node_or_end(u, &node))
		return;
	csi_path(u, false, path, sizeof(path));
	req.volume_id = u->pub->external_id;
	req.target_path = path;
	u->st.unmount = US_UNPUBLISH;
	csi_send(u, node.conn, CSI_NODE_UNPUBLISH_VOLUME, &req.base);
}

/* reg: GetVolume's reply, NULL when the volume is gone. */
static void
got_volume(struct unit *u, const Berth__Envelope *reg)
{
	struct vpub *p = u->pub;
	struct volmgr_plugin node;

	if (p->external_id == NULL) {
		if (reg != NULL && reg->volume_reply->volume != NULL)
			take_volume(p, reg->volume_reply->volume);
		else
			p->external_id = xstrdup(p->vol);
	}
	if (!node_or_end(u, &node))
		return;
	mount_type(u, &node);
	unpublish(u);
}

/* Known from records only: the provider's id is needed first. */
static void
start(struct unit *u)
{
	if (u->pub->external_id == NULL)
		get_volume(u);
	else
		got_volume(u, NULL);
}

static void
release(struct unit *u)
{
	struct vpub *p = u->pub;

	/* The alloc's other uses of the volume keep its claim. */
	if (volume_shared(u->job->vm, p, true)) {
		u->st.unmount = US_FORGET;
		forget_record(u);
		return;
	}
	u->st.unmount = US_RELEASE;
	call_registry(u, regclient_release(u->job->vm->d.registry, p->ns,
	    p->vol, p->alloc, on_registry, reg_ticket(u)));
}

static void
controller_unpublish(struct unit *u)
{
	Csi__V1__ControllerUnpublishVolumeRequest req =
	    CSI__V1__CONTROLLER_UNPUBLISH_VOLUME_REQUEST__INIT;
	struct volmgr_plugin node, ctl;
	struct vpub *p = u->pub;
	struct kv_entry es[CTX_MAX];
	void *ps[CTX_MAX];
	struct kvs sec;
	bool have_ctl;

	p->staged = false;
	have_ctl = controller_of(u->job->vm, p->plugin, &ctl);
	if (!node_or_end(u, &node) || controller_sick(u, p->plugin))
		return;
	if (!have_ctl || !ctl.fp->publish_unpublish ||
	    volume_shared(u->job->vm, p, false)) {
		release(u);
		return;
	}
	if (!secrets_load(u, NULL, &p->srefs, "controller_unpublish", &sec))
		return;
	req.volume_id = p->external_id;
	req.node_id = (char *)node.fp->node_id;
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__controller_unpublish_volume_request__secrets_entry__descriptor,
	    es, ps);
	u->st.unmount = US_CUNPUBLISH;
	csi_send(u, ctl.conn, CSI_CONTROLLER_UNPUBLISH_VOLUME, &req.base);
	secrets_wipe(&sec);
}

/* The last user of the staging path unstages it. */
static void
unstage(struct unit *u)
{
	Csi__V1__NodeUnstageVolumeRequest req =
	    CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;
	struct volmgr_plugin node;
	struct vpub *p = u->pub;
	char path[BERTH_PATH_BUF];

	p->published = false;
	if (!node_or_end(u, &node))
		return;
	if (!node.fp->stage_unstage || stage_shared(u->job->vm, p)) {
		controller_unpublish(u);
		return;
	}
	csi_path(u, true, path, sizeof(path));
	req.volume_id = p->external_id;
	req.staging_target_path = path;
	u->st.unmount = US_UNSTAGE;
	csi_send(u, node.conn, CSI_NODE_UNSTAGE_VOLUME, &req.base);
}

static void
forgotten(struct unit *u)
{
	struct vpub *p = u->pub;

	log_info("volmgr: alloc %s: volume %s/%s taken back", p->alloc,
	    p->ns, p->vol);
	pub_free(u->job->vm, p);
	u->pub = NULL;
	unit_end(u);
}

/* r: the reply to the call the unit waited on; NULL to start. */
void
unmount_step(struct unit *u, const struct vreply *r)
{
	switch (u->st.unmount) {
	case US_START:
		start(u);
		break;
	case US_GET:
		got_volume(u, r->reg);
		break;
	case US_UNPUBLISH:
		unit_event(u, "VolumeUnpublished", u->pub->plugin,
		    "unpublished");
		unstage(u);
		break;
	case US_UNSTAGE:
		unit_event(u, "VolumeUnstaged", u->pub->plugin, "unstaged");
		controller_unpublish(u);
		break;
	case US_CUNPUBLISH:
		release(u);
		break;
	case US_RELEASE:
		u->st.unmount = US_FORGET;
		forget_record(u);
		break;
	case US_FORGET:
		forgotten(u);
		break;
	}
}

/* ---- unbinds ---- */

void
unbind_step(struct unit *u, const struct vreply *r)
{
	(void)r;
	if (u->st.bind == BS_SENT) {
		unit_end(u);
		return;
	}
	u->st.bind = BS_SENT;
	call_mounter(u, priv_unbind_volume(u->job->vm->d.mounter,
	    u->job->alloc, u->task, u->dest, on_mounter, mounter_ticket(u)));
}
