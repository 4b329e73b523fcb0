/*
 * volume.c: the mount verbs (prepare a plugin, a volume's directory, a
 * task; bind, unbind; clean up an alloc): every mount made in the host,
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

#define OK BERTH__ERROR_CODE__ERROR_NONE

/* Split "a/b/c" into "a/b" and "c". */
static void
split(const char *rel, char *parent, size_t n, const char **leaf)
{
	const char *slash = strrchr(rel, '/');

	snprintf(parent, n, "%.*s", (int)(slash - rel), rel);
	*leaf = slash + 1;
}

/* Clone src detached, set attr on the clone, attach it on dst. */
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

/* Bind the directory at rel onto itself, once, and make it shared. */
static Berth__ErrorCode
make_shared_mount(struct mounter *m, const char *rel, char *why)
{
	struct mount_attr attr = { .propagation = MS_SHARED };
	int fd, r;

	if ((fd = res_mkdirs(m->data_fd, rel)) < 0)
		return fail_errno(why, -fd, "creating", rel);
	if ((r = res_is_mount(fd, "")) == 0) {
		r = attach(fd, fd, NULL);
		close(fd);
		/* The path now leads to the new mount. */
		fd = r < 0 ? r : res_open(m->data_fd, rel, O_PATH, 0);
		r = fd < 0 ? fd : 1;
	}
	if (r > 0 && mount_setattr(fd, "", AT_EMPTY_PATH, &attr,
	    sizeof(attr)) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	return r < 0 ? fail_errno(why, -r, "making a shared mount of", rel) :
	    OK;
}

/*
 * rel, with sub made in it, to the owner. Root's again first, through
 * O_PATH as the owner may have shut it to us: no CAP_FOWNER needed.
 */
static Berth__ErrorCode
give(struct mounter *m, const struct mreq *rq, const char *rel,
    const char *sub, mode_t mode, char *why)
{
	int fd, dir, r;

	if ((fd = res_mkdirs(m->data_fd, rel)) < 0)
		return fail_errno(why, -fd, "creating", rel);
	if ((r = fchownat(fd, "", 0, 0, AT_EMPTY_PATH) < 0 ? -errno : 0) == 0 &&
	    (r = dir = res_open(fd, ".", O_RDONLY | O_DIRECTORY, 0)) >= 0) {
		r = (sub && mkdirat(dir, sub, 0755) < 0 && errno != EEXIST) ||
		    fchmod(dir, mode) < 0 || fchown(dir, rq->uid, rq->gid) < 0 ?
		    -errno : 0;
		close(dir);
	}
	close(fd);
	return r < 0 ? fail_errno(why, -r, "giving its owner", rel) : OK;
}

Berth__ErrorCode
volume_prepare_plugin(struct mounter *m, const struct mreq *rq,
    struct mreply *out, char *why)
{
	Berth__ErrorCode code;

	if ((code = make_shared_mount(m, rq->path2, why)) != OK ||
	    (code = make_shared_mount(m, rq->path, why)) != OK || rq->gid == 0)
		return code;
	return give(m, rq, rq->path2, NULL, 02750, why);
}

/* A plugin's mount root and socket dir must be prepared: shared mounts. */
Berth__ErrorCode
volume_need_shared(struct mounter *m, const char *rel, char *why)
{
	int r = res_mounted(m->data_fd, rel);

	return r < 0 ? fail_errno(why, -r, "checking", rel) : r == 1 ? OK :
	    fail(why, BERTH__ERROR_CODE__ERROR_CONFLICT, "%s is not a shared "
	    "mount yet: prepare the plugin first", rel);
}

Berth__ErrorCode
volume_prepare(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	Berth__ErrorCode code;
	char dir[MREQ_PATH];
	const char *leaf;
	int fd, r;

	if ((code = volume_need_shared(m, rq->path2, why)) != OK)
		return code;
	/* A staging directory is ours; a publish target, the plugin's. */
	if (rq->staging)
		snprintf(dir, sizeof(dir), "%s", rq->path);
	else
		split(rq->path, dir, sizeof(dir), &leaf);
	if ((fd = res_mkdirs(m->data_fd, dir)) < 0)
		return fail_errno(why, -fd, "creating", dir);
	close(fd);
	if ((r = res_mounted(m->data_fd, rq->path)) < 0 && r != -ENOENT)
		return fail_errno(why, -r, "checking", rq->path);
	out->mounted = r == 1;
	return OK;
}

/* allocs/<alloc>/<task>/ for the task's user; volumes/ in it stays root's. */
Berth__ErrorCode
volume_prepare_task(struct mounter *m, const struct mreq *rq,
    struct mreply *out, char *why)
{
	return give(m, rq, rq->path, "volumes", 0755, why);
}

/* Create the bind target, a directory or a file like the source. */
static int
bind_target(struct mounter *m, const char *rel, bool dir)
{
	char parent[MREQ_PATH];
	const char *leaf;
	struct stat st;
	int pfd, fd;

	split(rel, parent, sizeof(parent), &leaf);
	if ((pfd = res_mkdirs(m->data_fd, parent)) < 0)
		return pfd;
	if (dir && mkdirat(pfd, leaf, 0755) < 0 && errno != EEXIST) {
		fd = -errno;
		goto out;
	}
	/* O_EXCL: an existing entry is never opened for writing. */
	if (!dir && (fd = res_open(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL,
	    0600)) >= 0)
		close(fd);
	fd = res_open(pfd, leaf, O_PATH, 0);
	if (fd >= 0 && (fstat(fd, &st) < 0 || (dir ? !S_ISDIR(st.st_mode) :
	    !S_ISREG(st.st_mode)))) {
		close(fd);
		fd = -ENOTDIR;
	}
out:
	close(pfd);
	return fd;
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
	int sfd, tfd = -1, r;
	struct stat st;

	if ((sfd = res_open(m->data_fd, rq->path, O_PATH, 0)) < 0)
		return fail_errno(why, -sfd, "opening the publish target",
		    rq->path);
	if (fstat(sfd, &st) < 0 || (!S_ISDIR(st.st_mode) &&
	    !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))) {
		code = fail(why, BERTH__ERROR_CODE__ERROR_PERMISSION, "%s is "
		    "not a directory, file or block device", rq->path);
		goto out;
	}
	if ((r = res_is_mount(sfd, "")) != 1) {
		code = r < 0 ? fail_errno(why, -r, "checking", rq->path) :
		    fail(why, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "%s is not "
		    "published: nothing is mounted there", rq->path);
		goto out;
	}
	if ((tfd = bind_target(m, rq->path2, S_ISDIR(st.st_mode))) < 0) {
		code = fail_errno(why, -tfd, "creating", rq->path2);
		goto out;
	}
	if ((r = res_is_mount(tfd, "")) != 0) {
		code = r < 0 ? fail_errno(why, -r, "checking", rq->path2) :
		    fail(why, BERTH__ERROR_CODE__ERROR_CONFLICT, "%s is "
		    "already a mount point: unbind it first", rq->path2);
		goto out;
	}
	/* A detached copy, its flags set before anyone can see it. */
	if ((r = attach(sfd, tfd, &attr)) < 0)
		code = fail_errno(why, -r, "binding into", rq->path2);
out:
	if (tfd >= 0)
		close(tfd);
	close(sfd);
	return code;
}

