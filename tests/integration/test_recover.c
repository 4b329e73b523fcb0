/*
 * test_recover.c: volumes after their node plugin restarts, with the
 * real three processes and berth-csi-hostpath in --fuse mode (its mounts
 * are served by the plugin process and die with it). A writer and a
 * reader task each use a volume; the plugin is killed with SIGKILL and
 * berth restarts it; then each volume's on_plugin_restart decides:
 * "remount" (the default) stages, publishes and binds it again under
 * the running tasks, which read and write again without a restart;
 * "restart_tasks" does the same and restarts them; "none" leaves them,
 * and an event says so. Nothing of berth's is left mounted afterwards
 * (and when a check fails, the test's mount namespace goes with it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <check.h>

#include "http.h"
#include "svtest.h"

#define HP "csi/monolith/hp"

static void
berth_setup(struct berth *b)
{
	char path[1024], text[4096], extra[1200];

	berth_config(b, "1s", NULL);
	snprintf(path, sizeof(path), "%s/defs", b->dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/defs/hostpath.conf", b->dir);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n1\n"
	    "arg --state-dir\narg %s/hpstate\narg --mode\narg monolith\n"
	    "arg --fuse\ncap CAP_SYS_ADMIN\ncap CAP_CHOWN\n",
	    harness_bin("berth-csi-hostpath"), b->dir);
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s/defs\"",
	    b->dir);
	berth_reconfig(b, "1s", extra);
}

static void
put_alloc(struct berth *b, const char *name, const char *doc)
{
	char tmp[1024], path[1024];

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", b->allocs, name);
	snprintf(path, sizeof(path), "%s/%s.json", b->allocs, name);
	harness_write(tmp, doc);
	ck_assert_int_eq(rename(tmp, path), 0);
}

static void
stop_alloc(struct berth *b, const char *name)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s.json", b->allocs, name);
	ck_assert_int_eq(unlink(path), 0);
	wait_event(b, "AllocStopped", name, NULL, 20000);
	wait_alloc(b, name, NULL, 5000);
}

/* The plugin restarts 200 ms after it dies. */
static void
plugin_up(struct berth *b)
{
	put_alloc(b, "plugin", "{\"id\": \"plugin\", \"tasks\": [{\"name\": "
	    "\"hostpath\", \"driver\": \"privileged\", \"config\": {"
	    "\"plugin\": \"hostpath\"}, \"restart\": {\"attempts\": 5, "
	    "\"interval\": \"30m\", \"delay\": \"200ms\", \"mode\": "
	    "\"fail\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"monolith\"}}]}");
	json_decref(wait_instance(b, "hp", "node", "plugin", true, 15000));
	task_pids(b, NULL);
}

/* The running plugin's pid, from /proc: its --state-dir is b's. */
static pid_t
plugin_pid(struct berth *b)
{
	char path[300], cmd[4096], want[1024];
	struct dirent *e;
	pid_t pid = 0;
	ssize_t n, i;
	DIR *d;
	int fd;

	snprintf(want, sizeof(want), "%s/hpstate", b->dir);
	ck_assert_ptr_nonnull(d = opendir("/proc"));
	while (pid == 0 && (e = readdir(d)) != NULL) {
		if (atoi(e->d_name) <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (n <= 0)
			continue;
		cmd[n] = '\0';
		for (i = 0; i < n; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		if (strstr(cmd, "berth-csi-hostpath") != NULL &&
		    strstr(cmd, "--fuse") != NULL && strstr(cmd, want) != NULL)
			pid = atoi(e->d_name);
	}
	closedir(d);
	return pid;
}

static void
create_volume(struct berth *b, const char *id, const char *policy)
{
	char path[1024], text[512], out[4096];

	snprintf(path, sizeof(path), "%s/%s.vol.json", b->dir, id);
	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"plugin_id\": \"hp\", "
	    "\"access_mode\": \"single-node-writer\", \"attachment_mode\": "
	    "\"file-system\"%s%s%s}", id, policy != NULL ?
	    ", \"on_plugin_restart\": \"" : "", policy != NULL ? policy : "",
	    policy != NULL ? "\"" : "");
	harness_write(path, text);
	ck_assert_msg(sv_ctl(b, out, sizeof(out), "--json", "volume",
	    "create", path, NULL) == 0, "volume create %s: %s", id, out);
}

/*
 * An alloc of one exec task on vol, at "data", that says each change of
 * whether it can use it: the writer writes a file, the reader reads the
 * one written for it.
 */
static void
task_alloc(struct berth *b, const char *id, const char *vol, bool writer)
{
	char doc[4096];

	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", \"volumes\": {\"data\": "
	    "{\"type\": \"csi\", \"source\": \"%s\", \"access_mode\": "
	    "\"single-node-writer\", \"attachment_mode\": \"file-system\"}}, "
	    "\"tasks\": [{\"name\": \"t\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/sh\", \"args\": [\"-c\", \"s=; while :; do "
	    "if %s; then n=OK; else n=ERR; fi; [ $n = \\\"$s\\\" ] || echo "
	    "$n; s=$n; sleep 0.1; done\"]}, \"kill_timeout\": \"1s\", "
	    "\"volume_mounts\": [{\"volume\": \"data\", \"destination\": "
	    "\"data\"}]}]}", id, vol, writer ?
	    "date > volumes/data/w" :
	    "grep -q hello volumes/data/r");
	put_alloc(b, id, doc);
}

