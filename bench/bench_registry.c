/*
 * bench_registry.c: what berth-registry's group commit buys, measured side
 * by side in one run on one disk:
 *
 *   1. durable register+deregister pairs per second through the IPC, with
 *      many requests in flight, against a plain SQLite loop that commits
 *      each write in its own transaction with the same durability (WAL,
 *      synchronous=FULL) in the same directory;
 *   2. restoring 10,000 handles after a restart (start, hello, list);
 *   3. event fan-out latency to 10 subscribers.
 *
 * Run as root (it starts berth-registry the way the supervisor does):
 *   bench_registry [-d DIR] [-s SECONDS]
 * DIR defaults to a new directory under /var/tmp, removed afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "registry_client.h"

#define FANOUT_SUBS 10
#define FANOUT_WRITES 1000
#define RESTORE_HANDLES 10000
#define PAIRS_IN_FLIGHT 256

struct bench {
	char dir[256];
	char bin[512];
	pid_t pid;
	struct event_base *base;
	struct chan *chan;
	struct chan_ops ops;
	struct regclient *rc;
	bool closed;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void __attribute__((noreturn))
die(const char *what)
{
	fprintf(stderr, "bench_registry: %s\n", what);
	exit(1);
}

static void
on_message(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	struct bench *b = arg;

	(void)c;
	if (fd >= 0)
		close(fd);
	if (b->rc != NULL && env->kind == BERTH__KIND__KIND_NOTICE)
		regclient_notice(b->rc, env);
}

static void
on_close(struct chan *c, const char *why, void *arg)
{
	struct bench *b = arg;

	(void)c;
	(void)why;
	b->closed = true;
}

static void
loop_until(struct bench *b, const bool *flag, double seconds)
{
	double end = now() + seconds;

	while (!*flag && now() < end)
		event_base_loop(b->base, EVLOOP_ONCE);
	if (!*flag)
		die("timed out waiting for berth-registry");
}

static void
hello_cb(struct chan *c, Berth__Envelope *env, int fd, void *arg)
{
	(void)c;
	(void)fd;
	if (env->error != NULL)
		die("berth-registry refused the hello");
	*(bool *)arg = true;
}

static void
start(struct bench *b)
{
	char *argv[] = { b->bin, "--spawned", "--data-dir", b->dir, "--user",
		"berth-registry", NULL };
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Hello hello = BERTH__HELLO__INIT;
	char log[400];
	bool done = false;
	int sp[2], lfd;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		die("socketpair");
	snprintf(log, sizeof(log), "%s/registry.log", b->dir);
	if ((b->pid = fork()) < 0)
		die("fork");
	if (b->pid == 0) {
		if ((lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644)) >= 0)
			dup2(lfd, STDERR_FILENO);
		dup2(sp[1], 3);
		execv(argv[0], argv);
		_exit(127);
	}
	close(sp[1]);
	b->closed = false;
	b->ops.on_message = on_message;
	b->ops.on_close = on_close;
	if ((b->chan = chan_new(b->base, sp[0], "berth-registry", &b->ops,
	    b)) == NULL)
		die("chan_new");
	hello.protocol_version = BERTH_PROTOCOL_VERSION;
	hello.role = BERTH__ROLE__ROLE_SUPERVISOR;
	hello.pid = getpid();
	env.body_case = BERTH__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	if (chan_request(b->chan, &env, -1, 10000, hello_cb, &done) < 0)
		die("hello");
	loop_until(b, &done, 15);
	if ((b->rc = regclient_new(b->base, b->chan, 60000)) == NULL)
		die("regclient_new");
}

static void
stop(struct bench *b)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Shutdown sd = BERTH__SHUTDOWN__INIT;
	int status;

	sd.reason = "bench";
	env.body_case = BERTH__ENVELOPE__BODY_SHUTDOWN;
	env.shutdown = &sd;
	chan_notice(b->chan, &env, -1);
	loop_until(b, &b->closed, 15);
	waitpid(b->pid, &status, 0);
	b->pid = 0;
	regclient_free(b->rc);
	b->rc = NULL;
	chan_free(b->chan);
	b->chan = NULL;
}

/* 1a. The baseline: one write per transaction, same durability. */
static double
plain_pairs_per_s(const char *dir, double seconds, long *pairs)
{
	char path[400];
	sqlite3 *db;
	sqlite3_stmt *ins, *del;
	double t0, el;
	long n = 0;

	snprintf(path, sizeof(path), "%s/plain.db", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/plain.db-wal", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/plain.db", dir);
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = "
	    "FULL; CREATE TABLE plugins (type INTEGER, name TEXT, alloc TEXT, "
	    "endpoint TEXT, provider TEXT, provider_version TEXT, "
	    "capabilities BLOB, registered_at INTEGER, create_index INTEGER, "
	    "modify_index INTEGER, UNIQUE (type, name, alloc))", NULL, NULL,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO plugins VALUES (2, 'bench', "
	    "?1, 'unix:///bench', 'bench', '1.0', x'00', 0, ?2, ?2)", -1, &ins,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "DELETE FROM plugins WHERE type = 2 AND "
	    "name = 'bench' AND alloc = ?1", -1, &del, NULL) != SQLITE_OK)
		die("plain sqlite setup");
	t0 = now();
	while ((el = now() - t0) < seconds) {
		char alloc[32];

		snprintf(alloc, sizeof(alloc), "alloc-%ld", n);
		sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
		sqlite3_bind_text(ins, 1, alloc, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(ins, 2, n);
		if (sqlite3_step(ins) != SQLITE_DONE)
			die("plain insert");
		sqlite3_reset(ins);
		if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			die("plain commit");
		sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
		sqlite3_bind_text(del, 1, alloc, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(del) != SQLITE_DONE)
			die("plain delete");
		sqlite3_reset(del);
		if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			die("plain commit");
		n++;
	}
	sqlite3_finalize(ins);
	sqlite3_finalize(del);
	sqlite3_close(db);
	*pairs = n;
	return n / el;
}

