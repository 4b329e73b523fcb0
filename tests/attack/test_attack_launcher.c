/*
 * test_attack_launcher.c: attacks on how berth-mounter starts privileged
 * plugins and answers its peer, each against the real binary, as root in
 * private mount (and, for the hostname, UTS) namespaces:
 *
 * - a compromised supervisor plants a FIFO (with and without a reader)
 *   or a symlink to root's file where a plugin's log writer (berth's
 *   user) writes: the plugin starts at once, nothing blocks, the FIFO's
 *   reader and root's file get nothing; a symlink from the writer's
 *   directory to root's socket directory: the writer cannot write there
 *   and the plugin is refused, at once;
 * - a compromised privileged plugin sets the hostname and tries to setns
 *   into the host's UTS namespace: the host's hostname is unchanged (and
 *   it is changed when root's definition says "hostns uts", which shows
 *   the test can see it);
 * - a compromised supervisor floods requests without reading a reply:
 *   every request is answered exactly once, the start of a plugin in the
 *   middle of the flood included.
 *
 * The suite ends with "N attacks tried, M succeeded".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "mclient.h"

#define T "hostpath"
#define P "hp"
#define A "alloc-1"
#define PERM BERTH__ERROR_CODE__ERROR_PERMISSION

static struct mclient c;
static char *before, *plugins;

/*
 * check ends a failed test with _exit(), before mc_stop() removes its
 * directories: each test notes them in a file of the runner's, whose
 * teardown (which runs in the runner) removes what is still there.
 */
static void
note_dirs(void)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/berth-test-launcher-%ld",
	    (long)getppid());
	if ((f = fopen(path, "a")) == NULL)
		return;
	fprintf(f, "%s\n%s\n%s\n", c.data, c.run, plugins);
	fclose(f);
}

static void
remove_noted(void)
{
	char path[64], dir[512];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/berth-test-launcher-%ld",
	    (long)getpid());
	if ((f = fopen(path, "r")) == NULL)
		return;
	while (fgets(dir, sizeof(dir), f) != NULL) {
		dir[strcspn(dir, "\n")] = '\0';
		if (strncmp(dir, "/tmp/berth-test-", 16) == 0 &&
		    access(dir, F_OK) == 0)
			harness_rmtree(dir);
	}
	fclose(f);
	unlink(path);
}

static void
fixture_init(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/berth-test-launcher-%ld",
	    (long)getpid());
	unlink(path);
	mc_track_init();
}

static void
fixture_cleanup(void)
{
	mc_track_cleanup();
	remove_noted();
}

/* A plugin definition "csi" for confined_plugin, with extra lines. */
static void
define(const char *extra)
{
	char path[512], text[4096];

	snprintf(path, sizeof(path), "%s/csi.conf", plugins);
	snprintf(text, sizeof(text), "exec %s\ncap CAP_SYS_ADMIN\n%s",
	    harness_bin("tests/confined_plugin"), extra);
	harness_write(path, text);
	ck_assert_int_eq(chmod(path, 0644), 0);
}

static void
setup(void)
{
	harness_private_mounts();
	before = mounts_snapshot();
	plugins = harness_tmpdir("plugins");
	define("");
	mc_start(&c, plugins);
	note_dirs();
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
}

static int
ping(void)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping p = BERTH__PING__INIT;

	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &p;
	return mc_call(&c, &env, NULL, NULL);
}

/* The mounter still answers and nothing is left mounted. */
static void
teardown(void)
{
	char what[1024];

	ck_assert_int_eq(ping(), 0);
	ck_assert_int_eq(mc_cleanup_plugin(&c, A, T, P), 0);
	mc_release_plugin(&c, T, P);
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	free(before);
	mc_stop(&c);
	harness_rmtree(plugins);
	free(plugins);
}

/* Keep its stderr pipe from filling up, which would block it. */
static void
drain_log(void)
{
	if (c.proc.loglen > sizeof(c.proc.log) / 2)
		c.proc.loglen = 0;
	proc_drain(&c.proc);
}

/* Wait up to ms for events on the raw socket, draining its log. */
static bool
wait_raw(short events, int ms)
{
	struct pollfd pfd = { c.raw, events, 0 };

	for (; ms > 0; ms -= 50) {
		drain_log();
		if (poll(&pfd, 1, 50) == 1)
			return true;
	}
	return false;
}

static long
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) /
	    1000000;
}

