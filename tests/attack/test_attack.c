/*
 * test_attack.c: the attack suite. Each test is one attack on the real
 * berth-mounter, as root in a private mount namespace, by a compromised
 * supervisor, plugin or task. Each ends by checking that the mounter is
 * still serving and that the mount table holds nothing new; the suite
 * ends with "N attacks tried, M succeeded" (any failed test is an attack
 * that succeeded).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "mclient.h"

#define T "hostpath"
#define P "hp"
#define A "alloc-1"
#define PERM BERTH__ERROR_CODE__ERROR_PERMISSION
#define BAD BERTH__ERROR_CODE__ERROR_BAD_REQUEST

static struct mclient c;
static char *before, *outside;

static void
setup(const char *plugins)
{
	harness_private_mounts();
	before = mounts_snapshot();
	outside = harness_tmpdir("outside");
	mc_start(&c, plugins);
}

/* The mounter still answers, outside is untouched, nothing is left. */
static void
teardown(void)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping ping = BERTH__PING__INIT;
	char what[1024];

	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), 0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	mc_release_plugin(&c, T, P);
	ck_assert_msg(!is_mountpoint(outside), "outside was mounted on");
	ck_assert_msg(rmdir(outside) == 0, "something was made in %s: %s",
	    outside, strerror(errno));
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	free(before);
	free(outside);
	mc_stop(&c);
}

static void
plant(const char *rel)
{
	const char *p = mc_path(&c, rel);
	char dir[1024];

	snprintf(dir, sizeof(dir), "%s", p);
	*strrchr(dir, '/') = '\0';
	for (char *s = dir + strlen(c.data) + 1; (s = strchr(s, '/')) != NULL;
	    s++) {
		*s = '\0';
		mkdir(dir, 0755);
		*s = '/';
	}
	mkdir(dir, 0755);
	ck_assert_msg(symlink(outside, p) == 0, "symlink %s: %s", p,
	    strerror(errno));
}

START_TEST(symlink_at_publish_target)
{
	setup(NULL);
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
	plant("csi/" T "/" P "/per-alloc/" A "/vol1/" MC_USAGE);
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, "vol1", NULL),
	    PERM);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false),
	    PERM);
	ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A "/web/volumes/data")));
	unlink(mc_path(&c, "csi/" T "/" P "/per-alloc/" A "/vol1/" MC_USAGE));
	teardown();
}
END_TEST

START_TEST(symlink_at_staging_directory)
{
	setup(NULL);
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
	/* An older berth's per-usage staging path. */
	plant("csi/" T "/" P "/staging/default/vol1/" MC_USAGE);
	ck_assert_int_eq(mc_prepare_old_staging(&c, T, P, "default", "vol1"),
	    PERM);
	unlink(mc_path(&c, "csi/" T "/" P "/staging/default/vol1/" MC_USAGE));
	/* One level up: the volume's one staging path. */
	rmdir(mc_path(&c, "csi/" T "/" P "/staging/default/vol1"));
	plant("csi/" T "/" P "/staging/default/vol1");
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol1",
	    NULL), PERM);
	unlink(mc_path(&c, "csi/" T "/" P "/staging/default/vol1"));
	teardown();
}
END_TEST

START_TEST(symlink_at_task_volumes_directory)
{
	setup(NULL);
	mc_publish(&c, T, P, A, "vol1");
	plant("allocs/" A "/web/volumes");
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false),
	    PERM);
	ck_assert_int_eq(mc_unbind(&c, A, "web", "data"), PERM);
	unlink(mc_path(&c, "allocs/" A "/web/volumes"));
	/* And at the volume's own name. */
	plant("allocs/" A "/web/volumes/data");
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false),
	    PERM);
	unlink(mc_path(&c, "allocs/" A "/web/volumes/data"));
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
}
END_TEST

static volatile int racing;

static void *
swapper(void *arg)
{
	char real[1024], moved[1100];

	(void)arg;
	snprintf(real, sizeof(real), "%s", mc_path(&c, "allocs/" A "/web"));
	snprintf(moved, sizeof(moved), "%s.real", real);
	while (racing) {
		if (rename(real, moved) == 0) {
			symlink(outside, real);
			sched_yield();
			unlink(real);
			rename(moved, real);
		}
		sched_yield();
	}
	return NULL;
}

