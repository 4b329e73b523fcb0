/*
 * plugin.c: the privileged plugins this mounter starts (through
 * launcher.c), adopts and signals; their records; the checks on a
 * definition's file and executable; PluginExited notices. A handle is pid
 * plus start time, so a reused pid never matches. Must not: signal a
 * handle not in the table, adopt one without a record (which this mounter
 * wrote in root's tree, per boot), run a definition root does not own.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/openat2.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#include "mounter.h"
#include "privdrop.h"
#include "procstat.h"

/* Add, remove or look up the record of a plugin we started: 0 or -errno. */
static int
record(struct mounter *m, pid_t pid, uint64_t start, char op)
{
	char rel[MREQ_PATH], leaf[64];
	int dfd, fd = 0;

	snprintf(rel, sizeof(rel), MOUNTER_STARTED_DIR "/%s", m->boot_id);
	snprintf(leaf, sizeof(leaf), "%ld.%llu", (long)pid,
	    (unsigned long long)start);
	if ((dfd = op == '+' ? res_mkdirs(m->data_fd, rel) :
	    res_open(m->data_fd, rel, O_PATH | O_DIRECTORY, 0)) < 0)
		return dfd;
	if (op == '-')
		res_remove(dfd, leaf);
	else if ((fd = res_open(dfd, leaf, op == '+' ? O_WRONLY | O_CREAT |
	    O_EXCL : O_PATH, 0600)) >= 0)
		close(fd);
	close(dfd);
	return fd < 0 ? fd : 0;
}

static int
start_time_of(struct mounter *m, pid_t pid, uint64_t *start)
{
	char rel[32];
	int fd, r;

	snprintf(rel, sizeof(rel), "%ld/stat", (long)pid);
	if ((fd = res_open(m->proc_fd, rel, O_RDONLY, 0)) < 0)
		return fd;
	r = proc_read_start_time(fd, start);
	close(fd);
	return r;
}

/* The one with this handle; pid 0: a free slot, a task's past PLUGIN_MAX. */
static struct plugin *
find(struct mounter *m, pid_t pid, uint64_t start, bool task)
{
	struct plugin *p = m->plugins + (pid == 0 && task ? PLUGIN_MAX : 0);

	for (; p < m->plugins + (pid == 0 && !task ? PLUGIN_MAX : PLUGIN_MAX +
	    TASK_MAX); p++)
		if ((p->pidfd > 0) == (pid != 0) && p->pid == pid &&
		    p->start_time == start)
			return p;
	return NULL;
}

bool
plugin_room(struct mounter *m, bool task)
{
	return find(m, 0, 0, task) != NULL;
}

/* Its pidfd is readable: it has ended. Tell the supervisor how. */
static void
ended(evutil_socket_t fd, short ev, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PluginExited ex = BERTH__PLUGIN_EXITED__INIT;
	Berth__PluginHandle hd = BERTH__PLUGIN_HANDLE__INIT;
	struct plugin *p = arg;
	siginfo_t si = { 0 };

	/* Our child (launcher.c clones it as ours) unless adopted. */
	ex.status_known = waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED |
	    WNOHANG) == 0 && si.si_pid == p->pid;
	ex.signaled = ex.status_known && si.si_code != CLD_EXITED;
	ex.code = ex.status_known ? si.si_status : 0;
	hd.pid = (uint32_t)p->pid;
	hd.start_time = p->start_time;
	ex.handle = &hd;
	log_info("ended: %s pid %ld %s %d", p->task ? "a task's crun" :
	    "plugin", (long)p->pid, !ex.status_known ? "ended, status "
	    "unknown," : ex.signaled ? "was killed by signal" :
	    "exited with status", ex.code);
	env.body_case = BERTH__ENVELOPE__BODY_PLUGIN_EXITED;
	env.plugin_exited = &ex;
	if (!p->task) {
		chan_notice(p->owner->h.chan, &env, -1);
		record(p->owner, p->pid, p->start_time, '-');
	}
	event_free(p->ev);
	close(p->pidfd);
	memset(p, 0, sizeof(*p));
}

