/*
 * test_chaos.c: any process killed at any moment, nothing lost. A
 * bounded soak: the real three processes and berth-csi-hostpath as a
 * privileged plugin, as root in a mount namespace of its own, run a
 * workload of allocations with volumes being started and stopped, while
 * at random moments the supervisor, the registry, the mounter, the plugin
 * or a task is killed with SIGKILL; what a service manager would restart
 * (the supervisor, which starts its helpers) is started again. After
 * every round, once berth has had a bounded time to settle, the
 * invariants are checked and printed as figures:
 *
 *   db       the registry's database is intact, every acknowledged
 *            volume is there;
 *   records  the mount records are exactly the running allocs' volumes;
 *   mounts   every record has its staging, publish and bind mounts, no
 *            mount is without a record, no volume is staged twice;
 *   claims   the claims are exactly the running allocs' volumes;
 *   plugin   the plugin runs once, registered and healthy;
 *   tasks    every running alloc's task runs once, a stopped alloc's
 *            none; every task that ended has its exit in a Terminated
 *            event;
 *
 * and at the end nothing of berth's is left running or mounted.
 *
 * BERTH_CHAOS_ROUNDS (default 12) and BERTH_CHAOS_SEED (default: the
 * time) set the run; the seed is printed so that a failure can be run
 * again. The last line: "rounds R, kills K, invariant violations V".
 *
 * It reads the supervisors' log file, on purpose: the supervisor is one
 * of the processes killed, and its API's event log starts empty with
 * each new one, so only the log holds every run's helper pids, ready
 * lines and task events across the restarts the invariants span.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <sqlite3.h>

#include "harness.h"

#define SLOTS 3			/* volumes; at most one alloc on each */
#define SETTLE_MS 45000

struct chaos {
	char *dir;
	char cfg[512], log[512], allocs[512], sock[512], data[512];
	pid_t sv;
	char active[SLOTS][32];	/* the alloc running on each volume */
	int gen, kills, violations;
	unsigned seed;
};

static const char *const targets[] = { "supervisor", "registry", "mounter",
	"plugin", "task" };

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long len;

	if (f == NULL)
		return strdup("");
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	ck_assert_ptr_nonnull(buf = malloc(len + 1));
	len = (long)fread(buf, 1, len, f);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

static int
count_in(const char *s, const char *text)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, text)) != NULL; p++)
		n++;
	return n;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The supervisor, its stderr appended to the run's log. */
