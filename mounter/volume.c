/*
 * volume.c: the mount verbs (prepare a plugin, a volume's directory, a
 * task; bind, unbind; cleanup.c cleans up): every mount made in the host,
 * with open_tree / mount_setattr / move_mount on descriptors pinned by
 * resolve.c; a bind's flags are set while it is still detached.
 * Must not: resolve a path but through resolve.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "mounter.h"

static int
attach(int src, int dst, const struct mount_attr *attr)
{
	int tree, r = 0;

	if ((tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
	    AT_EMPTY_PATH)) < 0)
		return -errno;
	if ((attr != NULL && mount_setattr(tree, "", AT_EMPTY_PATH,
	    (struct mount_attr *)attr, sizeof(*attr)) < 0) ||
	    move_mount(tree, "", dst, "", MOVE_MOUNT_F_EMPTY_PATH |
	    MOVE_MOUNT_T_EMPTY_PATH) < 0)
		r = -errno;
	close(tree);
	return r;
}

/* Never what a plugin stacked on it: ERROR_PERMISSION. */
Berth__ErrorCode
volume_shared_root(struct mounter *m, const char *rel, int *fdp, char *why)
{
	int fd, r;

	if ((fd = res_self_bind(m->data_fd, rel, O_PATH)) < 0)
		return fail_errno(why, -fd, "opening", rel);
	if ((r = res_is_mount(fd, "")) == 1 && fdp != NULL)
		*fdp = fd;
	else
		close(fd);
	return r == 1 ? OK : r < 0 ? fail_errno(why, -r, "checking", rel) :
	    fail(why, BERTH__ERROR_CODE__ERROR_CONFLICT, "%s is not a shared "
	    "mount yet: prepare the plugin first", rel);
}

/* Bind the directory at rel onto itself, once, and make it shared. */
static Berth__ErrorCode
make_shared_mount(struct mounter *m, const char *rel, char *why)
{
	struct mount_attr attr = { .propagation = MS_SHARED };
	int fd, r;

	if ((fd = res_mkdirs(m->data_fd, rel)) < 0 && fd != -EXDEV)
		return fail_errno(why, -fd, "creating", rel);
	if (fd >= 0) {
		r = attach(fd, fd, NULL);
		close(fd);
		if (r < 0)
			return fail_errno(why, -r, "binding", rel);
	}
	/* The path now leads to the new mount. */
	if ((fd = res_self_bind(m->data_fd, rel, O_PATH)) < 0)
		return fail_errno(why, -fd, "opening", rel);
	r = mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0 ?
	    -errno : 0;
	close(fd);
	return r < 0 ? fail_errno(why, -r, "making a shared mount of", rel) :
	    OK;
}

/*
 * The directory fd (opened beneath the data dir, so one berth made, and a
 * directory, so never a hard link), with sub made in it, root's, to its
 * owner: taken back by descriptor first, as the owner may have shut it.
 */
Berth__ErrorCode
give(int fd, const char *rel, const char *sub, uid_t uid, gid_t gid,
    mode_t mode, char *why)
{
	int dir, sfd = -1, r;

	if ((r = dir = res_take_back(fd, 0)) >= 0 && sub != NULL &&
	    (r = sfd = res_mkdirs(dir, sub)) >= 0 && !res_trusted(sfd))
		r = -EPERM;
	if (r >= 0)
		r = fchmod(dir, mode) < 0 || fchown(dir, uid, gid) < 0 ?
		    -errno : 0;
	if (sfd >= 0)
		close(sfd);
	if (dir >= 0)
		close(dir);
	close(fd);
	return r < 0 ? fail_errno(why, -r, "giving its owner", rel) : OK;
}

Berth__ErrorCode
volume_prepare_plugin(struct mounter *m, const struct mreq *rq,
    struct mreply *out, char *why)
{
	Berth__ErrorCode code;
	int fd;

	if ((code = make_shared_mount(m, rq->path2, why)) != OK ||
	    (code = make_shared_mount(m, rq->path, why)) != OK || rq->gid == 0)
		return code;
	/* Its socket dir holds no mount but its own self-bind. */
	if ((code = volume_shared_root(m, rq->path2, &fd, why)) != OK)
		return code;
	if (unlinkat(fd, "csi.sock", 0) < 0 && errno != ENOENT) /* stale */
		log_warn("prepare_plugin: removing %s/csi.sock", rq->path2);
	return give(fd, rq->path2, NULL, rq->uid, rq->gid, 02750, why);
}

/* rel beneath root, crossing no mount but one on rel itself. */
static int
open_target(int root, const char *rel)
{
	char dir[MREQ_PATH];
	const char *leaf = res_split(rel, dir, sizeof(dir));
	int fd, r;

	if ((fd = res_open_here(root, dir, O_PATH | O_DIRECTORY)) < 0)
		return fd;
	r = res_open(fd, leaf, O_PATH, 0);
	close(fd);
	return r;
}

