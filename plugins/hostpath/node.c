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
 * The CO's paths may pass through directories that others can write:
 * each is opened up to its parent without following a symlink (tree.c),
 * and the last name is created, checked, mounted on and unmounted by
 * descriptor, with open_tree / mount_setattr / move_mount. In strict
 * mode a volume is staged at one path only (the CSI spec's rule), and
 * that path is kept in the state directory (staged.c) so that a
 * restarted plugin still refuses a second one.
 *
 * NodeGetVolumeStats reads the file system's usage at the path it is
 * given (left out in strict mode, as an optional field), and its
 * condition says whether the volume's own directory is still there.
 *
 * A stage or publish that names a volume_mount_group (the plugin
 * advertises VOLUME_MOUNT_GROUP) gives the volume's directory to that
 * group, group rwx and setgid (where its sandbox allows), on the
 * descriptor of the directory, so that a workload of that group writes
 * in a volume made 0755. With --no-mount-group the capability is not
 * advertised, as many plugins do not: the CO then has to make the
 * volume usable by the group itself.
 *
 * For tests, what a stage or publish was asked is written down when
 * <state-dir>/received/ exists (note_received()).
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
	bool dir;
	dev_t dev;
	ino_t ino;
};

/* What is at at/name ("" for at itself), a symlink not followed. */
static bool
look(int at, const char *name, struct where *w)
{
	struct statx stx;

	memset(w, 0, sizeof(*w));
	if (statx(at, name, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 :
	    AT_EMPTY_PATH), STATX_BASIC_STATS, &stx) < 0) {
		/* A FUSE mount whose server died: a mount, to unmount. */
		w->exists = w->mount_root = errno == ENOTCONN;
		return errno == ENOENT || errno == ENOTCONN;
	}
	w->exists = true;
	w->dir = S_ISDIR(stx.stx_mode);
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

/*
 * The CO's path split into its parent, opened without following any
 * symlink on the way (O_PATH), and its last name; -errno with r filled.
 */
static int
open_parent(const char *rpc, const char *path, char *name, size_t n,
    struct rpc_reply *r)
{
	int fd;

	if ((fd = tree_parent(path, name, n)) >= 0)
		return fd;
	if (fd == -EINVAL)
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s: '%s' does "
		    "not end in a name", rpc, path);
	else if (fd == -ELOOP || fd == -ENOTDIR)
		reply_error(r, GRPC_STATUS_PERMISSION_DENIED, "%s: the way to "
		    "%s holds a symlink or a file; this plugin runs as root "
		    "and follows none", rpc, path);
	else
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: open the directory "
		    "of %s: %s", rpc, path, strerror(-fd));
	return fd;
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
 * Clone the mount at src (a pinned descriptor) and attach it on the
 * directory dst (another), read-only from the start when asked.
 */
