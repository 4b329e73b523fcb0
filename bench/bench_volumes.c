/*
 * bench_volumes.c: what berth adds between an allocation submitted and
 * its task started with a volume, measured side by side in one run with
 * berth-csi-hostpath as a privileged plugin:
 *
 *   1. one allocation at a time (ROUNDS of them): from the API's answer
 *      to the submit until the task's first act (a file it creates in
 *      its volume), split into the plugin's RPC time (the volume
 *      manager's own count, from its log line), the task's own start (a
 *      shell that creates a file, timed on its own in the same run), and
 *      what is left: berth's share (aim: under 20%);
 *   2. 100 allocations with a volume each, submitted at once: time until
 *      every task has started, and the RPC share of it.
 *
 * Run as root from the build directory:
 *   BERTH_BUILD_DIR=$PWD bench/bench_volumes [-n ALLOCS] [-r ROUNDS]
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

#include "benchutil.h"
#include "harness.h"
#include "http.h"

struct bench {
	char *dir;
	char log[512], sock[512];
	pid_t sv;
};

/* 0 on a 2xx answer. */
static int
api(struct bench *b, const char *method, const char *path, const char *body)
{
	struct http_response r;
	char why[256];
	int ok;

	if (http_request(b->sock, method, path, body, body ? strlen(body) : 0,
	    30000, &r, why, sizeof(why)) < 0) {
		fprintf(stderr, "bench_volumes: %s %s: %s\n", method, path, why);
		return -1;
	}
	ok = r.status / 100 == 2;
	if (!ok)
		fprintf(stderr, "bench_volumes: %s %s: %d %s\n", method, path,
		    r.status, r.body);
	http_response_free(&r);
	return ok ? 0 : -1;
}

static void
start(struct bench *b)
{
	char cfg[512], text[2048], path[1024];
	int fd;

	harness_private_mounts();
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	b->dir = harness_tmpdir("bench-volumes");
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
	    "arg --strict\narg --endpoint={csi_endpoint}\n"
	    "cap CAP_SYS_ADMIN\ncap CAP_CHOWN\n",
	    harness_bin("berth-csi-hostpath"), b->dir);
	harness_write(path, text);
	snprintf(cfg, sizeof(cfg), "%s/berth.json", b->dir);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s/data\", "
	    "\"run_dir\": \"%s/run\", \"alloc_dir\": \"%s/allocs\", "
	    "\"plugins_dir\": \"%s/defs\", \"plugin_heartbeat\": \"5s\"}",
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

static int
volume(struct bench *b, const char *id)
{
	char path[256];

	snprintf(path, sizeof(path), "/v1/volume/%s/create", id);
	return api(b, "PUT", path, "{\"plugin_id\": \"hp\", \"access_mode\": "
	    "\"single-node-writer\"}");
}

static int
submit(struct bench *b, const char *id, const char *vol)
{
	char doc[2048];

	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", \"volumes\": {\"data\": "
	    "{\"type\": \"csi\", \"source\": \"%s\", \"access_mode\": "
	    "\"single-node-writer\", \"attachment_mode\": \"file-system\"}}, "
	    "\"tasks\": [{\"name\": \"t\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/sh\", \"args\": [\"-c\", \"touch "
	    "volumes/data/started; exec sleep 3600\"]}, \"kill_timeout\": "
	    "\"1s\", \"volume_mounts\": [{\"volume\": \"data\", "
	    "\"destination\": \"data\"}]}]}", id, vol);
	return api(b, "PUT", "/v1/allocations", doc);
}

/* Has the task in volume vol created its file? */
static bool
started(struct bench *b, const char *vol)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/hpstate/volumes/%s/started", b->dir,
	    vol);
	return access(path, F_OK) == 0;
}

/*
 * "in place in 12.3 ms, 4.5 ms of it in 6 plugin RPCs" for alloc id:
 * the RPC time, and the volume manager's whole time in *job.
 */
static double
rpc_ms(const char *log, const char *id, double *job)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "volmgr: alloc %s: 1 volume in place in ",
	    id);
	if ((p = strstr(log, key)) == NULL)
		return -1;
	*job = atof(p + strlen(key));
	if ((p = strstr(p, " ms, ")) == NULL)
		return -1;
	return atof(p + 5);
}

