/*
 * test_restart.c: restart policies and the ends of allocations, with the
 * real processes: /bin/true completes once its policy restarts it no
 * more, /bin/false fails after its attempts, a missing command fails
 * with why, a task killed by a signal says which; berthctl alloc list
 * and alloc status show each with its last exit and reason; an ended
 * allocation stays ended across a supervisor SIGKILL and starts nothing;
 * a bad restart block is refused at PUT with every problem; the metrics
 * count restarts and ended tasks, and pass promtool's check.
 */
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <check.h>

#include "svtest.h"

static void
task_alloc(struct berth *b, const char *id, const char *command,
    const char *args, const char *restart)
{
	char file[160], text[2048];

	snprintf(file, sizeof(file), "%s.json", id);
	snprintf(text, sizeof(text), "{\"id\": \"%s\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": \"%s\"%s}, "
	    "\"kill_timeout\": \"1s\", \"restart\": %s}]}", id, command,
	    args != NULL ? args : "", restart);
	berth_alloc(b, file, text);
}

static const char *
jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

static json_t *
first_task(json_t *a)
{
	return json_array_get(json_object_get(a, "tasks"), 0);
}

/* The line of out that starts with start holds every one of the rest. */
static void
line_has(const char *out, const char *start, ...)
{
	const char *p = out, *want;
	char line[1024];
	size_t len;
	va_list ap;

	for (;;) {
		ck_assert_msg(*p != '\0', "no line starting \"%s\" in:\n%s",
		    start, out);
		len = strcspn(p, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (strncmp(line, start, strlen(start)) == 0)
			break;
		p += len + (p[len] == '\n');
	}
	va_start(ap, start);
	while ((want = va_arg(ap, const char *)) != NULL)
		ck_assert_msg(strstr(line, want) != NULL, "\"%s\" not in the "
		    "line \"%s\"", want, line);
	va_end(ap);
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

START_TEST(true_completes_false_and_missing_fail)
{
	struct berth b;
	static char out[65536];
	json_t *a, *t, *e;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	task_alloc(&b, "ok", "/bin/true", NULL, "{\"attempts\": 1, "
	    "\"delay\": \"200ms\"}");
	task_alloc(&b, "bad", "/bin/false", NULL, "{\"attempts\": 2, "
	    "\"delay\": \"200ms\", \"mode\": \"fail\"}");
	task_alloc(&b, "missing", "/nonexistent/command", NULL,
	    "{\"attempts\": 1, \"delay\": \"200ms\"}");
	task_alloc(&b, "killed", "/bin/sh", ", \"args\": [\"-c\", \"kill -9 "
	    "$$\"]", "{\"attempts\": 0}");
	wait_event(&b, "AllocComplete", "ok", "every task exited with status "
	    "0 and none is restarted", 20000);
	wait_event(&b, "AllocFailed", "bad", "restart: task t: exited with "
	    "status 1; 2 restarts within 30m used up and the restart mode is "
	    "\"fail\"", 20000);
	wait_event(&b, "AllocFailed", "missing", "/nonexistent/command",
	    20000);
	wait_event(&b, "AllocFailed", "killed", "was killed by signal 9 "
	    "(SIGKILL); the restart policy allows no restarts", 20000);
	/* Ran as often as their policies say, and no more. */
	usleep(1000000);
	ck_assert_int_eq(count_events(&b, "Started", "ok/t", NULL), 2);
	ck_assert_int_eq(count_events(&b, "Started", "bad/t", NULL), 3);
	ck_assert_int_eq(count_events(&b, "Started", "killed/t", NULL), 1);
	ck_assert_int_eq(count_events(&b, "Started", "missing/t", NULL), 0);
	ck_assert_int_eq(count_events(&b, "Restarting", "bad/t",
	    "starting again in 200ms: restart 2 of 2 within 30m"), 1);
	ck_assert_int_eq(count_events(&b, "AllocFailed", "ok", NULL), 0);

	/* The API: states, last exits, reasons. */
	ck_assert_ptr_nonnull(a = sv_get(&b, "/v1/allocation/bad"));
	ck_assert_str_eq(jstr(a, "state"), "failed");
	ck_assert_str_eq(jstr(a, "step"), "restart");
	t = first_task(a);
	ck_assert_str_eq(jstr(t, "state"), "failed");
	ck_assert_int_eq(json_integer_value(json_object_get(t, "restarts")),
	    2);
	e = json_object_get(t, "last_exit");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "code")), 1);
	ck_assert_str_eq(jstr(t, "reason"), "exited with status 1; 2 "
	    "restarts within 30m used up and the restart mode is \"fail\"");
	json_decref(a);
	ck_assert_ptr_nonnull(a = sv_get(&b, "/v1/allocation/ok"));
	ck_assert_str_eq(jstr(a, "state"), "complete");
	ck_assert_str_eq(jstr(a, "status"), "complete");
	ck_assert_ptr_nonnull(strstr(jstr(a, "reason"), "last, task t: "
	    "exited with status 0; 1 restart within 30m used up"));
	e = json_object_get(first_task(a), "last_exit");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "code")), 0);
	json_decref(a);
	ck_assert_ptr_nonnull(a = sv_get(&b, "/v1/allocation/missing"));
	ck_assert_str_eq(jstr(a, "state"), "failed");
	ck_assert_ptr_nonnull(strstr(jstr(a, "reason"), "task t: could not "
	    "start: "));
	ck_assert_ptr_nonnull(strstr(jstr(a, "reason"), "/nonexistent/"
	    "command"));
	ck_assert_ptr_null(json_object_get(first_task(a), "last_exit"));
	json_decref(a);
	ck_assert_ptr_nonnull(a = sv_get(&b, "/v1/allocation/killed"));
	e = json_object_get(first_task(a), "last_exit");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "signal")), 9);
	ck_assert_str_eq(jstr(e, "name"), "SIGKILL");
	json_decref(a);

	/* berthctl: the list, and one allocation. */
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "list", NULL), 0);
	line_has(out, "ID ", "STATE", "LAST EXIT", "REASON", NULL);
	line_has(out, "ok ", "complete", "code 0", "every task exited", NULL);
	line_has(out, "bad ", "failed", "code 1", "task t: exited with "
	    "status 1", NULL);
	line_has(out, "missing ", "failed", "- ", "could not start", NULL);
	line_has(out, "killed ", "failed", "signal 9 (SIGKILL)", NULL);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "status", "bad",
	    NULL), 0);
	line_has(out, "Status", "failed", NULL);
	line_has(out, "Step", "restart", NULL);
	line_has(out, "Reason", "task t: exited with status 1", NULL);
	line_has(out, "Last exit", "code 1", NULL);
	line_has(out, "NAME", "RESTARTS", "LAST EXIT", NULL);
	line_has(out, "t ", "failed", " 2 ", "code 1", NULL);
	ck_assert_ptr_nonnull(strstr(out, "  NotRestarting  exited with "
	    "status 1; 2 restarts"));

	/* The metrics: restarts, and the tasks ended, by how. */
	metrics(&b, out, sizeof(out));
	ck_assert_ptr_nonnull(strstr(out, "berth_task_restarts_total{alloc="
	    "\"bad\",task=\"t\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(out, "berth_task_ended{alloc=\"bad\","
	    "task=\"t\",state=\"failed\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(out, "berth_task_ended{alloc=\"ok\","
	    "task=\"t\",state=\"complete\"} 1\n"));

	/* Stopped, an ended allocation is gone. */
	remove_alloc(&b, "bad.json");
	wait_event(&b, "AllocStopped", "bad", NULL, 10000);
	wait_alloc(&b, "bad", NULL, 5000);
	berth_stop(&b);
}
END_TEST

/* Complete and failed stay so across a supervisor SIGKILL. */
START_TEST(an_end_outlives_a_supervisor_restart)
{
	struct berth b;
	json_t *a;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	task_alloc(&b, "done", "/bin/true", NULL, "{\"attempts\": 0}");
	task_alloc(&b, "broke", "/bin/sh", ", \"args\": [\"-c\", \"exit "
	    "7\"]", "{\"attempts\": 0}");
	wait_event(&b, "AllocComplete", "done", NULL, 20000);
	wait_event(&b, "AllocFailed", "broke", "exited with status 7", 20000);
	wait_alloc(&b, "done", "complete", 5000);
	berth_kill(&b);
	berth_start(&b);
	wait_alloc(&b, "done", "complete", 10000);
	wait_alloc(&b, "broke", "failed", 10000);
	usleep(2000000);
	ck_assert_int_eq(count_events(&b, "Started", NULL, NULL), 0);
	ck_assert_ptr_nonnull(a = sv_get(&b, "/v1/allocation/broke"));
	ck_assert_str_eq(jstr(a, "reason"), "task t: exited with status 7; "
	    "the restart policy allows no restarts");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(
	    first_task(a), "last_exit"), "code")), 7);
	json_decref(a);
	/* Its new version runs anew. */
	task_alloc(&b, "broke", "/bin/sh", ", \"args\": [\"-c\", \"exit "
	    "0\"]", "{\"attempts\": 0}");
	wait_event(&b, "AllocComplete", "broke", NULL, 20000);
	ck_assert_int_eq(count_events(&b, "Started", "broke/t", NULL), 1);
	remove_alloc(&b, "done.json");
	wait_alloc(&b, "done", NULL, 10000);
	berth_stop(&b);
}
END_TEST

