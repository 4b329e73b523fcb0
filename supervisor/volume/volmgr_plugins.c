/*
 * volmgr_plugins.c: the volume manager's view of a plugin: its healthy
 * instances (through the find_plugin dependency), where its volumes go
 * (csi/<type>/<plugin>/ under the data directory), and the parts of a
 * CSI request that every unit builds the same way (a capability, a map
 * of contexts). Must not: send anything.
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "csimanager.h"
#include "layout.h"
#include "volmgr_int.h"

bool
volmgr_csimgr_find(void *csimgr, Berth__PluginType type, const char *name,
    struct volmgr_plugin *out)
{
	struct csi_inst *in = csimgr_find(csimgr, type, name);

	if (in == NULL)
		return false;
	out->conn = csi_inst_conn(in);
	out->fp = csi_inst_fingerprint(in);
	out->alloc = csi_inst_alloc(in);
	return true;
}

static bool
find(struct volmgr *vm, Berth__PluginType type, const char *plugin,
    struct volmgr_plugin *out)
{
	memset(out, 0, sizeof(*out));
	return vm->d.find_plugin != NULL && vm->d.find_plugin(
	    vm->d.plugins_ctx, type, plugin, out);
}

/* The active instance, connected and fingerprinted healthy. */
static bool
healthy(struct volmgr *vm, Berth__PluginType type, const char *plugin,
    struct volmgr_plugin *out)
{
	return find(vm, type, plugin, out) && out->conn != NULL &&
	    out->fp != NULL && out->fp->done && out->fp->healthy;
}

bool
controller_of(struct volmgr *vm, const char *plugin,
    struct volmgr_plugin *out)
{
	return healthy(vm, BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER,
	    plugin, out);
}

/*
 * The plugin has a controller instance that is not healthy (yet, or no
 * more): the unit waits for it (fails VOLMGR_RETRY, saying why, and
 * ends) rather than going on as if the plugin had no controller.
 */
bool
controller_sick(struct unit *u, const char *plugin)
{
	struct volmgr_plugin ctl;

	if (!find(u->job->vm, BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER,
	    plugin, &ctl) || (ctl.conn != NULL && ctl.fp != NULL &&
	    ctl.fp->done && ctl.fp->healthy))
		return false;
	unit_fail(u, VOLMGR_RETRY, "plugin %s: its controller instance (alloc "
	    "%s) is %s", plugin, ctl.alloc != NULL ? ctl.alloc : "?",
	    ctl.fp != NULL && ctl.fp->done ? ctl.fp->health :
	    "not fingerprinted yet");
	unit_end(u);
	return true;
}

bool
node_of(struct volmgr *vm, const char *plugin, struct volmgr_plugin *out)
{
	return healthy(vm, BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE, plugin,
	    out);
}

bool
node_or_end(struct unit *u, struct volmgr_plugin *out)
{
	if (node_of(u->job->vm, u->pub->plugin, out))
		return true;
	/* Waits (the caller retries) rather than calling a sick plugin. */
	if (out->fp != NULL && out->fp->done &&
	    out->fp->health[0] != '\0')
		unit_fail(u, VOLMGR_RETRY, "plugin %s: its node instance "
		    "(alloc %s) is %s", u->pub->plugin, out->alloc,
		    out->fp->health);
	else
		unit_fail(u, VOLMGR_RETRY, "plugin %s: no healthy node "
		    "instance yet", u->pub->plugin);
	unit_end(u);
	return false;
}

/*
 * The <type> of the node plugin's mount root, csi/<type>/<plugin>/: the
 * type its node task declared (a monolith's root is
 * csi/monolith/<plugin>), never that of a controller task (the alloc
 * runner allows one plugin task per alloc today; the lookup does not
 * lean on that). When the alloc is not running (after a restart, before
 * it is read back) the type is inferred from the registry's instances:
 * there is always an answer, so an unmount is never held back for want
 * of one.
 */
void
pub_mount_type(struct volmgr *vm, struct vpub *p,
    const struct volmgr_plugin *node)
{
	struct volmgr_plugin ctl;
	const char *t = NULL;

	if (vm->d.node_plugin_type != NULL)
		t = vm->d.node_plugin_type(vm->d.allocs_ctx, node->alloc,
		    p->plugin);
	if (t == NULL)
		t = find(vm, BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER,
		    p->plugin, &ctl) && strcmp(ctl.alloc, node->alloc) ==
		    0 ? "monolith" : "node";
	snprintf(p->type, sizeof(p->type), "%s", t);
}

void
mount_type(struct unit *u, const struct volmgr_plugin *node)
{
	pub_mount_type(u->job->vm, u->pub, node);
}