START_TEST(directory_swapped_for_symlink_during_binds)
{
	pthread_t th;
	char name[32];
	int i, ok = 0, refused = 0;

	setup(NULL);
	mc_publish(&c, T, P, A, "vol1");
	mkdir(mc_path(&c, "allocs"), 0755);
	mkdir(mc_path(&c, "allocs/" A), 0755);
	mkdir(mc_path(&c, "allocs/" A "/web"), 0755);
	racing = 1;
	pthread_create(&th, NULL, swapper, NULL);
	for (i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "v%d", i);
		if (mc_bind(&c, T, P, A, "vol1", "web", name, false) == 0)
			ok++;
		else
			refused++;
	}
	racing = 0;
	pthread_join(th, NULL);
	fprintf(stderr, "race: %d binds landed inside, %d refused\n", ok,
	    refused);
	ck_assert_int_gt(ok + refused, 0);
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
}
END_TEST

START_TEST(identifiers_dotdot_slash_nul_empty_overlong_nonascii)
{
	static const char long_id[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxx";	/* 131 bytes */
	static const ProtobufCBinaryData bad[] = {
		{ 2, (uint8_t *)".." }, { 1, (uint8_t *)"." },
		{ 5, (uint8_t *)"../.." }, { 3, (uint8_t *)"a/b" },
		{ 4, (uint8_t *)"/etc" }, { 7, (uint8_t *)"ab\0../x" },
		{ 1, (uint8_t *)"\0" }, { 0, NULL },
		{ sizeof(long_id) - 1, (uint8_t *)long_id },
		{ 5, (uint8_t *)"caf\xc3\xa9" }, { 3, (uint8_t *)"a b" },
		{ 2, (uint8_t *)"a\n" }, { 1, (uint8_t *)"*" },
	};
	Berth__VolumeUsage u = BERTH__VOLUME_USAGE__INIT;
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__BindVolume b = BERTH__BIND_VOLUME__INIT;
	ProtobufCBinaryData *fields[] = { &b.plugin_type, &b.plugin_id,
		&b.alloc_id, &b.volume_id, &b.task, &b.name };
	size_t i, f;

	setup(NULL);
	mc_publish(&c, T, P, A, "vol1");
	u.attachment = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	u.access = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER;
	for (f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			b.plugin_type = B(T);
			b.plugin_id = B(P);
			b.alloc_id = B(A);
			b.volume_id = B("vol1");
			b.task = B("web");
			b.name = B("data");
			b.usage = &u;
			*fields[f] = bad[i];
			env.body_case = BERTH__ENVELOPE__BODY_BIND_VOLUME;
			env.bind_volume = &b;
			ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), BAD);
		}
	}
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", 0, 0), BAD);
	ck_assert_int_eq(mc_prepare_task(&c, A, "..", 1000, 1000), BAD);
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", 1000, 0xffffffff), BAD);
	/* "plugins" is the socket tree, never a plugin type. */
	ck_assert_int_eq(mc_prepare_plugin(&c, "plugins", P, A), BAD);
	ck_assert_int_eq(mc_unbind(&c, A, "..", "data"), BAD);
	ck_assert_int_eq(mc_cleanup(&c, ".."), BAD);
	ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A "/web/volumes/data")));
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
}
END_TEST

START_TEST(unknown_enum_values)
{
	Berth__VolumeUsage u = BERTH__VOLUME_USAGE__INIT;
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PrepareVolume pv = BERTH__PREPARE_VOLUME__INIT;
	Berth__PluginHandle h = { PROTOBUF_C_MESSAGE_INIT(
	    &berth__plugin_handle__descriptor), (uint32_t)getpid(), 1 };

	setup(NULL);
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
	pv.plugin_type = B(T);
	pv.plugin_id = B(P);
	pv.alloc_id = B(A);
	pv.volume_id = B("vol1");
	pv.usage = &u;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_VOLUME;
	env.prepare_volume = &pv;
	pv.dir = 7;
	u.attachment = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	u.access = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), BAD);
	pv.dir = BERTH__VOLUME_DIR__VOLUME_DIR_PUBLISH;
	u.attachment = 3;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), BAD);
	u.attachment = -1;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), BAD);
	u.attachment = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	u.access = 99;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), BAD);
	u.access = 0;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), BAD);
	ck_assert_int_eq(mc_signal(&c, &h, 42), BAD);
	ck_assert_int_eq(mc_signal(&c, &h, -3), BAD);
	teardown();
}
END_TEST

