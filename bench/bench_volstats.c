/*
 * bench_volstats.c: what asking volumes how they are doing costs the
 * supervisor, against what a plugin heartbeat costs it, measured side by
 * side in one run with berth-csi-hostpath as a privileged plugin probed
 * every 20 ms, supervisor CPU (every thread, schedstat) over three
 * windows of the same length:
 *
 *   0. before any plugin: the background (timers, the bench's own
 *      metrics requests), taken out of the two others;
 *   1. the plugin up, no volume in use: CPU per heartbeat (a Probe), the
 *      heartbeats counted by the supervisor's own metrics;
 *   2. N volumes published (allocations of up to 32 volumes each, their
 *      tasks asleep) and NodeGetVolumeStats every second on each: CPU,
 *      less the heartbeats' share measured in 1, per volume stats call
 *      (counted likewise);
 *
 * and the ratio of the two (aim: the same order).
 *
 * Run as root from the build directory:
 *   BERTH_BUILD_DIR=$PWD bench/bench_volstats [-n VOLUMES] [-s SECONDS]
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchutil.h"
#include "harness.h"
#include "http.h"

#define PER_ALLOC 32		/* ALLOC_MAX_VOLUMES */

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
		fprintf(stderr, "bench_volstats: %s %s: %s\n", method, path,
		    why);
		return NULL;
	}
	if (r.status / 100 == 2)
		out = strdup(r.body);
	else
		fprintf(stderr, "bench_volstats: %s %s: %d %s\n", method, path,
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
	b->dir = harness_tmpdir("bench-volstats");
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
	    "cap CAP_SYS_ADMIN\ncap CAP_CHOWN\n", harness_bin("berth-csi-hostpath"), b->dir);
	harness_write(path, text);
	snprintf(cfg, sizeof(cfg), "%s/berth.json", b->dir);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\", \"alloc_dir\": \"%s/allocs\", "
	    "\"plugins_dir\": \"%s/defs\", \"plugin_heartbeat\": \"20ms\", "
	    "\"volume_stats_interval\": \"1s\"}", b->dir, b->dir, b->dir,
	    b->dir);
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

/* The sum of a metric's series (name{...} v, or name v) on a page. */
static double
sum_of(const char *page, const char *name)
{
	size_t n = strlen(name);
	const char *p;
	double sum = 0;

	for (p = page; (p = strstr(p, name)) != NULL; p += n)
		if ((p == page || p[-1] == '\n') && (p[n] == '{' ||
		    p[n] == ' '))
			sum += atof(strchr(p, ' ') + 1);
	return sum;
}

static double
metric(struct bench *b, const char *name)
{
	char *page = api(b, "GET", "/v1/metrics", NULL);
	double v;

	if (page == NULL)
		return -1;
	v = sum_of(page, name);
	free(page);
	return v;
}

static bool
plugin_up(struct bench *b)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/allocs/plugin.json", b->dir);
	harness_write(path, "{\"id\": \"plugin\", \"tasks\": [{\"name\": "
	    "\"p\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hostpath\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"monolith\"}}]}");
	return bench_wait_log(b->log, "type=node alloc=plugin health=healthy",
	    1, 20000) && bench_wait_log(b->log, "type=controller "
	    "alloc=plugin health=healthy", 1, 20000);
}

/* Allocation k: volumes [first, first + n), none mounted by its task. */
static int
submit(struct bench *b, int k, int first, int n)
{
	char doc[16384], *out;
	size_t o;

	o = (size_t)snprintf(doc, sizeof(doc), "{\"id\": \"a%d\", "
	    "\"volumes\": {", k);
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(doc + o, sizeof(doc) - o, "%s\"d%d\": {"
		    "\"type\": \"csi\", \"source\": \"v%d\", \"access_mode\": "
		    "\"single-node-writer\", \"attachment_mode\": "
		    "\"file-system\"}", i > 0 ? ", " : "", i, first + i);
	snprintf(doc + o, sizeof(doc) - o, "}, \"tasks\": [{\"name\": \"t\", "
	    "\"driver\": \"exec\", \"config\": {\"command\": \"/bin/sleep\", "
	    "\"args\": [\"3600\"]}, \"kill_timeout\": \"1s\"}]}");
	out = api(b, "PUT", "/v1/allocations", doc);
	free(out);
	return out != NULL ? 0 : -1;
}

static int
volumes(struct bench *b, int n)
{
	char path[128], *out;

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/v1/volume/v%d/create", i);
		if ((out = api(b, "PUT", path, "{\"plugin_id\": \"hp\", "
		    "\"access_mode\": \"single-node-writer\"}")) == NULL)
			return -1;
		free(out);
	}
	for (int k = 0; k * PER_ALLOC < n; k++)
		if (submit(b, k, k * PER_ALLOC, n - k * PER_ALLOC < PER_ALLOC ?
		    n - k * PER_ALLOC : PER_ALLOC) < 0)
			return -1;
	return 0;
}