/* 1b. The same pairs through the registry, many in flight. */
struct pairs {
	struct bench *b;
	long started, done, limit;
	double end;
	bool finished;
	int inflight;
};

static void pair_start(struct pairs *p);

static void
pair_deregistered(const struct regclient_result *res, void *arg)
{
	struct pairs *p = arg;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		die(res->message);
	p->done++;
	p->inflight--;
	if (now() < p->end)
		pair_start(p);
	else if (p->inflight == 0)
		p->finished = true;
}

static void
pair_registered(const struct regclient_result *res, void *arg)
{
	struct pairs *p = arg;
	const Berth__PluginInstance *pi;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		die(res->message);
	pi = res->reply->register_plugin_reply->instance;
	if (regclient_deregister(p->b->rc, pi->type, pi->name, pi->alloc,
	    pair_deregistered, p) < 0)
		die("deregister");
}

static void
pair_start(struct pairs *p)
{
	Berth__PluginInstance pi = BERTH__PLUGIN_INSTANCE__INIT;
	char alloc[32];

	snprintf(alloc, sizeof(alloc), "alloc-%ld", p->started++);
	pi.type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE;
	pi.name = "bench";
	pi.alloc = alloc;
	pi.endpoint = "unix:///bench";
	pi.provider = "bench";
	pi.provider_version = "1.0";
	p->inflight++;
	if (regclient_register(p->b->rc, &pi, pair_registered, p) < 0)
		die("register");
}

static double
ipc_pairs_per_s(struct bench *b, double seconds, long *pairs)
{
	struct pairs p = { .b = b };
	double t0 = now();
	int i;

	p.end = t0 + seconds;
	for (i = 0; i < PAIRS_IN_FLIGHT; i++)
		pair_start(&p);
	loop_until(b, &p.finished, seconds + 30);
	*pairs = p.done;
	return p.done / (now() - t0);
}

