/*
 * bench_plugins.c: what the plugin supervisor costs, measured side by side
 * in one run with 100 berth-csi-hostpath plugins probed every second:
 *
 *   1. supervisor CPU per heartbeat against a minimal C loop of unary
 *      Probe calls over the gRPC C core on the same sockets, both measured
 *      over the same window (CPU time of every thread, from schedstat);
 *   2. time from a plugin's socket appearing to the plugin being
 *      registered and healthy (the supervisor logs it in the PluginHealthy
 *      event), for 10 plugins added one at a time beside the 100, and in
 *      the burst of the 100 started at once; Nomad's probe waits for its
 *      5 s interval;
 *   3. the supervisor's resident memory with 100 plugins.
 *
 * Run as root from the build directory (it starts the three processes):
 *   bench_plugins [-n PLUGINS] [-s SECONDS]
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
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/byte_buffer.h>
#include <grpc/grpc_security.h>

#include "csi.pb-c.h"
#include "benchutil.h"
#include "harness.h"

#define PLUGINS_MAX 500
#define EXTRA 10		/* added one at a time, after the window */

struct bench {
	char *dir;
	char allocs[512], log[512];
	pid_t sv;
	int n;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
start(struct bench *b)
{
	char cfg[512], text[1024];
	int fd;

	/* Mounts in a namespace of our own: gone with the last of us. */
	harness_private_mounts();
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	b->dir = harness_tmpdir("bench-plugins");
	snprintf(cfg, sizeof(cfg), "%s/berth.json", b->dir);
	snprintf(b->allocs, sizeof(b->allocs), "%s/allocs", b->dir);
	snprintf(b->log, sizeof(b->log), "%s/supervisor.log", b->dir);
	if (mkdir(b->allocs, 0755) < 0)
		abort();
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\", \"alloc_dir\": \"%s\", "
	    "\"plugin_heartbeat\": \"1s\"}", b->dir, b->dir, b->allocs);
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
add_alloc(struct bench *b, int i)
{
	char tmp[1024], path[1024], text[2048];

	snprintf(tmp, sizeof(tmp), "%s/.p%d.tmp", b->allocs, i);
	snprintf(path, sizeof(path), "%s/p%d.json", b->allocs, i);
	snprintf(text, sizeof(text), "{\"id\": \"p%d\", \"tasks\": [{\"name\": "
	    "\"plugin\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"%s\", \"args\": [\"--node-id\", \"n1\", \"--state-dir\", "
	    "\"state\", \"--mode\", \"node\"]}, \"csi_plugin\": {\"id\": "
	    "\"hp%d\", \"type\": \"node\"}}]}", i,
	    harness_bin("berth-csi-hostpath"), i);
	harness_write(tmp, text);
	if (rename(tmp, path) < 0)
		abort();
}

static void
stop(struct bench *b)
{
	char path[1024];
	int status;

	for (int i = 0; i < b->n; i++) {
		snprintf(path, sizeof(path), "%s/p%d.json", b->allocs, i);
		unlink(path);
	}
	bench_wait_log(b->log, ": stopped", b->n, 60000);
	kill(b->sv, SIGTERM);
	waitpid(b->sv, &status, 0);
	bench_kill_tasks(b->log);
	/* The helpers and any straggler came to us as the subreaper. */
	while (waitpid(-1, &status, WNOHANG) > 0 || (errno != ECHILD &&
	    usleep(50000) == 0))
		;
	harness_rmtree(b->dir);
	free(b->dir);
}

/* The baseline: one blocking unary Probe on a channel, as plainly as C can. */
static bool
probe(grpc_channel *ch, grpc_completion_queue *cq)
{
	uint8_t req[8];
	size_t len = csi__v1__probe_request__pack(
	    &(Csi__V1__ProbeRequest)CSI__V1__PROBE_REQUEST__INIT, req);
	grpc_slice data = grpc_slice_from_copied_buffer((char *)req, len);
	grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&data, 1), *recv =
	    NULL;
	grpc_metadata_array imd, tmd;
	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice();
	grpc_op ops[6];
	grpc_call *call;
	grpc_event ev;
	bool ok;

