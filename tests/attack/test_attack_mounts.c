/*
 * test_attack_mounts.c: attacks on where berth's mounts live, against the
 * real berth-mounter as root in a private mount namespace: every directory
 * on the way to a mount renamed by the supervisor, a task and an
 * unprivileged plugin (each its own uid, in a forked child), the plugin
 * owning its staging dir and publish parent; the owners and groups the
 * supervisor can name for a plugin's dirs and a volume's root; the mounter
 * led to chown another user's file through a hard link; a host directory
 * stacked by a plugin over its tree before a cleanup; a 150,000-entry
 * cleanup while pings must be answered within 100 ms. Ends with
 * "N attacks tried, M succeeded" (a failed test is an attack that got
 * through).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "mclient.h"

#define T "hostpath"
#define P "hp"
#define A "alloc-1"
#define PERM BERTH__ERROR_CODE__ERROR_PERMISSION
#define SV 64001		/* the supervisor's uid and gid */
#define TK 64002		/* a task with a uid of its own */
#define PL 64003		/* an unprivileged plugin's uid */
#define VI 64004		/* another user: the victim */
#define PUB "csi/" T "/" P "/per-alloc/" A "/vol1/" MC_USAGE
#define STAGE "csi/" T "/" P "/staging/default/vol1"

static struct mclient c;
static char *before, *outside;
/* The supervisor is SV (SO_PEERCRED); TK and PL are task ids, VI not. */
static const char *const ids[] = { "--task-ids", "64002-64003", NULL };

static void
setup(void)
{
	harness_private_mounts();
	before = mounts_snapshot();
	outside = harness_tmpdir("outside");
	/* Writable by all: only berth's own layout may stop a rename. */
	chmod(outside, 0777);
	mc_start_opts(&c, NULL, ids, SV);
}

/* The mounter still answers; outside is empty; nothing is left mounted. */
static void
teardown(void)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__Ping ping = BERTH__PING__INIT;
	char what[1024];

	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ck_assert_int_eq(mc_call(&c, &env, NULL, NULL), 0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	mc_release_plugin(&c, T, P);
	ck_assert_msg(rmdir(outside) == 0, "something was left in %s: %s",
	    outside, strerror(errno));
	ck_assert_msg(!mounts_added(before, what, sizeof(what)),
	    "left behind: %s", what);
	free(before);
	free(outside);
	mc_stop(&c);
}

/* In a child as uid:gid (no groups, no capabilities): 0 or errno. */
static int
as(uid_t uid, gid_t gid, char op, const char *from, const char *to)
{
	pid_t pid;
	int st, r;

	if ((pid = fork()) == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(255);
		r = op == 'r' ? rename(from, to) : link(from, to);
		_exit(r == 0 ? 0 : errno);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) != 255);
	return WEXITSTATUS(st);
}

static void
tmpfs_at(const char *rel)
{
	ck_assert_msg(mount("tmpfs", mc_path(&c, rel), "tmpfs", 0, "size=1m")
	    == 0, "mount on %s: %s", rel, strerror(errno));
}

/*
 * The mounts berth keeps records of, each made as in production: a
 * volume staged and published by the plugin, bound into a task with a
 * uid of its own (web) and one that runs as the supervisor (db, as
 * today); socket dirs for a root plugin (A), one the supervisor runs
 * (B) and one with a uid of its own (C).
 */
static const char *const records[] = {
	"allocs/" A "/web/volumes/data", "allocs/" A "/db/volumes/data",
	"csi/" T "/" P, "csi/plugins/" A, "csi/plugins/B", "csi/plugins/C",
	PUB, STAGE,
};
#define NRECORDS (sizeof(records) / sizeof(records[0]))

static void
make_world(void)
{
	/* The unprivileged plugin C's: STAGE and PUB's parent are PL's. */
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "C", PL, SV), 0);
	c.plugin_alloc = "C";
	mc_publish(&c, T, P, A, "vol1");
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol1",
	    NULL), 0);
	tmpfs_at(STAGE);
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", TK, TK), 0);
	ck_assert_int_eq(mc_prepare_task(&c, A, "db", SV, SV), 0);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false),
	    0);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "db", "data", false),
	    0);
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "B", SV, SV), 0);
	c.plugin_alloc = NULL;
}

static void
unmake_world(void)
{
	umount2(mc_path(&c, STAGE), MNT_DETACH);
	ck_assert_int_eq(mc_cleanup(&c, "B"), 0);
	ck_assert_int_eq(mc_cleanup(&c, "C"), 0);
	ck_assert_int_eq(mc_cleanup_plugin(&c, A, T, P), 0);
	mc_unpublish(&c, T, P, A, "vol1");
}

