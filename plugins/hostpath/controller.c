/*
 * controller.c: the CSI Controller service of berth-csi-hostpath.
 *
 * Volumes are directories <state-dir>/volumes/<volume id>, and the volume
 * id is the name CreateVolume was given, so creating twice with one name
 * is one volume. Names must pass berth's identifier allow-list, which
 * keeps every path this file builds inside the volumes directory. It must
 * not mount anything: that is node.c.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hostpath.h"
#include "ident.h"

bool
volume_dir(struct hostpath *hp, const char *id, char *buf, size_t n,
    struct rpc_reply *r)
{
	const char *why;

	if (id == NULL || *id == '\0') {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "volume_id is missing");
		return false;
	}
	if ((why = ident_problem(id, strlen(id))) != NULL) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "volume id '%s' "
		    "%s; this plugin takes [A-Za-z0-9._-] only", id, why);
		return false;
	}
	if ((size_t)snprintf(buf, n, "%s/%s", hp->volumes_dir, id) >= n) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "volume id '%s': path too long", id);
		return false;
	}
	return true;
}

bool
capability_supported(const Csi__V1__VolumeCapability *cap, const char **why)
{
	if (cap == NULL) {
		*why = "volume capability is missing";
		return false;
	}
	if (cap->access_type_case ==
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK) {
		*why = "block access is not supported: volumes are directories";
		return false;
	}
	if (cap->access_type_case !=
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT) {
		*why = "volume capability names neither block nor mount access";
		return false;
	}
	if (cap->access_mode == NULL || cap->access_mode->mode <
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER ||
	    cap->access_mode->mode >
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER) {
		*why = "access mode is missing or unknown";
		return false;
	}
	return true;
}

static void
create_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__CreateVolumeRequest *req = (const void *)msg;
	Csi__V1__CreateVolumeResponse out = CSI__V1__CREATE_VOLUME_RESPONSE__INIT;
	Csi__V1__Volume vol = CSI__V1__VOLUME__INIT;
	Csi__V1__Topology topo = CSI__V1__TOPOLOGY__INIT, *topos[1] = { &topo };
	Csi__V1__Topology__SegmentsEntry seg =
	    CSI__V1__TOPOLOGY__SEGMENTS_ENTRY__INIT, *segs[1] = { &seg };
	char dir[4096];
	const char *why;
	size_t i;

	if (req->name == NULL || *req->name == '\0') {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "CreateVolume: name is missing");
		return;
	}
	if (req->n_volume_capabilities == 0) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "CreateVolume %s: volume_capabilities is empty", req->name);
		return;
	}
	for (i = 0; i < req->n_volume_capabilities; i++)
		if (!capability_supported(req->volume_capabilities[i], &why)) {
			reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
			    "CreateVolume %s: %s", req->name, why);
			return;
		}
	if (!volume_dir(hp, req->name, dir, sizeof(dir), r))
		return;
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		reply_error(r, GRPC_STATUS_INTERNAL, "CreateVolume: mkdir %s: %s",
		    dir, strerror(errno));
		return;
	}
	/* 0777 minus umask would leave tasks of other users out. */
	chmod(dir, 0777);

	seg.key = HOSTPATH_TOPOLOGY_KEY;
	seg.value = (char *)hp->node_id;
	topo.n_segments = 1;
	topo.segments = segs;
	vol.volume_id = req->name;
	if (req->capacity_range != NULL)
		vol.capacity_bytes = req->capacity_range->required_bytes;
	vol.n_accessible_topology = 1;
	vol.accessible_topology = topos;
	out.volume = &vol;
	reply_ok(r, &out.base);
}

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_DP)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

static void
delete_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__DeleteVolumeRequest *req = (const void *)msg;
	Csi__V1__DeleteVolumeResponse out = CSI__V1__DELETE_VOLUME_RESPONSE__INIT;
	char dir[4096];
	struct stat st;

	if (!volume_dir(hp, req->volume_id, dir, sizeof(dir), r))
		return;
	/* Gone already is success: DeleteVolume is idempotent. */
	if (lstat(dir, &st) == 0 && nftw(dir, remove_one, 16,
	    FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "DeleteVolume %s: "
		    "removing %s: %s", req->volume_id, dir, strerror(errno));
		return;
	}
	reply_ok(r, &out.base);
}

