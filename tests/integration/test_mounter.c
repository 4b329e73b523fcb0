/*
 * test_mounter.c: berth-mounter's verbs, end to end: the real binary as
 * root in a private mount namespace, driven as the supervisor drives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <grp.h>

#include "mclient.h"

#define T "hostpath"
#define P "hp"
#define A "alloc-1"

START_TEST(prepare_bind_unbind_cleanup)
{
	struct mclient c;
	struct statvfs sv;
	struct stat st;
	char *before, what[1024], path[1100];
	bool mounted = true;
	int fd;

	harness_private_mounts();
	before = mounts_snapshot();
	mc_start(&c, NULL);
	mc_publish(&c, T, P, A, "vol1");
	ck_assert(is_mountpoint(mc_path(&c, "csi/" T "/" P)));
	ck_assert(is_mountpoint(mc_path(&c, "csi/plugins/" A)));
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol1",
	    &mounted), 0);
	ck_assert(!mounted);
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, "vol1",
	    &mounted), 0);
	ck_assert(mounted);
	/* The task's group writes in its directory, which is root's and
	 * sticky: volumes/ in it is root's, and stays where it is. */
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", 1000, 1000), 0);
	ck_assert_int_eq(stat(mc_path(&c, "allocs/" A "/web"), &st), 0);
	ck_assert(st.st_uid == 0 && st.st_gid == 1000 &&
	    (st.st_mode & 07777) == 01775);
	ck_assert_int_eq(stat(mc_path(&c, "allocs/" A "/web/volumes"), &st), 0);
	ck_assert(st.st_uid == 0 && (st.st_mode & 07777) == 0755);
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", 0, 1000),
	    BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	/* Prepared again (a restart), though an older berth gave it to the
	 * task's user, who shut it to others. */
	ck_assert_int_eq(chown(mc_path(&c, "allocs/" A "/web"), 1000, 1000),
	    0);
	ck_assert_int_eq(chmod(mc_path(&c, "allocs/" A "/web"), 0700), 0);
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", 1000, 1000), 0);
	ck_assert_int_eq(stat(mc_path(&c, "allocs/" A "/web"), &st), 0);
	ck_assert(st.st_uid == 0 && (st.st_mode & 07777) == 01775);
	/* A plugin the supervisor runs gets its socket dir; the root not. */
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "own1", 1000,
	    1000), 0);
	ck_assert_int_eq(stat(mc_path(&c, "csi/plugins/own1"), &st), 0);
	ck_assert(st.st_uid == 1000 && st.st_gid == 1000 &&
	    (st.st_mode & 07777) == 02750);
	/* Its socket in it, the dir shut to others: prepared again all
	 * the same, and swept whole by the cleanup below. */
	fd = open(mc_path(&c, "csi/plugins/own1/csi.sock"), O_CREAT | O_WRONLY,
	    0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchown(fd, 1000, 1000), 0);
	close(fd);
	ck_assert_int_eq(chmod(mc_path(&c, "csi/plugins/own1"), 0700), 0);
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "own1", 1000,
	    1000), 0);
	ck_assert_int_eq(chmod(mc_path(&c, "csi/plugins/own1"), 0700), 0);
	ck_assert_int_eq(stat(mc_path(&c, "csi/" T "/" P), &st), 0);
	ck_assert(st.st_uid == 0);
	ck_assert(is_mountpoint(mc_path(&c, "csi/plugins/own1")));
	ck_assert_int_eq(stat(mc_path(&c, "csi/plugins/" A), &st), 0);
	ck_assert(st.st_uid == 0);
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "own3", 0, 1000),
	    0);
	ck_assert_int_eq(stat(mc_path(&c, "csi/plugins/own3"), &st), 0);
	ck_assert(st.st_uid == 0 && st.st_gid == 1000 &&
	    (st.st_mode & 07777) == 02750);
	ck_assert_int_eq(mc_cleanup(&c, "own3"), 0);
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "own2", 1000, 0),
	    BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "own2", 1000,
	    (unsigned)-1), BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	ck_assert_int_eq(access(mc_path(&c, "csi/plugins/own2"), F_OK), -1);
	/* Read-write, then read-only with nosuid and nodev from the start. */
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false), 0);
	ck_assert(is_mountpoint(mc_path(&c, "allocs/" A "/web/volumes/data")));
	fd = open(mc_path(&c, "allocs/" A "/web/volumes/data/f"),
	    O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(statvfs(mc_path(&c, "allocs/" A "/web/volumes/data"),
	    &sv), 0);
	ck_assert(sv.f_flag & ST_NOSUID);
	ck_assert(sv.f_flag & ST_NODEV);
	ck_assert(!(sv.f_flag & ST_RDONLY));
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false),
	    BERTH__ERROR_CODE__ERROR_CONFLICT);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "db", "ro", true), 0);
	ck_assert_int_eq(statvfs(mc_path(&c, "allocs/" A "/db/volumes/ro"),
	    &sv), 0);
	ck_assert(sv.f_flag & ST_RDONLY);
	ck_assert(access(mc_path(&c, "allocs/" A "/db/volumes/ro/f"), F_OK) ==
	    0);
	/* Not published: nothing to bind. */
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, "vol2", NULL), 0);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol2", "web", "v2", false),
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND);
	ck_assert_int_eq(mc_unbind(&c, A, "web", "data"), 0);
	ck_assert(access(mc_path(&c, "allocs/" A "/web/volumes/data"), F_OK) <
	    0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	ck_assert(access(mc_path(&c, "allocs/" A), F_OK) < 0);
	ck_assert(access(mc_path(&c, "csi/plugins/" A), F_OK) < 0);
	ck_assert(access(mc_path(&c, "csi/" T "/" P "/per-alloc/" A), F_OK) <
	    0);
	ck_assert_int_eq(mc_cleanup(&c, "own1"), 0);
	ck_assert(access(mc_path(&c, "csi/plugins/own1"), F_OK) < 0);
	/* The plugin's last alloc: its root stays while a volume is staged
	 * in it (never entered: the staged volume's files stay), then goes;
	 * at the volume's one staging path, then at an older berth's
	 * per-usage one. */
	for (int old = 0; old < 2; old++) {
		if (old) {
			ck_assert_int_eq(mc_prepare_plugin(&c, T, P, "gone"),
			    0);
			ck_assert_int_eq(mc_prepare_old_staging(&c, T, P,
			    "default", "vol1"), 0);
		} else
			ck_assert_int_eq(mc_prepare_volume(&c, true, T, P,
			    "default", "vol1", NULL), 0);
		snprintf(what, sizeof(what), "%s", mc_path(&c, old ? "csi/" T
		    "/" P "/staging/default/vol1/" MC_USAGE : "csi/" T "/" P
		    "/staging/default/vol1"));
		ck_assert_int_eq(mount("tmpfs", what, "tmpfs", 0, "size=1m"),
		    0);
		snprintf(path, sizeof(path), "%s/empty", what);
		ck_assert_int_eq(mkdir(path, 0755), 0);
		ck_assert_int_eq(mc_cleanup_plugin(&c, "gone", T, P), 0);
		ck_assert(is_mountpoint(mc_path(&c, "csi/" T "/" P)));
		ck_assert(access(path, F_OK) == 0);
		ck_assert_int_eq(umount2(what, 0), 0);
		ck_assert_int_eq(mc_cleanup_plugin(&c, "gone", T, P), 0);
		ck_assert(access(mc_path(&c, "csi/" T "/" P), F_OK) < 0);
	}
	ck_assert_int_eq(mc_cleanup_plugin(&c, "gone", T, "bad/id"),
	    BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	mc_release_plugin(&c, T, P);
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	free(before);
	mc_stop(&c);
}
END_TEST

/*
 * As uid:gid with no capability (a task, an unprivileged plugin): 0 when
 * mkdir(path) (dir) or creating the file path succeeds, else errno.
 */
static int
as_user(unsigned id, const char *path, bool dir)
{
	pid_t pid;
	int st, fd;

	if ((pid = fork()) == 0) {
		if (setgroups(0, NULL) < 0 || setgid(id) < 0 || setuid(id) < 0)
			_exit(100);
		if (dir)
			_exit(mkdir(path, 0755) < 0 ? errno : 0);
		fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0644);
		_exit(fd < 0 ? errno : 0);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static uid_t
owner_of(struct mclient *c, const char *rel, gid_t *gid, mode_t *mode)
{
	struct stat st;

	ck_assert_int_eq(stat(mc_path(c, rel), &st), 0);
	if (gid != NULL)
		*gid = st.st_gid;
	if (mode != NULL)
		*mode = st.st_mode & 07777;
	return st.st_uid;
}

#define PUB "csi/" T "/" P "/per-alloc/" A "/v1"
#define STG "csi/" T "/" P "/staging/default/v1"

/*
 * The staging dir and a publish target's parent are the node plugin's own
 * user's (its socket dir's owner): an unprivileged plugin, which no
 * capability lets past its mode, creates its target and writes where it
 * stages; a root plugin's stay root's. A read-write bind with a group
 * makes a root:root 0755 volume root that group's (02775), and a task of
 * that group, not root, writes in it; a read-only bind changes nothing.
 */
START_TEST(the_plugins_user_owns_its_parents_and_the_group_writes)
{
	static const char *const args[] = { "--task-ids", "60000-60099",
	    NULL };
	struct mclient c;
	char *before, what[1024];
	gid_t g;
	mode_t mode;

	harness_private_mounts();
	before = mounts_snapshot();
	mc_start_opts(&c, NULL, args, 0);
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, "root-pl"), 0);
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "task-pl", 60001,
	    60001), 0);
	c.plugin_alloc = "task-pl";
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "v1",
	    NULL), 0);
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, "v1", NULL), 0);
	ck_assert_int_eq(owner_of(&c, STG, NULL, NULL), 60001);
	ck_assert_int_eq(owner_of(&c, PUB, NULL, NULL), 60001);
	ck_assert_int_eq(owner_of(&c, "csi/" T "/" P "/staging/default", NULL,
	    NULL), 0);
	ck_assert_int_eq(owner_of(&c, "csi/" T "/" P "/per-alloc/" A, NULL,
	    NULL), 0);
	ck_assert_int_eq(as_user(60001, mc_path(&c, PUB "/" MC_USAGE), true),
	    0);
	ck_assert_int_eq(as_user(60001, mc_path(&c, STG "/probe"), false), 0);
	ck_assert_int_eq(unlink(mc_path(&c, STG "/probe")), 0);
	ck_assert_int_eq(as_user(60002, mc_path(&c, PUB "/x"), true), EACCES);
	/* A root plugin's are root's, taken back if they were not. */
	c.plugin_alloc = "root-pl";
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "v1",
	    NULL), 0);
	ck_assert_int_eq(owner_of(&c, STG, NULL, NULL), 0);
	/* What the plugin's publish mounts, root:root 0755; an unprivileged
	 * plugin could not mount in the host's namespace: the test does. */
	ck_assert_int_eq(mount("tmpfs", mc_path(&c, PUB "/" MC_USAGE), "tmpfs",
	    0, "size=1m,mode=0755"), 0);
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", 60002, 60002), 0);
	ck_assert_int_eq(mc_prepare_task(&c, A, "db", 60003, 60003), 0);
	/* Read-only: left as it is. A gid that is no task's: refused. */
	c.group = 60003;
	ck_assert_int_eq(mc_bind(&c, T, P, A, "v1", "db", "ro", true), 0);
	ck_assert_int_eq(owner_of(&c, PUB "/" MC_USAGE, &g, &mode), 0);
	ck_assert(g == 0 && mode == 0755);
	c.group = 1000;
	ck_assert_int_eq(mc_bind(&c, T, P, A, "v1", "web", "data", false),
	    BERTH__ERROR_CODE__ERROR_PERMISSION);
	ck_assert_int_eq(owner_of(&c, PUB "/" MC_USAGE, &g, &mode), 0);
	ck_assert(g == 0 && mode == 0755);
	ck_assert_int_eq(as_user(60002, mc_path(&c, "allocs/" A
	    "/db/volumes/ro/f"), false), EROFS);
	c.group = 60002;
	ck_assert_int_eq(mc_bind(&c, T, P, A, "v1", "web", "data", false), 0);
	ck_assert_int_eq(owner_of(&c, PUB "/" MC_USAGE, &g, &mode), 0);
	ck_assert_msg(g == 60002 && mode == 02775, "gid %u mode %o",
	    (unsigned)g, (unsigned)mode);
	ck_assert_int_eq(as_user(60002, mc_path(&c, "allocs/" A
	    "/web/volumes/data/f"), false), 0);
	ck_assert_int_eq(owner_of(&c, "allocs/" A "/web/volumes/data/f", &g,
	    NULL), 60002);
	ck_assert_int_eq(g, 60002);
	ck_assert_int_eq(mc_unbind(&c, A, "web", "data"), 0);
	ck_assert_int_eq(mc_unbind(&c, A, "db", "ro"), 0);
	ck_assert_int_eq(umount2(mc_path(&c, PUB "/" MC_USAGE), 0), 0);
	ck_assert_int_eq(rmdir(mc_path(&c, PUB "/" MC_USAGE)), 0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	ck_assert_int_eq(mc_cleanup(&c, "task-pl"), 0);
	ck_assert_int_eq(mc_cleanup_plugin(&c, "root-pl", T, P), 0);
	ck_assert(access(mc_path(&c, "csi/" T "/" P), F_OK) < 0);
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	free(before);
	mc_stop(&c);
}
END_TEST