static void
all_in_place(const char *after)
{
	size_t i;

	for (i = 0; i < NRECORDS; i++)
		ck_assert_msg(is_mountpoint(mc_path(&c, records[i])), "after "
		    "%s, %s is no longer a mount point", after, records[i]);
}

START_TEST(every_directory_to_a_mount_renamed_by_each_party)
{
	static const struct { const char *who; uid_t uid; gid_t gid; }
	    party[] = { { "supervisor", SV, SV }, { "task", TK, TK },
	    { "plugin", PL, PL } };
	char dirs[64][256], from[1024], to[1100], what[2600];
	int ndirs = 0, tried = 0, refused = 0, i, k, p;
	size_t r;

	setup();
	make_world();
	/* Every directory from the data dir down to each mount point. */
	for (r = 0; r < NRECORDS; r++)
		for (k = 0; records[r][k] != '\0'; k++) {
			if (records[r][k + 1] != '/' && records[r][k + 1] !=
			    '\0')
				continue;
			snprintf(dirs[ndirs], sizeof(dirs[0]), "%.*s", k + 1,
			    records[r]);
			for (i = 0; i < ndirs && strcmp(dirs[i], dirs[ndirs]);
			    i++)
				;
			if (i == ndirs)
				ndirs++;
		}
	for (i = 0; i < ndirs; i++)
		for (p = 0; p < 3; p++)
			for (k = 0; k < 2; k++) {
				snprintf(from, sizeof(from), "%s",
				    mc_path(&c, dirs[i]));
				snprintf(to, sizeof(to), "%s%s", k ? outside :
				    from, k ? "/carried" : ".renamed");
				tried++;
				if (as(party[p].uid, party[p].gid, 'r', from,
				    to) != 0) {
					refused++;
					continue;
				}
				rename(to, from);
				snprintf(what, sizeof(what), "%s renamed %.255s "
				    "to %s", party[p].who, dirs[i], to);
				all_in_place(what);
			}
	fprintf(stderr, "rename: %d directories, %d renames tried as the "
	    "supervisor, a task and a plugin, %d refused\n", ndirs, tried,
	    refused);
	ck_assert_int_eq(refused, tried);
	all_in_place("every rename");
	unmake_world();
	teardown();
}
END_TEST

/* uid:gid, mode of rel under the data dir, or of an absolute path. */
static bool
owned(const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	struct stat st;

	return lstat(path[0] == '/' ? path : mc_path(&c, path), &st) == 0 &&
	    st.st_uid == uid && st.st_gid == gid &&
	    (st.st_mode & 07777) == mode;
}

/*
 * The owners the supervisor can make the mounter give: a staging dir or
 * publish parent only to the owner of a plugin's socket dir, and only if
 * that is root or a task id (never the supervisor's own, nor another
 * user's); never a mount's root, never through a symlink or a directory
 * the plugin owns. A volume root's group only to a task's gid, never
 * through a symlink the plugin swapped in, never a read-only one.
 */
