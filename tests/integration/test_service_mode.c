/*
 * test_service_mode.c: berth as systemd runs it, without systemd. The
 * test plays the service manager: it binds the helpers' listening sockets
 * (as the .socket units do), starts each helper with LISTEN_FDS, starts
 * the supervisor as user berth, and owns the NOTIFY_SOCKET of each, so it
 * sees READY=1, STATUS=, WATCHDOG=1 and STOPPING=1 arrive. Then it checks
 * that a helper refuses a peer of another user.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <jansson.h>

#include "harness.h"
#include "http.h"

/* One process's notification socket and what arrived on it. */
struct notify {
	char path[256];
	int fd;
	char got[8192];
	size_t len;
};

static int
unix_socket(const char *path, int type)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	ck_assert_uint_lt(strlen(path), sizeof(sun.sun_path));
	strcpy(sun.sun_path, path);
	ck_assert_int_ge(fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0), 0);
	ck_assert_msg(bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0,
	    "bind %s: %s", path, strerror(errno));
	/* The supervisor and registry connect as their own users. */
	ck_assert_int_eq(chmod(path, 0666), 0);
	if (type == SOCK_SEQPACKET)
		ck_assert_int_eq(listen(fd, 8), 0);
	return fd;
}

static void
notify_open(struct notify *n, const char *dir, const char *name)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->path, sizeof(n->path), "%s/notify-%s", dir, name);
	n->fd = unix_socket(n->path, SOCK_DGRAM);
}

/* Read datagrams until one holds want; true if it arrived within ms. */
static bool
notify_wait(struct notify *n, const char *want, int ms)
{
	struct pollfd pfd = { .fd = n->fd, .events = POLLIN };
	char dgram[1024];
	ssize_t r;
	int waited = 0;

	while (waited < ms) {
		if (poll(&pfd, 1, 50) == 1 && (r = recv(n->fd, dgram,
		    sizeof(dgram) - 1, MSG_DONTWAIT)) > 0) {
			dgram[r] = '\0';
			/* Datagrams are kept apart by a '|' in got. */
			n->len += snprintf(n->got + n->len,
			    sizeof(n->got) - n->len, "%s|", dgram);
			if (n->len >= sizeof(n->got))
				n->len = sizeof(n->got) - 1;
			if (strstr(dgram, want) != NULL)
				return true;
			continue;
		}
		waited += 50;
	}
	return false;
}

/*
 * Start argv as the service manager would: LISTEN_FDS=1 with listen_fd as
 * descriptor 3 (LISTEN_PID must be the service's own pid, which only a
 * shell that execs knows), and our notification socket.
 */
static void
start_service(struct proc *p, char *const argv[], int listen_fd,
    const struct notify *n)
{
	char *sh[24] = { "/bin/sh", "-c",
		"LISTEN_PID=$$ exec \"$0\" \"$@\"" };
	int i;

	for (i = 0; argv[i] != NULL && i < 20; i++)
		sh[3 + i] = argv[i];
	sh[3 + i] = NULL;
	setenv("NOTIFY_SOCKET", n->path, 1);
	setenv("WATCHDOG_USEC", "200000", 1);
	if (listen_fd >= 0)
		setenv("LISTEN_FDS", "1", 1);
	proc_start(p, listen_fd >= 0 ? sh : argv, listen_fd);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("LISTEN_FDS");
}

struct svc {
	char *dir;
	char cfg[512], data[512], run[512];
	int mounter_lfd, registry_lfd;
	struct notify sv_n, m_n, r_n;
	struct proc sv, mounter, registry;
};

