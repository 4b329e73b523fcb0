/*
 * test_drivers.c: the exec driver's shim and the driver manager, end to
 * end with the real processes, each task in its sandbox (crun, the shim
 * its init; its status and logs in the shim's directory, data/shim/<alloc>/
 * <task>, out of its reach): a task outlives a supervisor SIGKILL and
 * its exit code still reaches a Terminated event, whether it ends after
 * the restart or while no supervisor runs; a shim that dies takes its
 * task with it; logs rotate at their limit and keep only so many files;
 * both drivers fingerprint healthy, and a driver blocked while the
 * supervisor was down has its stale task stopped, not adopted; a stopped
 * task leaves no process of its group behind, and writes with umask 022;
 * a blocked driver or a missing plugin definition is refused at submit,
 * or listed as failed.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <check.h>
#include <sqlite3.h>

#include "driver.pb-c.h"
#include "svtest.h"

/* Waits for a file "go" in its directory, then exits with its number. */
#define WAITING "while [ ! -e go ]; do sleep 0.05; done; exit $(cat go)"

static void
exec_alloc(struct berth *b, const char *alloc, const char *script,
    const char *extra)
{
	char file[160], text[2048];

	snprintf(file, sizeof(file), "%s.json", alloc);
	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sh\", \"args\": [\"-c\", \"%s\"]}, \"kill_timeout\": "
	    "\"2s\"%s}]}", alloc, script, extra != NULL ? extra : "");
	berth_alloc(b, file, text);
}

static void
task_file(struct berth *b, const char *alloc, const char *name, char *buf,
    size_t n)
{
	snprintf(buf, n, "%s/data/allocs/%s/t/%s", b->dir, alloc, name);
}

/* The shim's status dir: its exit-status and logs. */
static void
shim_file(struct berth *b, const char *alloc, const char *name, char *buf,
    size_t n)
{
	snprintf(buf, n, "%s/data/shim/%s/t/%s", b->dir, alloc, name);
}

static void
go(struct berth *b, const char *alloc, const char *code)
{
	char path[1024];

	task_file(b, alloc, "go", path, sizeof(path));
	harness_write(path, code);
}

/* A driver's state in GET /v1/drivers ("healthy", "blocked"); "" if none. */
static void
driver_state(json_t *drivers, const char *name, char *buf, size_t n)
{
	json_t *d;
	size_t i;

	snprintf(buf, n, "%s", "");
	json_array_foreach(json_object_get(drivers, "drivers"), i, d)
		if (strcmp(json_string_value(json_object_get(d, "name")),
		    name) == 0)
			snprintf(buf, n, "%s", json_string_value(
			    json_object_get(d, "state")));
}

/* Fail unless the API reports both drivers in these states within ms. */
static void
wait_drivers(struct berth *b, const char *exec, const char *priv, int ms)
{
	char e[32] = "", p[32] = "";
	json_t *d;

	for (int i = 0; i < ms / 50; i++) {
		if ((d = sv_get(b, "/v1/drivers")) != NULL) {
			driver_state(d, "exec", e, sizeof(e));
			driver_state(d, "privileged", p, sizeof(p));
			json_decref(d);
		}
		if (strcmp(e, exec) == 0 && strcmp(p, priv) == 0)
			return;
		usleep(50000);
	}
	ck_abort_msg("drivers exec=%s privileged=%s, not %s and %s", e, p,
	    exec, priv);
}

/* Task t of alloc as GET /v1/allocation/<alloc> reports it: pid, state. */
static pid_t
task_view(struct berth *b, const char *alloc, char *state, size_t n)
{
	char path[300];
	json_t *a, *t;
	pid_t pid;

	snprintf(path, sizeof(path), "/v1/allocation/%s", alloc);
	a = sv_get(b, path);
	ck_assert_msg(a != NULL, "no allocation %s", alloc);
	t = json_array_get(json_object_get(a, "tasks"), 0);
	pid = (pid_t)json_integer_value(json_object_get(t, "pid"));
	snprintf(state, n, "%s", json_string_value(json_object_get(t,
	    "state")) ?: "");
	json_decref(a);
	return pid;
}