START_TEST(owners_the_supervisor_names)
{
	char victim[600], link[1200];

	setup();
	make_world();
	snprintf(victim, sizeof(victim), "%s/victim", outside);
	ck_assert_int_eq(mkdir(victim, 0755), 0);
	ck_assert_int_eq(chown(victim, VI, VI), 0);
	ck_assert(owned(STAGE, 0, 0, 01777));
	ck_assert(owned("csi/" T "/" P "/per-alloc/" A "/vol1", PL, 0, 0755));
	/* Socket dirs of the supervisor's own uid, and another user's. */
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "S", SV, SV), 0);
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "V", VI, SV), 0);
	c.plugin_alloc = "S";
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol2",
	    NULL), PERM);
	c.plugin_alloc = "V";
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, "a2", "vol2",
	    NULL), PERM);
	ck_assert(access(mc_path(&c, "csi/" T "/" P "/staging/default/vol2"),
	    F_OK) < 0);
	ck_assert(access(mc_path(&c, "csi/" T "/" P "/per-alloc/a2"), F_OK) <
	    0);
	/* No socket dir there, or a name that leaves csi/plugins/. */
	c.plugin_alloc = "nope";
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol2",
	    NULL), BERTH__ERROR_CODE__ERROR_NOT_FOUND);
	c.plugin_alloc = "..";
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol2",
	    NULL), BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	/* Staged already: the mount's root is the volume's, never given. */
	c.plugin_alloc = "C";
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol1",
	    NULL), 0);
	ck_assert(owned(STAGE, 0, 0, 01777));
	/* The plugin plants a symlink under what it owns: an older berth's
	 * per-usage staging path through it, a publish target, a bind. */
	ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default", "vol3",
	    NULL), 0);
	snprintf(link, sizeof(link), "%s/" MC_USAGE, mc_path(&c, "csi/" T "/"
	    P "/staging/default/vol3"));
	ck_assert_int_eq(symlink(victim, link), 0);
	ck_assert_int_eq(lchown(link, PL, PL), 0);
	ck_assert_int_eq(mc_prepare_old_staging(&c, T, P, "default", "vol3"),
	    PERM);
	ck_assert_int_eq(unlink(link), 0);
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, "vol4", NULL),
	    0);
	snprintf(link, sizeof(link), "%s/" MC_USAGE, mc_path(&c, "csi/" T "/"
	    P "/per-alloc/" A "/vol4"));
	ck_assert_int_eq(symlink(victim, link), 0);
	c.group = TK;
	ck_assert_int_eq(mc_prepare_volume(&c, false, T, P, A, "vol4", NULL),
	    PERM);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol4", "web", "d4", false),
	    PERM);
	ck_assert_int_eq(unlink(link), 0);
	ck_assert(owned(victim, VI, VI, 0755));
	/* Groups: the supervisor's, another user's; read-only: none. */
	c.group = SV;
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "d5", false),
	    PERM);
	c.group = VI;
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "d5", false),
	    PERM);
	ck_assert(owned(PUB, 0, 0, 01777));
	c.group = TK;
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "d5", true), 0);
	ck_assert(owned(PUB, 0, 0, 01777));
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "d6", false), 0);
	ck_assert(owned(PUB, 0, TK, 02775));
	/* Nothing above changed owner. */
	ck_assert(owned("csi/" T "/" P, 0, 0, 0755));
	ck_assert(owned("csi/" T "/" P "/per-alloc/" A, 0, 0, 0755));
	ck_assert(owned("csi/" T "/" P "/staging/default", 0, 0, 0755));
	ck_assert(owned("csi/" T "/" P "/staging", 0, 0, 0755));
	c.group = 0;
	c.plugin_alloc = NULL;
	ck_assert_int_eq(rmdir(victim), 0);
	ck_assert_int_eq(mc_cleanup(&c, "S"), 0);
	ck_assert_int_eq(mc_cleanup(&c, "V"), 0);
	unmake_world();
	teardown();
}
END_TEST

/* What an older layout let the supervisor do: volumes/ its own. */
START_TEST(task_volumes_made_the_supervisors_then_bound_into)
{
	struct stat st;

	setup();
	mc_publish(&c, T, P, A, "vol1");
	ck_assert_int_eq(mc_prepare_task(&c, A, "db", SV, SV), 0);
	/* The sticky task dir: volumes/ is not the supervisor's to move. */
	ck_assert_int_eq(as(SV, SV, 'r', mc_path(&c, "allocs/" A
	    "/db/volumes"), mc_path(&c, "allocs/" A "/db/old")), EPERM);
	/* Made so anyway: a bind into it is refused, nothing mounted. */
	ck_assert_int_eq(rename(mc_path(&c, "allocs/" A "/db/volumes"),
	    mc_path(&c, "allocs/" A "/db/old")), 0);
	ck_assert_int_eq(mkdir(mc_path(&c, "allocs/" A "/db/volumes"), 0755),
	    0);
	ck_assert_int_eq(chown(mc_path(&c, "allocs/" A "/db/volumes"), SV,
	    SV), 0);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "db", "data", false),
	    PERM);
	ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A "/db/volumes/data")));
	/* And a task dir that is the supervisor's, as it used to be. */
	ck_assert_int_eq(rmdir(mc_path(&c, "allocs/" A "/db/volumes")), 0);
	ck_assert_int_eq(rename(mc_path(&c, "allocs/" A "/db/old"),
	    mc_path(&c, "allocs/" A "/db/volumes")), 0);
	ck_assert_int_eq(chown(mc_path(&c, "allocs/" A "/db"), SV, SV), 0);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "db", "data", false),
	    PERM);
	ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A "/db/volumes/data")));
	/* Prepared again: root's, and the bind holds. */
	ck_assert_int_eq(mc_prepare_task(&c, A, "db", SV, SV), 0);
	ck_assert_int_eq(stat(mc_path(&c, "allocs/" A "/db"), &st), 0);
	ck_assert(st.st_uid == 0 && (st.st_mode & 07777) == 01775);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "db", "data", false),
	    0);
	ck_assert_int_eq(as(SV, SV, 'r', mc_path(&c, "allocs/" A "/db"),
	    mc_path(&c, "allocs/" A "/db2")), EACCES);
	ck_assert(is_mountpoint(mc_path(&c, "allocs/" A "/db/volumes/data")));
	/* Given to the task by an older berth and shut: still cleaned. */
	ck_assert_int_eq(chown(mc_path(&c, "allocs/" A "/db"), SV, SV), 0);
	ck_assert_int_eq(chmod(mc_path(&c, "allocs/" A "/db"), 0700), 0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A "/db/volumes/data")));
	ck_assert(access(mc_path(&c, "allocs/" A), F_OK) < 0);
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
}
END_TEST

