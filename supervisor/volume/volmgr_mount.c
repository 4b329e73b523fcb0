/*
 * volmgr_mount.c: mounting one volume of an alloc, and binding it into
 * a task. The mount unit goes through enum mount_state in the order
 * volmgr.h gives; each function below sends one call and sets the state
 * it then waits in, or skips to the next when there is nothing to ask.
 * mount_step() hands the reply of the call the unit waited on to the
 * function that reads it. Must not: take anything back (a failed job is
 * undone by an unmount job, volmgr_unmount.c).
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "layout.h"
#include "volmgr_int.h"

static void prepare_stage(struct unit *u, const ProtobufCMessage *reply);
static void prepare_publish(struct unit *u);

static void
get_volume(struct unit *u)
{
	u->st.mount = MS_GET;
	call_registry(u, regclient_get_volume(u->job->vm->d.registry, u->ns,
	    u->vol, on_registry, reg_ticket(u)));
}

/* The alloc's pub for this request: found (a retry) or made. */
static struct vpub *
request_pub(struct unit *u, const Berth__Volume *v)
{
	struct volmgr *vm = u->job->vm;
	const struct alloc_volume *r = u->req;
	struct vpub *p;
	char usage[160];

	pub_usage(usage, sizeof(usage), r);
	if ((p = pub_find(vm, u->job->alloc, u->ns, u->vol, usage)) == NULL) {
		p = pub_new(vm, u->job->alloc, u->ns, u->vol, r->name,
		    v->plugin_id, usage);
		pub_join_stage(vm, p);
	}
	p->req = r;
	p->going = p->going && u->job->recovery;	/* set up anew */
	p->doc = u->job->doc;
	p->alloc_group = u->job->group;
	p->access = r->access_mode;
	p->attachment = r->attachment_mode;
	p->read_only = r->read_only;
	p->group = r->mount_group != 0 ? r->mount_group : u->job->group;
	return p;
}

/* GetVolume answered: then the record, before anything is touched. */
static void
got_volume(struct unit *u, const Berth__VolumeReply *vr)
{
	struct volmgr_plugin node;

	if (vr->volume == NULL) {
		unit_fail(u, VOLMGR_FAILED, "volume %s/%s: not registered",
		    u->ns, u->vol);
		unit_end(u);
		return;
	}
	if (u->pub == NULL && !admit_mount(u, vr->volume))
		return;
	if (u->pub == NULL)
		u->pub = request_pub(u, vr->volume);
	take_volume(u->pub, vr->volume);
	if (!node_or_end(u, &node))
		return;
	mount_type(u, &node);
	u->st.mount = MS_RECORD;
	put_record(u);
}

/* The registry enforces the access mode. */
static void
claim(struct unit *u)
{
	Berth__Claim c = BERTH__CLAIM__INIT;
	struct vpub *p = u->pub;

	c.namespace_ = p->ns;
	c.volume = p->vol;
	c.alloc = p->alloc;
	c.mode = p->read_only ? BERTH__CLAIM_MODE__CLAIM_MODE_READ :
	    BERTH__CLAIM_MODE__CLAIM_MODE_WRITE;
	c.access_mode = p->access;
	c.attachment_mode = p->attachment;
	u->st.mount = MS_CLAIM;
	call_registry(u, regclient_claim(u->job->vm->d.registry, &c,
	    on_registry, reg_ticket(u)));
}

/* ControllerPublishVolume, when the controller advertises it. */
static void
controller_publish(struct unit *u)
{
	Csi__V1__ControllerPublishVolumeRequest req =
	    CSI__V1__CONTROLLER_PUBLISH_VOLUME_REQUEST__INIT;
	struct volmgr_plugin node, ctl;
	struct vpub *p = u->pub;
	struct kv_entry e[CTX_MAX], es[CTX_MAX];
	void *ptrs[CTX_MAX], *ps[CTX_MAX];
	struct kvs sec;
	struct capbuf cb;

	if (!node_or_end(u, &node) || controller_sick(u, p->plugin))
		return;
	if (!controller_of(u->job->vm, p->plugin, &ctl) ||
	    !ctl.fp->publish_unpublish) {
		prepare_stage(u, NULL);
		return;
	}
	if (!secrets_load(u, NULL, &p->srefs, "controller_publish", &sec))
		return;
	req.volume_id = p->external_id;
	req.node_id = (char *)node.fp->node_id;
	req.volume_capability = pub_capability(&cb, p);
	req.readonly = p->read_only;
	req.n_volume_context = p->vctx.n;
	req.volume_context = kv_entries(&p->vctx,
	    &csi__v1__controller_publish_volume_request__volume_context_entry__descriptor,
	    e, ptrs);
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__controller_publish_volume_request__secrets_entry__descriptor,
	    es, ps);
	u->st.mount = MS_CPUBLISH;
	csi_send(u, ctl.conn, CSI_CONTROLLER_PUBLISH_VOLUME, &req.base);
	secrets_wipe(&sec);
}

