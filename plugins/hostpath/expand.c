/*
 * expand.c: volume expansion in berth-csi-hostpath: ControllerExpandVolume
 * and NodeExpandVolume.
 *
 * A volume is a directory, so there is nothing to grow: the controller
 * checks that the volume exists and answers the capacity asked (the
 * range's required_bytes, else its limit), and asks for node expansion;
 * the node checks that the path it is given (and the staging path, when
 * given) shows the volume's directory. The plugin advertises ONLINE
 * expansion, or OFFLINE with --expand-offline, so that a CO's refusal to
 * expand a volume in use can be tested. Strict, NodeExpandVolume leaves
 * its optional capacity_bytes out.
 *
 * For tests, when <state-dir>/received/ exists, each call adds a line to
 * <state-dir>/received/<rpc>.<volume>: what it was asked, secrets
 * included (as node.c's notes). Must not: mount, or write anywhere else.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hostpath.h"

struct any_entry {
	ProtobufCMessage base;
	char *key, *value;
};

static void
note(struct hostpath *hp, const char *rpc, const char *volume,
    const char *what, const Csi__V1__CapacityRange *range, size_t nsec,
    void *const *sec)
{
	char path[4200];
	size_t i;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/received/%s.%s",
	    hp->state_dir, rpc, volume) >= sizeof(path) || (fd = open(path,
	    O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
	    0600)) < 0)
		return;
	dprintf(fd, "%s required_bytes %" PRId64 " limit_bytes %" PRId64,
	    what, range != NULL ? range->required_bytes : 0, range != NULL ?
	    range->limit_bytes : 0);
	for (i = 0; i < nsec; i++)
		dprintf(fd, " secret %s=%s",
		    ((const struct any_entry *)sec[i])->key,
		    ((const struct any_entry *)sec[i])->value);
	dprintf(fd, "\n");
	close(fd);
}

/* The capacity a range asks for; 0 when it asks for none. */
static int64_t
range_bytes(const Csi__V1__CapacityRange *range)
{
	if (range == NULL)
		return 0;
	return range->required_bytes > 0 ? range->required_bytes :
	    range->limit_bytes;
}

static bool
range_ok(const char *rpc, const char *volume,
    const Csi__V1__CapacityRange *range, struct rpc_reply *r)
{
	if (range != NULL && (range->required_bytes < 0 ||
	    range->limit_bytes < 0 || (range->limit_bytes > 0 &&
	    range->limit_bytes < range->required_bytes))) {
		reply_error(r, GRPC_STATUS_OUT_OF_RANGE, "%s %s: capacity "
		    "range [%" PRId64 ", %" PRId64 "] is empty or negative",
		    rpc, volume, range->required_bytes, range->limit_bytes);
		return false;
	}
	return true;
}

static void
controller_expand_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__ControllerExpandVolumeRequest *req = (const void *)msg;
	Csi__V1__ControllerExpandVolumeResponse out =
	    CSI__V1__CONTROLLER_EXPAND_VOLUME_RESPONSE__INIT;
	int vol;

	if (!volume_id_ok(req->volume_id, r))
		return;
	if (range_bytes(req->capacity_range) == 0) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "ControllerExpandVolume %s: capacity_range is missing",
		    req->volume_id);
		return;
	}
	if (!range_ok("ControllerExpandVolume", req->volume_id,
	    req->capacity_range, r))
		return;
	note(hp, "ControllerExpandVolume", req->volume_id, "expand",
	    req->capacity_range, req->n_secrets, (void *const *)req->secrets);
	if ((vol = volume_open(hp, req->volume_id, "ControllerExpandVolume",
	    r)) < 0)
		return;
	close(vol);
	out.capacity_bytes = range_bytes(req->capacity_range);
	out.node_expansion_required = true;
	reply_ok(r, &out.base);
}

/* Does path show the volume's directory vol (the same inode)? */
static bool
shows_volume(int vol, const char *rpc, const char *field, const char *path,
    struct rpc_reply *r)
{
	struct stat a, b;
	int fd;

	if (path == NULL || path[0] != '/') {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s: %s must be "
		    "an absolute path", rpc, field);
		return false;
	}
	if ((fd = tree_open(AT_FDCWD, path, O_PATH | O_DIRECTORY, 0)) < 0) {
		reply_error(r, fd == -ENOENT ? GRPC_STATUS_NOT_FOUND :
		    fd == -ENOTDIR || fd == -ELOOP || fd == -EXDEV ?
		    GRPC_STATUS_PERMISSION_DENIED : GRPC_STATUS_INTERNAL,
		    "%s: %s %s: %s (a symlink is never followed)", rpc, field,
		    path, strerror(-fd));
		return false;
	}
	if (fstat(fd, &a) < 0 || fstat(vol, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		close(fd);
		reply_error(r, GRPC_STATUS_NOT_FOUND, "%s: %s %s does not show "
		    "the volume", rpc, field, path);
		return false;
	}
	close(fd);
	return true;
}

static void
node_expand_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodeExpandVolumeRequest *req = (const void *)msg;
	Csi__V1__NodeExpandVolumeResponse out =
	    CSI__V1__NODE_EXPAND_VOLUME_RESPONSE__INIT;
	const char *rpc = "NodeExpandVolume";
	char what[8400];
	bool ok;
	int vol;

	if (!volume_id_ok(req->volume_id, r) || !range_ok(rpc,
	    req->volume_id, req->capacity_range, r))
		return;
	snprintf(what, sizeof(what), "volume_path %s staging_target_path %s",
	    req->volume_path != NULL ? req->volume_path : "",
	    req->staging_target_path != NULL && req->staging_target_path[0] !=
	    '\0' ? req->staging_target_path : "-");
	note(hp, rpc, req->volume_id, what, req->capacity_range,
	    req->n_secrets, (void *const *)req->secrets);
	if ((vol = volume_open(hp, req->volume_id, rpc, r)) < 0)
		return;
	ok = shows_volume(vol, rpc, "volume_path", req->volume_path, r) &&
	    (req->staging_target_path == NULL ||
	    req->staging_target_path[0] == '\0' || shows_volume(vol, rpc,
	    "staging_target_path", req->staging_target_path, r));
	close(vol);
	if (!ok)
		return;
	if (optional_fields(hp))
		out.capacity_bytes = range_bytes(req->capacity_range);
	reply_ok(r, &out.base);
}

const struct rpc_method expand_methods[] = {
	{ "/csi.v1.Controller/ControllerExpandVolume",
	    "ControllerExpandVolume", HOSTPATH_CONTROLLER,
	    &csi__v1__controller_expand_volume_request__descriptor,
	    controller_expand_volume },
	{ "/csi.v1.Node/NodeExpandVolume", "NodeExpandVolume", HOSTPATH_NODE,
	    &csi__v1__node_expand_volume_request__descriptor,
	    node_expand_volume },
	{ NULL, NULL, 0, NULL, NULL },
};