static void
validate_volume_capabilities(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	Csi__V1__ValidateVolumeCapabilitiesRequest *req = (void *)msg;
	Csi__V1__ValidateVolumeCapabilitiesResponse out =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__ValidateVolumeCapabilitiesResponse__Confirmed confirmed =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_RESPONSE__CONFIRMED__INIT;
	char dir[4096], text[256];
	const char *why;
	struct stat st;
	size_t i;

	if (!volume_dir(hp, req->volume_id, dir, sizeof(dir), r))
		return;
	if (req->n_volume_capabilities == 0) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "Validate"
		    "VolumeCapabilities %s: volume_capabilities is empty",
		    req->volume_id);
		return;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		reply_error(r, GRPC_STATUS_NOT_FOUND, "ValidateVolume"
		    "Capabilities: no volume %s", req->volume_id);
		return;
	}
	for (i = 0; i < req->n_volume_capabilities; i++)
		if (!capability_supported(req->volume_capabilities[i], &why)) {
			snprintf(text, sizeof(text), "capability %zu: %s", i,
			    why);
			out.message = text;
			reply_ok(r, &out.base);
			return;
		}
	if (!hp->fault_validate_no_confirmed) {
		confirmed.n_volume_capabilities = req->n_volume_capabilities;
		confirmed.volume_capabilities = req->volume_capabilities;
		out.confirmed = &confirmed;
	}
	reply_ok(r, &out.base);
}

static void
controller_get_capabilities(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	Csi__V1__ControllerGetCapabilitiesResponse out =
	    CSI__V1__CONTROLLER_GET_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__ControllerServiceCapability caps[3], *list[3];
	Csi__V1__ControllerServiceCapability__RPC rpc[3];
	size_t i;

	for (i = 0; i < 3; i++) {
		csi__v1__controller_service_capability__init(&caps[i]);
		csi__v1__controller_service_capability__rpc__init(&rpc[i]);
		caps[i].type_case =
		    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__TYPE_RPC;
		caps[i].rpc = &rpc[i];
		list[i] = &caps[i];
	}
	rpc[0].type =
	    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_VOLUME;
	out.n_capabilities = 1;
	if (hp->fault_unknown_caps) {
		rpc[1].type = HOSTPATH_UNKNOWN_CAP;
		caps[2].type_case =
		    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__TYPE__NOT_SET;
		out.n_capabilities = 3;
	}
	out.capabilities = list;
	reply_ok(r, &out.base);
}

/* Served with a plain "no": the plugin does not offer these. */
static void
unimplemented(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	reply_error(r, GRPC_STATUS_UNIMPLEMENTED, "%s: this plugin does not "
	    "advertise PUBLISH_UNPUBLISH_VOLUME", msg->descriptor->short_name);
}

const struct rpc_method controller_methods[] = {
	{ "/csi.v1.Controller/CreateVolume", "CreateVolume",
	    HOSTPATH_CONTROLLER, &csi__v1__create_volume_request__descriptor,
	    create_volume },
	{ "/csi.v1.Controller/DeleteVolume", "DeleteVolume",
	    HOSTPATH_CONTROLLER, &csi__v1__delete_volume_request__descriptor,
	    delete_volume },
	{ "/csi.v1.Controller/ValidateVolumeCapabilities",
	    "ValidateVolumeCapabilities", HOSTPATH_CONTROLLER,
	    &csi__v1__validate_volume_capabilities_request__descriptor,
	    validate_volume_capabilities },
	{ "/csi.v1.Controller/ControllerGetCapabilities",
	    "ControllerGetCapabilities", HOSTPATH_CONTROLLER,
	    &csi__v1__controller_get_capabilities_request__descriptor,
	    controller_get_capabilities },
	{ "/csi.v1.Controller/ControllerPublishVolume",
	    "ControllerPublishVolume", HOSTPATH_CONTROLLER,
	    &csi__v1__controller_publish_volume_request__descriptor,
	    unimplemented },
	{ "/csi.v1.Controller/ControllerUnpublishVolume",
	    "ControllerUnpublishVolume", HOSTPATH_CONTROLLER,
	    &csi__v1__controller_unpublish_volume_request__descriptor,
	    unimplemented },
	{ NULL, NULL, 0, NULL, NULL },
};
