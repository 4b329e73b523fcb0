/*
 * tree.c: every lookup, creation and removal berth-csi-hostpath makes,
 * by descriptor.
 *
 * The plugin runs as root, and a task can write into its volumes (and
 * may be able to write where the CO asks it to mount), so a name it
 * looks up may be swapped for a symlink at any moment. Lookups therefore
 * go from a descriptor already held, with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), and a symlink anywhere
 * makes them fail (ELOOP) instead of leading elsewhere. A tree is removed
 * one pinned directory at a time (openat(O_NOFOLLOW | O_DIRECTORY),
 * getdents64, unlinkat), never through a mount stacked inside it, with at
 * most TREE_DEPTH directories open and one allocation, whatever the
 * tree's depth or width.
 * Must not: resolve a path twice, follow a symlink, or leave the mount
 * it started on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "hostpath.h"

/* Directories open at once; deeper ones are lifted to the top first. */
#define TREE_DEPTH	32
/* Tries for a free name to lift a directory to. */
#define LIFT_TRIES	64

int
tree_open(int dirfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	/* An absolute path (the CO's) cannot be beneath anything. */
	if (rel[0] != '/')
		how.resolve |= RESOLVE_BENEATH;
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

int
tree_mount_id(int fd, uint64_t *id)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID,
	    &stx) < 0)
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	*id = stx.stx_mnt_id;
	return 0;
}

int
tree_parent(const char *path, char *name, size_t n)
{
	const char *slash = strrchr(path, '/');
	char parent[4096];

	if (path[0] != '/' || slash[1] == '\0' || strcmp(slash + 1, ".") == 0 ||
	    strcmp(slash + 1, "..") == 0 ||
	    (size_t)snprintf(name, n, "%s", slash + 1) >= n ||
	    (size_t)(slash - path) >= sizeof(parent))
		return -EINVAL;
	if (slash == path)
		return tree_open(AT_FDCWD, "/", O_PATH | O_DIRECTORY, 0);
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	return tree_open(AT_FDCWD, parent, O_PATH | O_DIRECTORY, 0);
}

/* One open directory of the walk, read with getdents64 into buf. */
struct level {
	int fd;
	char name[256];		/* in its parent */
	size_t pos, len;
	_Alignas(8) char buf[4096];
};

/* Allocated once per removal: memory does not grow with the tree. */
struct walk {
	struct level lv[TREE_DEPTH];
	int depth;
	uint64_t mnt;		/* the tree's mount: never left */
	unsigned long lifts;
	bool lifted;		/* this pass over the top moved something */
	int err;		/* the first failure, as -errno */
	char *why;
	size_t whylen;
};

/* The next entry of lv, or NULL at its end (errno set on failure). */
static const struct dirent64 *
next_entry(struct level *lv)
{
	const struct dirent64 *de;
	long n;

	if (lv->pos >= lv->len) {
		errno = 0;
		if ((n = syscall(SYS_getdents64, lv->fd, lv->buf,
		    sizeof(lv->buf))) <= 0)
			return NULL;
		lv->pos = 0;
		lv->len = (size_t)n;
	}
	de = (const void *)(lv->buf + lv->pos);
	lv->pos += de->d_reclen;
	return de;
}