/* 2. Restore. */
struct count {
	long n, want;
	bool done;
};

static void
counted(const struct regclient_result *res, void *arg)
{
	struct count *c = arg;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		die(res->message);
	if (++c->n == c->want)
		c->done = true;
}

static void
put_handles(struct bench *b)
{
	struct count c = { .want = RESTORE_HANDLES };
	static uint8_t state[256];
	char alloc[64], task[16];
	long i;

	for (i = 0; i < RESTORE_HANDLES; i++) {
		Berth__Handle h = BERTH__HANDLE__INIT;
		Berth__ReattachHandle ra = BERTH__REATTACH_HANDLE__INIT;
		Berth__ProcessHandle ph = BERTH__PROCESS_HANDLE__INIT;
		Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;

		snprintf(alloc, sizeof(alloc), "%08lx-0000-4000-8000-%012lx",
		    i / 4, i);
		snprintf(task, sizeof(task), "task%ld", i % 5);
		switch (i % 4) {
		case 0:
			ra.type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER;
			ra.name = "docker";
			ra.alloc = alloc;
			ra.task = task;
			ra.state.data = state;
			ra.state.len = sizeof(state);
			h.handle_case = BERTH__HANDLE__HANDLE_REATTACH;
			h.reattach = &ra;
			break;
		case 1:
			ph.plugin = "hostpath";
			ph.alloc = alloc;
			ph.pid = 1000 + i;
			ph.start_time = 5000 + i;
			h.handle_case = BERTH__HANDLE__HANDLE_PROCESS;
			h.process = &ph;
			break;
		default:
			mh.plugin = "hostpath";
			mh.namespace_ = "default";
			mh.volume = "vol";
			mh.alloc = alloc;
			mh.task = task;
			mh.usage = "rw-file-system-single-node-writer";
			mh.staged = true;
			mh.published = true;
			h.handle_case = BERTH__HANDLE__HANDLE_MOUNT;
			h.mount = &mh;
			break;
		}
		if (regclient_put_handle(b->rc, &h, counted, &c) < 0)
			die("put_handle");
		/* Stay within the channel's queue. */
		if (i % 1000 == 999)
			while (c.n < i - 2000)
				event_base_loop(b->base, EVLOOP_ONCE);
	}
	loop_until(b, &c.done, 60);
}

struct listed {
	size_t n;
	bool done;
};

static void
listed(const struct regclient_result *res, Berth__Handle *const *items,
    size_t n, void *arg)
{
	struct listed *l = arg;

	(void)items;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		die(res->message);
	l->n = n;
	l->done = true;
}

/* 3. Fan-out. */
struct fan {
	uint64_t index;			/* the newest event seen */
	double at;			/* when it came */
};

static void
fan_event(struct regclient_sub *sub, enum regclient_event_kind kind,
    const Berth__Event *ev, void *arg)
{
	struct fan *f = arg;

	(void)sub;
	if (kind != REGCLIENT_EVENT)
		die("a fan-out subscription lost events");
	f->index = ev->index;
	f->at = now();
}

struct one {
	bool done;
	double at;
	uint64_t index;
};

