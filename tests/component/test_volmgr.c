/*
 * test_volmgr.c: the volume manager alone, through its dependency
 * struct: in-process fakes of berth-registry and berth-mounter
 * (fake_peer.h) on its real clients, and the real sample plugin,
 * berth-csi-hostpath, on a socket in a temporary directory, which really
 * stages and publishes with bind mounts.
 *
 * No root: each test enters a user and mount namespace of its own before
 * it starts anything, where the plugin may mount; the mounts go with the
 * namespace. The fake registry keeps one volume and the records it is
 * given; the fake mounter makes the directories PrepareVolume names and
 * says whether each is a mount point already. Either holds the requests
 * a test asks it to hold, so that the test answers them late, out of
 * order, with an error, never, or closes the link under them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <event2/event.h>

#include "alloc.h"
#include "csi_client.h"
#include "csimanager.h"
#include "events.h"
#include "fake_peer.h"
#include "harness.h"
#include "layout.h"
#include "mounter_client.h"
#include "registry_client.h"
#include "volmgr.h"

/* The mounter client's deadline here: short, so "never" is quick. */
#define TEST_MCLIENT_MS 4000

#define PLUGIN		"hp"
#define NS		"default"
#define VOL		"vol1"
#define PLUGIN_ALLOC	"plug-alloc"
#define REG_TIMEOUT_MS	400
#define WAIT_MS		10000
#define MAXHOLD		8
#define MAXJOBS		8

#define B(x) BERTH__ENVELOPE__BODY_##x

/* A group the tests' namespace maps (own_namespaces()), and one more
 * (mapped only when the tests run as root). */
#define TEST_GID	4242
#define OTHER_GID	4343
#define TEST_UID	5000

static struct {
	char *dir;
	char data[512], state[512], endpoint[600];
	struct proc plugin;
	bool plugin_started;
	bool lenient;			/* the plugin without --strict */
	int stats_ms;			/* the stats interval; 0 none */
	struct event_base *base;
	struct csi_client *csi;
	struct csi_conn *conn;
	struct fake_peer *reg, *mnt;
	struct chan *rchan, *mchan;
	struct regclient *rc;
	struct mclient *mc;
	struct volmgr *vm;
	struct events *events;		/* what the manager records */
	/* What find_plugin and node_plugin_type answer. */
	struct csi_fingerprint node_fp, ctl_fp;
	bool have_node, have_ctl;
	const char *node_type;		/* the paths' <type> */
	const char *declared;		/* node_plugin_type's answer */
	/* The fakes: held bodies, forced errors. */
	Berth__Envelope__BodyCase hold[MAXHOLD];
	Berth__Envelope__BodyCase fail_body;
	Berth__ErrorCode fail_code;
	bool force_mounted;
	int stagings;			/* PrepareVolume for staging */
	/* The fake registry's state. */
	bool registered, claimed;
	char external_id[64];
	char snapshot_id[64];		/* the last PutVolume's */
	bool rec_staged, rec_published;
	char rec_stage_usage[160];	/* the last record's */
	int records;			/* mount records held */
	Berth__MountHandle *old;	/* read back by ListHandles */
	/* Results, per job. */
	int done[MAXJOBS];
	enum volmgr_status st[MAXJOBS];
	char why[MAXJOBS][1200];
} fx;

/* ---- the alloc ---- */

static struct alloc_volume vols[1] = { {
	.name = "data", .source = VOL,
	.access_mode = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER,
	.attachment_mode =
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM,
} };
static struct alloc_mount mounts[1] = { {
	.volume = "data", .destination = "data", .volume_index = 0,
} };
static struct alloc_task tasks[1] = { {
	.name = "web", .mounts = mounts, .nmounts = 1,
} };
static struct alloc alloc1 = { .id = "a1", .ns = NS, .tasks = tasks,
	.ntasks = 1, .volumes = vols, .nvolumes = 1 };
static struct alloc alloc2 = { .id = "a2", .ns = NS, .tasks = tasks,
	.ntasks = 1, .volumes = vols, .nvolumes = 1 };

static const char *
usage_of(bool read_only)
{
	static char u[2][160];

	layout_usage(u[read_only], sizeof(u[0]), read_only,
	    alloc_attachment_mode_name(vols[0].attachment_mode),
	    alloc_access_mode_name(vols[0].access_mode));
	return u[read_only];
}

static const char *
usage(void)
{
	return usage_of(false);
}

/* use: the publish target's usage; for staging, NULL for the volume's
 * one path, or the usage of an older berth's per-usage path. */
static void
path_of(char *buf, size_t n, bool staging, const char *alloc,
    const char *vol, const char *use)
{
	char rel[1024];

	if (staging)
		layout_staging(rel, sizeof(rel), fx.node_type, PLUGIN, NS, vol,
		    use);
	else
		layout_publish(rel, sizeof(rel), fx.node_type, PLUGIN, alloc,
		    vol, use);
	layout_abs(buf, n, fx.data, rel);
}

static bool
is_mount(const char *path)
{
	struct statx stx;

	return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS,
	    &stx) == 0 && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

static void
mkdirs(const char *path)
{
	char buf[BERTH_PATH_BUF];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + 1; *s != '\0'; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(buf, 0755);
			*s = '/';
		}
	mkdir(buf, 0755);
}

/* ---- the fake registry ---- */

static bool
held(Berth__Envelope__BodyCase body)
{
	for (int i = 0; i < MAXHOLD; i++)
		if (fx.hold[i] == body)
			return true;
	return false;
}

static void
hold(Berth__Envelope__BodyCase body)
{
	for (int i = 0; i < MAXHOLD; i++)
		if (fx.hold[i] == 0) {
			fx.hold[i] = body;
			return;
		}
}

static void
unhold(void)
{
	memset(fx.hold, 0, sizeof(fx.hold));
}

static void
reg_answer(struct fake_peer *fp, struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__VolumeReply vr = BERTH__VOLUME_REPLY__INIT;
	Berth__Volume v = BERTH__VOLUME__INIT;
	Berth__Claim c = BERTH__CLAIM__INIT, *claims[1] = { &c };
	Berth__IndexReply ir = BERTH__INDEX_REPLY__INIT;
	Berth__HandleReply hr = BERTH__HANDLE_REPLY__INIT;
	Berth__ClaimReply cr = BERTH__CLAIM_REPLY__INIT;
	Berth__HandleList hl = BERTH__HANDLE_LIST__INIT;
	Berth__Handle h = BERTH__HANDLE__INIT, *hs[1] = { &h };
	const Berth__MountHandle *mh;
	const char *id = VOL;

	if (req->env->body_case == fx.fail_body) {
		fake_reply_error(fp, req, fx.fail_code, "as the test asked");
		return;
	}
	switch (req->env->body_case) {
	case B(LIST_HANDLES):
		env.body_case = B(HANDLE_LIST);
		env.handle_list = &hl;
		if (fx.old != NULL) {
			h.handle_case = BERTH__HANDLE__HANDLE_MOUNT;
			h.mount = fx.old;
			hl.handles = hs;
			hl.n_handles = 1;
		}
		break;
	case B(GET_VOLUME):
	case B(PUT_VOLUME):
		if (req->env->body_case == B(PUT_VOLUME)) {
			snprintf(fx.external_id, sizeof(fx.external_id), "%s",
			    req->env->put_volume->volume->external_id);
			snprintf(fx.snapshot_id, sizeof(fx.snapshot_id), "%s",
			    req->env->put_volume->volume->snapshot_id);
			fx.registered = true;
		} else
			id = req->env->get_volume->key->id;
		env.body_case = B(VOLUME_REPLY);
		env.volume_reply = &vr;
		v.namespace_ = NS;
		v.id = (char *)id;
		v.plugin_id = PLUGIN;
		v.external_id = strcmp(id, VOL) == 0 ? fx.external_id : "";
		vr.volume = fx.registered ? &v : NULL;
		c.namespace_ = NS;
		c.volume = VOL;
		c.alloc = "someone";
		vr.claims = claims;
		vr.n_claims = fx.claimed ? 1 : 0;
		break;
	case B(CLAIM_VOLUME):
		fx.claimed = true;
		env.body_case = B(CLAIM_REPLY);
		env.claim_reply = &cr;
		cr.claim = req->env->claim_volume->claim;
		break;
	case B(PUT_HANDLE):
		mh = req->env->put_handle->handle->mount;
		fx.rec_staged = mh->staged;
		fx.rec_published = mh->published;
		snprintf(fx.rec_stage_usage, sizeof(fx.rec_stage_usage), "%s",
		    mh->stage_usage);
		fx.records++;
		env.body_case = B(HANDLE_REPLY);
		env.handle_reply = &hr;
		hr.handle = req->env->put_handle->handle;
		break;
	case B(RELEASE_CLAIM):
	case B(DELETE_HANDLE):
	case B(DELETE_VOLUME):
		if (req->env->body_case == B(RELEASE_CLAIM))
			fx.claimed = false;
		else if (req->env->body_case == B(DELETE_VOLUME))
			fx.registered = false;
		env.body_case = B(INDEX_REPLY);
		env.index_reply = &ir;
		break;
	default:
		fake_reply_error(fp, req, BERTH__ERROR_CODE__ERROR_INTERNAL,
		    "not faked");
		return;
	}
	fake_reply(fp, req, &env, -1);
}

/* ---- the fake mounter ---- */

static void
bstr(char *buf, size_t n, ProtobufCBinaryData b)
{
	snprintf(buf, n, "%.*s", (int)b.len, (const char *)b.data);
}

static void
mnt_answer(struct fake_peer *fp, struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PrepareVolumeReply pr = BERTH__PREPARE_VOLUME_REPLY__INIT;
	const Berth__PrepareVolume *pv;
	char alloc[64], vol[64], use[160], path[BERTH_PATH_BUF];
	bool staging;

	if (req->env->body_case == fx.fail_body) {
		fake_reply_error(fp, req, fx.fail_code, "as the test asked");
		return;
	}
	if (req->env->body_case != B(PREPARE_VOLUME)) {
		fake_reply_ack(fp, req);
		return;
	}
	/* As the real one: the target exists, is it a mount point? */
	pv = req->env->prepare_volume;
	staging = pv->dir == BERTH__VOLUME_DIR__VOLUME_DIR_STAGING;
	bstr(alloc, sizeof(alloc), pv->alloc_id);
	bstr(vol, sizeof(vol), pv->volume_id);
	/* Staging names a usage only for an older per-usage path. */
	if (staging)
		fx.stagings++;
	if (!staging || pv->usage != NULL) {
		ck_assert_ptr_nonnull(pv->usage);
		layout_usage(use, sizeof(use), pv->usage->read_only,
		    alloc_attachment_mode_name(pv->usage->attachment),
		    alloc_access_mode_name(pv->usage->access));
	}
	path_of(path, sizeof(path), staging, alloc, vol, !staging ||
	    pv->usage != NULL ? use : NULL);
	mkdirs(path);
	pr.mounted = fx.force_mounted || is_mount(path);
	env.body_case = B(PREPARE_VOLUME_REPLY);
	env.prepare_volume_reply = &pr;
	fake_reply(fp, req, &env, -1);
}

static void
on_reg(struct fake_peer *fp, struct fake_req *req, void *arg)
{
	(void)arg;
	if (!held(req->env->body_case))
		reg_answer(fp, req);
}

static void
on_mnt(struct fake_peer *fp, struct fake_req *req, void *arg)
{
	(void)arg;
	if (!held(req->env->body_case))
		mnt_answer(fp, req);
}

/* ---- the manager's dependencies ---- */

static bool
find_plugin(void *ctx, Berth__PluginType type, const char *name,
    struct volmgr_plugin *out)
{
	bool node = type == BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE;