static char victim[1100];

static void
make_victim(void)
{
	snprintf(victim, sizeof(victim), "%s/victim", outside);
	harness_write(victim, "the victim's\n");
	ck_assert_int_eq(chown(victim, VI, VI), 0);
	ck_assert_int_eq(chmod(victim, 0666), 0);
}

static void
victim_intact(void)
{
	struct stat st;

	ck_assert_msg(stat(victim, &st) == 0, "victim gone: %s",
	    strerror(errno));
	ck_assert_msg(st.st_uid == VI && st.st_gid == VI &&
	    (st.st_mode & 07777) == 0666, "the victim's file is now %u:%u "
	    "%o", st.st_uid, st.st_gid, st.st_mode & 07777);
}

START_TEST(hard_link_to_another_users_file)
{
	static const char *const names[] = { "csi.sock", "csi.stdout",
		"csi.stderr", "volumes2", "x" };
	char to[1200];
	size_t i;

	setup();
	make_victim();
	mc_publish(&c, T, P, A, "vol1");
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", SV, SV), 0);
	ck_assert_int_eq(mc_prepare_plugin_owned(&c, T, P, "B", SV, SV), 0);
	/* Wherever the supervisor (and a task, as itself) can write; the
	 * socket dir is a mount of its own, which a link cannot cross. */
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(to, sizeof(to), "%s/%s", mc_path(&c, "csi/plugins/B"),
		    names[i]);
		ck_assert_int_eq(as(SV, SV, 'l', victim, to), EXDEV);
		snprintf(to, sizeof(to), "%s/%s", mc_path(&c, "allocs/" A
		    "/web"), names[i]);
		ck_assert_int_eq(as(SV, SV, 'l', victim, to), 0);
	}
	/* The names root takes back, made hard links as an older layout
	 * let the supervisor: volumes/, a task dir, a socket dir. */
	ck_assert_int_eq(rmdir(mc_path(&c, "allocs/" A "/web/volumes")), 0);
	ck_assert_int_eq(link(victim, mc_path(&c, "allocs/" A
	    "/web/volumes")), 0);
	ck_assert_int_eq(link(victim, mc_path(&c, "allocs/" A "/t2")), 0);
	ck_assert_int_eq(link(victim, mc_path(&c, "csi/plugins/D")), 0);
	ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data", false),
	    BERTH__ERROR_CODE__ERROR_CONFLICT);
	ck_assert_int_eq(mc_prepare_task(&c, A, "web", SV, SV),
	    BERTH__ERROR_CODE__ERROR_CONFLICT);
	ck_assert_int_eq(mc_cleanup(&c, "B"), 0);
	ck_assert_int_eq(mc_cleanup(&c, "D"), 0);
	ck_assert_int_eq(mc_cleanup(&c, A), 0);
	victim_intact();
	/* What berth could not remove is the supervisor's to clear. */
	harness_rmtree(mc_path(&c, "allocs"));
	unlink(mc_path(&c, "csi/plugins/D"));
	unlink(victim);
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
}
END_TEST

/* A host directory of another user's, stacked by a plugin. */
static char host[1100];

/* Each would be removed (or taken back) if a cleanup walked into it. */
static const char *const planted[] = { A, A "/vol1", A "/vol1/" MC_USAGE,
	"vol1", "vol1/" MC_USAGE, "d", "d/" MC_USAGE, "staging", "default",
	"default/vol1", "default/vol1/" MC_USAGE, "empty", "x.stdout" };
