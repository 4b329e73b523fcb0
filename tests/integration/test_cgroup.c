/*
 * test_cgroup.c: supervisor/base/cgroup.c on this host's real cgroups (as
 * root): the hierarchies found from mountinfo; a subtree delegated as
 * spawn mode does it; a process's CPU and memory use read back from its
 * cgroup, and its out-of-memory kill counted, whether the controllers are
 * in v1 (a hybrid host) or in v2. Every cgroup made is removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>

#include "cgroup.h"
#include "harness.h"

static struct cgroup_mounts m;

static void
setup(void)
{
	ck_assert_int_eq(cgroup_mounts_find(&m, NULL), 0);
	ck_assert_msg(m.v2[0] != '\0' || m.memory[0] != '\0',
	    "neither cgroup v2 nor the v1 memory controller is mounted");
}

static void
put(const char *root, const char *path, const char *file, const char *text)
{
	char name[1200];
	int fd;

	snprintf(name, sizeof(name), "%s%s/%s", root, path, file);
	ck_assert_msg((fd = open(name, O_WRONLY)) >= 0, "%s: %s", name,
	    strerror(errno));
	ck_assert_msg(write(fd, text, strlen(text)) == (ssize_t)strlen(text),
	    "%s: %s", name, strerror(errno));
	close(fd);
}

static void
rmdir_in(const char *root, const char *path)
{
	char name[1200];
	int i;

	if (root[0] == '\0')
		return;
	snprintf(name, sizeof(name), "%s%s", root, path);
	/* A killed process leaves its cgroup a moment after its exit. */
	for (i = 0; i < 100 && rmdir(name) < 0 && errno == EBUSY; i++)
		usleep(20000);
}

START_TEST(the_hierarchies_are_found_from_mountinfo)
{
	struct cgroup_mounts f;
	char *dir = harness_tmpdir("cg-mountinfo"), path[512];

	snprintf(path, sizeof(path), "%s/mountinfo", dir);
	harness_write(path, "25 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
	    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:5 - "
	    "cgroup2 cgroup2 rw,nsdelegate\n"
	    "27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup "
	    "rw,cpu,cpuacct\n"
	    "28 25 0:25 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	    "29 25 0:26 / /sys/fs/cgroup/memoryx rw - cgroup cgroup "
	    "rw,name=memoryx\n");
	ck_assert_int_eq(cgroup_mounts_find(&f, path), 0);
	ck_assert_str_eq(f.v2, "/sys/fs/cgroup/unified");
	ck_assert_str_eq(f.cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
	ck_assert_str_eq(f.memory, "/sys/fs/cgroup/memory");
	harness_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(spawn_mode_delegates_the_subtree)
{
	char parent[128], path[1200], err[256];
	struct stat st;
	static const char *const files[] = { "", "/cgroup.procs",
		"/cgroup.subtree_control" };
	size_t i;

	if (m.v2[0] == '\0')
		return;
	snprintf(parent, sizeof(parent), "/berth-test-%d/tasks", getpid());
	ck_assert_msg(cgroup_delegate(&m, parent, 70200, 70201, err,
	    sizeof(err)) == 0, "%s", err);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s%s%s", m.v2, parent, files[i]);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(st.st_uid, 70200);
		ck_assert_uint_eq(st.st_gid, 70201);
	}
	/* Again: it is there already, and stays given. */
	ck_assert_int_eq(cgroup_delegate(&m, parent, 70200, 70201, err,
	    sizeof(err)), 0);
	ck_assert_int_eq(cgroup_delegate(&m, "berth", 1, 1, err,
	    sizeof(err)), -1);
	rmdir_in(m.v2, parent);
	snprintf(parent, sizeof(parent), "/berth-test-%d", getpid());
	rmdir_in(m.v2, parent);
	snprintf(path, sizeof(path), "%s%s", m.v2, parent);
	ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

/* The child: CPU, then 24 MiB touched, then (on a byte) far more. */
static void __attribute__((noreturn))
child(int go, int ready)
{
	volatile unsigned long x = 0;
	struct timespec t0, t;
	char *p, c;

	/* 300 ms of CPU, however long a busy machine takes to give it. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) /
	    1000000 < 300);
	(void)x;
	if ((p = mmap(NULL, 24 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		_exit(2);
	memset(p, 1, 24 << 20);
	c = 'r';
	(void)!write(ready, &c, 1);
	if (read(go, &c, 1) != 1)
		_exit(3);
	if ((p = mmap(NULL, 256 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		_exit(4);
	memset(p, 1, 256 << 20);
	_exit(0);
}

START_TEST(use_and_an_oom_kill_are_read_from_the_cgroup)
{
	char path[128], pid[32], dir[700], c;
	struct cgroup_usage u;
	const char *mem;
	int go[2], ready[2], st;
	pid_t p;

	snprintf(path, sizeof(path), "/berth-test-use-%d", getpid());
	/* The memory controller where it is: v1 here, else v2's. */
	mem = m.memory[0] != '\0' ? m.memory : m.v2;
	snprintf(dir, sizeof(dir), "%s%s", mem, path);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	if (m.cpuacct[0] != '\0') {
		snprintf(dir, sizeof(dir), "%s%s", m.cpuacct, path);
		ck_assert_int_eq(mkdir(dir, 0755), 0);
	}
	if (mem == m.v2)
		put(m.v2, path, "memory.max", "67108864");
	else
		put(mem, path, "memory.limit_in_bytes", "67108864");
	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_ge(p = fork(), 0);
	if (p == 0) {
		close(go[1]);
		close(ready[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		child(go[0], ready[1]);
	}
	harness_track_pid(p);
	close(go[0]);
	close(ready[1]);
	snprintf(pid, sizeof(pid), "%d", (int)p);
	put(mem, path, "cgroup.procs", pid);
	if (m.cpuacct[0] != '\0')
		put(m.cpuacct, path, "cgroup.procs", pid);
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);

	ck_assert_int_eq(cgroup_usage(&m, path, &u), 0);
	ck_assert(u.have_memory);
	ck_assert_msg(u.memory_bytes >= 24u << 20, "memory %llu",
	    (unsigned long long)u.memory_bytes);
	ck_assert_uint_eq(u.oom_kills, 0);
	if (m.cpuacct[0] != '\0') {
		ck_assert(u.have_cpu);
		ck_assert_msg(u.cpu_ns >= 250000000ULL, "cpu %llu ns",
		    (unsigned long long)u.cpu_ns);
	}
	/* Past its 64 MiB: the kernel kills it, and the cgroup says so. */
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	ck_assert_int_eq(waitpid(p, &st, 0), p);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	ck_assert_int_eq(cgroup_usage(&m, path, &u), 0);
	ck_assert_uint_ge(u.oom_kills, 1);
	rmdir_in(mem, path);
	rmdir_in(m.cpuacct, path);
	ck_assert_int_eq(cgroup_usage(&m, path, &u), -ENOENT);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("cgroup");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_hierarchies_are_found_from_mountinfo);
	tcase_add_test(tc, spawn_mode_delegates_the_subtree);
	tcase_add_test(tc, use_and_an_oom_kill_are_read_from_the_cgroup);
	return harness_run("cgroup", tc);
}