	ck_assert_ptr_eq(ctx, &fx);
	if (strcmp(name, PLUGIN) != 0 || !(node ? fx.have_node : fx.have_ctl))
		return false;
	out->conn = fx.conn;
	out->fp = node ? &fx.node_fp : &fx.ctl_fp;
	out->alloc = PLUGIN_ALLOC;
	return true;
}

static const char *
node_plugin_type(void *ctx, const char *alloc, const char *plugin)
{
	ck_assert_ptr_eq(ctx, &fx);
	ck_assert_str_eq(alloc, PLUGIN_ALLOC);
	ck_assert_str_eq(plugin, PLUGIN);
	return fx.declared;
}

static void
new_manager(void)
{
	struct volmgr_deps d = { .base = fx.base, .registry = fx.rc,
	    .mounter = fx.mc, .data_dir = fx.data, .find_plugin = find_plugin,
	    .plugins_ctx = &fx, .node_plugin_type = node_plugin_type,
	    .allocs_ctx = &fx, .csi_deadline_ms = 500,
	    .csi_retry_total_ms = 1000, .events = fx.events,
	    .stats_interval_ms = fx.stats_ms };

	fx.vm = volmgr_new(&d);
}

static void
done(enum volmgr_status st, const char *why, void *arg)
{
	int i = (int)(intptr_t)arg;

	fx.done[i]++;
	fx.st[i] = st;
	snprintf(fx.why[i], sizeof(fx.why[i]), "%s", why);
}

static bool
is_done(void *arg)
{
	return fx.done[(intptr_t)arg] > 0;
}

static bool
is_ready(void *arg)
{
	(void)arg;
	return volmgr_ready(fx.vm);
}

/* Run until job i is done; its status. */
static enum volmgr_status
wait_job(int i)
{
	ck_assert_int_lt(i, MAXJOBS);
	ck_assert_msg(fake_run_until(fx.base, is_done, (void *)(intptr_t)i,
	    WAIT_MS), "job %d did not finish", i);
	ck_assert_int_eq(fx.done[i], 1);
	return fx.st[i];
}

struct heldq {
	struct fake_peer *fp;
	Berth__Envelope__BodyCase body;
	size_t n;
};

static bool
has_held(void *arg)
{
	struct heldq *q = arg;
	size_t n = 0;

	for (size_t i = 0; fake_nth(q->fp, i) != NULL; i++)
		if (fake_nth(q->fp, i)->env->body_case == q->body)
			n++;
	return n >= q->n;
}

/* Run until fp holds n requests with body; the first of them. */
static struct fake_req *
wait_held(struct fake_peer *fp, Berth__Envelope__BodyCase body, size_t n)
{
	struct heldq q = { fp, body, n };

	ck_assert_msg(fake_run_until(fx.base, has_held, &q, WAIT_MS),
	    "no request %d held", body);
	return fake_held(fp, body);
}

/* Let the loop run for ms, whatever happens. */
static bool
never(void *arg)
{
	(void)arg;
	return false;
}

static void
settle(int ms)
{
	fake_run_until(fx.base, never, NULL, ms);
}

/* ---- set up and tear down ---- */

static void
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* A user and mount namespace of our own: the plugin may mount in it,
 * whoever runs the test, and its mounts end with it. */
/*
 * Root, with a mount namespace of its own. Run as root, only the mount
 * namespace is new, so that a child can take another uid and gid; else
 * a user namespace maps the one uid to root and the one gid to TEST_GID,
 * a group that is not root's.
 */
static void
own_namespaces(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (geteuid() == 0) {
		ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare: %s",
		    strerror(errno));
		ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE,
		    NULL), 0);
		return;
	}
	ck_assert_msg(unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0,
	    "unshare: %s", strerror(errno));
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %ld 1", (long)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "%d %ld 1", TEST_GID, (long)gid);
	write_file("/proc/self/gid_map", map);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
}

static void
plugin_start(const char *fault, const char *arg)
{
	char *argv[] = { (char *)harness_bin("berth-csi-hostpath"),
	    "--endpoint", fx.endpoint, "--node-id", "node-1", "--state-dir",
	    fx.state, "--strict", (char *)fault, (char *)arg, NULL };

	/* Lenient (no fault asked with it): "--strict" on are left out. */
	if (fx.lenient)
		argv[7] = NULL;

	proc_start(&fx.plugin, argv, -1);
	fx.plugin_started = true;
	ck_assert_msg(proc_wait_log(&fx.plugin, "listening on", 10000),
	    "plugin did not start: %s", fx.plugin.log);
}

static void
fingerprints(void)
{
	memset(&fx.node_fp, 0, sizeof(fx.node_fp));
	fx.node_fp.done = fx.node_fp.healthy = true;
	snprintf(fx.node_fp.node_id, sizeof(fx.node_fp.node_id), "node-1");
	fx.node_fp.stage_unstage = true;
	fx.node_fp.mount_group = true;	/* as hostpath advertises */
	fx.ctl_fp = fx.node_fp;
	fx.ctl_fp.stage_unstage = false;
	fx.ctl_fp.create_delete = true;
	fx.have_node = fx.have_ctl = true;
	fx.node_type = fx.declared = "monolith";
}

/* Everything but the plugin and the manager. */
static void
setup(void)
{
	static const struct chan_ops ops = { NULL, NULL, NULL, NULL };
	char path[700];

	memset(&fx, 0, sizeof(fx));
	own_namespaces();
	fx.dir = harness_tmpdir("volmgr");
	snprintf(fx.data, sizeof(fx.data), "%s/data", fx.dir);
	snprintf(fx.state, sizeof(fx.state), "%s/state", fx.dir);
	snprintf(fx.endpoint, sizeof(fx.endpoint), "unix://%s/csi.sock",
	    fx.dir);
	mkdir(fx.data, 0755);
	/* The volume, as the plugin's CreateVolume would leave it. */
	snprintf(path, sizeof(path), "%s/volumes/%s", fx.state, VOL);
	mkdirs(path);
	fx.registered = true;
	fx.events = events_new();
	fingerprints();
	ck_assert_ptr_nonnull(fx.base = event_base_new());
	fx.reg = fake_peer_new(fx.base, "berth-registry", NULL, &fx.rchan,
	    &ops, NULL);
	fx.mnt = fake_peer_new(fx.base, "berth-mounter", NULL, &fx.mchan,
	    &ops, NULL);
	fake_peer_handler(fx.reg, on_reg, NULL);
	fake_peer_handler(fx.mnt, on_mnt, NULL);
	ck_assert_ptr_nonnull(fx.rc = regclient_new(fx.base, fx.rchan,
	    REG_TIMEOUT_MS));
	ck_assert_ptr_nonnull(fx.mc = mclient_new(fx.mchan, TEST_MCLIENT_MS));
}

/* The plugin, its connection, the manager, started. */
static void
start(const char *fault, const char *arg)
{
	plugin_start(fault, arg);
	ck_assert_ptr_nonnull(fx.csi = csi_client_new(fx.base));
	ck_assert_ptr_nonnull(fx.conn = csi_conn_open(fx.csi, fx.endpoint));
	new_manager();
	volmgr_start(fx.vm);
	ck_assert(fake_run_until(fx.base, is_ready, NULL, WAIT_MS));
}

static void
teardown(void)
{
	volmgr_free(fx.vm);
	if (fx.csi != NULL)
		csi_client_free(fx.csi);
	mclient_free(fx.mc);
	regclient_free(fx.rc);
	chan_free(fx.mchan);
	chan_free(fx.rchan);
	fake_peer_free(fx.mnt);
	fake_peer_free(fx.reg);
	event_base_free(fx.base);
	events_free(fx.events);
	if (fx.plugin_started && !fx.plugin.reaped) {
		kill(fx.plugin.pid, SIGCONT);
		kill(fx.plugin.pid, SIGTERM);
		proc_wait_exit(&fx.plugin, 5000);
	}
	proc_kill(&fx.plugin);
	free(fx.dir);
}

static void
mount_job(const struct alloc *a, int i)
{
	volmgr_mount(fx.vm, a, 0, done, (void *)(intptr_t)i);
}

/* The same, the alloc's group being group. */
static void
mount_job_group(const struct alloc *a, gid_t group, int i)
{
	volmgr_mount(fx.vm, a, group, done, (void *)(intptr_t)i);
}

static void
unmount_job(const char *alloc, const struct alloc *a, int i)
{
	volmgr_unmount(fx.vm, alloc, a, done, (void *)(intptr_t)i);
}

static bool
staged_now(void)
{
	char p[BERTH_PATH_BUF];

	path_of(p, sizeof(p), true, NULL, VOL, NULL);
	return is_mount(p);
}

static bool
published_now(const char *alloc)
{
	char p[BERTH_PATH_BUF];

	path_of(p, sizeof(p), false, alloc, VOL, usage());
	return is_mount(p);
}

static unsigned
nreg(Berth__Envelope__BodyCase body)
{
	return fake_count(fx.reg, body);
}

static unsigned
nmnt(Berth__Envelope__BodyCase body)
{
	return fake_count(fx.mnt, body);
}

/* ---- mount and unmount, every step taken ---- */

/*
 * GetVolume, the record, the claim, no controller publish (hostpath's
 * controller does not advertise it), PrepareVolume and NodeStageVolume,
 * the staged record, PrepareVolume and NodePublishVolume, the published
 * record, the bind; then back: unbind, NodeUnpublishVolume,
 * NodeUnstageVolume, release, forget.
 */
START_TEST(test_mount_then_unmount)
{
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_str_eq(fx.why[0], "");
	ck_assert(staged_now());
	ck_assert(published_now("a1"));
	ck_assert_uint_eq(nreg(B(GET_VOLUME)), 1);
	ck_assert_uint_eq(nreg(B(CLAIM_VOLUME)), 1);
	/* Written first, then staged, then published. */
	ck_assert_int_eq(fx.records, 3);
	ck_assert(fx.rec_staged && fx.rec_published);
	ck_assert_uint_eq(nmnt(B(PREPARE_VOLUME)), 2);
	ck_assert_uint_eq(nmnt(B(BIND_VOLUME)), 1);
	ck_assert(volmgr_uses_plugin(fx.vm, PLUGIN));
	ck_assert(!volmgr_uses_plugin(fx.vm, "other"));

	unmount_job("a1", &alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert(!published_now("a1"));
	ck_assert(!staged_now());
	ck_assert_uint_eq(nmnt(B(UNBIND_VOLUME)), 1);
	ck_assert_uint_eq(nreg(B(RELEASE_CLAIM)), 1);
	ck_assert_uint_eq(nreg(B(DELETE_HANDLE)), 1);
	ck_assert(!fx.claimed);
	ck_assert(!volmgr_uses_plugin(fx.vm, PLUGIN));
}
END_TEST

/* The same again is kept: nothing is staged or published twice. */
START_TEST(test_mount_twice_is_idempotent)
{
	const char *log;

	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	harness_capture_stderr();
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	log = harness_captured_stderr();
	ck_assert_ptr_nonnull(strstr(log, "already staged"));
	ck_assert_ptr_nonnull(strstr(log, "already published"));
	ck_assert_uint_eq(nmnt(B(PREPARE_VOLUME)), 4);
	ck_assert(published_now("a1"));
}
END_TEST

/* Two allocs on one staging path: staged once, unstaged by the last. */
START_TEST(test_shared_stage)
{
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	mount_job(&alloc2, 1);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert(published_now("a1") && published_now("a2"));
	unmount_job("a1", &alloc1, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert(!published_now("a1"));
	ck_assert_msg(staged_now(), "unstaged under a2");
	unmount_job("a2", &alloc2, 3);
	ck_assert_int_eq(wait_job(3), VOLMGR_OK);
	ck_assert(!staged_now());
}
END_TEST

static int
occurrences(const char *s, const char *text)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, text)) != NULL; p++)
		n++;
	return n;
}