/* Send bytes as they are, with an optional descriptor; read the answer. */
static Berth__Envelope *
raw(const void *buf, size_t len, int fd)
{
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(sizeof(int))];
	} cm = { 0 };
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct pollfd pfd = { c.raw, POLLIN, 0 };
	static uint8_t in[BERTH_IPC_MAX];
	ssize_t n;

	if (fd >= 0) {
		mh.msg_control = cm.space;
		mh.msg_controllen = sizeof(cm.space);
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &fd, sizeof(int));
	}
	ck_assert_int_ge(sendmsg(c.raw, &mh, MSG_NOSIGNAL), 0);
	if (poll(&pfd, 1, 5000) != 1)
		return NULL;
	n = recv(c.raw, in, sizeof(in), 0);
	ck_assert_int_gt(n, 0);
	return berth__envelope__unpack(NULL, (size_t)n, in);
}

static size_t
packed_bind(uint8_t *buf, uint64_t id)
{
	Berth__VolumeUsage u = BERTH__VOLUME_USAGE__INIT;
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__BindVolume b = BERTH__BIND_VOLUME__INIT;

	u.attachment = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	u.access = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER;
	b.plugin_type = B(T);
	b.plugin_id = B(P);
	b.alloc_id = B(A);
	b.volume_id = B("vol1");
	b.task = B("web");
	b.name = B("data");
	b.usage = &u;
	env.version = BERTH_PROTOCOL_VERSION;
	env.kind = BERTH__KIND__KIND_REQUEST;
	env.request_id = id;
	env.body_case = BERTH__ENVELOPE__BODY_BIND_VOLUME;
	env.bind_volume = &b;
	return berth__envelope__pack(&env, buf);
}

static void
expect_error(Berth__Envelope *rep, int code)
{
	ck_assert_ptr_nonnull(rep);
	ck_assert_ptr_nonnull(rep->error);
	ck_assert_int_eq(rep->error->code, code);
	berth__envelope__free_unpacked(rep, NULL);
}

START_TEST(stray_and_unknown_fields)
{
	Berth__VolumeUsage u = BERTH__VOLUME_USAGE__INIT;
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PrepareVolume pv = BERTH__PREPARE_VOLUME__INIT;
	uint8_t buf[1024];
	size_t n;

	setup(NULL);
	mc_publish(&c, T, P, A, "vol1");
	u.attachment = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	u.access = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER;
	pv.dir = BERTH__VOLUME_DIR__VOLUME_DIR_PUBLISH;
	pv.plugin_type = B(T);
	pv.plugin_id = B(P);
	pv.alloc_id = B(A);
	pv.volume_ns = B("default");	/* staging only */
	pv.volume_id = B("vol1");
	pv.usage = &u;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_VOLUME;
	env.prepare_volume = &pv;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), BAD);
	pv.volume_ns = B("");
	pv.usage = NULL;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), BAD);
	/* A valid bind with field 99 (varint 1) appended to the envelope. */
	n = packed_bind(buf, 77);
	buf[n++] = 0x98;
	buf[n++] = 0x06;
	buf[n++] = 0x01;
	expect_error(raw(buf, n, -1), BAD);
	/* A reply body sent as a request: not served. */
	{
		Berth__PluginStarted ps = BERTH__PLUGIN_STARTED__INIT;

		env.body_case = BERTH__ENVELOPE__BODY_PLUGIN_STARTED;
		env.plugin_started = &ps;
		ck_assert_int_eq(mc_call(&c, &env, NULL, NULL),
		    BERTH__ERROR_CODE__ERROR_UNSUPPORTED);
	}
	ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A "/web/volumes/data")));
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
}
END_TEST

