/*
 * snapshot.c: snapshots in berth-csi-hostpath: CreateSnapshot,
 * DeleteSnapshot, ListSnapshots, and a volume created from a snapshot.
 *
 * A snapshot is a copy of its volume's directory, taken when it is
 * asked: <state-dir>/snapshots/<id>/data, beside <id>/source, one line
 * "<source volume> <seconds> <nanoseconds> <bytes>". It lives in the
 * state directory, so it outlives the plugin's process. The id is the
 * name CreateSnapshot was given (berth's identifier allow-list, no
 * leading '.'): asked again with the same name and source it is the same
 * snapshot, with another source ALREADY_EXISTS. A copy is made under
 * .part-<id> and renamed into place, so a snapshot that exists is whole.
 * ListSnapshots pages in name order: next_token is the name the next
 * page starts at. Copies are made by descriptor, never through a
 * symlink (which is copied as a symlink), never into a mount inside the
 * volume (the snapshot is refused: FAILED_PRECONDITION); other special
 * files are left out. Strict, a snapshot's optional size_bytes is left out. Not
 * advertised with --no-snapshots. Must not: mount, or write outside the
 * volumes and snapshots directories.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hostpath.h"
#include "ident.h"

#define COPY_DEPTH	64
#define LIST_MAX	1024

struct any_entry {
	ProtobufCMessage base;
	char *key, *value;
};

/* What <id>/source says. */
struct snap {
	char id[BERTH_IDENT_MAX + 1];
	char source[BERTH_IDENT_MAX + 1];
	int64_t sec, nsec, bytes;
};

/* Tests: <state-dir>/received/<rpc>.<snapshot> gets a line per call,
 * with the secrets (as expand.c's notes). */
static void
note(struct hostpath *hp, const char *rpc, const char *id, const char *what,
    size_t nsec, void *const *sec)
{
	char path[4200];
	size_t i;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/received/%s.%s",
	    hp->state_dir, rpc, id) >= sizeof(path) || (fd = open(path,
	    O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
	    0600)) < 0)
		return;
	dprintf(fd, "%s", what);
	for (i = 0; i < nsec; i++)
		dprintf(fd, " secret %s=%s",
		    ((const struct any_entry *)sec[i])->key,
		    ((const struct any_entry *)sec[i])->value);
	dprintf(fd, "\n");
	close(fd);
}

/* <state-dir>/snapshots, made if missing, O_PATH; -errno. */
static int
snapdir_open(struct hostpath *hp)
{
	char path[4200];

	if ((size_t)snprintf(path, sizeof(path), "%s/snapshots",
	    hp->state_dir) >= sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return tree_open(AT_FDCWD, path, O_PATH | O_DIRECTORY, 0);
}

static bool
snapshot_id_ok(const char *rpc, const char *field, const char *id,
    struct rpc_reply *r)
{
	const char *why;

	if (id == NULL || *id == '\0') {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s: %s is "
		    "missing", rpc, field);
		return false;
	}
	if ((why = ident_problem(id, strlen(id))) != NULL || id[0] == '.') {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s: %s '%s' %s; "
		    "this plugin takes [A-Za-z0-9._-], not starting with '.'",
		    rpc, field, id, why != NULL ? why : "starts with '.'");
		return false;
	}
	return true;
}

/* 1 and s filled, 0 when there is no such snapshot, or -errno. */
static int
snap_read(int dir, const char *id, struct snap *s)
{
	char rel[BERTH_IDENT_MAX + 16], line[512];
	ssize_t n;
	int fd;

	snprintf(rel, sizeof(rel), "%s/source", id);
	if ((fd = tree_open(dir, rel, O_RDONLY, 0)) < 0)
		return fd == -ENOENT ? 0 : fd;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	line[n] = '\0';
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", id);
	if (sscanf(line, "%128s %" SCNd64 " %" SCNd64 " %" SCNd64, s->source,
	    &s->sec, &s->nsec, &s->bytes) != 4)
		return -EIO;
	return 1;
}

/* A copy under way: the mount it stays on, and the bytes so far. */
struct copy {
	uint64_t mnt;
	int64_t bytes;
};