#define NPLANTED (sizeof(planted) / sizeof(planted[0]))

static void
make_host(void)
{
	char p[1300];
	size_t i;

	snprintf(host, sizeof(host), "%s/host", outside);
	ck_assert_int_eq(mkdir(host, 0755), 0);
	for (i = 0; i < NPLANTED; i++) {
		snprintf(p, sizeof(p), "%s/%s", host, planted[i]);
		if (strchr(planted[i], '.') != NULL || strcmp(planted[i],
		    "empty") == 0)
			harness_write(p, "");
		else
			ck_assert_int_eq(mkdir(p, 0777), 0);
	}
	snprintf(p, sizeof(p), "chown -R %d:%d %s", VI, VI, host);
	ck_assert_int_eq(system(p), 0);
}

static void
host_intact(const char *stacked)
{
	struct stat st;
	char p[1300];
	size_t i;

	for (i = 0; i < NPLANTED; i++) {
		snprintf(p, sizeof(p), "%s/%s", host, planted[i]);
		ck_assert_msg(lstat(p, &st) == 0, "with a host dir stacked on "
		    "%s, %s was removed", stacked, planted[i]);
		ck_assert_msg(st.st_uid == VI, "with a host dir stacked on %s, "
		    "%s became %u's", stacked, planted[i], st.st_uid);
	}
}

START_TEST(plugin_stacks_a_host_directory_over_its_tree)
{
	static const char *const on[] = { "csi/" T "/" P "/per-alloc/" A,
		"csi/" T "/" P "/per-alloc/" A "/vol1", ("csi/" T "/" P
		"/per-alloc"), "csi/" T "/" P "/staging", "csi/" T "/" P,
		"csi/plugins/" A };
	char at[1200];
	size_t i;

	setup();
	make_host();
	for (i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		mc_publish(&c, T, P, A, "vol1");
		ck_assert_int_eq(mc_prepare_volume(&c, true, T, P, "default",
		    "vol1", NULL), 0);
		ck_assert_int_eq(mc_prepare_task(&c, A, "web", SV, SV), 0);
		ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web", "data",
		    false), 0);
		/* The plugin's own, outside the layout: never pruned. */
		mkdir(mc_path(&c, "csi/" T "/" P "/mine"), 0755);
		/* As the plugin's mount propagates to the host. */
		snprintf(at, sizeof(at), "%s", mc_path(&c, on[i]));
		ck_assert_int_eq(mount(host, at, NULL, MS_BIND, NULL), 0);
		if (strcmp(on[i], "csi/" T "/" P) == 0) {
			/* Nothing is made in, or bound from, what it stacked. */
			ck_assert_int_eq(mc_prepare_volume(&c, true, T, P,
			    "default", "vol1", NULL), PERM);
			ck_assert_int_eq(mc_bind(&c, T, P, A, "vol1", "web",
			    "d2", false), PERM);
		}
		ck_assert_int_eq(mc_cleanup_plugin(&c, A, T, P), 0);
		host_intact(on[i]);
		ck_assert(!is_mountpoint(mc_path(&c, "allocs/" A
		    "/web/volumes/data")));
		umount2(at, MNT_DETACH);
		ck_assert_msg(access(mc_path(&c, "csi/" T "/" P "/mine"), F_OK)
		    == 0, "the plugin's own directory was pruned");
		rmdir(mc_path(&c, "csi/" T "/" P "/mine"));
		mc_unpublish(&c, T, P, A, "vol1");
		ck_assert_int_eq(mc_cleanup_plugin(&c, A, T, P), 0);
		mc_release_plugin(&c, T, P);
		ck_assert_msg(access(mc_path(&c, "csi/" T "/" P), F_OK) < 0,
		    "the plugin's root stayed after its last cleanup");
	}
	fprintf(stderr, "stacked: a host dir over %zu places, none entered\n",
	    sizeof(on) / sizeof(on[0]));
	harness_rmtree(host);
	teardown();
}
END_TEST

struct waited {
	bool done;
	Berth__Envelope *reply;
};

