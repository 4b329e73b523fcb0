/*
 * mounter.c: berth-mounter, the only privileged process: start-up,
 * confinement (see SECURITY.md) and the dispatch of requests. As in vmd's
 * priv.c, a first switch (request.c) checks every field and refuses the
 * rest; a second (act(), here) acts on the checked request only. Requests
 * are not trusted even from the supervisor. Directories come from the
 * command line, which root wrote, never from the peer.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "mounter.h"
#include "ipc_reply.h"
#include "notify.h"
#include "privdrop.h"
#include "service.h"

Berth__ErrorCode
fail(char *why, Berth__ErrorCode code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_MAX, fmt, ap);
	va_end(ap);
	return code;
}

Berth__ErrorCode
fail_errno(char *why, int err, const char *what, const char *path)
{
	Berth__ErrorCode code = BERTH__ERROR_CODE__ERROR_INTERNAL;

	if (err == ENOENT || err == ESRCH)
		code = BERTH__ERROR_CODE__ERROR_NOT_FOUND;
	else if (err == ELOOP || err == EXDEV || err == EACCES || err == EPERM)
		code = BERTH__ERROR_CODE__ERROR_PERMISSION;
	else if (err == EEXIST || err == EBUSY || err == ENOTDIR ||
	    err == EISDIR)
		code = BERTH__ERROR_CODE__ERROR_CONFLICT;
	return fail(why, code, "%s %s: %s%s", what, path, strerror(err),
	    err == ELOOP ? " (a symlink is in the way; berth never follows "
	    "one)" : "");
}

/* The second switch: act on a request that request_check() accepted. */
static Berth__ErrorCode
act(struct mounter *m, const struct mreq *rq, struct mreply *out, char *why)
{
	static verb_fn *const verbs[] = {
		[BERTH__ENVELOPE__BODY_PREPARE_PLUGIN] = volume_prepare_plugin,
		[BERTH__ENVELOPE__BODY_PREPARE_VOLUME] = volume_prepare,
		[BERTH__ENVELOPE__BODY_PREPARE_TASK] = volume_prepare_task,
		[BERTH__ENVELOPE__BODY_BIND_VOLUME] = volume_bind,
		[BERTH__ENVELOPE__BODY_UNBIND_VOLUME] = volume_unbind,
		[BERTH__ENVELOPE__BODY_CLEANUP_ALLOC] = volume_cleanup,
		[BERTH__ENVELOPE__BODY_START_PLUGIN] = plugin_start,
		[BERTH__ENVELOPE__BODY_ADOPT_PLUGIN] = plugin_adopt,
		[BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN] = plugin_signal,
		[BERTH__ENVELOPE__BODY_START_TASK] = task_start,
	};

	if ((size_t)rq->body >= sizeof(verbs) / sizeof(verbs[0]) ||
	    verbs[rq->body] == NULL)
		return fail(why, BERTH__ERROR_CODE__ERROR_UNSUPPORTED,
		    "not served");
	return verbs[rq->body](m, rq, out, why);
}

void
mounter_answer(struct mounter *m, const struct mreq *rq, struct mreply *out)
{
	Berth__Envelope rep = BERTH__ENVELOPE__INIT;
	Berth__Envelope req = BERTH__ENVELOPE__INIT;
	Berth__PrepareVolumeReply pv = BERTH__PREPARE_VOLUME_REPLY__INIT;
	Berth__CleanupReply cr = BERTH__CLEANUP_REPLY__INIT;
	Berth__PluginStarted ps = BERTH__PLUGIN_STARTED__INIT;
	Berth__PluginHandle hd = BERTH__PLUGIN_HANDLE__INIT;
	Berth__TaskStarted ts = BERTH__TASK_STARTED__INIT;
	Berth__Ack ack = BERTH__ACK__INIT;

	log_debug("mounter_answer: %s done", ipc_body_name(rq->body));
	switch ((rep.body_case = ipc_reply_body(rq->body))) {
	case BERTH__ENVELOPE__BODY_PREPARE_VOLUME_REPLY:
		pv.mounted = out->mounted;
		rep.prepare_volume_reply = &pv;
		break;
	case BERTH__ENVELOPE__BODY_CLEANUP_REPLY:
		cr.unmounted = out->unmounted;
		cr.removed = out->removed;
		rep.cleanup_reply = &cr;
		break;
	case BERTH__ENVELOPE__BODY_PLUGIN_STARTED:
		hd.pid = (uint32_t)out->pid;
		hd.start_time = out->start_time;
		ps.handle = &hd;
		rep.plugin_started = &ps;
		break;
	case BERTH__ENVELOPE__BODY_TASK_STARTED:
		ts.pid = out->pid;
		ts.start_time = out->start_time;
		rep.task_started = &ts;
		break;
	default:
		rep.ack = &ack;
	}
	/* The channel owns the descriptors from here. */
	req.request_id = rq->id;
	chan_reply2(m->h.chan, &req, &rep, out->pidfd, out->chanfd);
	out->pidfd = out->chanfd = -1;
}