static Berth__ErrorCode
answer(const struct plugin *p, struct mreply *out, char *why)
{
	out->pid = p->pid;
	out->start_time = p->start_time;
	if ((out->pidfd = fcntl(p->pidfd, F_DUPFD_CLOEXEC, 0)) < 0)
		return fail_errno(why, errno, "duplicating a pidfd", "");
	return OK;
}

Berth__ErrorCode
plugin_keep(struct mounter *m, pid_t pid, uint64_t start, bool task,
    int pidfd, struct mreply *out, char *why)
{
	struct plugin *p = find(m, 0, 0, task);

	if (start == 0 && start_time_of(m, pid, &start) < 0)
		log_warn("plugin_keep: no start time for pid %ld", (long)pid);
	if (p == NULL || (p->ev = event_new(m->h.base, pidfd, EV_READ, ended,
	    p)) == NULL || event_add(p->ev, NULL) < 0) {
		if (p != NULL && p->ev != NULL)
			event_free(p->ev);
		close(pidfd);
		return fail(why, BERTH__ERROR_CODE__ERROR_INTERNAL, "cannot "
		    "watch plugin pid %ld (at most %d plugins)", (long)pid,
		    PLUGIN_MAX);
	}
	p->owner = m;
	p->pid = pid;
	p->start_time = start;
	p->pidfd = pidfd;
	p->task = task;
	return answer(p, out, why);
}

Berth__ErrorCode
read_root_file(int dirfd, const char *dir, const char *name, char *buf,
    size_t n, char *why)
{
	struct stat st;
	ssize_t r, got = 0;
	int fd;

	if (dirfd < 0 || fstat(dirfd, &st) < 0 || !priv_root_only(&st))
		return fail(why, BERTH__ERROR_CODE__ERROR_PERMISSION, "%s must "
		    "exist, be owned by root and not be group- or "
		    "world-writable", dir);
	if ((fd = res_open(dirfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK |
	    O_NOFOLLOW, 0)) < 0)
		return fail_errno(why, -fd, "opening", name);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && priv_root_only(&st))
		while ((size_t)got < n && (r = read(fd, buf + got, n - got)) > 0)
			got += r;
	close(fd);
	buf[got] = '\0';
	return got > 0 && (size_t)got < n ? OK : fail(why,
	    BERTH__ERROR_CODE__ERROR_PERMISSION, "%s must be a non-empty "
	    "file owned by root, not group- or world-writable, under %zu "
	    "bytes", name, n);
}

Berth__ErrorCode
open_exe(const char *path, int *exe, char *why)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC };
	struct stat st;

	*exe = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (*exe < 0)
		return fail_errno(why, errno, "opening", path);
	if (fstat(*exe, &st) < 0 || !S_ISREG(st.st_mode) ||
	    !priv_root_only(&st) || !(st.st_mode & S_IXUSR))
		return fail(why, BERTH__ERROR_CODE__ERROR_PERMISSION, "%s must "
		    "be an executable file owned by root and not group- or "
		    "world-writable", path);
	return OK;
}

/* The definition, and its executable opened once: what was checked runs. */
static Berth__ErrorCode
load_def(struct mounter *m, const char *name, const char *ep,
    struct plugindef *d, int *exe, char *why)
{
	char file[MREQ_IDENT + 8], buf[PLUGINDEF_MAX + 2], sub[192];
	Berth__ErrorCode code;

	snprintf(file, sizeof(file), "%s" PLUGINDEF_SUFFIX, name);
	if ((code = read_root_file(m->plugins_fd, "the plugin definition "
	    "directory", file, buf, sizeof(buf) - 1, why)) != OK)
		return code;
	if (plugindef_parse(buf, strlen(buf), ep, d, sub, sizeof(sub)) < 0)
		return fail(why, BERTH__ERROR_CODE__ERROR_INTERNAL, "plugin "
		    "definition %s %s", file, sub);
	return open_exe(d->args[0], exe, why);
}

