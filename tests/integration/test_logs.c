/*
 * test_logs.c: tasks' logs through GET /v1/allocation/<id>/logs and
 * berthctl alloc logs, with real tasks: a running task's stdout is read
 * and followed (-f ends by itself once the allocation completes) and its
 * stderr read apart; a plugin task (berth-csi-hostpath, made to crash)
 * says why it ended after it has; its logs are still read after the
 * allocation stops and across a supervisor restart, and are gone, from
 * the API and the disk, once log_retention has passed; so are those of
 * the same plugin run as a privileged task, by the mounter. Bad requests
 * get JSON errors.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>

#include "http.h"
#include "svtest.h"

/* berthctl alloc logs ALLOC TASK [--stderr] until out holds want, or fail. */
static void
logs_hold(struct berth *b, const char *alloc, const char *task,
    bool err, const char *want, char *out, size_t n)
{
	int i, rc = -1;

	for (i = 0; i < 100; i++) {
		rc = sv_ctl(b, out, n, "alloc", "logs", alloc, task, err ?
		    "--stderr" : NULL, NULL);
		if (rc == 0 && strstr(out, want) != NULL)
			return;
		usleep(100000);
	}
	ck_abort_msg("alloc logs %s %s%s: exit %d, no \"%s\" in:\n%s", alloc,
	    task, err ? " --stderr" : "", rc, want, out);
}

/* berthctl alloc logs ... -f in the background, stdout into file. */
static pid_t
follow(struct berth *b, const char *alloc, const char *task,
    const char *file)
{
	pid_t pid;
	int fd;

	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		setenv("BERTH_API", b->sock, 1);
		if ((fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
		    dup2(fd, 1) < 0)
			_exit(127);
		execl(harness_bin("berthctl"), "berthctl", "alloc", "logs",
		    alloc, task, "-f", (char *)NULL);
		_exit(127);
	}
	harness_track_pid(pid);
	return pid;
}

/* Its exit status, within ms; fails (and kills it) otherwise. */
static int
wait_exit(pid_t pid, int ms)
{
	int status, i;

	for (i = 0; i < ms / 50; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			ck_assert(WIFEXITED(status));
			return WEXITSTATUS(status);
		}
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_abort_msg("berthctl alloc logs -f did not end within %d ms", ms);
	return -1;
}

static void
slurp(const char *file, char *buf, size_t n)
{
	FILE *f = fopen(file, "r");

	ck_assert_ptr_nonnull(f);
	buf[fread(buf, 1, n - 1, f)] = '\0';
	fclose(f);
}

START_TEST(a_running_task_is_read_and_followed)
{
	struct berth b;
	struct http_response r;
	char file[600], out[4096], why[600], v[32];
	pid_t f;

	berth_config(&b, "1s", NULL);
	berth_start(&b);
	/* "second" comes 5 s after "first"; then the task completes. */
	berth_alloc(&b, "talk.json", "{\"id\": \"talk\", \"tasks\": [{\"name\":"
	    " \"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sh\", \"args\": [\"-c\", \"echo first; echo oops >&2; "
	    "sleep 5; echo second\"]}, \"kill_timeout\": \"1s\", "
	    "\"restart\": {\"attempts\": 0}}]}");
	logs_hold(&b, "talk", "t", false, "first\n", out, sizeof(out));
	ck_assert_ptr_null(strstr(out, "second"));
	ck_assert_ptr_null(strstr(out, "oops"));
	snprintf(file, sizeof(file), "%s/follow.out", b.dir);
	f = follow(&b, "talk", "t", file);
	logs_hold(&b, "talk", "t", true, "oops\n", out, sizeof(out));
	ck_assert_str_eq(out, "oops\n");
	/* -f prints what comes, and ends once the allocation completes. */
	ck_assert_int_eq(wait_exit(f, 20000), 0);
	slurp(file, out, sizeof(out));
	ck_assert_str_eq(out, "first\nsecond\n");
	wait_alloc(&b, "talk", "complete", 5000);
	/* The API: from an offset, with where the answer starts and ends. */
	ck_assert_int_eq(http_request(b.sock, "GET", "/v1/allocation/talk/"
	    "logs?task=t&offset=6", NULL, 0, 5000, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "second\n");
	ck_assert_str_eq(http_header(&r, "X-Berth-Log-Offset", v, sizeof(v)),
	    "6");
	ck_assert_str_eq(http_header(&r, "X-Berth-Log-Next", v, sizeof(v)),
	    "13");
	ck_assert_str_eq(http_header(&r, "X-Berth-Log-Running", v, sizeof(v)),
	    "0");
	http_response_free(&r);
	/* Bad requests: JSON errors. */
	ck_assert_int_eq(http_request(b.sock, "GET", "/v1/allocation/talk/"
	    "logs?task=nope", NULL, 0, 5000, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.status, 404);
	ck_assert_ptr_nonnull(strstr(r.body, "allocation talk has no task "
	    "nope"));
	http_response_free(&r);
	ck_assert_int_eq(http_request(b.sock, "GET", "/v1/allocation/talk/"
	    "logs?task=t%0A", NULL, 0, 5000, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.status, 400);
	ck_assert_ptr_nonnull(strstr(r.body, "\"code\""));
	http_response_free(&r);
	ck_assert_int_eq(http_request(b.sock, "GET", "/v1/allocation/talk/"
	    "logs?task=t&stream=stdin", NULL, 0, 5000, &r, why,
	    sizeof(why)), 0);
	ck_assert_int_eq(r.status, 400);
	http_response_free(&r);
	/* berthctl checks the task's name before any request. */
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "logs", "talk",
	    "a/b", NULL), 2);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "logs", "talk",
	    NULL), 2);
	berth_stop(&b);
}
END_TEST