static int copy_tree(int from, int to, int depth, struct copy *c);

/* fd is on the copy's mount: a mount inside the volume is not entered
 * (a task may have stacked one there over root's files). */
static int
same_mount(int fd, const struct copy *c)
{
	uint64_t id;
	int err;

	if ((err = tree_mount_id(fd, &id)) < 0)
		return err;
	return id == c->mnt ? 0 : -EXDEV;
}

static int
copy_file(int from, int to, const char *name, struct copy *c)
{
	char buf[65536];
	struct stat st;
	ssize_t n, w, off;
	int in, out, err = 0;

	/* Never blocks on a fifo swapped in since it was a file. */
	if ((in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(in, &st) < 0)
		err = -errno;
	else if (S_ISREG(st.st_mode))
		err = same_mount(in, c);
	if (err < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return err;
	}
	if ((out = openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, st.st_mode & 07777)) < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while (err == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			err = -errno;
			break;
		}
		for (off = 0; off < n; off += w)
			if ((w = write(out, buf + off,
			    (size_t)(n - off))) < 0) {
				err = -errno;
				break;
			}
		c->bytes += n;
	}
	if (err == 0 && fchmod(out, st.st_mode & 07777) < 0)
		err = -errno;
	close(in);
	if (close(out) < 0 && err == 0)
		err = -errno;
	return err;
}

static int
copy_dir(int from, int to, const char *name, mode_t mode, int depth,
    struct copy *c)
{
	int a, b, err;