/* The task's own start: fork, exec a shell that touches a file. */
static double
shell_ms(const char *dir)
{
	char path[1024];
	double t0 = bench_now_ms(), t;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/shell-started", dir);
	unlink(path);
	if ((pid = fork()) == 0) {
		execl("/bin/sh", "sh", "-c", "touch \"$0\"; exec sleep 1", path,
		    (char *)NULL);
		_exit(127);
	}
	while (access(path, F_OK) < 0)
		usleep(100);
	t = bench_now_ms() - t0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return t;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	struct bench b;
	int n = 100, rounds = 20, c, i, done;
	double total[64], rpc[64], job[64], shell[64], t0, t, burst, rpcsum = 0;
	double unused;
	char id[64], vol[64], path[256], *log;

	while ((c = getopt(argc, argv, "n:r:")) != -1) {
		if (c == 'n')
			n = atoi(optarg);
		else if (c == 'r')
			rounds = atoi(optarg);
		else {
			fprintf(stderr, "usage: bench_volumes [-n ALLOCS] "
			    "[-r ROUNDS]\n");
			return 2;
		}
	}
	if (n < 1 || n > 500 || rounds < 1 || rounds > 64) {
		fprintf(stderr, "bench_volumes: 1..500 allocs, 1..64 rounds\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench_volumes: run as root\n");
		return 77;
	}
	start(&b);
	if (!bench_wait_log(b.log, "ready:", 1, 10000))
		goto fail;
	snprintf(path, sizeof(path), "%s/allocs/plugin.json", b.dir);
	harness_write(path, "{\"id\": \"plugin\", \"tasks\": [{\"name\": \"p\", "
	    "\"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hostpath\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"monolith\"}}]}");
	if (!bench_wait_log(b.log, "type=controller alloc=plugin health=healthy", 1,
	    20000) || !bench_wait_log(b.log, "type=node alloc=plugin health=healthy",
	    1, 20000))
		goto fail;

	/* 1: one at a time. */
	for (i = 0; i < rounds; i++) {
		snprintf(id, sizeof(id), "one%d", i);
		snprintf(vol, sizeof(vol), "v-one%d", i);
		if (volume(&b, vol) < 0)
			goto fail;
		shell[i] = shell_ms(b.dir);
		t0 = bench_now_ms();
		if (submit(&b, id, vol) < 0)
			goto fail;
		while (!started(&b, vol)) {
			if (bench_now_ms() - t0 > 30000)
				goto fail;
			usleep(100);
		}
		total[i] = bench_now_ms() - t0;
	}
	if (!bench_wait_log(b.log, "1 volume in place in", rounds, 10000))
		goto fail;
	log = bench_slurp(b.log);
	for (i = 0; i < rounds; i++) {
		snprintf(id, sizeof(id), "one%d", i);
		rpc[i] = rpc_ms(log, id, &job[i]);
	}
	free(log);

	/* 2: n at once. */
	for (i = 0; i < n; i++) {
		snprintf(vol, sizeof(vol), "v-many%d", i);
		if (volume(&b, vol) < 0)
			goto fail;
	}
	t0 = bench_now_ms();
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "many%d", i);
		snprintf(vol, sizeof(vol), "v-many%d", i);
		if (submit(&b, id, vol) < 0)
			goto fail;
	}
	for (done = 0; done < n; ) {
		for (done = 0, i = 0; i < n; i++) {
			snprintf(vol, sizeof(vol), "v-many%d", i);
			done += started(&b, vol);
		}
		if (bench_now_ms() - t0 > 120000)
			goto fail;
		usleep(1000);
	}
	burst = bench_now_ms() - t0;
	if (!bench_wait_log(b.log, "1 volume in place in", rounds + n, 10000))
		goto fail;
	log = bench_slurp(b.log);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "many%d", i);
		if ((t = rpc_ms(log, id, &unused)) > 0)
			rpcsum += t;
	}
	free(log);

	{
		double tot = 0, r = 0, sh = 0, jb = 0, berth;

		for (i = 0; i < rounds; i++) {
			tot += total[i];
			r += rpc[i];
			sh += shell[i];
			jb += job[i];
		}
		tot /= rounds;
		r /= rounds;
		sh /= rounds;
		jb /= rounds;
		berth = tot - r - sh;
		qsort(total, rounds, sizeof(*total), cmp);
		printf("one alloc with one volume, submitted to task started, "
		    "mean of %d: %.1f ms (median %.1f)\n", rounds, tot,
		    total[rounds / 2]);
		printf("  plugin RPCs %.1f ms (%.0f%%), the task's own start "
		    "%.1f ms (%.0f%%), berth %.1f ms: berth's share %.0f%% "
		    "(aim < 20%%)\n", r, 100 * r / tot, sh, 100 * sh / tot,
		    berth, 100 * berth / tot);
		printf("  of berth's: the volume manager %.1f ms (records, "
		    "claim, mounter; RPCs excluded), the rest (API, alloc "
		    "file, task directory, shim, handle) %.1f ms\n", jb - r,
		    berth - (jb - r));
		printf("%d allocs with a volume each, submitted at once: all "
		    "started in %.0f ms (%.1f allocs/s); plugin RPCs summed "
		    "over allocs %.0f ms\n", n, burst, n * 1000.0 / burst,
		    rpcsum);
	}
	stop(&b);
	return 0;
fail:
	stop(&b);
	return 1;
}
