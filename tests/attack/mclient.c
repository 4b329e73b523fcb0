/*
 * mclient.c: see mclient.h.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "mclient.h"

struct call {
	bool done;
	int fd, fd2;
	Berth__Envelope *reply;
};

static void
on_message(struct chan *ch, Berth__Envelope *env, int fd, void *arg)
{
	struct mclient *c = arg;

	(void)ch;
	if (fd >= 0)
		close(fd);
	if (env->body_case == BERTH__ENVELOPE__BODY_PLUGIN_EXITED) {
		c->exits++;
		c->last_exit = *env->plugin_exited;
		c->last_exit.handle = NULL;
	}
}

static void
on_close(struct chan *ch, const char *why, void *arg)
{
	(void)ch;
	(void)why;
	(void)arg;
}

static bool
takes_fd(Berth__Envelope__BodyCase body)
{
	return body == BERTH__ENVELOPE__BODY_PLUGIN_STARTED ||
	    body == BERTH__ENVELOPE__BODY_TASK_STARTED;
}

static const struct chan_ops ops = { on_message, on_close, takes_fd, NULL };

static void
on_reply(struct chan *ch, Berth__Envelope *env, int fd, void *arg)
{
	struct call *cl = arg;
	size_t len = berth__envelope__get_packed_size(env);
	uint8_t *buf = malloc(len + 1);

	(void)ch;
	berth__envelope__pack(env, buf);
	cl->reply = berth__envelope__unpack(NULL, len, buf);
	free(buf);
	cl->fd = fd;
	cl->fd2 = chan_take_fd2(ch);
	cl->done = true;
}

int
mc_call(struct mclient *c, Berth__Envelope *env, int *fd,
    Berth__Envelope **reply)
{
	struct call cl = { false, -1, -1, NULL };
	int code;

	ck_assert_int_eq(chan_request(c->chan, env, -1, 20000, on_reply, &cl),
	    0);
	while (!cl.done)
		event_base_loop(c->base, EVLOOP_ONCE);
	code = cl.reply->error != NULL ? (int)cl.reply->error->code : 0;
	if (fd != NULL)
		*fd = cl.fd;
	else if (cl.fd >= 0)
		close(cl.fd);
	if (cl.fd2 >= 0 && (fd == NULL || fd[0] < 0))
		close(cl.fd2);
	else if (cl.fd2 >= 0)
		fd[1] = cl.fd2;
	if (reply != NULL)
		*reply = cl.reply;
	else
		berth__envelope__free_unpacked(cl.reply, NULL);
	return code;
}

static void
tick(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	event_base_loopbreak(arg);
}

void
mc_wait(struct mclient *c, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	struct event *t = evtimer_new(c->base, tick, c->base);

	evtimer_add(t, &tv);
	event_base_dispatch(c->base);
	event_free(t);
}

/* Keep its stderr pipe from filling up, which would block it. */
static void
drain(evutil_socket_t fd, short ev, void *arg)
{
	struct mclient *c = arg;

	(void)fd;
	(void)ev;
	if (c->proc.loglen > sizeof(c->proc.log) / 2)
		c->proc.loglen = 0;
	proc_drain(&c->proc);
}

/*
 * logs/, as the supervisor makes it: a root plugin's log writer runs as
 * berth's user (the mounter's --peer-user), else as the peer.
 */
static void
logs_dir(struct mclient *c)
{
	struct passwd *pw = getpwnam("berth");
	char path[600];

	snprintf(path, sizeof(path), "%s/logs", c->data);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(chown(path, pw != NULL ? pw->pw_uid : c->peer,
	    pw != NULL ? pw->pw_gid : c->peer), 0);
}

static void
spawn(struct mclient *c)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Hello hello = BERTH__HELLO__INIT;
	char *argv[24];
	int sp[2], n = 0, i;

	/* SO_PEERCRED: the creator's effective ids. */
	ck_assert_int_eq(setegid(c->peer), 0);
	ck_assert_int_eq(seteuid(c->peer), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sp), 0);
	ck_assert_int_eq(seteuid(0), 0);
	ck_assert_int_eq(setegid(0), 0);
	argv[n++] = (char *)harness_bin("berth-mounter");
	argv[n++] = "--spawned";
	argv[n++] = "--data-dir";
	argv[n++] = c->data;
	argv[n++] = "--run-dir";
	argv[n++] = c->run;
	/* A root plugin's log writer; a test's own --shim comes later. */
	argv[n++] = "--shim";
	argv[n++] = (char *)harness_bin("berth-shim");
	if (c->plugins != NULL) {
		argv[n++] = "--plugins-dir";
		argv[n++] = c->plugins;
	}
	for (i = 0; c->args != NULL && c->args[i] != NULL && n < 23; i++)
		argv[n++] = (char *)c->args[i];
	argv[n] = NULL;
	proc_start(&c->proc, argv, sp[1]);
	close(sp[1]);
	c->raw = sp[0];
	c->base = event_base_new();
	c->chan = chan_new(c->base, dup(sp[0]), "mounter", &ops, c);
	c->drain = event_new(c->base, c->proc.err_fd, EV_READ | EV_PERSIST,
	    drain, c);
	event_add(c->drain, NULL);
	hello.protocol_version = BERTH_PROTOCOL_VERSION;
	hello.role = BERTH__ROLE__ROLE_SUPERVISOR;
	hello.pid = (uint32_t)getpid();
	env.body_case = BERTH__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	ck_assert_int_eq(mc_call(c, &env, NULL, NULL), 0);
}