static void
mounter_dispatch(struct helper *h, Berth__Envelope *env, int fd)
{
	struct mounter *m = h->arg;
	struct mreply out = { .pidfd = -1, .chanfd = -1 };
	Berth__ErrorCode code;
	struct mreq rq;
	char why[WHY_MAX];

	/* No request to the mounter carries a descriptor. */
	if (fd >= 0)
		close(fd);
	if (env->kind != BERTH__KIND__KIND_REQUEST) {
		log_warnx("mounter_dispatch: unexpected %s notice; dropped",
		    ipc_body_name(env->body_case));
		return;
	}
	if ((code = request_check(env, &rq, why)) == OK)
		code = act(m, &rq, &out, why);
	if (code == OK && !out.later)
		mounter_answer(m, &rq, &out);
	if (code == OK)
		return;
	/* Things found in place, or gone, are routine after a restart. */
	if (code == BERTH__ERROR_CODE__ERROR_CONFLICT ||
	    code == BERTH__ERROR_CODE__ERROR_NOT_FOUND)
		log_info("mounter_dispatch: %s answered %s: %s",
		    ipc_body_name(env->body_case), ipc_error_name(code), why);
	else
		log_warnx("mounter_dispatch: %s refused (%s): %s",
		    ipc_body_name(env->body_case), ipc_error_name(code), why);
	chan_reply_error(h->chan, env, code, "%s", why);
}

int
mounter_serve_on(struct mounter *m, int fd)
{
	m->h = (struct helper){ .name = "berth-mounter", .arg = m,
	    .role = BERTH__ROLE__ROLE_MOUNTER, .dispatch = mounter_dispatch,
	    .base = m->h.base };
	return helper_init(&m->h, fd);
}