	if ((a = tree_open(from, name, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return a;
	if ((err = same_mount(a, c)) == 0 && mkdirat(to, name, 0700) < 0)
		err = -errno;
	if (err < 0) {
		close(a);
		return err;
	}
	if ((b = tree_open(to, name, O_RDONLY | O_DIRECTORY, 0)) < 0) {
		close(a);
		return b;
	}
	err = copy_tree(a, b, depth + 1, c);
	if (err == 0 && fchmod(b, mode & 07777) < 0)
		err = -errno;
	close(a);
	close(b);
	return err;
}

static int
copy_entry(int from, int to, const char *name, int depth, struct copy *c)
{
	char link[4096];
	struct stat st;
	ssize_t n;

	if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISREG(st.st_mode))
		return copy_file(from, to, name, c);
	if (S_ISDIR(st.st_mode))
		return copy_dir(from, to, name, st.st_mode, depth, c);
	if (!S_ISLNK(st.st_mode))
		return 0;	/* devices, fifos, sockets: not data */
	/* Copied as a link, never followed. */
	if ((n = readlinkat(from, name, link, sizeof(link) - 1)) < 0)
		return -errno;
	link[n] = '\0';
	return symlinkat(link, to, name) < 0 ? -errno : 0;
}

/* Everything in directory from (O_RDONLY) into directory to. */
static int
copy_tree(int from, int to, int depth, struct copy *c)
{
	struct dirent *de;
	DIR *d;
	int fd, err = 0;

	if (depth > COPY_DEPTH)
		return -ELOOP;
	if ((fd = dup(from)) < 0)
		return -errno;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	rewinddir(d);
	while (err == 0 && (errno = 0, de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			err = copy_entry(from, to, de->d_name, depth, c);
	if (err == 0 && de == NULL && errno != 0)
		err = -errno;
	closedir(d);
	return err;
}

/* The whole of directory from into to, on from's mount only. */
static int
copy_all(int from, int to, int64_t *bytes)
{
	struct copy c = { 0, 0 };
	int err;

	if ((err = tree_mount_id(from, &c.mnt)) < 0)
		return err;
	err = copy_tree(from, to, 0, &c);
	*bytes = c.bytes;
	return err;
}

/* The volume's directory into dir/.part-<id>/data, then dir/<id>. */
static int
snap_take(struct hostpath *hp, int dir, const char *id, const char *vol,
    struct snap *s)
{
	char part[BERTH_IDENT_MAX + 8], why[256];
	struct timespec now;
	int pfd = -1, dfd = -1, vfd = -1, fd, err;

	snprintf(part, sizeof(part), ".part-%s", id);
	/* A copy a crash left half done. */
	if ((err = tree_remove(dir, part, why, sizeof(why))) < 0)
		return err;
	if (mkdirat(dir, part, 0700) < 0)
		return -errno;
	if ((pfd = tree_open(dir, part, O_PATH | O_DIRECTORY, 0)) < 0) {
		err = pfd;
		goto out;
	}
	if (mkdirat(pfd, "data", 0700) < 0) {
		err = -errno;
		goto out;
	}
	if ((dfd = tree_open(pfd, "data", O_RDONLY | O_DIRECTORY, 0)) < 0) {
		err = dfd;
		goto out;
	}
	if ((vfd = tree_open(hp->volumes_fd, vol, O_RDONLY | O_DIRECTORY,
	    0)) < 0) {
		err = vfd;
		goto out;
	}
	memset(s, 0, sizeof(*s));
	if ((err = copy_all(vfd, dfd, &s->bytes)) < 0)
		goto out;
	clock_gettime(CLOCK_REALTIME, &now);
	s->sec = now.tv_sec;
	s->nsec = now.tv_nsec;
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->source, sizeof(s->source), "%s", vol);
	if ((fd = tree_open(pfd, "source", O_WRONLY | O_CREAT | O_EXCL,
	    0600)) < 0) {
		err = fd;
		goto out;
	}
	dprintf(fd, "%s %" PRId64 " %" PRId64 " %" PRId64 "\n", vol, s->sec,
	    s->nsec, s->bytes);
	if (fsync(fd) < 0 || close(fd) < 0) {
		err = -errno;
		goto out;
	}
	if (renameat(dir, part, dir, id) < 0)
		err = -errno;
out:
	if (vfd >= 0)
		close(vfd);
	if (dfd >= 0)
		close(dfd);
	if (pfd >= 0)
		close(pfd);
	if (err < 0)
		tree_remove(dir, part, why, sizeof(why));
	return err;
}

static void
snap_fill(const struct hostpath *hp, Csi__V1__Snapshot *out,
    Csi__V1__Timestamp *ts, struct snap *s)
{
	csi__v1__snapshot__init(out);
	csi__v1__timestamp__init(ts);
	out->snapshot_id = s->id;
	out->source_volume_id = s->source;
	if (optional_fields(hp))
		out->size_bytes = s->bytes;
	ts->seconds = s->sec;
	ts->nanos = (int32_t)s->nsec;
	out->creation_time = ts;
	out->ready_to_use = true;
}

static void
create_snapshot(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__CreateSnapshotRequest *req = (const void *)msg;
	Csi__V1__CreateSnapshotResponse out =
	    CSI__V1__CREATE_SNAPSHOT_RESPONSE__INIT;
	Csi__V1__Snapshot snap;
	Csi__V1__Timestamp ts;
	struct snap s;
	int dir, vfd, rc;

	if (!snapshot_id_ok("CreateSnapshot", "name", req->name, r) ||
	    (vfd = volume_open(hp, req->source_volume_id, "CreateSnapshot",
	    r)) < 0)
		return;
	close(vfd);
	note(hp, "CreateSnapshot", req->name, req->source_volume_id,
	    req->n_secrets, (void *const *)req->secrets);
	if ((dir = snapdir_open(hp)) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "CreateSnapshot %s: open "
		    "%s/snapshots: %s", req->name, hp->state_dir,
		    strerror(-dir));
		return;
	}
	rc = snap_read(dir, req->name, &s);
	if (rc > 0 && strcmp(s.source, req->source_volume_id) != 0) {
		reply_error(r, GRPC_STATUS_ALREADY_EXISTS, "CreateSnapshot %s: "
		    "a snapshot of that name exists, of volume %s", req->name,
		    s.source);
		close(dir);
		return;
	}
	if (rc == 0)
		rc = snap_take(hp, dir, req->name, req->source_volume_id, &s);
	close(dir);
	if (rc < 0) {
		reply_error(r, rc == -EXDEV ? GRPC_STATUS_FAILED_PRECONDITION :
		    GRPC_STATUS_INTERNAL, "CreateSnapshot %s of volume %s: %s%s",
		    req->name, req->source_volume_id, strerror(-rc), rc ==
		    -EXDEV ? " (a mount inside the volume is not copied)" : "");
		return;
	}
	snap_fill(hp, &snap, &ts, &s);
	out.snapshot = &snap;
	reply_ok(r, &out.base);
}

static void
delete_snapshot(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__DeleteSnapshotRequest *req = (const void *)msg;
	Csi__V1__DeleteSnapshotResponse out =
	    CSI__V1__DELETE_SNAPSHOT_RESPONSE__INIT;
	char why[400];
	int dir, err;

	if (!snapshot_id_ok("DeleteSnapshot", "snapshot_id", req->snapshot_id,
	    r))
		return;
	note(hp, "DeleteSnapshot", req->snapshot_id, "delete",
	    req->n_secrets, (void *const *)req->secrets);
	if ((dir = snapdir_open(hp)) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "DeleteSnapshot %s: open "
		    "%s/snapshots: %s", req->snapshot_id, hp->state_dir,
		    strerror(-dir));
		return;
	}
	/* Gone already is success: DeleteSnapshot is idempotent. */
	err = tree_remove(dir, req->snapshot_id, why, sizeof(why));
	close(dir);
	if (err < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "DeleteSnapshot %s: "
		    "%s/snapshots/%s", req->snapshot_id, hp->state_dir, why);
		return;
	}
	reply_ok(r, &out.base);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The snapshots' names, sorted, into names: the first LIST_MAX read,
 * which bounds what one plugin lists; -errno. */
static int
list_names(int dir, char **names, size_t *n)
{
	struct dirent *de;
	DIR *d;
	int fd;

	*n = 0;
	if ((fd = tree_open(dir, ".", O_RDONLY | O_DIRECTORY, 0)) < 0)
		return fd;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL && *n < LIST_MAX)
		if (de->d_name[0] != '.' && (names[*n] = strdup(de->d_name)) !=
		    NULL)
			(*n)++;
	closedir(d);
	qsort(names, *n, sizeof(*names), name_cmp);
	return 0;
}