static void
prepare_volume(struct unit *u, bool staging)
{
	struct priv_volume v = staging ? priv_staging_of(u->pub) :
	    priv_volume_of(u->pub);
	struct volmgr_plugin node;

	if (!node_or_end(u, &node))
		return;
	v.plugin_alloc = node.alloc;	/* its user gets the directory */
	u->st.mount = staging ? MS_PREP_STAGE : MS_PREP_PUBLISH;
	call_mounter(u, priv_prepare_volume(u->job->vm->d.mounter, staging ?
	    BERTH__VOLUME_DIR__VOLUME_DIR_STAGING :
	    BERTH__VOLUME_DIR__VOLUME_DIR_PUBLISH, &v, on_volume_prepared,
	    mounter_ticket(u)));
}

/*
 * A plugin that takes no mount group keeps the volume's ownership its
 * own: said here, before the stage (and in the stage's or publish's
 * event), since the task may then not be able to write: the mounter
 * makes only a read-write volume's root usable by the group, at bind.
 */
static void
owner_note(struct vpub *p, const struct volmgr_plugin *node)
{
	char grp[32] = "";

	p->foreign_owner = p->attachment !=
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE &&
	    !node->fp->mount_group;
	if (!p->foreign_owner)
		return;
	if (p->group != 0)
		snprintf(grp, sizeof(grp), " (group %u)", (unsigned)p->group);
	log_warnx("volmgr: alloc %s: volume %s/%s: plugin %s does not take a "
	    "mount group (VOLUME_MOUNT_GROUP): the volume's ownership is the "
	    "plugin's, and the task%s may not be able to write", p->alloc,
	    p->ns, p->vol, p->plugin, grp);
}

/* The stage's or publish's event: done, and whose the ownership is. */
static void
owner_event(struct unit *u, const char *type, const char *done)
{
	char text[200];

	snprintf(text, sizeof(text), "%s%s", done, u->pub->foreign_owner ?
	    "; its ownership is the plugin's (no VOLUME_MOUNT_GROUP): the "
	    "task may not be able to write" : "");
	unit_event(u, type, u->pub->plugin, text);
}

/* reply: ControllerPublishVolume's, whose publish_context goes on to
 * stage and publish; NULL when there was none. */
static void
prepare_stage(struct unit *u, const ProtobufCMessage *reply)
{
	const Csi__V1__ControllerPublishVolumeResponse *r = (const void *)reply;
	struct volmgr_plugin node;
	struct vpub *p = u->pub;

	if (r != NULL) {
		kvs_clear(&p->pctx);
		for (size_t i = 0; i < r->n_publish_context; i++)
			kvs_add(&p->pctx, r->publish_context[i]->key,
			    r->publish_context[i]->value);
	}
	if (!node_or_end(u, &node))
		return;
	owner_note(p, &node);
	if (!node.fp->stage_unstage) {
		prepare_publish(u);
		return;
	}
	/* Staged for another alloc or usage: CSI allows one stage. */
	if (stage_shared(u->job->vm, p)) {
		log_info("volmgr: alloc %s: volume %s/%s already staged for "
		    "another use; kept", p->alloc, p->ns, p->vol);
		p->staged = true;
		prepare_publish(u);
		return;
	}
	prepare_volume(u, true);
}

/* A stage's or publish's secrets: the one the alloc's request names,
 * else the volume's reference for the call. */
static bool
pub_secrets(struct unit *u, const char *call, struct kvs *sec)
{
	const struct alloc_volume *r = u->pub->req;
	const char *name = NULL;

	if (r != NULL)
		name = strcmp(call, "stage") == 0 ? r->stage_secret :
		    r->publish_secret;
	return secrets_load(u, name, &u->pub->srefs, call, sec);
}

/* mounted: the staging path is a mount point already. */
static void
stage(struct unit *u, bool mounted)
{
	Csi__V1__NodeStageVolumeRequest req =
	    CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
	struct vpub *p = u->pub;
	struct volmgr_plugin node;
	struct kv_entry e1[CTX_MAX], e2[CTX_MAX], es[CTX_MAX];
	void *p1[CTX_MAX], *p2[CTX_MAX], *ps[CTX_MAX];
	char path[BERTH_PATH_BUF];
	struct kvs sec;
	struct capbuf cb;

	/* Staged before (by another alloc, or before a restart): never a
	 * second stage. */
	if (mounted) {
		log_info("volmgr: alloc %s: volume %s/%s already staged "
		    "(%s); kept", p->alloc, p->ns, p->vol, p->usage);
		p->staged = true;
		prepare_publish(u);
		return;
	}
	if (!node_or_end(u, &node))
		return;
	if (!pub_secrets(u, "stage", &sec))
		return;
	csi_path(u, true, path, sizeof(path));
	req.volume_id = p->external_id;
	req.staging_target_path = path;
	req.volume_capability = pub_capability(&cb, p);
	pub_mount_group(&cb, p, &node);
	req.n_publish_context = p->pctx.n;
	req.publish_context = kv_entries(&p->pctx,
	    &csi__v1__node_stage_volume_request__publish_context_entry__descriptor,
	    e1, p1);
	req.n_volume_context = p->vctx.n;
	req.volume_context = kv_entries(&p->vctx,
	    &csi__v1__node_stage_volume_request__volume_context_entry__descriptor,
	    e2, p2);
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__node_stage_volume_request__secrets_entry__descriptor,
	    es, ps);
	u->st.mount = MS_STAGE;
	csi_send(u, node.conn, CSI_NODE_STAGE_VOLUME, &req.base);
	secrets_wipe(&sec);
}