/* The task's stdout.log ("" if none yet). */
static void
task_out(struct berth *b, const char *alloc, char *buf, size_t n)
{
	char path[1024];
	ssize_t got = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/data/shim/%s/t/stdout.log", b->dir,
	    alloc);
	if ((fd = open(path, O_RDONLY)) >= 0) {
		got = read(fd, buf, n - 1);
		close(fd);
	}
	buf[got > 0 ? got : 0] = '\0';
}

/* The supervisor's log's last lines, for a failure's message. */
static const char *
log_tail(struct berth *b)
{
	size_t n;

	proc_drain(&b->sv);
	n = strlen(b->sv.log);
	return n > 2500 ? b->sv.log + n - 2500 : b->sv.log;
}

static bool
ends_with(const char *s, const char *text)
{
	size_t n = strlen(s), t = strlen(text);

	return n >= t && strcmp(s + n - t, text) == 0;
}

/* Wait until the task's stdout.log ends with text, and still does half
 * a second later (the task tries every 0.1 s). */
static void
wait_out(struct berth *b, const char *alloc, const char *text, int ms)
{
	char buf[4096], err[4096], path[1024];
	ssize_t got = -1;
	int i, fd;

	for (i = 0; i < ms / 100; i++) {
		task_out(b, alloc, buf, sizeof(buf));
		if (ends_with(buf, text)) {
			usleep(500000);
			task_out(b, alloc, buf, sizeof(buf));
			if (ends_with(buf, text))
				return;
		}
		usleep(100000);
	}
	snprintf(path, sizeof(path), "%s/data/shim/%s/t/stderr.log", b->dir,
	    alloc);
	if ((fd = open(path, O_RDONLY)) >= 0) {
		(void)lseek(fd, -1000, SEEK_END);
		got = read(fd, err, sizeof(err) - 1);
		close(fd);
	}
	err[got > 0 ? got : 0] = '\0';
	ck_abort_msg("%s: stdout \"%s\", not ending in \"%s\"; stderr's "
	    "end \"%s\"; log:\n%s", alloc, buf, text, err, log_tail(b));
}

/* Wait until the task's stdout.log holds text (a remount may end what
 * it says before wait_out() sees it last). */
static void
wait_seen(struct berth *b, const char *alloc, const char *text, int ms)
{
	char buf[4096];
	int i;

	for (i = 0; i < ms / 50; i++) {
		task_out(b, alloc, buf, sizeof(buf));
		if (strstr(buf, text) != NULL)
			return;
		usleep(50000);
	}
	ck_abort_msg("%s: stdout \"%s\", without \"%s\"; log:\n%s", alloc,
	    buf, text, log_tail(b));
}

/*
 * Both tasks up, on volumes w and r made with policy; the plugin killed,
 * both tasks see their volume dead, and the plugin is back.
 */