/*
 * The plugin's own user: root, or the task uid that PreparePlugin gave its
 * socket dir, if it is a task's (never berth's own, nor outside
 * --task-ids: the supervisor named that owner).
 */
static Berth__ErrorCode
plugin_user(struct mounter *m, const char *alloc, uid_t *uid, char *why)
{
	Berth__ErrorCode code;
	char rel[MREQ_PATH];
	struct stat st;
	int fd;

	layout_plugin_socket_dir(rel, sizeof(rel), alloc);
	if ((code = volume_shared_root(m, rel, &fd, why)) != OK)
		return code;
	*uid = fstat(fd, &st) < 0 ? (uid_t)-1 : st.st_uid;	/* refused */
	close(fd);
	return *uid == 0 ? OK : task_ids(m, *uid, *uid, "", why);
}

Berth__ErrorCode
volume_prepare(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	Berth__ErrorCode code;
	char dir[MREQ_PATH];
	const char *sub = rq->path + strlen(rq->path2) + 1;
	uid_t uid = 0;
	int root, fd, r;

	if ((rq->palloc[0] != '\0' && (code = plugin_user(m, rq->palloc, &uid,
	    why)) != OK) ||
	    (code = volume_shared_root(m, rq->path2, &root, why)) != OK)
		return code;
	res_split(sub, dir, sizeof(dir));
	/* A staging directory, or a publish target's parent (the plugin
	 * creates the target, per CSI), is the plugin's user's; never a
	 * mount (res_mkdirs: -EXDEV), and by descriptor. */
	if ((fd = res_mkdirs(root, rq->staging ? sub : dir)) >= 0) {
		r = fchownat(fd, "", uid, (gid_t)-1, AT_EMPTY_PATH) < 0 ?
		    -errno : 0;
		close(fd);
		fd = r;
	}
	if (fd >= 0 || (rq->staging && fd == -EXDEV))
		fd = open_target(root, sub);
	r = fd < 0 ? fd : res_is_mount(fd, "");
	close(root);
	if (fd >= 0)
		close(fd);
	if (r < 0 && r != -ENOENT)
		return fail_errno(why, -r, "preparing", rq->path);
	out->mounted = r == 1;
	return OK;
}

/*
 * allocs/<alloc>/<task>/: root's, the task's group may write in it, and
 * sticky, so that it cannot rename or remove volumes/ (root's, 0755).
 * It may be BindVolume's shared self-bind already.
 */
Berth__ErrorCode
volume_prepare_task(struct mounter *m, const struct mreq *rq,
    struct mreply *out, char *why)
{
	int fd;

	if ((fd = res_mkdirs(m->data_fd, rq->path)) == -EXDEV)
		fd = res_self_bind(m->data_fd, rq->path, O_PATH);
	if (fd < 0)
		return fail_errno(why, -fd, "creating", rq->path);
	return give(fd, rq->path, "volumes", 0, rq->gid, 01775, why);
}

/* Create the bind target, a directory or a file like the source, in
 * volumes/ of the task's directory, a self-bind (volume_bind()). */
static int
bind_target(struct mounter *m, const char *rel, bool dir)
{
	char parent[MREQ_PATH], task[MREQ_PATH];
	const char *leaf = res_split(rel, parent, sizeof(parent));
	struct stat st;
	int pfd, fd;

	res_split(parent, task, sizeof(task));
	if ((fd = res_self_bind(m->data_fd, task, O_PATH)) < 0)
		return fd;
	pfd = res_trusted(fd) ? res_mkdirs(fd, parent + strlen(task) + 1) :
	    -EPERM;
	close(fd);
	if (pfd < 0)
		return pfd;
	/* What holds a mount point: no one but root can rename it. */
	if (!res_trusted(pfd))
		fd = -EPERM;
	else if (dir && mkdirat(pfd, leaf, 0755) < 0 && errno != EEXIST)
		fd = -errno;
	else {
		/* O_EXCL: an existing entry is never opened for writing. */
		if (!dir && (fd = res_open(pfd, leaf, O_WRONLY | O_CREAT |
		    O_EXCL, 0600)) >= 0)
			close(fd);
		fd = res_open(pfd, leaf, O_PATH, 0);
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || (dir ? !S_ISDIR(st.st_mode) :
	    !S_ISREG(st.st_mode)))) {
		close(fd);
		fd = -ENOTDIR;
	}
	close(pfd);
	return fd;
}

/*
 * A read-write volume's root directory, if root's, for the task's group
 * (a task's gid): group rwx and setgid, others at most r-x (give()'s
 * order keeps S_ISGID). Only the root, never what is in it. A block
 * device asked for as one: the one bind without nodev; read-write, the
 * node, if the plugin published it root:root with group rw, the group's.
 */