/* The pid in the task's handle in the registry's database; 0: none. */
static pid_t
handle_pid(struct berth *b, const char *alloc)
{
	Berth__TaskHandle *th;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	char path[1024];
	pid_t pid = 0;

	snprintf(path, sizeof(path), "%s/data/registry/registry.db", b->dir);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK && sqlite3_prepare_v2(db, "SELECT state FROM reattach "
	    "WHERE alloc = ? AND task = 't'", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(st, 1, alloc, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && (th = berth__task_handle__unpack(
	    NULL, (size_t)sqlite3_column_bytes(st, 0),
	    sqlite3_column_blob(st, 0))) != NULL) {
		ck_assert_int_gt(th->shim_pid, 0);
		pid = th->pid;
		berth__task_handle__free_unpacked(th, NULL);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return pid;
}

/*
 * The first task's pid, once it runs and the registry has its handle: a
 * supervisor killed before that starts it again (see ARCHITECTURE.md).
 */
static pid_t
started(struct berth *b, const char *alloc)
{
	char who[256];
	pid_t pid;

	snprintf(who, sizeof(who), "%s/t", alloc);
	wait_event(b, "Started", who, NULL, 10000);
	ck_assert_int_eq(task_pids(b, &pid), 1);
	for (int i = 0; i < 100 && handle_pid(b, alloc) != pid; i++)
		usleep(50000);
	ck_assert_int_eq(handle_pid(b, alloc), pid);
	return pid;
}

/* pid's own pid in its pid namespace (NSpid's last field). */
static pid_t
ns_pid(pid_t pid)
{
	char buf[128], *last;

	ck_assert_ptr_nonnull(proc_status_field(pid, "NSpid", buf,
	    sizeof(buf)));
	last = strrchr(buf, '\t') != NULL ? strrchr(buf, '\t') + 1 : buf;
	return (pid_t)atol(last);
}

/* The host's pid of the process in task's pid namespace whose pid there
 * is inner; 0 if none. */
static pid_t
host_pid(pid_t task, pid_t inner)
{
	char path[64], ns[64], other[64];
	struct dirent *de;
	pid_t pid, found = 0;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%ld/ns/pid", (long)task);
	if ((n = readlink(path, ns, sizeof(ns) - 1)) < 0)
		return 0;
	ns[n] = '\0';
	ck_assert_ptr_nonnull(d = opendir("/proc"));
	while (found == 0 && (de = readdir(d)) != NULL) {
		if ((pid = (pid_t)atol(de->d_name)) <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/pid", (long)pid);
		if ((n = readlink(path, other, sizeof(other) - 1)) < 0)
			continue;
		other[n] = '\0';
		if (strcmp(ns, other) == 0 && ns_pid(pid) == inner)
			found = pid;
	}
	closedir(d);
	return found;
}

static pid_t
parent_of(pid_t pid)
{
	char buf[64];

	ck_assert_ptr_nonnull(proc_status_field(pid, "PPid", buf,
	    sizeof(buf)));
	return (pid_t)atol(buf);
}

/* A berth running alloc w, whose task waits for "go": its pid and shim. */
static pid_t
waiting_task(struct berth *b, pid_t *shim)
{
	pid_t pid;

	berth_config(b, "1s", NULL);
	berth_start(b);
	wait_drivers(b, "healthy", "healthy", 10000);
	exec_alloc(b, "w", WAITING, NULL);
	pid = started(b, "w");
	*shim = parent_of(pid);
	harness_track_pid(*shim);
	return pid;
}

START_TEST(exit_code_collected_after_a_supervisor_sigkill)
{
	struct berth b;
	char want[256], state[32];
	pid_t pid, shim;

	pid = waiting_task(&b, &shim);
	/* The shim is its sandbox's init, pid 1 of its pid namespace. */
	ck_assert_int_ne(shim, b.sv.pid);
	ck_assert_int_eq(ns_pid(shim), 1);
	berth_kill(&b);
	ck_assert(pid_alive(pid));
	ck_assert(pid_alive(shim));
	berth_start(&b);
	/* Adopted: the API shows the same pid running, no new start. */
	wait_alloc(&b, "w", "running", 10000);
	ck_assert_int_eq(task_view(&b, "w", state, sizeof(state)), pid);
	ck_assert_int_eq(task_pids(&b, NULL), 0);
	go(&b, "w", "7");
	snprintf(want, sizeof(want), "pid %ld exited with status 7", (long)pid);
	wait_event(&b, "Terminated", "w/t", want, 10000);
	ck_assert(pid_wait_gone(shim, 5000));
	berth_stop(&b);
}
END_TEST

START_TEST(exit_code_kept_when_the_task_ends_with_no_supervisor)
{
	struct berth b;
	char want[256], path[1024];
	struct stat st;
	pid_t pid, shim;

	pid = waiting_task(&b, &shim);
	berth_kill(&b);
	go(&b, "w", "9");
	ck_assert(pid_wait_gone(pid, 5000));
	ck_assert(pid_wait_gone(shim, 5000));
	/* Written with a rename: no temporary file is left. */
	shim_file(&b, "w", "exit-status.tmp", path, sizeof(path));
	ck_assert_int_eq(stat(path, &st), -1);
	shim_file(&b, "w", "exit-status", path, sizeof(path));
	ck_assert_int_eq(stat(path, &st), 0);
	berth_start(&b);
	snprintf(want, sizeof(want), "pid %ld exited with status 9 while the "
	    "supervisor was not running", (long)pid);
	wait_event(&b, "Terminated", "w/t", want, 10000);
	/* And it runs again, as a task that ended does. */
	for (int i = 0; i < 100 && task_pids(&b, NULL) < 1; i++)
		usleep(100000);
	ck_assert_int_ge(task_pids(&b, NULL), 1);
	berth_stop(&b);
}
END_TEST

START_TEST(a_signal_while_no_supervisor_runs_is_kept_too)
{
	struct berth b;
	char want[256];
	pid_t pid, shim;

	pid = waiting_task(&b, &shim);
	berth_kill(&b);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert(pid_wait_gone(pid, 5000));
	berth_start(&b);
	snprintf(want, sizeof(want), "pid %ld was killed by signal 9 (SIGKILL) "
	    "while the supervisor was not running", (long)pid);
	wait_event(&b, "Terminated", "w/t", want, 10000);
	berth_stop(&b);
}
END_TEST

/* Without its shim a task is not left to run unseen. */
START_TEST(a_lost_shim_takes_its_task_along)
{
	struct berth b;
	char want[256];
	pid_t pid, shim, crun;

	pid = waiting_task(&b, &shim);
	crun = parent_of(shim);
	ck_assert_int_eq(kill(shim, SIGKILL), 0);
	snprintf(want, sizeof(want), "berth-shim ended without a status; its "
	    "sandbox (crun pid %ld) ended, and its task (pid %ld) with it",
	    (long)crun, (long)pid);
	wait_event(&b, "ShimLost", "w/t", want, 10000);
	snprintf(want, sizeof(want), "pid %ld ended (status unknown: its shim "
	    "ended without writing it)", (long)pid);
	wait_event(&b, "Terminated", "w/t", want, 10000);
	ck_assert(pid_wait_gone(pid, 5000));
	berth_stop(&b);
}
END_TEST

static off_t
size_of(struct berth *b, const char *name)
{
	char path[1024];
	struct stat st;

	shim_file(b, "logs", name, path, sizeof(path));
	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* 4.5 MiB through 1 MiB files, 3 kept: two full ones and the current. */
START_TEST(logs_rotate_at_their_limit)
{
	struct berth b;
	const off_t mib = 1024 * 1024;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	exec_alloc(&b, "logs", "head -c 4718592 /dev/zero; echo written >&2; "
	    "exec sleep 600", ", \"logs\": {\"max_files\": 3, "
	    "\"max_file_size\": 1}");
	started(&b, "logs");
	for (int i = 0; i < 200 && size_of(&b, "stderr.log") < 8; i++)
		usleep(50000);
	ck_assert_int_eq(size_of(&b, "stderr.log"), 8);
	ck_assert_int_eq(size_of(&b, "stdout.log"), mib / 2);
	ck_assert_int_eq(size_of(&b, "stdout.log.1"), mib);
	ck_assert_int_eq(size_of(&b, "stdout.log.2"), mib);
	ck_assert_int_eq(size_of(&b, "stdout.log.3"), -1);
	ck_assert_int_eq(size_of(&b, "stderr.log.1"), -1);
	remove_alloc(&b, "logs.json");
	wait_event(&b, "AllocStopped", "logs", NULL, 10000);
	berth_stop(&b);
}
END_TEST

START_TEST(a_blocked_driver_has_its_stale_task_stopped)
{
	struct berth b;
	char want[256];
	pid_t pid, shim;

	pid = waiting_task(&b, &shim);
	berth_kill(&b);
	berth_reconfig(&b, "1s", ", \"driver_block\": [\"exec\"]");
	berth_start(&b);
	wait_drivers(&b, "blocked", "healthy", 10000);
	/* Log wording kept: the warning is part of what is tested. */
	wait_log(&b, "alloc file w.json refused: task t uses driver exec, "
	    "which driver_allow or driver_block in the config does not allow",
	    10000);
	snprintf(want, sizeof(want), "pid %ld was killed by signal 15 "
	    "(SIGTERM) (a stale task)", (long)pid);
	wait_event(&b, "Terminated", "w/t", want, 10000);
	ck_assert(pid_wait_gone(pid, 5000));
	ck_assert(pid_wait_gone(shim, 5000));
	/* Not adopted: w is listed as failed, and no task started. */
	wait_alloc(&b, "w", "failed", 5000);
	ck_assert_int_eq(task_pids(&b, NULL), 0);
	ck_assert_int_eq(count_events(&b, "AllocStarted", "w", NULL), 0);
	berth_stop(&b);
}
END_TEST

/* The API writes allocation documents into alloc_dir as the supervisor. */
static void
allocs_for_api(struct berth *b)
{
	struct passwd *pw = getpwnam("berth");

	ck_assert_ptr_nonnull(pw);
	ck_assert_int_eq(chown(b->allocs, pw->pw_uid, pw->pw_gid), 0);
}

static const char *
field(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : "";
}

#define BLOCKED_DOC "{\"id\": \"b\", \"tasks\": [{\"name\": \"t\", " \
	"\"driver\": \"exec\", \"config\": {\"command\": \"/bin/true\"}}]}"
#define BLOCKED_WHY "task t uses driver exec, which driver_allow or " \
	"driver_block in the config does not allow"

/*
 * A blocked driver: refused at once through the API (400, with why); a
 * file written by hand is listed as failed, for good, with the step and
 * why, and an event says the same; stopped, it is gone.
 */
START_TEST(a_blocked_driver_is_refused_or_listed_failed)
{
	struct berth b;
	json_t *j, *list;
	int status;

	berth_config(&b, "1s", ", \"driver_block\": [\"exec\"]");
	allocs_for_api(&b);
	berth_start(&b);
	wait_drivers(&b, "blocked", "healthy", 10000);
	j = sv_api(&b, "PUT", "/v1/allocations", BLOCKED_DOC, &status);
	ck_assert_int_eq(status, 400);
	ck_assert_str_eq(field(j, "error"), BLOCKED_WHY);
	json_decref(j);
	wait_alloc(&b, "b", NULL, 1);
	berth_alloc(&b, "b.json", BLOCKED_DOC);
	wait_alloc(&b, "b", "failed", 10000);
	j = sv_get(&b, "/v1/allocation/b");
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(field(j, "state"), "failed");
	ck_assert_str_eq(field(j, "step"), "driver");
	ck_assert_str_eq(field(j, "reason"), BLOCKED_WHY);
	ck_assert_ptr_null(json_object_get(j, "next_retry"));
	json_decref(j);
	j = sv_get(&b, "/v1/allocations");
	list = json_object_get(j, "allocations");
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_str_eq(field(json_array_get(list, 0), "state"), "failed");
	json_decref(j);
	wait_event(&b, "AllocFailed", "b", "driver: " BLOCKED_WHY, 5000);
	/* Not tried again, nothing started. */
	usleep(1500000);
	ck_assert_int_eq(count_events(&b, "AllocFailed", "b", NULL), 1);
	ck_assert_int_eq(task_pids(&b, NULL), 0);
	j = sv_api(&b, "DELETE", "/v1/allocation/b", NULL, &status);
	ck_assert_msg(status == 200, "%d %s", status, field(j, "error"));
	json_decref(j);
	wait_alloc(&b, "b", NULL, 5000);
	berth_stop(&b);
}
END_TEST

#define NODEF_DOC "{\"id\": \"p\", \"tasks\": [{\"name\": \"plugin\", " \
	"\"driver\": \"privileged\", \"config\": {\"plugin\": \"nope\"}, " \
	"\"csi_plugin\": {\"id\": \"hp\", \"type\": \"node\"}}]}"

/*
 * A privileged task whose plugin definition is not in plugins_dir: the
 * API refuses it (400, with why); a file written by hand is listed as
 * failed at step "plugin", with an event, and not tried again.
 */
START_TEST(a_missing_definition_is_refused_or_listed_failed)
{
	struct berth b;
	char defs[600], extra[800], why[1024];
	json_t *j;
	int status;

	berth_config(&b, "1s", NULL);
	snprintf(defs, sizeof(defs), "%s/defs", b.dir);
	ck_assert_int_eq(mkdir(defs, 0755), 0);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s\"", defs);
	berth_reconfig(&b, "1s", extra);
	allocs_for_api(&b);
	berth_start(&b);
	snprintf(why, sizeof(why), "task plugin: no plugin definition nope in "
	    "plugins_dir %s", defs);
	j = sv_api(&b, "PUT", "/v1/allocations", NODEF_DOC, &status);
	ck_assert_int_eq(status, 400);
	ck_assert_str_eq(field(j, "error"), why);
	json_decref(j);
	wait_alloc(&b, "p", NULL, 1);
	berth_alloc(&b, "p.json", NODEF_DOC);
	wait_alloc(&b, "p", "failed", 10000);
	j = sv_get(&b, "/v1/allocation/p");
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(field(j, "state"), "failed");
	ck_assert_str_eq(field(j, "step"), "plugin");
	ck_assert_str_eq(field(j, "reason"), why);
	ck_assert_ptr_null(json_object_get(j, "next_retry"));
	json_decref(j);
	wait_event(&b, "AllocFailed", "p", why, 5000);
	usleep(1500000);
	ck_assert_int_eq(count_events(&b, "AllocFailed", "p", NULL), 1);
	ck_assert_int_eq(task_pids(&b, NULL), 0);
	remove_alloc(&b, "p.json");
	wait_alloc(&b, "p", NULL, 5000);
	berth_stop(&b);
}
END_TEST

/*
 * A supervisor killed after starting a task but before its handle was in
 * the registry (the handle is removed here to stand for that window):
 * the next one finds the shim running for the task's directory with no
 * handle, kills it with its task, and starts the task once.
 */
START_TEST(an_unrecorded_task_is_not_run_twice)
{
	struct berth b;
	char path[1024];
	pid_t pid, shim, again;
	sqlite3 *db;

	pid = waiting_task(&b, &shim);
	berth_kill(&b);
	snprintf(path, sizeof(path), "%s/data/registry/registry.db", b.dir);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "DELETE FROM reattach WHERE alloc = "
	    "'w'", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	ck_assert(pid_alive(pid));
	berth_start(&b);
	/*
	 * Log wording kept: the shim found without a handle is a warning to
	 * the operator with no event of its own; part of what is tested.
	 */
	wait_log(&b, "with no handle (a supervisor died as it started)",
	    10000);
	wait_event(&b, "Started", "w/t", NULL, 10000);
	ck_assert(pid_wait_gone(pid, 5000));
	ck_assert(pid_wait_gone(shim, 5000));
	ck_assert_int_eq(task_pids(&b, &again), 1);
	ck_assert_int_ne(again, pid);
	ck_assert(pid_alive(again));
	berth_stop(&b);
}
END_TEST

/* The pid a task wrote to its file name; 0 if none yet. */
static pid_t
pid_in(struct berth *b, const char *alloc, const char *name)
{
	char path[1024], buf[32] = "";
	FILE *f;

	task_file(b, alloc, name, path, sizeof(path));
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return (pid_t)atol(buf);
}

/*
 * A stopped task takes its whole process group along: a shell's
 * background "sleep" and the command it waits for (the main job's
 * tasks are such shells). And a task starts with umask 022 whatever the
 * supervisor's (0077 here, as its unit sets; spawn mode's start-up gives
 * its directories their modes whatever the umask): what it writes is
 * 0644, not 0600.
 */
START_TEST(a_stopped_task_leaves_no_process_and_writes_0644)
{
	struct berth b;
	struct stat st;
	char path[1024];
	pid_t task, bg = 0, fg = 0;
	mode_t old;

	berth_config(&b, "1s", NULL);
	old = umask(0077);
	berth_start(&b);
	umask(old);
	exec_alloc(&b, "pg", "sleep 3600 & echo $! > bg; echo x > written; "
	    "umask > umask; sh -c 'echo $$ > fg; exec sleep 3600'", NULL);
	task = started(&b, "pg");
	/* They write their pids in the task's pid namespace. */
	for (int i = 0; i < 200 && (bg == 0 || fg == 0); i++) {
		usleep(50000);
		bg = host_pid(task, pid_in(&b, "pg", "bg"));
		fg = host_pid(task, pid_in(&b, "pg", "fg"));
	}
	ck_assert_int_gt(bg, 0);
	ck_assert_int_gt(fg, 0);
	ck_assert(pid_alive(bg) && pid_alive(fg));
	harness_track_pid(bg);
	harness_track_pid(fg);
	task_file(&b, "pg", "written", path, sizeof(path));
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0644, "a task's file has mode "
	    "%04o", st.st_mode & 07777);
	remove_alloc(&b, "pg.json");
	wait_event(&b, "AllocStopped", "pg", NULL, 15000);
	ck_assert(pid_wait_gone(task, 5000));
	ck_assert_msg(pid_wait_gone(bg, 5000), "the background sleep (pid "
	    "%ld) outlived its task", (long)bg);
	ck_assert_msg(pid_wait_gone(fg, 5000), "the foreground sleep (pid "
	    "%ld) outlived its task", (long)fg);
	berth_stop(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("drivers");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, exit_code_collected_after_a_supervisor_sigkill);
	tcase_add_test(tc, exit_code_kept_when_the_task_ends_with_no_supervisor);
	tcase_add_test(tc, a_signal_while_no_supervisor_runs_is_kept_too);
	tcase_add_test(tc, a_lost_shim_takes_its_task_along);
	tcase_add_test(tc, logs_rotate_at_their_limit);
	tcase_add_test(tc, a_blocked_driver_has_its_stale_task_stopped);
	tcase_add_test(tc, an_unrecorded_task_is_not_run_twice);
	tcase_add_test(tc, a_stopped_task_leaves_no_process_and_writes_0644);
	tcase_add_test(tc, a_blocked_driver_is_refused_or_listed_failed);
	tcase_add_test(tc, a_missing_definition_is_refused_or_listed_failed);
	return harness_run("drivers", tc);
}