static void
staged(struct unit *u)
{
	struct vpub *p = u->pub;

	log_info("volmgr: alloc %s: volume %s/%s staged (%s)", p->alloc,
	    p->ns, p->vol, p->usage);
	p->staged = true;
	u->st.mount = MS_STAGED;
	put_record(u);
}

static void
prepare_publish(struct unit *u)
{
	prepare_volume(u, false);
}

static void
published(struct unit *u)
{
	struct vpub *p = u->pub;

	p->published = true;
	u->st.mount = MS_PUBLISHED;
	put_record(u);
}

/* mounted: the target is a mount point already. */
static void
publish(struct unit *u, bool mounted)
{
	Csi__V1__NodePublishVolumeRequest req =
	    CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;
	struct vpub *p = u->pub;
	struct volmgr_plugin node;
	struct kv_entry e1[CTX_MAX], e2[CTX_MAX], es[CTX_MAX];
	void *p1[CTX_MAX], *p2[CTX_MAX], *ps[CTX_MAX];
	char stage[BERTH_PATH_BUF], target[BERTH_PATH_BUF];
	struct kvs sec;
	struct capbuf cb;

	if (mounted) {
		log_info("volmgr: alloc %s: volume %s/%s already "
		    "published; kept", p->alloc, p->ns, p->vol);
		published(u);
		return;
	}
	if (!node_or_end(u, &node))
		return;
	if (!pub_secrets(u, "publish", &sec))
		return;
	if (node.fp->stage_unstage)
		csi_path(u, true, stage, sizeof(stage));
	csi_path(u, false, target, sizeof(target));
	req.volume_id = p->external_id;
	req.staging_target_path = node.fp->stage_unstage ? stage : "";
	req.target_path = target;
	req.volume_capability = pub_capability(&cb, p);
	pub_mount_group(&cb, p, &node);
	req.readonly = p->read_only;
	req.n_publish_context = p->pctx.n;
	req.publish_context = kv_entries(&p->pctx,
	    &csi__v1__node_publish_volume_request__publish_context_entry__descriptor,
	    e1, p1);
	req.n_volume_context = p->vctx.n;
	req.volume_context = kv_entries(&p->vctx,
	    &csi__v1__node_publish_volume_request__volume_context_entry__descriptor,
	    e2, p2);
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__node_publish_volume_request__secrets_entry__descriptor,
	    es, ps);
	u->st.mount = MS_PUBLISH;
	csi_send(u, node.conn, CSI_NODE_PUBLISH_VOLUME, &req.base);
	secrets_wipe(&sec);
}

/* r: the reply to the call the unit waited on; NULL to start. */
void
mount_step(struct unit *u, const struct vreply *r)
{
	struct vpub *p = u->pub;

	switch (u->st.mount) {
	case MS_START:
		get_volume(u);
		break;
	case MS_GET:
		got_volume(u, r->reg->volume_reply);
		break;
	case MS_RECORD:
		claim(u);
		break;
	case MS_CLAIM:
		controller_publish(u);
		break;
	case MS_CPUBLISH:
		prepare_stage(u, r->csi);
		break;
	case MS_PREP_STAGE:
		stage(u, r->mounted);
		break;
	case MS_STAGE:
		owner_event(u, "VolumeStaged", "staged");
		staged(u);
		break;
	case MS_STAGED:
		prepare_publish(u);
		break;
	case MS_PREP_PUBLISH:
		publish(u, r->mounted);
		break;
	case MS_PUBLISH:
		log_info("volmgr: alloc %s: volume %s/%s published", p->alloc,
		    p->ns, p->vol);
		owner_event(u, "VolumePublished", "published");
		published(u);
		break;
	case MS_PUBLISHED:
		unit_end(u);
		break;
	}
}

/* ---- binds ---- */

void
bind_step(struct unit *u, const struct vreply *r)
{
	struct priv_volume v;

	(void)r;
	if (u->st.bind == BS_SENT) {
		unit_end(u);
		return;
	}
	v = priv_volume_of(u->pub);
	u->st.bind = BS_SENT;
	call_mounter(u, priv_bind_volume(u->job->vm->d.mounter, &v, u->task,
	    u->dest, u->ro || u->pub->read_only, on_mounter,
	    mounter_ticket(u)));
}