static void
kill_under_tasks(struct berth *b, const char *policy,
    void (*before_kill)(struct berth *))
{
	char path[1024], out[8192];
	pid_t pid;
	json_t *j;

	berth_setup(b);
	berth_start(b);
	plugin_up(b);
	create_volume(b, "w", policy);
	create_volume(b, "r", policy);
	ck_assert_int_eq(sv_ctl(b, out, sizeof(out), "volume", "status", "w",
	    NULL), 0);
	ck_assert_msg(strstr(out, policy != NULL ? policy : "remount") !=
	    NULL, "%s", out);
	ck_assert_ptr_nonnull(j = sv_get(b, "/v1/volume/w"));
	ck_assert_str_eq(json_string_value(json_object_get(j,
	    "on_plugin_restart")), policy != NULL ? policy : "remount");
	json_decref(j);
	snprintf(path, sizeof(path), "%s/hpstate/volumes/r/r", b->dir);
	harness_write(path, "hello\n");
	task_alloc(b, "writer", "w", true);
	task_alloc(b, "reader", "r", false);
	wait_out(b, "writer", "OK\n", 20000);
	wait_out(b, "reader", "OK\n", 20000);
	snprintf(path, sizeof(path), "%s/hpstate/volumes/w/w", b->dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	task_pids(b, NULL);

	if (before_kill != NULL)
		before_kill(b);
	ck_assert_int_gt(pid = plugin_pid(b), 0);
	event_mark(b);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	wait_seen(b, "writer", "OK\nERR\n", 10000);
	wait_seen(b, "reader", "OK\nERR\n", 10000);
	wait_event(b, "PluginHealthy", "hp", NULL, 20000);
	ck_assert_int_gt(plugin_pid(b), 0);
	ck_assert_int_ne(plugin_pid(b), pid);
}

/* berth's mount points left, for a failure's message. */
static const char *
mounts_left(struct berth *b)
{
	static char out[2048];
	char line[4096], mp[4096], data[600];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	size_t o = 0;

	out[0] = '\0';
	snprintf(data, sizeof(data), "%s/data/", b->dir);
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
		    strncmp(mp, data, strlen(data)) == 0 && o < sizeof(out))
			o += snprintf(out + o, sizeof(out) - o, "%s\n", mp);
	if (f != NULL)
		fclose(f);
	return out;
}

static void
nothing_left(struct berth *b)
{
	char path[1024];

	stop_alloc(b, "writer");
	stop_alloc(b, "reader");
	stop_alloc(b, "plugin");
	ck_assert_msg(berth_mounts(b, NULL) == 0, "mounts left:\n%s; log:\n%s",
	    mounts_left(b), log_tail(b));
	snprintf(path, sizeof(path), "%s/data/" HP, b->dir);
	ck_assert_msg(access(path, F_OK) < 0, "%s is left", path);
}

