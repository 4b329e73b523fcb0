/*
 * test_attack_startup.c: the supervisor's root start-up (spawn mode)
 * against its own user, berth, as a compromised supervisor or a task
 * running as that user would attack it.
 *
 * The race: an attacker process running as berth swaps symlinks to
 * root:root 0600 victim files in and out of the API socket's name in
 * berth's run directory (renameat2 RENAME_EXCHANGE in a tight loop), and
 * plants them at other names there; a second one, as the registry's
 * user, does the same in registry/ and tries to replace registry/
 * itself; while the supervisor is started and killed thousands of
 * times, at random moments of its start-up (BERTH_STARTUP_RESTARTS sets
 * how many; 3,000 by default). No victim may change owner, mode or content.
 *
 * Then the layouts that put root's paths where berth can write: a data,
 * run or config path through a berth-owned directory, an existing data
 * directory that berth owns or that others can write, a run directory
 * that belongs to someone else, helper binaries in berth's directory.
 * Each is refused, and the victims behind the planted symlinks are
 * untouched.
 *
 * Ends with "N attacks tried, 0 succeeded".
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>

#include "harness.h"

#define NVICTIMS 3

struct scene {
	char *dir;
	char cfg[512], data[512], run[512], victims[NVICTIMS][512];
	char victim_dir[512], log[512];
	uid_t uid;
	gid_t gid;
};

/* What the attacker did, seen through shared memory. */
struct score {
	volatile unsigned long swaps, plants, denied;
};