/* A definition for confined_plugin, in a root-only directory. */
static char *
plugin_dir(const char *args)
{
	char *dir = harness_tmpdir("plugins"), path[512], text[2048];

	snprintf(path, sizeof(path), "%s/csi.conf", dir);
	snprintf(text, sizeof(text), "# test plugin\nexec %s\n%scap "
	    "CAP_SYS_ADMIN\n", harness_bin("tests/confined_plugin"), args);
	harness_write(path, text);
	return dir;
}

static bool
wait_file(const char *path, int ms)
{
	for (; ms > 0; ms -= 10) {
		if (access(path, F_OK) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

START_TEST(plugin_start_signal_adopt)
{
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT, h2;
	struct mclient c;
	char *plugins = plugin_dir(""), buf[64], *before, what[1024];
	int pidfd = -1, pidfd2 = -1;

	harness_private_mounts();
	before = mounts_snapshot();
	mc_start(&c, plugins);
	ck_assert_int_eq(mc_start_plugin(&c, "csi", T, P, A, &h, &pidfd),
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND);	/* not prepared */
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
	ck_assert_int_eq(mc_start_plugin(&c, "nope", T, P, A, &h, &pidfd),
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND);
	ck_assert_int_eq(mc_start_plugin(&c, "csi", T, P, A, &h, &pidfd), 0);
	ck_assert_int_ge(pidfd, 0);
	ck_assert(h.pid > 1 && h.start_time > 0);
	ck_assert_msg(wait_file(mc_path(&c, "csi/plugins/" A "/csi.sock"),
	    5000), "the plugin never listened on CSI_ENDPOINT");
	/* CAP_SYS_ADMIN only (bit 21), in effective and permitted. */
	ck_assert_str_eq(proc_status_field(h.pid, "CapEff", buf, sizeof(buf)),
	    "0000000000200000");
	ck_assert_str_eq(proc_status_field(h.pid, "CapPrm", buf, sizeof(buf)),
	    "0000000000200000");
	ck_assert_str_eq(proc_status_field(h.pid, "NoNewPrivs", buf,
	    sizeof(buf)), "1");
	/* The mounter restarts; the plugin lives on and is adopted, once. */
	mc_restart(&c);
	ck_assert(pid_alive(h.pid));
	ck_assert_int_eq(mc_adopt(&c, &h, &pidfd2), 0);
	ck_assert_int_ge(pidfd2, 0);
	close(pidfd2);
	ck_assert_int_eq(mc_adopt(&c, &h, &pidfd2), 0);
	close(pidfd2);
	h2 = h;
	h2.start_time++;	/* no such process: not found, never adopted */
	ck_assert_int_eq(mc_adopt(&c, &h2, &pidfd2),
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND);
	ck_assert_int_eq(mc_signal(&c, &h,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM), 0);
	for (int i = 0; i < 100 && c.exits == 0; i++)
		mc_wait(&c, 50);
	ck_assert_int_eq(c.exits, 1);
	ck_assert(!c.last_exit.status_known);	/* adopted: not our child */
	ck_assert(pid_wait_gone(h.pid, 2000));
	/* A plugin this mounter started is its child: its status is known. */
	ck_assert_int_eq(mc_start_plugin(&c, "csi", T, P, A, &h, &pidfd2), 0);
	close(pidfd2);
	ck_assert_int_eq(mc_signal(&c, &h,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), 0);
	for (int i = 0; i < 100 && c.exits == 1; i++)
		mc_wait(&c, 50);
	ck_assert_int_eq(c.exits, 2);
	ck_assert_msg(c.last_exit.status_known && c.last_exit.signaled,
	    "known %d signaled %d code %d", c.last_exit.status_known,
	    c.last_exit.signaled, c.last_exit.code);
	ck_assert_int_eq(c.last_exit.code, SIGKILL);
	close(pidfd);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	mc_release_plugin(&c, T, P);
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	free(before);
	mc_stop(&c);
	harness_rmtree(plugins);
	free(plugins);
}
END_TEST

/* Plugin 65 is refused before it is launched, not left unwatched. */
START_TEST(plugin_table_full_refuses_before_launch)
{
	Berth__PluginHandle h[65];
	struct mclient c;
	char *plugins = plugin_dir(""), alloc[32], *before, what[1024];
	int i, pidfd;

	harness_private_mounts();
	before = mounts_snapshot();
	mc_start(&c, plugins);
	for (i = 0; i < 65; i++) {
		h[i] = (Berth__PluginHandle)BERTH__PLUGIN_HANDLE__INIT;
		snprintf(alloc, sizeof(alloc), "alloc-%d", i);
		ck_assert_int_eq(mc_prepare_plugin(&c, T, P, alloc), 0);
		if (i < 64) {
			ck_assert_int_eq(mc_start_plugin(&c, "csi", T, P, alloc,
			    &h[i], &pidfd), 0);
			close(pidfd);
		}
	}
	ck_assert_int_eq(mc_start_plugin(&c, "csi", T, P, "alloc-64", &h[64],
	    &pidfd), BERTH__ERROR_CODE__ERROR_CONFLICT);
	ck_assert_int_eq(h[64].pid, 0);
	ck_assert_int_eq(c.exits, 0);
	for (i = 0; i < 64; i++)
		ck_assert_int_eq(mc_signal(&c, &h[i],
		    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), 0);
	for (i = 0; i < 200 && c.exits < 64; i++)
		mc_wait(&c, 50);
	ck_assert_int_eq(c.exits, 64);
	/* A slot is free again: plugin 65 starts now. */
	ck_assert_int_eq(mc_start_plugin(&c, "csi", T, P, "alloc-64", &h[64],
	    &pidfd), 0);
	close(pidfd);
	ck_assert_int_eq(mc_signal(&c, &h[64],
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), 0);
	for (i = 0; i < 100 && c.exits < 65; i++)
		mc_wait(&c, 50);
	for (i = 0; i < 65; i++) {
		snprintf(alloc, sizeof(alloc), "alloc-%d", i);
		ck_assert_int_eq(mc_cleanup(&c, alloc), 0);
	}
	mc_release_plugin(&c, T, P);
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	free(before);
	mc_stop(&c);
	harness_rmtree(plugins);
	free(plugins);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("mounter");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, mc_track_init, mc_track_cleanup);
	tcase_add_test(tc, prepare_bind_unbind_cleanup);
	tcase_add_test(tc, the_plugins_user_owns_its_parents_and_the_group_writes);
	tcase_add_test(tc, plugin_start_signal_adopt);
	tcase_add_test(tc, plugin_table_full_refuses_before_launch);
	return harness_run("mounter", tc);
}
