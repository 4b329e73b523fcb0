/*
 * resolve.c: paths beneath a pinned directory, never through a symlink.
 *
 * Owns: every lookup, creation, mount-point test, unmount and removal the
 * mounter makes. Each goes from a directory descriptor that is already
 * pinned, with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), one component at a time when creating, so a
 * symlink planted or swapped in anywhere makes the call fail (ELOOP)
 * instead of leading it elsewhere.
 * Must not: take a path from a peer (callers pass layout_* output only),
 * or follow a symlink.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "mounter.h"

/* A stack of mounts deeper than this on one entry is not ours. */
#define UNMOUNT_MAX 16

int
res_openat2(int dirfd, const char *rel, int flags, mode_t mode, uint64_t res)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
		    RESOLVE_NO_MAGICLINKS | res,
	};
	int fd;

	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

const char *
res_split(const char *rel, char *parent, size_t n)
{
	const char *slash = strrchr(rel, '/');

	snprintf(parent, n, "%.*s", slash ? (int)(slash - rel) : 1,
	    slash ? rel : ".");
	return slash ? slash + 1 : rel;
}

/*
 * Root's, and writable by no one else; or sticky, where no one else can
 * rename or remove what root made in it.
 */
bool
res_trusted(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
	    (!(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX));
}

/* Ownership by descriptor, and only of a directory: never a hard link. */
int
res_take_back(int fd, gid_t gid)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (fchownat(fd, "", 0, gid, AT_EMPTY_PATH) < 0)
		return -errno;
	return res_open_here(fd, ".", O_RDONLY | O_DIRECTORY);
}

/* Its listing, not a lookup: what is beneath any mount stacked there. */
int
res_entries(int fd, const char *leaf, ino_t *ino)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	if ((fd = res_open_here(fd, ".", O_RDONLY | O_DIRECTORY)) < 0)
		return fd;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	for (; (de = readdir(d)) != NULL; n++)
		if (leaf != NULL && strcmp(de->d_name, leaf) == 0)
			*ino = de->d_ino;
	closedir(d);
	return n;
}

/*
 * at/rel, a directory: on at's mount, or berth's bind of it onto itself
 * (its root is the very directory beneath: the same device, and the inode
 * that the parent's listing names). Never what someone stacked there.
 */
int
res_self_bind(int at, const char *rel, int flags)
{
	char parent[MREQ_PATH];
	const char *leaf = res_split(rel, parent, sizeof(parent));
	struct stat pst, st;
	ino_t ino = 0;
	int pfd, fd;

	if ((pfd = res_open_here(at, parent, O_PATH | O_DIRECTORY)) < 0)
		return pfd;
	if ((fd = res_open_here(pfd, leaf, flags | O_DIRECTORY)) == -EXDEV &&
	    (fd = res_open(pfd, leaf, flags | O_DIRECTORY, 0)) >= 0 &&
	    (fstat(pfd, &pst) < 0 || fstat(fd, &st) < 0 ||
	    st.st_dev != pst.st_dev || res_entries(pfd, leaf, &ino) < 0 ||
	    ino != st.st_ino)) {
		close(fd);
		fd = -EXDEV;
	}
	close(pfd);
	return fd;
}

/*
 * Every directory is on dirfd's mount (a mount at the last: -EXDEV), and
 * each on the way to the last is trusted (res_trusted): no one but root
 * can rename one, or what berth makes in it.
 */
int
res_mkdirs(int dirfd, const char *rel)
{
	char buf[MREQ_PATH], *comp, *save = NULL;
	int cur = dirfd, next;

	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (comp = strtok_r(buf, "/", &save); comp != NULL;
	    comp = strtok_r(NULL, "/", &save)) {
		if (cur != dirfd && !res_trusted(cur))
			next = -EPERM;
		else if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST)
			next = -errno;
		else
			next = res_open_here(cur, comp, O_PATH | O_DIRECTORY);
		if (cur != dirfd)
			close(cur);
		if (next < 0)
			return next;
		cur = next;
	}
	return cur == dirfd ? -EINVAL : cur;
}

/* name: "" for dirfd itself, or one component, not followed. */
int
res_is_mount(int dirfd, const char *name)
{
	struct statx stx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 :
	    AT_EMPTY_PATH), STATX_TYPE, &stx) < 0)
		return -errno;
	if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return -EOPNOTSUPP;
	return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

/* name is one component (an identifier or a fixed name): no resolution. */
int
res_unmount_all(int dirfd, const char *name)
{
	int n, r;

	if (strchr(name, '/') != NULL)
		return -EINVAL;
	if (fchdir(dirfd) < 0)
		return -errno;
	for (n = 0; n < UNMOUNT_MAX; n++) {
		if ((r = res_is_mount(dirfd, name)) == 0 || r == -ENOENT)
			return n;
		if (r < 0)
			return r;
		if (umount2(name, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
			return -errno;
	}
	return n;
}

/* An empty directory, an empty file (a block bind target), a socket. */
int
res_remove(int dirfd, const char *name)
{
	struct stat st;

	if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
		return 1;
	if (errno != ENOTDIR ||
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !(S_ISSOCK(st.st_mode) || (S_ISREG(st.st_mode) &&
	    st.st_size == 0)))
		return 0;
	return unlinkat(dirfd, name, 0) == 0;
}
