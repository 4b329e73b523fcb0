/*
 * shim.c: berth-shim, what the exec driver starts in a task's place (its
 * interface is in shim.h).
 *
 * It leaves the supervisor's process tree (a second fork and a session
 * of its own), so that a supervisor that is killed or restarts takes
 * nothing with it; starts the task in its directory with the environment
 * it was given; copies the task's stdout and stderr into log files that
 * it rotates; and when the task ends, writes its exit status to a file,
 * which the supervisor reads even if it started after the task ended.
 *
 * The task leads a process group of its own: when it ends, for whatever
 * reason, the shim kills what is left of that group (a "sleep" that a
 * shell started), so that stopping a task stops its processes. It starts
 * with umask 022, whatever the supervisor's (UMask=0077 in its unit): a
 * file a task writes is readable by the tasks that share its volume.
 *
 * With -I it is instead a task's init inside its sandbox (shim_init.c);
 * with -L, a privileged plugin's log writer (shim_log.h).
 *
 * Runs as the supervisor's user and holds no privilege. Must not:
 * outlive its task, write anything outside DIR, or let a full disk block
 * the task (output that cannot be written is dropped, and said so once).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "procstat.h"
#include "shim.h"
#include "shim_log.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static bool
send_report(const struct shim_report *r)
{
	ssize_t n;

	do
		n = write(SHIM_REPORT_FD, r, sizeof(*r));
	while (n < 0 && errno == EINTR);
	close(SHIM_REPORT_FD);
	return n == sizeof(*r);
}

static void __attribute__((noreturn))
fail(enum shim_stage stage, int e)
{
	struct shim_report r = { 0 };

	r.err = e;
	r.stage = stage;
	(void)send_report(&r);
	exit(1);
}

static void __attribute__((noreturn))
run_task(char **argv, int o, int e, int report)
{
	static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE };
	sigset_t none;
	size_t i;
	int devnull, x;

	/* Ignored signals stay ignored across exec: the task gets defaults. */
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	umask(022);
	if (setpgid(0, 0) < 0 || fchdir(dfd) < 0 || (devnull = open("/dev/null", O_RDONLY)) < 0 ||
	    dup2(devnull, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 ||
	    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		goto fail;
	execv(argv[0], argv);
fail:
	x = errno;
	(void)!write(report, &x, sizeof(x));
	_exit(127);
}

/* The status line, atomically: a reader sees the whole line or none. */
static int
write_status(const struct shim_report *r, const siginfo_t *si)
{
	char line[128];
	int fd, len;
	bool ok;

	len = snprintf(line, sizeof(line), "pid %ld start %llu %s %d\n",
	    (long)r->task_pid, (unsigned long long)r->task_start,
	    si->si_code == CLD_EXITED ? "exited" : "signaled", si->si_status);
	if ((fd = openat(dfd, SHIM_STATUS_FILE ".tmp", O_WRONLY | O_CREAT |
	    O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640)) < 0)
		return -1;
	ok = write(fd, line, (size_t)len) == len && fsync(fd) == 0;
	if (close(fd) < 0)
		ok = false;
	if (!ok || renameat(dfd, SHIM_STATUS_FILE ".tmp", dfd,
	    SHIM_STATUS_FILE) < 0 || fsync(dfd) < 0)
		return -1;
	return 0;
}

/*
 * The task's process group, all of it, while the task is still unreaped
 * (a zombie at worst): its pid, and so the group's id, cannot have been
 * reused, and the signal reaches no one else.
 */
static void
kill_group(pid_t task)
{
	kill(-task, SIGKILL);
	kill(task, SIGKILL);
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: berth-shim -d DIR [-s MAX_BYTES] "
	    "[-n MAX_FILES] -- COMMAND [ARG...]\n"
	    "       berth-shim -L -d DIR [-s MAX_BYTES] [-n MAX_FILES]\n");
	fail(SHIM_STAGE_SETUP, EINVAL);
}

