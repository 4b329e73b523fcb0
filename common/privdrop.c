/*
 * privdrop.c: dropping users, groups and capabilities (see privdrop.h).
 *
 * Order matters: the bounding set can only be reduced while CAP_SETPCAP is
 * still held, so it goes first; the uid change follows; then the process
 * sets are cleared explicitly (rather than trusting the kernel's uid-change
 * rule, which SECBIT_KEEP_CAPS could defeat) and read back.
 *
 * Also root's path walk (priv_trusted_parent): what root resolves before
 * it drops must run only through directories that root alone can change.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

#include "privdrop.h"

int
priv_lookup_user(const char *name, struct priv_user *u, char *err,
    size_t errlen)
{
	struct passwd *pw;

	errno = 0;
	if ((pw = getpwnam(name)) == NULL) {
		snprintf(err, errlen, "user '%s' does not exist: create it "
		    "(useradd --system --no-create-home --shell /usr/sbin/nologin "
		    "%s) or name another in the config", name, name);
		return -ENOENT;
	}
	if (pw->pw_uid == 0) {
		snprintf(err, errlen, "user '%s' is root: berth needs an "
		    "unprivileged user there", name);
		return -EPERM;
	}
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	snprintf(u->name, sizeof(u->name), "%s", name);
	return 0;
}

/* Drop every capability not in keep from the bounding set. */
static int
reduce_bounding(const cap_value_t *keep, int n)
{
	cap_value_t cap;
	int i, kept;

	for (cap = 0; cap_get_bound(cap) >= 0; cap++) {
		for (kept = 0, i = 0; i < n; i++)
			if (keep[i] == cap)
				kept = 1;
		if (kept || cap_get_bound(cap) == 0)
			continue;
		if (cap_drop_bound(cap) < 0)
			return -errno;
	}
	return 0;
}

/* Set the process sets to exactly keep (effective and permitted). */
static int
set_caps(const cap_value_t *keep, int n)
{
	cap_t caps;
	int r = 0;

	if ((caps = cap_init()) == NULL)
		return -errno;
	if (n > 0 && (cap_set_flag(caps, CAP_EFFECTIVE, n, keep, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_PERMITTED, n, keep, CAP_SET) < 0))
		r = -errno;
	if (r == 0 && cap_set_proc(caps) < 0)
		r = -errno;
	cap_free(caps);
	return r;
}

static int
clear_ambient(void)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	return 0;
}