START_TEST(none_leaves_the_tasks_and_says_so)
{
	struct berth b;

	kill_under_tasks(&b, "none", NULL);
	wait_event(&b, "VolumeStale", NULL, "default/w", 20000);
	wait_event(&b, "VolumeStale", NULL, "default/r", 20000);
	ck_assert_int_eq(count_events(&b, "Started", "writer/t", NULL), 0);
	ck_assert_int_eq(count_events(&b, "Started", "reader/t", NULL), 0);
	usleep(500000);
	wait_out(&b, "writer", "OK\nERR\n", 1000);
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

/*
 * remount, the default: each volume staged, published and bound again in the alloc's
 * directory, and no task restarted: the task directory's bind in the
 * sandbox is rslave, so the fresh bind reaches the running task, which
 * (the same process) reads the old data and writes new data again
 * through the same path; and a bind made from here reaches the volume.
 */
START_TEST(remount_binds_again_under_the_running_tasks)
{
	char path[1024], w[1024];
	struct berth b;

	kill_under_tasks(&b, NULL, NULL);
	wait_event(&b, "VolumeRemounted", NULL, "default/w", 20000);
	wait_event(&b, "VolumeRemounted", NULL, "default/r", 20000);
	snprintf(w, sizeof(w), "%s/hpstate/volumes/w/w", b.dir);
	ck_assert_int_eq(unlink(w), 0);
	wait_out(&b, "writer", "OK\nERR\nOK\n", 10000);
	wait_out(&b, "reader", "OK\nERR\nOK\n", 10000);
	usleep(300000);
	ck_assert_int_eq(access(w, F_OK), 0);	/* written again */
	ck_assert_int_eq(count_events(&b, "Started", "writer/t", NULL), 0);
	ck_assert_int_eq(count_events(&b, "Started", "reader/t", NULL), 0);
	ck_assert_int_eq(count_events(&b, "VolumeRecoveryFailed", NULL, NULL),
	    0);
	ck_assert_int_eq(berth_mounts(&b, "/allocs/writer/t/volumes/data"), 1);
	snprintf(path, sizeof(path), "%s/data/allocs/writer/t/volumes/data/"
	    "fresh", b.dir);
	harness_write(path, "fresh\n");
	snprintf(path, sizeof(path), "%s/hpstate/volumes/w/fresh", b.dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

/*
 * The plugin dies while the supervisor is down (killed too): the next
 * supervisor adopts the tasks, starts the plugin again, and the check
 * after its registration finds the dead mounts: remounted under the
 * same running tasks.
 */
START_TEST(a_plugin_dead_while_the_supervisor_was_down_is_remounted)
{
	char path[1024], out[8192];
	struct berth b;
	pid_t pid;

	berth_setup(&b);
	berth_start(&b);
	plugin_up(&b);
	create_volume(&b, "w", NULL);
	create_volume(&b, "r", NULL);
	snprintf(path, sizeof(path), "%s/hpstate/volumes/r/r", b.dir);
	harness_write(path, "hello\n");
	task_alloc(&b, "writer", "w", true);
	task_alloc(&b, "reader", "r", false);
	wait_out(&b, "writer", "OK\n", 20000);
	wait_out(&b, "reader", "OK\n", 20000);
	task_pids(&b, NULL);
	ck_assert_int_gt(pid = plugin_pid(&b), 0);
	berth_kill(&b);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	wait_seen(&b, "writer", "OK\nERR\n", 10000);
	wait_seen(&b, "reader", "OK\nERR\n", 10000);
	berth_start(&b);
	wait_event(&b, "VolumeRemounted", NULL, "default/w", 30000);
	wait_event(&b, "VolumeRemounted", NULL, "default/r", 30000);
	wait_out(&b, "writer", "OK\nERR\nOK\n", 10000);
	wait_out(&b, "reader", "OK\nERR\nOK\n", 10000);
	ck_assert_int_eq(count_events(&b, "Started", "writer/t", NULL), 0);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "status",
	    "writer", NULL), 0);
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

/*
 * restart_tasks: remounted, then each alloc's task
 * restarted once, and both read and write their volume again.
 */
START_TEST(restart_tasks_gives_the_tasks_their_data_back)
{
	char path[1024];
	struct berth b;

	kill_under_tasks(&b, "restart_tasks", NULL);
	wait_event(&b, "VolumeTasksRestarted", NULL, "default/w", 20000);
	wait_event(&b, "VolumeTasksRestarted", NULL, "default/r", 20000);
	wait_event(&b, "Started", "writer/t", NULL, 20000);
	wait_event(&b, "Started", "reader/t", NULL, 20000);
	snprintf(path, sizeof(path), "%s/hpstate/volumes/w/w", b.dir);
	ck_assert_int_eq(unlink(path), 0);
	wait_out(&b, "writer", "OK\n", 10000);
	wait_out(&b, "reader", "OK\n", 10000);
	usleep(300000);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_eq(count_events(&b, "Started", "writer/t", NULL), 1);
	ck_assert_int_eq(count_events(&b, "Started", "reader/t", NULL), 1);
	ck_assert_int_eq(count_events(&b, "VolumeRecoveryFailed", NULL, NULL),
	    0);
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

/* A FUSE connection on the writer's publish target that never answers:
 * every access to it waits until hung_fd is closed. */
static int hung_fd = -1;

static void
hang_writer_target(struct berth *b)
{
	char path[1024], opts[128];

	snprintf(path, sizeof(path), "%s/data/" HP "/per-alloc/writer/w/"
	    "rw-file-system-single-node-writer", b->dir);
	ck_assert_int_ge(hung_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC), 0);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,"
	    "group_id=0,allow_other", hung_fd);
	ck_assert_msg(mount("hung", path, "fuse", MS_NOSUID | MS_NODEV,
	    opts) == 0, "mount a FUSE at %s: %s", path, strerror(errno));
}

/*
 * A mount that hangs: the check's child is killed at its deadline, the
 * mount taken for stale, and the supervisor answers meanwhile.
 */
START_TEST(a_hung_mount_does_not_hang_berth)
{
	double t0;
	struct berth b;
	json_t *j;

	kill_under_tasks(&b, "none", hang_writer_target);
	t0 = (double)http_now_ms();
	ck_assert_ptr_nonnull(j = sv_get(&b, "/v1/health"));
	json_decref(j);
	wait_event(&b, "VolumeStale", NULL, "default/r", 20000);
	wait_event(&b, "VolumeStale", NULL, "default/w", 20000);
	ck_assert_msg((double)http_now_ms() - t0 < 15000, "the check took %.0f ms",
	    (double)http_now_ms() - t0);
	/* Its connection ended: the stacked mount is dead, and goes. */
	close(hung_fd);
	hung_fd = -1;
	nothing_left(&b);
	berth_stop(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("recover");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, none_leaves_the_tasks_and_says_so);
	tcase_add_test(tc, remount_binds_again_under_the_running_tasks);
	tcase_add_test(tc, a_plugin_dead_while_the_supervisor_was_down_is_remounted);
	tcase_add_test(tc, restart_tasks_gives_the_tasks_their_data_back);
	tcase_add_test(tc, a_hung_mount_does_not_hang_berth);
	return harness_run("recover", tc);
}