/*
 * One task runs once and completes, the other runs on: the allocation
 * runs, and berthctl alloc run --wait says so; once the other has
 * exited 0 too, with no restart left, it is complete.
 */
START_TEST(a_completed_task_leaves_the_others_running)
{
	struct berth b;
	struct passwd *pw = getpwnam("berth");
	char path[700], out[8192];
	json_t *a;

	berth_config(&b, "1s", NULL);
	/* The API writes into alloc_dir as the supervisor's user. */
	ck_assert_ptr_nonnull(pw);
	ck_assert_int_eq(chown(b.allocs, pw->pw_uid, pw->pw_gid), 0);
	berth_start(&b);
	snprintf(path, sizeof(path), "%s/two.json", b.dir);
	harness_write(path, "{\"id\": \"two\", \"tasks\": [{\"name\": "
	    "\"once\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}, \"restart\": {\"attempts\": 0}}, {\"name\": "
	    "\"on\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sh\", \"args\": [\"-c\", \"while [ ! -e go ]; do "
	    "sleep 0.05; done\"]}, \"restart\": {\"attempts\": 0}}]}");
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "run", path,
	    "--wait", "--timeout", "30s", NULL), 0);
	wait_event(&b, "NotRestarting", "two/once", "exited with status 0",
	    10000);
	ck_assert_ptr_nonnull(a = sv_get(&b, "/v1/allocation/two"));
	ck_assert_str_eq(jstr(a, "state"), "running");
	ck_assert_str_eq(jstr(first_task(a), "state"), "complete");
	json_decref(a);
	/* The other ends well too: complete. */
	snprintf(path, sizeof(path), "%s/data/allocs/two/on/go", b.dir);
	harness_write(path, "");
	wait_event(&b, "AllocComplete", "two", NULL, 10000);
	ck_assert_int_eq(count_events(&b, "Started", "two/once", NULL), 1);
	berth_stop(&b);
}
END_TEST