static int
attach(int src, int dst, bool readonly)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
	int tree, err = 0;

	if ((tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
	    AT_EMPTY_PATH)) < 0)
		return -errno;
	if ((readonly && mount_setattr(tree, "", AT_EMPTY_PATH, &attr,
	    sizeof(attr)) < 0) || move_mount(tree, "", dst, "",
	    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		err = -errno;
	close(tree);
	return err;
}

/*
 * Bind the directory src (pinned) at target, creating target when
 * missing. Returns true when the bind is in place (made now or found),
 * else fills r. target's parent is reached without following a symlink,
 * and target itself is created, checked and mounted on by descriptor.
 */
static bool
bind_at(struct hostpath *hp, const char *rpc, int src, const char *target,
    bool readonly, struct rpc_reply *r)
{
	struct where s, t;
	struct statvfs sv;
	char name[256];
	bool made = false, ok = false;
	int parent, dst = -1, err;

	if (!look(src, "", &s) || !s.exists) {
		reply_error(r, GRPC_STATUS_NOT_FOUND, "%s: the source of %s is "
		    "gone", rpc, target);
		return false;
	}
	if ((parent = open_parent(rpc, target, name, sizeof(name), r)) < 0)
		return false;
	if (!look(parent, name, &t)) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: statx %s: %s", rpc,
		    target, strerror(errno));
		goto out;
	}
	if (t.exists && !t.mount_root && !t.dir) {
		reply_error(r, GRPC_STATUS_PERMISSION_DENIED, "%s: %s is not a "
		    "directory (a symlink is never followed)", rpc, target);
		goto out;
	}
	if (!t.exists) {
		if (mkdirat(parent, name, 0750) < 0) {
			reply_error(r, GRPC_STATUS_INTERNAL, "%s: mkdir %s: %s",
			    rpc, target, strerror(errno));
			goto out;
		}
		made = true;
	}
	if ((dst = tree_open(parent, name, O_PATH | O_DIRECTORY, 0)) < 0) {
		reply_error(r, dst == -ELOOP || dst == -ENOTDIR ?
		    GRPC_STATUS_PERMISSION_DENIED : GRPC_STATUS_INTERNAL,
		    "%s: open %s: %s", rpc, target, strerror(-dst));
		goto undo_dir;
	}
	/* Decide on what was opened, not on what was looked at before. */
	if (!look(dst, "", &t)) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: statx %s: %s", rpc,
		    target, strerror(errno));
		goto undo_dir;
	}
	if (t.mount_root) {
		/* Already there: the same directory, the same way? */
		if (!same(&s, &t)) {
			reply_error(r, GRPC_STATUS_ALREADY_EXISTS, "%s: another "
			    "file system is mounted at %s", rpc, target);
			goto out;
		}
		if (fstatvfs(dst, &sv) == 0 &&
		    !!(sv.f_flag & ST_RDONLY) != readonly) {
			reply_error(r, GRPC_STATUS_ALREADY_EXISTS, "%s: %s is "
			    "already mounted %s", rpc, target,
			    readonly ? "read-write" : "read-only");
			goto out;
		}
		ok = true;
		goto out;
	}
	if ((err = attach(src, dst, readonly)) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: bind at %s: %s", rpc,
		    target, strerror(-err));
		goto undo_dir;
	}
	if (made)
		remember(hp, target);
	ok = true;
	goto out;
undo_dir:
	if (made)
		unlinkat(parent, name, AT_REMOVEDIR);
out:
	if (dst >= 0)
		close(dst);
	close(parent);
	return ok;
}

/*
 * Unmount whatever is at target, then remove it if this plugin made it.
 * Each unmount names one component of the pinned parent, not followed.
 */
static bool
unbind_at(struct hostpath *hp, const char *rpc, const char *volume,
    const char *target, struct rpc_reply *r)
{
	struct where t;
	struct stat st;
	char name[256];
	bool ok = false;
	int parent, i;

	if (!volume_id_ok(volume, r))
		return false;
	if ((parent = open_parent(rpc, target, name, sizeof(name), r)) < 0) {
		if (parent != -ENOENT)
			return false;
		/* Nothing there, nothing to undo: idempotent. */
		if (fstatat(hp->volumes_fd, volume, &st,
		    AT_SYMLINK_NOFOLLOW) < 0) {
			reply_error(r, GRPC_STATUS_NOT_FOUND, "%s: no volume "
			    "%s", rpc, volume);
			return false;
		}
		r->status = GRPC_STATUS_OK;
		r->message[0] = '\0';
		return true;
	}
	if (fchdir(parent) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: enter the directory "
		    "of %s: %s", rpc, target, strerror(errno));
		goto out;
	}
	for (i = 0; i < 8; i++) {
		if (!look(parent, name, &t)) {
			reply_error(r, GRPC_STATUS_INTERNAL, "%s: statx %s: %s",
			    rpc, target, strerror(errno));
			goto out;
		}
		if (!t.mount_root)
			break;
		if (umount2(name, UMOUNT_NOFOLLOW) < 0) {
			reply_error(r, GRPC_STATUS_INTERNAL, "%s: unmount %s: %s",
			    rpc, target, strerror(errno));
			goto out;
		}
	}
	if (i == 0 && fstatat(hp->volumes_fd, volume, &st,
	    AT_SYMLINK_NOFOLLOW) < 0) {
		reply_error(r, GRPC_STATUS_NOT_FOUND, "%s: no volume %s", rpc,
		    volume);
		goto out;
	}
	if (forget(hp, target) && unlinkat(parent, name, AT_REMOVEDIR) < 0 &&
	    errno != ENOENT) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s: rmdir %s: %s", rpc,
		    target, strerror(errno));
		goto out;
	}
	ok = true;