static Berth__ErrorCode
group_root(struct mounter *m, const struct mreq *rq, int fd,
    const struct stat *st, struct mount_attr *attr, char *why)
{
	bool dev = rq->block && S_ISBLK(st->st_mode);
	Berth__ErrorCode code;

	if (dev)
		attr->attr_set &= ~MOUNT_ATTR_NODEV;
	if (rq->gid == 0 || rq->read_only || st->st_uid != 0 || (dev ?
	    st->st_gid != 0 || (st->st_mode & 060) != 060 :
	    !S_ISDIR(st->st_mode)))
		return OK;
	if ((code = task_ids(m, rq->gid, rq->gid, "", why)) != OK)
		return code;
	if (dev)
		return fchownat(fd, "", (uid_t)-1, rq->gid, AT_EMPTY_PATH) < 0 ?
		    fail_errno(why, errno, "giving its group", rq->path) : OK;
	if ((fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return fail_errno(why, errno, "opening", rq->path);
	return give(fd, rq->path, NULL, 0, rq->gid, (st->st_mode & 05) == 05 ?
	    02775 : 02770, why);
}

Berth__ErrorCode
volume_bind(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
		    (rq->read_only ? MOUNT_ATTR_RDONLY : 0),
		.propagation = MS_PRIVATE,
	};
	Berth__ErrorCode code = OK;
	char root[MREQ_PATH], vols[MREQ_PATH], task[MREQ_PATH];
	int sfd, tfd = -1, r;
	struct stat st;

	/* The task's directory, a shared self-bind: a bind made or taken in
	 * it reaches a running task's (rslave) copy of it (SECURITY.md). */
	res_split(rq->path2, vols, sizeof(vols));
	res_split(vols, task, sizeof(task));
	if ((code = make_shared_mount(m, task, why)) != OK)
		return code;
	/* Through berth's self-bind and the plugin's tree, crossing no
	 * mount but the publish target's own. */
	layout_plugin_root(root, sizeof(root), rq->type, rq->plugin);
	if ((code = volume_shared_root(m, root, &r, why)) != OK)
		return code;
	sfd = open_target(r, rq->path + strlen(root) + 1);
	close(r);
	if (sfd < 0)
		return fail_errno(why, -sfd, "opening the publish target",
		    rq->path);
	if (fstat(sfd, &st) < 0 || (!S_ISDIR(st.st_mode) &&
	    !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)))
		code = fail(why, BERTH__ERROR_CODE__ERROR_PERMISSION, "%s is "
		    "not a directory, file or block device", rq->path);
	else if ((r = res_is_mount(sfd, "")) != 1)
		code = r < 0 ? fail_errno(why, -r, "checking", rq->path) :
		    fail(why, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "%s is not "
		    "published: nothing is mounted there", rq->path);
	else if ((tfd = bind_target(m, rq->path2, S_ISDIR(st.st_mode))) < 0)
		code = fail_errno(why, -tfd, "creating", rq->path2);
	else if ((r = res_is_mount(tfd, "")) != 0)
		code = r < 0 ? fail_errno(why, -r, "checking", rq->path2) :
		    fail(why, BERTH__ERROR_CODE__ERROR_CONFLICT, "%s is "
		    "already a mount point: unbind it first", rq->path2);
	/* A detached copy, its flags set before anyone can see it. */
	else if ((code = group_root(m, rq, sfd, &st, &attr, why)) == OK &&
	    (r = attach(sfd, tfd, &attr)) < 0)
		code = fail_errno(why, -r, "binding into", rq->path2);
	if (tfd >= 0)
		close(tfd);
	close(sfd);
	return code;
}

Berth__ErrorCode
volume_unbind(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	char parent[MREQ_PATH], task[MREQ_PATH];
	const char *leaf = res_split(rq->path, parent, sizeof(parent));
	int pfd, r;

	/* volumes/, through the task directory's self-bind (BindVolume). */
	res_split(parent, task, sizeof(task));
	if ((r = res_self_bind(m->data_fd, task, O_PATH)) < 0)
		return fail_errno(why, -r, "opening", task);
	pfd = res_open_here(r, parent + strlen(task) + 1, O_PATH | O_DIRECTORY);
	close(r);
	if (pfd < 0)
		return fail_errno(why, -pfd, "opening", parent);
	/* A bind whose FUSE server died answers ENOTCONN: a mount. */
	if ((r = res_unmount_all(pfd, leaf)) == -ENOTCONN && umount2(leaf,
	    MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
		r = res_unmount_all(pfd, leaf);
	if (r >= 0)
		res_remove(pfd, leaf);
	close(pfd);
	return r < 0 ? fail_errno(why, -r, "unmounting", rq->path) : OK;
}
