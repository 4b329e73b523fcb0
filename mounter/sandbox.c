/*
 * sandbox.c: the mounter's capabilities and seccomp allow-list.
 *
 * Owns the list of system calls the mounter may make. Anything else kills
 * the process (SCMP_ACT_KILL_PROCESS): a mounter that tries something it
 * was never written to do has been subverted, and dying is the safe
 * answer. Adding a verb that needs a new system call means adding it here,
 * with the verb named beside it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include <seccomp.h>

#include "privdrop.h"
#include "sandbox.h"

const cap_value_t mounter_caps[] = {
	/* Mounts, the launcher's unshare; no other (see SECURITY.md). */
	CAP_SYS_ADMIN,
	/* prepare_task: a task's directory belongs to the task's user. */
	CAP_CHOWN,
};
const int mounter_ncaps = sizeof(mounter_caps) / sizeof(mounter_caps[0]);

static const int allowed[] = {
	/* IPC with the supervisor and the event loop */
	SCMP_SYS(recvmsg), SCMP_SYS(sendmsg), SCMP_SYS(poll),
	SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl),
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(close),
	SCMP_SYS(fcntl), SCMP_SYS(getpid), SCMP_SYS(clock_gettime),
	SCMP_SYS(gettimeofday), SCMP_SYS(getrandom),
	/* memory */
	SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(madvise),
	/* signals and exit */
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigaction), SCMP_SYS(exit), SCMP_SYS(exit_group),
	/* every verb: paths beneath the data dir (resolve.c) */
	SCMP_SYS(openat2), SCMP_SYS(statx), SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),
	/* prepare_*, bind_volume: directories; prepare_task: its owner */
	SCMP_SYS(mkdirat), SCMP_SYS(fchown), SCMP_SYS(fchmod),
	/* cleanup_alloc: a task's directory back to root, to empty it */
	SCMP_SYS(fchownat),
	/* prepare_plugin, bind_volume: detached mounts on pinned fds */
	SCMP_SYS(open_tree), SCMP_SYS(mount_setattr), SCMP_SYS(move_mount),
	/* unbind_volume, cleanup_alloc: unmount one component, remove */
	SCMP_SYS(fchdir), SCMP_SYS(umount2), SCMP_SYS(unlinkat),
	SCMP_SYS(getdents64),
	/* adopt_plugin, signal_plugin; a plugin's end (waitid on its pidfd) */
	SCMP_SYS(pidfd_open), SCMP_SYS(pidfd_send_signal), SCMP_SYS(waitid),
#ifdef BERTH_SANITIZE
	/*
	 * Sanitizer builds only (-Db_sanitize): what ASan, UBSan and LSan's
	 * reports and leak check at exit need. Never in a release build.
	 */
	SCMP_SYS(sigaltstack), SCMP_SYS(prctl), SCMP_SYS(sched_yield),
	SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(readlink),
	SCMP_SYS(readlinkat),
	SCMP_SYS(newfstatat), SCMP_SYS(fstat), SCMP_SYS(getdents64),
	SCMP_SYS(getdents),
	SCMP_SYS(clone), SCMP_SYS(clone3), SCMP_SYS(ptrace), SCMP_SYS(wait4),
	SCMP_SYS(futex), SCMP_SYS(gettid), SCMP_SYS(getppid),
	SCMP_SYS(mprotect), SCMP_SYS(pipe2), SCMP_SYS(lseek),
	SCMP_SYS(sched_getaffinity), SCMP_SYS(set_robust_list),
	SCMP_SYS(rseq), SCMP_SYS(tgkill), SCMP_SYS(kill), SCMP_SYS(pread64),
	SCMP_SYS(munlock), SCMP_SYS(mlock), SCMP_SYS(getrlimit),
	SCMP_SYS(prlimit64), SCMP_SYS(uname), SCMP_SYS(getuid),
#endif
};

int
sandbox_prepare(void)
{
	if (clearenv() != 0)
		return -ENOMEM;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

int
sandbox_seccomp(void)
{
	scmp_filter_ctx ctx;
	size_t i;
	int r = 0;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		return -ENOMEM;
	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]) && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int
sandbox_lock(void)
{
	int r;

	if ((r = priv_keep_only(mounter_caps, mounter_ncaps)) < 0)
		return r;
	return sandbox_seccomp();
}