out:
	/* The cwd is the process's: leave none of the CO's paths in it. */
	if (chdir("/") < 0)
		log_warn("%s: chdir /", rpc);
	close(parent);
	return ok;
}

/* A map entry of any CSI request: they share this layout. */
struct any_entry {
	ProtobufCMessage base;
	char *key, *value;
};

/*
 * Tests only, and only when <state-dir>/received/ exists: what the CO
 * asked, in <state-dir>/received/<rpc>.<volume>, replaced by each call:
 * "fs_type X", one "flag X" per mount flag, one "context K=V" per volume
 * context entry, one "secret K=V" per secret (so that a test can see a
 * secret's value arrived: this file is the one place the plugin writes
 * one, and only for tests). The directory is made by the test, never by
 * the plugin.
 */
static void
note_received(struct hostpath *hp, const char *rpc, const char *volume,
    const Csi__V1__VolumeCapability *cap, size_t nctx, void *const *ctx,
    size_t nsec, void *const *sec)
{
	/* mount and block share a union: only a mount access has one. */
	const Csi__V1__VolumeCapability__MountVolume *m =
	    block_capability(cap) ? NULL : cap->mount;
	char path[4200];
	size_t i;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/received/%s.%s",
	    hp->state_dir, rpc, volume) >= sizeof(path) || (fd = open(path,
	    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return;
	dprintf(fd, "fs_type %s\n", m != NULL && m->fs_type != NULL ?
	    m->fs_type : "");
	for (i = 0; m != NULL && i < m->n_mount_flags; i++)
		dprintf(fd, "flag %s\n", m->mount_flags[i]);
	for (i = 0; i < nctx; i++)
		dprintf(fd, "context %s=%s\n",
		    ((const struct any_entry *)ctx[i])->key,
		    ((const struct any_entry *)ctx[i])->value);
	if (m != NULL && m->volume_mount_group != NULL &&
	    m->volume_mount_group[0] != '\0')
		dprintf(fd, "mount_group %s\n", m->volume_mount_group);
	for (i = 0; i < nsec; i++)
		dprintf(fd, "secret %s=%s\n",
		    ((const struct any_entry *)sec[i])->key,
		    ((const struct any_entry *)sec[i])->value);
	close(fd);
}

/*
 * The capability's volume_mount_group, if any, given to the volume's
 * directory vol (O_PATH): its group, group rwx, setgid so that what is
 * made in it keeps the group. Only the root, never recursively. False
 * with r filled when the group is not a gid or the change failed.
 */
static bool
mount_group(const char *rpc, const char *volume, int vol,
    const Csi__V1__VolumeCapability *cap, struct rpc_reply *r)
{
	const char *g = !block_capability(cap) && cap->mount != NULL ?
	    cap->mount->volume_mount_group : NULL;
	unsigned long n;
	struct stat st;
	char *end;
	int fd, err = 0;

	if (g == NULL || g[0] == '\0')
		return true;
	errno = 0;
	n = strtoul(g, &end, 10);
	if (g[0] < '0' || g[0] > '9' || *end != '\0' || errno != 0 ||
	    n == 0 || n >= (gid_t)-1) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s %s: "
		    "volume_mount_group '%s' is not a group id", rpc, volume, g);
		return false;
	}
	/* Setgid where allowed: berth-mounter's sandbox refuses it to a
	 * privileged plugin (EPERM), and the group's rwx is what counts. */
	if ((fd = openat(vol, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fchown(fd, (uid_t)-1, (gid_t)n) < 0 || fstat(fd, &st) < 0 ||
	    (fchmod(fd, (st.st_mode & 07777) | S_ISGID | S_IRWXG) < 0 &&
	    (errno != EPERM || fchmod(fd, (st.st_mode & 07777) | S_IRWXG) <
	    0)))
		err = errno;
	if (fd >= 0)
		close(fd);
	if (err != 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "%s %s: give the volume to "
		    "group %lu: %s", rpc, volume, n, strerror(err));
		return false;
	}
	return true;
}

