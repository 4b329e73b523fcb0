/*
 * node.c: the CSI Node service of berth-csi-hostpath.
 *
 * Staging bind-mounts the volume's directory at the staging path;
 * publishing bind-mounts the staging path at the target (read-only when
 * asked). Both are idempotent: a target that already shows the right
 * directory is success, one that shows anything else is ALREADY_EXISTS.
 * Whether a path is a mount is asked of statx(STATX_ATTR_MOUNT_ROOT),
 * never of /proc text. It removes only the directories it created itself
 * (remembered in memory, so a restarted plugin leaves older ones to the
 * CO), and it must not touch a path that is not a mount it can explain.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "hostpath.h"
#include "log.h"

struct where {
	bool exists;
	bool mount_root;
	dev_t dev;
	ino_t ino;
};

static bool
look(const char *path, struct where *w)
{
	struct statx stx;

	memset(w, 0, sizeof(*w));
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS,
	    &stx) < 0)
		return errno == ENOENT;
	w->exists = true;
	w->mount_root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
	w->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	w->ino = stx.stx_ino;
	return true;
}

static bool
same(const struct where *a, const struct where *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

static bool
path_arg(const char *rpc, const char *field, const char *path,
    struct rpc_reply *r)
{
	if (path == NULL || *path == '\0') {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s: %s is missing",
		    rpc, field);
		return false;
	}
	if (path[0] != '/' || strlen(path) >= 4096) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s: %s '%s' is "
		    "not an absolute path", rpc, field, path);
		return false;
	}
	return true;
}

static void
remember(struct hostpath *hp, const char *path)
{
	size_t i;

	for (i = 0; i < HOSTPATH_MAX_CREATED; i++)
		if (hp->created[i] == NULL) {
			if ((hp->created[i] = strdup(path)) == NULL)
				fatal("remember %s", path);
			return;
		}
	log_warnx("remember %s: already %d paths to clean up; this one "
	    "will be left behind", path, HOSTPATH_MAX_CREATED);
}

static bool
forget(struct hostpath *hp, const char *path)
{
	size_t i;

	for (i = 0; i < HOSTPATH_MAX_CREATED; i++)
		if (hp->created[i] != NULL && strcmp(hp->created[i], path) == 0) {
			free(hp->created[i]);
			hp->created[i] = NULL;
			return true;
		}
	return false;
}

/*
 * Bind src at target, creating target when missing. Returns true when the
 * bind is in place (made now or found), else fills r.
 */
static bool
bind_at(struct hostpath *hp, const char *rpc, const char *src,
    const char *target, bool readonly, struct rpc_reply *r)
{
	struct where s, t;
	struct statvfs sv;
	bool made = false;

	if (!look(src, &s) || !s.exists) {
		reply_error(r, GRPC_STATUS_NOT_FOUND, "%s: %s does not exist",
		    rpc, src);
		return false;
	}
	if (!look(target, &t)) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: statx %s: %s", rpc,
		    target, strerror(errno));
		return false;
	}
	if (t.mount_root) {
		if (!same(&s, &t)) {
			reply_error(r, GRPC_STATUS_ALREADY_EXISTS, "%s: another "
			    "file system is mounted at %s", rpc, target);
			return false;
		}
		if (statvfs(target, &sv) == 0 &&
		    !!(sv.f_flag & ST_RDONLY) != readonly) {
			reply_error(r, GRPC_STATUS_ALREADY_EXISTS, "%s: %s is "
			    "already mounted %s", rpc, target,
			    readonly ? "read-write" : "read-only");
			return false;
		}
		return true;
	}
	if (!t.exists) {
		if (mkdir(target, 0750) < 0) {
			reply_error(r, GRPC_STATUS_INTERNAL, "%s: mkdir %s: %s",
			    rpc, target, strerror(errno));
			return false;
		}
		made = true;
	}
	if (mount(src, target, NULL, MS_BIND, NULL) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: bind %s at %s: %s",
		    rpc, src, target, strerror(errno));
		goto undo_dir;
	}
	if (readonly && mount(NULL, target, NULL,
	    MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: make %s read-only: %s",
		    rpc, target, strerror(errno));
		umount2(target, MNT_DETACH);
		goto undo_dir;
	}
	if (made)
		remember(hp, target);
	return true;
undo_dir:
	if (made)
		rmdir(target);
	return false;
}