/* Is alloc's publish target of the volume, with its usage, mounted? */
static bool
published_as(const char *alloc, const struct alloc_volume *v)
{
	char use[160], p[BERTH_PATH_BUF];

	layout_usage(use, sizeof(use), v->read_only,
	    alloc_attachment_mode_name(v->attachment_mode),
	    alloc_access_mode_name(v->access_mode));
	path_of(p, sizeof(p), false, alloc, VOL, use);
	return is_mount(p);
}

/* a: alloc1 as id, its one volume v (copied from vols[0]) made
 * multi-node-single-writer, read-only or not. */
static void
multi_node(struct alloc *a, struct alloc_volume *v, const char *id,
    bool read_only)
{
	v[0] = vols[0];
	v[0].access_mode =
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_SINGLE_WRITER;
	v[0].read_only = read_only;
	*a = alloc1;
	a->id = (char *)id;
	a->volumes = v;
}

/*
 * A writer and a read-only reader of a multi-node volume, mounted at
 * once: two usages, one staging path, one NodeStageVolume; the reader's
 * publish is from that path; the last of them unstages it.
 */
START_TEST(test_writer_and_reader_staged_once)
{
	static struct alloc_volume wv[1], rv[1];
	static struct alloc w, r;
	const char *log;

	multi_node(&w, wv, "w", false);
	multi_node(&r, rv, "r", true);
	start(NULL, NULL);
	harness_capture_stderr();
	mount_job(&w, 0);
	mount_job(&r, 1);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	log = harness_captured_stderr();
	ck_assert_msg(occurrences(log, "staged (") == 1, "%s", log);
	ck_assert_int_eq(fx.stagings, 1);
	ck_assert(staged_now());
	ck_assert(published_as("w", wv) && published_as("r", rv));
	/* Both records name the one path. */
	ck_assert_str_eq(fx.rec_stage_usage, "");
	unmount_job("w", &w, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert_msg(staged_now(), "unstaged under the reader");
	ck_assert(published_as("r", rv));
	unmount_job("r", &r, 3);
	ck_assert_int_eq(wait_job(3), VOLMGR_OK);
	ck_assert(!staged_now());
}
END_TEST

/*
 * What an older berth left, its record (migrated by the registry: it
 * names its own usage) and its mounts: a volume staged at the per-usage
 * path .../vol1/<usage> and published for alloc "old". A new read-only
 * use joins that path (no second stage), the path is unstaged when its
 * last user goes, and the next stage is at the volume's one path.
 */
START_TEST(test_older_per_usage_path_kept_until_unstaged)
{
	Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;
	static struct alloc_volume rv[1];
	static struct alloc r;
	char vdir[600], old[BERTH_PATH_BUF], pub[BERTH_PATH_BUF];

	path_of(old, sizeof(old), true, NULL, VOL, usage());
	path_of(pub, sizeof(pub), false, "old", VOL, usage());
	snprintf(vdir, sizeof(vdir), "%s/volumes/%s", fx.state, VOL);
	mkdirs(old);
	mkdirs(pub);
	ck_assert_int_eq(mount(vdir, old, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(mount(old, pub, NULL, MS_BIND, NULL), 0);
	mh.plugin = PLUGIN;
	mh.namespace_ = NS;
	mh.volume = VOL;
	mh.alloc = "old";
	mh.task = "data";
	mh.usage = mh.stage_usage = (char *)usage();
	mh.staged = mh.published = true;
	fx.old = &mh;
	rv[0] = vols[0];
	rv[0].read_only = true;
	r = alloc2;
	r.volumes = rv;

	start(NULL, NULL);
	mount_job(&r, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_int_eq(fx.stagings, 0);
	ck_assert(published_as("a2", rv));
	ck_assert(is_mount(old) && !staged_now());
	ck_assert_str_eq(fx.rec_stage_usage, usage());
	/* The older use goes; the path stays staged for the new one. */
	unmount_job("old", NULL, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert(!is_mount(pub));
	ck_assert_msg(is_mount(old), "unstaged under a2");
	unmount_job("a2", &r, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert(!is_mount(old));
	/* Nothing staged at the older path any more: the one path. */
	mount_job(&alloc1, 3);
	ck_assert_int_eq(wait_job(3), VOLMGR_OK);
	ck_assert_int_eq(fx.stagings, 1);
	ck_assert(staged_now() && published_now("a1"));
	ck_assert_str_eq(fx.rec_stage_usage, "");
	unmount_job("a1", &alloc1, 4);
	ck_assert_int_eq(wait_job(4), VOLMGR_OK);
	ck_assert(!staged_now());
}
END_TEST

/* A node plugin without STAGE_UNSTAGE: no staging step at all (the
 * hostpath plugin then refuses the publish: a plugin's error ends the
 * job as FAILED, and the unmount undoes the rest). */
START_TEST(test_no_stage_then_plugin_refuses)
{
	fx.node_fp.stage_unstage = false;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_ptr_nonnull(strstr(fx.why[0], "NodePublishVolume"));
	ck_assert_uint_eq(nmnt(B(PREPARE_VOLUME)), 1);
	ck_assert(!staged_now());
	unmount_job("a1", &alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_uint_eq(nreg(B(DELETE_HANDLE)), 1);
}
END_TEST

/* A controller that advertises PUBLISH_UNPUBLISH is asked first; the
 * hostpath plugin does not implement it: FAILED, with the plugin's why. */
START_TEST(test_controller_publish_asked)
{
	fx.ctl_fp.publish_unpublish = true;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_uint_eq(nmnt(B(PREPARE_VOLUME)), 0);
	ck_assert_uint_eq(nreg(B(CLAIM_VOLUME)), 1);
	ck_assert_str_ne(fx.why[0], "");
}
END_TEST

/* The mounter finds both targets mounted already (a restart): kept,
 * and the plugin is not asked. */
START_TEST(test_already_mounted_kept)
{
	fx.force_mounted = true;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(!staged_now());
	ck_assert(fx.rec_staged && fx.rec_published);
	ck_assert_int_eq(fx.records, 2);
}
END_TEST

START_TEST(test_not_registered)
{
	fx.registered = false;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_str_eq(fx.why[0], "volume default/vol1: not registered");
	ck_assert_int_eq(fx.records, 0);
}
END_TEST

START_TEST(test_no_healthy_node_retries)
{
	fx.node_fp.healthy = false;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_RETRY);
	ck_assert_str_eq(fx.why[0], "plugin hp: no healthy node instance yet");
	fx.node_fp.healthy = true;
	fx.have_node = false;
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_RETRY);
}
END_TEST

/* Without a running alloc to ask, the type is inferred: a controller of
 * the same alloc makes it a monolith, else a node. The one plugin then
 * sees the volume staged under two types' paths, which only a lenient
 * plugin lets by. */
START_TEST(test_type_inferred)
{
	fx.declared = NULL;
	fx.lenient = true;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(published_now("a1"));
	/* No controller: a node plugin's root. */
	fx.have_ctl = false;
	fx.node_type = "node";
	mount_job(&alloc2, 1);
	ck_assert_msg(wait_job(1) == VOLMGR_OK, "%s", fx.why[1]);
	ck_assert(published_now("a2"));
}
END_TEST

/* ---- the registry: errors, late, out of order, never ---- */

START_TEST(test_registry_refuses_claim)
{
	fx.fail_body = B(CLAIM_VOLUME);
	fx.fail_code = BERTH__ERROR_CODE__ERROR_CONFLICT;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_ptr_nonnull(strstr(fx.why[0], "berth-registry refused: "));
	ck_assert_ptr_null(strstr(fx.why[0], "ERROR_"));
	ck_assert_ptr_nonnull(strstr(fx.why[0], "as the test asked"));
	ck_assert(!staged_now());
}
END_TEST

/* Never: the registry client's deadline passes; that may pass. */
START_TEST(test_registry_never_answers)
{
	start(NULL, NULL);
	hold(B(PUT_HANDLE));
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_RETRY);
	ck_assert_ptr_nonnull(strstr(fx.why[0], "berth-registry"));
	ck_assert_uint_eq(nreg(B(CLAIM_VOLUME)), 0);
}
END_TEST

/* Late and out of order: two allocs on two volumes of their own run at
 * once; the second's GetVolume is answered first. */
START_TEST(test_registry_out_of_order)
{
	static struct alloc_volume v2[1];
	static struct alloc_task t2[1];
	static struct alloc_mount m2[1];
	static struct alloc a3;
	struct fake_req *first, *second;
	char path[700];

	snprintf(path, sizeof(path), "%s/volumes/vol2", fx.state);
	mkdirs(path);
	v2[0] = vols[0];
	v2[0].source = "vol2";
	m2[0] = mounts[0];
	t2[0] = tasks[0];
	t2[0].mounts = m2;
	a3 = alloc2;
	a3.volumes = v2;
	a3.tasks = t2;
	start(NULL, NULL);
	hold(B(GET_VOLUME));
	mount_job(&alloc1, 0);
	mount_job(&a3, 1);
	first = wait_held(fx.reg, B(GET_VOLUME), 2);
	second = fake_nth(fx.reg, 1);
	ck_assert_ptr_nonnull(second);
	ck_assert_str_eq(second->env->get_volume->key->id, "vol2");
	unhold();
	reg_answer(fx.reg, second);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_int_eq(fx.done[0], 0);
	reg_answer(fx.reg, first);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(published_now("a1"));
}
END_TEST

/* Units on one volume never overlap: the second alloc's GetVolume
 * waits until the first alloc's unit is done. */
START_TEST(test_one_volume_one_unit)
{
	start(NULL, NULL);
	hold(B(CLAIM_VOLUME));
	mount_job(&alloc1, 0);
	mount_job(&alloc2, 1);
	wait_held(fx.reg, B(CLAIM_VOLUME), 1);
	settle(50);
	ck_assert_uint_eq(nreg(B(GET_VOLUME)), 1);
	unhold();
	reg_answer(fx.reg, fake_held(fx.reg, B(CLAIM_VOLUME)));
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_uint_eq(nreg(B(GET_VOLUME)), 2);
}
END_TEST

/* The registry's link closes under a call: that may pass; afterwards
 * it cannot be reached at all. */
START_TEST(test_registry_closes)
{
	start(NULL, NULL);
	hold(B(GET_VOLUME));
	mount_job(&alloc1, 0);
	wait_held(fx.reg, B(GET_VOLUME), 1);
	fake_close(fx.reg);
	ck_assert_int_eq(wait_job(0), VOLMGR_RETRY);
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_RETRY);
}
END_TEST

/* ---- the mounter: errors, never, closed ---- */

START_TEST(test_mounter_refuses)
{
	fx.fail_body = B(PREPARE_VOLUME);
	fx.fail_code = BERTH__ERROR_CODE__ERROR_PERMISSION;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_ptr_nonnull(strstr(fx.why[0], "berth-mounter refused: "));
}
END_TEST

/* A bind in place already (CONFLICT) is no failure; another is. */
START_TEST(test_bind_conflict_and_error)
{
	fx.fail_body = B(BIND_VOLUME);
	fx.fail_code = BERTH__ERROR_CODE__ERROR_CONFLICT;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	fx.fail_code = BERTH__ERROR_CODE__ERROR_BAD_REQUEST;
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_FAILED);
	/* An unbind of what is gone is no failure either. */
	fx.fail_body = B(UNBIND_VOLUME);
	unmount_job("a1", &alloc1, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert(!staged_now());
}
END_TEST

/* The mounter's link closes under PrepareVolume: may pass. Then it
 * cannot be reached: may pass too, with the words for that. */
START_TEST(test_mounter_closes)
{
	start(NULL, NULL);
	hold(B(PREPARE_VOLUME));
	mount_job(&alloc1, 0);
	wait_held(fx.mnt, B(PREPARE_VOLUME), 1);
	fake_close(fx.mnt);
	ck_assert_int_eq(wait_job(0), VOLMGR_RETRY);
	ck_assert_ptr_nonnull(strstr(fx.why[0], "berth-mounter"));
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_RETRY);
	ck_assert_str_eq(fx.why[1], MCLIENT_UNREACHABLE);
}
END_TEST

/* A reply that comes after the manager is gone reaches no one. */
START_TEST(test_reply_after_free)
{
	start(NULL, NULL);
	hold(B(PREPARE_VOLUME));
	hold(B(CLAIM_VOLUME));
	mount_job(&alloc1, 0);
	mount_job(&alloc2, 1);
	wait_held(fx.reg, B(CLAIM_VOLUME), 1);
	volmgr_free(fx.vm);
	fx.vm = NULL;
	unhold();
	reg_answer(fx.reg, fake_held(fx.reg, B(CLAIM_VOLUME)));
	settle(100);
	ck_assert_int_eq(fx.done[0] + fx.done[1], 0);
}
END_TEST

/* The alloc's second use of the volume keeps its claim: one release,
 * by the last, and a record each. */
START_TEST(test_two_uses_one_claim)
{
	static struct alloc_volume v[2];
	static struct alloc_mount m[2];
	static struct alloc_task t[1];
	static struct alloc a;

	v[0] = v[1] = vols[0];
	v[1].name = "logs";
	v[1].read_only = true;
	m[0] = m[1] = mounts[0];
	m[1].volume = "logs";
	m[1].destination = "logs";
	m[1].volume_index = 1;
	t[0] = tasks[0];
	t[0].mounts = m;
	t[0].nmounts = 2;
	a = alloc1;
	a.volumes = v;
	a.nvolumes = 2;
	a.tasks = t;
	start(NULL, NULL);
	mount_job(&a, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_uint_eq(nreg(B(CLAIM_VOLUME)), 2);
	ck_assert_uint_eq(nmnt(B(BIND_VOLUME)), 2);
	/* Two usages, one staging path, staged once. */
	ck_assert_int_eq(fx.stagings, 1);
	unmount_job("a1", &a, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_uint_eq(nmnt(B(UNBIND_VOLUME)), 2);
	ck_assert_uint_eq(nreg(B(RELEASE_CLAIM)), 1);
	ck_assert_uint_eq(nreg(B(DELETE_HANDLE)), 2);
	ck_assert(!staged_now());
}
END_TEST

/* What is gone already (NOT_FOUND) does not stop an unmount. */
START_TEST(test_unmount_lets_not_found_pass)
{
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	fx.fail_body = B(RELEASE_CLAIM);
	fx.fail_code = BERTH__ERROR_CODE__ERROR_NOT_FOUND;
	unmount_job("a1", &alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_uint_eq(nreg(B(DELETE_HANDLE)), 1);
	/* Not on a mount, where NOT_FOUND is an answer. */
	fx.fail_body = B(CLAIM_VOLUME);
	mount_job(&alloc1, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_FAILED);
}
END_TEST

/* An unmount that fails keeps the volume's pub for the next try. */
START_TEST(test_unmount_fails_then_retried)
{
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	kill(fx.plugin.pid, SIGSTOP);
	unmount_job("a1", &alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_RETRY);
	ck_assert(volmgr_uses_plugin(fx.vm, PLUGIN));
	ck_assert_uint_eq(nreg(B(DELETE_HANDLE)), 0);
	kill(fx.plugin.pid, SIGCONT);
	unmount_job("a1", &alloc1, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert(!published_now("a1"));
	ck_assert(!volmgr_uses_plugin(fx.vm, PLUGIN));
}
END_TEST

/* A controller that advertises PUBLISH_UNPUBLISH is asked on the way
 * back, after the node is done; hostpath refuses: FAILED. */
START_TEST(test_controller_unpublish_asked)
{
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	fx.ctl_fp.publish_unpublish = true;
	unmount_job("a1", &alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_FAILED);
	ck_assert(!staged_now());
	ck_assert_uint_eq(nreg(B(RELEASE_CLAIM)), 0);
}
END_TEST

/* The mounter answers late: the job waits for it. */
START_TEST(test_mounter_late)
{
	start(NULL, NULL);
	hold(B(BIND_VOLUME));
	mount_job(&alloc1, 0);
	wait_held(fx.mnt, B(BIND_VOLUME), 1);
	settle(200);
	ck_assert_int_eq(fx.done[0], 0);
	unhold();
	mnt_answer(fx.mnt, fake_held(fx.mnt, B(BIND_VOLUME)));
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
}
END_TEST

/* The mounter never answers: its client's deadline passes. */
START_TEST(test_mounter_never)
{
	start(NULL, NULL);
	hold(B(PREPARE_VOLUME));
	mount_job(&alloc1, 0);
	wait_held(fx.mnt, B(PREPARE_VOLUME), 1);
	ck_assert(fake_run_until(fx.base, is_done, (void *)0,
	    TEST_MCLIENT_MS + 5000));
	ck_assert_int_eq(fx.st[0], VOLMGR_RETRY);
	ck_assert_ptr_nonnull(strstr(fx.why[0], "did not answer in time"));
}
END_TEST

/* ---- the plugin: late, never, dying ---- */

START_TEST(test_plugin_late)
{
	start("--fault-slow-reply", "NodeStageVolume:300");
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(published_now("a1"));
}
END_TEST

/* The plugin stops answering (stopped): the deadline passes, may pass. */
START_TEST(test_plugin_never)
{
	start(NULL, NULL);
	hold(B(PREPARE_VOLUME));
	mount_job(&alloc1, 0);
	wait_held(fx.mnt, B(PREPARE_VOLUME), 1);
	kill(fx.plugin.pid, SIGSTOP);
	unhold();
	mnt_answer(fx.mnt, fake_held(fx.mnt, B(PREPARE_VOLUME)));
	ck_assert_int_eq(wait_job(0), VOLMGR_RETRY);
	ck_assert(!staged_now());
	kill(fx.plugin.pid, SIGCONT);
}
END_TEST

/* The plugin dies while it publishes: may pass. */
START_TEST(test_plugin_dies)
{
	start("--fault-exit-in", "NodePublishVolume");
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_RETRY);
	ck_assert(staged_now());
}
END_TEST

/* ---- after a restart: the records ---- */

START_TEST(test_records_read_back)
{
	Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;

	mh.plugin = PLUGIN;
	mh.namespace_ = NS;
	mh.volume = VOL;
	mh.alloc = "old";
	mh.task = "web";
	mh.usage = (char *)usage();
	mh.staged = mh.published = true;
	fx.old = &mh;
	/* Gone from the registry too. */
	fx.fail_body = B(GET_VOLUME);
	fx.fail_code = BERTH__ERROR_CODE__ERROR_NOT_FOUND;
	plugin_start(NULL, NULL);
	ck_assert_ptr_nonnull(fx.csi = csi_client_new(fx.base));
	ck_assert_ptr_nonnull(fx.conn = csi_conn_open(fx.csi, fx.endpoint));
	new_manager();
	/* A job waits for the records. */
	hold(B(LIST_HANDLES));
	volmgr_start(fx.vm);
	unmount_job("other", NULL, 0);
	wait_held(fx.reg, B(LIST_HANDLES), 1);
	settle(50);
	ck_assert(!volmgr_ready(fx.vm));
	ck_assert_int_eq(fx.done[0], 0);
	unhold();
	reg_answer(fx.reg, fake_held(fx.reg, B(LIST_HANDLES)));
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(volmgr_uses_plugin(fx.vm, PLUGIN));
	/* Known from the records only: taken back, whatever is gone. */
	unmount_job("old", NULL, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_uint_eq(nreg(B(GET_VOLUME)), 1);
	ck_assert_uint_eq(nreg(B(DELETE_HANDLE)), 1);
	ck_assert(!volmgr_uses_plugin(fx.vm, PLUGIN));
}
END_TEST

/* A restart: the mounts stay, a new manager reads the records back,
 * keeps what is staged and takes it back when asked, with the provider's
 * id read from the registry again. */
START_TEST(test_restart_takes_back)
{
	Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;

	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	volmgr_free(fx.vm);
	mh.plugin = PLUGIN;
	mh.namespace_ = NS;
	mh.volume = VOL;
	mh.alloc = "a1";
	mh.task = "data";
	mh.usage = (char *)usage();
	mh.staged = fx.rec_staged;
	mh.published = fx.rec_published;
	fx.old = &mh;
	new_manager();
	volmgr_start(fx.vm);
	ck_assert(fake_run_until(fx.base, is_ready, NULL, WAIT_MS));
	ck_assert(volmgr_uses_plugin(fx.vm, PLUGIN));
	ck_assert(staged_now() && published_now("a1"));
	unmount_job("a1", NULL, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_uint_eq(nreg(B(GET_VOLUME)), 2);
	ck_assert(!published_now("a1"));
	ck_assert(!staged_now());
	ck_assert(!fx.claimed);
}
END_TEST

START_TEST(test_records_unreadable)
{
	fx.fail_body = B(LIST_HANDLES);
	fx.fail_code = BERTH__ERROR_CODE__ERROR_INTERNAL;
	start(NULL, NULL);
	ck_assert(volmgr_ready(fx.vm));
	fx.fail_body = 0;
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
}
END_TEST

static void
count_alloc(const char *alloc, void *arg)
{
	(void)alloc;
	(*(int *)arg)++;
}

START_TEST(test_each_alloc_once)
{
	int n = 0;

	start(NULL, NULL);
	mount_job(&alloc1, 0);
	mount_job(&alloc2, 1);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	volmgr_each_alloc(fx.vm, count_alloc, &n);
	ck_assert_int_eq(n, 2);
}
END_TEST

/* ---- the operator's volumes ---- */

static struct volmgr_spec
spec(void)
{
	return (struct volmgr_spec){ .ns = NS, .id = VOL, .plugin = PLUGIN,
	    .external_id = VOL,
	    .access = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER,
	    .attachment =
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM };
}

START_TEST(test_register_validated)
{
	struct volmgr_spec s = spec();

	fx.registered = false;
	start(NULL, NULL);
	volmgr_register(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(fx.registered);
	ck_assert_str_eq(fx.external_id, VOL);
	/* Without a controller, nothing to validate. */
	fx.have_ctl = false;
	volmgr_register(fx.vm, &s, done, (void *)1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_uint_eq(nreg(B(PUT_VOLUME)), 2);
	/* One the plugin does not have: refused. */
	fx.have_ctl = true;
	s.external_id = "nope";
	volmgr_register(fx.vm, &s, done, (void *)2);
	ck_assert_int_eq(wait_job(2), VOLMGR_FAILED);
	ck_assert_uint_eq(nreg(B(PUT_VOLUME)), 2);
}
END_TEST

START_TEST(test_create_then_delete)
{
	struct volmgr_param p[1] = { { "k", "v" } };
	struct volmgr_spec s = spec();
	char path[700];

	s.id = "made";
	s.params = p;
	s.nparams = 1;
	fx.registered = false;
	start(NULL, NULL);
	volmgr_create(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(fx.registered);
	ck_assert_str_ne(fx.external_id, "");
	snprintf(path, sizeof(path), "%s/volumes/%s", fx.state,
	    fx.external_id);
	ck_assert_int_eq(access(path, F_OK), 0);
	/* Claimed: refused. */
	fx.claimed = true;
	volmgr_delete(fx.vm, NS, VOL, done, (void *)1);
	ck_assert_int_eq(wait_job(1), VOLMGR_FAILED);
	ck_assert_str_eq(fx.why[1], "volume default/vol1 is claimed by "
	    "alloc someone");
	fx.claimed = false;
	volmgr_delete(fx.vm, NS, VOL, done, (void *)2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert(!fx.registered);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* Not registered: refused. */
	volmgr_delete(fx.vm, NS, VOL, done, (void *)3);
	ck_assert_int_eq(wait_job(3), VOLMGR_FAILED);
}
END_TEST

/* The types of the volume events recorded after index from, in order,
 * each "Type:alloc:plugin:message" and a space. */
static const char *
volume_events(uint64_t from)
{
	static char buf[2048];
	const struct berth_event *e;
	size_t n = 0;

	buf[0] = '\0';
	for (e = events_after(fx.events, from); e != NULL;
	    e = events_after(fx.events, e->index)) {
		ck_assert_str_eq(e->topic, "volume");
		n += snprintf(buf + n, sizeof(buf) - n, "%s:%s:%s:%s ",
		    e->type, e->alloc, e->plugin, e->message);
		ck_assert_uint_lt(n, sizeof(buf));
	}
	return buf;
}

/* Every volume operation is an event; a refused one is none. */
START_TEST(test_volume_operations_are_events)
{
	struct volmgr_spec s = spec();
	uint64_t last;

	fx.registered = false;
	start(NULL, NULL);
	volmgr_register(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_str_eq(volume_events(0), "VolumeRegistered::" PLUGIN
	    ":volume default/vol1 registered ");
	last = events_last(fx.events);
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_str_eq(volume_events(last), "VolumeStaged:a1:" PLUGIN
	    ":volume default/vol1 staged VolumePublished:a1:" PLUGIN
	    ":volume default/vol1 published ");
	last = events_last(fx.events);
	unmount_job("a1", &alloc1, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert_str_eq(volume_events(last), "VolumeUnpublished:a1:" PLUGIN
	    ":volume default/vol1 unpublished VolumeUnstaged:a1:" PLUGIN
	    ":volume default/vol1 unstaged ");
	last = events_last(fx.events);
	fx.claimed = true;
	volmgr_delete(fx.vm, NS, VOL, done, (void *)3);
	ck_assert_int_eq(wait_job(3), VOLMGR_FAILED);
	ck_assert_str_eq(volume_events(last), "");
	fx.claimed = false;
	volmgr_delete(fx.vm, NS, VOL, done, (void *)4);
	ck_assert_int_eq(wait_job(4), VOLMGR_OK);
	ck_assert_str_eq(volume_events(last), "VolumeDeleted:::volume "
	    "default/vol1 deleted ");
	last = events_last(fx.events);
	s.id = "made";
	volmgr_create(fx.vm, &s, done, (void *)5);
	ck_assert_int_eq(wait_job(5), VOLMGR_OK);
	ck_assert_str_eq(volume_events(last), "VolumeCreated::" PLUGIN
	    ":volume default/made created ");
}
END_TEST

START_TEST(test_create_needs_controller)
{
	struct volmgr_spec s = spec();

	start(NULL, NULL);
	fx.have_ctl = false;
	volmgr_create(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_str_eq(fx.why[0], "plugin hp has no healthy controller "
	    "instance");
	fx.have_ctl = true;
	fx.ctl_fp.create_delete = false;
	volmgr_create(fx.vm, &s, done, (void *)1);
	ck_assert_int_eq(wait_job(1), VOLMGR_FAILED);
	/* Delete without CREATE_DELETE: only the registry forgets it. */
	volmgr_delete(fx.vm, NS, VOL, done, (void *)2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert(!fx.registered);
}
END_TEST

/* ---- mount options and volume context, kept with the volume ---- */

static Berth__Volume *kept;	/* the volume as PutVolume gave it */

/* The fake registry, keeping what PutVolume gave and giving it back. */
static void
on_reg_keeping(struct fake_peer *fp, struct fake_req *req, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__VolumeReply vr = BERTH__VOLUME_REPLY__INIT;
	static uint8_t buf[16384];
	size_t len;

	if (req->env->body_case == B(PUT_VOLUME)) {
		len = berth__volume__pack(req->env->put_volume->volume, buf);
		if (kept != NULL)
			berth__volume__free_unpacked(kept, NULL);
		ck_assert_ptr_nonnull(kept = berth__volume__unpack(NULL, len,
		    buf));
	}
	if (kept == NULL || (req->env->body_case != B(PUT_VOLUME) &&
	    req->env->body_case != B(GET_VOLUME))) {
		on_reg(fp, req, arg);
		return;
	}
	env.body_case = B(VOLUME_REPLY);
	env.volume_reply = &vr;
	vr.volume = kept;
	fake_reply(fp, req, &env, -1);
}

/* What the plugin noted that rpc was asked (note_received(), node.c). */
static void
received(const char *rpc, const char *want)
{
	char path[700], got[2048];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/received/%s.%s", fx.state, rpc, VOL);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	n = read(fd, got, sizeof(got) - 1);
	close(fd);
	ck_assert_int_ge(n, 0);
	got[n] = '\0';
	ck_assert_msg(strcmp(got, want) == 0, "%s was asked:\n%s\nnot:\n%s",
	    rpc, got, want);
}

/* Registered with options and a context; the plugin told to note. */
static void
register_with_options(void)
{
	static char *flags[] = { "noatime", "nodev" };
	static const struct volmgr_param ctx[] = { { "share", "/export/a" },
	    { "server", "10.0.0.1" } };
	struct volmgr_spec s = spec();
	char path[700];

	snprintf(path, sizeof(path), "%s/received", fx.state);
	mkdirs(path);
	fake_peer_handler(fx.reg, on_reg_keeping, NULL);
	fx.registered = false;
	s.fs_type = "ext4";
	s.flags = flags;
	s.nflags = 2;
	s.context = ctx;
	s.ncontext = 2;
	start(NULL, NULL);
	volmgr_register(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_ptr_nonnull(kept);
	ck_assert_str_eq(kept->fs_type, "ext4");
	ck_assert_uint_eq(kept->n_mount_flags, 2);
	ck_assert_uint_eq(kept->n_context, 2);
	ck_assert_str_eq(kept->context[1]->value, "10.0.0.1");
}

/*
 * The alloc's fs_type wins; flags are the volume's, then the alloc's not
 * among them ("nodev" once); the volume context, at stage and publish.
 */
START_TEST(test_options_merged_and_context_passed)
{
	static char *flags[] = { "nodev", "nosuid" };
	struct alloc_volume v = vols[0];
	struct alloc a = alloc1;
	const char *want = "fs_type xfs\nflag noatime\nflag nodev\n"
	    "flag nosuid\ncontext share=/export/a\ncontext server=10.0.0.1\n";

	register_with_options();
	v.fs_type = "xfs";
	v.mount_flags = flags;
	v.nflags = 2;
	a.volumes = &v;
	mount_job(&a, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	received("NodeStageVolume", want);
	received("NodePublishVolume", want);
	berth__volume__free_unpacked(kept, NULL);
	kept = NULL;
}
END_TEST

/* An alloc that names no options gets the volume's whole. */
START_TEST(test_volume_options_when_alloc_names_none)
{
	const char *want = "fs_type ext4\nflag noatime\nflag nodev\n"
	    "context share=/export/a\ncontext server=10.0.0.1\n";

	register_with_options();
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	received("NodeStageVolume", want);
	received("NodePublishVolume", want);
	berth__volume__free_unpacked(kept, NULL);
	kept = NULL;
}
END_TEST

/* ---- secrets, named by the volume, read at each call ---- */

/* Whether what the plugin noted rpc was asked holds text. */
static bool
received_has(const char *rpc, const char *text)
{
	char path[700], got[2048];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/received/%s.%s", fx.state, rpc, VOL);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, got, sizeof(got) - 1);
	close(fd);
	got[n > 0 ? n : 0] = '\0';
	return strstr(got, text) != NULL;
}

/* Registered naming secrets; systemd's credentials dir holds "creds"
 * (the supervisor's config dir holds none in these tests). */
static void
register_with_secrets(const struct volmgr_param *refs, size_t n)
{
	struct volmgr_spec s = spec();
	char path[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/received", fx.state);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/creds", fx.dir);
	mkdirs(path);
	setenv("CREDENTIALS_DIRECTORY", path, 1);
	snprintf(path, sizeof(path), "%s/creds/ceph-user", fx.dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "userID=admin\nuserKey=AQBx-key\n");
	fclose(f);
	fake_peer_handler(fx.reg, on_reg_keeping, NULL);
	fx.registered = false;
	s.secrets = refs;
	s.nsecrets = n;
	start(NULL, NULL);
	volmgr_register(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_ptr_nonnull(kept);
	/* The registry gets the names, never a value. */
	ck_assert_uint_eq(kept->n_secrets, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(kept->secrets[i]->value, refs[i].value);
}

/* Stage and publish get the secret's key=value pairs from the file. */
START_TEST(test_secrets_reach_stage_and_publish)
{
	static const struct volmgr_param refs[] = { { "stage", "ceph-user" },
	    { "publish", "ceph-user" } };

	register_with_secrets(refs, 2);
	mount_job(&alloc1, 1);
	ck_assert_msg(wait_job(1) == VOLMGR_OK, "%s", fx.why[1]);
	ck_assert(received_has("NodeStageVolume",
	    "secret userID=admin\nsecret userKey=AQBx-key\n"));
	ck_assert(received_has("NodePublishVolume",
	    "secret userID=admin\nsecret userKey=AQBx-key\n"));
	unsetenv("CREDENTIALS_DIRECTORY");
	berth__volume__free_unpacked(kept, NULL);
	kept = NULL;
}
END_TEST

/* A secret that is not there fails that call, named, before it is made. */
START_TEST(test_missing_secret_fails_the_call)
{
	static const struct volmgr_param refs[] = { { "stage", "gone" } };

	register_with_secrets(refs, 1);
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_FAILED);
	ck_assert_msg(strstr(fx.why[1], "stage: secret \"gone\": no such "
	    "secret") != NULL, "%s", fx.why[1]);
	ck_assert(!received_has("NodeStageVolume", "fs_type"));
	unsetenv("CREDENTIALS_DIRECTORY");
	berth__volume__free_unpacked(kept, NULL);
	kept = NULL;
}
END_TEST

/* ---- the task's group ---- */

/* The volume's directory, 0755 as the strict plugin makes it, and the
 * plugin told to note what it is asked. */
static void
group_setup(void)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/received", fx.state);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/volumes/%s", fx.state, VOL);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

/* Whether a process of uid TEST_UID and group gid (no other) creates a
 * file in the directory dir (opened here, as root); its gid in *got. */
static bool
writes_as(int dir, gid_t gid, gid_t *got)
{
	struct stat st;
	pid_t pid;
	int status;

	unlinkat(dir, "by-task", 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 ||
		    setuid(TEST_UID) < 0)
			_exit(100);
		fd = openat(dir, "by-task", O_WRONLY | O_CREAT | O_EXCL, 0640);
		_exit(fd >= 0 ? 0 : errno == EACCES ? 1 : 101);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) <= 1, "child: %d",
	    WEXITSTATUS(status));
	if (WEXITSTATUS(status) != 0)
		return false;
	ck_assert_int_eq(fstatat(dir, "by-task", &st, AT_SYMLINK_NOFOLLOW), 0);
	*got = st.st_gid;
	return true;
}

/*
 * A plugin that advertises VOLUME_MOUNT_GROUP gets the alloc's group at
 * stage and publish; the strict plugin gives the published root (made
 * root 0755) to it, group rwx and setgid, and a process of that group
 * that is not root writes in it. One of another group does not.
 */
START_TEST(test_mount_group_when_advertised)
{
	char target[BERTH_PATH_BUF];
	struct stat st;
	gid_t got;
	int dir;

	group_setup();
	start(NULL, NULL);
	mount_job_group(&alloc1, TEST_GID, 0);
	ck_assert_msg(wait_job(0) == VOLMGR_OK, "%s", fx.why[0]);
	ck_assert(received_has("NodeStageVolume", "mount_group 4242\n"));
	ck_assert(received_has("NodePublishVolume", "mount_group 4242\n"));
	path_of(target, sizeof(target), false, "a1", VOL, usage());
	ck_assert(is_mount(target));
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_uint_eq(st.st_gid, TEST_GID);
	ck_assert_uint_eq(st.st_uid, 0);
	ck_assert_uint_eq(st.st_mode & 07777, 02775);
	if (geteuid() != 0)
		return;		/* one gid mapped: no second process */
	ck_assert_int_ge(dir = open(target, O_RDONLY | O_DIRECTORY), 0);
	ck_assert(writes_as(dir, TEST_GID, &got));
	ck_assert_uint_eq(got, TEST_GID);
	ck_assert(!writes_as(dir, OTHER_GID, &got));
	close(dir);
}
END_TEST

/* The request's own mount_group wins over the alloc's. */
START_TEST(test_request_mount_group_wins)
{
	struct alloc_volume v = vols[0];
	struct alloc a = alloc1;

	group_setup();
	start(NULL, NULL);
	v.mount_group = TEST_GID;
	a.volumes = &v;
	mount_job_group(&a, OTHER_GID, 0);
	ck_assert_msg(wait_job(0) == VOLMGR_OK, "%s", fx.why[0]);
	ck_assert(received_has("NodeStageVolume", "mount_group 4242\n"));
	ck_assert(received_has("NodePublishVolume", "mount_group 4242\n"));
}
END_TEST

/*
 * A plugin that does not advertise it gets no group (the real plugin
 * would take one: the fingerprint decides), the volume stays the
 * plugin's, and berth says so at stage time: a log line and the event.
 */
START_TEST(test_no_mount_group_unless_advertised)
{
	char target[BERTH_PATH_BUF];
	const char *log;
	struct stat st;

	group_setup();
	fx.node_fp.mount_group = false;
	start(NULL, NULL);
	harness_capture_stderr();
	mount_job_group(&alloc1, TEST_GID, 0);
	ck_assert_msg(wait_job(0) == VOLMGR_OK, "%s", fx.why[0]);
	log = harness_captured_stderr();
	ck_assert(received_has("NodeStageVolume", "fs_type"));
	ck_assert(!received_has("NodeStageVolume", "mount_group"));
	ck_assert(!received_has("NodePublishVolume", "mount_group"));
	ck_assert_msg(strstr(log, "volume default/vol1: plugin hp does not "
	    "take a mount group (VOLUME_MOUNT_GROUP): the volume's ownership "
	    "is the plugin's, and the task (group 4242) may not be able to "
	    "write") != NULL, "%s", log);
	ck_assert_ptr_nonnull(strstr(volume_events(0), "VolumeStaged:a1:"
	    PLUGIN ":volume default/vol1 staged; its ownership is the "
	    "plugin's (no VOLUME_MOUNT_GROUP): the task may not be able to "
	    "write "));
	path_of(target, sizeof(target), false, "a1", VOL, usage());
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
}
END_TEST

/* ---- usage and condition (volmgr_stats.c) ---- */

static struct volmgr_stats stats_now;

/* Run until the volume's stats have made at least *arg calls. */
static bool
stats_calls(void *arg)
{
	return volmgr_stats_get(fx.vm, NS, VOL, &stats_now) &&
	    stats_now.calls >= *(uint64_t *)arg;
}

static bool
stats_abnormal(void *arg)
{
	return volmgr_stats_get(fx.vm, NS, VOL, &stats_now) &&
	    stats_now.condition_known && stats_now.abnormal == *(bool *)arg;
}

static bool
stats_gone(void *arg)
{
	(void)arg;
	return !volmgr_stats_get(fx.vm, NS, VOL, &stats_now);
}

static void
stats_setup(int interval_ms)
{
	fx.stats_ms = interval_ms;
	fx.node_fp.volume_stats = fx.node_fp.volume_condition = true;
}

/*
 * Strict, the plugin leaves the usage out and says the condition: not
 * known, not zeros. Its volume's directory renamed away turns the
 * volume abnormal, back normal: one event each way. Unpublished, the
 * volume has no stats left.
 */
START_TEST(test_stats_condition_and_events)
{
	char dir[700], away[700];
	uint64_t one = 1, last;
	bool yes = true, no = false;

	stats_setup(50);
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	last = events_last(fx.events);
	ck_assert(fake_run_until(fx.base, stats_calls, &one, WAIT_MS));
	ck_assert(stats_now.answered);
	ck_assert(!stats_now.bytes_known && !stats_now.inodes_known);
	ck_assert(stats_now.condition_known && !stats_now.abnormal);
	ck_assert_str_eq(stats_now.error, "");
	ck_assert_str_eq(stats_now.plugin, PLUGIN);

	snprintf(dir, sizeof(dir), "%s/volumes/%s", fx.state, VOL);
	snprintf(away, sizeof(away), "%s/away", fx.state);
	ck_assert_int_eq(rename(dir, away), 0);
	ck_assert(fake_run_until(fx.base, stats_abnormal, &yes, WAIT_MS));
	ck_assert_msg(strstr(stats_now.message, "is gone") != NULL, "%s",
	    stats_now.message);
	ck_assert_int_eq(rename(away, dir), 0);
	ck_assert(fake_run_until(fx.base, stats_abnormal, &no, WAIT_MS));
	settle(200);
	ck_assert_msg(strncmp(volume_events(last), "VolumeAbnormal::" PLUGIN
	    ":volume default/vol1 abnormal: ", 48) == 0, "%s",
	    volume_events(last));
	ck_assert_msg(strstr(volume_events(last), " VolumeNormal::" PLUGIN
	    ":volume default/vol1 normal again ") != NULL, "%s",
	    volume_events(last));

	unmount_job("a1", &alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert(fake_run_until(fx.base, stats_gone, NULL, WAIT_MS));
}
END_TEST

/*
 * A plugin slower than the deadline: each call ends at the deadline,
 * one per volume at a time; the rounds in between are skipped, not
 * piled up on the plugin.
 */
START_TEST(test_stats_slow_plugin_no_pile_up)
{
	uint64_t two = 2;

	stats_setup(50);
	start("--fault-slow-reply", "NodeGetVolumeStats:1000");
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(fake_run_until(fx.base, stats_calls, &two, WAIT_MS));
	settle(1000);
	ck_assert(volmgr_stats_get(fx.vm, NS, VOL, &stats_now));
	ck_assert_msg(strstr(stats_now.error, "DEADLINE_EXCEEDED") != NULL,
	    "%s", stats_now.error);
	/* The deadline is 500 ms and a round comes every 50 ms: about 10
	 * rounds per call, all but one skipped. */
	ck_assert_msg(stats_now.skipped >= 5 * stats_now.calls,
	    "%" PRIu64 " calls, %" PRIu64 " skipped", stats_now.calls,
	    stats_now.skipped);
}
END_TEST

/*
 * After a restart (a new manager, its calls still out freed with the old
 * one), a volume known from its record only is asked at its publish
 * target, its id at the provider asked of the registry once.
 */
START_TEST(test_stats_of_a_volume_known_from_records)
{
	Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;
	uint64_t one = 1, three = 3;
	unsigned gets;

	stats_setup(50);
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert(fake_run_until(fx.base, stats_calls, &one, WAIT_MS));
	volmgr_free(fx.vm);
	mh.plugin = PLUGIN;
	mh.namespace_ = NS;
	mh.volume = VOL;
	mh.alloc = "a1";
	mh.task = "web";
	mh.usage = (char *)usage();
	mh.staged = mh.published = true;
	fx.old = &mh;
	gets = nreg(B(GET_VOLUME));
	new_manager();
	volmgr_start(fx.vm);
	ck_assert(fake_run_until(fx.base, is_ready, NULL, WAIT_MS));
	ck_assert(fake_run_until(fx.base, stats_calls, &three, WAIT_MS));
	ck_assert_str_eq(stats_now.error, "");
	ck_assert(stats_now.condition_known && !stats_now.abnormal);
	ck_assert_uint_eq(nreg(B(GET_VOLUME)), gets + 1);
}
END_TEST

/* A node plugin without GET_VOLUME_STATS is never asked, and it says so. */
START_TEST(test_stats_not_advertised)
{
	stats_setup(50);
	fx.node_fp.volume_stats = false;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	settle(300);
	ck_assert(volmgr_stats_get(fx.vm, NS, VOL, &stats_now));
	ck_assert_uint_eq(stats_now.calls, 0);
	ck_assert(!stats_now.answered);
	ck_assert_str_eq(stats_now.error, "the node plugin does not advertise "
	    "GET_VOLUME_STATS");
}
END_TEST

/* ---- CSI 1.5 access modes, topology, max volumes per node ---- */

#define SNSW BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER

static Berth__AccessMode claimed_mode;	/* the last ClaimVolume's */

static void
on_reg_claims(struct fake_peer *fp, struct fake_req *req, void *arg)
{
	if (req->env->body_case == B(CLAIM_VOLUME))
		claimed_mode = req->env->claim_volume->claim->access_mode;
	on_reg(fp, req, arg);
}

/*
 * A CSI 1.5 mode with a node plugin that does not advertise
 * SINGLE_NODE_MULTI_WRITER: refused before anything is recorded or
 * claimed. With it: claimed in that mode, published where the mounter
 * names single-node-writer.
 */
START_TEST(test_csi15_mode_needs_the_node_capability)
{
	Berth__Volume bv = BERTH__VOLUME__INIT;
	struct alloc_volume v = vols[0];
	struct alloc a = alloc1;
	char why[512];

	v.access_mode = SNSW;
	a.volumes = &v;
	fake_peer_handler(fx.reg, on_reg_claims, NULL);
	start(NULL, NULL);
	mount_job(&a, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_str_eq(fx.why[0], "volume default/vol1: access mode "
	    "single-node-single-writer needs a node plugin that advertises "
	    "SINGLE_NODE_MULTI_WRITER, and plugin hp does not");
	ck_assert_uint_eq(nreg(B(CLAIM_VOLUME)), 0);
	ck_assert_int_eq(fx.records, 0);
	bv.namespace_ = NS;
	bv.id = VOL;
	bv.plugin_id = PLUGIN;
	ck_assert(volmgr_refuses(fx.vm, &bv, SNSW, why, sizeof(why)));
	ck_assert(!volmgr_refuses(fx.vm, &bv,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER, why,
	    sizeof(why)));

	fx.node_fp.single_node_multi_writer = true;
	ck_assert(!volmgr_refuses(fx.vm, &bv, SNSW, why, sizeof(why)));
	mount_job(&a, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert_int_eq(claimed_mode, SNSW);
	ck_assert(staged_now());
	ck_assert(published_now("a1"));
	unmount_job("a1", &a, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	ck_assert(!published_now("a1"));
}
END_TEST

/* A volume registered as reachable from zone=b only (kept by the fake). */
static void
register_in_zone_b(void)
{
	static const struct volmgr_param seg[] = { { "zone", "b" } };
	static const struct volmgr_topology topo[] = { { seg, 1 } };
	struct volmgr_spec s = spec();

	fake_peer_handler(fx.reg, on_reg_keeping, NULL);
	fx.registered = false;
	s.accessible = topo;
	s.naccessible = 1;
	fx.have_ctl = false;
	volmgr_register(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	fx.have_ctl = true;
	ck_assert_ptr_nonnull(kept);
	ck_assert_uint_eq(kept->n_accessible_topology, 1);
}

/* A node of another zone: refused, saying both; of that zone: mounted. */
START_TEST(test_topology_mismatch_refused)
{
	start(NULL, NULL);
	register_in_zone_b();
	snprintf(fx.node_fp.topology, sizeof(fx.node_fp.topology),
	    "zone=a,rack=r1");
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_FAILED);
	ck_assert_str_eq(fx.why[1], "volume default/vol1 is accessible from "
	    "topology {zone=b}, and this node's (plugin hp) is "
	    "{zone=a,rack=r1}");
	ck_assert_uint_eq(nreg(B(CLAIM_VOLUME)), 0);
	ck_assert(!staged_now());
	/* Not a prefix: zone=bb is another zone. */
	snprintf(fx.node_fp.topology, sizeof(fx.node_fp.topology),
	    "zone=bb");
	mount_job(&alloc1, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_FAILED);
	snprintf(fx.node_fp.topology, sizeof(fx.node_fp.topology),
	    "rack=r1,zone=b");
	mount_job(&alloc1, 3);
	ck_assert_int_eq(wait_job(3), VOLMGR_OK);
	ck_assert(published_now("a1"));
	unmount_job("a1", &alloc1, 4);
	ck_assert_int_eq(wait_job(4), VOLMGR_OK);
	berth__volume__free_unpacked(kept, NULL);
	kept = NULL;
}
END_TEST

/*
 * At max_volumes_per_node, a new volume waits (retryable, saying why,
 * nothing kept of it), while another alloc may still use a volume that
 * is here already; once one is released the new one mounts.
 */
START_TEST(test_max_volumes_waits)
{
	struct alloc_volume v2 = vols[0];
	struct alloc a3 = alloc1;
	struct volmgr_counts c;
	char path[700];

	snprintf(path, sizeof(path), "%s/volumes/vol2", fx.state);
	mkdirs(path);
	v2.source = "vol2";
	a3.id = "a3";
	a3.volumes = &v2;
	fx.node_fp.max_volumes = 1;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	mount_job(&a3, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_RETRY);
	ck_assert_str_eq(fx.why[1], "volume default/vol2: plugin hp holds 1 "
	    "volumes on this node, its max_volumes_per_node; waiting for one "
	    "to be released");
	volmgr_counts(fx.vm, &c);
	ck_assert_uint_eq(c.in_use, 1);
	mount_job(&alloc2, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	unmount_job("a1", &alloc1, 3);
	ck_assert_int_eq(wait_job(3), VOLMGR_OK);
	/* a2 still holds vol1. */
	mount_job(&a3, 4);
	ck_assert_int_eq(wait_job(4), VOLMGR_RETRY);
	unmount_job("a2", &alloc2, 5);
	ck_assert_int_eq(wait_job(5), VOLMGR_OK);
	mount_job(&a3, 6);
	ck_assert_int_eq(wait_job(6), VOLMGR_OK);
	unmount_job("a3", &a3, 7);
	ck_assert_int_eq(wait_job(7), VOLMGR_OK);
}
END_TEST

/*
 * Create passes the topology request; the plugin's accessible_topology
 * is kept with it; a requisite the plugin is in none of is refused.
 */
START_TEST(test_create_passes_topology)
{
	static const struct volmgr_param a[] = { { "zone", "a" } };
	static const struct volmgr_param b[] = { { "zone", "b" } };
	static const struct volmgr_topology req[] = { { b, 1 }, { a, 1 } };
	static const struct volmgr_topology pref[] = { { a, 1 } };
	struct volmgr_spec s = spec();

	fake_peer_handler(fx.reg, on_reg_keeping, NULL);
	fx.registered = false;
	start("--topology", "zone=a");
	s.requisite = req;
	s.nrequisite = 2;
	s.preferred = pref;
	s.npreferred = 1;
	volmgr_create(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_ptr_nonnull(kept);
	ck_assert_uint_eq(kept->n_requisite, 2);
	ck_assert_str_eq(kept->requisite[0]->segments[0]->value, "b");
	ck_assert_uint_eq(kept->n_preferred, 1);
	ck_assert_uint_eq(kept->n_accessible_topology, 1);
	ck_assert_str_eq(kept->accessible_topology[0]->segments[0]->key,
	    "zone");
	ck_assert_str_eq(kept->accessible_topology[0]->segments[0]->value,
	    "a");
	/* Mounted on a node of zone a. */
	snprintf(fx.node_fp.topology, sizeof(fx.node_fp.topology), "zone=a");
	mount_job(&alloc1, 1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	unmount_job("a1", &alloc1, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	/* Only zone b asked: the plugin cannot (RESOURCE_EXHAUSTED, which
	 * CSI has the caller retry once the cause is gone). */
	s.id = "other";
	s.nrequisite = 1;
	volmgr_create(fx.vm, &s, done, (void *)3);
	ck_assert_int_eq(wait_job(3), VOLMGR_RETRY);
	ck_assert_msg(strstr(fx.why[3], "none of the requisite topologies") !=
	    NULL, "why: %s", fx.why[3]);
	berth__volume__free_unpacked(kept, NULL);
	kept = NULL;
}
END_TEST

/* Creating a volume of a CSI 1.5 mode with a node that does not take it. */
START_TEST(test_create_csi15_mode_refused)
{
	struct volmgr_spec s = spec();

	fx.registered = false;
	start(NULL, NULL);
	s.access = SNSW;
	volmgr_create(fx.vm, &s, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_msg(strstr(fx.why[0], "SINGLE_NODE_MULTI_WRITER") != NULL,
	    "why: %s", fx.why[0]);
	ck_assert(!fx.registered);
	fx.node_fp.single_node_multi_writer = true;
	volmgr_create(fx.vm, &s, done, (void *)1);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	ck_assert(fx.registered);
}
END_TEST

/* ---- expansion (volmgr_expand.c) ---- */

static void
expand_setup(void)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/received", fx.state);
	mkdirs(path);
	fx.ctl_fp.expand = fx.node_fp.expand = true;
	fx.ctl_fp.expansion = fx.node_fp.expansion =
	    CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__ONLINE;
}

/*
 * A published volume: the controller, then the node at the publish
 * target with the staging path; a PutVolume keeps the capacity, and it
 * is an event.
 */
START_TEST(test_expand_published)
{
	char want[2 * BERTH_PATH_BUF + 200], target[BERTH_PATH_BUF];
	char staging[BERTH_PATH_BUF];
	unsigned puts;
	uint64_t from;

	expand_setup();
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_msg(wait_job(0) == VOLMGR_OK, "%s", fx.why[0]);
	puts = nreg(B(PUT_VOLUME));
	from = events_last(fx.events);
	volmgr_expand(fx.vm, NS, VOL, 2 * 1048576, 0, done, (void *)1);
	ck_assert_msg(wait_job(1) == VOLMGR_OK, "%s", fx.why[1]);
	ck_assert(received_has("ControllerExpandVolume", "expand "
	    "required_bytes 2097152 limit_bytes 0\n"));
	path_of(target, sizeof(target), false, "a1", VOL, usage());
	path_of(staging, sizeof(staging), true, NULL, VOL, NULL);
	snprintf(want, sizeof(want), "volume_path %s staging_target_path %s "
	    "required_bytes 2097152 limit_bytes 0\n", target, staging);
	ck_assert_msg(received_has("NodeExpandVolume", want), "%s", want);
	ck_assert_uint_eq(nreg(B(PUT_VOLUME)), puts + 1);
	ck_assert_str_eq(volume_events(from), "VolumeExpanded::"
	    PLUGIN ":volume " NS "/" VOL " expanded to 2097152 bytes ");
}
END_TEST

/* Neither service can expand: refused, nothing asked. */
START_TEST(test_expand_not_advertised)
{
	expand_setup();
	fx.ctl_fp.expand = fx.node_fp.expand = false;
	start(NULL, NULL);
	volmgr_expand(fx.vm, NS, VOL, 1048576, 0, done, (void *)0);
	ck_assert_int_eq(wait_job(0), VOLMGR_FAILED);
	ck_assert_msg(strstr(fx.why[0], "advertises EXPAND_VOLUME on "
	    "neither") != NULL, "%s", fx.why[0]);
	ck_assert(!received_has("ControllerExpandVolume", "expand"));
}
END_TEST

/* OFFLINE only: refused while claimed, saying so; expanded once not. */
START_TEST(test_expand_offline_refused_while_claimed)
{
	expand_setup();
	fx.ctl_fp.expansion = fx.node_fp.expansion =
	    CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__OFFLINE;
	start(NULL, NULL);
	mount_job(&alloc1, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	volmgr_expand(fx.vm, NS, VOL, 1048576, 0, done, (void *)1);
	ck_assert_int_eq(wait_job(1), VOLMGR_FAILED);
	ck_assert_msg(strstr(fx.why[1], "is claimed by alloc") != NULL &&
	    strstr(fx.why[1], "only offline") != NULL, "%s", fx.why[1]);
	ck_assert(!received_has("ControllerExpandVolume", "expand"));
	unmount_job("a1", &alloc1, 2);
	ck_assert_int_eq(wait_job(2), VOLMGR_OK);
	volmgr_expand(fx.vm, NS, VOL, 1048576, 0, done, (void *)3);
	ck_assert_msg(wait_job(3) == VOLMGR_OK, "%s", fx.why[3]);
	ck_assert(received_has("ControllerExpandVolume", "expand "
	    "required_bytes 1048576"));
	ck_assert(!received_has("NodeExpandVolume", "volume_path"));
}
END_TEST

/* ---- snapshots (volmgr_snapshot.c) ---- */

static void
snapshot_setup(void)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/received", fx.state);
	mkdirs(path);
	fx.ctl_fp.snapshots = fx.ctl_fp.list_snapshots = true;
}

/* Job i: a snapshot of VOL named name; its status. */
static enum volmgr_status
snap(const char *name, struct volmgr_snapshots *out, int i)
{
	fx.done[i] = 0;
	volmgr_snapshot_create(fx.vm, NS, VOL, name, out, done,
	    (void *)(intptr_t)i);
	return wait_job(i);
}

/*
 * Taken (an event, the plugin's answer kept), listed past the plugin's
 * first page (berth asks 100 at a time), deleted (an event); a plugin's
 * every snapshot listed without a volume.
 */
START_TEST(test_snapshot_create_list_delete)
{
	struct volmgr_snapshots out = { 0 };
	char name[32];
	uint64_t from;
	int i;

	snapshot_setup();
	start(NULL, NULL);
	from = events_last(fx.events);
	ck_assert_msg(snap("s000", &out, 0) == VOLMGR_OK, "%s", fx.why[0]);
	ck_assert_uint_eq(out.n, 1);
	ck_assert_str_eq(out.v[0].id, "s000");
	ck_assert_str_eq(out.v[0].source, VOL);
	ck_assert_str_eq(out.v[0].plugin, PLUGIN);
	ck_assert(out.v[0].ready && out.v[0].created_sec > 0);
	ck_assert_str_eq(volume_events(from), "SnapshotCreated::" PLUGIN
	    ":volume " NS "/" VOL " snapshot s000 created ");
	volmgr_snapshots_free(&out);
	for (i = 1; i <= 104; i++) {
		snprintf(name, sizeof(name), "s%03d", i);
		ck_assert_msg(snap(name, NULL, 1) == VOLMGR_OK, "%s",
		    fx.why[1]);
	}
	volmgr_snapshot_list(fx.vm, NS, VOL, NULL, &out, done, (void *)2);
	ck_assert_msg(wait_job(2) == VOLMGR_OK, "%s", fx.why[2]);
	ck_assert_uint_eq(out.n, 105);
	ck_assert_str_eq(out.v[0].id, "s000");
	ck_assert_str_eq(out.v[104].id, "s104");
	volmgr_snapshots_free(&out);

	from = events_last(fx.events);
	volmgr_snapshot_delete(fx.vm, NS, VOL, "s000", done, (void *)3);
	ck_assert_msg(wait_job(3) == VOLMGR_OK, "%s", fx.why[3]);
	ck_assert_str_eq(volume_events(from), "SnapshotDeleted::" PLUGIN
	    ":volume " NS "/" VOL " snapshot s000 deleted ");
	volmgr_snapshot_list(fx.vm, NULL, NULL, PLUGIN, &out, done,
	    (void *)4);
	ck_assert_msg(wait_job(4) == VOLMGR_OK, "%s", fx.why[4]);
	ck_assert_uint_eq(out.n, 104);
	ck_assert_str_eq(out.v[0].id, "s001");
	volmgr_snapshots_free(&out);
}
END_TEST

/* Without the capabilities: refused, naming them, and nothing asked. */
START_TEST(test_snapshot_not_advertised)
{
	struct volmgr_snapshots out = { 0 };
	struct volmgr_spec s = spec();
	uint64_t from;

	snapshot_setup();
	fx.ctl_fp.snapshots = fx.ctl_fp.list_snapshots = false;
	start(NULL, NULL);
	from = events_last(fx.events);
	ck_assert_int_eq(snap("s1", &out, 0), VOLMGR_FAILED);
	ck_assert_msg(strstr(fx.why[0], "does not advertise "
	    "CREATE_DELETE_SNAPSHOT") != NULL, "%s", fx.why[0]);
	ck_assert_uint_eq(out.n, 0);
	volmgr_snapshot_list(fx.vm, NS, VOL, NULL, &out, done, (void *)1);
	ck_assert_int_eq(wait_job(1), VOLMGR_FAILED);
	ck_assert_msg(strstr(fx.why[1], "does not advertise LIST_SNAPSHOTS")
	    != NULL, "%s", fx.why[1]);
	volmgr_snapshot_delete(fx.vm, NS, VOL, "s1", done, (void *)2);
	ck_assert_int_eq(wait_job(2), VOLMGR_FAILED);
	s.id = "vol2";
	s.snapshot_id = "s1";
	fx.registered = false;
	volmgr_create(fx.vm, &s, done, (void *)3);
	ck_assert_int_eq(wait_job(3), VOLMGR_FAILED);
	ck_assert_msg(strstr(fx.why[3], "CREATE_DELETE_SNAPSHOT") != NULL,
	    "%s", fx.why[3]);
	ck_assert(!fx.registered);
	ck_assert_str_eq(volume_events(from), "");
}
END_TEST

/* A volume from a snapshot: the plugin gets it as the content source,
 * the registry keeps which one, and the copy is what was taken. */
START_TEST(test_create_from_snapshot)
{
	struct volmgr_spec s = spec();
	char path[700], got[64];
	ssize_t n;
	int fd;

	snapshot_setup();
	start(NULL, NULL);
	snprintf(path, sizeof(path), "%s/volumes/%s/f", fx.state, VOL);
	harness_write(path, "taken\n");
	ck_assert_msg(snap("s1", NULL, 0) == VOLMGR_OK, "%s", fx.why[0]);
	harness_write(path, "later\n");
	s.id = s.external_id = "vol2";
	s.snapshot_id = "s1";
	volmgr_create(fx.vm, &s, done, (void *)1);
	ck_assert_msg(wait_job(1) == VOLMGR_OK, "%s", fx.why[1]);
	ck_assert_str_eq(fx.snapshot_id, "s1");
	snprintf(path, sizeof(path), "%s/volumes/vol2/f", fx.state);
	ck_assert_int_ge(fd = open(path, O_RDONLY | O_CLOEXEC), 0);
	n = read(fd, got, sizeof(got) - 1);
	close(fd);
	got[n > 0 ? n : 0] = '\0';
	ck_assert_str_eq(got, "taken\n");
	/* One the plugin does not have: its NOT_FOUND. */
	s.id = s.external_id = "vol3";
	s.snapshot_id = "nope";
	volmgr_create(fx.vm, &s, done, (void *)2);
	ck_assert_int_eq(wait_job(2), VOLMGR_FAILED);
	ck_assert_msg(strstr(fx.why[2], "no snapshot nope") != NULL, "%s",
	    fx.why[2]);
}
END_TEST

/* ---- after a node plugin restart (volmgr_recover.c) ---- */

/* A FUSE mount on path whose server is gone: every access to it
 * answers ENOTCONN, as a FUSE plugin's mount does once it died. */
static void
dead_fuse_on(const char *path)
{
	char opts[128];
	int fd;

	if ((fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0)
		ck_abort_msg("/dev/fuse: %s (this test needs FUSE)",
		    strerror(errno));
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,"
	    "group_id=0", fd);
	ck_assert_msg(mount("dead", path, "fuse", MS_NOSUID | MS_NODEV,
	    opts) == 0, "mount a FUSE at %s: %s", path, strerror(errno));
	close(fd);
}

/*
 * The alloc stops while the recovery's mount of it is in flight (its
 * staging directory's PrepareVolume held): the alloc's document goes
 * once its unmount job ends, so the recovery's mount ends after its
 * unit and binds nothing; only then does the unmount job run, and it
 * takes back what that mount did. The document here is the heap's, as
 * the alloc runner's: used after its free, ASan says so. Without the
 * wait, the held bind would be answered after the document was freed.
 */
START_TEST(test_alloc_stops_during_recovery_mount)
{
	struct alloc *a = malloc(sizeof(*a));
	char target[BERTH_PATH_BUF];
	struct fake_req *r;

	ck_assert_ptr_nonnull(a);
	*a = alloc1;
	start(NULL, NULL);
	mount_job(a, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	ck_assert_uint_eq(nmnt(B(BIND_VOLUME)), 1);
	path_of(target, sizeof(target), false, "a1", VOL, usage());
	dead_fuse_on(target);

	hold(B(PREPARE_VOLUME));
	hold(B(BIND_VOLUME));
	volmgr_plugin_up(fx.vm, PLUGIN);
	wait_held(fx.mnt, B(PREPARE_VOLUME), 1);
	ck_assert_uint_eq(nmnt(B(UNBIND_VOLUME)), 1);	/* the recovery's */
	unmount_job("a1", a, 1);
	settle(200);
	ck_assert_int_eq(fx.done[1], 0);	/* waits for the recovery */
	unhold();
	hold(B(BIND_VOLUME));
	mnt_answer(fx.mnt, fake_held(fx.mnt, B(PREPARE_VOLUME)));
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	free(a);
	unhold();
	while ((r = fake_held(fx.mnt, B(BIND_VOLUME))) != NULL)
		mnt_answer(fx.mnt, r);
	settle(300);
	ck_assert_uint_eq(nmnt(B(BIND_VOLUME)), 1);
	ck_assert(!published_now("a1"));
	ck_assert(!staged_now());
	ck_assert(!fx.claimed);
	ck_assert_ptr_null(strstr(volume_events(0), "VolumeRecoveryFailed"));
}
END_TEST

/* The alloc stops while a recovery unit takes its dead mount away
 * (its UnbindVolume held): the volume is not set up again. */
START_TEST(test_alloc_stops_during_recovery_unit)
{
	struct alloc *a = malloc(sizeof(*a));
	char target[BERTH_PATH_BUF];
	struct fake_req *r;

	ck_assert_ptr_nonnull(a);
	*a = alloc1;
	start(NULL, NULL);
	mount_job(a, 0);
	ck_assert_int_eq(wait_job(0), VOLMGR_OK);
	path_of(target, sizeof(target), false, "a1", VOL, usage());
	dead_fuse_on(target);

	hold(B(UNBIND_VOLUME));
	volmgr_plugin_up(fx.vm, PLUGIN);
	wait_held(fx.mnt, B(UNBIND_VOLUME), 1);
	unmount_job("a1", a, 1);
	wait_held(fx.mnt, B(UNBIND_VOLUME), 2);
	unhold();
	while ((r = fake_held(fx.mnt, B(UNBIND_VOLUME))) != NULL)
		mnt_answer(fx.mnt, r);
	ck_assert_int_eq(wait_job(1), VOLMGR_OK);
	free(a);
	settle(300);
	ck_assert_uint_eq(nmnt(B(PREPARE_VOLUME)), 2);	/* the first mount's */
	ck_assert_uint_eq(nmnt(B(BIND_VOLUME)), 1);
	ck_assert(!published_now("a1"));
	ck_assert(!staged_now());
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("volmgr");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_mount_then_unmount);
	tcase_add_test(tc, test_snapshot_create_list_delete);
	tcase_add_test(tc, test_snapshot_not_advertised);
	tcase_add_test(tc, test_create_from_snapshot);
	tcase_add_test(tc, test_mount_twice_is_idempotent);
	tcase_add_test(tc, test_shared_stage);
	tcase_add_test(tc, test_writer_and_reader_staged_once);
	tcase_add_test(tc, test_older_per_usage_path_kept_until_unstaged);
	tcase_add_test(tc, test_no_stage_then_plugin_refuses);
	tcase_add_test(tc, test_controller_publish_asked);
	tcase_add_test(tc, test_already_mounted_kept);
	tcase_add_test(tc, test_not_registered);
	tcase_add_test(tc, test_no_healthy_node_retries);
	tcase_add_test(tc, test_type_inferred);
	tcase_add_test(tc, test_registry_refuses_claim);
	tcase_add_test(tc, test_registry_never_answers);
	tcase_add_test(tc, test_registry_out_of_order);
	tcase_add_test(tc, test_one_volume_one_unit);
	tcase_add_test(tc, test_registry_closes);
	tcase_add_test(tc, test_mounter_refuses);
	tcase_add_test(tc, test_bind_conflict_and_error);
	tcase_add_test(tc, test_mounter_closes);
	tcase_add_test(tc, test_reply_after_free);
	tcase_add_test(tc, test_two_uses_one_claim);
	tcase_add_test(tc, test_unmount_lets_not_found_pass);
	tcase_add_test(tc, test_unmount_fails_then_retried);
	tcase_add_test(tc, test_controller_unpublish_asked);
	tcase_add_test(tc, test_mounter_late);
	tcase_add_test(tc, test_mounter_never);
	tcase_add_test(tc, test_plugin_late);
	tcase_add_test(tc, test_plugin_never);
	tcase_add_test(tc, test_plugin_dies);
	tcase_add_test(tc, test_records_read_back);
	tcase_add_test(tc, test_restart_takes_back);
	tcase_add_test(tc, test_records_unreadable);
	tcase_add_test(tc, test_each_alloc_once);
	tcase_add_test(tc, test_register_validated);
	tcase_add_test(tc, test_create_then_delete);
	tcase_add_test(tc, test_volume_operations_are_events);
	tcase_add_test(tc, test_create_needs_controller);
	tcase_add_test(tc, test_options_merged_and_context_passed);
	tcase_add_test(tc, test_volume_options_when_alloc_names_none);
	tcase_add_test(tc, test_secrets_reach_stage_and_publish);
	tcase_add_test(tc, test_missing_secret_fails_the_call);
	tcase_add_test(tc, test_mount_group_when_advertised);
	tcase_add_test(tc, test_request_mount_group_wins);
	tcase_add_test(tc, test_no_mount_group_unless_advertised);
	tcase_add_test(tc, test_stats_condition_and_events);
	tcase_add_test(tc, test_stats_slow_plugin_no_pile_up);
	tcase_add_test(tc, test_stats_not_advertised);
	tcase_add_test(tc, test_stats_of_a_volume_known_from_records);
	tcase_add_test(tc, test_csi15_mode_needs_the_node_capability);
	tcase_add_test(tc, test_topology_mismatch_refused);
	tcase_add_test(tc, test_max_volumes_waits);
	tcase_add_test(tc, test_create_passes_topology);
	tcase_add_test(tc, test_create_csi15_mode_refused);
	tcase_add_test(tc, test_expand_published);
	tcase_add_test(tc, test_expand_not_advertised);
	tcase_add_test(tc, test_expand_offline_refused_while_claimed);
	tcase_add_test(tc, test_alloc_stops_during_recovery_mount);
	tcase_add_test(tc, test_alloc_stops_during_recovery_unit);
	return harness_run("volmgr", tc);
}
