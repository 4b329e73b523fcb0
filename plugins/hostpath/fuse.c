/*
 * fuse.c: --fuse, a fault mode whose mounts die with the plugin.
 *
 * NodeStageVolume mounts, at the staging path, a FUSE passthrough of the
 * volume's directory, served by a thread of this process (libfuse3, one
 * single-threaded loop per mount). Publishing binds that mount as usual,
 * so when the plugin dies (kill -9, a crash, an update) every staging
 * path, publish target and task bind of it answers ENOTCONN, as the
 * mounts of FUSE-based and some network plugins do. It exists to test
 * berth's recovery after a plugin restart, not to serve data well.
 *
 * The mount is made by descriptor (fsopen / fsmount / move_mount on the
 * staging directory opened without following a symlink) and handed to
 * libfuse as /dev/fd/N. Every path the kernel sends is looked up beneath
 * the volume's pinned directory (tree.c), never through a symlink (there
 * is no readlink: a symlink in the volume is shown and not followed).
 * allow_other, and no default_permissions: every user of the mount acts
 * with the plugin's own rights in the volume, and what it creates is
 * the plugin's (as in a FUSE file system that checks nothing itself),
 * because the plugin (root with CAP_SYS_ADMIN and CAP_CHOWN, no
 * CAP_DAC_OVERRIDE) could not open again a file it had given away. A
 * loop ends when the last mount of its file system is gone (ENODEV); its
 * thread then frees it.
 * Must not: unmount anything (libfuse's unmount would name a path).
 */
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <fuse.h>

#include "hostpath.h"
#include "log.h"

/* What open(2) took, without the kernel's own bits (openat2 is strict). */
#define OPEN_FLAGS	(O_ACCMODE | O_APPEND | O_TRUNC | O_EXCL | O_NONBLOCK | \
	    O_DIRECTORY | O_SYNC | O_DSYNC | O_NOATIME)

struct served {
	struct fuse *fuse;
	int vol;			/* the volume's directory, pinned */
	dev_t dev;			/* the FUSE file system's, once known */
};

static pthread_mutex_t served_lock = PTHREAD_MUTEX_INITIALIZER;
static struct served *served[HOSTPATH_MAX_VOLUMES];

static int
vol_fd(void)
{
	return ((struct served *)fuse_get_context()->private_data)->vol;
}

/* The kernel's "/a/b" beneath the volume: "a/b", or "." for its root. */
static const char *
rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static int
fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	if (fi != NULL)
		return fstat((int)fi->fh, st) < 0 ? -errno : 0;
	return fstatat(vol_fd(), rel(path), st, AT_SYMLINK_NOFOLLOW) < 0 ?
	    -errno : 0;
}

static int
fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
    struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct dirent *e;
	DIR *d;
	int fd;

	(void)off, (void)fi, (void)flags;
	if ((fd = tree_open(vol_fd(), rel(path), O_RDONLY | O_DIRECTORY,
	    0)) < 0)
		return fd;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(d)) != NULL)
		if (fill(buf, e->d_name, NULL, 0, 0) != 0)
			break;
	closedir(d);
	return 0;
}

static int
fs_mkdir(const char *path, mode_t mode)
{
	return mkdirat(vol_fd(), rel(path), mode) < 0 ? -errno : 0;
}

static int
fs_unlink(const char *path)
{
	return unlinkat(vol_fd(), rel(path), 0) < 0 ? -errno : 0;
}

static int
fs_rmdir(const char *path)
{
	return unlinkat(vol_fd(), rel(path), AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int
fs_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags != 0)
		return -EINVAL;
	return renameat(vol_fd(), rel(from), vol_fd(), rel(to)) < 0 ?
	    -errno : 0;
}

static int
fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (fi != NULL)
		return fchmod((int)fi->fh, mode) < 0 ? -errno : 0;
	return fchmodat(vol_fd(), rel(path), mode, 0) < 0 ? -errno : 0;
}

