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
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/stat.h>

#include <seccomp.h>

#include "mounter.h"

const cap_value_t mounter_caps[] = {
	/* Mounts, the launcher's unshare; no other (see SECURITY.md). */
	CAP_SYS_ADMIN,
	/* prepare_*, start_task: a directory to its group or its user. */
	CAP_CHOWN,
	/* The launcher's only, for crun: the task's ids, its bounding set,
	 * its /dev, cgroups in root's 0555 hierarchies, loopback up in a
	 * network namespace of its own (SECURITY.md). */
	CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_MKNOD, CAP_DAC_OVERRIDE,
	CAP_NET_ADMIN,
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
	/* prepare_*, bind_volume: directories (mkdirat and fchmod are in
	 * mode_calls); prepare_task: its owner */
	SCMP_SYS(fchown),
	/* cleanup_alloc: a socket or status dir back to root, to empty it */
	SCMP_SYS(fchownat),
	/* prepare_plugin, bind_volume: detached mounts on pinned fds */
	SCMP_SYS(open_tree), SCMP_SYS(mount_setattr), SCMP_SYS(move_mount),
	/* unbind_volume, cleanup_alloc: unmount one component, remove */
	SCMP_SYS(fchdir), SCMP_SYS(umount2), SCMP_SYS(unlinkat),
	SCMP_SYS(getdents64),
	/* start_task: the task's channel */
	SCMP_SYS(socketpair),
	/* adopt_plugin, signal_plugin; a plugin's end (waitid on its pidfd) */
	SCMP_SYS(pidfd_open), SCMP_SYS(pidfd_send_signal), SCMP_SYS(waitid),
#ifdef BERTH_SANITIZE
	/*
	 * Sanitizer builds only (-Db_sanitize): what ASan, UBSan and LSan's
	 * reports and leak check at exit need. Never in a release build.
	 */
	SCMP_SYS(sigaltstack), SCMP_SYS(prctl), SCMP_SYS(sched_yield),
	SCMP_SYS(readlink), SCMP_SYS(readlinkat), SCMP_SYS(getdents),
	SCMP_SYS(clone), SCMP_SYS(clone3), SCMP_SYS(ptrace), SCMP_SYS(wait4),
	SCMP_SYS(futex), SCMP_SYS(gettid), SCMP_SYS(getppid),
	SCMP_SYS(mprotect), SCMP_SYS(pipe2), SCMP_SYS(lseek),
	SCMP_SYS(sched_getaffinity), SCMP_SYS(set_robust_list),
	SCMP_SYS(rseq), SCMP_SYS(tgkill), SCMP_SYS(kill), SCMP_SYS(pread64),
	SCMP_SYS(munlock), SCMP_SYS(mlock), SCMP_SYS(getrlimit),
	SCMP_SYS(prlimit64), SCMP_SYS(uname), SCMP_SYS(getuid),
#endif
};

#define N(a) (sizeof(a) / sizeof((a)[0]))
#ifdef BERTH_SANITIZE
#define SAN true	/* the sanitizers' runtimes open files */
#else
#define SAN false
#endif

/*
 * Every call that sets a mode: the arguments that hold the mode and the
 * open flags (-1: none); whether the mounter makes it. S_ISUID and
 * S_ISGID are refused (EPERM) on each, as systemd's RestrictSUIDSGID did
 * (which refuses openat2 outright: its mode is in a struct no filter can
 * read; see SECURITY.md).
 */
static const struct mode_call {
	const char *name;
	int mode, flags;
	bool mounter;
} mode_calls[] = {
	{ "chmod", 1, -1, false }, { "fchmod", 1, -1, true },
	{ "fchmodat", 2, -1, false }, { "fchmodat2", 2, -1, false },
	{ "mkdir", 1, -1, false }, { "mkdirat", 2, -1, true },
	{ "mknod", 1, -1, false }, { "mknodat", 2, -1, false },
	{ "creat", 1, -1, false }, { "open", 2, 1, SAN },
	{ "openat", 3, 2, SAN },
};

