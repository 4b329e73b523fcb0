/*
 * test_tasks_isolated.c: what a task is, seen from /proc, with the real
 * supervisor, mounter, crun and shim: it runs as its allocation's dynamic
 * id, never as berth or root; in pid, ipc, uts and mount namespaces of
 * its own (and a network namespace of its own only with network "none");
 * in its cgroup under the berth's cgroup parent, with the memory and pids
 * limits its resources block asked for; and once its allocation is
 * stopped, no process of it is left, a background one included, nor its
 * sandbox's bundle or status directory on disk. A task
 * that goes over its memory limit is killed by the kernel, and its events
 * say so. A running task's use of CPU and memory is in the API, in
 * berthctl alloc status and in the metrics (promtool-clean).
 * An unprivileged CSI plugin is such a task too: the supervisor reaches
 * it through its socket, which no other uid can connect to.
 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>

#include "svtest.h"

/* The task runs a background sleep and waits in the foreground. */
#define TASK_DOC "{\"id\": \"%s\", %s\"tasks\": [{\"name\": \"t\", " \
	"\"driver\": \"exec\", \"config\": {\"command\": \"/bin/sh\", " \
	"\"args\": [\"-c\", \"sleep 3600 & exec sleep 3600\"]}, " \
	"\"kill_timeout\": \"2s\", \"resources\": {\"memory\": 64, " \
	"\"pids\": 32}}]}"

/* Its pid, as GET /v1/allocation/<id> says once it started. */
static pid_t
run_task(struct berth *b, const char *alloc, const char *network)
{
	char file[64], text[1024], who[64];
	json_t *a;
	pid_t pid;

	snprintf(file, sizeof(file), "%s.json", alloc);
	snprintf(text, sizeof(text), TASK_DOC, alloc, network);
	berth_alloc(b, file, text);
	snprintf(who, sizeof(who), "%s/t", alloc);
	wait_event(b, "Started", who, NULL, 20000);
	snprintf(text, sizeof(text), "/v1/allocation/%s", alloc);
	ck_assert_ptr_nonnull(a = sv_get(b, text));
	pid = (pid_t)json_integer_value(json_object_get(json_array_get(
	    json_object_get(a, "tasks"), 0), "pid"));
	json_decref(a);
	ck_assert_int_gt(pid, 1);
	ck_assert(pid_alive(pid));
	harness_track_pid(pid);
	return pid;
}

static void
ns_of(pid_t pid, const char *ns, char *buf, size_t n)
{
	char path[64];
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%ld/ns/%s", (long)pid, ns);
	len = readlink(path, buf, n - 1);
	ck_assert_msg(len > 0, "%s", path);
	buf[len] = '\0';
}

static void
assert_ns(pid_t task, pid_t sv, const char *ns, bool own)
{
	char a[64], b[64];

	ns_of(task, ns, a, sizeof(a));
	ns_of(sv, ns, b, sizeof(b));
	if (own)
		ck_assert_msg(strcmp(a, b) != 0, "the task shares the "
		    "supervisor's %s namespace (%s)", ns, a);
	else
		ck_assert_msg(strcmp(a, b) == 0, "the task's %s namespace %s "
		    "is not the host's %s", ns, a, b);
}

static long
read_long(const char *path)
{
	char buf[64] = "";
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return strcmp(buf, "max\n") == 0 ? -2 : atol(buf);
}

/* Its uid: the alloc's dynamic id, from task_ids' default range. */
static uid_t
assert_user(pid_t pid)
{
	struct passwd *pw = getpwnam("berth");
	char buf[128];
	long uid, gid;

	ck_assert_ptr_nonnull(pw);
	ck_assert_ptr_nonnull(proc_status_field(pid, "Uid", buf, sizeof(buf)));
	uid = atol(buf);
	ck_assert_ptr_nonnull(proc_status_field(pid, "Gid", buf, sizeof(buf)));
	gid = atol(buf);
	ck_assert_msg(uid >= 61184 && uid <= 65519, "uid %ld", uid);
	ck_assert_int_eq(uid, gid);
	ck_assert_int_ne(uid, (long)pw->pw_uid);
	ck_assert_ptr_nonnull(proc_status_field(pid, "CapEff", buf,
	    sizeof(buf)));
	ck_assert_str_eq(buf, "0000000000000000");
	ck_assert_ptr_nonnull(proc_status_field(pid, "NoNewPrivs", buf,
	    sizeof(buf)));
	ck_assert_str_eq(buf, "1");
	return (uid_t)uid;
}