START_TEST(signal_and_adopt_a_pid_not_started)
{
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;
	int pidfd = -1;
	pid_t victim;

	setup(NULL);
	if ((victim = fork()) == 0) {
		pause();
		_exit(0);
	}
	h.pid = (uint32_t)victim;
	h.start_time = mc_start_time(victim);
	ck_assert_int_eq(mc_signal(&c, &h,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), PERM);
	ck_assert_int_eq(mc_adopt(&c, &h, &pidfd), PERM);
	ck_assert_int_eq(pidfd, -1);
	h.pid = (uint32_t)getpid();
	h.start_time = mc_start_time(getpid());
	ck_assert_int_eq(mc_signal(&c, &h,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM), PERM);
	h.pid = 1;
	ck_assert_int_eq(mc_signal(&c, &h,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), BAD);
	ck_assert(pid_alive(victim));
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	teardown();
}
END_TEST

static char *
plugin_dir(const char *extra)
{
	char *dir = harness_tmpdir("plugins"), path[512], text[2048];

	snprintf(path, sizeof(path), "%s/csi.conf", dir);
	snprintf(text, sizeof(text), "exec %s\n%scap CAP_SYS_ADMIN\n",
	    harness_bin("tests/confined_plugin"), extra);
	harness_write(path, text);
	chmod(path, 0644);
	return dir;
}

static int
try_start(void)
{
	Berth__PluginHandle h;
	int pidfd = -1, code;

	code = mc_start_plugin(&c, "csi", T, P, A, &h, &pidfd);
	if (code == 0) {
		kill((pid_t)h.pid, SIGKILL);
		close(pidfd);
	}
	return code;
}

START_TEST(plugin_definition_world_writable_or_not_root_owned)
{
	char *dir = plugin_dir(""), file[512], link[512];

	snprintf(file, sizeof(file), "%s/csi.conf", dir);
	setup(dir);
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
	chmod(file, 0666);
	ck_assert_int_eq(try_start(), PERM);
	chmod(file, 0664);
	ck_assert_int_eq(try_start(), PERM);
	chmod(file, 0644);
	ck_assert_int_eq(chown(file, 1000, 0), 0);
	ck_assert_int_eq(try_start(), PERM);
	ck_assert_int_eq(chown(file, 0, 0), 0);
	chmod(dir, 0777);
	ck_assert_int_eq(try_start(), PERM);
	chmod(dir, 0755);
	ck_assert_int_eq(chown(dir, 1000, 1000), 0);
	ck_assert_int_eq(try_start(), PERM);
	ck_assert_int_eq(chown(dir, 0, 0), 0);
	/* A symlink in place of the definition is not followed. */
	snprintf(link, sizeof(link), "%s/other.conf", dir);
	rename(file, link);
	ck_assert_int_eq(symlink(link, file), 0);
	ck_assert_int_eq(try_start(), PERM);
	unlink(file);
	rename(link, file);
	teardown();
	harness_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(plugin_definition_asks_for_more)
{
	static const char *bad[] = {
		"cap CAP_NET_ADMIN\n", "cap CAP_SETUID\n", "exec /bin/sh\n",
		"exec bin/sh\n", "exec /usr/../bin/sh\n", "env X=1\n",
		"arg \x01\n", "arg caf\xc3\xa9\n",
	};
	char *dir = plugin_dir(""), file[512], text[1024];
	size_t i;

	snprintf(file, sizeof(file), "%s/csi.conf", dir);
	setup(dir);
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "exec %s\n%s",
		    harness_bin("tests/confined_plugin"), bad[i]);
		harness_write(file, text);
		ck_assert_int_eq(try_start(), BERTH__ERROR_CODE__ERROR_INTERNAL);
	}
	/* An executable a non-root user could rewrite. */
	snprintf(text, sizeof(text), "exec %s/csi.conf\n", dir);
	harness_write(file, text);
	ck_assert_int_eq(chmod(file, 0755), 0);
	ck_assert_int_eq(chown(file, 1000, 0), 0);
	ck_assert_int_eq(try_start(), PERM);
	teardown();
	harness_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(confined_plugin_mounts_outside_and_inside_its_root)
{
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;
	char *dir, args[2048], inside[1024], sock[1024];
	int pidfd = -1, i;

	harness_private_mounts();
	outside = harness_tmpdir("outside");
	/* mc_start makes the data dir: find it after, write the def first. */
	dir = harness_tmpdir("plugins");
	before = mounts_snapshot();
	mc_start(&c, dir);
	snprintf(inside, sizeof(inside), "%s", mc_path(&c, "csi/" T "/" P
	    "/staging/default/vol1"));
	snprintf(args, sizeof(args), "arg %s\narg %s\n", outside, inside);
	{
		char file[512], text[4096];

		snprintf(file, sizeof(file), "%s/csi.conf", dir);
		snprintf(text, sizeof(text), "exec %s\n%scap CAP_SYS_ADMIN\n",
		    harness_bin("tests/confined_plugin"), args);
		harness_write(file, text);
	}
	ck_assert_int_eq(mc_prepare_plugin(&c, T, P, A), 0);
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol1",
	    NULL), 0);
	ck_assert_int_eq(mc_start_plugin(&c, "csi", T, P, A, &h, &pidfd), 0);
	snprintf(sock, sizeof(sock), "%s", mc_path(&c, "csi/plugins/" A
	    "/csi.sock"));
	for (i = 0; i < 500 && access(sock, F_OK) < 0; i++)
		usleep(10000);
	ck_assert_msg(access(sock, F_OK) == 0, "plugin never got ready");
	ck_assert_msg(is_mountpoint(inside), "the host does not see the "
	    "plugin's mount inside its mount root");
	ck_assert_msg(!is_mountpoint(outside), "the host sees the plugin's "
	    "mount outside its mount root");
	ck_assert_int_eq(mc_signal(&c, &h,
	    BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL), 0);
	ck_assert(pid_wait_gone((pid_t)h.pid, 3000));
	close(pidfd);
	umount2(inside, MNT_DETACH);
	teardown();
	harness_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(garbage_oversized_and_truncated_datagrams)
{
	static uint8_t big[BERTH_IPC_MAX + 4096];
	uint8_t buf[1024];
	size_t n, i;

	setup(NULL);
	mc_publish(&c, T, P, A, "vol1");
	srandom(4);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)random();
	for (i = 1; i < 64; i++)
		ck_assert_int_ge(send(c.raw, buf, i * 13 % sizeof(buf) + 1, 0),
		    0);
	memset(big, 0x0a, sizeof(big));
	ck_assert_int_ge(send(c.raw, big, sizeof(big), 0), 0);
	n = packed_bind(buf, 5);
	for (i = 1; i < n; i += 7)
		ck_assert_int_ge(send(c.raw, buf, i, 0), 0);
	ck_assert_int_ge(send(c.raw, "", 0, 0), 0);
	/* Drain the error notices; the mounter must still serve. */
	usleep(200000);
	while (recv(c.raw, big, sizeof(big), MSG_DONTWAIT) > 0)
		;
	ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A "/web/volumes/data")));
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
}
END_TEST