Berth__ErrorCode
volume_unbind(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	char parent[MREQ_PATH];
	const char *leaf;
	int pfd, r;

	split(rq->path, parent, sizeof(parent), &leaf);
	if ((pfd = res_open(m->data_fd, parent, O_PATH | O_DIRECTORY, 0)) < 0)
		return fail_errno(why, -pfd, "opening", parent);
	r = res_unmount_all(pfd, leaf);
	if (r >= 0)
		res_remove(pfd, leaf);
	close(pfd);
	if (r < 0)
		return fail_errno(why, -r, "unmounting", rq->path);
	return OK;
}

struct sweep {
	const char *alloc;
	struct mreply *out;
	int depth, left;	/* prune: how deep, what had to stay */
};

/* Unmount what is stacked on one entry, then remove it if empty. */
static void
sweep_entry(int dirfd, const char *name, void *arg)
{
	struct sweep *s = arg;
	int r;

	if ((r = res_unmount_all(dirfd, name)) < 0) {
		log_warnx("sweep_entry: unmounting %s: %s", name, strerror(-r));
		return;
	}
	s->out->unmounted += r;
	s->out->removed += res_remove(dirfd, name);
}

/* at/dir/leaf, root's again (not followed): each entry with fn, then leaf. */
static void
sweep_dir(int at, const char *dir, const char *leaf, res_each_fn fn,
    struct sweep *s)
{
	int fd;