int
main(int argc, char **argv)
{
	static const int quiet[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM,
		SIGPIPE };
	struct shim_report r = { 0 };
	struct pollfd fds[3];
	const char *dir = NULL;
	bool logs = false;
	siginfo_t si = { 0 };
	int ch, po[2], pe[2], px[2], pidfd, x = 0;
	char *end;
	size_t i;
	ssize_t n;
	pid_t pid;

	while ((ch = getopt(argc, argv, "+VILd:s:n:")) != -1) {
		switch (ch) {
		case 'V': return 0;	/* the exec driver's fingerprint */
		case 'I': return shim_init_main();	/* in a sandbox */
		case 'L': logs = true; break;	/* a privileged plugin's */
		case 'd': dir = optarg; break;
		case 's': max_bytes = strtoll(optarg, &end, 10);
			if (*end != '\0' || max_bytes < 1)
				usage();
			break;
		case 'n': max_files = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || max_files < 1 ||
			    max_files > SHIM_MAX_FILES)
				usage();
			break;
		default: usage();
		}
	}
	if (argc == 1)
		return shim_init_main();
	if (logs)
		return optind == argc ? shim_log_main(dir) : 1;
	if (dir == NULL || optind >= argc || argv[optind][0] != '/')
		usage();
	/* Its life is its task's: only the task's end ends it. */
	for (i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		fail(SHIM_STAGE_SETUP, errno);
	/* The exec driver reaps this first process at once. */
	if ((pid = fork()) < 0)
		fail(SHIM_STAGE_SETUP, errno);
	if (pid > 0)
		_exit(0);
	if (setsid() < 0 || (unlinkat(dfd, SHIM_STATUS_FILE, 0) < 0 &&
	    errno != ENOENT))
		fail(SHIM_STAGE_SETUP, errno);
	if ((x = log_open(&out, false)) < 0 || (x = log_open(&err, false)) < 0)
		fail(SHIM_STAGE_SETUP, -x);
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 ||
	    pipe2(px, O_CLOEXEC) < 0 || (pid = fork()) < 0)
		fail(SHIM_STAGE_SETUP, errno);
	if (pid == 0)
		run_task(argv + optind, po[1], pe[1], px[1]);
	/* Also here, so that the group exists before anyone signals it. */
	(void)setpgid(pid, pid);
	close(po[1]);
	close(pe[1]);
	close(px[1]);
	/* Nothing to read: the exec worked (the pipe closed on exec). */
	do
		n = read(px[0], &x, sizeof(x));
	while (n < 0 && errno == EINTR);
	close(px[0]);
	if (n == sizeof(x)) {
		waitpid(pid, NULL, 0);
		fail(SHIM_STAGE_EXEC, x);
	}
	r.shim_pid = getpid();
	r.task_pid = pid;
	if ((pidfd = pidfd_open(pid, 0)) < 0 ||
	    proc_start_time(r.shim_pid, &r.shim_start) < 0 ||
	    proc_start_time(pid, &r.task_start) < 0) {
		x = errno;
		kill_group(pid);
		waitpid(pid, NULL, 0);
		fail(SHIM_STAGE_SETUP, x);
	}
	/* Nobody heard of the task: nobody could adopt it. Stop it. */
	if (!send_report(&r)) {
		kill_group(pid);
		waitpid(pid, NULL, 0);
		return 1;
	}
	out.in = po[0];
	err.in = pe[0];
	if (fcntl(out.in, F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(err.in, F_SETFL, O_NONBLOCK) < 0)
		log_lost(&out, errno);
	for (;;) {
		fds[0] = (struct pollfd){ out.in, POLLIN, 0 };
		fds[1] = (struct pollfd){ err.in, POLLIN, 0 };
		fds[2] = (struct pollfd){ pidfd, POLLIN, 0 };
		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[0].revents != 0)
			log_pump(&out, false);
		if (fds[1].revents != 0)
			log_pump(&err, false);
		if (fds[2].revents != 0)
			break;
	}
	/* Nothing of the task outlives it; then what it (and they) wrote. */
	kill_group(pid);
	log_pump(&out, true);
	log_pump(&err, true);
	while (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0)
		if (errno != EINTR)
			return 1;
	return write_status(&r, &si) < 0 ? 1 : 0;
}