/* Its cgroup is <parent>/<alloc>@t, with the limits asked for. */
static void
assert_cgroup(struct berth *b, pid_t pid, const char *alloc)
{
	char want[256], line[512], path[600];
	bool found = false;
	FILE *f;

	snprintf(want, sizeof(want), ":%s/%s@t\n", b->cgroup, alloc);
	snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, ":memory:") != NULL)
			found = strstr(line, want) != NULL;
	fclose(f);
	ck_assert_msg(found, "not in %s", want + 1);
	snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/%s@t/"
	    "memory.limit_in_bytes", b->cgroup, alloc);
	ck_assert_int_eq(read_long(path), 64L << 20);
	snprintf(path, sizeof(path), "/sys/fs/cgroup/pids%s/%s@t/pids.max",
	    b->cgroup, alloc);
	ck_assert_int_eq(read_long(path), 32);
}

/* /v1/metrics, checked by `promtool check metrics`, in buf. */
static void
metrics(struct berth *b, char *buf, size_t n)
{
	char file[700], cmd[1600], out[4096];
	size_t len;
	FILE *p;
	int st;

	ck_assert_msg(system("command -v promtool >/dev/null") == 0,
	    "promtool is missing (Debian's prometheus; scripts/setup.sh)");
	snprintf(file, sizeof(file), "%s/metrics.txt", b->dir);
	snprintf(cmd, sizeof(cmd), "curl -sf --unix-socket %s "
	    "http://berth/v1/metrics >%s", b->sock, file);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "promtool check metrics <%s 2>&1", file);
	ck_assert_ptr_nonnull(p = popen(cmd, "r"));
	len = fread(out, 1, sizeof(out) - 1, p);
	out[len] = '\0';
	st = pclose(p);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && len == 0,
	    "promtool check metrics: %d: %s", st, out);
	ck_assert_ptr_nonnull(p = fopen(file, "r"));
	buf[fread(buf, 1, n - 1, p)] = '\0';
	fclose(p);
}

/* Its use of CPU and memory, as the API, berthctl and metrics say. */
static void
assert_usage(struct berth *b, const char *alloc)
{
	static char out[65536];
	char want[256];
	json_t *a, *u;

	snprintf(want, sizeof(want), "/v1/allocation/%s", alloc);
	ck_assert_ptr_nonnull(a = sv_get(b, want));
	u = json_object_get(json_array_get(json_object_get(a, "tasks"), 0),
	    "usage");
	ck_assert_msg(u != NULL, "no usage for %s", alloc);
	ck_assert_int_gt(json_integer_value(json_object_get(u,
	    "memory_bytes")), 0);
	ck_assert(json_is_integer(json_object_get(u, "cpu_ns")));
	ck_assert_int_eq(json_integer_value(json_object_get(u, "oom_kills")),
	    0);
	json_decref(a);
	ck_assert_int_eq(sv_ctl(b, out, sizeof(out), "alloc", "status", alloc,
	    NULL), 0);
	ck_assert_msg(strstr(out, "CPU") != NULL && strstr(out, " MiB") !=
	    NULL, "%s", out);
	metrics(b, out, sizeof(out));
	snprintf(want, sizeof(want), "berth_task_memory_bytes{alloc=\"%s\","
	    "task=\"t\"}", alloc);
	ck_assert_msg(strstr(out, want) != NULL, "no %s in:\n%s", want, out);
	snprintf(want, sizeof(want), "berth_task_cpu_seconds_total{alloc="
	    "\"%s\",task=\"t\"}", alloc);
	ck_assert_msg(strstr(out, want) != NULL, "no %s in:\n%s", want, out);
}