/* Unmount whatever is at target, then remove it if this plugin made it. */
static bool
unbind_at(struct hostpath *hp, const char *rpc, const char *volume,
    const char *target, struct rpc_reply *r)
{
	char dir[4096];
	struct where t, v;
	int i;

	if (!volume_dir(hp, volume, dir, sizeof(dir), r))
		return false;
	for (i = 0; i < 8; i++) {
		if (!look(target, &t)) {
			reply_error(r, GRPC_STATUS_INTERNAL, "%s: statx %s: %s",
			    rpc, target, strerror(errno));
			return false;
		}
		if (!t.mount_root)
			break;
		if (umount2(target, UMOUNT_NOFOLLOW) < 0) {
			reply_error(r, GRPC_STATUS_INTERNAL, "%s: unmount %s: %s",
			    rpc, target, strerror(errno));
			return false;
		}
	}
	if (i == 0 && (!look(dir, &v) || !v.exists)) {
		reply_error(r, GRPC_STATUS_NOT_FOUND, "%s: no volume %s", rpc,
		    volume);
		return false;
	}
	if (forget(hp, target) && rmdir(target) < 0 && errno != ENOENT) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: rmdir %s: %s", rpc,
		    target, strerror(errno));
		return false;
	}
	return true;
}

static void
node_stage_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodeStageVolumeRequest *req = (const void *)msg;
	Csi__V1__NodeStageVolumeResponse out =
	    CSI__V1__NODE_STAGE_VOLUME_RESPONSE__INIT;
	char dir[4096];
	const char *why;

	if (!volume_dir(hp, req->volume_id, dir, sizeof(dir), r) ||
	    !path_arg("NodeStageVolume", "staging_target_path",
	    req->staging_target_path, r))
		return;
	if (!capability_supported(req->volume_capability, &why)) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "NodeStageVolume %s: %s", req->volume_id, why);
		return;
	}
	if (!bind_at(hp, "NodeStageVolume", dir, req->staging_target_path,
	    false, r))
		return;
	reply_ok(r, &out.base);
}

static void
node_unstage_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodeUnstageVolumeRequest *req = (const void *)msg;
	Csi__V1__NodeUnstageVolumeResponse out =
	    CSI__V1__NODE_UNSTAGE_VOLUME_RESPONSE__INIT;

	if (!path_arg("NodeUnstageVolume", "staging_target_path",
	    req->staging_target_path, r) ||
	    !unbind_at(hp, "NodeUnstageVolume", req->volume_id,
	    req->staging_target_path, r))
		return;
	reply_ok(r, &out.base);
}

static void
node_publish_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodePublishVolumeRequest *req = (const void *)msg;
	Csi__V1__NodePublishVolumeResponse out =
	    CSI__V1__NODE_PUBLISH_VOLUME_RESPONSE__INIT;
	struct where v, s;
	char dir[4096];
	const char *why;

	if (!volume_dir(hp, req->volume_id, dir, sizeof(dir), r) ||
	    !path_arg("NodePublishVolume", "target_path", req->target_path, r) ||
	    !path_arg("NodePublishVolume", "staging_target_path",
	    req->staging_target_path, r))
		return;
	if (!capability_supported(req->volume_capability, &why)) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "NodePublishVolume %s: %s", req->volume_id, why);
		return;
	}
	if (!look(dir, &v) || !v.exists) {
		reply_error(r, GRPC_STATUS_NOT_FOUND,
		    "NodePublishVolume: no volume %s", req->volume_id);
		return;
	}
	if (!look(req->staging_target_path, &s) || !s.mount_root ||
	    !same(&v, &s)) {
		reply_error(r, GRPC_STATUS_FAILED_PRECONDITION,
		    "NodePublishVolume: volume %s is not staged at %s",
		    req->volume_id, req->staging_target_path);
		return;
	}
	if (!bind_at(hp, "NodePublishVolume", req->staging_target_path,
	    req->target_path, req->readonly, r))
		return;
	reply_ok(r, &out.base);
}

static void
node_unpublish_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodeUnpublishVolumeRequest *req = (const void *)msg;
	Csi__V1__NodeUnpublishVolumeResponse out =
	    CSI__V1__NODE_UNPUBLISH_VOLUME_RESPONSE__INIT;

	if (!path_arg("NodeUnpublishVolume", "target_path", req->target_path,
	    r) || !unbind_at(hp, "NodeUnpublishVolume", req->volume_id,
	    req->target_path, r))
		return;
	reply_ok(r, &out.base);
}

