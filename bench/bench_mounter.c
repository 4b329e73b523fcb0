/*
 * bench_mounter.c: what berth-mounter's privilege separation costs.
 *
 * Run as root: build/bench/bench_mounter [ITERATIONS]. It enters a private
 * mount namespace, publishes a tmpfs as a plugin would, then times
 *  1. bind into a task plus unbind through the real berth-mounter (IPC,
 *     validation, the mounter's syscalls), against the same verbs linked
 *     into this process (the same validation and syscalls, no IPC), and
 *  2. 1,000 binds through the mounter, then one alloc cleanup.
 * It prints one ratio for (1) and the figures for (2). Not a test.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "mounter.h"
#include "mclient.h"
/* check.h has a fail() macro of its own. */
#undef fail

#define T "hostpath"
#define P "hp"
#define A "alloc-bench"

Berth__ErrorCode
fail(char *why, Berth__ErrorCode code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_MAX, fmt, ap);
	va_end(ap);
	return code;
}

Berth__ErrorCode
fail_errno(char *why, int err, const char *what, const char *path)
{
	return fail(why, BERTH__ERROR_CODE__ERROR_INTERNAL, "%s %s: %s", what,
	    path, strerror(err));
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The same request the client sends, checked and acted on in-process. */
static void
local_verb(struct mounter *m, bool bind, const char *name)
{
	static Berth__VolumeUsage u = BERTH__VOLUME_USAGE__INIT;
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__BindVolume b = BERTH__BIND_VOLUME__INIT;
	Berth__UnbindVolume ub = BERTH__UNBIND_VOLUME__INIT;
	struct mreply out = { .pidfd = -1 };
	struct mreq rq;
	char why[WHY_MAX];

	u.attachment = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	u.access = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER;
	env.kind = BERTH__KIND__KIND_REQUEST;
	if (bind) {
		b.plugin_type = B(T);
		b.plugin_id = B(P);
		b.alloc_id = B(A);
		b.volume_id = B("vol1");
		b.usage = &u;
		b.task = B("web");
		b.name = B(name);
		env.body_case = BERTH__ENVELOPE__BODY_BIND_VOLUME;
		env.bind_volume = &b;
	} else {
		ub.alloc_id = B(A);
		ub.task = B("web");
		ub.name = B(name);
		env.body_case = BERTH__ENVELOPE__BODY_UNBIND_VOLUME;
		env.unbind_volume = &ub;
	}
	if (request_check(&env, &rq, why) != 0 ||
	    (bind ? volume_bind(m, &rq, &out, why) :
	    volume_unbind(m, &rq, &out, why)) != 0) {
		fprintf(stderr, "bench: in-process %s: %s\n", bind ? "bind" :
		    "unbind", why);
		exit(1);
	}
}

static int n = 1000;

/* mclient asserts with check, so the bench runs as a check test. */
START_TEST(bench)
{
	int i;
	struct mounter m = { 0 };
	struct mclient c;
	double t0, ipc, local, binds, cleanup;
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *rep;
	Berth__CleanupAlloc ca = BERTH__CLEANUP_ALLOC__INIT;
	char name[32];

	harness_private_mounts();
	log_init("bench", 0);
	mc_start(&c, NULL);
	mc_publish(&c, T, P, A, "vol1");
	m.data_fd = open(c.data, O_PATH | O_DIRECTORY | O_CLOEXEC);
	m.data_dir = c.data;

	/* Warm both paths up, then measure. */
	for (i = 0; i < 20; i++) {
		mc_bind(&c, T, P, A, "vol1", "web", "warm", false);
		mc_unbind(&c, A, "web", "warm");
		local_verb(&m, true, "warm");
		local_verb(&m, false, "warm");
	}
	t0 = now();
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "v",
		    false), 0);
		ck_assert_int_eq(mc_unbind(&c, A, "web", "v"), 0);
	}
	ipc = (now() - t0) / n;
	t0 = now();
	for (i = 0; i < n; i++) {
		local_verb(&m, true, "v");
		local_verb(&m, false, "v");
	}
	local = (now() - t0) / n;
	printf("bind+unbind: %.1f us through berth-mounter, %.1f us in one "
	    "process: ratio %.2fx\n", ipc * 1e6, local * 1e6, ipc / local);

	t0 = now();
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "v%d", i);
		ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", name,
		    i % 2), 0);
	}
	binds = now() - t0;
	ca.alloc_id = B(A);
	env.body_case = BERTH__ENVELOPE__BODY_CLEANUP_ALLOC;
	env.cleanup_alloc = &ca;
	t0 = now();
	ck_assert_int_eq(mc_call(&c, &env, NULL, &rep), 0);
	cleanup = now() - t0;
	printf("1000 binds: %.1f ms (%.1f us each); one alloc cleanup: "
	    "%.1f ms, %u unmounted, %u removed\n", binds * 1e3, binds * 1e3,
	    cleanup * 1e3, rep->cleanup_reply->unmounted,
	    rep->cleanup_reply->removed);
	berth__envelope__free_unpacked(rep, NULL);
	mc_release_plugin(&c, T, P);
	close(m.data_fd);
	mc_stop(&c);
}
END_TEST

int
main(int argc, char **argv)
{
	TCase *tc = tcase_create("bench");

	if (geteuid() != 0) {
		fprintf(stderr, "bench_mounter: run as root (it mounts)\n");
		return 1;
	}
	if (argc > 1)
		n = atoi(argv[1]);
	setenv("BERTH_BUILD_DIR", BUILD_ROOT, 0);
	setenv("CK_DEFAULT_TIMEOUT", "600", 0);
	tcase_add_test(tc, bench);
	return harness_run("bench_mounter", tc);
}
