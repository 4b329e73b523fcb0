/*
 * svtest.c: a whole berth for integration tests (see svtest.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <check.h>

#include "svtest.h"

static void
write_config(struct berth *b, const char *heartbeat, const char *extra)
{
	char text[2048];

	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\", \"alloc_dir\": \"%s\", "
	    "\"plugin_heartbeat\": \"%s\", \"plugin_resync\": \"2s\"%s}",
	    b->dir, b->dir, b->allocs, heartbeat, extra ? extra : "");
	harness_write(b->cfg, text);
}

void
berth_config(struct berth *b, const char *heartbeat, const char *extra)
{
	harness_private_mounts();
	/* Tasks outlive a killed supervisor: they come to us, and we reap. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	b->dir = harness_tmpdir("berth");
	snprintf(b->cfg, sizeof(b->cfg), "%s/berth.json", b->dir);
	snprintf(b->allocs, sizeof(b->allocs), "%s/allocs", b->dir);
	ck_assert_int_eq(mkdir(b->allocs, 0755), 0);
	write_config(b, heartbeat, extra);
}

void
berth_reconfig(struct berth *b, const char *heartbeat, const char *extra)
{
	write_config(b, heartbeat, extra);
}

void
berth_start(struct berth *b)
{
	char *argv[] = { (char *)harness_bin("berth-supervisor"), "-c", b->cfg,
		NULL };

	memset(&b->sv, 0, sizeof(b->sv));
	proc_start(&b->sv, argv, -1);
	ck_assert_msg(proc_wait_log(&b->sv, "ready:", 10000),
	    "supervisor never became ready:\n%s", b->sv.log);
	b->mounter = log_pid(b->sv.log, "berth-mounter");
	b->registry = log_pid(b->sv.log, "berth-registry");
	harness_track_pid(b->mounter);
	harness_track_pid(b->registry);
}

int
task_pids(struct berth *b, pid_t *last)
{
	const char *p = b->sv.log, *key = "type=Started message=\"pid ";
	pid_t pid = 0;
	int n = 0;

	proc_drain(&b->sv);
	while ((p = strstr(p, key)) != NULL) {
		p += strlen(key);
		pid = (pid_t)atol(p);
		harness_track_pid(pid);
		n++;
	}
	if (last != NULL)
		*last = pid;
	return n;
}

int
count(struct berth *b, const char *text)
{
	const char *p = b->sv.log;
	int n = 0;

	proc_drain(&b->sv);
	while ((p = strstr(p, text)) != NULL) {
		n++;
		p += strlen(text);
	}
	return n;
}

void
wait_log(struct berth *b, const char *text, int ms)
{
	ck_assert_msg(proc_wait_log(&b->sv, text, ms), "no \"%s\" in:\n%s",
	    text, b->sv.log);
}

void
berth_kill(struct berth *b)
{
	task_pids(b, NULL);
	proc_kill(&b->sv);
	ck_assert(pid_wait_gone(b->mounter, 3000));
	ck_assert(pid_wait_gone(b->registry, 3000));
}

void
berth_stop(struct berth *b)
{
	berth_kill(b);
	harness_rmtree(b->dir);
	free(b->dir);
}

void
berth_alloc(struct berth *b, const char *file, const char *text)
{
	char tmp[1024], path[1024];

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", b->allocs, file);
	snprintf(path, sizeof(path), "%s/%s", b->allocs, file);
	harness_write(tmp, text);
	ck_assert_int_eq(rename(tmp, path), 0);
}

void
remove_alloc(struct berth *b, const char *file)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", b->allocs, file);
	ck_assert_int_eq(unlink(path), 0);
}