static void
write_file(const char *path, const char *text, mode_t mode, uid_t uid,
    gid_t gid)
{
	harness_write(path, text);
	ck_assert_int_eq(chown(path, uid, gid), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void
scene_new(struct scene *s, const char *data, const char *run)
{
	struct passwd *pw = getpwnam("berth");
	char text[2048];
	int i;

	ck_assert_ptr_nonnull(pw);
	s->uid = pw->pw_uid;
	s->gid = pw->pw_gid;
	harness_private_mounts();
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	s->dir = harness_tmpdir("startup");
	snprintf(s->cfg, sizeof(s->cfg), "%s/berth.json", s->dir);
	snprintf(s->log, sizeof(s->log), "%s/supervisor.log", s->dir);
	snprintf(s->data, sizeof(s->data), "%s/%s", s->dir, data);
	snprintf(s->run, sizeof(s->run), "%s/%s", s->dir, run);
	/* A berth-owned directory, for the layouts that use one. */
	snprintf(text, sizeof(text), "%s/berths", s->dir);
	ck_assert_int_eq(mkdir(text, 0755), 0);
	ck_assert_int_eq(chown(text, s->uid, s->gid), 0);
	snprintf(text, sizeof(text), "%s/victims", s->dir);
	ck_assert_int_eq(mkdir(text, 0755), 0);
	for (i = 0; i < NVICTIMS; i++) {
		snprintf(s->victims[i], sizeof(s->victims[i]), "%s/victims/%d",
		    s->dir, i);
		write_file(s->victims[i], "root's secret\n", 0600, 0, 0);
	}
	snprintf(s->victim_dir, sizeof(s->victim_dir), "%s/victims/dir",
	    s->dir);
	ck_assert_int_eq(mkdir(s->victim_dir, 0700), 0);
	snprintf(text, sizeof(text), "%s/allocs", s->dir);
	ck_assert_int_eq(mkdir(text, 0755), 0);
	snprintf(text, sizeof(text), "{\"data_dir\": \"%s\", \"run_dir\": "
	    "\"%s\", \"alloc_dir\": \"%s/allocs\", \"plugin_heartbeat\": "
	    "\"1s\"}", s->data, s->run, s->dir);
	write_file(s->cfg, text, 0644, 0, 0);
}

static void
scene_free(struct scene *s)
{
	harness_rmtree(s->dir);
	free(s->dir);
}

/* Every victim still root:root, its mode and contents unchanged. */
static void
victims_intact(const struct scene *s)
{
	char buf[64];
	struct stat st;
	ssize_t n;
	int i, fd;

	for (i = 0; i < NVICTIMS; i++) {
		ck_assert_int_eq(lstat(s->victims[i], &st), 0);
		ck_assert_msg(st.st_uid == 0 && st.st_gid == 0 &&
		    (st.st_mode & 07777) == 0600 && S_ISREG(st.st_mode),
		    "victim %s is now uid %ld gid %ld mode %o", s->victims[i],
		    (long)st.st_uid, (long)st.st_gid, st.st_mode & 07777);
		fd = open(s->victims[i], O_RDONLY);
		ck_assert_int_ge(fd, 0);
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		ck_assert_int_eq(n, 14);
		buf[n] = '\0';
		ck_assert_str_eq(buf, "root's secret\n");
	}
	ck_assert_int_eq(lstat(s->victim_dir, &st), 0);
	ck_assert_msg(st.st_uid == 0 && st.st_gid == 0 &&
	    (st.st_mode & 07777) == 0700, "victim directory is now uid %ld "
	    "gid %ld mode %o", (long)st.st_uid, (long)st.st_gid,
	    st.st_mode & 07777);
	ck_assert_msg(rmdir(s->victim_dir) == 0 && mkdir(s->victim_dir, 0700)
	    == 0, "something was made in the victim directory");
}

static void
become_berth(const struct scene *s)
{
	if (setgroups(0, NULL) < 0 || setresgid(s->gid, s->gid, s->gid) < 0 ||
	    setresuid(s->uid, s->uid, s->uid) < 0)
		_exit(2);
}

/*
 * The attacker: as berth, keep a symlink to a victim at every name root
 * might use in the run directory, and swap it with whatever is there.
 */
static pid_t
attacker_start(const struct scene *s, struct score *sc)
{
	static const char *names[] = { "api.sock", "api.sock.tmp", "x" };
	char lnk[32], buf[8];
	pid_t pid;
	int dir, i = 0, k;


	if ((pid = fork()) != 0) {
		ck_assert_int_gt(pid, 0);
		harness_track_pid(pid);
		return pid;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	become_berth(s);
	for (;;) {
		if ((dir = open(s->run, O_PATH | O_DIRECTORY)) < 0) {
			sc->denied++;
			usleep(100);
			continue;
		}
		for (k = 0; k < 256; k++, i++) {
			/* Mostly the socket's name; the others now and then. */
			const char *name = names[i % 64 == 1 ? 1 :
			    i % 64 == 2 ? 2 : 0];

			snprintf(lnk, sizeof(lnk), "l%s", name);
			/* A socket swapped out to us goes: a symlink again. */
			if (readlinkat(dir, lnk, buf, sizeof(buf)) < 0 &&
			    errno == EINVAL)
				unlinkat(dir, lnk, 0);
			if (symlinkat(s->victims[i % NVICTIMS], dir, lnk) ==
			    0)
				sc->plants++;
			/*
			 * In, then out again at once: a start that finds the
			 * symlink refuses it, so the name is mostly the
			 * socket, and a symlink for a moment.
			 */
			if (renameat2(dir, lnk, dir, name,
			    RENAME_EXCHANGE) == 0) {
				sc->swaps++;
				if (name == names[0])
					renameat2(dir, lnk, dir, name,
					    RENAME_EXCHANGE);
			} else if (errno == ENOENT && name != names[0] &&
			    renameat2(dir, lnk, dir, name,
			    RENAME_NOREPLACE) == 0)
				sc->plants++;
			else if (errno == EACCES || errno == EPERM)
				sc->denied++;
		}
		close(dir);
	}
}

/*
 * The second attacker: as the registry's user, which owns registry/ in
 * the data directory, swap symlinks in and out of names there and try
 * to replace registry/ itself (the data directory is root's alone: it
 * must fail).
 */
static pid_t
registry_attacker_start(const struct scene *s, struct score *sc)
{
	struct passwd *pw = getpwnam("berth-registry");
	char reg[600];
	pid_t pid;
	int dir, data, i;

	ck_assert_ptr_nonnull(pw);
	if ((pid = fork()) != 0) {
		ck_assert_int_gt(pid, 0);
		harness_track_pid(pid);
		return pid;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid,
	    pw->pw_gid) < 0 || setresuid(pw->pw_uid, pw->pw_uid,
	    pw->pw_uid) < 0)
		_exit(2);
	snprintf(reg, sizeof(reg), "%s/registry", s->data);
	for (;;) {
		if ((data = open(s->data, O_PATH | O_DIRECTORY)) < 0 ||
		    (dir = open(reg, O_PATH | O_DIRECTORY)) < 0) {
			if (data >= 0)
				close(data);
			usleep(1000);
			continue;
		}
		for (i = 0; i < 256; i++) {
			if (symlinkat(s->victims[1], dir, "x") == 0)
				sc->plants++;
			if (renameat2(dir, "x", dir, "y", RENAME_EXCHANGE) == 0)
				sc->swaps++;
			if (symlinkat(s->victim_dir, data, "registry.new") == 0 ||
			    renameat2(data, "registry", data, "registry.old",
			    RENAME_EXCHANGE) == 0)
				_exit(9);	/* the data directory let us in */
			sc->denied++;
		}
		close(dir);
		close(data);
	}
}

static pid_t
supervisor_start(const struct scene *s)
{
	char *argv[] = { (char *)harness_bin("berth-supervisor"), "-c",
		(char *)s->cfg, NULL };
	pid_t pid;
	int fd;

	if ((pid = fork()) != 0) {
		ck_assert_int_gt(pid, 0);
		return pid;
	}
	fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		_exit(127);
	close(fd);
	fd = open("/dev/null", O_RDWR);
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	execv(argv[0], argv);
	_exit(127);
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reap whatever has ended: the supervisor, and helpers re-parented to us. */
static void
reap_dead(void)
{
	while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
		;
}

/* Did the supervisor get past its root start-up (the log says so)? */
static bool
log_has(const struct scene *s, const char *text)
{
	char buf[16384];
	ssize_t n;
	int fd;

	if ((fd = open(s->log, O_RDONLY)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, text) != NULL;
}

START_TEST(symlink_swapped_in_during_thousands_of_restarts)
{
	struct scene s;
	struct score *sc = mmap(NULL, sizeof(*sc), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	const char *env = getenv("BERTH_STARTUP_RESTARTS");
	int restarts = env != NULL ? atoi(env) : 3000, i, served = 0, status;
	long t0 = now_ms(), end;
	pid_t att, reg_att, sv;

	ck_assert_ptr_ne(sc, MAP_FAILED);
	memset(sc, 0, sizeof(*sc));
	scene_new(&s, "data", "run");
	srand((unsigned)getpid());
	att = attacker_start(&s, sc);
	reg_att = registry_attacker_start(&s, sc);
	for (i = 0; i < restarts; i++) {
		sv = supervisor_start(&s);
		/*
		 * Half the time, killed at a random moment of start-up; else
		 * once it serves (every root step is behind it then).
		 */
		if (i % 2 == 0) {
			usleep((useconds_t)(rand() % 20000));
		} else {
			for (end = now_ms() + 3000; now_ms() < end; usleep(500))
				if (log_has(&s, "api: serving") ||
				    waitpid(sv, NULL, WNOHANG) == sv)
					break;
			if (log_has(&s, "api: serving"))
				served++;
		}
		kill(sv, SIGKILL);
		waitpid(sv, NULL, 0);
		reap_dead();
		if (i % 250 == 249)
			victims_intact(&s);
	}
	/* The registry's attacker never got into the data directory. */
	ck_assert_int_eq(waitpid(reg_att, &status, WNOHANG), 0);
	kill(att, SIGKILL);
	kill(reg_att, SIGKILL);
	waitpid(att, NULL, 0);
	waitpid(reg_att, NULL, 0);
	usleep(100 * 1000);
	reap_dead();
	victims_intact(&s);
	printf("%d restarts in %ld ms (%d served the API), attacker: %lu "
	    "swaps, %lu symlinks planted, %lu denied; victims untouched\n",
	    restarts, now_ms() - t0, served, sc->swaps, sc->plants,
	    sc->denied);
	/* The race was run, not skipped: the attacker was in place. */
	ck_assert_uint_gt(sc->swaps, 0);
	ck_assert_int_gt(served, 0);
	munmap(sc, sizeof(*sc));
	scene_free(&s);
}
END_TEST

/* Start once, expect exit status want and text in the log. */
static void
expect_refused(struct scene *s, int want, const char *text)
{
	pid_t sv = supervisor_start(s);
	long end = now_ms() + 10000;
	int status = 0;
	pid_t r;

	while ((r = waitpid(sv, &status, WNOHANG)) == 0 && now_ms() < end)
		usleep(2000);
	if (r != sv) {
		kill(sv, SIGKILL);
		waitpid(sv, &status, 0);
		usleep(100 * 1000);
		reap_dead();
		victims_intact(s);
		ck_abort_msg("the supervisor started; want exit %d", want);
	}
	reap_dead();
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == want,
	    "supervisor status 0x%x, want exit %d", status, want);
	ck_assert_msg(log_has(s, text), "no \"%s\" in the log", text);
	victims_intact(s);
}

/* A symlink to the victim directory at path, planted by berth. */
static void
plant_as_berth(const struct scene *s, const char *path)
{
	pid_t pid;
	int status;

	if ((pid = fork()) == 0) {
		become_berth(s);
		_exit(symlink(s->victim_dir, path) == 0 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(status, 0);
}

START_TEST(data_dir_through_a_berth_owned_directory)
{
	struct scene s;
	char sub[600];

	scene_new(&s, "berths/data", "run");
	/* berth links its directory's "data" to root's directory. */
	plant_as_berth(&s, s.data);
	expect_refused(&s, 73, "root does not act beneath it");
	/* And with nothing planted yet, the path is refused the same. */
	ck_assert_int_eq(unlink(s.data), 0);
	expect_refused(&s, 73, "root does not act beneath it");
	snprintf(sub, sizeof(sub), "%s/registry", s.data);
	ck_assert_int_ne(access(sub, F_OK), 0);
	scene_free(&s);
}
END_TEST

START_TEST(run_dir_through_a_berth_owned_directory)
{
	struct scene s;
	char link[600];

	scene_new(&s, "data", "berths/sub/run");
	/* berth's "sub" leads to root's directory: run would be made there. */
	snprintf(link, sizeof(link), "%s/berths/sub", s.dir);
	plant_as_berth(&s, link);
	expect_refused(&s, 73, "root does not act beneath it");
	scene_free(&s);
}
END_TEST

START_TEST(config_where_berth_can_write)
{
	struct scene s;
	char text[1200], path[600];

	scene_new(&s, "data", "run");
	/* Root's file, in berth's directory: berth could swap it. */
	snprintf(path, sizeof(path), "%s/berths/berth.json", s.dir);
	ck_assert_int_eq(rename(s.cfg, path), 0);
	ck_assert_int_eq(symlink(path, s.cfg), 0);
	expect_refused(&s, 78, "a symlink");
	ck_assert_int_eq(unlink(s.cfg), 0);
	snprintf(text, sizeof(text), "cp %s %s", path, s.cfg);
	ck_assert_int_eq(system(text), 0);
	/* berth's own file, where root looks. */
	ck_assert_int_eq(chown(s.cfg, s.uid, s.gid), 0);
	expect_refused(&s, 78, "root reads it only when root alone");
	/* Root's file, but group-writable. */
	ck_assert_int_eq(chown(s.cfg, 0, s.gid), 0);
	ck_assert_int_eq(chmod(s.cfg, 0664), 0);
	expect_refused(&s, 78, "root reads it only when root alone");
	/* Through the berth-owned directory. */
	snprintf(text, sizeof(text), "%s/berths/berth.json", s.dir);
	memcpy(s.cfg, text, sizeof(s.cfg));
	snprintf(s.log, sizeof(s.log), "%s/supervisor2.log", s.dir);
	expect_refused(&s, 78, "root does not act beneath it");
	/* A FIFO does not block the read. */
	snprintf(s.cfg, sizeof(s.cfg), "%s/fifo.json", s.dir);
	ck_assert_int_eq(mkfifo(s.cfg, 0644), 0);
	expect_refused(&s, 78, "not a regular file");
	scene_free(&s);
}
END_TEST

START_TEST(existing_data_dir_that_others_can_change)
{
	struct scene s;

	scene_new(&s, "data", "run");
	ck_assert_int_eq(mkdir(s.data, 0755), 0);
	ck_assert_int_eq(chown(s.data, s.uid, s.gid), 0);
	expect_refused(&s, 73, "must be root's alone");
	ck_assert_int_eq(chown(s.data, 0, 0), 0);
	ck_assert_int_eq(chmod(s.data, 0777), 0);
	expect_refused(&s, 73, "must be root's alone");
	ck_assert_int_eq(chmod(s.data, 0775), 0);
	expect_refused(&s, 73, "must be root's alone");
	scene_free(&s);
}
END_TEST

START_TEST(run_dir_that_belongs_to_someone_else)
{
	struct scene s;
	char path[600];

	scene_new(&s, "data", "run");
	ck_assert_int_eq(mkdir(s.run, 0755), 0);
	ck_assert_int_eq(chown(s.run, 65534, 65534), 0);
	expect_refused(&s, 73, "belongs to uid 65534");
	/* Root's, with something of root's in it: not ours to take. */
	ck_assert_int_eq(chown(s.run, 0, 0), 0);
	snprintf(path, sizeof(path), "%s/precious", s.run);
	write_file(path, "x", 0600, 0, 0);
	expect_refused(&s, 73, "with entries in it");
	scene_free(&s);
}
END_TEST

/*
 * Helpers that berth could swap: the supervisor installed in berth's
 * directory (root's files there) must not run them as root.
 */
START_TEST(helpers_where_berth_can_write)
{
	static const char *bins[] = { "berth-supervisor", "berth-mounter",
		"berth-registry" };
	char cmd[2048], bin[600];
	struct scene s;
	pid_t sv;
	int status, i;

	scene_new(&s, "data", "run");
	snprintf(bin, sizeof(bin), "%s/berths/bin", s.dir);
	ck_assert_int_eq(mkdir(bin, 0755), 0);
	ck_assert_int_eq(chown(bin, s.uid, s.gid), 0);
	for (i = 0; i < 3; i++) {
		snprintf(cmd, sizeof(cmd), "cp %s %s/", harness_bin(bins[i]),
		    bin);
		ck_assert_int_eq(system(cmd), 0);
	}
	if ((sv = fork()) == 0) {
		char exe[700], *argv[] = { exe, "-c", s.cfg, NULL };
		int fd = open(s.log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		snprintf(exe, sizeof(exe), "%s/berth-supervisor", bin);
		dup2(fd, STDERR_FILENO);
		execv(exe, argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(sv, &status, 0), sv);
	reap_dead();
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
	    WEXITSTATUS(status) != 127, "status 0x%x", status);
	ck_assert(log_has(&s, "root does not act beneath it"));
	ck_assert(!log_has(&s, "ready:"));
	victims_intact(&s);
	scene_free(&s);
}
END_TEST

/* What a served start leaves: the modes the rules promise. */
START_TEST(run_dir_and_socket_are_made_right)
{
	struct scene s;
	struct group *gr;
	char sock[600];
	struct stat st;
	long end;
	pid_t sv;

	scene_new(&s, "data", "run");
	sv = supervisor_start(&s);
	harness_track_pid(sv);
	for (end = now_ms() + 10000; now_ms() < end &&
	    !log_has(&s, "api: serving"); usleep(2000))
		;
	ck_assert(log_has(&s, "api: serving"));
	/* api_group by default: berth-api, not the helpers' group. */
	ck_assert_ptr_nonnull(gr = getgrnam("berth-api"));
	ck_assert_int_ne(gr->gr_gid, s.gid);
	ck_assert_int_eq(lstat(s.run, &st), 0);
	ck_assert_int_eq(st.st_uid, s.uid);
	ck_assert_int_eq(st.st_gid, gr->gr_gid);
	ck_assert_int_eq(st.st_mode & 07777, 02755);
	snprintf(sock, sizeof(sock), "%s/api.sock", s.run);
	ck_assert_int_eq(lstat(sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_uid, s.uid);
	ck_assert_int_eq(st.st_gid, gr->gr_gid);
	ck_assert_int_eq(st.st_mode & 07777, 0660);
	ck_assert_int_eq(lstat(s.data, &st), 0);
	ck_assert_int_eq(st.st_uid, 0);
	ck_assert_int_eq(st.st_mode & 022, 0);
	kill(sv, SIGKILL);
	waitpid(sv, NULL, 0);
	usleep(100 * 1000);
	reap_dead();
	victims_intact(&s);
	scene_free(&s);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("attack_startup");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, symlink_swapped_in_during_thousands_of_restarts);
	tcase_add_test(tc, data_dir_through_a_berth_owned_directory);
	tcase_add_test(tc, run_dir_through_a_berth_owned_directory);
	tcase_add_test(tc, config_where_berth_can_write);
	tcase_add_test(tc, existing_data_dir_that_others_can_change);
	tcase_add_test(tc, run_dir_that_belongs_to_someone_else);
	tcase_add_test(tc, helpers_where_berth_can_write);
	tcase_add_test(tc, run_dir_and_socket_are_made_right);
	return harness_run_attacks("attack_startup", tc, NULL);
}