/* A bad restart block: 400 at PUT, every problem with its path. */
START_TEST(a_bad_restart_block_is_refused)
{
	static const char doc[] = "{\"id\": \"r\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}, \"restart\": {\"attempts\": 3, \"interval\": "
	    "\"10s\", \"delay\": \"5s\", \"mode\": \"often\"}}, {\"name\": "
	    "\"u\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}, \"restart\": {\"attempts\": 0, \"mode\": "
	    "\"delay\"}}]}";
	struct berth b;
	json_t *j, *p;
	int status;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	j = sv_api(&b, "PUT", "/v1/allocations", doc, &status);
	ck_assert_int_eq(status, 400);
	ck_assert_ptr_nonnull(j);
	p = json_object_get(j, "problems");
	ck_assert_int_eq(json_array_size(p), 2);
	ck_assert_str_eq(json_string_value(json_array_get(p, 0)),
	    "tasks[0].restart.mode: must be one of \"fail\", \"delay\", not "
	    "\"often\"");
	ck_assert_str_eq(json_string_value(json_array_get(p, 1)),
	    "tasks[1].restart: mode \"delay\" with 0 attempts would never "
	    "start the task again; give attempts, or use mode \"fail\"");
	json_decref(j);
	berth_stop(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("restart");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, true_completes_false_and_missing_fail);
	tcase_add_test(tc, an_end_outlives_a_supervisor_restart);
	tcase_add_test(tc, a_completed_task_leaves_the_others_running);
	tcase_add_test(tc, a_bad_restart_block_is_refused);
	return harness_run("restart", tc);
}