START_TEST(a_crashed_plugin_is_read_then_expires)
{
	struct berth b;
	struct stat st;
	char text[2048], out[8192], path[700];
	int i;

	berth_config(&b, "1s", ", \"log_retention\": \"10s\"");
	berth_start(&b);
	/* A node plugin that exits while serving NodeGetInfo, saying why. */
	snprintf(text, sizeof(text), "{\"id\": \"crashy\", \"tasks\": [{"
	    "\"name\": \"plugin\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"%s\", \"args\": [\"--node-id\", \"n1\", "
	    "\"--state-dir\", \"state\", \"--mode\", \"node\", "
	    "\"--fault-exit-in\", \"NodeGetInfo\"]}, \"csi_plugin\": {\"id\": "
	    "\"crashy\", \"type\": \"node\", \"health_timeout\": \"5s\"}, "
	    "\"kill_timeout\": \"1s\", \"restart\": {\"attempts\": 0}}]}",
	    sv_sandbox_bin("berth-csi-hostpath"));
	berth_alloc(&b, "crashy.json", text);
	wait_alloc(&b, "crashy", "failed", 20000);
	logs_hold(&b, "crashy", "plugin", true, "exiting in NodeGetInfo", out,
	    sizeof(out));
	/* Stopped: its logs are kept, and outlive a supervisor restart. */
	remove_alloc(&b, "crashy.json");
	wait_alloc(&b, "crashy", NULL, 10000);
	logs_hold(&b, "crashy", "plugin", true, "exiting in NodeGetInfo", out,
	    sizeof(out));
	snprintf(path, sizeof(path), "%s/data/logs/crashy", b.dir);
	ck_assert_int_eq(stat(path, &st), 0);
	berth_kill(&b);
	berth_start(&b);
	logs_hold(&b, "crashy", "plugin", true, "exiting in NodeGetInfo", out,
	    sizeof(out));
	/* Then log_retention passes: gone from the API and the disk. */
	for (i = 0; i < 250 && sv_ctl(&b, out, sizeof(out), "alloc", "logs",
	    "crashy", "plugin", "--stderr", NULL) == 0; i++)
		usleep(100000);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "logs",
	    "crashy", "plugin", NULL), 1);
	ck_assert_int_ne(stat(path, &st), 0);
	berth_stop(&b);
}
END_TEST

/* The same plugin, defined by root and started by the mounter. */
START_TEST(a_crashed_privileged_plugin_is_read_and_kept)
{
	char extra[600], path[1024], text[2048], out[8192];
	char *defs = harness_tmpdir("logdefs");
	struct berth b;
	struct stat st;
	int i;

	snprintf(path, sizeof(path), "%s/crashy.conf", defs);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n1\n"
	    "arg --state-dir\narg %s/state\narg --mode\narg node\n"
	    "arg --fault-exit-in\narg NodeGetInfo\n",
	    harness_bin("berth-csi-hostpath"), defs);
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s\", "
	    "\"log_retention\": \"6s\"", defs);
	berth_config(&b, "1s", extra);
	berth_start(&b);
	berth_alloc(&b, "priv.json", "{\"id\": \"priv\", \"tasks\": [{"
	    "\"name\": \"node\", \"driver\": \"privileged\", \"config\": "
	    "{\"plugin\": \"crashy\"}, \"csi_plugin\": {\"id\": \"pc\", "
	    "\"type\": \"node\", \"health_timeout\": \"5s\"}, "
	    "\"restart\": {\"attempts\": 0}}]}");
	wait_alloc(&b, "priv", "failed", 20000);
	logs_hold(&b, "priv", "node", true, "exiting in NodeGetInfo", out,
	    sizeof(out));
	remove_alloc(&b, "priv.json");
	wait_alloc(&b, "priv", NULL, 10000);
	/* Kept under the task's name, not the definition's. */
	logs_hold(&b, "priv", "node", true, "exiting in NodeGetInfo", out,
	    sizeof(out));
	snprintf(path, sizeof(path), "%s/data/logs/priv/node/stderr.log",
	    b.dir);
	ck_assert_int_eq(stat(path, &st), 0);
	for (i = 0; i < 150 && stat(path, &st) == 0; i++)
		usleep(100000);
	ck_assert_int_ne(stat(path, &st), 0);
	ck_assert_int_eq(sv_ctl(&b, out, sizeof(out), "alloc", "logs",
	    "priv", "node", "--stderr", NULL), 1);
	berth_stop(&b);
	harness_rmtree(defs);
	free(defs);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("logs");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_running_task_is_read_and_followed);
	tcase_add_test(tc, a_crashed_plugin_is_read_then_expires);
	tcase_add_test(tc, a_crashed_privileged_plugin_is_read_and_kept);
	return harness_run("logs", tc);
}
