/*
 * controller.c: the CSI Controller service of berth-csi-hostpath.
 *
 * Volumes are directories <state-dir>/volumes/<volume id>, and the volume
 * id is the name CreateVolume was given, so creating twice with one name
 * is one volume. Names must pass berth's identifier allow-list, which
 * keeps every name this file uses inside the volumes directory, which it
 * reaches only from the descriptor pinned at start (tree.c). It must not
 * mount anything: that is node.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hostpath.h"
#include "ident.h"
#include "log.h"

bool
volume_id_ok(const char *id, struct rpc_reply *r)
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
	return true;
}

/* The volume's directory, O_PATH, or -1 with r filled (NOT_FOUND). */
int
volume_open(struct hostpath *hp, const char *id, const char *rpc,
    struct rpc_reply *r)
{
	int fd;

	if (!volume_id_ok(id, r))
		return -1;
	if ((fd = tree_open(hp->volumes_fd, id, O_PATH | O_DIRECTORY, 0)) >= 0)
		return fd;
	if (fd == -ENOENT)
		reply_error(r, GRPC_STATUS_NOT_FOUND, "%s: no volume %s", rpc,
		    id);
	else
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: open %s/%s: %s", rpc,
		    hp->volumes_dir, id, strerror(-fd));
	return -1;
}

bool
capability_supported(const Csi__V1__VolumeCapability *cap, const char **why)
{
	if (cap == NULL) {
		*why = "volume capability is missing";
		return false;
	}
	if (block_capability(cap) && !hostpath_block) {
		*why = "block access is not supported: volumes are directories "
		    "(--block serves it)";
		return false;
	}
	if (!block_capability(cap) && cap->access_type_case !=
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT) {
		*why = "volume capability names neither block nor mount access";
		return false;
	}
	if (cap->access_mode == NULL || cap->access_mode->mode <
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER ||
	    cap->access_mode->mode >
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_MULTI_WRITER) {
		*why = "access mode is missing or unknown";
		return false;
	}
	return true;
}

/*
 * The volume's directory, made if missing. Lenient, it is 0777 so that
 * tasks of any user can write, which hides what berth must do for them.
 * Strict, it is 0755 of this process's user, as plugins make them: the
 * umask is 022 just for the mkdir (the socket's, set by whoever started
 * the plugin, stays), and nothing is chmod-ed.
 */
static bool
volume_mkdir(struct hostpath *hp, const char *name, struct rpc_reply *r)
{
	mode_t old;
	int fd, err = 0;

	if (hp->strict) {
		old = umask(022);
		if (mkdirat(hp->volumes_fd, name, 0755) < 0 && errno != EEXIST)
			err = errno;
		umask(old);
	} else if (mkdirat(hp->volumes_fd, name, 0777) < 0 && errno != EEXIST)
		err = errno;
	if (err != 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "CreateVolume: mkdir "
		    "%s/%s: %s", hp->volumes_dir, name, strerror(err));
		return false;
	}
	if (hp->strict)
		return true;
	/* 0777 minus umask would leave tasks of other users out. */
	if ((fd = tree_open(hp->volumes_fd, name, O_RDONLY | O_DIRECTORY,
	    0)) < 0 || fchmod(fd, 0777) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "CreateVolume: open "
		    "%s/%s: %s", hp->volumes_dir, name,
		    strerror(fd < 0 ? -fd : errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	return true;
}

static void
create_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__CreateVolumeRequest *req = (const void *)msg;
	Csi__V1__CreateVolumeResponse out = CSI__V1__CREATE_VOLUME_RESPONSE__INIT;
	Csi__V1__Volume vol = CSI__V1__VOLUME__INIT;
	Csi__V1__Topology topo, *topos[1] = { &topo };
	Csi__V1__Topology__SegmentsEntry seg, *segs[1];
	char gone[256];
	struct stat st;
	const char *why;
	bool existed;
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
	if (!volume_id_ok(req->name, r) || !topology_create_ok(hp, req, r))
		return;
	existed = fstatat(hp->volumes_fd, req->name, &st,
	    AT_SYMLINK_NOFOLLOW) == 0;
	if (!volume_mkdir(hp, req->name, r))
		return;
	/* Created again by name: its content is there already. */
	if (!existed && !snapshot_restore(hp, req->volume_content_source,
	    req->name, r)) {
		tree_remove(hp->volumes_fd, req->name, gone, sizeof(gone));
		return;
	}

	vol.volume_id = req->name;
	if (optional_fields(hp) && req->capacity_range != NULL)
		vol.capacity_bytes = req->capacity_range->required_bytes;
	if (optional_fields(hp))
		vol.content_source = req->volume_content_source;
	if (topology_own(hp, &topo, &seg, segs)) {
		vol.n_accessible_topology = 1;
		vol.accessible_topology = topos;
	}
	out.volume = &vol;
	reply_ok(r, &out.base);
}

