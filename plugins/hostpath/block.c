/*
 * block.c: block access (--block), over loop devices.
 *
 * A volume's backing file is <state-dir>/blocks/<volume>, BLOCK_BYTES,
 * made at its first block publish and removed by DeleteVolume. A
 * NodePublishVolume of a block capability attaches a free loop device to
 * it (read-only when asked) and binds the device node onto the target, a
 * file it creates (CSI: the plugin makes a block target). While attached
 * the node is root:root 0660: for a CO to give its group to the workload
 * (berth-mounter does, for the task's group; SECURITY.md, BindVolume).
 * NodeUnpublishVolume unmounts the target, removes it and detaches;
 * NodeUnstageVolume and DeleteVolume detach whatever of the volume is
 * still attached. A detached node is root:root 0600 again.
 * Must not: detach a loop device whose backing file is not the volume's,
 * or act on a target that is a directory (node.c's).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "hostpath.h"
#include "log.h"

#define BLOCK_BYTES	(16 * 1024 * 1024)
#define LOOP_MAJOR_NR	7
#define LOOP_TRIES	8	/* another took the free one: ask again */

bool hostpath_block;

bool
block_capability(const Csi__V1__VolumeCapability *cap)
{
	return cap != NULL && cap->access_type_case ==
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
}

/* <state-dir>/blocks/, made once, pinned (O_PATH); -errno. */
static int
blocks_dir(struct hostpath *hp)
{
	static int fd = -1;
	int state;

	if (fd >= 0)
		return fd;
	if ((state = tree_open(AT_FDCWD, hp->state_dir, O_PATH | O_DIRECTORY,
	    0)) < 0)
		return state;
	if (mkdirat(state, "blocks", 0700) < 0 && errno != EEXIST)
		fd = -errno;
	else
		fd = tree_open(state, "blocks", O_PATH | O_DIRECTORY, 0);
	close(state);
	return fd;
}

/* The volume's backing file, made when create; -errno. */
static int
backing(struct hostpath *hp, const char *volume, bool create)
{
	struct stat st;
	int dir, fd, err = 0;

	if ((dir = blocks_dir(hp)) < 0)
		return dir;
	if ((fd = tree_open(dir, volume, O_RDWR | (create ? O_CREAT : 0),
	    0600)) < 0)
		return fd;
	if (fstat(fd, &st) < 0 || (st.st_size == 0 && ftruncate(fd,
	    BLOCK_BYTES) < 0))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	if (err < 0)
		close(fd);
	return err < 0 ? err : fd;
}

/* The loop device rdev, open, if it is attached to back; -errno. */
static int
loop_of(dev_t rdev, const struct stat *back)
{
	struct loop_info64 li;
	struct stat st;
	char path[64];
	int fd, err = 0;

	if (major(rdev) != LOOP_MAJOR_NR)
		return -EPERM;
	snprintf(path, sizeof(path), "/dev/loop%u", minor(rdev));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || ioctl(fd, LOOP_GET_STATUS64, &li) < 0)
		err = -errno;
	else if (st.st_rdev != rdev || li.lo_device != back->st_dev ||
	    li.lo_inode != back->st_ino)
		err = -EPERM;
	if (err < 0)
		close(fd);
	return err < 0 ? err : fd;
}

/* Detach the loop device rdev if back is its file: 1, 0 (not), -errno. */
static int
detach(dev_t rdev, const struct stat *back)
{
	int fd, err = 0;

	if ((fd = loop_of(rdev, back)) < 0)
		return fd == -ENXIO || fd == -EPERM ? 0 : fd;
	/* As the kernel made it, before anyone else may attach it. */
	if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0600) < 0 ||
	    ioctl(fd, LOOP_CLR_FD) < 0)
		err = -errno;
	close(fd);
	return err < 0 ? err : 1;
}

void
block_detach_all(struct hostpath *hp, const char *volume)
{
	struct dirent *de;
	struct stat back, st;
	char path[300];
	int fd, err;
	DIR *d;

	if (!hostpath_block || (fd = backing(hp, volume, false)) < 0)
		return;
	err = fstat(fd, &back);
	close(fd);
	if (err < 0 || (d = opendir("/sys/block")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", de->d_name);
		if (stat(path, &st) < 0 || !S_ISBLK(st.st_mode))
			continue;
		if ((err = detach(st.st_rdev, &back)) < 0)
			log_warnx("volume %s: detach %s: %s", volume, path,
			    strerror(-err));
		else if (err == 1)
			log_info("volume %s: detached %s", volume, path);
	}
	closedir(d);
}

void
block_delete(struct hostpath *hp, const char *volume)
{
	int dir;

	block_detach_all(hp, volume);
	if (hostpath_block && (dir = blocks_dir(hp)) >= 0 &&
	    unlinkat(dir, volume, 0) < 0 && errno != ENOENT)
		log_warn("DeleteVolume %s: remove its backing file", volume);
}

/* A free loop device attached to back, open; -errno. */
static int
attach_loop(int back, bool ro)
{
	struct loop_config lc;
	char path[64];
	int ctl, n, fd = -EBUSY, i;

	memset(&lc, 0, sizeof(lc));
	lc.fd = (unsigned)back;
	lc.info.lo_flags = ro ? LO_FLAGS_READ_ONLY : 0;
	if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) < 0)
		return -errno;
	for (i = 0; i < LOOP_TRIES && fd == -EBUSY; i++) {
		if ((n = ioctl(ctl, LOOP_CTL_GET_FREE)) < 0) {
			fd = -errno;
			break;
		}
		snprintf(path, sizeof(path), "/dev/loop%d", n);
		if ((fd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC |
		    O_NOFOLLOW)) < 0)
			fd = -errno;
		else if (ioctl(fd, LOOP_CONFIGURE, &lc) < 0) {
			n = errno;
			close(fd);
			fd = -n;
		}
	}
	close(ctl);
	return fd;
}