static void
svc_setup(struct svc *s)
{
	struct passwd *pw;
	char path[600], text[1200];

	harness_private_mounts();
	s->dir = harness_tmpdir("service");
	snprintf(s->data, sizeof(s->data), "%s/data", s->dir);
	snprintf(s->run, sizeof(s->run), "%s/run", s->dir);
	snprintf(s->cfg, sizeof(s->cfg), "%s/berth.json", s->dir);
	/* What tmpfiles.d/berth.conf makes. */
	ck_assert_int_eq(mkdir(s->data, 0755), 0);
	ck_assert_int_eq(mkdir(s->run, 0755), 0);
	ck_assert_ptr_nonnull(pw = getpwnam("berth"));
	ck_assert_int_eq(chown(s->run, pw->pw_uid, pw->pw_gid), 0);
	snprintf(path, sizeof(path), "%s/registry", s->data);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_ptr_nonnull(pw = getpwnam("berth-registry"));
	ck_assert_int_eq(chown(path, pw->pw_uid, pw->pw_gid), 0);
	snprintf(path, sizeof(path), "%s/allocs.d", s->dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	ck_assert_ptr_nonnull(pw = getpwnam("berth"));
	ck_assert_int_eq(chown(path, pw->pw_uid, pw->pw_gid), 0);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s\", \"run_dir\": "
	    "\"%s\", \"alloc_dir\": \"%s/allocs.d\", \"plugins_dir\": "
	    "\"%s/plugins.d\"}", s->data, s->run, s->dir, s->dir);
	harness_write(s->cfg, text);
	chmod(s->cfg, 0644);
	/* What the .socket units bind. */
	snprintf(path, sizeof(path), "%s/mounter.sock", s->run);
	s->mounter_lfd = unix_socket(path, SOCK_SEQPACKET);
	snprintf(path, sizeof(path), "%s/registry.sock", s->run);
	s->registry_lfd = unix_socket(path, SOCK_SEQPACKET);
	notify_open(&s->sv_n, s->dir, "supervisor");
	notify_open(&s->m_n, s->dir, "mounter");
	notify_open(&s->r_n, s->dir, "registry");
}

static void
start_registry(struct svc *s)
{
	char *argv[] = { "/usr/bin/setpriv", "--reuid=berth-registry",
		"--regid=berth-registry", "--clear-groups", "--",
		(char *)harness_bin("berth-registry"), "--data-dir", s->data,
		"--peer-user", "berth", NULL };

	start_service(&s->registry, argv, s->registry_lfd, &s->r_n);
}

static void
start_all(struct svc *s)
{
	char *margv[] = { (char *)harness_bin("berth-mounter"), "--data-dir",
		s->data, "--run-dir", s->run, "--plugins-dir", s->dir,
		"--peer-user", "berth", NULL };
	/* As the unit does: SupplementaryGroups=berth-api, api_group. */
	char *sargv[] = { "/usr/bin/setpriv", "--reuid=berth", "--regid=berth",
		"--groups=berth-api", "--",
		(char *)harness_bin("berth-supervisor"), "-c", s->cfg, NULL };

	start_registry(s);
	start_service(&s->mounter, margv, s->mounter_lfd, &s->m_n);
	start_service(&s->sv, sargv, -1, &s->sv_n);
}

static void
svc_teardown(struct svc *s)
{
	proc_kill(&s->sv);
	proc_kill(&s->mounter);
	proc_kill(&s->registry);
	close(s->mounter_lfd);
	close(s->registry_lfd);
	close(s->sv_n.fd);
	close(s->m_n.fd);
	close(s->r_n.fd);
	harness_rmtree(s->dir);
	free(s->dir);
}

/*
 * Wait until the supervisor's API answers GET /v1/health with 200; then
 * the helpers' pids as GET /v1/status reports them.
 */
static bool
api_ready(struct svc *s, pid_t *mounter, pid_t *registry)
{
	struct http_response resp;
	char sock[600], why[600];
	json_t *st, *h;
	int i, status = 0;

	snprintf(sock, sizeof(sock), "%s/api.sock", s->run);
	for (i = 0; i < 300 && status != 200; i++) {
		if (http_request(sock, "GET", "/v1/health", NULL, 0, 2000,
		    &resp, why, sizeof(why)) == 0) {
			status = resp.status;
			http_response_free(&resp);
		}
		if (status != 200)
			usleep(50000);
	}
	if (status != 200 || http_request(sock, "GET", "/v1/status", NULL, 0,
	    10000, &resp, why, sizeof(why)) != 0)
		return false;
	st = json_loads(resp.body, 0, NULL);
	http_response_free(&resp);
	h = json_object_get(st, "helpers");
	*mounter = (pid_t)json_integer_value(json_object_get(json_object_get(
	    h, "berth-mounter"), "pid"));
	*registry = (pid_t)json_integer_value(json_object_get(json_object_get(
	    h, "berth-registry"), "pid"));
	json_decref(st);
	return true;
}

static void
expect_notified(struct notify *n, const char *who, const char *want)
{
	ck_assert_msg(notify_wait(n, want, 10000), "%s never sent '%s'; got "
	    "'%s'", who, want, n->got);
}