/* Whether path shows the volume vol mounted, asked without a reply. */
static bool
mounted_at(int vol, const char *path)
{
	struct where v, t;
	char name[256];
	int parent, fd;
	bool yes;

	if ((parent = tree_parent(path, name, sizeof(name))) < 0)
		return false;
	fd = tree_open(parent, name, O_PATH | O_DIRECTORY, 0);
	close(parent);
	if (fd < 0)
		return false;
	yes = look(vol, "", &v) && look(fd, "", &t) && t.mount_root &&
	    same(&v, &t);
	close(fd);
	return yes;
}

/*
 * Strict mode: the volume may be staged at one path only. A record of
 * another path (staged.c) is believed while that path still shows the
 * volume; else it is stale (a reboot, an unmount behind the plugin's
 * back) and replaced. *claimed says a record was written for this call.
 */
static bool
stage_claim(struct hostpath *hp, int vol, const char *volume,
    const char *staging, bool *claimed, struct rpc_reply *r)
{
	char was[4096];
	int got, err;

	*claimed = false;
	if ((got = staged_get(hp, volume, was, sizeof(was))) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "NodeStageVolume %s: read "
		    "%s/staged/%s: %s", volume, hp->state_dir, volume,
		    strerror(-got));
		return false;
	}
	if (got && strcmp(was, staging) == 0)
		return true;
	if (got && mounted_at(vol, was)) {
		reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, "NodeStage"
		    "Volume: volume %s is already staged at %s; it has one "
		    "staging path per node", volume, was);
		return false;
	}
	if (got)
		log_info("volume %s: the record of its staging at %s is "
		    "stale: nothing of it is mounted there", volume, was);
	if ((err = staged_put(hp, volume, staging)) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "NodeStageVolume %s: "
		    "record %s/staged/%s: %s", volume, hp->state_dir, volume,
		    strerror(-err));
		return false;
	}
	*claimed = true;
	return true;
}

static void
node_stage_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodeStageVolumeRequest *req = (const void *)msg;
	Csi__V1__NodeStageVolumeResponse out =
	    CSI__V1__NODE_STAGE_VOLUME_RESPONSE__INIT;
	const char *why;
	bool claimed = false;
	int vol;

	if (!volume_id_ok(req->volume_id, r) ||
	    !path_arg("NodeStageVolume", "staging_target_path",
	    req->staging_target_path, r))
		return;
	if (!capability_supported(req->volume_capability, &why)) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "NodeStageVolume %s: %s", req->volume_id, why);
		return;
	}
	note_received(hp, "NodeStageVolume", req->volume_id,
	    req->volume_capability, req->n_volume_context,
	    (void *const *)req->volume_context, req->n_secrets,
	    (void *const *)req->secrets);
	if ((vol = volume_open(hp, req->volume_id, "NodeStageVolume", r)) < 0)
		return;
	if (!mount_group("NodeStageVolume", req->volume_id, vol,
	    req->volume_capability, r)) {
		close(vol);
		return;
	}
	if (hp->strict && !stage_claim(hp, vol, req->volume_id,
	    req->staging_target_path, &claimed, r)) {
		close(vol);
		return;
	}
	if (hp->fuse ? fuse_stage(hp, vol, req->staging_target_path, r) :
	    bind_at(hp, "NodeStageVolume", vol, req->staging_target_path,
	    false, r))
		reply_ok(r, &out.base);
	else if (claimed)
		staged_drop(hp, req->volume_id);
	close(vol);
}

/* Strict mode: the volume is no longer staged at path. */
static void
stage_release(struct hostpath *hp, const char *volume, const char *path)
{
	char was[4096];
	int err;

	if (staged_get(hp, volume, was, sizeof(was)) == 1 &&
	    strcmp(was, path) == 0 && (err = staged_drop(hp, volume)) < 0)
		log_warnx("NodeUnstageVolume %s: forget %s: %s (a stale "
		    "record, not believed)", volume, path, strerror(-err));
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
	if (hp->strict)
		stage_release(hp, req->volume_id, req->staging_target_path);
	block_detach_all(hp, req->volume_id);
	reply_ok(r, &out.base);
}