void
mc_start(struct mclient *c, const char *plugins)
{
	mc_start_opts(c, plugins, NULL, 0);
}

void
mc_start_opts(struct mclient *c, const char *plugins,
    const char *const *args, uid_t peer)
{
	memset(c, 0, sizeof(*c));
	c->args = args;
	c->peer = peer;
	c->data = harness_tmpdir("data");
	c->run = harness_tmpdir("run");
	c->plugins = plugins ? strdup(plugins) : NULL;
	logs_dir(c);
	spawn(c);
}

static void
halt(struct mclient *c)
{
	if (c->chan != NULL)
		chan_free(c->chan);
	c->chan = NULL;
	if (c->drain != NULL)
		event_free(c->drain);
	c->drain = NULL;
	if (c->raw >= 0)
		close(c->raw);
	c->raw = -1;
	/* Closing the socket ends it; SIGKILL if it lingers. */
	if (!proc_wait_exit(&c->proc, 3000))
		ck_abort_msg("berth-mounter did not exit when its socket closed");
	proc_kill(&c->proc);
	if (c->base != NULL)
		event_base_free(c->base);
	c->base = NULL;
}

void
mc_restart(struct mclient *c)
{
	halt(c);
	spawn(c);
}

void
mc_stop(struct mclient *c)
{
	halt(c);
	harness_rmtree(c->data);
	harness_rmtree(c->run);
	free(c->data);
	free(c->run);
	free(c->plugins);
}

const char *
mc_path(struct mclient *c, const char *rel)
{
	static char buf[4][1024];
	static int next;
	char *b = buf[next++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/%s", c->data, rel);
	return b;
}

static Berth__VolumeUsage usage = {
	PROTOBUF_C_MESSAGE_INIT(&berth__volume_usage__descriptor), false,
	BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM,
	BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER,
};

int
mc_prepare_plugin(struct mclient *c, const char *type, const char *plugin,
    const char *alloc)
{
	return mc_prepare_plugin_owned(c, type, plugin, alloc, 0, 0);
}

int
mc_prepare_plugin_owned(struct mclient *c, const char *type,
    const char *plugin, const char *alloc, unsigned uid, unsigned gid)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PreparePlugin r = BERTH__PREPARE_PLUGIN__INIT;

	r.plugin_type = B(type);
	r.plugin_id = B(plugin);
	r.alloc_id = B(alloc);
	r.owner_uid = uid;
	r.owner_gid = gid;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_PLUGIN;
	env.prepare_plugin = &r;
	return mc_call(c, &env, NULL, NULL);
}

/* old: staging at the per-usage path of older berths (MC_USAGE). */
static int
prepare_volume(struct mclient *c, bool staging, bool old, const char *type,
    const char *plugin, const char *ns_or_alloc, const char *vol,
    bool *mounted)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *rep;
	Berth__PrepareVolume r = BERTH__PREPARE_VOLUME__INIT;
	int code;

	r.dir = staging ? BERTH__VOLUME_DIR__VOLUME_DIR_STAGING :
	    BERTH__VOLUME_DIR__VOLUME_DIR_PUBLISH;
	r.plugin_type = B(type);
	r.plugin_id = B(plugin);
	if (staging)
		r.volume_ns = B(ns_or_alloc);
	else
		r.alloc_id = B(ns_or_alloc);
	r.volume_id = B(vol);
	if (c->plugin_alloc != NULL)
		r.plugin_alloc = B(c->plugin_alloc);
	/* Staging names no usage: one path per volume. */
	if (!staging || old)
		r.usage = &usage;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_VOLUME;
	env.prepare_volume = &r;
	code = mc_call(c, &env, NULL, &rep);
	if (code == 0 && mounted != NULL)
		*mounted = rep->prepare_volume_reply->mounted;
	berth__envelope__free_unpacked(rep, NULL);
	return code;
}