/*
 * What the launcher and every plugin it starts get EPERM for: the ways
 * out of their namespaces (setns; new user namespaces, below) and the
 * kernel-wide powers CAP_SYS_ADMIN would open: BPF, perf, swap, the
 * kernel log, keyrings, fanotify, quotas, file handles, modules, kexec;
 * tracing other processes.
 */
static const char *const plugin_denied[] = {
	"setns", "bpf", "perf_event_open", "swapon", "swapoff", "syslog",
	"keyctl", "add_key", "request_key", "fanotify_init", "quotactl",
	"quotactl_fd", "open_by_handle_at", "name_to_handle_at",
	"lookup_dcookie", "ptrace", "process_vm_readv", "process_vm_writev",
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "userfaultfd", "iopl", "ioperm", "acct", "reboot",
};

/*
 * EPERM for S_ISUID or S_ISGID on each mode call (with O_CREAT or
 * O_TMPFILE where there are flags). mounter: the calls it makes are
 * allowed without those bits, and fchmod also with exactly sgid[] (see
 * SECURITY.md); any other S_ISGID kills.
 */
static int
mode_rules(scmp_filter_ctx ctx, bool mounter)
{
	static const scmp_datum_t bit[] = { S_ISUID, S_ISGID };
	static const scmp_datum_t creat[] = { O_CREAT, O_TMPFILE };
	/* A socket dir; a volume's root for its group (volume.c). */
	static const scmp_datum_t sgid[] = { 02750, 02770, 02775 };
	const struct mode_call *c;
	size_t b, f;
	int nr, r = 0;

	for (c = mode_calls; c < mode_calls + N(mode_calls) && r == 0; c++) {
		if ((nr = seccomp_syscall_resolve_name(c->name)) < 0)
			continue;	/* not on this architecture */
		for (b = 0; b < N(bit) && r == 0; b++) {
			struct scmp_arg_cmp m = SCMP_CMP((unsigned)c->mode,
			    SCMP_CMP_MASKED_EQ, bit[b], bit[b]);

			if (mounter && nr == SCMP_SYS(fchmod) && b == 1)
				continue;	/* see sgid[] below */
			for (f = 0; c->flags >= 0 && f < N(creat) && r == 0;
			    f++)
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				    nr, 2, m, SCMP_CMP((unsigned)c->flags,
				    SCMP_CMP_MASKED_EQ, creat[f], creat[f]));
			if (c->flags < 0)
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				    nr, 1, m);
		}
		if (r != 0 || !mounter || !c->mounter)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_CMP(
		    (unsigned)c->mode, SCMP_CMP_MASKED_EQ, S_ISUID | S_ISGID,
		    0));
		if (r == 0 && c->flags >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
			    SCMP_CMP((unsigned)c->flags, SCMP_CMP_MASKED_EQ,
			    O_CREAT | __O_TMPFILE, 0));
		for (b = 0; b < N(sgid) && r == 0 && nr == SCMP_SYS(fchmod);
		    b++)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
			    SCMP_A1(SCMP_CMP_EQ, sgid[b], 0));
	}
	return r;
}

int
sandbox_seccomp(void)
{
	scmp_filter_ctx ctx;
	size_t i;
	int r = 0;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		return -ENOMEM;
	r = mode_rules(ctx, true);
	for (i = 0; i < N(allowed) && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int
sandbox_plugin_filter(void)
{
	scmp_filter_ctx ctx;
	size_t i;
	int nr, r;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		return -ENOMEM;
	r = mode_rules(ctx, false);
	for (i = 0; i < N(plugin_denied) && r == 0; i++)
		if ((nr = seccomp_syscall_resolve_name(plugin_denied[i])) >= 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	/* A new user namespace: clone's flags are an argument, clone3's not. */
	for (i = 0; i < 2 && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), i ?
		    SCMP_SYS(clone) : SCMP_SYS(unshare), 1, SCMP_A0(
		    SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (r == 0 && (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
	    SCMP_SYS(clone3), 0)) == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}