START_TEST(descriptor_where_none_belongs)
{
	uint8_t buf[1024];
	size_t n;
	int fd;

	setup(NULL);
	mc_publish(&c, T, P, A, "vol1");
	fd = open("/", O_PATH | O_DIRECTORY);
	n = packed_bind(buf, 9);
	expect_error(raw(buf, n, fd), BERTH__ERROR_CODE__ERROR_BAD_FD);
	close(fd);
	ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A "/web/volumes/data")));
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("attack");

	mc_host_mounts_before();
	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, mc_track_init, mc_track_cleanup);
	tcase_add_test(tc, symlink_at_publish_target);
	tcase_add_test(tc, symlink_at_staging_directory);
	tcase_add_test(tc, symlink_at_task_volumes_directory);
	tcase_add_test(tc, directory_swapped_for_symlink_during_binds);
	tcase_add_test(tc, identifiers_dotdot_slash_nul_empty_overlong_nonascii);
	tcase_add_test(tc, unknown_enum_values);
	tcase_add_test(tc, stray_and_unknown_fields);
	tcase_add_test(tc, signal_and_adopt_a_pid_not_started);
	tcase_add_test(tc, plugin_definition_world_writable_or_not_root_owned);
	tcase_add_test(tc, plugin_definition_asks_for_more);
	tcase_add_test(tc, confined_plugin_mounts_outside_and_inside_its_root);
	tcase_add_test(tc, garbage_oversized_and_truncated_datagrams);
	tcase_add_test(tc, descriptor_where_none_belongs);
	return harness_run_attacks("attack", tc, mc_host_mounts_gained);
}