START_TEST(ready_status_watchdog_and_stop)
{
	struct svc s;
	char want[128];
	pid_t mounter = 0, registry = 0;

	svc_setup(&s);
	start_all(&s);
	ck_assert_msg(api_ready(&s, &mounter, &registry),
	    "supervisor never became healthy: %s", s.sv.log);
	/* The helpers' pids come from their hello: the ones we started. */
	ck_assert_int_eq(mounter, s.mounter.pid);
	ck_assert_int_eq(registry, s.registry.pid);

	expect_notified(&s.sv_n, "supervisor", "READY=1\nSTATUS=ready;");
	snprintf(want, sizeof(want), "READY=1\nSTATUS=serving supervisor "
	    "pid %ld;", (long)s.sv.pid);
	expect_notified(&s.m_n, "mounter", want);
	expect_notified(&s.r_n, "registry", want);
	/* Pings from the event loop, every half WATCHDOG_USEC. */
	expect_notified(&s.sv_n, "supervisor", "WATCHDOG=1");
	expect_notified(&s.m_n, "mounter", "WATCHDOG=1");
	expect_notified(&s.r_n, "registry", "WATCHDOG=1");
	/* An operator's view: what it did before it was ready. */
	ck_assert_ptr_nonnull(strstr(s.sv_n.got,
	    "STATUS=connecting to berth-mounter and berth-registry|"));

	/* systemctl stop: the helpers are asked to stop, all exit 0. */
	kill(s.sv.pid, SIGTERM);
	ck_assert(proc_wait_exit(&s.sv, 15000));
	ck_assert_msg(WIFEXITED(s.sv.status) && WEXITSTATUS(s.sv.status) == 0,
	    "supervisor status 0x%x: %s", s.sv.status, s.sv.log);
	ck_assert(proc_wait_exit(&s.mounter, 10000));
	ck_assert(proc_wait_exit(&s.registry, 10000));
	ck_assert(WIFEXITED(s.mounter.status) &&
	    WEXITSTATUS(s.mounter.status) == 0);
	ck_assert(WIFEXITED(s.registry.status) &&
	    WEXITSTATUS(s.registry.status) == 0);
	expect_notified(&s.sv_n, "supervisor", "STOPPING=1\nSTATUS=stopping: "
	    "SIGTERM");
	expect_notified(&s.m_n, "mounter", "STOPPING=1");
	expect_notified(&s.r_n, "registry", "STOPPING=1");
	svc_teardown(&s);
}
END_TEST

/*
 * Spawn mode under a service manager (berth-supervisor started as root by
 * a unit of its own): the supervisor notifies, here on an abstract
 * socket ("@name"), as systemd's own notify socket may be.
 */
START_TEST(spawn_mode_notifies_on_abstract_socket)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct notify n = { .fd = -1 };
	struct proc sv;
	char *dir, cfg[512], text[1024];
	char *argv[] = { (char *)harness_bin("berth-supervisor"), "-c", cfg,
		NULL };
	socklen_t len;

	harness_private_mounts();
	dir = harness_tmpdir("notify");
	snprintf(cfg, sizeof(cfg), "%s/berth.json", dir);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\", \"alloc_dir\": \"%s\"}", dir, dir,
	    dir);
	harness_write(cfg, text);
	snprintf(n.path, sizeof(n.path), "@berth-test-notify-%ld",
	    (long)getpid());
	memcpy(sun.sun_path + 1, n.path + 1, strlen(n.path) - 1);
	len = offsetof(struct sockaddr_un, sun_path) + strlen(n.path);
	ck_assert_int_ge(n.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0),
	    0);
	ck_assert_int_eq(bind(n.fd, (struct sockaddr *)&sun, len), 0);
	start_service(&sv, argv, -1, &n);
	expect_notified(&n, "supervisor", "STATUS=starting berth-mounter and "
	    "berth-registry");
	expect_notified(&n, "supervisor", "READY=1\nSTATUS=ready;");
	expect_notified(&n, "supervisor", "WATCHDOG=1");
	kill(sv.pid, SIGTERM);
	ck_assert(proc_wait_exit(&sv, 15000));
	ck_assert(WIFEXITED(sv.status) && WEXITSTATUS(sv.status) == 0);
	expect_notified(&n, "supervisor", "STOPPING=1");
	close(n.fd);
	harness_rmtree(dir);
	free(dir);
}
END_TEST

/*
 * A child that connects to path as user name, from the cgroup v2
 * directory cg unless it is NULL, and holds on until killed.
 */
