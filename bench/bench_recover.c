/*
 * bench_recover.c: how long berth takes to give N published volumes
 * back after their node plugin dies, against how long publishing them
 * took in the first place, in one run. berth-csi-hostpath runs as a
 * privileged plugin in --fuse mode (its mounts die with it); N volumes
 * (on_plugin_restart "remount") are each bound into a sleeping task
 * (allocations of up to 32 volumes). Then:
 *
 *   baseline: from the allocations' submission to every task's bind
 *     answering statfs(2) as a FUSE mount (N fresh stages, publishes
 *     and binds);
 *   recovery: the plugin killed (SIGKILL); from its new socket to every
 *     bind answering again (berth's check, N unbinds, unpublishes,
 *     unstages, stages, publishes and binds), each bind looked at from
 *     this process, in the supervisor's mount namespace, every 5 ms (a
 *     task already running sees its fresh bind once restarted, which
 *     "restart_tasks" adds: not timed here);
 *
 * and their ratio. The issue aims the recovery under 1 s for N = 100:
 * the figure is printed, never asserted.
 *
 * Run as root from the build directory:
 *   BERTH_BUILD_DIR=$PWD bench/bench_recover [-n VOLUMES]
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchutil.h"
#include "harness.h"
#include "http.h"

#define PER_ALLOC 32		/* ALLOC_MAX_VOLUMES */
#define FUSE_MAGIC 0x65735546

struct bench {
	char *dir;
	char log[512], sock[512];
	pid_t sv;
};

/* The answer's body (free it) on a 2xx, else NULL (said). */
static char *
api(struct bench *b, const char *method, const char *path, const char *body)
{
	struct http_response r;
	char why[256], *out = NULL;

	if (http_request(b->sock, method, path, body, body ? strlen(body) : 0,
	    60000, &r, why, sizeof(why)) < 0) {
		fprintf(stderr, "bench_recover: %s %s: %s\n", method, path,
		    why);
		return NULL;
	}
	if (r.status / 100 == 2)
		out = strdup(r.body);
	else
		fprintf(stderr, "bench_recover: %s %s: %d %s\n", method, path,
		    r.status, r.body);
	http_response_free(&r);
	return out;
}

static void
start(struct bench *b)
{
	char cfg[512], text[2048], path[1024];
	int fd;

	harness_private_mounts();
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	b->dir = harness_tmpdir("bench-recover");
	snprintf(b->log, sizeof(b->log), "%s/supervisor.log", b->dir);
	snprintf(b->sock, sizeof(b->sock), "%s/run/api.sock", b->dir);
	snprintf(path, sizeof(path), "%s/allocs", b->dir);
	mkdir(path, 0777);
	chmod(path, 0777);
	snprintf(path, sizeof(path), "%s/defs", b->dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/defs/hostpath.conf", b->dir);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n1\n"
	    "arg --state-dir\narg %s/hpstate\narg --mode\narg monolith\n"
	    "arg --fuse\ncap CAP_SYS_ADMIN\ncap CAP_CHOWN\n",
	    harness_bin("berth-csi-hostpath"), b->dir);
	harness_write(path, text);
	snprintf(cfg, sizeof(cfg), "%s/berth.json", b->dir);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\", \"alloc_dir\": \"%s/allocs\", "
	    "\"plugins_dir\": \"%s/defs\", \"plugin_heartbeat\": \"1s\"}",
	    b->dir, b->dir, b->dir, b->dir);
	harness_write(cfg, text);
	if ((b->sv = fork()) < 0)
		abort();
	if (b->sv == 0) {
		if ((fd = open(b->log, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
			_exit(127);
		dup2(fd, 2);
		execl(harness_bin("berth-supervisor"), "berth-supervisor",
		    "-c", cfg, (char *)NULL);
		_exit(127);
	}
}

static void
stop(struct bench *b)
{
	int status;

	kill(b->sv, SIGTERM);
	waitpid(b->sv, &status, 0);
	/* Tasks and the plugin outlive the supervisor by design. */
	bench_kill_tasks(b->log);
	while (waitpid(-1, &status, WNOHANG) > 0 || (errno != ECHILD &&
	    usleep(50000) == 0))
		;
	harness_rmtree(b->dir);
	free(b->dir);
}

/* The plugin restarts 100 ms after it dies. */
static bool
plugin_up(struct bench *b)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/allocs/plugin.json", b->dir);
	harness_write(path, "{\"id\": \"plugin\", \"tasks\": [{\"name\": "
	    "\"p\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hostpath\"}, \"restart\": {\"attempts\": 3, \"interval\": "
	    "\"30m\", \"delay\": \"100ms\", \"mode\": \"fail\"}, "
	    "\"csi_plugin\": {\"id\": \"hp\", \"type\": \"monolith\"}}]}");
	return bench_wait_log(b->log, "type=node alloc=plugin health=healthy",
	    1, 20000);
}

/* Allocation k: volumes [first, first + n), each bound into its task. */
static int
submit(struct bench *b, int k, int first, int n)
{
	char doc[32768], *out;
	size_t o;
	int i;

	o = (size_t)snprintf(doc, sizeof(doc), "{\"id\": \"a%d\", "
	    "\"volumes\": {", k);
	for (i = 0; i < n; i++)
		o += (size_t)snprintf(doc + o, sizeof(doc) - o, "%s\"d%d\": {"
		    "\"type\": \"csi\", \"source\": \"v%d\", \"access_mode\": "
		    "\"single-node-writer\", \"attachment_mode\": "
		    "\"file-system\"}", i > 0 ? ", " : "", i, first + i);
	o += (size_t)snprintf(doc + o, sizeof(doc) - o, "}, \"tasks\": [{"
	    "\"name\": \"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/sleep\", \"args\": [\"3600\"]}, \"kill_timeout\": \"1s\", "
	    "\"volume_mounts\": [");
	for (i = 0; i < n; i++)
		o += (size_t)snprintf(doc + o, sizeof(doc) - o, "%s{\"volume\": "
		    "\"d%d\", \"destination\": \"d%d\"}", i > 0 ? ", " : "", i,
		    i);
	snprintf(doc + o, sizeof(doc) - o, "]}]}");
	out = api(b, "PUT", "/v1/allocations", doc);
	free(out);
	return out != NULL ? 0 : -1;
}

static int
create(struct bench *b, int n)
{
	char path[128], *out;

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/v1/volume/v%d/create", i);
		if ((out = api(b, "PUT", path, "{\"plugin_id\": \"hp\", "
		    "\"access_mode\": \"single-node-writer\", "
		    "\"on_plugin_restart\": \"remount\"}")) == NULL)
			return -1;
		free(out);
	}
	return 0;
}