START_TEST(a_task_is_its_own_user_in_its_own_namespaces_and_cgroup)
{
	struct berth b;
	pid_t host, other;
	uid_t uh, uo;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	host = run_task(&b, "host", "");
	other = run_task(&b, "other", "");
	uh = assert_user(host);
	uo = assert_user(other);
	/* One id per allocation. */
	ck_assert_int_ne(uh, uo);
	assert_ns(host, b.sv.pid, "pid", true);
	assert_ns(host, b.sv.pid, "ipc", true);
	assert_ns(host, b.sv.pid, "uts", true);
	assert_ns(host, b.sv.pid, "mnt", true);
	/* Network "host", the default: the host's. */
	assert_ns(host, b.sv.pid, "net", false);
	assert_cgroup(&b, host, "host");
	assert_cgroup(&b, other, "other");
	assert_usage(&b, "host");
	/* The shell, its background sleep and its foreground one. */
	for (int i = 0; i < 50 && uid_procs(uh) < 3; i++)
		usleep(100000);
	ck_assert_int_ge(uid_procs(uh), 3);
	remove_alloc(&b, "host.json");
	remove_alloc(&b, "other.json");
	wait_event(&b, "AllocStopped", "host", NULL, 20000);
	wait_event(&b, "AllocStopped", "other", NULL, 20000);
	ck_assert(pid_wait_gone(host, 5000));
	ck_assert(pid_wait_gone(other, 5000));
	ck_assert_int_eq(uid_procs(uh), 0);
	ck_assert_int_eq(uid_procs(uo), 0);
	/* Cleaned up when stopped: no bundle, no status dir is left. */
	for (int i = 0; i < 4; i++) {
		char p[700];

		snprintf(p, sizeof(p), "%s/data/%s/%s", b.dir, i % 2 ?
		    "shim" : "mounter/tasks", i < 2 ? "host" : "other");
		ck_assert_msg(access(p, F_OK) < 0, "%s is left", p);
	}
	berth_stop(&b);
}
END_TEST

/*
 * A task's own files in its directory are its uid's, in a sticky
 * directory, and outlive it (a dir it made mode 0 included): then its id
 * is held, never given to another alloc while they are there.
 */
START_TEST(an_id_whose_files_are_left_stays_held)
{
	char path[700];
	struct berth b;
	json_t *a;
	pid_t pid;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	berth_alloc(&b, "left.json", "{\"id\": \"left\", \"tasks\": [{"
	    "\"name\": \"t\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/sh\", \"args\": [\"-c\", \"echo x >mine "
	    "&& mkdir -p d/e && chmod 0 d && exec sleep 3600\"]}, "
	    "\"kill_timeout\": \"2s\"}]}");
	wait_event(&b, "Started", "left/t", NULL, 20000);
	ck_assert_ptr_nonnull(a = sv_get(&b, "/v1/allocation/left"));
	pid = (pid_t)json_integer_value(json_object_get(json_array_get(
	    json_object_get(a, "tasks"), 0), "pid"));
	json_decref(a);
	harness_track_pid(pid);
	snprintf(path, sizeof(path), "%s/data/allocs/left/t/d", b.dir);
	for (int i = 0; i < 50 && access(path, F_OK) < 0; i++)
		usleep(100000);
	remove_alloc(&b, "left.json");
	wait_event(&b, "AllocStopped", "left", NULL, 20000);
	ck_assert(pid_wait_gone(pid, 5000));
	wait_log(&b, "alloc left: 2 file(s) of its tasks are left", 10000);
	wait_log(&b, "so its task id stays held and is never given to "
	    "another alloc", 1000);
	ck_assert_msg(access(path, F_OK) == 0, "%s is gone", path);
	berth_stop(&b);
}
END_TEST

/* Network "none": a network namespace of its own, the rest as above. */
START_TEST(network_none_is_a_namespace_of_its_own)
{
	struct berth b;
	pid_t none;
	uid_t un;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	none = run_task(&b, "none", "\"network\": {\"mode\": \"none\"}, ");
	un = assert_user(none);
	assert_ns(none, b.sv.pid, "net", true);
	assert_ns(none, b.sv.pid, "pid", true);
	assert_cgroup(&b, none, "none");
	remove_alloc(&b, "none.json");
	wait_event(&b, "AllocStopped", "none", NULL, 20000);
	ck_assert(pid_wait_gone(none, 5000));
	ck_assert_int_eq(uid_procs(un), 0);
	berth_stop(&b);
}
END_TEST