static bool
list_args_ok(const Csi__V1__ListSnapshotsRequest *req, struct rpc_reply *r)
{
	if (req->max_entries < 0) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "ListSnapshots: "
		    "max_entries %d is negative", req->max_entries);
		return false;
	}
	if (req->starting_token[0] != '\0' && (!ident_valid_str(
	    req->starting_token) || req->starting_token[0] == '.')) {
		reply_error(r, GRPC_STATUS_ABORTED, "ListSnapshots: "
		    "starting_token '%s' is not one this plugin gave; list "
		    "again from the start", req->starting_token);
		return false;
	}
	return true;
}

/* The page: entries of names from starting_token on, filtered. */
static void
list_reply(const struct hostpath *hp, int dir,
    const Csi__V1__ListSnapshotsRequest *req, char **names, size_t n,
    struct rpc_reply *r)
{
	Csi__V1__ListSnapshotsResponse out =
	    CSI__V1__LIST_SNAPSHOTS_RESPONSE__INIT;
	Csi__V1__ListSnapshotsResponse__Entry *ents, **list;
	Csi__V1__Snapshot *snaps;
	Csi__V1__Timestamp *ts;
	struct snap *s;
	size_t i, k = 0;

	ents = calloc(n + 1, sizeof(*ents));
	list = calloc(n + 1, sizeof(*list));
	snaps = calloc(n + 1, sizeof(*snaps));
	ts = calloc(n + 1, sizeof(*ts));
	s = calloc(n + 1, sizeof(*s));
	if (ents == NULL || list == NULL || snaps == NULL || ts == NULL ||
	    s == NULL) {
		reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "ListSnapshots: out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(names[i], req->starting_token) < 0 ||
		    (req->snapshot_id[0] != '\0' && strcmp(names[i],
		    req->snapshot_id) != 0) || snap_read(dir, names[i],
		    &s[k]) != 1 || (req->source_volume_id[0] != '\0' &&
		    strcmp(s[k].source, req->source_volume_id) != 0))
			continue;
		if (req->max_entries > 0 && k == (size_t)req->max_entries) {
			out.next_token = names[i];
			break;
		}
		csi__v1__list_snapshots_response__entry__init(&ents[k]);
		snap_fill(hp, &snaps[k], &ts[k], &s[k]);
		ents[k].snapshot = &snaps[k];
		list[k] = &ents[k];
		k++;
	}
	out.n_entries = k;
	out.entries = list;
	reply_ok(r, &out.base);