/* Record the first failure, with where it happened. */
static void
fail(struct walk *w, int err, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
fail(struct walk *w, int err, const char *name, const char *fmt, ...)
{
	char where[1024] = "";
	size_t len = 0;
	va_list ap;
	int i, n;

	if (w->err != 0)
		return;
	w->err = err;
	for (i = 0; i <= w->depth && w->lv[i].name[0] != '\0' &&
	    len < sizeof(where); i++) {
		n = snprintf(where + len, sizeof(where) - len, "%s/",
		    w->lv[i].name);
		len += n > 0 ? (size_t)n : 0;
	}
	va_start(ap, fmt);
	n = snprintf(w->why, w->whylen, "%s%s: ", where, name);
	if (n >= 0 && (size_t)n < w->whylen)
		vsnprintf(w->why + n, w->whylen - (size_t)n, fmt, ap);
	va_end(ap);
}

/*
 * A directory at the depth limit moves to the top of the tree under a
 * fresh name, to be removed from there: the walk never holds more than
 * TREE_DEPTH directories open, however deep the tree.
 */
static void
lift(struct walk *w, int at, const char *name)
{
	char fresh[64];
	int top = w->lv[0].fd, i;

	for (i = 0; i < LIFT_TRIES; i++) {
		snprintf(fresh, sizeof(fresh), ".hostpath-lifted-%lu",
		    w->lifts++);
		if (renameat2(at, name, top, fresh, RENAME_NOREPLACE) == 0) {
			w->lifted = true;
			return;
		}
		if (errno == ENOENT)
			return;
		if (errno != EEXIST)
			break;
	}
	fail(w, -errno, name, "moving it up to remove it: %s",
	    strerror(errno));
}

/* One entry of the directory at the top of the stack. */
static void
entry(struct walk *w, const struct dirent64 *de)
{
	int at = w->lv[w->depth].fd, fd, r;
	struct level *next;
	uint64_t mnt;

	if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) {
		if (unlinkat(at, de->d_name, 0) == 0 || errno == ENOENT)
			return;
		if (errno != EISDIR) {
			fail(w, -errno, de->d_name, "unlink: %s",
			    strerror(errno));
			return;
		}
		/* Swapped for a directory since it was read: remove it. */
	}
	fd = openat(at, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		/* Not a directory (now): a symlink is removed, not followed. */
		if (errno == ENOENT || ((errno == ENOTDIR || errno == ELOOP) &&
		    (unlinkat(at, de->d_name, 0) == 0 || errno == ENOENT)))
			return;
		fail(w, -errno, de->d_name, "open: %s", strerror(errno));
		return;
	}
	if ((r = tree_mount_id(fd, &mnt)) < 0 || mnt != w->mnt) {
		close(fd);
		if (r < 0)
			fail(w, r, de->d_name, "mount id: %s", strerror(-r));
		else
			fail(w, -EBUSY, de->d_name, "a mount is stacked here; "
			    "it is not entered, unmount it first");
		return;
	}
	if (w->depth + 1 == TREE_DEPTH) {
		close(fd);
		lift(w, at, de->d_name);
		return;
	}
	next = &w->lv[w->depth + 1];
	next->fd = fd;
	next->pos = next->len = 0;
	snprintf(next->name, sizeof(next->name), "%s", de->d_name);
	w->depth++;
}

/* The directory at the top of the stack is read through: remove it. */
static void
leave(struct walk *w)
{
	struct level *done = &w->lv[w->depth];

	close(done->fd);
	done->fd = -1;
	w->depth--;
	if (unlinkat(w->lv[w->depth].fd, done->name, AT_REMOVEDIR) < 0 &&
	    errno != ENOENT)
		fail(w, -errno, done->name, "rmdir: %s", strerror(errno));
}

int
tree_remove(int dirfd, const char *name, char *why, size_t whylen)
{
	const struct dirent64 *de;
	struct walk *w;
	uint64_t mnt;
	int fd, r;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		snprintf(why, whylen, "%s: out of memory", name);
		return -ENOMEM;
	}
	w->why = why;
	w->whylen = whylen;
	fd = tree_open(dirfd, name, O_RDONLY | O_DIRECTORY | O_NONBLOCK, 0);
	if (fd == -ENOTDIR || fd == -ELOOP) {
		/* Not a directory: remove the name, never what it names. */
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			fail(w, -errno, name, "unlink: %s", strerror(errno));
		goto out;
	}
	if (fd < 0) {
		/* Gone already is done. */
		if (fd != -ENOENT)
			fail(w, fd, name, "open: %s", strerror(-fd));
		goto out;
	}
	if ((r = tree_mount_id(dirfd, &mnt)) < 0 ||
	    (r = tree_mount_id(fd, &w->mnt)) < 0 || w->mnt != mnt) {
		close(fd);
		fail(w, r < 0 ? r : -EBUSY, name, "%s", r < 0 ?
		    strerror(-r) : "a mount is stacked here; it is not "
		    "entered, unmount it first");
		goto out;
	}
	w->lv[0].fd = fd;
	snprintf(w->lv[0].name, sizeof(w->lv[0].name), "%s", name);
	for (;;) {
		if ((de = next_entry(&w->lv[w->depth])) == NULL) {
			if ((r = errno) != 0)
				fail(w, -r, "", "getdents: %s", strerror(r));
			if (w->depth > 0) {
				leave(w);
				continue;
			}
			/* Read the top again for what was lifted into it. */
			if (!w->lifted || r != 0)
				break;
			w->lifted = false;
			w->lv[0].pos = w->lv[0].len = 0;
			if (lseek(fd, 0, SEEK_SET) < 0) {
				fail(w, -errno, "", "rewind: %s",
				    strerror(errno));
				break;
			}
			continue;
		}
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			entry(w, de);
	}
	close(fd);
	if (w->err == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0 &&
	    errno != ENOENT)
		fail(w, -errno, name, "rmdir: %s", strerror(errno));
out:
	r = w->err;
	free(w);
	return r;
}
