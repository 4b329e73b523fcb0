/*
 * cgroup.h: the cgroups tasks run in, as the supervisor sees them: where
 * the hierarchies are mounted, the subtree berth's tasks go under (made
 * and delegated by root in spawn mode; under the supervisor's own,
 * delegated by systemd, in service mode), and what a task's cgroup says
 * about its use of CPU and memory and its out-of-memory kills.
 *
 * A task's cgroup has one path, the same in every hierarchy (crun makes
 * it so with its cgroupfs manager): <parent>/<leaf>. Both cgroup v2 and
 * the v1 memory and cpuacct controllers are read, whichever holds them
 * (a hybrid host has its controllers in v1).
 */
#ifndef BERTH_CGROUP_H
#define BERTH_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CGROUP_PATH_MAX 512

/* Mount points; "" where that hierarchy is not mounted. */
struct cgroup_mounts {
	char v2[CGROUP_PATH_MAX];
	char memory[CGROUP_PATH_MAX];	/* v1 */
	char cpuacct[CGROUP_PATH_MAX];	/* v1 */
	char cpu[CGROUP_PATH_MAX];	/* v1 */
	char pids[CGROUP_PATH_MAX];	/* v1 */
};

/* From mountinfo (NULL: /proc/self/mountinfo). 0, or -errno. */
int cgroup_mounts_find(struct cgroup_mounts *m, const char *mountinfo);

/*
 * Spawn mode, as root: the v2 cgroup parent (made if missing) given to
 * uid and gid the way systemd delegates: the directory, cgroup.procs,
 * cgroup.subtree_control and cgroup.threads. 0, or -1 with err set.
 */
int cgroup_delegate(const struct cgroup_mounts *m, const char *parent,
    uid_t uid, gid_t gid, char *err, size_t errlen);

/*
 * Service mode (Delegate=yes): move this process into a "supervisor"
 * leaf of its own v2 cgroup and make "tasks" beside it; *parent is then
 * that cgroup's path and "/tasks". 0, or -1 with err set.
 */
int cgroup_enter_leaf(const struct cgroup_mounts *m, char *parent,
    size_t n, char *err, size_t errlen);

/*
 * Whether a limit of controller ("memory", "cpu" or "pids") applies to a
 * task under parent: a v1 hierarchy holds it, or v2's parent lists it in
 * its cgroup.controllers. Where neither, crun could not set the limit.
 */
bool cgroup_can_limit(const struct cgroup_mounts *m, const char *parent,
    const char *controller);

struct cgroup_usage {
	bool have_memory, have_cpu;
	uint64_t memory_bytes;		/* now */
	uint64_t cpu_ns;		/* since the cgroup was made */
	uint64_t oom_kills;		/* the kernel's OOM killer, in it */
};

/* What the cgroup at path (parent/leaf) says; -ENOENT if none of the
 * hierarchies has it. */
int cgroup_usage(const struct cgroup_mounts *m, const char *path,
    struct cgroup_usage *u);

#endif