void
pub_csi_path(struct volmgr *vm, const struct vpub *p, bool staging,
    char *buf, size_t n)
{
	char rel[1024];

	if ((staging ? layout_staging(rel, sizeof(rel), p->type, p->plugin,
	    p->ns, p->vol, p->stage_usage[0] != '\0' ? p->stage_usage :
	    NULL) : layout_publish(rel, sizeof(rel),
	    p->type, p->plugin, p->alloc, p->vol, p->usage)) < 0 ||
	    layout_abs(buf, n, vm->d.data_dir, rel) < 0)
		buf[0] = '\0';
}

/* The volume's staging path, or the pub's publish target: absolute, for
 * CSI. */
void
csi_path(struct unit *u, bool staging, char *buf, size_t n)
{
	pub_csi_path(u->job->vm, u->pub, staging, buf, n);
}

static Csi__V1__VolumeCapability__AccessMode__Mode
csi_mode(Berth__AccessMode m)
{
	switch (m) {
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY;
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER;
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_READER_ONLY:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_SINGLE_WRITER:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_SINGLE_WRITER;
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_SINGLE_WRITER;
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_MULTI_WRITER:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_MULTI_WRITER;
	default:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__UNKNOWN;
	}
}

Csi__V1__VolumeCapability *
capability(struct capbuf *b, Berth__AccessMode access,
    Berth__AttachmentMode attachment, const char *fs_type,
    char *const *flags, size_t nflags)
{
	csi__v1__volume_capability__init(&b->cap);
	csi__v1__volume_capability__mount_volume__init(&b->mnt);
	csi__v1__volume_capability__block_volume__init(&b->blk);
	csi__v1__volume_capability__access_mode__init(&b->mode);
	b->mode.mode = csi_mode(access);
	b->cap.access_mode = &b->mode;
	if (attachment == BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE) {
		b->cap.access_type_case =
		    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
		b->cap.block = &b->blk;
	} else {
		b->cap.access_type_case =
		    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
		b->cap.mount = &b->mnt;
		b->mnt.fs_type = (char *)(fs_type != NULL ? fs_type : "");
		b->mnt.n_mount_flags = nflags;
		b->mnt.mount_flags = (char **)flags;
	}
	return &b->cap;
}

static bool
has_flag(char *const *flags, size_t n, const char *f)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(flags[i], f) == 0)
			return true;
	return false;
}

/*
 * The volume's mount options merged with the alloc's, as Nomad merges
 * them: the alloc's fs_type when it names one, else the volume's; the
 * volume's flags, then the alloc's that are not among them yet.
 */
Csi__V1__VolumeCapability *
pub_capability(struct capbuf *b, const struct vpub *p)
{
	const struct alloc_volume *r = p->req;
	const char *fs_type = p->fs_type;
	size_t n = 0, i;

	if (r != NULL && r->fs_type != NULL && r->fs_type[0] != '\0')
		fs_type = r->fs_type;
	for (i = 0; i < p->nflags && n < FLAGS_MAX; i++)
		if (!has_flag(b->flags, n, p->flags[i]))
			b->flags[n++] = p->flags[i];
	for (i = 0; r != NULL && i < r->nflags && n < FLAGS_MAX; i++)
		if (!has_flag(b->flags, n, r->mount_flags[i]))
			b->flags[n++] = r->mount_flags[i];
	return capability(b, p->access, p->attachment, fs_type, b->flags, n);
}

void
pub_mount_group(struct capbuf *b, const struct vpub *p,
    const struct volmgr_plugin *node)
{
	if (p->group == 0 || !node->fp->mount_group || b->cap.mount == NULL)
		return;
	snprintf(b->group, sizeof(b->group), "%u", (unsigned)p->group);
	b->mnt.volume_mount_group = b->group;
}

/* Map entries all share one layout: { base, key, value }. */
void *
kv_entries(const struct kvs *k, const ProtobufCMessageDescriptor *d,
    struct kv_entry *store, void **ptrs)
{
	for (size_t i = 0; i < k->n; i++) {
		protobuf_c_message_init(d, &store[i]);
		store[i].key = k->key[i];
		store[i].value = k->value[i];
		ptrs[i] = &store[i];
	}
	return ptrs;
}

/* The volume's place under its plugin, as the mounter's verbs name it. */
struct priv_volume
priv_volume_of(const struct vpub *p)
{
	return (struct priv_volume){ .plugin_type = p->type,
	    .plugin_id = p->plugin, .volume_ns = p->ns, .alloc_id = p->alloc,
	    .volume_id = p->vol, .read_only = p->read_only,
	    .attachment = p->attachment, .access = path_access(p->access),
	    /* A plugin without VOLUME_MOUNT_GROUP, or a block device (CSI
	     * names no group for one): the mounter's part. */
	    .group = (p->foreign_owner || p->attachment ==
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE) &&
	    !p->read_only ? p->group : 0 };
}

struct priv_volume
priv_staging_of(const struct vpub *p)
{
	struct priv_volume v = priv_volume_of(p);

	if (p->stage_usage[0] != '\0')
		v.per_usage = usage_parse(p->stage_usage, &v.read_only,
		    &v.attachment, &v.access);
	return v;
}