int
mc_prepare_volume(struct mclient *c, bool staging, const char *type,
    const char *plugin, const char *ns_or_alloc, const char *vol,
    bool *mounted)
{
	return prepare_volume(c, staging, false, type, plugin, ns_or_alloc,
	    vol, mounted);
}

int
mc_prepare_old_staging(struct mclient *c, const char *type,
    const char *plugin, const char *ns, const char *vol)
{
	return prepare_volume(c, true, true, type, plugin, ns, vol, NULL);
}

int
mc_bind(struct mclient *c, const char *type, const char *plugin,
    const char *alloc, const char *vol, const char *task, const char *name,
    bool ro)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__BindVolume r = BERTH__BIND_VOLUME__INIT;

	r.plugin_type = B(type);
	r.plugin_id = B(plugin);
	r.alloc_id = B(alloc);
	r.volume_id = B(vol);
	r.usage = &usage;
	r.task = B(task);
	r.name = B(name);
	r.read_only = ro;
	r.group = c->group;
	env.body_case = BERTH__ENVELOPE__BODY_BIND_VOLUME;
	env.bind_volume = &r;
	return mc_call(c, &env, NULL, NULL);
}

int
mc_prepare_task(struct mclient *c, const char *alloc, const char *task,
    unsigned uid, unsigned gid)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PrepareTask r = BERTH__PREPARE_TASK__INIT;

	r.alloc_id = B(alloc);
	r.task = B(task);
	r.owner_uid = uid;
	r.owner_gid = gid;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_TASK;
	env.prepare_task = &r;
	return mc_call(c, &env, NULL, NULL);
}

int
mc_unbind(struct mclient *c, const char *alloc, const char *task,
    const char *name)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__UnbindVolume r = BERTH__UNBIND_VOLUME__INIT;

	r.alloc_id = B(alloc);
	r.task = B(task);
	r.name = B(name);
	env.body_case = BERTH__ENVELOPE__BODY_UNBIND_VOLUME;
	env.unbind_volume = &r;
	return mc_call(c, &env, NULL, NULL);
}

int
mc_cleanup(struct mclient *c, const char *alloc)
{
	return mc_cleanup_plugin(c, alloc, NULL, NULL);
}

int
mc_cleanup_plugin(struct mclient *c, const char *alloc, const char *type,
    const char *plugin)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__CleanupAlloc r = BERTH__CLEANUP_ALLOC__INIT;

	r.alloc_id = B(alloc);
	if (type != NULL)
		r.plugin_type = B(type);
	if (plugin != NULL)
		r.plugin_id = B(plugin);
	env.body_case = BERTH__ENVELOPE__BODY_CLEANUP_ALLOC;
	env.cleanup_alloc = &r;
	return mc_call(c, &env, NULL, NULL);
}

void
mc_publish(struct mclient *c, const char *type, const char *plugin,
    const char *alloc, const char *vol)
{
	char rel[512];

	ck_assert_int_eq(mc_prepare_plugin(c, type, plugin, alloc), 0);
	ck_assert_int_eq(mc_prepare_volume(c, false, type, plugin, alloc, vol,
	    NULL), 0);
	snprintf(rel, sizeof(rel), "csi/%s/%s/per-alloc/%s/%s/" MC_USAGE, type,
	    plugin, alloc, vol);
	/* What the plugin's NodePublishVolume would do. */
	ck_assert_int_eq(mkdir(mc_path(c, rel), 0755), 0);
	ck_assert_msg(mount("tmpfs", mc_path(c, rel), "tmpfs", 0, "size=1m") ==
	    0, "mount tmpfs: %s", strerror(errno));
}

/* Undo mc_publish's mounts: the publish target and the plugin root. */
void
mc_unpublish(struct mclient *c, const char *type, const char *plugin,
    const char *alloc, const char *vol)
{
	char rel[512];

	snprintf(rel, sizeof(rel), "csi/%s/%s/per-alloc/%s/%s/" MC_USAGE, type,
	    plugin, alloc, vol);
	umount2(mc_path(c, rel), MNT_DETACH);
	mc_release_plugin(c, type, plugin);
}

void
mc_release_plugin(struct mclient *c, const char *type, const char *plugin)
{
	char rel[512];

	snprintf(rel, sizeof(rel), "csi/%s/%s", type, plugin);
	while (is_mountpoint(mc_path(c, rel)))
		umount2(mc_path(c, rel), MNT_DETACH);
}

