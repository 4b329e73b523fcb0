/*
 * test_attack_taskverb.c: StartTask against the real berth-mounter and
 * the real crun, as root in a private mount namespace. The peer (this
 * test) is seen as uid 70050, inside the --task-ids range 70000-70099.
 *
 * - a compromised supervisor asks for uid 0, its own uid or gid, an id
 *   outside the range, a user not on users.allow or with other ids than
 *   its line, malformed fields; plants a symlink where the bundle or the
 *   task's status dir goes; or finds root's template or allow-list made
 *   writable by another: each is refused, and nothing is written where
 *   the symlink points;
 * - one task really starts: task_probe (a test fixture standing in for
 *   berth-shim as the container's init) reports over its channel its
 *   uid, that it is pid 1 of its own pid namespace, what / holds, that
 *   the data dir beyond its own task dir is not there, and that it may
 *   write its status dir; the host sees it in its cgroup leaf with the
 *   limits asked for, and the leaf goes when the channel closes; then
 *   CleanupAlloc leaves nothing of it: bundle, status dir (its owner's,
 *   shut, a log in it) and task dir are gone; a symlink planted where
 *   one goes is never followed.
 *
 * The suite ends with "N attacks tried, M succeeded".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "mclient.h"

#define A "alloc-1"
#define PEER 70050
#define PERM BERTH__ERROR_CODE__ERROR_PERMISSION
#define BAD BERTH__ERROR_CODE__ERROR_BAD_REQUEST
#define MEM (64 << 20)

static struct mclient c;
static char *conf, *elsewhere, cg[64];

/* A whole small file, NUL-terminated (its length in *len), or NULL. */
static char *
slurp(const char *path, size_t *len)
{
	char *buf = calloc(1, 65536);
	ssize_t n;
	int fd;

	if (buf == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		free(buf);
		return NULL;
	}
	n = read(fd, buf, 65535);
	close(fd);
	*len = n > 0 ? (size_t)n : 0;
	return buf;
}

static void
setup(void)
{
	static const char *args[10];
	char path[1024], *tpl;
	size_t len;

	harness_private_mounts();
	conf = harness_tmpdir("conf");
	elsewhere = harness_tmpdir("elsewhere");
	snprintf(path, sizeof(path), "%s/contrib/sandbox/task-sandbox.json",
	    getenv("BERTH_SOURCE_DIR"));
	tpl = slurp(path, &len);
	ck_assert_ptr_nonnull(tpl);
	snprintf(path, sizeof(path), "%s/task-sandbox.json", conf);
	harness_write(path, tpl);
	free(tpl);
	snprintf(path, sizeof(path), "%s/users.allow", conf);
	harness_write(path, "# NAME UID GID\nsvc 70500 70501\nother 70600 "
	    "70600\n");
	snprintf(cg, sizeof(cg), "/berth-test-%ld", (long)getpid());
	harness_track_cgroup(cg);
	args[0] = "--task-conf";
	args[1] = conf;
	args[2] = "--task-ids";
	args[3] = "70000-70099";
	args[4] = "--shim";
	args[5] = harness_bin("tests/task_probe");
	args[6] = "--cgroup-parent";
	args[7] = cg;
	args[8] = NULL;
	mc_start_opts(&c, NULL, args, PEER);
}

static void
teardown(void)
{
	mc_stop(&c);
	harness_rmtree(conf);
	harness_rmtree(elsewhere);
	free(conf);
	free(elsewhere);
	/* crun makes the parent in every hierarchy, not only these. */
	harness_cgroup_remove(cg);
}

static int
start(const char *task, unsigned uid, unsigned gid, const char *user,
    int fds[2])
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *rep = NULL;
	Berth__StartTask r = BERTH__START_TASK__INIT;
	int mine[2] = { -1, -1 }, *f = fds != NULL ? fds : mine, code;

	f[0] = f[1] = -1;
	r.alloc_id = B(A);
	r.task = B(task);
	r.uid = uid;
	r.gid = gid;
	if (user != NULL)
		r.user = B(user);
	r.memory_bytes = MEM;
	r.pids_max = 32;
	env.body_case = BERTH__ENVELOPE__BODY_START_TASK;
	env.start_task = &r;
	code = mc_call(&c, &env, f, &rep);
	if (code == 0)
		ck_assert_int_gt(rep->task_started->pid, 1);
	berth__envelope__free_unpacked(rep, NULL);
	if (fds == NULL && mine[0] >= 0)
		close(mine[0]);
	if (fds == NULL && mine[1] >= 0)
		close(mine[1]);
	return code;
}

START_TEST(ids_of_root_berth_or_outside_the_range)
{
	ck_assert_int_eq(start("web", 0, 70001, NULL, NULL), BAD);
	ck_assert_int_eq(start("web", 70001, 0, NULL, NULL), BAD);
	ck_assert_int_eq(start("web", PEER, 70001, NULL, NULL), PERM);
	ck_assert_int_eq(start("web", 70001, PEER, NULL, NULL), PERM);
	ck_assert_int_eq(start("web", 80000, 70001, NULL, NULL), PERM);
	ck_assert_int_eq(start("web", 70001, 69999, NULL, NULL), PERM);
	ck_assert_int_eq(start("web", 70100, 70100, NULL, NULL), PERM);
	ck_assert_int_eq(start("web", (unsigned)-1, 70001, NULL, NULL), BAD);
}
END_TEST