int
priv_drop_to_user(const struct priv_user *u)
{
	int r;

	if ((r = clear_ambient()) < 0 || (r = reduce_bounding(NULL, 0)) < 0)
		return r;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return -errno;
	if (setgroups(0, NULL) < 0 ||
	    setresgid(u->gid, u->gid, u->gid) < 0 ||
	    setresuid(u->uid, u->uid, u->uid) < 0)
		return -errno;
	if ((r = set_caps(NULL, 0)) < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* Verify: there must be no way back. */
	if (getuid() != u->uid || geteuid() != u->uid || getgid() != u->gid ||
	    getegid() != u->gid || setuid(0) == 0 || setgid(0) == 0)
		return -EPERM;
	return 0;
}

int
priv_keep_only(const cap_value_t *keep, int n)
{
	cap_flag_value_t v;
	cap_t caps;
	int r, i;

	if ((r = clear_ambient()) < 0 || (r = reduce_bounding(keep, n)) < 0)
		return r;
	if ((r = set_caps(keep, n)) < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if ((caps = cap_get_proc()) == NULL)
		return -errno;
	for (i = 0; i < n; i++)
		if (cap_get_flag(caps, keep[i], CAP_EFFECTIVE, &v) < 0 ||
		    v != CAP_SET)
			r = -EPERM;
	cap_free(caps);
	return r;
}

#define PRIV_MAX_LINKS 8

int
priv_root_only(const struct stat *st)
{
	return st->st_uid == 0 && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/*
 * A directory root may look beneath: root's, and writable by root alone,
 * or sticky (there, only an entry's owner may rename or remove it, and
 * every entry we go through must be root's).
 */
static int
trusted_dir(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == 0 &&
	    ((st->st_mode & (S_IWGRP | S_IWOTH)) == 0 ||
	    (st->st_mode & S_ISVTX) != 0);
}

static int
open_root(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if ((fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: opening /: %s", path,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	if (!trusted_dir(&st)) {
		close(fd);
		snprintf(err, errlen, "%s: / is not root's alone", path);
		return -EPERM;
	}
	return fd;
}

/* Refuse what the walk cannot trust; closes fd. */
static int
refuse(int fd, int r, char *err, size_t errlen, const char *fmt,
    const char *path, const char *name)
{
	close(fd);
	snprintf(err, errlen, fmt, path, name);
	return r;
}

int
priv_trusted_parent(const char *path, char *last, size_t lastlen,
    char *err, size_t errlen)
{
	char work[PATH_MAX], link[PATH_MAX], tmp[PATH_MAX];
	char *p, *name, *slash;
	struct stat st;
	int fd, next, links = 0;
	ssize_t n;

	if (path[0] != '/' || strlen(path) >= sizeof(work)) {
		snprintf(err, errlen, "%s: not an absolute path", path);
		return -EINVAL;
	}
	snprintf(work, sizeof(work), "%s", path);
	if ((fd = open_root(path, err, errlen)) < 0)
		return fd;
	p = work;
	for (;;) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			return refuse(fd, -EINVAL, err, errlen, "%s: names no "
			    "entry%s", path, "");
		name = p;
		if ((slash = strchr(p, '/')) != NULL) {
			*slash = '\0';
			for (p = slash + 1; *p == '/'; p++)
				;
		}
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return refuse(fd, -EINVAL, err, errlen, "%s: \"%s\" "
			    "in the path: name it plainly", path, name);
		if (slash == NULL || *p == '\0') {
			if (strlen(name) >= lastlen)
				return refuse(fd, -ENAMETOOLONG, err, errlen,
				    "%s: %s is too long", path, name);
			snprintf(last, lastlen, "%s", name);
			return fd;
		}
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			snprintf(err, errlen, "%s: %s: %s", path, name,
			    strerror(errno));
			close(fd);
			return -ENOENT;
		}
		if (S_ISLNK(st.st_mode)) {
			/* Root's link in a directory only root changes. */
			if (st.st_uid != 0)
				return refuse(fd, -EPERM, err, errlen, "%s: "
				    "%s is a symlink that root does not own",
				    path, name);
			if (++links > PRIV_MAX_LINKS)
				return refuse(fd, -ELOOP, err, errlen, "%s: "
				    "too many symlinks at %s", path, name);
			n = readlinkat(fd, name, link, sizeof(link) - 1);
			if (n <= 0)
				return refuse(fd, -EIO, err, errlen, "%s: "
				    "cannot read the symlink %s", path, name);
			link[n] = '\0';
			if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", link,
			    p) >= sizeof(tmp))
				return refuse(fd, -ENAMETOOLONG, err, errlen,
				    "%s: too long through %s", path, name);
			memcpy(work, tmp, sizeof(work));
			p = work;
			if (link[0] == '/') {
				close(fd);
				if ((fd = open_root(path, err, errlen)) < 0)
					return fd;
			}
			continue;
		}
		next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (next < 0 || fstat(next, &st) < 0) {
			snprintf(err, errlen, "%s: %s: %s", path, name,
			    strerror(errno));
			if (next >= 0)
				close(next);
			close(fd);
			return -ENOTDIR;
		}
		close(fd);
		fd = next;
		if (!trusted_dir(&st))
			return refuse(fd, -EPERM, err, errlen, "%s: directory "
			    "%s on the way is not root's alone (owned by "
			    "another user, or writable by group or others "
			    "without the sticky bit): root does not act "
			    "beneath it", path, name);
	}
}

int
priv_open_trusted(const char *path, int flags, char *err, size_t errlen)
{
	char last[NAME_MAX + 1];
	struct stat st;
	int dir, fd;

	if ((dir = priv_trusted_parent(path, last, sizeof(last), err,
	    errlen)) < 0)
		return dir;
	fd = openat(dir, last, flags | O_NOFOLLOW | O_CLOEXEC);
	close(dir);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
		    errno == ELOOP ? " (a symlink: name what it points to)" :
		    "");
		if (fd >= 0)
			close(fd);
		return -EACCES;
	}
	if (!priv_root_only(&st)) {
		close(fd);
		snprintf(err, errlen, "%s is owned by uid %ld or writable by "
		    "group or others: root reads it only when root alone can "
		    "change it (chown root and chmod go-w)", path,
		    (long)st.st_uid);
		return -EPERM;
	}
	return fd;
}

/*
 * PR_SET_PDEATHSIG fires when the thread that forked us exits. It is reset
 * by a credential change, so helpers call this after dropping. If the
 * parent died before the call, getppid() no longer matches: exit at once.
 */
int
priv_die_with_parent(pid_t expected_parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	if (getppid() != expected_parent)
		return -ESRCH;
	return 0;
}