static int
fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	if (fi != NULL)
		return fchown((int)fi->fh, uid, gid) < 0 ? -errno : 0;
	return fchownat(vol_fd(), rel(path), uid, gid, AT_SYMLINK_NOFOLLOW) <
	    0 ? -errno : 0;
}

static int
fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, r;

	if (fi != NULL)
		return ftruncate((int)fi->fh, size) < 0 ? -errno : 0;
	if ((fd = tree_open(vol_fd(), rel(path), O_WRONLY, 0)) < 0)
		return fd;
	r = ftruncate(fd, size) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static int
fs_utimens(const char *path, const struct timespec tv[2],
    struct fuse_file_info *fi)
{
	if (fi != NULL)
		return futimens((int)fi->fh, tv) < 0 ? -errno : 0;
	return utimensat(vol_fd(), rel(path), tv, AT_SYMLINK_NOFOLLOW) < 0 ?
	    -errno : 0;
}

static int
fs_open(const char *path, struct fuse_file_info *fi)
{
	int fd;

	if ((fd = tree_open(vol_fd(), rel(path), fi->flags & OPEN_FLAGS,
	    0)) < 0)
		return fd;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int
fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd;

	if ((fd = tree_open(vol_fd(), rel(path), (fi->flags & OPEN_FLAGS) |
	    O_CREAT, mode & 07777)) < 0)
		return fd;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int
fs_read(const char *path, char *buf, size_t n, off_t off,
    struct fuse_file_info *fi)
{
	ssize_t r;

	(void)path;
	r = pread((int)fi->fh, buf, n, off);
	return r < 0 ? -errno : (int)r;
}

static int
fs_write(const char *path, const char *buf, size_t n, off_t off,
    struct fuse_file_info *fi)
{
	ssize_t r;

	(void)path;
	r = pwrite((int)fi->fh, buf, n, off);
	return r < 0 ? -errno : (int)r;
}

static int
fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	return (datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh)) < 0 ?
	    -errno : 0;
}

static int
fs_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int
fs_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	return fstatvfs(vol_fd(), sv) < 0 ? -errno : 0;
}

static const struct fuse_operations ops = {
	.getattr = fs_getattr, .readdir = fs_readdir, .mkdir = fs_mkdir,
	.unlink = fs_unlink, .rmdir = fs_rmdir, .rename = fs_rename,
	.chmod = fs_chmod, .chown = fs_chown, .truncate = fs_truncate,
	.utimens = fs_utimens, .open = fs_open, .create = fs_create,
	.read = fs_read, .write = fs_write, .fsync = fs_fsync,
	.release = fs_release, .statfs = fs_statfs,
};

/* Until the last mount of it is gone; then it is forgotten and freed. */
static void *
serve(void *arg)
{
	struct served *s = arg;
	size_t i;

	fuse_loop(s->fuse);
	pthread_mutex_lock(&served_lock);
	for (i = 0; i < HOSTPATH_MAX_VOLUMES; i++)
		if (served[i] == s)
			served[i] = NULL;
	pthread_mutex_unlock(&served_lock);
	fuse_destroy(s->fuse);
	close(s->vol);
	free(s);
	return NULL;
}

bool
fuse_ours(dev_t dev)
{
	bool yes = false;
	size_t i;

	pthread_mutex_lock(&served_lock);
	for (i = 0; i < HOSTPATH_MAX_VOLUMES && !yes; i++)
		yes = served[i] != NULL && served[i]->dev == dev;
	pthread_mutex_unlock(&served_lock);
	return yes;
}

/* A FUSE file system on /dev/fuse's fd, attached on dst: its mount's
 * descriptor, or -errno. */
static int
fuse_attach(int dev, int dst)
{
	char num[16];
	int fs, mnt = -1, r;

	snprintf(num, sizeof(num), "%d", dev);
	if ((fs = fsopen("fuse", FSOPEN_CLOEXEC)) < 0)
		return -errno;
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", "berth-hostpath",
	    0) < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "fd", num, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "rootmode", "40000", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "user_id", "0", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "group_id", "0", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "allow_other", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID |
	    MOUNT_ATTR_NODEV)) < 0 || move_mount(mnt, "", dst, "",
	    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		r = -errno;
		if (mnt >= 0)
			close(mnt);
		mnt = r;
	}
	close(fs);
	return mnt;
}

