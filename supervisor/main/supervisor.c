/*
 * supervisor.c: berth-supervisor's start-up, privilege drop and life cycle.
 *
 * Spawn mode: started as root, it reads its config, creates berth's
 * directories, starts berth-mounter and berth-registry on socketpairs,
 * then drops to its user with no capability at all before it reads any
 * other input. Service mode (service_mode.c): started by systemd as its
 * own user, it connects to the helpers' sockets in the run directory.
 * SIGTERM or SIGINT stops the mounter, then the registry, then itself.
 * A helper that dies or stops answering makes it say which and how, and
 * exit non-zero: a service manager restarts the whole.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "alloc_runner.h"
#include "api.h"
#include "csi_client.h"
#include "csimanager.h"
#include "events.h"
#include "devmgr.h"
#include "drivermgr.h"
#include "layout.h"
#include "notify.h"
#include "plugin_supervisor.h"
#include "privdrop.h"
#include "service_mode.h"
#include "shim.h"
#include "taskdrv.h"
#include "watch.h"
#include "spawn.h"
#include "supervisor.h"
#include "volmgr.h"

static void
usage(void)
{
	fprintf(stderr, "usage: berth-supervisor -c CONFIG [-v]\n");
	exit(EX_USAGE);
}

/* A helper answered its hello: once both have, the managers start. */
static void
on_peer_ready(struct peer *p, void *ctx)
{
	struct supervisor *sv = ctx;
	struct timeval tv = { SUPERVISOR_PING_INTERVAL_S, 0 };

	(void)p;
	if (!sv->mounter.ready || !sv->registry.ready || sv->stopping)
		return;
	log_info("ready: berth-mounter pid %ld, berth-registry pid %ld, "
	    "supervisor uid %ld", (long)sv->mounter.pid,
	    (long)sv->registry.pid, (long)getuid());
	notify_ready("ready; berth-mounter pid %ld, berth-registry pid %ld",
	    (long)sv->mounter.pid, (long)sv->registry.pid);
	evtimer_add(sv->ping, &tv);
	csimgr_start(sv->csimgr);
	volmgr_start(sv->volmgr);
	devmgr_start(sv->devmgr);
	drivermgr_start(sv->drivers);
	allocs_start(sv->allocs);
}

/* The volume manager is made before the allocs: read them when asked. */
static const char *
node_plugin_type(void *ctx, const char *alloc, const char *plugin)
{
	struct supervisor *sv = ctx;

	return sv->allocs != NULL ?
	    allocs_node_plugin_type(sv->allocs, alloc, plugin) : NULL;
}

static void
restart_tasks(void *ctx, const char *alloc, const char *why)
{
	struct supervisor *sv = ctx;

	if (sv->allocs != NULL)
		allocs_restart_tasks(sv->allocs, alloc, why);
}

static void
room(void *ctx, const char *plugin)
{
	struct supervisor *sv = ctx;

	if (sv->allocs != NULL)
		allocs_room(sv->allocs, plugin);
}

/* What the volume manager uses: the helpers, the plugins, the allocs. */
static void
node_up(void *volmgr, const char *plugin)
{
	volmgr_plugin_up(volmgr, plugin);
}

static const struct volmgr_deps *
make_volmgr_deps(struct supervisor *sv, struct volmgr_deps *d)
{
	*d = (struct volmgr_deps){ .base = sv->base,
	    .registry = sv->registry.client, .mounter = sv->mounter.mclient,
	    .data_dir = sv->cfg.data_dir, .secrets_dir = sv->cfg.secrets_dir,
	    .find_plugin = volmgr_csimgr_find,
	    .plugins_ctx = sv->csimgr, .node_plugin_type = node_plugin_type,
	    .allocs_ctx = sv, .restart_tasks = restart_tasks, .room = room,
	    .events = sv->events,
	    .stats_interval_ms = sv->cfg.volume_stats_interval_ms };
	return d;
}

