/*
 * etcdtest.c: starting, killing and restarting real etcd members for the
 * tests (etcdtest.h). Health is etcd's own /health over HTTP on the
 * client port, read with a bare socket so that no etcd client of ours is
 * trusted to judge the cluster it tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "etcdtest.h"
#include "harness.h"

#define START_TRIES	6
#define HEALTHY_MS	30000
#define PORT_LOW	20000
#define PORT_SLOTS	1200	/* bases PORT_LOW + 10 * slot: below 32000 */

static long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

bool
etcdtest_available(void)
{
	return access(ETCDTEST_BIN, X_OK) == 0;
}

static bool
port_free(int port)
{
	struct sockaddr_in sin;
	int fd, ok;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return false;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	close(fd);
	return ok;
}

/* Ports for every member from the pid and the try; all checked free. */
static bool
pick_ports(struct etcd_cluster *ec, int try)
{
	int base, i;

	base = PORT_LOW + 10 * (int)(((unsigned)getpid() + 977u *
	    (unsigned)try) % PORT_SLOTS);
	for (i = 0; i < ec->n; i++) {
		ec->m[i].client_port = base + 2 * i;
		ec->m[i].peer_port = base + 2 * i + 1;
		if (!port_free(ec->m[i].client_port) ||
		    !port_free(ec->m[i].peer_port))
			return false;
		snprintf(ec->m[i].endpoint, sizeof(ec->m[i].endpoint),
		    "127.0.0.1:%d", ec->m[i].client_port);
		ec->endpoints[i] = ec->m[i].endpoint;
	}
	return true;
}

