/*
 * test_unrecorded.c: a task whose start never reached berth-registry (it
 * died between the task's start and the write of its handle, and the
 * supervisor with it) still runs after the restart, and no handle names
 * it. The restarted supervisor kills it: at once when its allocation is
 * gone, before the new start when it is not (so that it never runs
 * twice); its end is a Terminated event with its pid. And a registry
 * killed as an allocation stops leaves nothing of its task either, nor
 * does a task adopted while its shim could not be reached: its stop
 * reaches it all the same.
 * Judged by /proc: no process of the task's uid is left.
 *
 * The registry is stopped (SIGSTOP) the moment the alloc's task id is
 * written, before its task starts: the task's handle then never reaches
 * it, as when it dies at that moment. Each test has task ids of its own,
 * so that what one leaves when it fails (killed by pid at the end of the
 * run) is not counted by the next.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "svtest.h"

#define IDS(n) ", \"task_ids\": \"" #n "00-" #n "99\""

#define DOC "{\"id\": \"%s\", \"tasks\": [{\"name\": \"t\", \"driver\": " \
	"\"exec\", \"config\": {\"command\": \"/bin/sh\", \"args\": [\"-c\", " \
	"\"sleep 3600 & exec sleep 3600\"]}, \"kill_timeout\": \"1s\", " \
	"\"restart\": {\"attempts\": 0, \"mode\": \"fail\"}}]}"

static bool
wait_procs(uid_t uid, int want, int ms)
{
	for (int i = 0; i < ms / 100 && uid_procs(uid) != want; i++)
		usleep(100000);
	return uid_procs(uid) == want;
}

/* The alloc's task, started: its pid (tracked) and its uid. */
static pid_t
started(struct berth *b, const char *alloc, uid_t *uid)
{
	char who[64], buf[128];
	pid_t pid;

	snprintf(who, sizeof(who), "%s/t", alloc);
	wait_event(b, "Started", who, NULL, 20000);
	task_pids(b, &pid);
	ck_assert_int_gt(pid, 1);
	ck_assert_ptr_nonnull(proc_status_field(pid, "Uid", buf,
	    sizeof(buf)));
	*uid = (uid_t)atol(buf);
	ck_assert_int_ge(*uid, 61184);
	/* Its shim, its shell and the shell's background sleep. */
	ck_assert_msg(wait_procs(*uid, 3, 5000), "%d processes of uid %ld",
	    uid_procs(*uid), (long)*uid);
	return pid;
}

/* The registry dies: the supervisor stops with it, its helpers too. */
static void
registry_dies(struct berth *b)
{
	kill(b->registry, SIGKILL);
	ck_assert(proc_wait_exit(&b->sv, 10000));
	berth_kill(b);
}

/* A start whose handle never reached the registry: the task's pid. */
static pid_t
start_unrecorded(struct berth *b, const char *alloc, uid_t *uid)
{
	char file[64], text[1024];
	pid_t pid;

	snprintf(file, sizeof(file), "%s.json", alloc);
	snprintf(text, sizeof(text), DOC, alloc);
	berth_alloc(b, file, text);
	/* A log line on purpose: the moment between the id's write and the
	 * start, which the API does not show. */
	snprintf(text, sizeof(text), "alloc %s: its tasks run as uid and gid",
	    alloc);
	wait_log(b, text, 20000);
	ck_assert_int_eq(kill(b->registry, SIGSTOP), 0);
	pid = started(b, alloc, uid);
	registry_dies(b);
	/* No supervisor: the sandbox goes on, as it should. */
	ck_assert(pid_alive(pid));
	return pid;
}

