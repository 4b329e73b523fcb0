/*
 * harness.h: what berth's tests share: running a check suite, starting
 * the real binaries, reading /proc, and cleaning up after themselves even
 * when an assertion fails.
 */
#ifndef BERTH_TEST_HARNESS_H
#define BERTH_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <check.h>

/*
 * Processes and directories a test makes are tracked and cleaned up at
 * exit even when an assertion fails (check's forked child exits without
 * running teardown): tracked pids are killed, tracked dirs removed.
 */
void harness_track_pid(pid_t pid);
/* A cgroup parent ("/name") whose processes are killed and which is
 * removed from every hierarchy (crun makes leaves in each): now, or by
 * the test's runner after the run, for a test that failed before. */
void harness_cgroup_remove(const char *cgroup);
void harness_track_cgroup(const char *cgroup);
/* Run one test case as a suite; returns the process exit code. */
int harness_run(const char *name, TCase *tc);
/*
 * Run an attack case as a suite and print "N attacks tried, M succeeded":
 * M is its failed tests plus what extra_failed(), when given, counts after
 * the run. Returns the process exit code.
 */
int harness_run_attacks(const char *name, TCase *tc,
    int (*extra_failed)(void));
/* Build-tree path of a binary ("berth-mounter"), from BERTH_BUILD_DIR. */
const char *harness_bin(const char *name);

/* Enter a private mount namespace (the integration tests' sandbox). */
void harness_private_mounts(void);
/* A fresh 0755 directory under /tmp, removed by harness_rmtree(). */
char *harness_tmpdir(const char *tag);
void harness_rmtree(const char *path);
/*
 * harness_rmtree() again until the tree is gone (a killed test's
 * processes and mounts take a moment), for at most ms; false if not.
 */
bool harness_rmtree_wait(const char *path, int ms);
/* Write a file with the given contents. */
void harness_write(const char *path, const char *text);

/*
 * This process's own log lines (a module under test logs to stderr):
 * capture sends stderr to an unlinked temporary file; captured puts
 * stderr back, echoes the text to it and returns it (valid until the
 * next call).
 */
void harness_capture_stderr(void);
const char *harness_captured_stderr(void);

/* A started process with its stderr captured through a pipe. */
struct proc {
	pid_t pid;
	int err_fd;		/* read end of its stderr */
	char log[65536];	/* everything read so far */
	size_t loglen;
	bool reaped;
	int status;
};

/* Start argv with stderr into p->err_fd; extra_fd (or -1) becomes fd 3. */
void proc_start(struct proc *p, char *const argv[], int extra_fd);
/* Wait up to ms for text to appear in its stderr; true if it did. */
bool proc_wait_log(struct proc *p, const char *text, int ms);
/* Wait up to ms for it to exit; true if it did (status in p->status). */
bool proc_wait_exit(struct proc *p, int ms);
/* SIGKILL (if still running) and reap; safe to call twice. */
void proc_kill(struct proc *p);
/* Read more of its stderr without blocking. */
void proc_drain(struct proc *p);

/* One raw datagram, with up to three descriptors. */
void harness_send(int sock, const void *buf, size_t len, const int *fds,
    int nfds);
/* A raw envelope, exactly as given (version, kind, id included). */
void harness_send_env(int sock, const void *env, const int *fds, int nfds);
/* Wait up to ms for a datagram and decode it (NULL if none). */
void *harness_recv_env(int sock, int ms);

/* A field of /proc/<pid>/status ("CapEff"), trimmed; NULL if absent. */
char *proc_status_field(pid_t pid, const char *field, char *buf, size_t n);
/* Is pid still alive (and not a zombie)? */
bool pid_alive(pid_t pid);
/* Wait up to ms for pid to be gone. */
bool pid_wait_gone(pid_t pid, int ms);
/* How many processes run as uid, zombies aside. */
int uid_procs(uid_t uid);

#endif