/* Start "csi"; kill it at once if it started. Refusals must be quick. */
static int
start_quickly(void)
{
	Berth__PluginHandle h;
	struct timespec t0;
	int pidfd = -1, code;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	code = mc_start_plugin(&c, "csi", T, P, A, &h, &pidfd);
	ck_assert_msg(ms_since(&t0) < 3000, "StartPlugin took %ld ms",
	    ms_since(&t0));
	if (code == 0) {
		ck_assert_int_eq(mc_signal(&c, &h,
		    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), 0);
		ck_assert(pid_wait_gone((pid_t)h.pid, 3000));
		close(pidfd);
		mc_wait(&c, 100);	/* its PluginExited notice */
	}
	return code;
}

/* path's size and mode, or -1 when it is not there. */
static long long
size_mode(const char *path, mode_t *mode)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -1;
	*mode = st.st_mode;
	return st.st_size;
}

/* Made by berth's user, who owns logs/ (mclient.c), as it could. */
static void
plant(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(mc_path(&c, "logs"), &st), 0);
	ck_assert_int_eq(lchown(path, st.st_uid, st.st_gid), 0);
}

START_TEST(fifo_symlink_or_root_dir_where_a_plugin_logs)
{
	char dir[700], log[1024], victim[1024], sockdir[700];
	mode_t mode;
	int reader;

	setup();
	/* What berth's user can plant where the writer, as berth's user,
	 * writes: logs/+live/<alloc>/<definition>/. */
	snprintf(dir, sizeof(dir), "%s", mc_path(&c, "logs/+live/" A "/csi"));
	ck_assert_int_eq(mkdir(mc_path(&c, "logs/+live"), 0750), 0);
	plant(mc_path(&c, "logs/+live"));
	ck_assert_int_eq(mkdir(mc_path(&c, "logs/+live/" A), 0750), 0);
	plant(mc_path(&c, "logs/+live/" A));
	ck_assert_int_eq(mkdir(dir, 0750), 0);
	plant(dir);
	snprintf(log, sizeof(log), "%s/stdout.log", dir);
	/* A FIFO nobody reads: the writer's open() would block for ever. */
	ck_assert_int_eq(mkfifo(log, 0666), 0);
	plant(log);
	ck_assert_int_eq(start_quickly(), 0);
	ck_assert_int_eq(ping(), 0);
	/* A FIFO with a reader: it opens, is no file, and gets nothing. */
	ck_assert_int_ge(reader = open(log, O_RDONLY | O_NONBLOCK), 0);
	ck_assert_int_eq(start_quickly(), 0);
	ck_assert_int_le(read(reader, victim, 1), 0);
	close(reader);
	unlink(log);
	/* A symlink to root's file: not followed, and not berth's to write. */
	snprintf(victim, sizeof(victim), "%s", mc_path(&c, "victim"));
	harness_write(victim, "");
	ck_assert_int_eq(chmod(victim, 0600), 0);
	ck_assert_int_eq(symlink(victim, log), 0);
	plant(log);
	ck_assert_int_eq(start_quickly(), 0);
	ck_assert_int_eq(size_mode(victim, &mode), 0);
	unlink(log);
	/* The directory a symlink to root's socket directory: the writer,
	 * as berth's user, cannot write there; the plugin is not started. */
	harness_rmtree(dir);
	snprintf(sockdir, sizeof(sockdir), "%s", mc_path(&c, "csi/plugins/"
	    A));
	ck_assert_int_eq(symlink(sockdir, dir), 0);
	plant(dir);
	ck_assert_int_ne(start_quickly(), 0);
	ck_assert_int_eq(ping(), 0);
	snprintf(log, sizeof(log), "%s/stdout.log", sockdir);
	ck_assert_int_eq(size_mode(log, &mode), -1);
	unlink(dir);
	/* Nothing planted: the writer makes a regular file of berth's. */
	ck_assert_int_eq(start_quickly(), 0);
	snprintf(log, sizeof(log), "%s/stdout.log", dir);
	ck_assert_int_ge(size_mode(log, &mode), 0);
	ck_assert(S_ISREG(mode));
	unlink(victim);
	teardown();
}
END_TEST

static void
hostname_is(const char *want)
{
	char name[256] = "";

	ck_assert_int_eq(gethostname(name, sizeof(name)), 0);
	ck_assert_msg(strcmp(name, want) == 0, "the host's hostname is %s, "
	    "not %s", name, want);
}

static bool
same_ns(pid_t pid, const char *ns)
{
	char a[64], b[64];
	struct stat sa, sb;

	snprintf(a, sizeof(a), "/proc/%d/ns/%s", (int)pid, ns);
	snprintf(b, sizeof(b), "/proc/self/ns/%s", ns);
	ck_assert_int_eq(stat(a, &sa), 0);
	ck_assert_int_eq(stat(b, &sb), 0);
	return sa.st_ino == sb.st_ino;
}