START_TEST(a_task_never_kept_is_killed_once_its_alloc_is_gone)
{
	struct berth b;
	char text[64];
	pid_t pid;
	uid_t uid;

	berth_config(&b, "1s", IDS(621));
	berth_start(&b);
	pid = start_unrecorded(&b, "lost", &uid);
	remove_alloc(&b, "lost.json");
	berth_start(&b);
	ck_assert_msg(wait_procs(uid, 0, 10000), "%d processes of uid %ld "
	    "are left", uid_procs(uid), (long)uid);
	snprintf(text, sizeof(text), "pid %ld ", (long)pid);
	wait_event(&b, "Terminated", "lost/t", text, 5000);
	berth_stop(&b);
}
END_TEST

START_TEST(a_task_never_kept_is_killed_before_it_starts_again)
{
	struct berth b;
	char text[64];
	pid_t pid, again;
	uid_t uid, uid2;

	berth_config(&b, "1s", IDS(622));
	berth_start(&b);
	pid = start_unrecorded(&b, "kept", &uid);
	berth_start(&b);
	snprintf(text, sizeof(text), "pid %ld ", (long)pid);
	wait_event(&b, "Terminated", "kept/t", text, 10000);
	ck_assert(pid_wait_gone(pid, 5000));
	again = started(&b, "kept", &uid2);
	ck_assert_int_ne(again, pid);
	ck_assert_int_eq(uid2, uid);
	/* Once: its shim, its shell and its sleep, not twice that. */
	usleep(500000);
	ck_assert_int_eq(uid_procs(uid), 3);
	remove_alloc(&b, "kept.json");
	wait_event(&b, "AllocStopped", "kept", NULL, 20000);
	ck_assert_msg(wait_procs(uid, 0, 5000), "%d processes of uid %ld "
	    "are left", uid_procs(uid), (long)uid);
	berth_stop(&b);
}
END_TEST

START_TEST(a_registry_killed_as_an_alloc_stops_leaves_no_process)
{
	struct berth b;
	char text[1024];
	uid_t uid;

	berth_config(&b, "1s", IDS(623));
	berth_start(&b);
	snprintf(text, sizeof(text), DOC, "stopped");
	berth_alloc(&b, "stopped.json", text);
	(void)started(&b, "stopped", &uid);
	remove_alloc(&b, "stopped.json");
	wait_log(&b, "alloc stopped: stopping", 10000);
	registry_dies(&b);
	berth_start(&b);
	ck_assert_msg(wait_procs(uid, 0, 15000), "%d processes of uid %ld "
	    "are left", uid_procs(uid), (long)uid);
	berth_stop(&b);
}
END_TEST

START_TEST(an_adopted_task_whose_shim_was_unreachable_is_stopped)
{
	struct berth b;
	char text[1024], sock[1024], away[1100];
	pid_t pid;
	uid_t uid;

	berth_config(&b, "1s", IDS(624));
	berth_start(&b);
	snprintf(text, sizeof(text), DOC, "away");
	berth_alloc(&b, "away.json", text);
	pid = started(&b, "away", &uid);
	berth_kill(&b);
	/* Its ctl.sock, out of the way while the next supervisor adopts. */
	snprintf(sock, sizeof(sock), "%s/data/shim/away/t/ctl.sock", b.dir);
	snprintf(away, sizeof(away), "%s.away", sock);
	ck_assert_int_eq(rename(sock, away), 0);
	berth_start(&b);
	wait_alloc(&b, "away", "running", 10000);
	ck_assert_int_eq(rename(away, sock), 0);
	ck_assert(pid_alive(pid));
	remove_alloc(&b, "away.json");
	wait_event(&b, "AllocStopped", "away", NULL, 20000);
	ck_assert_msg(wait_procs(uid, 0, 5000), "%d processes of uid %ld "
	    "are left", uid_procs(uid), (long)uid);
	berth_stop(&b);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("unrecorded");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_task_never_kept_is_killed_once_its_alloc_is_gone);
	tcase_add_test(tc, a_task_never_kept_is_killed_before_it_starts_again);
	tcase_add_test(tc, a_registry_killed_as_an_alloc_stops_leaves_no_process);
	tcase_add_test(tc, an_adopted_task_whose_shim_was_unreachable_is_stopped);
	return harness_run("unrecorded", tc);
}