	grpc_slice_unref(data);
	grpc_metadata_array_init(&imd);
	grpc_metadata_array_init(&tmd);
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
	    grpc_slice_from_static_string("/csi.v1.Identity/Probe"), NULL,
	    gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
	    gpr_time_from_millis(2000, GPR_TIMESPAN)), NULL);
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &tmd;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;
	ok = grpc_call_start_batch(call, ops, 6, call, NULL) == GRPC_CALL_OK;
	if (ok) {
		ev = grpc_completion_queue_pluck(cq, call,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		ok = ev.success && status == GRPC_STATUS_OK && recv != NULL;
	}
	grpc_call_unref(call);
	grpc_byte_buffer_destroy(send);
	if (recv != NULL)
		grpc_byte_buffer_destroy(recv);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&imd);
	grpc_metadata_array_destroy(&tmd);
	return ok;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* "healthy 7.9 ms after its socket appeared" in alloc's event; -1: none. */
static double
socket_to_healthy(const char *log, int alloc)
{
	char key[64];
	const char *p;
	double v;
	char *end;

	snprintf(key, sizeof(key), "alloc=p%d task=plugin type=PluginHealthy",
	    alloc);
	if ((p = strstr(log, key)) == NULL || (p = strstr(p, "healthy ")) ==
	    NULL)
		return -1;
	p += strlen("healthy ");
	v = strtod(p, &end);
	return end != p && strncmp(end, " ms after its socket", 20) == 0 ?
	    v : -1;
}

/* Median, p95 and max of n figures, sorted in place. */
static void
spread(double *v, int n, double *med, double *p95, double *max)
{
	qsort(v, n, sizeof(*v), cmp_double);
	*med = v[n / 2];
	*p95 = v[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1];
	*max = v[n - 1];
}