/* Until berth_volume_publications reaches n; false after ms. */
static bool
published(struct bench *b, int n, int ms)
{
	double t0 = bench_now_ms();

	while (metric(b, "berth_volume_publications") < n) {
		if (bench_now_ms() - t0 > ms)
			return false;
		sleep(1);
	}
	return true;
}

struct window {
	double cpu_s, probes, calls, skipped, call_s;
};

/* The counts now, from one page (one request's cost in the window). */
static void
counts(struct bench *b, struct window *w)
{
	char *page = api(b, "GET", "/v1/metrics", NULL);

	w->cpu_s = bench_cpu_s(b->sv);
	w->probes = sum_of(page != NULL ? page : "",
	    "berth_plugin_probe_duration_seconds_count");
	w->calls = sum_of(page != NULL ? page : "",
	    "berth_volume_stats_duration_seconds_count");
	w->skipped = sum_of(page != NULL ? page : "",
	    "berth_volume_stats_skipped_total");
	w->call_s = sum_of(page != NULL ? page : "",
	    "berth_volume_stats_duration_seconds_sum");
	free(page);
}

/* Supervisor CPU and the counts over secs seconds. */
static void
measure(struct bench *b, int secs, struct window *w)
{
	struct window t0;

	counts(b, &t0);
	sleep((unsigned)secs);
	counts(b, w);
	w->cpu_s -= t0.cpu_s;
	w->probes -= t0.probes;
	w->calls -= t0.calls;
	w->skipped -= t0.skipped;
	w->call_s -= t0.call_s;
}

static void
report(int n, int secs, double setup_ms, const struct window *bg,
    const struct window *hb, const struct window *vs)
{
	double per_probe = (hb->cpu_s - bg->cpu_s) / hb->probes;
	double stats_cpu = vs->cpu_s - bg->cpu_s - vs->probes * per_probe;
	double per_call = stats_cpu / vs->calls;

	printf("setup: %d volumes created and published in %.1f s\n", n,
	    setup_ms / 1000);
	printf("background: supervisor CPU %.2f ms in %d s, no plugin\n",
	    bg->cpu_s * 1e3, secs);
	printf("heartbeat: %.0f probes in %d s, supervisor CPU %.1f us per "
	    "probe\n", hb->probes, secs, per_probe * 1e6);
	printf("volume stats: %d volumes, %.0f NodeGetVolumeStats calls in "
	    "%d s (%.0f/s, %.0f skipped, %.2f ms each on average), "
	    "supervisor CPU %.1f us per call (background and %.0f probes' "
	    "share taken out)\n", n, vs->calls, secs, vs->calls / secs, vs->skipped,
	    vs->calls > 0 ? vs->call_s * 1000 / vs->calls : 0,
	    per_call * 1e6, vs->probes);
	printf("ratio: one volume stats call costs %.2f heartbeats (aim: "
	    "the same order)\n", per_call / per_probe);
}

int
main(int argc, char **argv)
{
	struct bench b;
	struct window bg, hb, vs;
	int n = 1000, secs = 10, c;
	double t0, setup_ms;

	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		if (c == 'n')
			n = atoi(optarg);
		else if (c == 's')
			secs = atoi(optarg);
		else {
			fprintf(stderr, "usage: bench_volstats [-n VOLUMES] "
			    "[-s SECONDS]\n");
			return 2;
		}
	}
	if (n < 1 || n > 1024 || secs < 1 || secs > 600) {
		fprintf(stderr, "bench_volstats: 1..1024 volumes, 1..600 s\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench_volstats: run as root\n");
		return 77;
	}
	start(&b);
	if (!bench_wait_log(b.log, "ready:", 1, 10000))
		goto fail;
	sleep(3);
	measure(&b, secs, &bg);
	if (!plugin_up(&b))
		goto fail;
	/* Past the fingerprints and the first registrations. */
	sleep(5);
	measure(&b, secs, &hb);
	t0 = bench_now_ms();
	if (volumes(&b, n) < 0 || !published(&b, n, 600000))
		goto fail;
	setup_ms = bench_now_ms() - t0;
	/* A round or two first: the steady state only. */
	sleep(3);
	measure(&b, secs, &vs);
	if (hb.probes < 1 || vs.calls < 1) {
		fprintf(stderr, "bench_volstats: %.0f probes, %.0f stats calls: "
		    "nothing to measure\n", hb.probes, vs.calls);
		goto fail;
	}
	report(n, secs, setup_ms, &bg, &hb, &vs);
	stop(&b);
	return 0;
fail:
	stop(&b);
	return 1;
}