/* Ask the next helper still running to stop: the mounter, then the registry. */
static void
supervisor_stop_next(struct supervisor *sv)
{
	struct peer *order[] = { &sv->mounter, &sv->registry };
	struct timeval tv = { PEER_TIMEOUT_MS / 1000, 0 };
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (order[i]->exited)
			continue;
		if (!order[i]->asked_to_stop) {
			peer_ask_stop(order[i], "supervisor stopping");
			evtimer_add(sv->stop_timer, &tv);
		}
		return;
	}
	event_base_loopexit(sv->base, NULL);
}

void
supervisor_stop(struct supervisor *sv, int exit_code, const char *why)
{
	if (exit_code > sv->exit_code)
		sv->exit_code = exit_code;
	if (sv->stopping)
		return;
	sv->stopping = true;
	evtimer_del(sv->ping);
	if (exit_code != 0)
		log_errx("supervisor_stop: stopping because %s", why);
	else
		log_info("supervisor_stop: stopping (%s)", why);
	notify_stopping("stopping: %s", why);
	supervisor_stop_next(sv);
}

static void
on_peer_failed(struct peer *p, const char *why, void *ctx)
{
	(void)p;
	supervisor_stop(ctx, 1, why);
}

static void
on_peer_stopped(struct peer *p, void *ctx)
{
	(void)p;
	supervisor_stop_next(ctx);
}

static bool
stopping(void *ctx)
{
	const struct supervisor *sv = ctx;

	return sv->stopping;
}

/* berth-mounter's notices about plugin tasks go to the task driver. */
static bool
on_peer_notice(struct peer *p, Berth__Envelope *env, void *ctx)
{
	struct supervisor *sv = ctx;

	return p->role == BERTH__ROLE__ROLE_MOUNTER && sv->drv != NULL &&
	    taskdrv_mounter_notice(sv->drv, env);
}

static void
on_stop_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct supervisor *sv = arg;
	struct peer *p = !sv->mounter.exited ? &sv->mounter : &sv->registry;

	(void)fd;
	(void)ev;
	/* We may not signal it; it exits when our end of its socket closes. */
	log_warnx("on_stop_timeout: %s (pid %ld) did not exit within %d ms; "
	    "leaving it to notice our exit", p->name, (long)p->pid,
	    PEER_TIMEOUT_MS);
	p->exited = true;
	sv->exit_code = 1;
	supervisor_stop_next(sv);
}

static void
on_signal(evutil_socket_t sig, short ev, void *arg)
{
	struct supervisor *sv = arg;
	char why[64];

	(void)ev;
	snprintf(why, sizeof(why), "SIG%s", sigabbrev_np(sig));
	supervisor_stop(sv, 0, why);
}

static void
on_sigchld(evutil_socket_t sig, short ev, void *arg)
{
	struct supervisor *sv = arg;
	struct peer *p;
	pid_t pid;
	int status;

	(void)sig;
	(void)ev;
	/* Only the helpers: tasks are reaped through their pidfds. */
	for (p = &sv->mounter; p != NULL; p = p == &sv->mounter ?
	    &sv->registry : NULL) {
		if (p->exited || p->pid <= 0 || !p->spawned)
			continue;
		if ((pid = waitpid(p->pid, &status, WNOHANG)) == p->pid)
			peer_reaped(p, status);
	}
}

static void
on_ping(evutil_socket_t fd, short ev, void *arg)
{
	struct supervisor *sv = arg;
	struct timeval tv = { SUPERVISOR_PING_INTERVAL_S, 0 };

	(void)fd;
	(void)ev;
	log_rl_flush();
	peer_ping(&sv->mounter);
	peer_ping(&sv->registry);
	evtimer_add(sv->ping, &tv);
}

/*
 * Make (or find) the directory at path, and open it. Root resolves the
 * path only through directories that root alone can change (see
 * privdrop.h) and opens the last component without following a symlink;
 * every later change is made on the descriptor. *created says whether we
 * made it. -1 with err set.
 */