/* Bind the device node of loop onto the file name in parent. */
static int
bind_node(int loop, int parent, const char *name, bool ro)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
	int dst, tree, err = 0;

	/* A plain file, never one already there: the target is ours. */
	if ((dst = tree_open(parent, name, O_WRONLY | O_CREAT | O_EXCL,
	    0600)) < 0)
		return dst;
	close(dst);
	if ((dst = tree_open(parent, name, O_PATH, 0)) < 0)
		return dst;
	if ((tree = open_tree(loop, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
	    AT_EMPTY_PATH)) < 0 || (ro && mount_setattr(tree, "",
	    AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) || move_mount(tree, "",
	    dst, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		err = -errno;
	if (tree >= 0)
		close(tree);
	close(dst);
	if (err < 0)
		unlinkat(parent, name, 0);
	return err;
}

/* Is name in parent the volume's device, published? */
static bool
published(struct hostpath *hp, int parent, const char *name,
    const char *volume)
{
	struct stat st, back;
	int fd, loop;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISBLK(st.st_mode) || (fd = backing(hp, volume, false)) < 0)
		return false;
	loop = fstat(fd, &back) < 0 ? -1 : loop_of(st.st_rdev, &back);
	close(fd);
	if (loop >= 0)
		close(loop);
	return loop >= 0;
}

/* Attach a loop device to the volume's file and bind it at name. */
static int
publish_at(struct hostpath *hp, const char *id, int parent,
    const char *name, bool ro, const char **what)
{
	struct stat back, st;
	int fd, loop, err;

	*what = "open the backing file";
	if ((fd = backing(hp, id, true)) < 0)
		return fd;
	*what = "attach a loop device";
	if ((err = loop = attach_loop(fd, ro)) >= 0) {
		*what = "make it root:root 0660, then bind it at the target";
		err = fchown(loop, 0, 0) < 0 || fchmod(loop, 0660) < 0 ?
		    -errno : bind_node(loop, parent, name, ro);
		if (err < 0 && fstat(fd, &back) == 0 && fstat(loop, &st) == 0) {
			close(loop);
			loop = -1;
			detach(st.st_rdev, &back);
		}
		if (loop >= 0)
			close(loop);
	}
	close(fd);
	return err;
}

bool
block_publish(struct hostpath *hp,
    const Csi__V1__NodePublishVolumeRequest *req, struct rpc_reply *r)
{
	Csi__V1__NodePublishVolumeResponse out =
	    CSI__V1__NODE_PUBLISH_VOLUME_RESPONSE__INIT;
	const char *id = req->volume_id, *what = "";
	char name[256];
	int vol, parent, err = 0;

	if (!block_capability(req->volume_capability))
		return false;
	if ((vol = volume_open(hp, id, "NodePublishVolume", r)) < 0)
		return true;
	close(vol);
	if ((parent = tree_parent(req->target_path, name, sizeof(name))) < 0) {
		reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, "NodePublish"
		    "Volume %s: the directory of %s: %s", id, req->target_path,
		    strerror(-parent));
		return true;
	}
	if (!published(hp, parent, name, id) && (err = publish_at(hp, id,
	    parent, name, req->readonly, &what)) < 0)
		reply_error(r, err == -EEXIST ? GRPC_STATUS_ALREADY_EXISTS :
		    GRPC_STATUS_INTERNAL, "NodePublishVolume %s: %s (%s): %s",
		    id, what, req->target_path, strerror(-err));
	else
		reply_ok(r, &out.base);
	close(parent);
	return true;
}

bool
block_unpublish(struct hostpath *hp, const char *volume, const char *target,
    struct rpc_reply *r)
{
	Csi__V1__NodeUnpublishVolumeResponse out =
	    CSI__V1__NODE_UNPUBLISH_VOLUME_RESPONSE__INIT;
	struct stat st, back;
	char name[256], path[300];
	int parent, fd, i, err = 0;

	if (!hostpath_block || !volume_id_ok(volume, r) ||
	    (parent = tree_parent(target, name, sizeof(name))) < 0)
		return false;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    S_ISDIR(st.st_mode)) {
		close(parent);
		return false;	/* node.c's, or nothing there */
	}
	/* Through the pinned parent, the last name not followed. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", parent, name);
	for (i = 0; i < 8 && S_ISBLK(st.st_mode); i++) {
		if ((fd = backing(hp, volume, false)) >= 0) {
			if (fstat(fd, &back) == 0 && detach(st.st_rdev,
			    &back) < 0)
				log_warn("volume %s: detach", volume);
			close(fd);
		}
		if (umount2(path, UMOUNT_NOFOLLOW) < 0 || fstatat(parent,
		    name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			err = errno;
			break;
		}
	}
	if (err == 0 && S_ISREG(st.st_mode) && unlinkat(parent, name, 0) < 0)
		err = errno;
	close(parent);
	if (err != 0)
		reply_error(r, GRPC_STATUS_INTERNAL, "NodeUnpublishVolume %s: "
		    "%s: %s", volume, target, strerror(err));
	else
		reply_ok(r, &out.base);
	return true;
}
