/*
 * cgroup.c: the cgroups of berth's tasks (see cgroup.h).
 *
 * Owns: finding the hierarchies, the delegation of the tasks' subtree,
 * the supervisor's own leaf in service mode, and reading a task's use.
 * Must not: make or remove a task's cgroup (crun, run by the mounter,
 * does both), or write anywhere but the subtree it was given.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cgroup.h"

static void
set(char *dst, const char *src)
{
	snprintf(dst, CGROUP_PATH_MAX, "%s", src);
}

/* Is word one of the comma-separated options in opts? */
static bool
has_opt(const char *opts, const char *word)
{
	size_t len = strlen(word);
	const char *p;

	for (p = opts; (p = strstr(p, word)) != NULL; p += len)
		if ((p == opts || p[-1] == ',') && (p[len] == ',' ||
		    p[len] == '\0' || p[len] == '\n'))
			return true;
	return false;
}

int
cgroup_mounts_find(struct cgroup_mounts *m, const char *mountinfo)
{
	char line[4096], mnt[CGROUP_PATH_MAX], fstype[64], src[64];
	char opts[1024], *sep;
	FILE *f;

	memset(m, 0, sizeof(*m));
	if ((f = fopen(mountinfo != NULL ? mountinfo :
	    "/proc/self/mountinfo", "re")) == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL) {
		/* id parent dev root MOUNT opts [tags] - FSTYPE SRC SUPER */
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1 ||
		    (sep = strstr(line, " - ")) == NULL ||
		    sscanf(sep + 3, "%63s %63s %1023s", fstype, src, opts) != 3)
			continue;
		if (strcmp(fstype, "cgroup2") == 0 && m->v2[0] == '\0')
			set(m->v2, mnt);
		else if (strcmp(fstype, "cgroup") == 0) {
			if (has_opt(opts, "memory") && m->memory[0] == '\0')
				set(m->memory, mnt);
			if (has_opt(opts, "cpuacct") && m->cpuacct[0] == '\0')
				set(m->cpuacct, mnt);
			if (has_opt(opts, "cpu") && m->cpu[0] == '\0')
				set(m->cpu, mnt);
			if (has_opt(opts, "pids") && m->pids[0] == '\0')
				set(m->pids, mnt);
		}
	}
	fclose(f);
	return 0;
}