/* The launcher: the mounter's child named berth-launcher. */
static pid_t
launcher_pid(void)
{
	char path[128], comm[64];
	pid_t pid = 0;
	FILE *f, *g;
	int p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children",
	    (int)c.proc.pid, (int)c.proc.pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while (pid == 0 && fscanf(f, "%d", &p) == 1) {
		snprintf(path, sizeof(path), "/proc/%d/comm", p);
		if ((g = fopen(path, "r")) == NULL)
			continue;
		if (fgets(comm, sizeof(comm), g) != NULL &&
		    strcmp(comm, "berth-launcher\n") == 0)
			pid = p;
		fclose(g);
	}
	fclose(f);
	ck_assert_int_gt(pid, 0);
	return pid;
}

/* Start "csi", wait until it listens; its pid. */
static pid_t
start_and_wait(Berth__PluginHandle *h, int *pidfd)
{
	const char *sock = mc_path(&c, "csi/plugins/" A "/csi.sock");
	int i;

	ck_assert_int_eq(mc_start_plugin(&c, "csi", T, P, A, h, pidfd), 0);
	for (i = 0; i < 500 && access(sock, F_OK) < 0; i++)
		usleep(10000);
	ck_assert_msg(access(sock, F_OK) == 0, "the plugin never listened");
	return (pid_t)h->pid;
}

static void
stop(Berth__PluginHandle *h, int pidfd)
{
	ck_assert_int_eq(mc_signal(&c, h,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), 0);
	ck_assert(pid_wait_gone((pid_t)h->pid, 3000));
	close(pidfd);
	unlink(mc_path(&c, "csi/plugins/" A "/csi.sock"));
}

START_TEST(confined_plugin_sets_the_hostname_or_enters_the_hosts)
{
	Berth__PluginHandle h;
	char nsfile[256], extra[512], buf[64];
	int pidfd;
	pid_t pid;

	/* The "host" is this test's own UTS namespace: the real one is safe. */
	ck_assert_int_eq(unshare(CLONE_NEWUTS), 0);
	ck_assert_int_eq(sethostname("berth-host", 10), 0);
	setup();
	/* A handle on the host's UTS namespace that a plugin can open. */
	snprintf(nsfile, sizeof(nsfile), "%s/uts", plugins);
	harness_write(nsfile, "");
	ck_assert_int_eq(mount("/proc/self/ns/uts", nsfile, NULL, MS_BIND,
	    NULL), 0);
	snprintf(extra, sizeof(extra), "arg --sethostname=berth-plugin\n"
	    "arg --enter=%s\narg --sethostname=berth-entered\n", nsfile);
	define(extra);
	pid = start_and_wait(&h, &pidfd);
	hostname_is("berth-host");
	ck_assert_msg(!same_ns(pid, "uts") && !same_ns(pid, "ipc") &&
	    !same_ns(pid, "cgroup"), "the plugin shares a namespace with the "
	    "host");
	/* The plugin and the launcher run under the plugin filter. */
	ck_assert_str_eq(proc_status_field(pid, "Seccomp", buf, sizeof(buf)),
	    "2");
	ck_assert_str_eq(proc_status_field(launcher_pid(), "Seccomp", buf,
	    sizeof(buf)), "2");
	stop(&h, pidfd);
	/* Root's decision: the host's UTS namespace, and then it can. */
	define("arg --sethostname=berth-plugin\nhostns uts\n");
	pid = start_and_wait(&h, &pidfd);
	ck_assert(same_ns(pid, "uts") && !same_ns(pid, "ipc"));
	hostname_is("berth-plugin");
	stop(&h, pidfd);
	ck_assert_int_eq(umount2(nsfile, MNT_DETACH), 0);
	teardown();
}
END_TEST

#define FLOOD 12000
#define FLOOD_ID0 (1ULL << 40)
#define START_AT 1500

/* Request i of the flood: pings and refused signals; one StartPlugin. */
static size_t
flood_request(uint8_t *buf, uint64_t i)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping ping = BERTH__PING__INIT;
	Berth__SignalPlugin sg = BERTH__SIGNAL_PLUGIN__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;
	Berth__StartPlugin sp = BERTH__START_PLUGIN__INIT;

	env.version = BERTH_PROTOCOL_VERSION;
	env.kind = BERTH__KIND__KIND_REQUEST;
	env.request_id = FLOOD_ID0 + i;
	if (i == START_AT) {
		sp.definition = B("sleep");
		sp.plugin_type = B(T);
		sp.plugin_id = B(P);
		sp.alloc_id = B(A);
		env.body_case = BERTH__ENVELOPE__BODY_START_PLUGIN;
		env.start_plugin = &sp;
	} else if (i % 2) {
		h.pid = 2;
		h.start_time = i;
		sg.handle = &h;
		sg.signal = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM;
		env.body_case = BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN;
		env.signal_plugin = &sg;
	} else {
		ping.nonce = i;
		env.body_case = BERTH__ENVELOPE__BODY_PING;
		env.ping = &ping;
	}
	return berth__envelope__pack(&env, buf);
}