static void
one_done(const struct regclient_result *res, void *arg)
{
	struct one *o = arg;

	if (res->code != BERTH__ERROR_CODE__ERROR_NONE)
		die(res->message);
	o->at = now();
	o->index = res->reply->register_plugin_reply->instance->modify_index;
	o->done = true;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
pct(double *v, int n, double p)
{
	return v[(int)(p * (n - 1))];
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* "after N requests in M commits" from the registry's last stop line. */
static double
batch_size(const char *dir)
{
	char path[400], line[1024];
	unsigned long long reqs = 0, commits = 0;
	FILE *f;
	char *s;

	snprintf(path, sizeof(path), "%s/registry.log", dir);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if ((s = strstr(line, " after ")) != NULL)
			sscanf(s, " after %llu requests in %llu commits",
			    &reqs, &commits);
	fclose(f);
	return commits ? (double)reqs / commits : 0;
}

int
main(int argc, char **argv)
{
	static struct fan fans[FANOUT_SUBS];
	static double e2e[FANOUT_WRITES], after_ack[FANOUT_WRITES],
	    ack[FANOUT_WRITES];
	struct bench b = { 0 };
	struct passwd *pw;
	struct listed l = { 0 };
	char path[400], self[400], *slash;
	const char *dir = NULL;
	double seconds = 3, plain, ipc, t0, t1, t2, avg_batch;
	long plain_n, ipc_n;
	bool made = false;
	int ch, i, j;
	ssize_t len;

	while ((ch = getopt(argc, argv, "d:s:")) != -1) {
		switch (ch) {
		case 'd': dir = optarg; break;
		case 's': seconds = atof(optarg); break;
		default:
			fprintf(stderr, "usage: bench_registry [-d DIR] "
			    "[-s SECONDS]\n");
			return 2;
		}
	}
	if (geteuid() != 0)
		die("run as root: it starts berth-registry as the supervisor "
		    "does");
	log_init("bench_registry", 0);
	signal(SIGPIPE, SIG_IGN);
	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) < 0)
		die("readlink /proc/self/exe");
	self[len] = '\0';
	/* The build tree: bench/bench_registry next to ../berth-registry. */
	if ((slash = strrchr(self, '/')) != NULL)
		*slash = '\0';
	snprintf(b.bin, sizeof(b.bin), "%s/../berth-registry", self);
	if (access(b.bin, X_OK) < 0)
		snprintf(b.bin, sizeof(b.bin), "%s/berth-registry", self);
	if (dir == NULL) {
		snprintf(b.dir, sizeof(b.dir), "/var/tmp/berth-bench-XXXXXX");
		if (mkdtemp(b.dir) == NULL)
			die("mkdtemp");
		made = true;
	} else {
		snprintf(b.dir, sizeof(b.dir), "%s", dir);
	}
	chmod(b.dir, 0755);
	snprintf(path, sizeof(path), "%s/registry", b.dir);
	if ((pw = getpwnam("berth-registry")) == NULL)
		die("no user berth-registry");
	if ((mkdir(path, 0700) < 0 && errno != EEXIST) ||
	    chown(path, pw->pw_uid, pw->pw_gid) < 0 || chmod(path, 0700) < 0)
		die("preparing the registry directory");
	if ((b.base = event_base_new()) == NULL)
		die("event_base_new");

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("berth-registry benchmark in %s (%s)\n", b.dir, b.bin);

	/* 1. Durable pairs per second. */
	/* The disk's speed drifts: measure the baseline before and after. */
	plain = plain_pairs_per_s(b.dir, seconds / 2, &plain_n);
	start(&b);
	ipc = ipc_pairs_per_s(&b, seconds, &ipc_n);
	stop(&b);
	{
		long n2;
		double p2 = plain_pairs_per_s(b.dir, seconds / 2, &n2);

		printf("   (baseline before %.0f, after %.0f pairs/s)\n", plain,
		    p2);
		/* All baseline pairs over all baseline time. */
		plain = (plain_n + n2) / (plain_n / plain + n2 / p2);
		plain_n += n2;
	}
	avg_batch = batch_size(b.dir);
	printf("\n1. durable register+deregister pairs per second "
	    "(WAL, synchronous=FULL)\n");
	printf("   plain SQLite, one write per transaction: %9.0f pairs/s "
	    "(%ld pairs)\n", plain, plain_n);
	printf("   through berth-registry IPC, %d in flight: %9.0f pairs/s "
	    "(%ld pairs, %.1f requests per commit)\n", PAIRS_IN_FLIGHT, ipc,
	    ipc_n, avg_batch);
	printf("   ratio IPC / plain: %.2fx (aim: 5x)\n", ipc / plain);

	/* 2. Restore. */
	start(&b);
	put_handles(&b);
	stop(&b);
	t0 = now();
	start(&b);
	t1 = now();
	if (regclient_list_handles(b.rc, 0, listed, &l) < 0)
		die("list_handles");
	loop_until(&b, &l.done, 30);
	t2 = now();
	if (l.n != RESTORE_HANDLES)
		die("restore did not return every handle");
	printf("\n2. restore of %d handles after a restart\n", RESTORE_HANDLES);
	printf("   start + hello + list: %.1f ms (list alone %.1f ms); aim "
	    "< 100 ms: %.2fx of the budget\n", (t2 - t0) * 1e3,
	    (t2 - t1) * 1e3, (t2 - t0) * 1e3 / 100);

	/* 3. Fan-out to 10 subscribers, one durable write at a time. */
	for (j = 0; j < FANOUT_SUBS; j++)
		if (regclient_subscribe(b.rc, 0, true, fan_event,
		    &fans[j]) == NULL)
			die("subscribe");
	for (i = 0; i < 20; i++)
		event_base_loop(b.base, EVLOOP_NONBLOCK);
	for (i = 0; i < FANOUT_WRITES; i++) {
		Berth__PluginInstance pi = BERTH__PLUGIN_INSTANCE__INIT;
		struct one o = { 0 };
		char alloc[32];
		double sent, last = 0;
		bool all = false;

		snprintf(alloc, sizeof(alloc), "fan-%d", i);
		pi.type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE;
		pi.name = "fan";
		pi.alloc = alloc;
		pi.endpoint = "unix:///fan";
		sent = now();
		if (regclient_register(b.rc, &pi, one_done, &o) < 0)
			die("register");
		loop_until(&b, &o.done, 10);
		while (!all) {
			all = true;
			for (j = 0; j < FANOUT_SUBS; j++)
				if (fans[j].index < o.index)
					all = false;
			if (!all && now() - sent > 10)
				die("fan-out events did not arrive");
			if (!all)
				event_base_loop(b.base, EVLOOP_ONCE);
		}
		for (j = 0; j < FANOUT_SUBS; j++)
			if (fans[j].at > last)
				last = fans[j].at;
		ack[i] = (o.at - sent) * 1e6;
		e2e[i] = (last - sent) * 1e6;
		after_ack[i] = (last - o.at) * 1e6;
	}
	qsort(ack, FANOUT_WRITES, sizeof(double), cmp_double);
	qsort(e2e, FANOUT_WRITES, sizeof(double), cmp_double);
	qsort(after_ack, FANOUT_WRITES, sizeof(double), cmp_double);
	printf("\n3. event fan-out to %d subscribers, %d durable writes one "
	    "at a time (microseconds)\n", FANOUT_SUBS, FANOUT_WRITES);
	printf("   write acknowledged:          p50 %7.0f  p99 %7.0f\n",
	    pct(ack, FANOUT_WRITES, .5), pct(ack, FANOUT_WRITES, .99));
	printf("   event at all %d subscribers: p50 %7.0f  p99 %7.0f\n",
	    FANOUT_SUBS, pct(e2e, FANOUT_WRITES, .5),
	    pct(e2e, FANOUT_WRITES, .99));
	printf("   fan-out after the ack:       p50 %7.0f  p99 %7.0f\n",
	    pct(after_ack, FANOUT_WRITES, .5),
	    pct(after_ack, FANOUT_WRITES, .99));
	printf("   ratio event-at-all / ack (p50): %.2fx\n",
	    pct(e2e, FANOUT_WRITES, .5) / pct(ack, FANOUT_WRITES, .5));
	stop(&b);
	event_base_free(b.base);
	if (made)
		nftw(b.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