START_TEST(an_oom_kill_is_an_event_that_says_so)
{
	struct berth b;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	/* 200 MB in the shell's memory, over a 16 MiB limit. */
	berth_alloc(&b, "oom.json", "{\"id\": \"oom\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sh\", \"args\": [\"-c\", \"x=$(head -c 200000000 "
	    "/dev/zero | tr '\\\\0' a); echo ${#x}\"]}, \"resources\": "
	    "{\"memory\": 16}, \"restart\": {\"attempts\": 0}}]}");
	wait_event(&b, "OOMKilled", "oom/t", "out of memory: it reached its "
	    "memory limit", 30000);
	wait_event(&b, "Terminated", "oom/t", "out of memory (its memory "
	    "limit)", 10000);
	wait_alloc(&b, "oom", "failed", 10000);
	remove_alloc(&b, "oom.json");
	wait_event(&b, "AllocStopped", "oom", NULL, 20000);
	berth_stop(&b);
}
END_TEST

/* Whether uid and gid (no other group) can connect to the socket. */
static bool
can_connect(const char *path, uid_t uid, gid_t gid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int status, fd;
	pid_t pid;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 ||
		    setuid(uid) < 0 || (fd = socket(AF_UNIX, SOCK_STREAM,
		    0)) < 0)
			_exit(2);
		_exit(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ?
		    0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) < 2);
	return WEXITSTATUS(status) == 0;
}

/*
 * The sample plugin as an exec task: as its alloc's id, in namespaces and
 * a cgroup of its own; healthy, so the supervisor reached its socket at
 * the path it passed (bound at that path in the sandbox); its socket dir
 * its uid's, group berth's, 02750: berth connects, other uids do not.
 */
START_TEST(an_unprivileged_plugin_is_a_sandboxed_task)
{
	struct passwd *pw = getpwnam("berth");
	char text[1024], dir[600], sock[700];
	struct stat st;
	json_t *a;
	pid_t pid;
	struct berth b;
	uid_t u;

	ck_assert_ptr_nonnull(pw);
	berth_config(&b, "1s", NULL);
	berth_start(&b);
	snprintf(text, sizeof(text), "{\"id\": \"p\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": \"%s\", "
	    "\"args\": [\"--node-id\", \"n1\", \"--state-dir\", \"state\", "
	    "\"--mode\", \"monolith\"]}, \"resources\": {\"memory\": 64, "
	    "\"pids\": 32}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"monolith\", \"health_timeout\": \"20s\"}}]}",
	    sv_sandbox_bin("berth-csi-hostpath"));
	berth_alloc(&b, "p.json", text);
	json_decref(wait_instance(&b, "hp", "node", "p", true, 20000));
	json_decref(wait_instance(&b, "hp", "controller", "p", true,
	    20000));
	ck_assert_ptr_nonnull(a = sv_get(&b, "/v1/allocation/p"));
	pid = (pid_t)json_integer_value(json_object_get(json_array_get(
	    json_object_get(a, "tasks"), 0), "pid"));
	json_decref(a);
	ck_assert_int_gt(pid, 1);
	harness_track_pid(pid);
	u = assert_user(pid);
	assert_ns(pid, b.sv.pid, "pid", true);
	assert_ns(pid, b.sv.pid, "mnt", true);
	assert_cgroup(&b, pid, "p");
	snprintf(dir, sizeof(dir), "%s/data/csi/plugins/p", b.dir);
	snprintf(sock, sizeof(sock), "%s/csi.sock", dir);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_uid, u);
	ck_assert_int_eq(st.st_gid, pw->pw_gid);
	ck_assert_int_eq(st.st_mode & 07777, 02750);
	ck_assert_int_eq(stat(sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_gid, pw->pw_gid);
	ck_assert(can_connect(sock, pw->pw_uid, pw->pw_gid));
	/* Another alloc's id, and nobody. */
	ck_assert(!can_connect(sock, u == 61184 ? 61185 : 61184,
	    u == 61184 ? 61185 : 61184));
	ck_assert(!can_connect(sock, 65534, 65534));
	remove_alloc(&b, "p.json");
	wait_event(&b, "AllocStopped", "p", NULL, 20000);
	ck_assert(pid_wait_gone(pid, 5000));
	ck_assert_int_eq(uid_procs(u), 0);
	berth_stop(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("tasks_isolated");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
	    a_task_is_its_own_user_in_its_own_namespaces_and_cgroup);
	tcase_add_test(tc, network_none_is_a_namespace_of_its_own);
	tcase_add_test(tc, an_id_whose_files_are_left_stays_held);
	tcase_add_test(tc, an_oom_kill_is_an_event_that_says_so);
	tcase_add_test(tc, an_unprivileged_plugin_is_a_sandboxed_task);
	return harness_run("tasks_isolated", tc);
}
