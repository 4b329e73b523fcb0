/*
 * spawn.c: fork and exec a helper with its socket (see spawn.h).
 *
 * Runs while the supervisor is still root and has read nothing but its
 * config. The child gets no descriptor but stdin (/dev/null), stdout,
 * stderr and its socket, no environment, an empty signal mask, and its
 * own session so that a terminal's ^C reaches the supervisor alone, which
 * then stops the helpers in order.
 *
 * Root runs only a binary that root alone can change, found through
 * directories that root alone can change (priv_open_trusted): nobody
 * else can then swap the file or a directory on its path between that
 * check and the exec, which takes the path so that the helper keeps its
 * name (an exec by descriptor would name it after the descriptor).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "helper.h"
#include "log.h"
#include "privdrop.h"
#include "spawn.h"

int
spawn_helper_path(const char *name, char *buf, size_t n)
{
	char self[PATH_MAX];
	ssize_t len;
	int r;

	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) < 0)
		return -errno;
	self[len] = '\0';
	r = snprintf(buf, n, "%s/%s", dirname(self), name);
	if (r < 0 || (size_t)r >= n)
		return -ENAMETOOLONG;
	if (access(buf, X_OK) == 0)
		return 0;
	/* Installed: we are in sbindir, the helpers in libexecdir. */
	r = snprintf(buf, n, "%s/%s", BERTH_LIBEXECDIR, name);
	if (r < 0 || (size_t)r >= n)
		return -ENAMETOOLONG;
	if (access(buf, X_OK) < 0)
		return -errno;
	return 0;
}

static void __attribute__((noreturn))
child(const char *path, char *const argv[], int sock)
{
	static char *const envp[] = { NULL };
	sigset_t none;

	setsid();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* If the supervisor dies before exec, so do we. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (sock == BERTH_HELPER_FD) {
		if (fcntl(sock, F_SETFD, 0) < 0)
			_exit(127);
	} else if (dup2(sock, BERTH_HELPER_FD) < 0) {
		_exit(127);
	}
	if (helper_close_inherited(BERTH_HELPER_FD) < 0)
		_exit(127);
	execve(path, argv, envp);
	log_warn("spawn: exec %s", path);
	_exit(127);
}

int
spawn_helper(const char *path, char *const argv[], pid_t *pid, int *fd)
{
	char err[768];
	int sp[2], exe;
	pid_t p;

	if ((exe = priv_open_trusted(path, O_PATH, err, sizeof(err))) < 0) {
		log_errx("spawn_helper: %s", err);
		return exe;
	}
	close(exe);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	if ((p = fork()) < 0) {
		close(sp[0]);
		close(sp[1]);
		return -errno;
	}
	if (p == 0)
		child(path, argv, sp[1]);
	close(sp[1]);
	*pid = p;
	*fd = sp[0];
	return 0;
}

const char *
spawn_describe_status(int status, char *buf, size_t n)
{
	const char *abbrev;

	if (WIFEXITED(status)) {
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		abbrev = sigabbrev_np(WTERMSIG(status));
		snprintf(buf, n, "was killed by signal %d (SIG%s)%s",
		    WTERMSIG(status), abbrev ? abbrev : "?",
		    WCOREDUMP(status) ? ", core dumped" : "");
	} else {
		snprintf(buf, n, "changed state (status 0x%x)", status);
	}
	return buf;
}