/* root + path + "/" + file, refused when too long. */
static int
join(char *buf, size_t n, const char *root, const char *path,
    const char *file)
{
	int len;

	len = snprintf(buf, n, "%s%s%s%s", root, path, file[0] != '\0' ?
	    "/" : "", file);
	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

/* mkdir -p of path under root (both exist up to root). */
static int
mkdirs(const char *root, const char *path)
{
	char buf[2 * CGROUP_PATH_MAX], *p;

	if (join(buf, sizeof(buf), root, path, "") < 0)
		return -ENAMETOOLONG;
	for (p = buf + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int
cgroup_delegate(const struct cgroup_mounts *m, const char *parent,
    uid_t uid, gid_t gid, char *err, size_t errlen)
{
	static const char *const files[] = { "", "cgroup.procs",
		"cgroup.subtree_control", "cgroup.threads" };
	char path[2 * CGROUP_PATH_MAX];
	size_t i;
	int r;

	if (m->v2[0] == '\0') {
		snprintf(err, errlen, "no cgroup v2 hierarchy is mounted");
		return -1;
	}
	if (parent[0] != '/' || strstr(parent, "/..") != NULL) {
		snprintf(err, errlen, "cgroup parent %s is not an absolute path "
		    "without '..'", parent);
		return -1;
	}
	if ((r = mkdirs(m->v2, parent)) < 0) {
		snprintf(err, errlen, "making %s%s: %s", m->v2, parent,
		    strerror(-r));
		return -1;
	}
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (join(path, sizeof(path), m->v2, parent, files[i]) < 0)
			r = -ENAMETOOLONG;
		else if (lchown(path, uid, gid) < 0)
			r = -errno;
		/* cgroup.threads is missing on kernels before 4.14. */
		if (r < 0 && !(r == -ENOENT && i == 3)) {
			snprintf(err, errlen, "giving %s to uid %u: %s", path,
			    (unsigned)uid, strerror(-r));
			return -1;
		}
		r = 0;
	}
	return 0;
}

/* This process's v2 cgroup path ("0::/a/b" in /proc/self/cgroup). */
static int
own_cgroup(char *buf, size_t n)
{
	char line[CGROUP_PATH_MAX + 8];
	FILE *f;
	int r = -ENOENT;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::/", 4) == 0) {
			line[strcspn(line, "\n")] = '\0';
			r = (size_t)snprintf(buf, n, "%.*s", CGROUP_PATH_MAX - 1,
			    line + 3) >= n ? -ENAMETOOLONG : 0;
		}
	fclose(f);
	return r;
}

static int
write_text(const char *path, const char *text)
{
	ssize_t len = (ssize_t)strlen(text);
	int fd, r = 0;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (write(fd, text, (size_t)len) != len)
		r = -errno;
	close(fd);
	return r;
}

int
cgroup_enter_leaf(const struct cgroup_mounts *m, char *parent, size_t n,
    char *err, size_t errlen)
{
	char own[CGROUP_PATH_MAX], path[2 * CGROUP_PATH_MAX];
	size_t len;
	int r;

	if (m->v2[0] == '\0') {
		snprintf(err, errlen, "no cgroup v2 hierarchy is mounted");
		return -1;
	}
	if ((r = own_cgroup(own, sizeof(own))) < 0) {
		snprintf(err, errlen, "reading /proc/self/cgroup: %s",
		    strerror(-r));
		return -1;
	}
	/* Started again inside its leaf: the leaf's parent is ours. */
	len = strlen(own);
	if (len >= 11 && strcmp(own + len - 11, "/supervisor") == 0)
		own[len - 11] = '\0';
	if (strcmp(own, "/") == 0)
		own[0] = '\0';
	/* 0755 under UMask=0077: the helpers read its cgroup.procs to check
	 * that their peer is the supervisor (--peer-cgroup). */
	if ((r = join(path, sizeof(path), own, "/supervisor", "")) < 0 ||
	    (r = mkdirs(m->v2, path)) < 0 ||
	    (r = join(path, sizeof(path), m->v2, own, "supervisor")) < 0 ||
	    (chmod(path, 0755) < 0 && (r = -errno) < 0) ||
	    (r = join(path, sizeof(path), m->v2, own, "supervisor/"
	    "cgroup.procs")) < 0 || (r = write_text(path, "0\n")) < 0 ||
	    (r = join(path, sizeof(path), own, "/tasks", "")) < 0 ||
	    (r = mkdirs(m->v2, path)) < 0) {
		snprintf(err, errlen, "moving into %s%s/supervisor and making "
		    "%s/tasks beside it (is Delegate=yes set?): %s", m->v2, own,
		    own, strerror(-r));
		return -1;
	}
	if ((size_t)snprintf(parent, n, "%s/tasks", own) >= n) {
		snprintf(err, errlen, "cgroup %s is too long", own);
		return -1;
	}
	return 0;
}

/* The number after key in a "key value" file, or the file's first number
 * when key is NULL. */
static int
read_num(const char *root, const char *path, const char *file,
    const char *key, uint64_t *v)
{
	char name[2 * CGROUP_PATH_MAX], buf[4096], *p;
	ssize_t len;
	int fd;

	if (root[0] == '\0' || join(name, sizeof(name), root, path, file) < 0)
		return -ENOENT;
	if ((fd = open(name, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		return -errno;
	buf[len] = '\0';
	p = buf;
	if (key != NULL) {
		size_t klen = strlen(key);

		for (; p != NULL; p = (p = strchr(p, '\n')) ? p + 1 : NULL)
			if (strncmp(p, key, klen) == 0 && p[klen] == ' ')
				break;
		if (p == NULL)
			return -ENOENT;
		p += klen + 1;
	}
	*v = strtoull(p, NULL, 10);
	return 0;
}

bool
cgroup_can_limit(const struct cgroup_mounts *m, const char *parent,
    const char *controller)
{
	char name[2 * CGROUP_PATH_MAX], buf[1024], *w, *save;
	const char *v1 = strcmp(controller, "memory") == 0 ? m->memory :
	    strcmp(controller, "cpu") == 0 ? m->cpu : m->pids;
	ssize_t len;
	int fd;

	if (v1[0] != '\0')
		return true;
	if (m->v2[0] == '\0' || join(name, sizeof(name), m->v2, parent,
	    "cgroup.controllers") < 0 ||
	    (fd = open(name, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[len > 0 ? len : 0] = '\0';
	for (w = strtok_r(buf, " \n", &save); w != NULL;
	    w = strtok_r(NULL, " \n", &save))
		if (strcmp(w, controller) == 0)
			return true;
	return false;
}

int
cgroup_usage(const struct cgroup_mounts *m, const char *path,
    struct cgroup_usage *u)
{
	uint64_t usec;

	memset(u, 0, sizeof(*u));
	/* v2 when it holds the controller, v1 when that does. */
	if (read_num(m->v2, path, "memory.current", NULL,
	    &u->memory_bytes) == 0) {
		u->have_memory = true;
		(void)read_num(m->v2, path, "memory.events", "oom_kill",
		    &u->oom_kills);
	} else if (read_num(m->memory, path, "memory.usage_in_bytes", NULL,
	    &u->memory_bytes) == 0) {
		u->have_memory = true;
		(void)read_num(m->memory, path, "memory.oom_control",
		    "oom_kill", &u->oom_kills);
	}
	if (read_num(m->cpuacct, path, "cpuacct.usage", NULL,
	    &u->cpu_ns) == 0)
		u->have_cpu = true;
	else if (read_num(m->v2, path, "cpu.stat", "usage_usec", &usec) == 0) {
		u->cpu_ns = usec * 1000;
		u->have_cpu = true;
	}
	return u->have_memory || u->have_cpu ? 0 : -ENOENT;
}
