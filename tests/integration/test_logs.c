/*
 * test_logs.c: tasks' logs through GET /v1/allocation/<id>/logs and
 * berthctl alloc logs, with real tasks: a running task's stdout is read
 * and followed (-f ends by itself once the allocation completes) and its
 * stderr read apart; a plugin task (berth-csi-hostpath, made to crash)
 * says why it ended after it has; its logs are still read after the
 * allocation stops and across a supervisor restart, and are gone, from
 * the API and the disk, once log_retention has passed; so are those of
 * the same plugin run as a privileged task, by the mounter. Bad requests
 * get JSON errors. A privileged plugin that writes more than its "logs"
 * block allows leaves that many files, rotated by its log writer (as
 * berth's user, with no capability, ended with the plugin); berthctl
 * reads them oldest first, and follows across a rotation without losing
 * or repeating a line; a plugin whose writer died does not block.
 */
#include <dirent.h>
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

/* berthctl alloc logs ... [-f] in the background, stdout into file. */
static pid_t
ctl_logs(struct berth *b, const char *alloc, const char *task,
    const char *file, bool f)
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
		    alloc, task, f ? "-f" : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	harness_track_pid(pid);
	return pid;
}

static pid_t
follow(struct berth *b, const char *alloc, const char *task,
    const char *file)
{
	return ctl_logs(b, alloc, task, file, true);
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
	ck_assert_str_eq(http_header(&r, "X-Berth-Log-Current", v, sizeof(v)),
	    "1");
	http_response_free(&r);
	/* A file no longer there (inode 1 is no log): the oldest kept, from
	 * its start, and the reader is told. */
	ck_assert_int_eq(http_request(b.sock, "GET", "/v1/allocation/talk/"
	    "logs?task=t&file=1&offset=6", NULL, 0, 5000, &r, why,
	    sizeof(why)), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "first\nsecond\n");
	ck_assert_str_eq(http_header(&r, "X-Berth-Log-Lost", v, sizeof(v)),
	    "1");
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
	ck_assert_int_eq(http_request(b.sock, "GET", "/v1/allocation/talk/"
	    "logs?task=t&file=x", NULL, 0, 5000, &r, why, sizeof(why)), 0);
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

/* GET the plugin's stderr (from file, when not NULL, and offset). */
static void
get_stderr(struct berth *b, const char *alloc, const char *file,
    long long offset, struct http_response *r)
{
	char path[300], why[600];

	snprintf(path, sizeof(path), "/v1/allocation/%s/logs?task=plugin&"
	    "stream=stderr&offset=%lld%s%s", alloc, offset, file ? "&file=" :
	    "", file ? file : "");
	ck_assert_int_eq(http_request(b->sock, "GET", path, NULL, 0, 5000, r,
	    why, sizeof(why)), 0);
	ck_assert_int_eq(r->status, 200);
}

START_TEST(a_crashed_plugin_is_read_then_expires)
{
	struct berth b;
	struct stat st;
	struct http_response r;
	char text[2048], out[8192], path[700], file[32], v[32];
	long long next;
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
	/* Where a reader got to in the file the shim wrote. */
	get_stderr(&b, "crashy", NULL, 0, &r);
	ck_assert_ptr_nonnull(http_header(&r, "X-Berth-Log-File", file,
	    sizeof(file)));
	next = atoll(http_header(&r, "X-Berth-Log-Next", v, sizeof(v)));
	ck_assert_int_gt(next, 0);
	http_response_free(&r);
	/* Stopped: its logs are kept, and outlive a supervisor restart. */
	remove_alloc(&b, "crashy.json");
	wait_alloc(&b, "crashy", NULL, 10000);
	logs_hold(&b, "crashy", "plugin", true, "exiting in NodeGetInfo", out,
	    sizeof(out));
	/* The kept copy is the same file to that reader: it goes on where
	 * it was, neither lost nor starting over. */
	get_stderr(&b, "crashy", file, next, &r);
	ck_assert_uint_eq(r.len, 0);
	ck_assert_str_eq(http_header(&r, "X-Berth-Log-File", v, sizeof(v)),
	    file);
	ck_assert_ptr_null(http_header(&r, "X-Berth-Log-Lost", v, sizeof(v)));
	http_response_free(&r);
	get_stderr(&b, "crashy", file, 0, &r);
	ck_assert_ptr_nonnull(strstr(r.body, "exiting in NodeGetInfo"));
	ck_assert_int_eq(atoll(http_header(&r, "X-Berth-Log-Next", v,
	    sizeof(v))), next);
	http_response_free(&r);
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

static long long
size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Wait until path is at least size bytes long; fails otherwise. */
static void
wait_size(const char *path, long long size, int ms)
{
	int i;

	for (i = 0; i < ms / 50 && size_of(path) < size; i++)
		usleep(50000);
	ck_assert_msg(size_of(path) >= size, "%s: %lld bytes, not %lld",
	    path, size_of(path), size);
}

/* Lines first..last of "%07d\n" are exactly what file holds. */
static void
holds_lines(const char *file, int first, int last)
{
	size_t n = (size_t)(last - first + 1) * 8, i;
	char *want = malloc(n + 1), *got = malloc(n + 2);
	FILE *f = fopen(file, "r");

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_ptr_nonnull(f);
	for (i = 0; i < n / 8; i++)
		snprintf(want + i * 8, 9, "%07d\n", first + (int)i);
	i = fread(got, 1, n + 2, f);
	fclose(f);
	ck_assert_msg(i == n && memcmp(got, want, n) == 0, "%s: %zu bytes, "
	    "not lines %d..%d (%zu bytes); it starts \"%.16s\"", file, i,
	    first, last, n, got);
	free(want);
	free(got);
}

/* The pid of berth-shim -L writing under dir (a path it was given); 0. */
static pid_t
writer_of(const char *dir)
{
	char path[300], buf[1024];
	struct dirent *de;
	pid_t pid = 0;
	ssize_t n, i;
	DIR *d;
	int fd;

	ck_assert_ptr_nonnull(d = opendir("/proc"));
	while (pid == 0 && (de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    (fd = open(path, O_RDONLY)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		for (i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[n > 0 ? n : 0] = '\0';
		if (strstr(buf, "berth-shim -L -d ") == buf &&
		    strstr(buf, dir) != NULL)
			pid = atoi(de->d_name);
	}
	closedir(d);
	return pid;
}

/* A /proc/<pid>/status line's value, as text. */
static void
status_of(pid_t pid, const char *key, char *out, size_t n)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	out[0] = '\0';
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			snprintf(out, n, "%s", line + strlen(key));
	fclose(f);
}

/*
 * A privileged plugin (a shell, defined by root) writes 8-byte lines:
 * 300,000 (2.4 MB), then, once told, 200,000 more, through a log writer
 * kept to three files of 1 MiB by the task's "logs" block.
 */
START_TEST(a_privileged_plugins_logs_rotate_and_are_read_across)
{
	char extra[600], path[1024], text[2048], live[700];
	char *defs = harness_tmpdir("rotdefs"), v[256];
	struct berth b;
	pid_t f, w;
	int i;

	snprintf(path, sizeof(path), "%s/talky.sh", defs);
	snprintf(text, sizeof(text), "seq -f %%07g 1 300000\n"
	    "while [ ! -e %s/go ]; do sleep 0.05; done\n"
	    "seq -f %%07g 300001 500000\n"
	    "while [ ! -e %s/go2 ]; do sleep 0.05; done\n"
	    "seq 1 2000000\ntouch %s/done\nexec sleep 1000\n", defs, defs,
	    defs);
	harness_write(path, text);
	snprintf(text, sizeof(text), "exec /bin/sh\narg %s\n", path);
	snprintf(path, sizeof(path), "%s/talky.conf", defs);
	harness_write(path, text);
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s\", "
	    "\"log_retention\": \"60s\"", defs);
	berth_config(&b, "1s", extra);
	berth_start(&b);
	berth_alloc(&b, "rot.json", "{\"id\": \"rot\", \"tasks\": [{"
	    "\"name\": \"node\", \"driver\": \"privileged\", \"config\": "
	    "{\"plugin\": \"talky\"}, \"csi_plugin\": {\"id\": \"tk\", "
	    "\"type\": \"node\", \"health_timeout\": \"120s\"}, "
	    "\"logs\": {\"max_files\": 3, \"max_file_size\": 1}, "
	    "\"kill_timeout\": \"1s\", \"restart\": {\"attempts\": 0}}]}");
	/* 2,400,000 bytes: two full files and the current one. */
	snprintf(live, sizeof(live), "%s/data/logs/+live/rot/talky", b.dir);
	snprintf(path, sizeof(path), "%s/stdout.log.2", live);
	wait_size(path, 1048576, 20000);
	snprintf(path, sizeof(path), "%s/stdout.log", live);
	wait_size(path, 2400000 - 2 * 1048576, 20000);
	/* Its writer: berth's user, no capability. */
	ck_assert_int_gt(w = writer_of("logs/+live/rot/talky"), 0);
	status_of(w, "Uid:", v, sizeof(v));
	ck_assert_msg(strtol(v, NULL, 10) != 0, "writer uid: %s", v);
	status_of(w, "CapEff:", v, sizeof(v));
	ck_assert_int_eq(strtoull(v, NULL, 16), 0);
	status_of(w, "CapPrm:", v, sizeof(v));
	ck_assert_int_eq(strtoull(v, NULL, 16), 0);
	/* Followed from the oldest file, then across a rotation. */
	snprintf(path, sizeof(path), "%s/follow.out", b.dir);
	f = follow(&b, "rot", "node", path);
	wait_size(path, 2400000, 20000);
	snprintf(text, sizeof(text), "%s/go", defs);
	harness_write(text, "");
	wait_size(path, 4000000, 20000);
	usleep(600000);		/* two more polls: nothing more comes */
	kill(f, SIGTERM);
	waitpid(f, NULL, 0);
	holds_lines(path, 1, 500000);
	/* Bounded: 4,000,000 bytes in three files, the oldest dropped. */
	snprintf(path, sizeof(path), "%s/stdout.log.3", live);
	ck_assert_int_eq(size_of(path), -1);
	snprintf(path, sizeof(path), "%s/stdout.log.2", live);
	ck_assert_int_eq(size_of(path), 1048576);
	snprintf(path, sizeof(path), "%s/stdout.log.1", live);
	ck_assert_int_eq(size_of(path), 1048576);
	snprintf(path, sizeof(path), "%s/stdout.log", live);
	ck_assert_int_eq(size_of(path), 4000000 - 3 * 1048576);
	/* A plain read: the rotated files, oldest first, then the current
	 * one: from line 131,073 (byte 1,048,576) on. */
	snprintf(path, sizeof(path), "%s/read.out", b.dir);
	ck_assert_int_eq(wait_exit(ctl_logs(&b, "rot", "node", path, false),
	    20000), 0);
	holds_lines(path, 131073, 500000);
	/* Its writer gone, the plugin's writes fail instead of blocking. */
	kill(w, SIGKILL);
	for (i = 0; i < 100 && writer_of("logs/+live/rot/talky") != 0; i++)
		usleep(50000);
	snprintf(text, sizeof(text), "%s/go2", defs);
	harness_write(text, "");
	snprintf(text, sizeof(text), "%s/done", defs);
	for (i = 0; i < 200 && size_of(text) < 0; i++)
		usleep(50000);
	ck_assert_msg(size_of(text) == 0, "the plugin blocked on its output");
	/* Stopped: the files are kept whole, under the task's name. */
	remove_alloc(&b, "rot.json");
	wait_alloc(&b, "rot", NULL, 20000);
	ck_assert_int_eq(size_of(live), -1);
	snprintf(path, sizeof(path), "%s/data/logs/rot/node/stdout.log.2",
	    b.dir);
	ck_assert_int_eq(size_of(path), 1048576);
	snprintf(path, sizeof(path), "%s/read2.out", b.dir);
	ck_assert_int_eq(wait_exit(ctl_logs(&b, "rot", "node", path, false),
	    20000), 0);
	holds_lines(path, 131073, 500000);
	berth_stop(&b);
	harness_rmtree(defs);
	free(defs);
}
END_TEST

/* A second plugin ends with its writer: the writer outlives it not. */
START_TEST(a_privileged_plugins_writer_ends_with_it)
{
	char extra[600], path[1024], text[1024];
	char *defs = harness_tmpdir("wdefs");
	struct berth b;
	pid_t w = 0;
	int i;

	snprintf(path, sizeof(path), "%s/brief.conf", defs);
	harness_write(path, "exec /bin/sh\narg -c\narg echo said; "
	    "sleep 2; echo gone >&2\n");
	snprintf(extra, sizeof(extra), ", \"plugins_dir\": \"%s\"", defs);
	berth_config(&b, "1s", extra);
	berth_start(&b);
	berth_alloc(&b, "brief.json", "{\"id\": \"brief\", \"tasks\": [{"
	    "\"name\": \"node\", \"driver\": \"privileged\", \"config\": "
	    "{\"plugin\": \"brief\"}, \"csi_plugin\": {\"id\": \"br\", "
	    "\"type\": \"node\", \"health_timeout\": \"60s\"}, "
	    "\"restart\": {\"attempts\": 0}}]}");
	for (i = 0; i < 200 && (w = writer_of("logs/+live/brief/brief")) == 0;
	    i++)
		usleep(50000);
	ck_assert_int_gt(w, 0);
	wait_alloc(&b, "brief", "complete", 20000);
	/* Gone (a zombie has no command line: its reaper may be ours). */
	for (i = 0; i < 100 && writer_of("logs/+live/brief/brief") != 0; i++)
		usleep(50000);
	ck_assert_msg(writer_of("logs/+live/brief/brief") == 0, "the writer "
	    "outlived its plugin");
	logs_hold(&b, "brief", "node", true, "gone\n", text, sizeof(text));
	logs_hold(&b, "brief", "node", false, "said\n", text, sizeof(text));
	remove_alloc(&b, "brief.json");
	wait_alloc(&b, "brief", NULL, 10000);
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
	tcase_add_test(tc, a_privileged_plugins_logs_rotate_and_are_read_across);
	tcase_add_test(tc, a_privileged_plugins_writer_ends_with_it);
	return harness_run("logs", tc);
}