static void
usage(void)
{
	fprintf(stderr, "usage: berth-mounter [--spawned | --peer-user USER] "
	    "--data-dir DIR --run-dir DIR [--plugins-dir DIR] [--task-conf "
	    "DIR]\n\t[--task-ids MIN-MAX] [--shim FILE] [--cgroup-parent "
	    "PATH] [--peer-cgroup DIR] [--verbose]\n"
	    "(berth-supervisor or berth-mounter.socket starts it; see "
	    "berth-mounter(8))\n");
	exit(EX_USAGE);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spawned", no_argument, NULL, 's' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "plugins-dir", required_argument, NULL, 'p' },
		{ "peer-user", required_argument, NULL, 'u' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "task-conf", required_argument, NULL, 'c' },
		{ "task-ids", required_argument, NULL, 'i' },
		{ "shim", required_argument, NULL, 'S' },
		{ "cgroup-parent", required_argument, NULL, 'g' },
		{ "peer-cgroup", required_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	static struct mounter m = { .shim = BERTH_LIBEXECDIR "/berth-shim",
	    .cgroup = "/berth" };
	const char *run_dir = NULL, *plugins_dir = MOUNTER_PLUGINS_DIR;
	const char *peer_user = SERVICE_PEER_USER, *conf = TASK_CONF_DIR;
	const char *peer_cgroup = NULL;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct passwd *pw;
	pid_t peer;
	int spawned = 0, verbose = 0, ch, r;
	char err[256];

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's': spawned = 1; break;
		case 'd': m.data_dir = optarg; break;
		case 'r': run_dir = optarg; break;
		case 'p': plugins_dir = optarg; break;
		case 'u': peer_user = optarg; break;
		case 'v': verbose = 1; break;
		case 'c': conf = optarg; break;
		case 'S': m.shim = optarg; break;
		case 'g': m.cgroup = optarg; break;
		case 'G': peer_cgroup = optarg; break;
		case 'i':
			if (sscanf(optarg, "%u-%u%c", &m.ids[0], &m.ids[1],
			    err) != 2 || m.ids[0] == 0 || m.ids[0] > m.ids[1])
				usage();
			break;
		default: usage();
		}
	}
	if (m.data_dir == NULL || run_dir == NULL ||
	    optind != argc || m.data_dir[0] != '/')
		usage();
	log_init("berth-mounter", verbose);
	if (geteuid() != 0)
		fatalx("main: berth-mounter must start as root (it keeps only "
		    "CAP_SYS_ADMIN); start it through berth-supervisor");
	/* Spawn mode: the socketpair; service mode: systemd's listener. */
	if (service_helper_peer(spawned, peer_user, peer_cgroup, &peer, err,
	    sizeof(err)) < 0)
		fatalx("main: %s", err);
	if (spawned && (r = priv_die_with_parent(peer)) < 0)
		fatalx("main: cannot tie our life to the supervisor's: %s",
		    strerror(-r));
	/* Task ids are never the peer's (as it connected, and its user's)
	 * nor the registry's; a task's status dir gets its user's group. */
	if (getsockopt(BERTH_HELPER_FD, SOL_SOCKET, SO_PEERCRED, &cr,
	    &crlen) < 0)
		fatal("main: SO_PEERCRED");
	m.deny_uid[0] = cr.uid;
	m.deny_gid[0] = m.peer_gid = cr.gid;
	for (r = 1; r < 3; r++)
		if ((pw = getpwnam(r == 1 ? peer_user : "berth-registry"))) {
			m.deny_uid[r] = pw->pw_uid;
			m.deny_gid[r] = pw->pw_gid;
			m.peer_gid = r == 1 ? pw->pw_gid : m.peer_gid;
		}
	if ((r = helper_close_inherited(BERTH_HELPER_FD)) < 0)
		fatalx("main: closing inherited descriptors: %s", strerror(-r));
	/* Before the environment is cleared and socket(2) is forbidden. */
	if ((r = notify_init()) < 0)
		log_warnx("main: NOTIFY_SOCKET: %s; not telling systemd",
		    strerror(-r));
	if (clearenv() != 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fatal("main: clearing the environment, not dumpable");
	umask(022);
	/* Records of the plugins we start are kept per boot. */
	if ((r = open("/proc/sys/kernel/random/boot_id", O_RDONLY |
	    O_CLOEXEC)) < 0 || read(r, m.boot_id, 36) != 36 ||
	    !ident_valid_str(m.boot_id))
		fatal("main: reading /proc/sys/kernel/random/boot_id");
	close(r);
	/* Pinned now: every path the mounter uses is resolved from these. */
	if ((m.data_fd = open(m.data_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		fatal("main: data directory %s", m.data_dir);
	if ((m.proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		fatal("main: /proc");
	if ((m.plugins_fd = open(plugins_dir, O_PATH | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) < 0)
		log_warn("main: plugin definitions %s (privileged plugins "
		    "cannot start)", plugins_dir);
	if ((m.conf_fd = open(conf, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		log_warn("main: task configuration %s (tasks cannot start)",
		    conf);
	/* A plugin's orphans come to us, not to init, as a plugin does. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		fatal("main: PR_SET_CHILD_SUBREAPER");
	/* Before the seccomp lock, which every child would inherit. */
	if ((m.launcher_fd = launcher_spawn(m.data_fd)) < 0)
		fatalx("main: plugin launcher: %s", strerror(-m.launcher_fd));

	if ((r = mounter_serve_on(&m, BERTH_HELPER_FD)) < 0)
		fatalx("main: event loop: %s", strerror(-r));
	if ((r = priv_keep_only(mounter_caps, MOUNTER_NCAPS)) < 0 ||
	    (r = sandbox_seccomp()) < 0)
		fatalx("main: locking the sandbox: %s", strerror(-r));
	log_info("main: serving; data %s, run %s, plugins %s", m.data_dir,
	    run_dir, plugins_dir);
	if (notify_watchdog_start(m.h.base) < 0)
		fatalx("main: watchdog timer");
	notify_ready("serving supervisor pid %ld; data %s", (long)peer,
	    m.data_dir);
	r = helper_serve(&m.h);
	notify_stopping("stopping: supervisor pid %ld hung up or asked us to",
	    (long)peer);
	close(m.launcher_fd);
	close(m.data_fd);
	notify_free();
	event_base_free(m.h.base);
	return r;
}