static void
member_spawn(struct etcd_cluster *ec, int i, int try)
{
	struct etcd_member *m = &ec->m[i];
	char curl[64], purl[64], cluster[512], token[64];
	size_t len = 0;
	pid_t parent = getpid();
	int j, fd;

	for (j = 0; j < ec->n; j++)
		len += snprintf(cluster + len, sizeof(cluster) - len,
		    "%sm%d=http://127.0.0.1:%d", j ? "," : "", j,
		    ec->m[j].peer_port);
	snprintf(curl, sizeof(curl), "http://127.0.0.1:%d", m->client_port);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", m->peer_port);
	snprintf(token, sizeof(token), "berth-test-%ld-%d", (long)parent, try);
	if ((m->pid = fork()) < 0)
		ck_abort_msg("fork: %s", strerror(errno));
	if (m->pid == 0) {
		/* Never outlive the test, whatever ends it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		if ((fd = open(m->log_path, O_WRONLY | O_CREAT | O_APPEND |
		    O_CLOEXEC, 0644)) >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execl(ETCDTEST_BIN, ETCDTEST_BIN, "--name", m->name,
		    "--data-dir", m->data_dir,
		    "--listen-client-urls", curl,
		    "--advertise-client-urls", curl,
		    "--listen-peer-urls", purl,
		    "--initial-advertise-peer-urls", purl,
		    "--initial-cluster", cluster,
		    "--initial-cluster-state", "new",
		    "--initial-cluster-token", token,
		    "--heartbeat-interval", "100", "--election-timeout", "1000",
		    "--logger", "zap", "--log-outputs", "stderr",
		    (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", ETCDTEST_BIN, strerror(errno));
		_exit(127);
	}
	harness_track_pid(m->pid);
}

/* The member exited (reaped, pid cleared)? */
static bool
member_exited(struct etcd_member *m)
{
	int status;

	if (m->pid > 0 && waitpid(m->pid, &status, WNOHANG) == m->pid) {
		m->pid = 0;
		return true;
	}
	return m->pid == 0;
}

static void
member_reap(struct etcd_member *m, int sig, int ms)
{
	long end = mono_ms() + ms;
	int status;

	if (m->pid <= 0)
		return;
	kill(m->pid, sig);
	if (sig != SIGKILL)
		kill(m->pid, SIGCONT);	/* a paused member hears it too */
	while (waitpid(m->pid, &status, WNOHANG) == 0) {
		if (mono_ms() >= end) {
			kill(m->pid, SIGKILL);
			waitpid(m->pid, &status, 0);
			break;
		}
		usleep(10000);
	}
	m->pid = 0;
}

/* One HTTP GET of /health: "true" in its reply? */
static bool
health_once(int port)
{
	static const char req[] = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n"
	    "\r\n";
	struct timeval tv = { 1, 0 };
	struct sockaddr_in sin;
	char buf[2048];
	size_t len = 0;
	ssize_t n;
	int fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		close(fd);
		return false;
	}
	while (len < sizeof(buf) - 1 &&
	    (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return strstr(buf, "\"health\":\"true\"") != NULL;
}

bool
etcdtest_healthy(struct etcd_cluster *ec, int i, int ms)
{
	long end = mono_ms() + ms;

	for (;;) {
		if (member_exited(&ec->m[i]))
			return false;
		if (health_once(ec->m[i].client_port))
			return true;
		if (mono_ms() >= end)
			return false;
		usleep(100000);
	}
}

/* One try at the whole cluster: false when a member could not bind. */
static bool
start_try(struct etcd_cluster *ec, int try)
{
	char cmd[600];
	int i;

	for (i = 0; i < ec->n; i++) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ec->m[i].data_dir);
		if (system(cmd) != 0)
			ck_abort_msg("%s failed", cmd);
		if (truncate(ec->m[i].log_path, 0) < 0 && errno != ENOENT)
			ck_abort_msg("truncate %s: %s", ec->m[i].log_path,
			    strerror(errno));
	}
	if (!pick_ports(ec, try))
		return false;
	for (i = 0; i < ec->n; i++)
		member_spawn(ec, i, try);
	for (i = 0; i < ec->n; i++)
		if (!etcdtest_healthy(ec, i, HEALTHY_MS))
			break;
	if (i == ec->n)
		return true;
	for (i = 0; i < ec->n; i++)
		member_reap(&ec->m[i], SIGKILL, 0);
	return false;
}

void
etcdtest_start(struct etcd_cluster *ec, int n)
{
	int i, try;

	ck_assert_int_le(n, ETCDTEST_MAX);
	memset(ec, 0, sizeof(*ec));
	ec->n = n;
	ec->dir = harness_tmpdir("etcd");
	for (i = 0; i < n; i++) {
		snprintf(ec->m[i].name, sizeof(ec->m[i].name), "m%d", i);
		snprintf(ec->m[i].data_dir, sizeof(ec->m[i].data_dir),
		    "%s/%s.etcd", ec->dir, ec->m[i].name);
		snprintf(ec->m[i].log_path, sizeof(ec->m[i].log_path),
		    "%s/%s.log", ec->dir, ec->m[i].name);
	}
	for (try = 0; try < START_TRIES; try++)
		if (start_try(ec, try))
			return;
	ck_abort_msg("etcdtest: no healthy %d-member cluster after %d tries "
	    "(logs in %s)", n, START_TRIES, ec->dir);
}

void
etcdtest_kill(struct etcd_cluster *ec, int i)
{
	ck_assert_int_gt(ec->m[i].pid, 0);
	member_reap(&ec->m[i], SIGKILL, 0);
}

void
etcdtest_pause(struct etcd_cluster *ec, int i)
{
	ck_assert_int_gt(ec->m[i].pid, 0);
	ck_assert_int_eq(kill(ec->m[i].pid, SIGSTOP), 0);
}

void
etcdtest_resume(struct etcd_cluster *ec, int i)
{
	ck_assert_int_gt(ec->m[i].pid, 0);
	ck_assert_int_eq(kill(ec->m[i].pid, SIGCONT), 0);
}

void
etcdtest_stop(struct etcd_cluster *ec, int i, int ms)
{
	member_reap(&ec->m[i], SIGTERM, ms);
}

void
etcdtest_restart(struct etcd_cluster *ec, int i)
{
	ck_assert_int_eq(ec->m[i].pid, 0);
	member_spawn(ec, i, 0);
}

void
etcdtest_cleanup(struct etcd_cluster *ec)
{
	int i;

	for (i = 0; i < ec->n; i++)
		member_reap(&ec->m[i], SIGKILL, 0);
	if (ec->dir != NULL) {
		harness_rmtree(ec->dir);
		free(ec->dir);
		ec->dir = NULL;
	}
}