static int
root_dir(const char *path, mode_t mode, int *created, char *err,
    size_t errlen)
{
	char last[NAME_MAX + 1];
	int parent, fd;

	*created = 0;
	if ((parent = priv_trusted_parent(path, last, sizeof(last), err,
	    errlen)) < 0)
		return -1;
	if (mkdirat(parent, last, mode) == 0)
		*created = 1;
	else if (errno != EEXIST) {
		snprintf(err, errlen, "creating %s: %s", path, strerror(errno));
		close(parent);
		return -1;
	}
	fd = openat(parent, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(parent);
	if (fd < 0)
		snprintf(err, errlen, "opening %s: %s%s", path,
		    strerror(errno), errno == ELOOP || errno == ENOTDIR ?
		    " (not a directory, or a symlink: name a directory)" : "");
	/* The mode we meant, whatever umask the service manager gave us. */
	else if (*created && fchmod(fd, mode) < 0) {
		snprintf(err, errlen, "setting the mode of %s: %s", path,
		    strerror(errno));
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Has the directory fd any entry? 1, 0, or -1 (errno). */
static int
dir_has_entries(int fd)
{
	struct dirent *de;
	DIR *d;
	int dup_fd, any = 0;

	if ((dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if ((d = fdopendir(dup_fd)) == NULL) {
		close(dup_fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") !=
		    0)
			any = 1;
	closedir(d);
	return any;
}

/*
 * The data directory: root's, and changed by root alone (the mounter and
 * we act beneath it as root). An existing one that others can change is
 * refused, not repaired: what they may have planted is unknown.
 */
static int
prepare_data_dir(const struct berth_config *cfg, char *err, size_t errlen)
{
	struct stat st = { 0 };
	int fd, created;

	if ((fd = root_dir(cfg->data_dir, 0755, &created, err, errlen)) < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !priv_root_only(&st)) {
		snprintf(err, errlen, "data directory %s is owned by uid %ld "
		    "or writable by group or others: root works beneath it, "
		    "so it must be root's alone (chown root and chmod go-w, "
		    "after checking what is in it)", cfg->data_dir,
		    (long)st.st_uid);
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A user's own directory (the registry's database, the supervisor's kept
 * logs and its own state: a drain), made and given away on descriptors beneath the data directory's.
 */
static int
prepare_user_dir(int data_fd, const struct berth_config *cfg,
    const char *name, const struct priv_user *ru, char *err, size_t errlen)
{
	int fd;

	if ((mkdirat(data_fd, name, 0700) < 0 && errno != EEXIST) ||
	    (fd = openat(data_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "directory %s/%s: %s", cfg->data_dir,
		    name, strerror(errno));
		return -1;
	}
	if (fchown(fd, ru->uid, ru->gid) < 0 || fchmod(fd, 0700) < 0) {
		snprintf(err, errlen, "giving %s/%s to %s: %s", cfg->data_dir,
		    name, ru->name, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * The run directory belongs to the supervisor's user, group api_group,
 * mode 02755: the supervisor makes its API socket there itself after the
 * drop, and the set-group-ID bit gives the socket the API group from the
 * start. Root touches nothing in it. An existing directory is taken over
 * only when it is already the supervisor's, or root's and empty.
 */
static int
prepare_run_dir(const struct berth_config *cfg, const struct priv_user *su,
    gid_t api_group, char *err, size_t errlen)
{
	struct stat st;
	int fd, created;

	if ((fd = root_dir(cfg->run_dir, 0700, &created, err, errlen)) < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "run directory %s: %s", cfg->run_dir,
		    strerror(errno));
		goto fail;
	}
	if (!created && st.st_uid != su->uid && (st.st_uid != 0 ||
	    dir_has_entries(fd) != 0)) {
		snprintf(err, errlen, "run directory %s exists and belongs to "
		    "uid %ld%s: berth's run directory must be its own (remove "
		    "it, or name another \"run_dir\")", cfg->run_dir,
		    (long)st.st_uid, st.st_uid == 0 ? " with entries in it" :
		    "");
		goto fail;
	}
	if (fchown(fd, su->uid, api_group) < 0 || fchmod(fd, 02755) < 0) {
		snprintf(err, errlen, "giving run directory %s to %s: %s",
		    cfg->run_dir, su->name, strerror(errno));
		goto fail;
	}
	close(fd);
	return 0;
fail:
	close(fd);
	return -1;
}

/*
 * The directories berth needs before its helpers start, each made and
 * changed on a descriptor, never by a path through a directory that a
 * less trusted user can change.
 */
static int
prepare_dirs(const struct berth_config *cfg, const struct priv_user *ru,
    const struct priv_user *su, gid_t api_group)
{
	char err[768];
	int data_fd;

	if ((data_fd = prepare_data_dir(cfg, err, sizeof(err))) < 0 ||
	    prepare_user_dir(data_fd, cfg, LAYOUT_REGISTRY_DIR, ru, err,
	    sizeof(err)) < 0 ||
	    prepare_user_dir(data_fd, cfg, "logs", su, err, sizeof(err)) < 0 ||
	    prepare_user_dir(data_fd, cfg, "supervisor", su, err,
	    sizeof(err)) < 0 ||
	    prepare_run_dir(cfg, su, api_group, err, sizeof(err)) < 0) {
		log_errx("prepare_dirs: %s", err);
		if (data_fd >= 0)
			close(data_fd);
		return -1;
	}
	close(data_fd);
	return 0;
}

static struct plugsup *
allocs_plugsup(void *ctx, const struct plugsup_conf *conf,
    const struct plugsup_ops *ops, void *arg)
{
	struct supervisor *sv = ctx;

	return plugsup_new(&(struct plugsup_deps){ sv->base,
	    sv->registry.client, sv->csi, sv->watcher, sv->csimgr }, conf,
	    ops, arg);
}

static void
allocs_fail(void *ctx, const char *why)
{
	supervisor_stop(ctx, 1, why);
}

/* The alloc runner's links, config values and callbacks. */
static struct allocs *
make_allocs(struct supervisor *sv)
{
	const struct allocs_deps d = {
		.base = sv->base,
		.registry = sv->registry.client,
		.mounter = sv->mounter.mclient,
		.watcher = sv->watcher,
		.events = sv->events,
		.drivers = sv->drivers,
		.volumes = &allocs_volmgr_ops,
		.volumes_ctx = sv->volmgr,
		.driver = &trun_taskdrv_ops,
		.driver_ctx = sv->drv,
		.plugsup_new = allocs_plugsup,
		.plugsup_ctx = sv,
		.alloc_dir = sv->cfg.alloc_dir,
		.data_dir = sv->cfg.data_dir,
		.plugins_dir = sv->cfg.plugins_dir,
		.resync_ms = sv->cfg.plugin_resync_ms,
		.heartbeat_ms = sv->cfg.plugin_heartbeat_ms,
		.log_retention_ms = sv->cfg.log_retention_ms,
		.volume_wait_ms = sv->cfg.volume_wait_ms,
		.uid = sv->uid,
		.gid = sv->gid,
		.task_id_first = sv->cfg.task_id_first,
		.task_id_count = sv->cfg.task_id_count,
		.cgroups = &sv->cgroups,
		.cgroup_parent = sv->cgroup_parent,
		.fail = allocs_fail,
		.ctx = sv,
	};

	return allocs_new(&d);
}

/* The task driver: the mounter for privileged tasks, the data dir. */
static struct taskdrv *
make_taskdrv(struct supervisor *sv)
{
	struct taskdrv_deps d = { 0 };

	d.base = sv->base;
	d.mounter = sv->mounter.mclient;
	d.data_dir = sv->cfg.data_dir;
	/* Filled in by tasks_cgroup(), before any task starts. */
	d.cgroups = &sv->cgroups;
	d.cgroup_parent = sv->cgroup_parent;
	return sv->drv = taskdrv_new(&d);
}

/* The driver manager hears the task driver's events about tasks. */
static struct drivermgr *
drivers_new(struct supervisor *sv)
{
	struct drivermgr_conf dc = { 0 };

	dc.shim = taskdrv_shim_path(sv->drv);
	dc.mounter = sv->mounter.mclient;
	dc.fingerprint_ms = sv->cfg.plugin_heartbeat_ms;
	dc.retry_initial_ms = sv->cfg.plugin_retry_initial_ms;
	dc.retry_max_ms = sv->cfg.plugin_retry_max_ms;
	dc.allow = sv->cfg.driver_allow;
	dc.block = sv->cfg.driver_block;
	if ((sv->drivers = drivermgr_new(sv->base, &dc)) != NULL)
		taskdrv_on_event(sv->drv, drivermgr_task_event, sv->drivers);
	return sv->drivers;
}

/* The helpers' links as the API shows them. */
static void
api_helpers(void *ctx, struct api_helper h[API_NHELPERS])
{
	const struct supervisor *sv = ctx;
	const struct peer *p[API_NHELPERS];
	size_t i;

	p[API_HELPER_MOUNTER] = &sv->mounter;
	p[API_HELPER_REGISTRY] = &sv->registry;
	for (i = 0; i < API_NHELPERS; i++) {
		h[i].name = p[i]->name;
		h[i].pid = p[i]->pid;
		h[i].ready = p[i]->ready;
		h[i].exited = p[i]->exited;
	}
}

/* What the API reads, and the managers it hands changes to. */
static const struct api_deps *
make_api_deps(struct supervisor *sv, struct api_deps *d)
{
	memset(d, 0, sizeof(*d));
	d->base = sv->base;
	d->run_dir = sv->cfg.run_dir;
	d->data_dir = sv->cfg.data_dir;
	d->uid = sv->uid;
	d->started = sv->started;
	d->allocs = sv->allocs;
	d->volmgr = sv->volmgr;
	d->csimgr = sv->csimgr;
	d->devmgr = sv->devmgr;
	d->drivers = sv->drivers;
	d->events = sv->events;
	d->registry = sv->registry.client;
	d->stopping = stopping;
	d->helpers = api_helpers;
	d->ctx = sv;
	return d;
}

static void
start_helper(struct peer *p, char *const argv[])
{
	char path[512];
	int r;

	if ((r = spawn_helper_path(p->name, path, sizeof(path))) < 0)
		fatalx("start_helper: cannot find %s next to berth-supervisor: "
		    "%s (is berth installed completely?)", p->name,
		    strerror(-r));
	if ((r = spawn_helper(path, argv, &p->pid, &p->fd)) < 0)
		fatalx("start_helper: starting %s: %s", path, strerror(-r));
	p->spawned = true;
}

/*
 * The config, as root only from a file that root alone can change, found
 * through directories that root alone can change (see privdrop.h), and
 * opened without blocking on a FIFO. 0, or -1 after logging why.
 */
static int
load_config(const char *path, struct berth_config *cfg)
{
	char err[768];
	struct stat st;
	int fd, r;

	if (geteuid() != 0)
		r = config_load(path, cfg, err, sizeof(err));
	else if ((fd = priv_open_trusted(path, O_RDONLY | O_NONBLOCK, err,
	    sizeof(err))) < 0) {
		log_errx("cannot read config %s", err);
		return -1;
	} else {
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			log_errx("cannot read config %s: not a regular file",
			    path);
			close(fd);
			return -1;
		}
		r = config_load_fd(fd, path, cfg, err, sizeof(err));
		close(fd);
	}
	if (r < 0)
		log_errx("%s", err);
	return r;
}

/*
 * Every API client holds a descriptor: take all the kernel allows us
 * (the soft limit up to the hard one), so that the API's own bounds, not
 * EMFILE, decide who is served.
 */
/*
 * libevent's own warnings (a failed accept, a bad request) come as often
 * as a client makes them: rate-limited, as ours are.
 */
static void
on_libevent_log(int severity, const char *msg)
{
	if (severity >= EVENT_LOG_WARN)
		log_warnx_limited("libevent: %s", msg);
	else
		log_debug("libevent: %s", msg);
}

static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("raise_nofile: RLIMIT_NOFILE to %llu",
		    (unsigned long long)rl.rlim_max);
}

/*
 * Spawn mode, as root: the tasks' cgroup parent, made and given to our
 * user as systemd's Delegate=yes would; service mode: systemd delegated
 * our own cgroup, so we move into a "supervisor" leaf of it and tasks go
 * under "tasks" beside it. Without either, tasks still get their limits
 * (crun, as root, makes their cgroups), and we say so.
 */
/* Once, at start: the limits no task here can have (task_runner.c
 * leaves each out, and says so at each start). */
static void
limits_warning(struct supervisor *sv)
{
	static const char *const ctl[] = { "memory", "cpu", "pids" };
	char miss[64] = "";
	size_t i;

	for (i = 0; i < 3; i++)
		if (!cgroup_can_limit(&sv->cgroups, sv->cgroup_parent, ctl[i]))
			snprintf(miss + strlen(miss), sizeof(miss) -
			    strlen(miss), "%s%s", miss[0] ? ", " : "", ctl[i]);
	if (miss[0] != '\0')
		log_warnx("tasks_cgroup: no %s controller for %s: tasks' "
		    "limits of it are not enforced", miss, sv->cgroup_parent);
}

static void
tasks_cgroup(struct supervisor *sv, const struct priv_user *su)
{
	char err[512];
	int r;

	if ((r = cgroup_mounts_find(&sv->cgroups, NULL)) < 0) {
		log_warnx("tasks_cgroup: /proc/self/mountinfo: %s; tasks' use "
		    "of CPU and memory will not be shown", strerror(-r));
		return;
	}
	if (su != NULL) {
		snprintf(sv->cgroup_parent, sizeof(sv->cgroup_parent), "%s",
		    sv->cfg.cgroup_parent);
		if (cgroup_delegate(&sv->cgroups, sv->cfg.cgroup_parent,
		    su->uid, su->gid, err, sizeof(err)) < 0)
			log_warnx("tasks_cgroup: %s; the tasks' cgroups stay "
			    "root's alone", err);
		limits_warning(sv);
		return;
	}
	if (cgroup_enter_leaf(&sv->cgroups, sv->cgroup_parent,
	    sizeof(sv->cgroup_parent), err, sizeof(err)) < 0) {
		sv->cgroup_parent[0] = '\0';
		log_warnx("tasks_cgroup: %s", err);
		return;
	}
	log_info("tasks_cgroup: tasks' cgroups under %s", sv->cgroup_parent);
	limits_warning(sv);
}

int
main(int argc, char **argv)
{
	struct supervisor sv = { 0 };
	struct volmgr_deps vd;
	struct priv_user su, ru;
	const char *cfgpath = NULL;
	char err[512];
	int ch, verbose = 0, r, api_fd;
	struct api_deps ad;
	gid_t api_group;

	while ((ch = getopt(argc, argv, "c:vh")) != -1) {
		switch (ch) {
		case 'c': cfgpath = optarg; break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	if (cfgpath == NULL || optind != argc)
		usage();
	log_init("berth-supervisor", verbose);
	if (load_config(cfgpath, &sv.cfg) < 0)
		return EX_CONFIG;
	if (strcmp(sv.cfg.log_level, "debug") == 0)
		log_init("berth-supervisor", verbose = 1);
	raise_nofile();
	event_set_log_callback(on_libevent_log);
	if ((r = notify_init()) < 0)
		log_warnx("main: NOTIFY_SOCKET: %s; not telling systemd",
		    strerror(-r));
	sv.mounter.name = "berth-mounter";
	sv.mounter.role = BERTH__ROLE__ROLE_MOUNTER;
	sv.registry.name = "berth-registry";
	sv.registry.role = BERTH__ROLE__ROLE_REGISTRY;
	if (geteuid() != 0) {
		/* Not root: service mode, the helpers are systemd's. */
		sv.service_mode = true;
		tasks_cgroup(&sv, NULL);
		service_mode_start(sv.cfg.run_dir, &sv.mounter.fd,
		    &sv.registry.fd);
		if (api_group_id(&sv.cfg, getgid(), &api_group, err,
		    sizeof(err)) < 0) {
			log_errx("%s", err);
			config_free(&sv.cfg);
			return EX_CANTCREAT;
		}
		goto unprivileged;
	}
	if (priv_lookup_user(sv.cfg.user, &su, err, sizeof(err)) < 0 ||
	    priv_lookup_user(sv.cfg.registry_user, &ru, err,
	    sizeof(err)) < 0) {
		log_errx("config %s: %s", cfgpath, err);
		config_free(&sv.cfg);
		return EX_CONFIG;
	}
	if (api_group_id(&sv.cfg, su.gid, &api_group, err, sizeof(err)) < 0) {
		log_errx("%s", err);
		config_free(&sv.cfg);
		return EX_CONFIG;
	}
	if (prepare_dirs(&sv.cfg, &ru, &su, api_group) < 0) {
		config_free(&sv.cfg);
		return EX_CANTCREAT;
	}
	tasks_cgroup(&sv, &su);

	notify_status("starting berth-mounter and berth-registry");
	{
		/* The mounter enforces the range and runs this shim as
		 * tasks' init, in cgroups under the parent root made. */
		char shim[PATH_MAX];
		char *margv[] = { "berth-mounter", "--spawned", "--data-dir",
			sv.cfg.data_dir, "--run-dir", sv.cfg.run_dir,
			"--plugins-dir", sv.cfg.plugins_dir, "--task-ids",
			sv.cfg.task_ids, "--cgroup-parent",
			sv.cfg.cgroup_parent, "--shim", shim,
			verbose ? "--verbose" : NULL, NULL };
		char *rargv[] = { "berth-registry", "--spawned", "--data-dir",
			sv.cfg.data_dir, "--user", sv.cfg.registry_user,
			verbose ? "--verbose" : NULL, NULL };

		if (spawn_helper_path(SHIM_NAME, shim, sizeof(shim)) < 0 ||
		    shim[0] == '\0')
			snprintf(shim, sizeof(shim), "%s", SHIM_NAME);
		start_helper(&sv.mounter, margv);
		start_helper(&sv.registry, rargv);
	}

	if ((r = priv_drop_to_user(&su)) < 0)
		fatalx("main: dropping to user %s: %s", su.name, strerror(-r));

unprivileged:
	/*
	 * The API socket is made by the user that serves it, never by root:
	 * the run directory is that user's, and root acting by path in it
	 * could be sent elsewhere by a symlink.
	 */
	if ((api_fd = api_listen(&sv.cfg, api_group, err, sizeof(err))) < 0) {
		log_errx("%s", err);
		config_free(&sv.cfg);
		return EX_CANTCREAT;
	}
	sv.uid = getuid();
	sv.gid = getgid();
	clock_gettime(CLOCK_MONOTONIC, &sv.started);

	/* Unprivileged from here on: now read what the helpers say. */
	if ((sv.base = event_base_new()) == NULL ||
	    (sv.sigterm = evsignal_new(sv.base, SIGTERM, on_signal, &sv)) ==
	    NULL ||
	    (sv.sigint = evsignal_new(sv.base, SIGINT, on_signal, &sv)) ==
	    NULL ||
	    (sv.sigchld = evsignal_new(sv.base, SIGCHLD, on_sigchld, &sv)) ==
	    NULL ||
	    (sv.ping = evtimer_new(sv.base, on_ping, &sv)) == NULL ||
	    (sv.stop_timer = evtimer_new(sv.base, on_stop_timeout, &sv)) ==
	    NULL)
		fatalx("main: cannot set up the event loop");
	signal(SIGPIPE, SIG_IGN);
	evsignal_add(sv.sigterm, NULL);
	evsignal_add(sv.sigint, NULL);
	evsignal_add(sv.sigchld, NULL);
	/* A helper may have died before the handler existed. */
	event_active(sv.sigchld, 0, 0);
	if (notify_watchdog_start(sv.base) < 0)
		fatalx("main: cannot set up the watchdog timer");
	sv.peer_hooks = (struct peer_hooks){ on_peer_ready, on_peer_failed,
	    on_peer_stopped, stopping, on_peer_notice, &sv };
	if (peer_start(&sv.mounter, sv.base, &sv.peer_hooks,
	    sv.mounter.fd) < 0 ||
	    peer_start(&sv.registry, sv.base, &sv.peer_hooks,
	    sv.registry.fd) < 0)
		fatalx("main: cannot talk to the helpers");
	/* The registry's calls and events, for the managers that need them. */
	if ((sv.registry.client = regclient_new(sv.base, sv.registry.chan,
	    0)) == NULL)
		fatalx("main: cannot set up the registry client");
	if ((sv.mounter.mclient = mclient_new(sv.mounter.chan, 0)) == NULL)
		fatalx("main: cannot set up the mounter client");
	/* The managers; they start once both helpers answered. */
	sv.events = events_new();
	sv.devmgr = devmgr_new(sv.base, &sv.cfg);
	if ((sv.csi = csi_client_new(sv.base)) == NULL ||
	    (sv.watcher = watcher_new(sv.base)) == NULL ||
	    make_taskdrv(&sv) == NULL ||
	    drivers_new(&sv) == NULL ||
	    (sv.csimgr = csimgr_new(&(struct csimgr_deps){ sv.base,
	    sv.registry.client, sv.csi, sv.events,
	    sv.cfg.plugin_resync_ms })) == NULL ||
	    (sv.volmgr = volmgr_new(make_volmgr_deps(&sv, &vd))) == NULL ||
	    (sv.allocs = make_allocs(&sv)) == NULL)
		fatalx("main: cannot set up the plugin managers");
	/* Mounts that died with a node plugin (volmgr_recover.c). */
	csimgr_on_node_up(sv.csimgr, node_up, sv.volmgr);
	if ((sv.api = api_new(make_api_deps(&sv, &ad), api_fd,
	    api_group)) == NULL)
		fatalx("main: cannot serve the API");

	event_base_dispatch(sv.base);

	/* Tasks and plugins keep running: a new supervisor adopts them. */
	api_free(sv.api);
	allocs_free(sv.allocs);
	volmgr_free(sv.volmgr);
	csimgr_free(sv.csimgr);
	devmgr_free(sv.devmgr);
	drivermgr_free(sv.drivers);
	taskdrv_free(sv.drv);
	csi_client_free(sv.csi);
	watcher_free(sv.watcher);
	events_free(sv.events);
	mclient_free(sv.mounter.mclient);
	chan_free(sv.mounter.chan);
	regclient_free(sv.registry.client);
	chan_free(sv.registry.chan);
	event_free(sv.sigterm);
	event_free(sv.sigint);
	event_free(sv.sigchld);
	event_free(sv.ping);
	event_free(sv.stop_timer);
	notify_free();
	event_base_free(sv.base);
	if (sv.exit_code == 0)
		log_info("main: stopped cleanly");
	config_free(&sv.cfg);
	return sv.exit_code;
}