static void
sv_start(struct chaos *c)
{
	int fd;

	if ((c->sv = fork()) == 0) {
		if ((fd = open(c->log, O_WRONLY | O_CREAT | O_APPEND, 0644)) < 0)
			_exit(127);
		dup2(fd, 2);
		execl(harness_bin("berth-supervisor"), "berth-supervisor",
		    "-c", c->cfg, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(c->sv, 0);
	harness_track_pid(c->sv);
}

/* The pid in the last "<name> pid N" of the log: the running helper. */
static pid_t
helper_pid(struct chaos *c, const char *name)
{
	char *log = slurp(c->log), key[64];
	const char *p, *last = NULL;
	pid_t pid;

	snprintf(key, sizeof(key), "%s pid ", name);
	for (p = log; (p = strstr(p, key)) != NULL; p++)
		last = p;
	pid = last != NULL ? (pid_t)atol(last + strlen(key)) : 0;
	free(log);
	return pid;
}

static bool
wait_ready(struct chaos *c, int ready_lines)
{
	double until = now_ms() + 15000;
	char *log;
	int n;

	do {
		log = slurp(c->log);
		n = count_in(log, "ready: berth-mounter pid");
		free(log);
		if (n >= ready_lines)
			return true;
		usleep(20000);
	} while (now_ms() < until);
	return false;
}

/* Processes whose command line or cwd names s (under the test's dir). */
static int
procs(const char *cmd_part, const char *cwd_prefix, pid_t *pids, int max)
{
	char path[64], buf[4096];
	struct dirent *de;
	int n = 0, fd;
	ssize_t len;
	DIR *d = opendir("/proc");

	while (d != NULL && (de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atol(de->d_name);

		if (pid <= 1)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;	/* a zombie, or gone */
		for (ssize_t i = 0; i < len; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[len] = '\0';
		if (cmd_part != NULL && strstr(buf, cmd_part) == NULL)
			continue;
		if (cwd_prefix != NULL) {
			snprintf(path, sizeof(path), "/proc/%ld/cwd",
			    (long)pid);
			len = readlink(path, buf, sizeof(buf) - 1);
			buf[len > 0 ? len : 0] = '\0';
			if (strncmp(buf, cwd_prefix, strlen(cwd_prefix)) != 0)
				continue;
		}
		if (n < max)
			pids[n] = pid;
		n++;
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/* berthctl's exit code, its stdout in out. */
static int
ctl(struct chaos *c, char *out, size_t n, const char *a1, const char *a2,
    const char *a3)
{
	int pipefd[2], status;
	ssize_t got, len = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(pipefd), 0);
	if ((pid = fork()) == 0) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		execl(harness_bin("berthctl"), "berthctl", "--socket", c->sock,
		    "--json", a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while ((size_t)len + 1 < n && (got = read(pipefd[0], out + len,
	    n - len - 1)) > 0)
		len += got;
	out[len] = '\0';
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void
put_file(struct chaos *c, const char *name, const char *text)
{
	char tmp[1024], path[1024];

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", c->allocs, name);
	snprintf(path, sizeof(path), "%s/%s.json", c->allocs, name);
	harness_write(tmp, text);
	ck_assert_int_eq(rename(tmp, path), 0);
}

static void
start_alloc(struct chaos *c, int slot)
{
	char doc[2048];

	snprintf(c->active[slot], sizeof(c->active[slot]), "a%dg%d", slot,
	    ++c->gen);
	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", \"volumes\": {\"data\": "
	    "{\"type\": \"csi\", \"source\": \"v%d\", \"access_mode\": "
	    "\"single-node-writer\", \"attachment_mode\": \"file-system\"}}, "
	    "\"tasks\": [{\"name\": \"t\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/sh\", \"args\": [\"-c\", \"echo %s >> "
	    "volumes/data/log; exec sleep 3600\"]}, \"kill_timeout\": \"1s\", "
	    "\"restart\": {\"attempts\": 10, \"interval\": \"1m\", "
	    "\"delay\": \"1s\", \"mode\": \"delay\"}, "
	    "\"volume_mounts\": [{\"volume\": \"data\", \"destination\": "
	    "\"data\"}]}]}", c->active[slot], slot, c->active[slot]);
	put_file(c, c->active[slot], doc);
}

static void
stop_alloc(struct chaos *c, int slot)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s.json", c->allocs, c->active[slot]);
	ck_assert_int_eq(unlink(path), 0);
	c->active[slot][0] = '\0';
}

/* Mount points under the data dir that contain part. */
static int
mounts(struct chaos *c, const char *part)
{
	char line[4096], mp[4096];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int n = 0;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
		    strncmp(mp, c->data, strlen(c->data)) == 0 &&
		    (part == NULL || strstr(mp, part) != NULL))
			n++;
	if (f != NULL)
		fclose(f);
	return n;
}

/* Rows of "SELECT alloc || '/' || volume FROM table", sorted, joined. */
static int
db_pairs(struct chaos *c, const char *table, char *out, size_t n,
    char *why, size_t wn)
{
	char path[1024], sql[256];
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/registry/registry.db", c->data);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		snprintf(why, wn, "cannot open the database");
		sqlite3_close(db);
		return -1;
	}
	sqlite3_busy_timeout(db, 5000);
	snprintf(sql, sizeof(sql), "SELECT alloc || '/' || volume FROM %s "
	    "ORDER BY 1", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(why, wn, "%s", sqlite3_errmsg(db));
		sqlite3_close(db);
		return -1;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		snprintf(out + strlen(out), n - strlen(out), "%s ",
		    sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int
db_check(struct chaos *c, int *volumes, char *why, size_t wn)
{
	char path[1024];
	sqlite3 *db;
	sqlite3_stmt *st;
	int ok = -1;

	snprintf(path, sizeof(path), "%s/registry/registry.db", c->data);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK && (sqlite3_busy_timeout(db, 5000), 1) &&
	    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			ok = strcmp((const char *)sqlite3_column_text(st, 0),
			    "ok") == 0 ? 0 : -1;
		snprintf(why, wn, "integrity_check: %s", ok == 0 ? "ok" :
		    (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM volumes", -1,
		    &st, NULL) == SQLITE_OK && sqlite3_step(st) ==
		    SQLITE_ROW)
			*volumes = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return ok;
}

/* What the registry should hold: "a0g3/v0 a2g5/v2 ", sorted. */
static void
expected_pairs(struct chaos *c, char *out, size_t n)
{
	char items[SLOTS][64];
	int k = 0;

	for (int s = 0; s < SLOTS; s++)
		if (c->active[s][0] != '\0')
			snprintf(items[k++], sizeof(items[0]), "%s/v%d",
			    c->active[s], s);
	/* Sort: allocs are named by slot first, then by generation. */
	for (int i = 0; i < k; i++)
		for (int j = i + 1; j < k; j++)
			if (strcmp(items[j], items[i]) < 0) {
				char t[64];

				memcpy(t, items[i], sizeof(t));
				memcpy(items[i], items[j], sizeof(t));
				memcpy(items[j], t, sizeof(t));
			}
	out[0] = '\0';
	for (int i = 0; i < k; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s ", items[i]);
}

/* Every figure once; violations counted; "" when all hold. */
static int
check(struct chaos *c, char *report, size_t n, bool quiet)
{
	char want[512], got[512], why[256], part[1024], out[8192];
	pid_t pids[8];
	int bad = 0, vols = 0, np;
	char *log;

	report[0] = '\0';
#define FAIL(...) do { bad++; snprintf(report + strlen(report), \
	n - strlen(report), __VA_ARGS__); } while (0)
	if (db_check(c, &vols, why, sizeof(why)) < 0 || vols != SLOTS)
		FAIL(" db(%s, %d volumes)", why, vols);
	expected_pairs(c, want, sizeof(want));
	if (db_pairs(c, "mounts", got, sizeof(got), why, sizeof(why)) < 0 ||
	    strcmp(got, want) != 0)
		FAIL(" records(want \"%s\" got \"%s\")", want, got);
	if (db_pairs(c, "claims", got, sizeof(got), why, sizeof(why)) < 0 ||
	    strcmp(got, want) != 0)
		FAIL(" claims(want \"%s\" got \"%s\")", want, got);
	for (int s = 0; s < SLOTS; s++) {
		bool on = c->active[s][0] != '\0';
		int st, pb, bd;

		/* The volume's one staging path (SLOTS < 10: no prefix of
		 * another). */
		snprintf(part, sizeof(part), "/staging/default/v%d", s);
		st = mounts(c, part);
		snprintf(part, sizeof(part), "/per-alloc/%s/", c->active[s]);
		pb = on ? mounts(c, part) : 0;
		snprintf(part, sizeof(part), "/allocs/%s/t/volumes/data",
		    c->active[s]);
		bd = on ? mounts(c, part) : 0;
		if (st != (on ? 1 : 0) || pb != (on ? 1 : 0) ||
		    bd != (on ? 1 : 0))
			FAIL(" mounts(v%d %s: staging %d publish %d bind %d)",
			    s, on ? c->active[s] : "idle", st, pb, bd);
		snprintf(part, sizeof(part), "%s/allocs/%s/t", c->data,
		    c->active[s]);
		np = on ? procs("sleep 3600", part, pids, 8) : 0;
		if (np != (on ? 1 : 0))
			FAIL(" tasks(%s: %d running)", on ? c->active[s] :
			    "idle", np);
	}
	/* Nothing else mounted: the two self-binds of the plugin, and four
	 * per running alloc: the three counted above, and its task
	 * directory's shared self-bind (which a volume bound again reaches
	 * the running task through). */
	np = 0;
	for (int s = 0; s < SLOTS; s++)
		np += c->active[s][0] != '\0' ? 4 : 0;
	if (mounts(c, NULL) != np + 2)
		FAIL(" mounts(%d in all, want %d)", mounts(c, NULL), np + 2);
	/* Tasks of allocs that stopped: none left. */
	snprintf(part, sizeof(part), "%s/allocs/", c->data);
	np = procs("sleep 3600", part, pids, 8);
	for (int s = 0; s < SLOTS; s++)
		np -= c->active[s][0] != '\0';
	if (np != 0)
		FAIL(" tasks(%d of stopped allocs)", np);
	snprintf(part, sizeof(part), "%s/hpstate", c->dir);
	np = procs(part, NULL, pids, 8);
	if (np != 1 || ctl(c, out, sizeof(out), "plugin", "status", "hp") !=
	    0 || count_in(out, "\"healthy\": true") < 2)
		FAIL(" plugin(%d running, %s)", np, strstr(out,
		    "\"healthy\": true") ? "healthy" : "not healthy");
	/* Every task that ended has its Terminated event. */
	log = slurp(c->log);
	for (const char *p = log; (p = strstr(p, "type=Started message=\"pid "))
	    != NULL; ) {
		char key[96];
		long pid;

		p += strlen("type=Started message=\"pid ");
		pid = atol(p);
		snprintf(key, sizeof(key), "type=Terminated message=\"pid %ld ",
		    pid);
		snprintf(part, sizeof(part), "/proc/%ld", pid);
		if (access(part, F_OK) != 0 && strstr(p, key) == NULL)
			FAIL(" exit(pid %ld: no Terminated event)", pid);
	}
	free(log);
#undef FAIL
	(void)quiet;
	return bad;
}

/* Until every invariant holds or SETTLE_MS pass; the violations left. */
static int
settle(struct chaos *c, char *report, size_t n)
{
	double until = now_ms() + SETTLE_MS;
	int bad;

	while ((bad = check(c, report, n, true)) > 0 && now_ms() < until)
		usleep(200000);
	return bad;
}

/* SIGKILL one target; restart what a service manager would. */
static const char *
kill_one(struct chaos *c, int t)
{
	char part[1024];
	pid_t pids[8], victim = 0;
	int np, s, status;

	switch (t) {
	case 0:
		victim = c->sv;
		break;
	case 1:
		victim = helper_pid(c, "berth-registry");
		break;
	case 2:
		victim = helper_pid(c, "berth-mounter");
		break;
	case 3:
		snprintf(part, sizeof(part), "%s/hpstate", c->dir);
		if (procs(part, NULL, pids, 8) > 0)
			victim = pids[0];
		break;
	case 4:
		s = rand_r(&c->seed) % SLOTS;
		if (c->active[s][0] == '\0')
			return "nothing (no task on that volume)";
		snprintf(part, sizeof(part), "%s/allocs/%s/t", c->data,
		    c->active[s]);
		if ((np = procs("sleep 3600", part, pids, 8)) > 0)
			victim = pids[0];
		break;
	}
	if (victim <= 1)
		return "nothing (not running)";
	kill(victim, SIGKILL);
	c->kills++;
	if (t <= 2) {
		/* The supervisor ends with its helper (or is the one
		 * killed); the helpers end with it. Start it again. */
		for (int i = 0; i < 100 && waitpid(c->sv, &status, WNOHANG) !=
		    c->sv; i++)
			usleep(50000);
		kill(c->sv, SIGKILL);	/* a stop timeout, if it lingers */
		waitpid(c->sv, &status, 0);
		pid_wait_gone(helper_pid(c, "berth-mounter"), 5000);
		pid_wait_gone(helper_pid(c, "berth-registry"), 5000);
		np = 0;
		{
			char *log = slurp(c->log);

			np = count_in(log, "ready: berth-mounter pid");
			free(log);
		}
		sv_start(c);
		ck_assert_msg(wait_ready(c, np + 1), "the supervisor did not "
		    "come back after the %s was killed", targets[t]);
	}
	return targets[t];
}

START_TEST(any_process_killed_at_any_moment)
{
	struct chaos c = { 0 };
	char text[2048], report[4096], out[4096], part[1024];
	const char *env;
	int rounds = 12, bad, r;
	pid_t pids[8];

	env = getenv("BERTH_CHAOS_ROUNDS");
	if (env != NULL && atoi(env) > 0)
		rounds = atoi(env);
	env = getenv("BERTH_CHAOS_SEED");
	c.seed = env != NULL ? (unsigned)atol(env) : (unsigned)time(NULL);
	printf("chaos: seed %u, %d rounds (BERTH_CHAOS_SEED, "
	    "BERTH_CHAOS_ROUNDS)\n", c.seed, rounds);
	fflush(stdout);

	harness_private_mounts();
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	c.dir = harness_tmpdir("chaos");
	snprintf(c.cfg, sizeof(c.cfg), "%s/berth.json", c.dir);
	snprintf(c.log, sizeof(c.log), "%s/supervisor.log", c.dir);
	snprintf(c.allocs, sizeof(c.allocs), "%s/allocs", c.dir);
	snprintf(c.sock, sizeof(c.sock), "%s/run/api.sock", c.dir);
	snprintf(c.data, sizeof(c.data), "%s/data", c.dir);
	ck_assert_int_eq(mkdir(c.allocs, 0755), 0);
	snprintf(text, sizeof(text), "%s/defs", c.dir);
	ck_assert_int_eq(mkdir(text, 0755), 0);
	snprintf(part, sizeof(part), "%s/defs/hostpath.conf", c.dir);
	snprintf(text, sizeof(text), "exec %s\narg --node-id\narg n1\n"
	    "arg --state-dir\narg %s/hpstate\narg --mode\narg monolith\n"
	    "arg --strict\narg --endpoint={csi_endpoint}\n"
	    "cap CAP_SYS_ADMIN\ncap CAP_CHOWN\n",
	    harness_bin("berth-csi-hostpath"), c.dir);
	harness_write(part, text);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s\", \"run_dir\": "
	    "\"%s/run\", \"alloc_dir\": \"%s\", \"plugins_dir\": \"%s/defs\", "
	    "\"plugin_heartbeat\": \"1s\", \"plugin_resync\": \"2s\"}", c.data,
	    c.dir, c.allocs, c.dir);
	harness_write(c.cfg, text);

	sv_start(&c);
	ck_assert(wait_ready(&c, 1));
	put_file(&c, "plugin", "{\"id\": \"plugin\", \"tasks\": [{\"name\": "
	    "\"p\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hostpath\"}, \"csi_plugin\": {\"id\": \"hp\", \"type\": "
	    "\"monolith\"}, \"restart\": {\"attempts\": 10, \"interval\": "
	    "\"1m\", \"delay\": \"1s\", \"mode\": \"delay\"}}]}");
	for (int i = 0; i < 150 && ctl(&c, out, sizeof(out), "plugin",
	    "status", "hp") != 0; i++)
		usleep(100000);
	for (int s = 0; s < SLOTS; s++) {
		snprintf(part, sizeof(part), "%s/v%d.json", c.dir, s);
		snprintf(text, sizeof(text), "{\"id\": \"v%d\", \"plugin_id\": "
		    "\"hp\", \"access_mode\": \"single-node-writer\"}", s);
		harness_write(part, text);
		for (int i = 0; i < 50 && ctl(&c, out, sizeof(out), "volume",
		    "create", part) != 0; i++)
			usleep(200000);
	}
	bad = settle(&c, report, sizeof(report));
	ck_assert_msg(bad == 0, "before any kill:%s", report);

	for (r = 1; r <= rounds; r++) {
		int s = rand_r(&c.seed) % SLOTS, t = rand_r(&c.seed) % 5;
		const char *what;

		if (c.active[s][0] != '\0')
			stop_alloc(&c, s);
		else
			start_alloc(&c, s);
		/* At a random moment of that alloc's start or stop. */
		usleep((rand_r(&c.seed) % 400) * 1000);
		what = kill_one(&c, t);
		bad = settle(&c, report, sizeof(report));
		c.violations += bad;
		printf("round %d: killed %s; running allocs [%s %s %s]; "
		    "mounts %d; violations %d%s\n", r, what, c.active[0],
		    c.active[1], c.active[2], mounts(&c, NULL), bad, report);
		fflush(stdout);
	}

	/* The end: everything stopped, nothing of berth's left. */
	for (int s = 0; s < SLOTS; s++)
		if (c.active[s][0] != '\0')
			stop_alloc(&c, s);
	bad = settle(&c, report, sizeof(report));
	c.violations += bad;
	snprintf(part, sizeof(part), "%s/plugin.json", c.allocs);
	unlink(part);
	for (int i = 0; i < 200 && mounts(&c, NULL) > 0; i++)
		usleep(50000);
	kill(c.sv, SIGTERM);
	waitpid(c.sv, NULL, 0);
	for (int i = 0; i < 100 && procs(c.dir, NULL, pids, 8) > 0; i++)
		usleep(50000);
	if (procs(c.dir, NULL, pids, 8) > 0 || mounts(&c, NULL) > 0) {
		c.violations++;
		printf("left behind: %d processes, %d mounts\n",
		    procs(c.dir, NULL, pids, 8), mounts(&c, NULL));
	}
	printf("rounds %d, kills %d, invariant violations %d\n", rounds,
	    c.kills, c.violations);
	fflush(stdout);
	ck_assert_int_eq(c.violations, 0);
	harness_rmtree(c.dir);
	free(c.dir);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("chaos");

	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, any_process_killed_at_any_moment);
	return harness_run("chaos", tc);
}