	if ((fd = res_open(at, dir, O_PATH | O_DIRECTORY, 0)) < 0)
		return;
	fchownat(fd, leaf, 0, 0, AT_SYMLINK_NOFOLLOW);
	res_each(fd, leaf, fn, s);
	if (s->left == 0)
		sweep_entry(fd, leaf, s);
	close(fd);
}

/* Remove an empty tree, deepest first; never enter or remove a mount. */
static void
prune(int dirfd, const char *name, void *arg)
{
	struct sweep *s = arg;

	if (res_is_mount(dirfd, name) != 0) {
		s->left++;
		return;
	}
	if (s->depth < 6) {
		s->depth++;
		res_each(dirfd, name, prune, s);
		s->depth--;
	}
	if (res_remove(dirfd, name) == 0)
		s->left++;
}

/* allocs/<alloc>/<task>/volumes/<name>: berth's binds. */
static void
sweep_task(int afd, const char *task, void *arg)
{
	struct sweep *s = arg;

	/* Back to root (not followed), to remove volumes/ from it. */
	fchownat(afd, task, 0, 0, AT_SYMLINK_NOFOLLOW);
	sweep_dir(afd, task, "volumes", sweep_entry, s);
	s->out->removed += res_remove(afd, task);
}

/* csi/<type>/<plugin>/per-alloc/<alloc>/<vol>/<usage>: the publish dirs. */
static void
sweep_vol(int afd, const char *vol, void *arg)
{
	sweep_dir(afd, ".", vol, sweep_entry, arg);
}

static void
sweep_plugin(int tfd, const char *plugin, void *arg)
{
	struct sweep *s = arg;
	char rel[MREQ_PATH];

	snprintf(rel, sizeof(rel), "%s/per-alloc", plugin);
	sweep_dir(tfd, rel, s->alloc, sweep_vol, s);
}

static void
sweep_type(int cfd, const char *type, void *arg)
{
	if (strcmp(type, "plugins") != 0)
		res_each(cfd, type, sweep_plugin, arg);
}

/* csi/plugins/<alloc>/: its socket, and a root plugin's two logs. */
static void
sweep_socket_dir(int dirfd, const char *name, void *arg)
{
	size_t len = strlen(name);

	if (len > 7 && (strcmp(name + len - 7, ".stdout") == 0 ||
	    strcmp(name + len - 7, ".stderr") == 0) &&
	    unlinkat(dirfd, name, 0) == 0)
		((struct sweep *)arg)->out->removed++;
	else
		sweep_entry(dirfd, name, arg);
}

/* Best effort: what cannot be unmounted or removed is logged and left. */
Berth__ErrorCode
volume_cleanup(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	struct sweep s = { rq->alloc, out, 0, 0 };
	char dir[MREQ_PATH];

	/* Tasks first: their binds hold references to the publish mounts. */
	sweep_dir(m->data_fd, LAYOUT_ALLOCS_DIR, rq->alloc, sweep_task, &s);
	res_each(m->data_fd, "csi", sweep_type, &s);
	/* The socket directory: its socket, logs, self-bind, itself. */
	sweep_dir(m->data_fd, LAYOUT_PLUGIN_SOCKETS_DIR, rq->alloc,
	    sweep_socket_dir, &s);
	/* The plugin's last alloc: its mount root, if nothing is left. */
	snprintf(dir, sizeof(dir), "csi/%s", rq->type);
	if (rq->plugin[0] != '\0')
		sweep_dir(m->data_fd, dir, rq->plugin, prune, &s);
	return BERTH__ERROR_CODE__ERROR_NONE;
}