/*
 * A session for vol, mounted on dst and served by a new thread; -errno.
 * Listed before its loop starts, with its device once the loop answers.
 */
static int
fuse_start(int vol, int dst)
{
	char *argv[] = { "berth-csi-hostpath", NULL }, path[32];
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct served *s;
	struct stat st;
	pthread_t t;
	int dev, mnt, r = -ENOSPC;
	size_t i;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		fatal("fuse_start");
	if ((dev = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0 ||
	    (mnt = fuse_attach(dev, dst)) < 0) {
		r = dev < 0 ? -errno : mnt;
		if (dev >= 0)
			close(dev);
		free(s);
		return r;
	}
	/* From here on the mount is there: a failure leaves it dead (its
	 * connection ends with dev) for the CO's unstage. */
	s->vol = fcntl(vol, F_DUPFD_CLOEXEC, 0);
	snprintf(path, sizeof(path), "/dev/fd/%d", dev);
	if (s->vol < 0 || (s->fuse = fuse_new(&args, &ops, sizeof(ops),
	    s)) == NULL || fuse_mount(s->fuse, path) != 0) {
		r = s->vol < 0 ? -errno : -EIO;
		if (s->fuse != NULL)
			fuse_destroy(s->fuse);
		close(dev);
		if (s->vol >= 0)
			close(s->vol);
		close(mnt);
		free(s);
		return r;
	}
	pthread_mutex_lock(&served_lock);
	for (i = 0; i < HOSTPATH_MAX_VOLUMES && served[i] != NULL; i++)
		;
	if (i < HOSTPATH_MAX_VOLUMES)
		served[i] = s;
	if ((r = pthread_create(&t, NULL, serve, s)) != 0)
		fatalx("fuse_start: pthread_create: %s", strerror(r));
	pthread_detach(t);
	/* Answered by the loop just started (it frees s only once it has
	 * the lock). */
	r = fstat(mnt, &st) < 0 ? -errno : i < HOSTPATH_MAX_VOLUMES ? 0 :
	    -ENOSPC;
	if (r == 0)
		s->dev = st.st_dev;
	pthread_mutex_unlock(&served_lock);
	close(mnt);
	return r;
}

/*
 * NodeStageVolume in --fuse mode: the staging path (which the CO made)
 * shows a live FUSE passthrough of vol: one already served is success.
 */
bool
fuse_stage(struct hostpath *hp, int vol, const char *target,
    struct rpc_reply *r)
{
	struct statx stx;
	char name[256];
	int parent, dst, err;

	(void)hp;
	if ((parent = tree_parent(target, name, sizeof(name))) < 0) {
		reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, "NodeStageVolume:"
		    " open the directory of %s: %s", target, strerror(-parent));
		return false;
	}
	dst = tree_open(parent, name, O_PATH | O_DIRECTORY, 0);
	close(parent);
	if (dst < 0) {
		reply_error(r, GRPC_STATUS_FAILED_PRECONDITION, "NodeStageVolume:"
		    " open %s: %s", target, strerror(-dst));
		return false;
	}
	if (statx(dst, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) < 0)
		err = -errno;
	else if ((stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) == 0)
		err = fuse_start(vol, dst);
	else
		err = fuse_ours(makedev(stx.stx_dev_major,
		    stx.stx_dev_minor)) ? 0 : -EEXIST;
	close(dst);
	if (err == -EEXIST)
		reply_error(r, GRPC_STATUS_ALREADY_EXISTS, "NodeStageVolume: "
		    "another file system is mounted at %s", target);
	else if (err < 0)
		reply_error(r, GRPC_STATUS_INTERNAL, "NodeStageVolume: a FUSE "
		    "mount at %s: %s", target, strerror(-err));
	return err == 0;
}