Berth__ErrorCode
plugin_start(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	static struct launch_req lr;
	Berth__ErrorCode code;
	char sock[MREQ_PATH], ep[LAUNCH_STR];
	int fds[3] = { -1, -1, -1 }, i;

	/* Refuse before launching: a plugin we cannot watch must not run. */
	if (!plugin_room(m, false))
		return fail(why, BERTH__ERROR_CODE__ERROR_CONFLICT, "at most "
		    "%d plugins at once; stop one first", PLUGIN_MAX);
	if (layout_plugin_socket(sock, sizeof(sock), rq->alloc) < 0 ||
	    layout_abs(ep + 7, sizeof(ep) - 7, m->data_dir, sock) < 0 ||
	    strlen(ep + 7) > BERTH_SOCKET_PATH_MAX)
		return fail(why, BERTH__ERROR_CODE__ERROR_BAD_REQUEST, "the "
		    "socket path for alloc %s is over %d bytes", rq->alloc,
		    BERTH_SOCKET_PATH_MAX);
	memcpy(ep, "unix://", 7);
	memset(&lr, 0, sizeof(lr));
	snprintf(lr.endpoint, LAUNCH_STR, "CSI_ENDPOINT=%.200s", ep);
	memcpy(lr.root, rq->path, sizeof(lr.root));
	memcpy(lr.sockdir, rq->path2, sizeof(lr.sockdir));
	/* Its output: berth-shim -L as berth's user (--peer-user, main()). */
	snprintf(lr.logdir, sizeof(lr.logdir), LAYOUT_PLUGIN_LOGS_DIR "/%s/%s",
	    rq->alloc, rq->def);
	lr.log_uid = m->deny_uid[1] != 0 ? m->deny_uid[1] : m->deny_uid[0];
	lr.log_gid = m->peer_gid;
	if ((code = load_def(m, rq->def, ep, &lr.def, &fds[0], why)) != OK ||
	    (code = open_exe(m->shim, &fds[1], why)) != OK ||
	    (code = volume_shared_root(m, rq->path, NULL, why)) != OK ||
	    (code = volume_shared_root(m, rq->path2, NULL, why)) != OK)
		goto out;
	if ((code = launcher_run(m, &lr, fds, out, why)) != OK)
		goto out;
	if (out->start_time == 0 || record(m, out->pid, out->start_time,
	    '+') < 0)
		log_warn("plugin_start: cannot record pid %ld for adoption",
		    (long)out->pid);
	log_info("plugin_start: %s for alloc %s is plugin pid %ld",
	    rq->def, rq->alloc, (long)out->pid);
out:
	for (i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return code;
}

Berth__ErrorCode
plugin_adopt(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	struct plugin *p;
	uint64_t start;
	int pidfd;

	if ((p = find(m, rq->pid, rq->start_time, false)) != NULL)
		return answer(p, out, why);
	/*
	 * Pin the process first, then check it is the one named: one that
	 * has ended (a reboot ends them all) is simply not found; one that
	 * lives without a record of ours is refused.
	 */
	if ((pidfd = pidfd_open(rq->pid, 0)) < 0 ||
	    start_time_of(m, rq->pid, &start) < 0 ||
	    start != rq->start_time) {
		if (pidfd >= 0)
			close(pidfd);
		record(m, rq->pid, rq->start_time, '-');
		return fail(why, BERTH__ERROR_CODE__ERROR_NOT_FOUND, "plugin "
		    "pid %ld has ended", (long)rq->pid);
	}
	if (record(m, rq->pid, rq->start_time, '?') < 0) {
		close(pidfd);
		return fail(why, BERTH__ERROR_CODE__ERROR_PERMISSION, "pid %ld "
		    "(start time %llu) is not a plugin berth-mounter started",
		    (long)rq->pid, (unsigned long long)rq->start_time);
	}
	log_info("plugin_adopt: adopted plugin pid %ld", (long)rq->pid);
	return plugin_keep(m, rq->pid, start, false, pidfd, out, why);
}

Berth__ErrorCode
plugin_signal(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	struct plugin *p;

	if ((p = find(m, rq->pid, rq->start_time, false)) == NULL || p->task)
		return fail(why, BERTH__ERROR_CODE__ERROR_PERMISSION, "pid %ld "
		    "(start time %llu) is not a plugin this berth-mounter "
		    "started or adopted", (long)rq->pid,
		    (unsigned long long)rq->start_time);
	if (pidfd_send_signal(p->pidfd, rq->sig, NULL, 0) < 0)
		return fail_errno(why, errno, "signalling plugin", "");
	return OK;
}