START_TEST(users_not_on_the_allow_list_or_with_other_ids)
{
	char path[1024];

	ck_assert_int_eq(start("web", 70500, 70501, "nobody", NULL), PERM);
	ck_assert_int_eq(start("web", 70500, 70500, "svc", NULL), PERM);
	ck_assert_int_eq(start("web", 70600, 70501, "svc", NULL), PERM);
	/* A named user is never in the range by default. */
	ck_assert_int_eq(start("web", 70001, 70001, "svc", NULL), PERM);
	ck_assert_int_eq(start("web", 70500, 70501, "../svc", NULL), BAD);
	/* An allow-list another may write is no allow-list. */
	snprintf(path, sizeof(path), "%s/users.allow", conf);
	ck_assert_int_eq(chmod(path, 0664), 0);
	ck_assert_int_eq(start("web", 70500, 70501, "svc", NULL), PERM);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(chown(path, 70001, 0), 0);
	ck_assert_int_eq(start("web", 70500, 70501, "svc", NULL), PERM);
}
END_TEST

START_TEST(a_template_that_is_not_roots)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/task-sandbox.json", conf);
	ck_assert_int_eq(chown(path, 70001, 70001), 0);
	ck_assert_int_eq(start("web", 70001, 70001, NULL, NULL), PERM);
	ck_assert_int_eq(chown(path, 0, 0), 0);
	ck_assert_int_eq(chmod(path, 0646), 0);
	ck_assert_int_eq(start("web", 70001, 70001, NULL, NULL), PERM);
	ck_assert_int_eq(chmod(conf, 0775), 0);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(start("web", 70001, 70001, NULL, NULL), PERM);
	ck_assert_int_eq(access(mc_path(&c, "mounter/tasks/" A "/web"), F_OK),
	    -1);
}
END_TEST