/*
 * Plugins outlive the mounter, and check ends a failed test with _exit():
 * each handle a test is given goes to a file, and the runner's teardown
 * kills what still runs, pinned by pidfd and only if its start time
 * still matches (so a reused pid is never hit).
 */
static char track_path[64];

void
mc_track_init(void)
{
	snprintf(track_path, sizeof(track_path), "/tmp/berth-test-tracked-%ld",
	    (long)getpid());
	unlink(track_path);
}

static void
track(const Berth__PluginHandle *h)
{
	FILE *f;

	if (track_path[0] == '\0' || (f = fopen(track_path, "a")) == NULL)
		return;
	fprintf(f, "%u %llu\n", h->pid, (unsigned long long)h->start_time);
	fclose(f);
}

void
mc_track_cleanup(void)
{
	unsigned long long start;
	unsigned pid;
	FILE *f;
	int fd;

	if (track_path[0] == '\0' || (f = fopen(track_path, "r")) == NULL)
		return;
	while (fscanf(f, "%u %llu", &pid, &start) == 2) {
		if ((fd = pidfd_open((pid_t)pid, 0)) < 0)
			continue;
		if (mc_start_time((pid_t)pid) == start)
			pidfd_send_signal(fd, SIGKILL, NULL, 0);
		close(fd);
	}
	fclose(f);
	unlink(track_path);
}

uint64_t
mc_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	size_t n;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	if ((p = strrchr(buf, ')')) == NULL)
		return 0;
	for (i = 0; i < 20 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}

int
mc_start_plugin(struct mclient *c, const char *def, const char *type,
    const char *plugin, const char *alloc, Berth__PluginHandle *h, int *pidfd)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *rep;
	Berth__StartPlugin r = BERTH__START_PLUGIN__INIT;
	int code;

	r.definition = B(def);
	r.plugin_type = B(type);
	r.plugin_id = B(plugin);
	r.alloc_id = B(alloc);
	env.body_case = BERTH__ENVELOPE__BODY_START_PLUGIN;
	env.start_plugin = &r;
	code = mc_call(c, &env, pidfd, &rep);
	if (code == 0) {
		*h = *rep->plugin_started->handle;
		track(h);
	}
	berth__envelope__free_unpacked(rep, NULL);
	return code;
}

int
mc_adopt(struct mclient *c, Berth__PluginHandle *h, int *pidfd)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__AdoptPlugin r = BERTH__ADOPT_PLUGIN__INIT;

	r.handle = h;
	env.body_case = BERTH__ENVELOPE__BODY_ADOPT_PLUGIN;
	env.adopt_plugin = &r;
	return mc_call(c, &env, pidfd, NULL);
}

int
mc_signal(struct mclient *c, const Berth__PluginHandle *h, int sig)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__SignalPlugin r = BERTH__SIGNAL_PLUGIN__INIT;

	r.handle = (Berth__PluginHandle *)h;
	r.signal = sig;
	env.body_case = BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN;
	env.signal_plugin = &r;
	return mc_call(c, &env, NULL, NULL);
}

/* Mount table lines without their ids, one per line. */
char *
mounts_snapshot(void)
{
	char *buf = calloc(1, 1 << 20);
	FILE *f = fopen("/proc/self/mountinfo", "r");
	size_t n;

	/* Each line starts after a newline, so "\n<id> " finds a mount. */
	buf[0] = '\n';
	n = fread(buf + 1, 1, (1 << 20) - 2, f);
	buf[n + 1] = '\0';
	fclose(f);
	return buf;
}

/* Compare by mount point and source (fields 5 and 10 on). */
bool
mounts_added(const char *before, char *what, size_t n)
{
	char *now = mounts_snapshot(), *line, *save = NULL, key[1024];
	bool added = false;
	unsigned a, b;
	char mp[512];

	for (line = strtok_r(now, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%u %u %*s %*s %511s", &a, &b, mp) != 3)
			continue;
		snprintf(key, sizeof(key), "\n%u %u ", a, b);
		if (strstr(before, key) == NULL) {
			snprintf(what, n, "%s", line);
			added = true;
			break;
		}
	}
	free(now);
	return added;
}

static char *host_mounts;

void
mc_host_mounts_before(void)
{
	host_mounts = mounts_snapshot();
}

int
mc_host_mounts_gained(void)
{
	char what[1024];
	bool added = mounts_added(host_mounts, what, sizeof(what));

	if (added)
		printf("the host's mount table gained: %s\n", what);
	free(host_mounts);
	host_mounts = NULL;
	return added ? 1 : 0;
}

bool
is_mountpoint(const char *path)
{
	struct statx stx;

	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) < 0)
		return false;
	return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}