static void
on_reply(struct chan *ch, Berth__Envelope *env, int fd, void *arg)
{
	struct waited *w = arg;
	size_t len = berth__envelope__get_packed_size(env);
	uint8_t *buf = malloc(len + 1);

	(void)ch;
	if (fd >= 0)
		close(fd);
	berth__envelope__pack(env, buf);
	w->reply = berth__envelope__unpack(NULL, len, buf);
	free(buf);
	w->done = true;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define ENTRIES 150000

START_TEST(cleanup_of_150000_entries_while_pinged)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT, penv =
	    BERTH__ENVELOPE__INIT;
	Berth__CleanupAlloc ca = BERTH__CLEANUP_ALLOC__INIT;
	Berth__Ping ping = BERTH__PING__INIT;
	struct waited cw = { false, NULL }, pw;
	double t0, t, worst = 0, sum = 0, took;
	char p[1200], *data;
	int i, n = 0;

	setup();
	/*
	 * The data directory on a tmpfs. This measures the mounter's steps,
	 * not the host's disk: on a disk mounted with "discard" one rmdir
	 * can sleep 100 ms in the block layer, a single system call that no
	 * step can split (SECURITY.md, "Cleanup in bounded steps").
	 */
	data = strdup(c.data);
	ck_assert_int_eq(mount("tmpfs", data, "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=0755"), 0);
	free(before);
	before = mounts_snapshot();
	mc_restart(&c);
	mc_publish(&c, T, P, A, "vol1");
	/*
	 * As a plugin could: a tree of entries where cleanup looks, 1,000 a
	 * directory (one directory of 150,000 costs one rmdir of ~90 ms at
	 * the end, a single system call that no step can split).
	 */
	for (i = 0; i < ENTRIES; i++) {
		snprintf(p, sizeof(p), "%s/f%d", mc_path(&c, "csi/" T "/" P
		    "/per-alloc/" A), i / 1000);
		if (i % 1000 == 0)
			ck_assert_int_eq(mkdir(p, 0755), 0);
		snprintf(p + strlen(p), sizeof(p) - strlen(p), "/e%d", i);
		ck_assert_int_eq(mkdir(p, 0755), 0);
	}
	ca.alloc_id = B(A);
	env.body_case = BERTH__ENVELOPE__BODY_CLEANUP_ALLOC;
	env.cleanup_alloc = &ca;
	penv.body_case = BERTH__ENVELOPE__BODY_PING;
	penv.ping = &ping;
	t0 = now_ms();
	/* However long the disk takes (others share it): pings must not. */
	ck_assert_int_eq(chan_request(c.chan, &env, -1, 280000, on_reply,
	    &cw), 0);
	while (!cw.done) {
		pw = (struct waited){ false, NULL };
		t = now_ms();
		ck_assert_int_eq(chan_request(c.chan, &penv, -1, 5000,
		    on_reply, &pw), 0);
		while (!pw.done)
			event_base_loop(c.base, EVLOOP_ONCE);
		t = now_ms() - t;
		ck_assert_msg(pw.reply->error == NULL, "ping: %s",
		    pw.reply->error->message);
		berth__envelope__free_unpacked(pw.reply, NULL);
		worst = t > worst ? t : worst;
		sum += t;
		n++;
		usleep(2000);
		event_base_loop(c.base, EVLOOP_NONBLOCK);
	}
	took = now_ms() - t0;
	ck_assert_msg(cw.reply->error == NULL, "cleanup: %s",
	    cw.reply->error->message);
	fprintf(stderr, "cleanup of %d entries: %.0f ms; %d pings answered "
	    "meanwhile, mean %.2f ms, worst %.2f ms\n", ENTRIES, took, n,
	    n ? sum / n : 0, worst);
	ck_assert_uint_ge(cw.reply->cleanup_reply->removed, ENTRIES);
	berth__envelope__free_unpacked(cw.reply, NULL);
	ck_assert_int_ge(n, 3);
	ck_assert_msg(worst < 100, "a ping waited %.1f ms", worst);
	mc_unpublish(&c, T, P, A, "vol1");
	teardown();
	/* mc_stop() may have taken it with the directory; else it goes. */
	(void)umount2(data, MNT_DETACH);
	free(data);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("attack_mounts");

	mc_host_mounts_before();
	tcase_set_timeout(tc, 500);
	tcase_add_unchecked_fixture(tc, mc_track_init, mc_track_cleanup);
	tcase_add_test(tc, every_directory_to_a_mount_renamed_by_each_party);
	tcase_add_test(tc, owners_the_supervisor_names);
	tcase_add_test(tc, task_volumes_made_the_supervisors_then_bound_into);
	tcase_add_test(tc, hard_link_to_another_users_file);
	tcase_add_test(tc, plugin_stacks_a_host_directory_over_its_tree);
	tcase_add_test(tc, cleanup_of_150000_entries_while_pinged);
	return harness_run_attacks("attack_mounts", tc, mc_host_mounts_gained);
}