/* The staging mount of the volume vol, pinned; -1 with r filled. */
static int
open_staging(int vol, const char *volume, const char *staging,
    struct rpc_reply *r)
{
	struct where v, s;
	char name[256];
	int parent, fd;

	if ((parent = open_parent("NodePublishVolume", staging, name,
	    sizeof(name), r)) < 0 && parent != -ENOENT)
		return -1;
	fd = parent < 0 ? parent : tree_open(parent, name,
	    O_PATH | O_DIRECTORY, 0);
	if (parent >= 0)
		close(parent);
	if (fd < 0 || !look(vol, "", &v) || !look(fd, "", &s) ||
	    !s.mount_root || (!same(&v, &s) && !fuse_ours(s.dev))) {
		reply_error(r, GRPC_STATUS_FAILED_PRECONDITION,
		    "NodePublishVolume: volume %s is not staged at %s", volume,
		    staging);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void
node_publish_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodePublishVolumeRequest *req = (const void *)msg;
	Csi__V1__NodePublishVolumeResponse out =
	    CSI__V1__NODE_PUBLISH_VOLUME_RESPONSE__INIT;
	const char *why;
	int vol, staged;

	if (!volume_id_ok(req->volume_id, r) ||
	    !path_arg("NodePublishVolume", "target_path", req->target_path, r) ||
	    !path_arg("NodePublishVolume", "staging_target_path",
	    req->staging_target_path, r))
		return;
	if (!capability_supported(req->volume_capability, &why)) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
		    "NodePublishVolume %s: %s", req->volume_id, why);
		return;
	}
	note_received(hp, "NodePublishVolume", req->volume_id,
	    req->volume_capability, req->n_volume_context,
	    (void *const *)req->volume_context, req->n_secrets,
	    (void *const *)req->secrets);
	if (block_publish(hp, req, r) ||
	    (vol = volume_open(hp, req->volume_id, "NodePublishVolume",
	    r)) < 0)
		return;
	if (!mount_group("NodePublishVolume", req->volume_id, vol,
	    req->volume_capability, r)) {
		close(vol);
		return;
	}
	staged = open_staging(vol, req->volume_id, req->staging_target_path,
	    r);
	close(vol);
	if (staged < 0)
		return;
	if (bind_at(hp, "NodePublishVolume", staged, req->target_path,
	    req->readonly, r))
		reply_ok(r, &out.base);
	close(staged);
}

static void
node_unpublish_volume(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__NodeUnpublishVolumeRequest *req = (const void *)msg;
	Csi__V1__NodeUnpublishVolumeResponse out =
	    CSI__V1__NODE_UNPUBLISH_VOLUME_RESPONSE__INIT;

	if (!path_arg("NodeUnpublishVolume", "target_path", req->target_path,
	    r) || block_unpublish(hp, req->volume_id, req->target_path, r) ||
	    !unbind_at(hp, "NodeUnpublishVolume", req->volume_id,
	    req->target_path, r))
		return;
	reply_ok(r, &out.base);
}

/*
 * The volume's condition (VOLUME_CONDITION): abnormal when its directory
 * under the state directory is gone or is no directory any more. Its
 * mounts still show the directory they were made from, so usage is read
 * all the same; the condition is what tells the CO.
 */
static void
volume_condition(struct hostpath *hp, const char *id,
    Csi__V1__VolumeCondition *c, char *msg, size_t n)
{
	struct where w;

	msg[0] = '\0';
	if (!look(hp->volumes_fd, id, &w))
		snprintf(msg, n, "%s/%s cannot be read: %s", hp->volumes_dir,
		    id, strerror(errno));
	else if (!w.exists)
		snprintf(msg, n, "%s/%s is gone", hp->volumes_dir, id);
	else if (!w.dir)
		snprintf(msg, n, "%s/%s is not a directory", hp->volumes_dir,
		    id);
	c->abnormal = msg[0] != '\0';
	c->message = msg;
}