static pid_t
connect_in(const char *path, const char *name, const char *cg)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct passwd *pw;
	char procs[600];
	pid_t pid;
	int fd;

	ck_assert_ptr_nonnull(pw = getpwnam(name));
	strcpy(sun.sun_path, path);
	if (cg != NULL)
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	if ((pid = fork()) == 0) {
		if (cg != NULL && ((fd = open(procs, O_WRONLY)) < 0 ||
		    write(fd, "0", 1) != 1))
			_exit(4);
		if (setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
			_exit(2);
		fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			_exit(3);
		pause();
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	harness_track_pid(pid);
	return pid;
}

START_TEST(helper_refuses_another_user)
{
	struct svc s;
	char path[600], want[128];
	struct passwd *pw;
	pid_t intruder;

	svc_setup(&s);
	start_registry(&s);
	snprintf(path, sizeof(path), "%s/registry.sock", s.run);
	intruder = connect_in(path, "nobody", NULL);
	ck_assert_ptr_nonnull(pw = getpwnam("nobody"));
	snprintf(want, sizeof(want), "connection refused: peer_pid=%ld "
	    "peer_uid=%ld", (long)intruder, (long)pw->pw_uid);
	/* Log wording kept: the refusal is logged and the peer is only
	 * hung up on; the audit line is the feature under test. */
	ck_assert_msg(proc_wait_log(&s.registry, want, 10000),
	    "registry did not log '%s': %s", want, s.registry.log);
	/* Still waiting for the supervisor, not ready for anyone else. */
	ck_assert(!notify_wait(&s.r_n, "READY=1", 300));
	ck_assert(pid_alive(s.registry.pid));
	kill(intruder, SIGKILL);
	waitpid(intruder, NULL, 0);
	svc_teardown(&s);
}
END_TEST

/*
 * With --peer-cgroup, the supervisor's user alone is not enough: a process
 * of that user outside the named cgroup (a task that ran as it, another
 * login) is refused and logged; one inside it is served.
 */
START_TEST(helper_refuses_its_user_outside_the_cgroup)
{
	char *argv[] = { "/usr/bin/setpriv", "--reuid=berth-registry",
		"--regid=berth-registry", "--clear-groups", "--",
		(char *)harness_bin("berth-registry"), "--data-dir", NULL,
		"--peer-user", "berth", "--peer-cgroup", NULL, NULL };
	char path[600], cg[256], name[64], want[512];
	const char *root;
	pid_t intruder, sup;
	struct svc s;

	root = access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0 ?
	    "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
	snprintf(name, sizeof(name), "/berth-test-peer-%ld", (long)getpid());
	snprintf(cg, sizeof(cg), "%s%s", root, name);
	harness_track_cgroup(name);
	ck_assert_msg(mkdir(cg, 0755) == 0, "mkdir %s: %s", cg,
	    strerror(errno));
	svc_setup(&s);
	argv[7] = s.data;
	argv[11] = cg;
	start_service(&s.registry, argv, s.registry_lfd, &s.r_n);
	snprintf(path, sizeof(path), "%s/registry.sock", s.run);
	intruder = connect_in(path, "berth", NULL);
	snprintf(want, sizeof(want), "connection refused: peer_pid=%ld "
	    "peer_uid=%ld is not in cgroup %s", (long)intruder,
	    (long)getpwnam("berth")->pw_uid, cg);
	/* Log wording kept: the audit line is the feature under test. */
	ck_assert_msg(proc_wait_log(&s.registry, want, 10000),
	    "registry did not log '%s': %s", want, s.registry.log);
	ck_assert(!notify_wait(&s.r_n, "READY=1", 300));
	sup = connect_in(path, "berth", cg);
	expect_notified(&s.r_n, "berth-registry", "READY=1");
	kill(intruder, SIGKILL);
	kill(sup, SIGKILL);
	waitpid(intruder, NULL, 0);
	waitpid(sup, NULL, 0);
	svc_teardown(&s);
	harness_cgroup_remove(name);
	ck_assert_msg(rmdir(cg) == 0 || errno == ENOENT, "rmdir %s: %s", cg,
	    strerror(errno));
}
END_TEST

/* Without --spawned and without a socket from systemd: say what to do. */
START_TEST(helper_without_socket_says_why)
{
	struct proc p;
	char *argv[] = { (char *)harness_bin("berth-registry"), "--data-dir",
		"/nonexistent", NULL };

	proc_start(&p, argv, -1);
	ck_assert(proc_wait_exit(&p, 10000));
	ck_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 1);
	/* Log wording kept: the message to the operator is the feature. */
	ck_assert_msg(strstr(p.log, "service mode needs exactly one socket "
	    "from systemd, got 0") != NULL, "%s", p.log);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("service_mode");

	if (geteuid() != 0) {
		fprintf(stderr, "test_service_mode: needs root\n");
		return 77;
	}
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ready_status_watchdog_and_stop);
	tcase_add_test(tc, helper_refuses_another_user);
	tcase_add_test(tc, helper_refuses_its_user_outside_the_cgroup);
	tcase_add_test(tc, helper_without_socket_says_why);
	tcase_add_test(tc, spawn_mode_notifies_on_abstract_socket);
	return harness_run("service_mode", tc);
}