/* A symlink planted where the bundle, then the status dir, goes. */
START_TEST(symlinks_at_the_bundle_or_the_status_dir)
{
	char path[1024];
	struct stat st;

	ck_assert_int_eq(mkdir(mc_path(&c, "mounter"), 0755), 0);
	ck_assert_int_eq(mkdir(mc_path(&c, "mounter/tasks"), 0755), 0);
	ck_assert_int_eq(mkdir(mc_path(&c, "mounter/tasks/" A), 0755), 0);
	ck_assert_int_eq(symlink(elsewhere, mc_path(&c,
	    "mounter/tasks/" A "/web")), 0);
	ck_assert_int_eq(start("web", 70001, 70001, NULL, NULL), PERM);
	snprintf(path, sizeof(path), "%s/config.json", elsewhere);
	ck_assert_int_eq(access(path, F_OK), -1);

	ck_assert_int_eq(mkdir(mc_path(&c, "shim"), 0755), 0);
	ck_assert_int_eq(mkdir(mc_path(&c, "shim/" A), 0755), 0);
	ck_assert_int_eq(symlink(elsewhere, mc_path(&c, "shim/" A "/db")),
	    0);
	ck_assert_int_eq(start("db", 70001, 70001, NULL, NULL), PERM);
	ck_assert_int_eq(stat(elsewhere, &st), 0);
	ck_assert_int_eq(st.st_uid, 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	/* Cleaned up: a symlink is never followed (and stays, not being a
	 * directory berth made); what it points to is untouched. */
	snprintf(path, sizeof(path), "%s/kept", elsewhere);
	harness_write(path, "kept");
	ck_assert_int_eq(chown(elsewhere, 70001, 70001), 0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	ck_assert_int_eq(stat(elsewhere, &st), 0);
	ck_assert(st.st_uid == 70001 && (st.st_mode & 07777) == 0755);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_eq(lstat(mc_path(&c, "shim/" A "/db"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
}
END_TEST

/* A line of the probe's report that starts with key, or NULL. */
static const char *
line(const char *report, const char *key)
{
	const char *p = report;

	for (; p != NULL && *p != '\0'; p = strchr(p, '\n'), p += p != NULL)
		if (strncmp(p, key, strlen(key)) == 0)
			return p + strlen(key);
	return NULL;
}

static void
assert_cgroup(const char *hierarchy, const char *file, const char *want)
{
	char path[512], *got;
	size_t len;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s/" A "@web/%s",
	    hierarchy, cg, file);
	got = slurp(path, &len);
	ck_assert_msg(got != NULL, "%s: %s", path, strerror(errno));
	if (want != NULL)
		ck_assert_msg(strcmp(got, want) == 0, "%s: %s", path, got);
	else
		ck_assert_msg(len > 0, "%s is empty", path);
	free(got);
}

START_TEST(a_task_starts_confined_and_reports_over_its_channel)
{
	char report[8192], ns[64], self[64], beyond[1024], leaf[512];
	struct pollfd pfd;
	struct passwd *pw;
	struct stat st;
	const char *p;
	int fds[2], n;

	ck_assert_int_eq(mc_prepare_task(&c, A, "web", 70001, 70001), 0);
	ck_assert_int_eq(start("web", 70001, 70001, NULL, fds), 0);
	ck_assert_int_ge(fds[0], 0);
	ck_assert_int_ge(fds[1], 0);
	snprintf(beyond, sizeof(beyond), "%s/mounter", c.data);
	ck_assert_int_gt(send(fds[1], beyond, strlen(beyond), 0), 0);
	pfd = (struct pollfd){ fds[1], POLLIN, 0 };
	ck_assert_msg(poll(&pfd, 1, 20000) == 1, "no report from the task");
	n = (int)recv(fds[1], report, sizeof(report) - 1, 0);
	ck_assert_msg(n > 0, "the task's channel: %s", n < 0 ?
	    strerror(errno) : "closed");
	report[n] = '\0';
	ck_assert_msg(line(report, "uid 70001 gid 70001 pid 1\n") != NULL,
	    "%s", report);
	n = (int)readlink("/proc/self/ns/pid", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	ck_assert_ptr_nonnull(p = line(report, "pidns "));
	snprintf(ns, sizeof(ns), "%.*s", (int)strcspn(p, "\n"), p);
	ck_assert_str_ne(ns, self);
	ck_assert_msg(line(report, "path absent") != NULL, "%s", report);
	ck_assert_msg(line(report, "status written") != NULL, "%s", report);
	/* / holds what root's template binds, and no more. */
	ck_assert_ptr_nonnull(p = line(report, "root "));
	ck_assert_msg(strstr(p, " berth-shim") != NULL ||
	    strncmp(p, "berth-shim", 10) == 0, "%s", report);
	ck_assert_msg(strstr(p, " run") == NULL && strstr(p, " home") == NULL &&
	    strstr(p, " var") == NULL && strstr(p, " root") == NULL &&
	    strstr(p, " sys") == NULL, "%s", report);
	/* Its status dir: its own, the group of berth (else the peer's). */
	ck_assert_int_eq(stat(mc_path(&c, "shim/" A "/web"), &st), 0);
	ck_assert_int_eq(st.st_uid, 70001);
	ck_assert_int_eq(st.st_gid, (pw = getpwnam("berth")) != NULL ?
	    pw->pw_gid : PEER);
	ck_assert_int_eq(st.st_mode & 07777, 02750);
	ck_assert_int_eq(stat(mc_path(&c, "shim/" A "/web/probe"), &st), 0);
	ck_assert_int_eq(st.st_uid, 70001);
	/* The host sees it in its leaf, with its limits. */
	assert_cgroup("memory", "memory.limit_in_bytes", "67108864\n");
	assert_cgroup("pids", "pids.max", "32\n");
	assert_cgroup("pids", "cgroup.procs", NULL);
	assert_cgroup("unified", "cgroup.procs", NULL);
	/* Its channel closed, it ends, and crun with it. */
	close(fds[1]);
	pfd = (struct pollfd){ fds[0], POLLIN, 0 };
	ck_assert_msg(poll(&pfd, 1, 20000) == 1, "crun did not end");
	close(fds[0]);
	snprintf(leaf, sizeof(leaf), "/sys/fs/cgroup/pids%s/" A "@web", cg);
	for (n = 0; n < 100 && access(leaf, F_OK) == 0; n++)
		usleep(50000);
	ck_assert_msg(access(leaf, F_OK) < 0, "%s is left", leaf);
	/* The alloc gone, nothing StartTask made stays: its status dir,
	 * with a log in it, shut by its owner, is taken back and emptied. */
	snprintf(leaf, sizeof(leaf), "%s", mc_path(&c, "shim/" A
	    "/web/stdout"));
	harness_write(leaf, "a task's output\n");
	ck_assert_int_eq(chown(leaf, 70001, 70001), 0);
	ck_assert_int_eq(chmod(mc_path(&c, "shim/" A "/web"), 0700), 0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	ck_assert_int_eq(access(mc_path(&c, "shim/" A), F_OK), -1);
	ck_assert_int_eq(access(mc_path(&c, "mounter/tasks/" A), F_OK), -1);
	ck_assert_int_eq(access(mc_path(&c, "allocs/" A), F_OK), -1);
	ck_assert_int_eq(access(mc_path(&c, "mounter/tasks"), F_OK), 0);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("attack_taskverb");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, ids_of_root_berth_or_outside_the_range);
	tcase_add_test(tc, users_not_on_the_allow_list_or_with_other_ids);
	tcase_add_test(tc, a_template_that_is_not_roots);
	tcase_add_test(tc, symlinks_at_the_bundle_or_the_status_dir);
	tcase_add_test(tc, a_task_starts_confined_and_reports_over_its_channel);
	return harness_run_attacks("attack_taskverb", tc, NULL);
}