/* One reply from the raw socket; its descriptor, if any, in *fd. */
static Berth__Envelope *
flood_reply(int *fd)
{
	static uint8_t in[BERTH_IPC_MAX];
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { in, sizeof(in) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cm.space, .msg_controllen = sizeof(cm.space) };
	ssize_t n;

	*fd = -1;
	if (!wait_raw(POLLIN, 5000))
		return NULL;
	ck_assert_int_gt(n = recvmsg(c.raw, &mh, MSG_CMSG_CLOEXEC), 0);
	if (CMSG_FIRSTHDR(&mh) != NULL &&
	    CMSG_FIRSTHDR(&mh)->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	return berth__envelope__unpack(NULL, (size_t)n, in);
}

START_TEST(flood_without_reading_a_reply)
{
	static unsigned char seen[FLOOD];
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;
	Berth__Envelope *rep;
	char path[512], text[256];
	uint8_t buf[1024];
	uint64_t i, sent = 0, got = 0, id;
	size_t n;
	int fd, pidfd = -1;

	setup();
	/* A plugin that ends by itself in 5 s, even if this test fails. */
	snprintf(path, sizeof(path), "%s/sleep.conf", plugins);
	snprintf(text, sizeof(text), "exec /usr/bin/sleep\narg 5\n");
	harness_write(path, text);
	/* Send until the mounter stops reading for a second, reading none. */
	while (sent < FLOOD) {
		n = flood_request(buf, sent);
		if (send(c.raw, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) ==
		    (ssize_t)n) {
			sent++;
			continue;
		}
		ck_assert_msg(errno == EAGAIN, "send: %s", strerror(errno));
		if (!wait_raw(POLLOUT, 1000))
			break;
	}
	fprintf(stderr, "flood: %llu requests sent before the mounter "
	    "stopped reading\n", (unsigned long long)sent);
	ck_assert_int_gt(sent, START_AT);
	/* Then read: each request answered exactly once. */
	while (got < sent && (rep = flood_reply(&fd)) != NULL) {
		if (rep->kind == BERTH__KIND__KIND_NOTICE) {
			/* The sleeping plugin's end, if it came already. */
			if (fd >= 0)
				close(fd);
			berth__envelope__free_unpacked(rep, NULL);
			continue;
		}
		id = rep->request_id - FLOOD_ID0;
		ck_assert_msg(rep->request_id >= FLOOD_ID0 && id < sent,
		    "a reply to request %llu, never sent",
		    (unsigned long long)rep->request_id);
		ck_assert_msg(!seen[id]++, "request %llu answered twice",
		    (unsigned long long)id);
		if (id == START_AT) {
			ck_assert_msg(rep->error == NULL && rep->body_case ==
			    BERTH__ENVELOPE__BODY_PLUGIN_STARTED && fd >= 0,
			    "the start in the flood did not answer a handle");
			h.pid = rep->plugin_started->handle->pid;
			h.start_time = rep->plugin_started->handle->start_time;
			pidfd = fd;
		} else if (fd >= 0)
			close(fd);
		berth__envelope__free_unpacked(rep, NULL);
		got++;
	}
	for (i = 0; i < sent; i++)
		ck_assert_msg(seen[i] == 1, "request %llu of %llu was never "
		    "answered (%llu answers)", (unsigned long long)i,
		    (unsigned long long)sent, (unsigned long long)got);
	/* The plugin whose handle came back is the mounter's to stop. */
	ck_assert_int_ge(pidfd, 0);
	ck_assert_int_eq(mc_signal(&c, &h,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), 0);
	ck_assert(pid_wait_gone((pid_t)h.pid, 3000));
	close(pidfd);
	teardown();
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("attack_launcher");

	mc_host_mounts_before();
	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, fixture_init, fixture_cleanup);
	tcase_add_test(tc, fifo_symlink_or_root_dir_where_a_plugin_logs);
	tcase_add_test(tc, confined_plugin_sets_the_hostname_or_enters_the_hosts);
	tcase_add_test(tc, flood_without_reading_a_reply);
	return harness_run_attacks("attack_launcher", tc, mc_host_mounts_gained);
}