static void
delete_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__DeleteVolumeRequest *req = (const void *)msg;
	Csi__V1__DeleteVolumeResponse out = CSI__V1__DELETE_VOLUME_RESPONSE__INIT;
	char why[400];
	int err;

	if (!volume_id_ok(req->volume_id, r))
		return;
	/*
	 * A task may write into the volume while it goes, so it is removed
	 * by descriptor (tree.c), never by path. Gone already is success:
	 * DeleteVolume is idempotent.
	 */
	block_delete(hp, req->volume_id);
	if ((err = tree_remove(hp->volumes_fd, req->volume_id, why,
	    sizeof(why))) < 0) {
		reply_error(r, err == -EBUSY ? GRPC_STATUS_FAILED_PRECONDITION :
		    GRPC_STATUS_INTERNAL, "DeleteVolume %s: %s/%s",
		    req->volume_id, hp->volumes_dir, why);
		return;
	}
	/* A new volume of this name is not staged where this one was. */
	if (hp->strict && (err = staged_drop(hp, req->volume_id)) < 0)
		log_warnx("DeleteVolume %s: forget its staging path: %s",
		    req->volume_id, strerror(-err));
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
	char text[256];
	const char *why;
	struct stat st;
	size_t i;

	if (!volume_id_ok(req->volume_id, r))
		return;
	if (req->n_volume_capabilities == 0) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "Validate"
		    "VolumeCapabilities %s: volume_capabilities is empty",
		    req->volume_id);
		return;
	}
	if (fstatat(hp->volumes_fd, req->volume_id, &st,
	    AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
		reply_error(r, GRPC_STATUS_NOT_FOUND, "ValidateVolume"
		    "Capabilities: no volume %s", req->volume_id);
		return;
	}
	for (i = 0; i < req->n_volume_capabilities; i++)
		if (!capability_supported(req->volume_capabilities[i], &why)) {
			snprintf(text, sizeof(text), "capability %zu: %s", i,
			    why);
			if (optional_fields(hp))
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
	Csi__V1__ControllerServiceCapability caps[6], *list[6];
	Csi__V1__ControllerServiceCapability__RPC rpc[6];
	size_t i;

	for (i = 0; i < 6; i++) {
		csi__v1__controller_service_capability__init(&caps[i]);
		csi__v1__controller_service_capability__rpc__init(&rpc[i]);
		caps[i].type_case =
		    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__TYPE_RPC;
		caps[i].rpc = &rpc[i];
		list[i] = &caps[i];
	}
	rpc[0].type =
	    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_VOLUME;
	rpc[1].type =
	    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME;
	out.n_capabilities = 2;
	if (!hp->no_snapshots) {
		rpc[out.n_capabilities++].type =
		    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_SNAPSHOT;
		rpc[out.n_capabilities++].type =
		    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__LIST_SNAPSHOTS;
	}
	if (hp->fault_unknown_caps) {
		rpc[out.n_capabilities].type = HOSTPATH_UNKNOWN_CAP;
		caps[out.n_capabilities + 1].type_case =
		    CSI__V1__CONTROLLER_SERVICE_CAPABILITY__TYPE__NOT_SET;
		out.n_capabilities += 2;
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