out:
	free(ents);
	free(list);
	free(snaps);
	free(ts);
	free(s);
}

static void
list_snapshots(struct hostpath *hp, const ProtobufCMessage *msg,
    struct rpc_reply *r)
{
	const Csi__V1__ListSnapshotsRequest *req = (const void *)msg;
	char **names;
	size_t n = 0, i;
	int dir, err;

	if (!list_args_ok(req, r))
		return;
	if ((names = calloc(LIST_MAX, sizeof(*names))) == NULL) {
		reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED,
		    "ListSnapshots: out of memory");
		return;
	}
	if ((dir = snapdir_open(hp)) < 0 || (err = list_names(dir, names,
	    &n)) < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "ListSnapshots: read "
		    "%s/snapshots: %s", hp->state_dir, strerror(dir < 0 ?
		    -dir : -err));
	} else
		list_reply(hp, dir, req, names, n, r);
	if (dir >= 0)
		close(dir);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * CreateVolume's content source, into the new volume's directory name
 * (made just now, empty): the snapshot's copy. Only a snapshot source;
 * false with r filled. No source: true.
 */
bool
snapshot_restore(struct hostpath *hp,
    const Csi__V1__VolumeContentSource *src, const char *name,
    struct rpc_reply *r)
{
	const char *id;
	char rel[BERTH_IDENT_MAX + 8];
	struct snap s;
	int64_t bytes = 0;
	int dir, from, to, err;

	if (src == NULL)
		return true;
	if (src->type_case != CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT ||
	    src->snapshot == NULL) {
		reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "CreateVolume %s: "
		    "this plugin takes only a snapshot as content source "
		    "(it does not advertise CLONE_VOLUME)", name);
		return false;
	}
	id = src->snapshot->snapshot_id;
	if (!snapshot_id_ok("CreateVolume", "snapshot_id", id, r))
		return false;
	if ((dir = snapdir_open(hp)) < 0 || (err = snap_read(dir, id,
	    &s)) <= 0) {
		reply_error(r, dir >= 0 && err == 0 ? GRPC_STATUS_NOT_FOUND :
		    GRPC_STATUS_INTERNAL, "CreateVolume %s: no snapshot %s%s%s",
		    name, id, dir < 0 || err < 0 ? ": " : "", dir < 0 ?
		    strerror(-dir) : err < 0 ? strerror(-err) : "");
		if (dir >= 0)
			close(dir);
		return false;
	}
	snprintf(rel, sizeof(rel), "%s/data", id);
	from = tree_open(dir, rel, O_RDONLY | O_DIRECTORY, 0);
	to = tree_open(hp->volumes_fd, name, O_RDONLY | O_DIRECTORY, 0);
	err = from < 0 ? from : to < 0 ? to : copy_all(from, to, &bytes);
	if (from >= 0)
		close(from);
	if (to >= 0)
		close(to);
	close(dir);
	if (err < 0) {
		reply_error(r, GRPC_STATUS_INTERNAL, "CreateVolume %s: copy "
		    "snapshot %s: %s", name, id, strerror(-err));
		return false;
	}
	return true;
}

const struct rpc_method snapshot_methods[] = {
	{ "/csi.v1.Controller/CreateSnapshot", "CreateSnapshot",
	    HOSTPATH_CONTROLLER, &csi__v1__create_snapshot_request__descriptor,
	    create_snapshot },
	{ "/csi.v1.Controller/DeleteSnapshot", "DeleteSnapshot",
	    HOSTPATH_CONTROLLER, &csi__v1__delete_snapshot_request__descriptor,
	    delete_snapshot },
	{ "/csi.v1.Controller/ListSnapshots", "ListSnapshots",
	    HOSTPATH_CONTROLLER, &csi__v1__list_snapshots_request__descriptor,
	    list_snapshots },
	{ NULL, NULL, 0, NULL, NULL },
};