int
main(int argc, char **argv)
{
	struct bench b = { .n = 100 };
	grpc_channel *chans[PLUGINS_MAX];
	grpc_channel_credentials *creds;
	grpc_completion_queue *cq;
	double window = 20, t0, sv0, me0, sv1, me1, next, ms[PLUGINS_MAX];
	double one[EXTRA];
	char path[1024], rss0[64], rss[64], anon[64], me_rss0[64], me_rss[64];
	char *log;
	int c, calls = 0, failed = 0, nh = 0, none = 0;

	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		if (c == 'n')
			b.n = atoi(optarg);
		else if (c == 's')
			window = atof(optarg);
		else {
			fprintf(stderr, "usage: bench_plugins [-n PLUGINS] "
			    "[-s SECONDS]\n");
			return 2;
		}
	}
	if (b.n < 1 || b.n > PLUGINS_MAX || window < 1) {
		fprintf(stderr, "bench_plugins: 1..%d plugins, >= 1 s\n",
		    PLUGINS_MAX);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench_plugins: run as root\n");
		return 77;
	}
	start(&b);
	if (!bench_wait_log(b.log, "ready:", 1, 10000))
		goto fail;
	proc_status_field(b.sv, "VmRSS", rss0, sizeof(rss0));
	t0 = now();
	for (int i = 0; i < b.n; i++)
		add_alloc(&b, i);
	if (!bench_wait_log(b.log, "type=PluginHealthy", b.n, 120000))
		goto fail;
	printf("%d plugins started and healthy in %.1f s\n", b.n, now() - t0);
	/* Let start-up settle before measuring the steady state. */
	sleep(3);

	proc_status_field(getpid(), "VmRSS", me_rss0, sizeof(me_rss0));
	grpc_init();
	cq = grpc_completion_queue_create_for_pluck(NULL);
	creds = grpc_insecure_credentials_create();
	for (int i = 0; i < b.n; i++) {
		snprintf(path, sizeof(path), "unix:%s/data/csi/plugins/p%d/"
		    "csi.sock", b.dir, i);
		chans[i] = grpc_channel_create(path, creds, NULL);
	}
	grpc_channel_credentials_release(creds);
	/* Connect every channel before the window: steady state only. */
	for (int i = 0; i < b.n; i++)
		probe(chans[i], cq);

	sv0 = bench_cpu_s(b.sv);
	me0 = bench_cpu_s(getpid());
	t0 = next = now();
	while (now() - t0 < window) {
		for (int i = 0; i < b.n; i++) {
			calls++;
			failed += !probe(chans[i], cq);
		}
		next += 1.0;
		if (next > now())
			usleep((useconds_t)((next - now()) * 1e6));
	}
	sv1 = bench_cpu_s(b.sv);
	me1 = bench_cpu_s(getpid());
	window = now() - t0;
	proc_status_field(b.sv, "VmRSS", rss, sizeof(rss));
	proc_status_field(b.sv, "RssAnon", anon, sizeof(anon));
	proc_status_field(getpid(), "VmRSS", me_rss, sizeof(me_rss));

	for (int i = 0; i < b.n; i++)
		grpc_channel_destroy(chans[i]);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_pluck(cq, NULL,
	    gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
	    GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	grpc_shutdown();

	/*
	 * Socket to healthy: in the start-up burst (100 plugins forked at
	 * once on a small machine), then one plugin at a time with the 100
	 * being probed, the steady state an operator's new plugin sees.
	 */
	log = bench_slurp(b.log);
	for (int i = 0; i < b.n; i++)
		if ((ms[nh] = socket_to_healthy(log, i)) >= 0)
			nh++;
	free(log);
	for (int k = 0; k < EXTRA; k++) {
		add_alloc(&b, b.n + k);
		if (!bench_wait_log(b.log, "type=PluginHealthy", b.n + k + 1, 30000))
			goto fail;
		log = bench_slurp(b.log);
		if ((one[none] = socket_to_healthy(log, b.n + k)) >= 0)
			none++;
		free(log);
	}
	{
		/* The supervisor probes each plugin once a heartbeat. */
		double beats = b.n * window;
		double sv_us = (sv1 - sv0) * 1e6 / beats;
		double me_us = (me1 - me0) * 1e6 / (calls ? calls : 1);
		double med, p95, max;

		printf("window %.1f s, %d plugins, heartbeat 1 s\n", window,
		    b.n);
		printf("supervisor CPU per heartbeat: %.1f us; minimal Probe "
		    "loop: %.1f us per call (%d calls, %d failed); ratio "
		    "%.2fx (aim <= 1.3x)\n", sv_us, me_us, calls, failed,
		    me_us > 0 ? sv_us / me_us : 0);
		if (none > 0) {
			spread(one, none, &med, &p95, &max);
			printf("socket up -> registered and healthy, one new "
			    "plugin beside %d: median %.1f ms, max %.1f ms over "
			    "%d (aim < 100 ms); Nomad's 5 s probe interval is "
			    "%.0fx the median\n", b.n, med, max, none,
			    5000.0 / (med > 0 ? med : 1));
		}
		if (nh > 0) {
			spread(ms, nh, &med, &p95, &max);
			printf("socket up -> healthy in the burst of %d "
			    "started at once: median %.1f ms, p95 %.1f ms, max "
			    "%.1f ms\n", nh, med, p95, max);
		}
		printf("supervisor resident memory with %d plugins: %s, "
		    "%s of it anonymous (aim < 16 MiB); with none: %s\n",
		    b.n, rss, anon, rss0);
		printf("the minimal loop's process: %s before gRPC, %s with "
		    "its %d channels\n", me_rss0, me_rss, b.n);
	}
	b.n += EXTRA;
	stop(&b);
	return 0;
fail:
	b.n = 0;
	stop(&b);
	return 1;
}