/* How many of the n tasks' binds answer statfs as a FUSE mount. */
static int
binds_working(struct bench *b, int n)
{
	char path[1024];
	struct statfs sf;
	int i, ok = 0;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/data/allocs/a%d/t/volumes/d%d",
		    b->dir, i / PER_ALLOC, i % PER_ALLOC);
		ok += statfs(path, &sf) == 0 && sf.f_type == FUSE_MAGIC;
	}
	return ok;
}

/* Until every bind works: the time it took, or -1 after ms. */
static double
until_working(struct bench *b, int n, double t0, int ms)
{
	int got;

	while ((got = binds_working(b, n)) < n) {
		if (bench_now_ms() - t0 > ms) {
			fprintf(stderr, "bench_recover: %d of %d binds work "
			    "after %d ms\n", got, n, ms);
			return -1;
		}
		usleep(5000);
	}
	return bench_now_ms() - t0;
}

/* The plugin's pid, from the mounter's last "plugin pid N" line. */
static pid_t
plugin_pid(struct bench *b)
{
	const char *key = "is plugin pid ", *p, *last = NULL;
	char *log = bench_slurp(b->log);
	pid_t pid;

	for (p = log; (p = strstr(p, key)) != NULL; p += strlen(key))
		last = p + strlen(key);
	pid = last != NULL ? (pid_t)atol(last) : 0;
	free(log);
	return pid;
}

/* Kill the plugin; the time its new socket appeared, or -1. */
static double
kill_plugin(struct bench *b)
{
	char sock[1024];
	struct stat was, now;
	pid_t pid = plugin_pid(b);
	double t0 = bench_now_ms();

	snprintf(sock, sizeof(sock), "%s/data/csi/plugins/plugin/csi.sock",
	    b->dir);
	if (pid <= 0 || stat(sock, &was) < 0 || kill(pid, SIGKILL) < 0)
		return -1;
	while (stat(sock, &now) < 0 || now.st_ino == was.st_ino) {
		if (bench_now_ms() - t0 > 20000)
			return -1;
		usleep(1000);
	}
	return bench_now_ms();
}

int
main(int argc, char **argv)
{
	struct bench b;
	int n = 100, c, k;
	double t0, base_ms, sock_ms, rec_ms;

	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c == 'n')
			n = atoi(optarg);
		else {
			fprintf(stderr, "usage: bench_recover [-n VOLUMES]\n");
			return 2;
		}
	}
	if (n < 1 || n > 1024) {
		fprintf(stderr, "bench_recover: 1..1024 volumes\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench_recover: run as root\n");
		return 77;
	}
	start(&b);
	if (!bench_wait_log(b.log, "ready:", 1, 10000) || !plugin_up(&b) ||
	    create(&b, n) < 0)
		goto fail;
	t0 = bench_now_ms();
	for (k = 0; k * PER_ALLOC < n; k++)
		if (submit(&b, k, k * PER_ALLOC, n - k * PER_ALLOC < PER_ALLOC ?
		    n - k * PER_ALLOC : PER_ALLOC) < 0)
			goto fail;
	if ((base_ms = until_working(&b, n, t0, 600000)) < 0)
		goto fail;
	/* Past the tasks' starts. */
	sleep(2);
	if ((sock_ms = kill_plugin(&b)) < 0) {
		fprintf(stderr, "bench_recover: no new plugin socket\n");
		goto fail;
	}
	/* Until the dead mounts have gone: the first binds that work are
	 * the fresh ones. */
	if ((rec_ms = until_working(&b, n, sock_ms, 60000)) < 0)
		goto fail;
	printf("baseline: %d volumes staged, published and bound in %.1f ms "
	    "(allocations submitted to every bind working)\n", n, base_ms);
	printf("recovery: plugin killed, %d volumes staged, published and "
	    "bound again in %.1f ms from its new socket (aim: under 1000 "
	    "ms)\n", n, rec_ms);
	printf("ratio: recovery / baseline = %.2f\n", rec_ms / base_ms);
	stop(&b);
	return 0;
fail:
	stop(&b);
	return 1;
}