/* The file system's usage, an optional field (strict mode leaves it out). */
static void
usage_of(const struct statvfs *sv, Csi__V1__VolumeUsage *bytes,
    Csi__V1__VolumeUsage *inodes)
{
	bytes->unit = CSI__V1__VOLUME_USAGE__UNIT__BYTES;
	bytes->total = (int64_t)(sv->f_blocks * sv->f_frsize);
	bytes->available = (int64_t)(sv->f_bavail * sv->f_frsize);
	bytes->used = (int64_t)((sv->f_blocks - sv->f_bfree) * sv->f_frsize);
	inodes->unit = CSI__V1__VOLUME_USAGE__UNIT__INODES;
	inodes->total = (int64_t)sv->f_files;
	inodes->available = (int64_t)sv->f_favail;
	inodes->used = (int64_t)(sv->f_files - sv->f_ffree);
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
	Csi__V1__VolumeCondition cond = CSI__V1__VOLUME_CONDITION__INIT;
	char why[4200];
	struct statvfs sv;
	int fd, err;

	if (!volume_id_ok(req->volume_id, r) ||
	    !path_arg("NodeGetVolumeStats", "volume_path", req->volume_path,
	    r))
		return;
	volume_condition(hp, req->volume_id, &cond, why, sizeof(why));
	if ((fd = tree_open(AT_FDCWD, req->volume_path, O_PATH, 0)) >= 0 &&
	    fstatvfs(fd, &sv) < 0) {
		err = -errno;
		close(fd);
		fd = err;
	}
	if (fd < 0) {
		reply_error(r, fd == -ENOENT ? GRPC_STATUS_NOT_FOUND :
		    GRPC_STATUS_INTERNAL, "NodeGetVolumeStats: statvfs %s: %s "
		    "(a symlink is never followed)", req->volume_path,
		    strerror(-fd));
		return;
	}
	close(fd);
	usage_of(&sv, &bytes, &inodes);
	if (optional_fields(hp)) {
		out.n_usage = 2;
		out.usage = usage;
	}
	out.volume_condition = &cond;
	reply_ok(r, &out.base);
}

static void
node_get_capabilities(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	Csi__V1__NodeGetCapabilitiesResponse out =
	    CSI__V1__NODE_GET_CAPABILITIES_RESPONSE__INIT;
	/* Two unknown entries, five always, and single-node multi-writer. */
	Csi__V1__NodeServiceCapability caps[8], *list[8];
	Csi__V1__NodeServiceCapability__RPC rpc[8];
	size_t i;

	for (i = 0; i < 8; i++) {
		csi__v1__node_service_capability__init(&caps[i]);
		csi__v1__node_service_capability__rpc__init(&rpc[i]);
		caps[i].type_case = CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC;
		caps[i].rpc = &rpc[i];
		list[i] = &caps[i];
	}
	out.n_capabilities = 0;
	if (hp->fault_unknown_caps) {
		/* Unknown entries first: a client must read past them. */
		rpc[0].type = HOSTPATH_UNKNOWN_CAP;
		caps[1].type_case =
		    CSI__V1__NODE_SERVICE_CAPABILITY__TYPE__NOT_SET;
		out.n_capabilities = 2;
	}
	rpc[out.n_capabilities++].type =
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME;
	rpc[out.n_capabilities++].type =
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__STAGE_UNSTAGE_VOLUME;
	rpc[out.n_capabilities++].type =
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME_STATS;
	rpc[out.n_capabilities++].type =
	    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION;
	/* --no-mount-group: as plugins that leave ownership to the CO. */
	if (!hp->no_mount_group)
		rpc[out.n_capabilities++].type =
		    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_MOUNT_GROUP;
	/* The CSI 1.5 access modes (topology.c says whether). */
	if (topology_snmw(hp))
		rpc[out.n_capabilities++].type =
		    CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__SINGLE_NODE_MULTI_WRITER;
	out.capabilities = list;
	reply_ok(r, &out.base);
}

static void
node_get_info(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	Csi__V1__NodeGetInfoResponse out = CSI__V1__NODE_GET_INFO_RESPONSE__INIT;
	Csi__V1__Topology topo;
	Csi__V1__Topology__SegmentsEntry seg, *segs[1];

	out.node_id = (char *)hp->node_id;
	out.max_volumes_per_node = topology_max_volumes(hp);
	if (topology_own(hp, &topo, &seg, segs))
		out.accessible_topology = &topo;
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