static void
node_get_volume_stats(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodeGetVolumeStatsRequest *req = (const void *)msg;
	Csi__V1__NodeGetVolumeStatsResponse out =
	    CSI__V1__NODE_GET_VOLUME_STATS_RESPONSE__INIT;
	Csi__V1__VolumeUsage bytes = CSI__V1__VOLUME_USAGE__INIT;
	Csi__V1__VolumeUsage inodes = CSI__V1__VOLUME_USAGE__INIT;
	Csi__V1__VolumeUsage *usage[2] = { &bytes, &inodes };
	struct where v;
	struct statvfs sv;
	char dir[4096];

	if (!volume_dir(hp, req->volume_id, dir, sizeof(dir), r) ||
	    !path_arg("NodeGetVolumeStats", "volume_path", req->volume_path,
	    r))
		return;
	if (!look(dir, &v) || !v.exists) {
		reply_error(r, GRPC_STATUS_NOT_FOUND,
		    "NodeGetVolumeStats: no volume %s", req->volume_id);
		return;
	}
	if (statvfs(req->volume_path, &sv) < 0) {
		reply_error(r, errno == ENOENT ? GRPC_STATUS_NOT_FOUND :
		    GRPC_STATUS_INTERNAL, "NodeGetVolumeStats: statvfs %s: %s",
		    req->volume_path, strerror(errno));
		return;
	}
	bytes.unit = CSI__V1__VOLUME_USAGE__UNIT__BYTES;
	bytes.total = (int64_t)(sv.f_blocks * sv.f_frsize);
	bytes.available = (int64_t)(sv.f_bavail * sv.f_frsize);
	bytes.used = (int64_t)((sv.f_blocks - sv.f_bfree) * sv.f_frsize);
	inodes.unit = CSI__V1__VOLUME_USAGE__UNIT__INODES;
	inodes.total = (int64_t)sv.f_files;
	inodes.available = (int64_t)sv.f_favail;
	inodes.used = (int64_t)(sv.f_files - sv.f_ffree);
	out.n_usage = 2;
	out.usage = usage;
	reply_ok(r, &out.base);
}

static void
node_get_capabilities(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	Csi__V1__NodeGetCapabilitiesResponse out =
	    CSI__V1__NODE_GET_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__NodeServiceCapability caps[4], *list[4];
	Csi__V1__NodeServiceCapability__RPC rpc[4];
	size_t i;

	for (i = 0; i < 4; i++) {
		csi__v1__node_service_capability__init(&caps[i]);
		csi__v1__node_service_capability__rpc__init(&rpc[i]);
		caps[i].type_case = CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC;
		caps[i].rpc = &rpc[i];
		list[i] = &caps[i];
	}
	out.n_capabilities = 2;
	if (hp->fault_unknown_caps) {
		/* Unknown entries first: a client must read past them. */
		rpc[0].type = HOSTPATH_UNKNOWN_CAP;
		caps[1].type_case =
		    CSI__V1__NODE_SERVICE_CAPABILITY__TYPE__NOT_SET;
		out.n_capabilities = 4;
	}
	rpc[out.n_capabilities - 2].type =
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__STAGE_UNSTAGE_VOLUME;
	rpc[out.n_capabilities - 1].type =
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME_STATS;
	out.capabilities = list;
	reply_ok(r, &out.base);
}

static void
node_get_info(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	Csi__V1__NodeGetInfoResponse out = CSI__V1__NODE_GET_INFO_RESPONSE__INIT;
	Csi__V1__Topology topo = CSI__V1__TOPOLOGY__INIT;
	Csi__V1__Topology__SegmentsEntry seg =
	    CSI__V1__TOPOLOGY__SEGMENTS_ENTRY__INIT, *segs[1] = { &seg };

	seg.key = HOSTPATH_TOPOLOGY_KEY;
	seg.value = (char *)hp->node_id;
	topo.n_segments = 1;
	topo.segments = segs;
	out.node_id = (char *)hp->node_id;
	if (!hp->fault_minimal) {
		out.max_volumes_per_node = HOSTPATH_MAX_VOLUMES;
		out.accessible_topology = &topo;
	}
	reply_ok(r, &out.base);
}

const struct rpc_method node_methods[] = {
	{ "/csi.v1.Node/NodeStageVolume", "NodeStageVolume", HOSTPATH_NODE,
	    &csi__v1__node_stage_volume_request__descriptor,
	    node_stage_volume },
	{ "/csi.v1.Node/NodeUnstageVolume", "NodeUnstageVolume", HOSTPATH_NODE,
	    &csi__v1__node_unstage_volume_request__descriptor,
	    node_unstage_volume },
	{ "/csi.v1.Node/NodePublishVolume", "NodePublishVolume", HOSTPATH_NODE,
	    &csi__v1__node_publish_volume_request__descriptor,
	    node_publish_volume },
	{ "/csi.v1.Node/NodeUnpublishVolume", "NodeUnpublishVolume",
	    HOSTPATH_NODE, &csi__v1__node_unpublish_volume_request__descriptor,
	    node_unpublish_volume },
	{ "/csi.v1.Node/NodeGetVolumeStats", "NodeGetVolumeStats",
	    HOSTPATH_NODE, &csi__v1__node_get_volume_stats_request__descriptor,
	    node_get_volume_stats },
	{ "/csi.v1.Node/NodeGetCapabilities", "NodeGetCapabilities",
	    HOSTPATH_NODE, &csi__v1__node_get_capabilities_request__descriptor,
	    node_get_capabilities },
	{ "/csi.v1.Node/NodeGetInfo", "NodeGetInfo", HOSTPATH_NODE,
	    &csi__v1__node_get_info_request__descriptor, node_get_info },
	{ NULL, NULL, 0, NULL, NULL },
};
