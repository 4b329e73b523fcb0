/*
 * test_alloc_runner.c: the alloc runner alone, through its allocs_deps:
 * a real alloc_dir (a temporary directory, watched with inotify), fakes
 * of the registry and the mounter on real channels (fake_peer.h), the
 * volume manager and the task driver as tables of fakes whose callbacks
 * the test fires, a real driver manager (never started). Every
 * transition of an allocation's life cycle (enum arun_state), the
 * recovery after a restart (adopted tasks, stale tasks, stale volumes,
 * stale plugin registrations), registry or mounter replies that fail,
 * come late, or never come, and what the API reads of an allocation
 * whose set-up waits or failed (its state, step, reason, next retry).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <check.h>

#include "alloc.h"
#include "alloc_runner.h"
#include "drivermgr.h"
#include "events.h"
#include "fake_driver.h"
#include "fake_peer.h"
#include "harness.h"
#include "mounter_client.h"
#include "registry_client.h"
#include "watch.h"

/* ---- the fake volume manager ---- */

struct vcall {
	bool mount;
	char alloc[64];
	bool with_doc;
	gid_t group;			/* a mount's: the alloc's gid */
	volmgr_cb cb;
	void *arg;
	bool answered;
};

static struct vcall vcalls[32];
static int nvcalls;
static bool vol_ready;
static const char *vol_holders[4];	/* allocs with mount records */

static void
vol_mount(void *ctx, const struct alloc *a, gid_t group, volmgr_cb cb,
    void *arg)
{
	struct vcall *v = &vcalls[nvcalls++];

	(void)ctx;
	ck_assert_int_lt(nvcalls, 32);
	memset(v, 0, sizeof(*v));
	v->mount = true;
	v->group = group;
	snprintf(v->alloc, sizeof(v->alloc), "%s", a->id);
	v->with_doc = true;
	v->cb = cb;
	v->arg = arg;
}

static void
vol_unmount(void *ctx, const char *alloc, const struct alloc *a,
    volmgr_cb cb, void *arg)
{
	struct vcall *v = &vcalls[nvcalls++];

	(void)ctx;
	ck_assert_int_lt(nvcalls, 32);
	memset(v, 0, sizeof(*v));
	snprintf(v->alloc, sizeof(v->alloc), "%s", alloc);
	v->with_doc = a != NULL;
	v->cb = cb;
	v->arg = arg;
}

static void
vol_each_alloc(void *ctx, void (*fn)(const char *alloc, void *arg),
    void *arg)
{
	(void)ctx;
	for (int i = 0; i < 4 && vol_holders[i] != NULL; i++)
		fn(vol_holders[i], arg);
}

static bool
vol_is_ready(void *ctx)
{
	(void)ctx;
	return vol_ready;
}

static bool
vol_uses_plugin(void *ctx, const char *plugin)
{
	(void)ctx;
	(void)plugin;
	return false;
}

static const struct allocs_volume_ops fake_volumes = {
	vol_mount, vol_unmount, vol_each_alloc, vol_is_ready, vol_uses_plugin,
};

/* The last call to the volume manager; it must be of this kind. */
static struct vcall *
last_vcall(bool mount, const char *alloc)
{
	struct vcall *v;

	ck_assert_int_gt(nvcalls, 0);
	v = &vcalls[nvcalls - 1];
	ck_assert_msg(v->mount == mount, "last volume call: %s, not %s",
	    v->mount ? "mount" : "unmount", mount ? "mount" : "unmount");
	ck_assert_str_eq(v->alloc, alloc);
	return v;
}

static void
vol_answer(struct vcall *v, enum volmgr_status st, const char *why)
{
	ck_assert(!v->answered);
	v->answered = true;
	v->cb(st, why, v->arg);
}

/* ---- the fixture ---- */

static struct event_base *base;
static struct fake_peer *reg_fp, *mnt_fp;
static struct chan *reg_chan, *mnt_chan;
static struct regclient *rc;
static struct mclient *mc;
static struct events *events;
static struct drivermgr *dm;
static struct watcher *watcher;
static struct allocs *am;
static char *dir, alloc_dir[512], data_dir[512];
static char failed_why[256];
static int nfailed;
static bool auto_prepare;
static char *blocked[] = { "privileged", NULL };	/* driver_block */

static struct plugsup *
no_plugsup(void *ctx, const struct plugsup_conf *conf,
    const struct plugsup_ops *ops, void *arg)
{
	(void)ctx;
	(void)conf;
	(void)ops;
	(void)arg;
	return NULL;
}

static void
on_fail(void *ctx, const char *why)
{
	(void)ctx;
	snprintf(failed_why, sizeof(failed_why), "%s", why);
	nfailed++;
}

/* The mounter makes task directories at once, when the test says so. */
static void
mounter_handler(struct fake_peer *fp, struct fake_req *req, void *arg)
{
	(void)arg;
	if (auto_prepare && req->env->body_case ==
	    BERTH__ENVELOPE__BODY_PREPARE_TASK)
		fake_reply_ack(fp, req);
}

/*
 * The registry hands out an alloc's task id at once (the same for every
 * alloc: the fake keeps no table) and takes it back; every other request
 * is held for the test.
 */
static void
registry_handler(struct fake_peer *fp, struct fake_req *req, void *arg)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__IdsReply ids = BERTH__IDS_REPLY__INIT;
	Berth__IndexReply ix = BERTH__INDEX_REPLY__INIT;

	(void)arg;
	if (req->env->body_case == BERTH__ENVELOPE__BODY_ALLOCATE_IDS) {
		ids.alloc = req->env->allocate_ids->alloc;
		ids.id = 70000;
		ids.index = 1;
		env.body_case = BERTH__ENVELOPE__BODY_IDS_REPLY;
		env.ids_reply = &ids;
		fake_reply(fp, req, &env, -1);
	} else if (req->env->body_case == BERTH__ENVELOPE__BODY_RELEASE_IDS) {
		ix.index = 2;
		env.body_case = BERTH__ENVELOPE__BODY_INDEX_REPLY;
		env.index_reply = &ix;
		fake_reply(fp, req, &env, -1);
	}
}

static const struct chan_ops no_ops = { NULL, NULL, NULL, NULL };
static struct allocs_deps deps;		/* setup()'s, for a test's own */

static void
setup(void)
{
	struct drivermgr_conf dc = { 0 };
	struct allocs_deps d;

	nprocs = nvcalls = nfailed = 0;
	failed_why[0] = '\0';
	vol_ready = true;
	memset(vol_holders, 0, sizeof(vol_holders));
	auto_prepare = true;
	ck_assert_ptr_nonnull(base = event_base_new());
	reg_fp = fake_peer_new(base, "berth-registry", NULL, &reg_chan,
	    &no_ops, NULL);
	mnt_fp = fake_peer_new(base, "berth-mounter", NULL, &mnt_chan,
	    &no_ops, NULL);
	fake_peer_handler(mnt_fp, mounter_handler, NULL);
	fake_peer_handler(reg_fp, registry_handler, NULL);
	ck_assert_ptr_nonnull(rc = regclient_new(base, reg_chan, 5000));
	ck_assert_ptr_nonnull(mc = mclient_new(mnt_chan, 0));
	ck_assert_ptr_nonnull(events = events_new());
	ck_assert_ptr_nonnull(watcher = watcher_new(base));
	dc.shim = "/nonexistent/berth-shim";
	dc.fingerprint_ms = 1000;
	dc.retry_initial_ms = 1000;
	dc.retry_max_ms = 1000;
	dc.block = blocked;
	ck_assert_ptr_nonnull(dm = drivermgr_new(base, &dc));
	dir = harness_tmpdir("allocs");
	snprintf(alloc_dir, sizeof(alloc_dir), "%s/allocs.d", dir);
	snprintf(data_dir, sizeof(data_dir), "%s/data", dir);
	ck_assert_int_eq(mkdir(alloc_dir, 0755), 0);
	ck_assert_int_eq(mkdir(data_dir, 0755), 0);
	deps = d = (struct allocs_deps){
		.base = base, .registry = rc, .mounter = mc,
		.watcher = watcher, .events = events, .drivers = dm,
		.volumes = &fake_volumes, .volumes_ctx = NULL,
		.driver = &fake_driver, .driver_ctx = NULL,
		.plugsup_new = no_plugsup, .plugsup_ctx = NULL,
		.alloc_dir = alloc_dir, .data_dir = data_dir,
		.resync_ms = 60000, .heartbeat_ms = 1000,
		.uid = getuid(), .gid = getgid(),
		.task_id_first = 70000, .task_id_count = 100,
		.fail = on_fail, .ctx = NULL,
	};
	ck_assert_ptr_nonnull(am = allocs_new(&d));
}

static void
teardown(void)
{
	/* Whatever is still in flight is answered now, not leaked. */
	fake_hangup(reg_fp, base, reg_chan);
	fake_hangup(mnt_fp, base, mnt_chan);
	allocs_free(am);
	drivermgr_free(dm);
	watcher_free(watcher);
	events_free(events);
	mclient_free(mc);
	regclient_free(rc);
	chan_free(mnt_chan);
	chan_free(reg_chan);
	fake_peer_free(mnt_fp);
	fake_peer_free(reg_fp);
	event_base_free(base);
	harness_rmtree(dir);
	free(dir);
}

/* ---- helpers ---- */

static void
run_for(int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

struct want_req {
	struct fake_peer *fp;
	Berth__Envelope__BodyCase body;
	unsigned n;
};

static bool
req_count_reached(void *arg)
{
	struct want_req *w = arg;

	return fake_count(w->fp, w->body) >= w->n;
}

static void
wait_requests(struct fake_peer *fp, Berth__Envelope__BodyCase body,
    unsigned n)
{
	struct want_req w = { fp, body, n };

	ck_assert_msg(fake_run_until(base, req_count_reached, &w, 3000),
	    "%u requests of body %d never came (%u did)", n, (int)body,
	    fake_count(fp, body));
}

static struct fake_req *
held(struct fake_peer *fp, Berth__Envelope__BodyCase body)
{
	struct fake_req *r = fake_held(fp, body);

	ck_assert_msg(r != NULL, "no request of body %d held", (int)body);
	return r;
}

/* The alloc's life-cycle state, or "gone". */
static const char *
state_of(const char *id)
{
	struct alloc_view v;

	return allocs_find(am, id, &v) ? v.state : "gone";
}

struct want_state {
	const char *id, *state;
};

static bool
state_reached(void *arg)
{
	struct want_state *w = arg;

	return strcmp(state_of(w->id), w->state) == 0;
}

static void
wait_state(const char *id, const char *state)
{
	struct want_state w = { id, state };

	ck_assert_msg(fake_run_until(base, state_reached, &w, 3000),
	    "alloc %s never %s (it is %s)", id, state, state_of(id));
}

static bool
nvcalls_reached(void *arg)
{
	return nvcalls >= *(int *)arg;
}

static void
wait_vcalls(int n)
{
	ck_assert_msg(fake_run_until(base, nvcalls_reached, &n, 3000),
	    "%d volume calls never came (%d did)", n, nvcalls);
}

static bool
proc_made(void *arg)
{
	const char *const *at = arg;

	return find_proc(at[0], at[1]) != NULL;
}

static struct taskproc *
wait_proc(const char *alloc, const char *task)
{
	const char *at[2] = { alloc, task };

	ck_assert_msg(fake_run_until(base, proc_made, at, 3000),
	    "task %s of %s never started", task, alloc);
	return find_proc(alloc, task);
}

static void
write_alloc(const char *id, bool volume, const char *extra)
{
	char path[1024], doc[2048];

	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", %s \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"%s}, \"kill_timeout\": \"200ms\"%s}]}", id,
	    volume ? "\"volumes\": {\"data\": {\"type\": \"csi\", "
	    "\"source\": \"v1\", \"access_mode\": \"single-node-writer\", "
	    "\"attachment_mode\": \"file-system\"}}," : "",
	    extra != NULL ? extra : "", volume ? ", \"volume_mounts\": "
	    "[{\"volume\": \"data\", \"destination\": \"data\"}]" : "");
	snprintf(path, sizeof(path), "%s/%s.json", alloc_dir, id);
	harness_write(path, doc);
}

/* An alloc of its own text, in alloc_dir. */
static void
write_text(const char *id, const char *doc)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s.json", alloc_dir, id);
	harness_write(path, doc);
}

/* Two tasks, t and u, each with its restart block. */
static void
write_two(const char *id, const char *t_restart, const char *u_restart)
{
	char doc[2048];

	snprintf(doc, sizeof(doc), "{\"id\": \"%s\", \"tasks\": ["
	    "{\"name\": \"t\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/true\"}, \"kill_timeout\": \"200ms\", "
	    "\"restart\": %s}, "
	    "{\"name\": \"u\", \"driver\": \"exec\", \"config\": {"
	    "\"command\": \"/bin/true\"}, \"kill_timeout\": \"200ms\", "
	    "\"restart\": %s}]}", id, t_restart, u_restart);
	write_text(id, doc);
}

/* The version of alloc_dir/<id>.json, as the scan writes it. */
static void
file_version(const char *id, char *buf, size_t n)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s.json", alloc_dir, id);
	ck_assert_int_eq(stat(path, &st), 0);
	snprintf(buf, n, "%lu-%lld-%lld.%09ld", (unsigned long)st.st_ino,
	    (long long)st.st_size, (long long)st.st_mtim.tv_sec,
	    st.st_mtim.tv_nsec);
}

static void
remove_alloc(const char *id)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s.json", alloc_dir, id);
	ck_assert_int_eq(unlink(path), 0);
}

/* A reattach handle of the registry, packed as it keeps them. */
static Berth__Handle *
make_handle(const char *alloc, const char *task, pid_t pid)
{
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;
	Berth__ReattachHandle *rh = calloc(1, sizeof(*rh));
	Berth__Handle *h = calloc(1, sizeof(*h));

	berth__reattach_handle__init(rh);
	berth__handle__init(h);
	th.pid = pid;
	th.start_time = 7;
	th.restarts = 2;
	rh->type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER;
	rh->name = "exec";
	rh->alloc = (char *)alloc;
	rh->task = (char *)task;
	rh->state.len = berth__task_handle__get_packed_size(&th);
	rh->state.data = malloc(rh->state.len);
	berth__task_handle__pack(&th, rh->state.data);
	h->handle_case = BERTH__HANDLE__HANDLE_REATTACH;
	h->reattach = rh;
	return h;
}

/* The handle of a task that ended for good, for this file version. */
static Berth__Handle *
make_end_handle(const char *alloc, const char *task, bool failed,
    const char *version)
{
	Berth__Handle *h = make_handle(alloc, task, 4321);
	Berth__TaskHandle th = BERTH__TASK_HANDLE__INIT;
	Berth__TaskEnd e = BERTH__TASK_END__INIT;
	Berth__ReattachHandle *rh = h->reattach;

	th.pid = 4321;
	th.restarts = 2;
	e.failed = failed;
	e.exited = true;
	e.code = failed ? 1 : 0;
	e.reason = failed ? "exited with status 1; 2 restarts within 30m "
	    "used up and the restart mode is \"fail\"" : "exited with "
	    "status 0; the restart policy allows no restarts";
	e.version = (char *)version;
	th.end = &e;
	free(rh->state.data);
	rh->state.len = berth__task_handle__get_packed_size(&th);
	rh->state.data = malloc(rh->state.len);
	berth__task_handle__pack(&th, rh->state.data);
	return h;
}

/* Start: the registry's task handles are read first. */
static void
start_with_handles(Berth__Handle **handles, size_t n)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__HandleList list = BERTH__HANDLE_LIST__INIT;

	allocs_start(am);
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_LIST_HANDLES, 1);
	list.handles = handles;
	list.n_handles = n;
	env.body_case = BERTH__ENVELOPE__BODY_HANDLE_LIST;
	env.handle_list = &list;
	fake_reply(reg_fp, held(reg_fp, BERTH__ENVELOPE__BODY_LIST_HANDLES),
	    &env, -1);
	/* Read: the plugin registrations are listed last. */
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_LIST_PLUGINS, 1);
	for (size_t i = 0; i < n; i++) {
		free(handles[i]->reattach->state.data);
		free(handles[i]->reattach);
		free(handles[i]);
	}
}

static void
cleanup_reply(struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__CleanupReply cr = BERTH__CLEANUP_REPLY__INIT;

	ck_assert_int_eq(req->env->body_case,
	    BERTH__ENVELOPE__BODY_CLEANUP_ALLOC);
	env.body_case = BERTH__ENVELOPE__BODY_CLEANUP_REPLY;
	env.cleanup_reply = &cr;
	fake_reply(mnt_fp, req, &env, -1);
}

/* What the alloc's task may be doing at a stop: it stops. */
static void
task_ends(const char *id)
{
	struct taskproc *tp = find_proc(id, "t");

	ck_assert_ptr_nonnull(tp);
	ck_assert_int_ge(tp->nsigs, 1);
	ck_assert_int_eq(tp->sigs[0], SIGTERM);
	proc_exits(tp, 0);
}

/* From stopping on: volumes back, the mounter's clean-up, gone. */
static void
stop_to_gone(const char *id, unsigned ncleanups)
{
	wait_state(id, "unmounting");
	vol_answer(last_vcall(false, id), VOLMGR_OK, "");
	ck_assert_str_eq(state_of(id), "cleaning");
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, ncleanups);
	cleanup_reply(held(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC));
	wait_state(id, "gone");
}

static bool
has_event(const char *type, const char *alloc)
{
	const struct berth_event *e;
	uint64_t seq = 0;

	while ((e = events_after(events, seq)) != NULL) {
		if (strcmp(e->type, type) == 0 && strcmp(e->alloc, alloc) == 0)
			return true;
		seq = e->index;
	}
	return false;
}

/* The message of the alloc's last event of this type, or NULL. */
static const char *
event_message(const char *type, const char *alloc)
{
	const struct berth_event *e;
	const char *m = NULL;
	uint64_t seq = 0;

	while ((e = events_after(events, seq)) != NULL) {
		if (strcmp(e->type, type) == 0 && strcmp(e->alloc, alloc) == 0)
			m = e->message;
		seq = e->index;
	}
	return m;
}

/* What the API reads of it: status, step and reason. */
static void
assert_view(const char *id, const char *status, const char *step,
    const char *reason)
{
	struct alloc_view v;

	ck_assert(allocs_find(am, id, &v));
	ck_assert_str_eq(v.status, status);
	if (step == NULL) {
		ck_assert_ptr_null(v.step);
		return;
	}
	ck_assert_str_eq(v.step, step);
	ck_assert_str_eq(v.reason, reason);
}

static bool
two_procs(void *arg)
{
	(void)arg;
	return nprocs == 2;
}

static bool
four_procs(void *arg)
{
	(void)arg;
	return nprocs == 4;
}

static bool
id_released(void *arg)
{
	(void)arg;
	return fake_count(reg_fp, BERTH__ENVELOPE__BODY_RELEASE_IDS) == 1;
}

/* ---- the tests ---- */

START_TEST(test_no_volumes_run_and_stop)
{
	char path[1024];

	write_alloc("a1", false, NULL);
	start_with_handles(NULL, 0);
	/* Once the registry has given it its task id. */
	wait_state("a1", "running");
	ck_assert_int_eq(fake_count(reg_fp, BERTH__ENVELOPE__BODY_ALLOCATE_IDS),
	    1);
	ck_assert(has_event("AllocStarted", "a1"));
	wait_proc("a1", "t")->started(find_proc("a1", "t"), 0, NULL,
	    find_proc("a1", "t")->arg);
	ck_assert_int_eq(nvcalls, 0);
	/* Files the task left go at the end; its volumes/ stays. */
	snprintf(path, sizeof(path), "%s/allocs", data_dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/allocs/a1", data_dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/allocs/a1/t", data_dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/allocs/a1/t/volumes", data_dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/allocs/a1/t/out.log", data_dir);
	harness_write(path, "hello");

	remove_alloc("a1");
	wait_state("a1", "stopping");
	task_ends("a1");
	ck_assert_int_eq(fake_count(reg_fp, BERTH__ENVELOPE__BODY_RELEASE_IDS),
	    0);
	stop_to_gone("a1", 1);
	ck_assert(has_event("AllocStopped", "a1"));
	/* Cleaned up: its task id goes back. */
	ck_assert(fake_run_until(base, id_released, NULL, 3000));
	ck_assert_int_ne(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/allocs/a1/t/volumes", data_dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_eq(nfailed, 0);
}
END_TEST

/* Every task exited 0 and none restarts: complete, kept until stopped. */
START_TEST(test_all_tasks_exit_zero_complete)
{
	struct alloc_view v;

	write_two("c1", "{\"attempts\": 0}", "{\"attempts\": 0}");
	start_with_handles(NULL, 0);
	wait_proc("c1", "t");
	wait_proc("c1", "u");
	proc_started(find_proc("c1", "t"), 0, NULL);
	proc_started(find_proc("c1", "u"), 0, NULL);
	assert_view("c1", "running", NULL, NULL);
	/* One complete: the other runs on, and so does the alloc. */
	proc_exits(find_proc("c1", "t"), 0);
	assert_view("c1", "running", NULL, NULL);
	ck_assert_str_eq(state_of("c1"), "running");
	ck_assert_int_eq(find_proc("c1", "u")->nsigs, 0);
	proc_exits(find_proc("c1", "u"), 0);
	assert_view("c1", "complete", NULL, NULL);
	ck_assert(allocs_find(am, "c1", &v));
	ck_assert_ptr_nonnull(strstr(v.reason, "every task exited with status "
	    "0 and none is restarted; last, task u: exited with status 0; "
	    "the restart policy allows no restarts"));
	ck_assert(!v.stopping);
	ck_assert_str_eq(event_message("AllocComplete", "c1"), v.reason);
	ck_assert(!has_event("AllocFailed", "c1"));
	/* Its volumes given back; its directory kept, until it stops. */
	wait_state("c1", "unmounting");
	vol_answer(last_vcall(false, "c1"), VOLMGR_OK, "");
	ck_assert_str_eq(state_of("c1"), "ended");
	run_for(300);
	ck_assert_int_eq(nprocs, 2);
	ck_assert_uint_eq(fake_count(mnt_fp,
	    BERTH__ENVELOPE__BODY_CLEANUP_ALLOC), 0);
	ck_assert_uint_eq(fake_count(reg_fp,
	    BERTH__ENVELOPE__BODY_DELETE_HANDLE), 0);
	remove_alloc("c1");
	wait_state("c1", "cleaning");
	/* Stopped: the ends kept for its tasks go. */
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_DELETE_HANDLE, 2);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	cleanup_reply(held(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC));
	wait_state("c1", "gone");
	ck_assert(has_event("AllocStopped", "c1"));
}
END_TEST

/* A task's policy gives up: its sibling is stopped, the alloc failed. */
START_TEST(test_failed_task_fails_the_alloc)
{
	struct alloc_view v;
	struct taskproc *u;

	write_two("f1", "{\"attempts\": 0}", "{\"delay\": \"1s\"}");
	start_with_handles(NULL, 0);
	wait_proc("f1", "t");
	u = wait_proc("f1", "u");
	proc_started(find_proc("f1", "t"), 0, NULL);
	proc_started(u, 0, NULL);
	proc_exits(find_proc("f1", "t"), 1);
	assert_view("f1", "failed", "restart", "task t: exited with status 1; "
	    "the restart policy allows no restarts");
	ck_assert_str_eq(event_message("AllocFailed", "f1"), "restart: task "
	    "t: exited with status 1; the restart policy allows no restarts");
	/* The sibling is stopped, not restarted. */
	ck_assert_str_eq(state_of("f1"), "stopping");
	ck_assert_int_eq(u->nsigs, 1);
	ck_assert_int_eq(u->sigs[0], SIGTERM);
	proc_exits(u, 143);
	wait_state("f1", "unmounting");
	vol_answer(last_vcall(false, "f1"), VOLMGR_OK, "");
	ck_assert_str_eq(state_of("f1"), "ended");
	assert_view("f1", "failed", "restart", "task t: exited with status 1; "
	    "the restart policy allows no restarts");
	ck_assert(allocs_find(am, "f1", &v));
	ck_assert(!v.stopping);
	ck_assert_str_eq(trun_state(v.tasks[0]), "failed");
	ck_assert_str_eq(trun_state(v.tasks[1]), "dead");
	run_for(1300);
	ck_assert_int_eq(nprocs, 2);
	/* A new version of its file starts anew, once this one is gone. */
	write_two("f1", "{\"attempts\": 1, \"delay\": \"0s\"}", "{}");
	wait_state("f1", "cleaning");
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	cleanup_reply(held(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC));
	wait_state("f1", "running");
	ck_assert(fake_run_until(base, four_procs, NULL, 3000));
	assert_view("f1", "pending", NULL, NULL);
}
END_TEST

/* Ended before the supervisor restarted: ended still; nothing starts. */
START_TEST(test_ended_alloc_stays_ended_after_a_restart)
{
	Berth__Handle *h[3];
	char version[96];

	write_two("e1", "{}", "{}");
	write_two("e2", "{}", "{}");
	file_version("e1", version, sizeof(version));
	h[0] = make_end_handle("e1", "t", true, version);
	/* e2's end is of another version of its file: it runs anew. */
	h[1] = make_end_handle("e2", "t", false, "1-2-3.000000004");
	h[2] = make_end_handle("e2", "u", false, "1-2-3.000000004");
	start_with_handles(h, 3);
	assert_view("e1", "failed", "restart", "task t: exited with status 1; "
	    "2 restarts within 30m used up and the restart mode is "
	    "\"fail\"");
	/* Its other task, never started, is not started now. */
	wait_state("e1", "unmounting");
	vol_answer(last_vcall(false, "e1"), VOLMGR_OK, "");
	ck_assert_str_eq(state_of("e1"), "ended");
	wait_proc("e2", "t");
	wait_proc("e2", "u");
	run_for(300);
	ck_assert_ptr_null(find_proc("e1", "t"));
	ck_assert_ptr_null(find_proc("e1", "u"));
	ck_assert_int_eq(nprocs, 2);
	ck_assert(!has_event("AllocStarted", "e1"));
	ck_assert(has_event("AllocStarted", "e2"));
}
END_TEST

START_TEST(test_mount_wait_then_running)
{
	write_alloc("v1", true, NULL);
	start_with_handles(NULL, 0);
	ck_assert_str_eq(state_of("v1"), "mounting");
	assert_view("v1", "pending", NULL, NULL);
	/* Mounted once its task id is held, for its group. */
	wait_vcalls(1);
	ck_assert_int_eq(last_vcall(true, "v1")->group, 70000);
	vol_answer(last_vcall(true, "v1"), VOLMGR_RETRY, "plugin not ready");
	ck_assert_str_eq(state_of("v1"), "mount-wait");
	ck_assert_int_eq(nprocs, 0);
	/* Pending, saying why and when it is tried again (about 1 s). */
	{
		struct alloc_view v;
		struct timespec now;
		int64_t ms;

		assert_view("v1", "pending", "volumes", "plugin not ready");
		ck_assert(allocs_find(am, "v1", &v));
		clock_gettime(CLOCK_REALTIME, &now);
		ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
		ck_assert_int_gt(v.next_retry_ms, ms + 500);
		ck_assert_int_le(v.next_retry_ms, ms + 1000);
	}
	ck_assert_str_eq(event_message("AllocPending", "v1"), "volumes: plugin "
	    "not ready; tried again in 1000 ms");
	/* 1 s later it mounts again. */
	run_for(600);
	ck_assert_int_eq(nvcalls, 1);
	wait_vcalls(2);
	ck_assert_str_eq(state_of("v1"), "mounting");
	vol_answer(last_vcall(true, "v1"), VOLMGR_OK, "");
	ck_assert_str_eq(state_of("v1"), "running");
	/* The cause gone, so is what it said; running once its task is. */
	assert_view("v1", "pending", NULL, NULL);
	wait_proc("v1", "t")->started(find_proc("v1", "t"), 0, NULL,
	    find_proc("v1", "t")->arg);
	assert_view("v1", "running", NULL, NULL);
	ck_assert_ptr_null(event_message("AllocFailed", "v1"));
}
END_TEST

START_TEST(test_mount_fails_undo_refused_until_changed)
{
	write_alloc("v2", true, NULL);
	start_with_handles(NULL, 0);
	wait_vcalls(1);
	vol_answer(last_vcall(true, "v2"), VOLMGR_FAILED, "claim: taken");
	ck_assert_str_eq(state_of("v2"), "undoing");
	assert_view("v2", "failed", "volumes", "claim: taken");
	ck_assert_str_eq(event_message("AllocFailed", "v2"),
	    "volumes: claim: taken");
	/* An undo that fails is tried again 1 s later. */
	vol_answer(last_vcall(false, "v2"), VOLMGR_RETRY, "unpublish: busy");
	ck_assert_str_eq(state_of("v2"), "undo-wait");
	wait_vcalls(3);
	ck_assert_str_eq(state_of("v2"), "undoing");
	vol_answer(last_vcall(false, "v2"), VOLMGR_OK, "");
	/* Its tasks never started: stopping ends at once. */
	ck_assert_str_eq(state_of("v2"), "unmounting");
	ck_assert_int_eq(nprocs, 0);
	vol_answer(last_vcall(false, "v2"), VOLMGR_OK, "");
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	cleanup_reply(held(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC));
	/* Cleaned up, it stays listed as failed, saying why, for good. */
	wait_state("v2", "failed");
	assert_view("v2", "failed", "volumes", "claim: taken");
	ck_assert_uint_eq(allocs_count(am), 1);
	ck_assert(has_event("AllocStopped", "v2"));
	/* This version is not tried again... */
	run_for(300);
	ck_assert_str_eq(state_of("v2"), "failed");
	{
		struct alloc_view v;

		ck_assert(allocs_find(am, "v2", &v));
		ck_assert_int_eq(v.next_retry_ms, 0);
		ck_assert_uint_eq(v.ntasks, 0);
		ck_assert_str_eq(v.file, "v2.json");
	}
	ck_assert_int_eq(nvcalls, 4);
	/* ... a new one is, and what failed before is forgotten. */
	write_alloc("v2", true, ", \"args\": [\"x\"]");
	wait_state("v2", "mounting");
	assert_view("v2", "pending", NULL, NULL);
	ck_assert_uint_eq(allocs_count(am), 1);
}
END_TEST

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Volumes that wait for a plugin instance that is not healthy wait no
 * longer than volume_wait: the last try comes at the bound, then the
 * alloc fails, naming the plugin and that it is unhealthy, and its tasks
 * never start.
 */
START_TEST(test_volume_wait_is_bounded)
{
	const char *sick = "plugin hp: its node instance (alloc p1) is "
	    "unhealthy: its heartbeat failed";
	char why[400];
	int64_t t0;
	int n;

	allocs_free(am);
	deps.volume_wait_ms = 2500;
	ck_assert_ptr_nonnull(am = allocs_new(&deps));
	write_alloc("w1", true, NULL);
	t0 = mono_ms();
	start_with_handles(NULL, 0);
	/* Tried at 0, 1 s and 2.5 s (not 3 s: the bound comes first; a
	 * timer a moment early makes one more try, at once). */
	for (n = 1; strcmp(state_of("w1"), "undoing") != 0; n++) {
		ck_assert_int_le(n, 4);
		wait_vcalls(n);
		ck_assert_str_eq(state_of("w1"), "mounting");
		vol_answer(last_vcall(true, "w1"), VOLMGR_RETRY, sick);
	}
	ck_assert_int_ge(n, 4);
	ck_assert_int_ge(mono_ms() - t0, 2400);
	ck_assert_int_lt(mono_ms() - t0, 3500);
	ck_assert_str_eq(state_of("w1"), "undoing");
	snprintf(why, sizeof(why), "waited 2500ms (volume_wait) and gave up: "
	    "%s", sick);
	assert_view("w1", "failed", "volumes", why);
	ck_assert_str_eq(event_message("AllocFailed", "w1"), "volumes: waited "
	    "2500ms (volume_wait) and gave up: plugin hp: its node instance "
	    "(alloc p1) is unhealthy: its heartbeat failed");
	vol_answer(last_vcall(false, "w1"), VOLMGR_OK, "");
	vol_answer(last_vcall(false, "w1"), VOLMGR_OK, "");
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	cleanup_reply(held(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC));
	wait_state("w1", "failed");
	assert_view("w1", "failed", "volumes", why);
	ck_assert_int_eq(nprocs, 0);
	ck_assert_int_eq(nvcalls, n + 1);
}
END_TEST

START_TEST(test_stop_while_mounting_waits_for_reply)
{
	write_alloc("v3", true, NULL);
	start_with_handles(NULL, 0);
	ck_assert_str_eq(state_of("v3"), "mounting");
	wait_vcalls(1);
	remove_alloc("v3");
	wait_state("v3", "stop-mounting");
	run_for(200);
	ck_assert_int_eq(nvcalls, 1);
	/* The late answer, even a good one, ends in a stop. */
	vol_answer(last_vcall(true, "v3"), VOLMGR_OK, "");
	ck_assert_int_eq(nprocs, 0);
	stop_to_gone("v3", 1);
}
END_TEST

START_TEST(test_stop_while_waiting)
{
	write_alloc("w1", true, NULL);
	write_alloc("w2", true, NULL);
	start_with_handles(NULL, 0);
	wait_vcalls(2);
	vol_answer(&vcalls[0], VOLMGR_RETRY, "not yet");
	vol_answer(&vcalls[1], VOLMGR_FAILED, "no such volume");
	vol_answer(last_vcall(false, vcalls[1].alloc), VOLMGR_FAILED,
	    "undo failed");
	ck_assert_str_eq(state_of(vcalls[0].alloc), "mount-wait");
	ck_assert_str_eq(state_of(vcalls[1].alloc), "undo-wait");
	remove_alloc("w1");
	remove_alloc("w2");
	/* Waiting, they stop at once; their timers are dropped. */
	wait_state("w1", "unmounting");
	wait_state("w2", "unmounting");
	ck_assert_int_eq(nvcalls, 5);
	run_for(1300);
	ck_assert_int_eq(nvcalls, 5);
}
END_TEST

START_TEST(test_unmount_retried_and_mounter_gone)
{
	write_alloc("u1", false, NULL);
	start_with_handles(NULL, 0);
	wait_proc("u1", "t")->started(find_proc("u1", "t"), 0, NULL,
	    find_proc("u1", "t")->arg);
	remove_alloc("u1");
	wait_state("u1", "stopping");
	task_ends("u1");
	ck_assert_str_eq(state_of("u1"), "unmounting");
	vol_answer(last_vcall(false, "u1"), VOLMGR_FAILED, "unstage: busy");
	ck_assert_str_eq(state_of("u1"), "unmount-wait");
	wait_vcalls(2);
	ck_assert_str_eq(state_of("u1"), "unmounting");
	vol_answer(last_vcall(false, "u1"), VOLMGR_OK, "");
	ck_assert_str_eq(state_of("u1"), "cleaning");
	/* The mounter never answers the clean-up, then dies: it ends. */
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	run_for(200);
	ck_assert_str_eq(state_of("u1"), "cleaning");
	fake_close(mnt_fp);
	wait_state("u1", "gone");
	ck_assert(has_event("AllocStopped", "u1"));
}
END_TEST

START_TEST(test_changed_file_restarts_it)
{
	write_alloc("c1", false, NULL);
	start_with_handles(NULL, 0);
	wait_proc("c1", "t")->started(find_proc("c1", "t"), 0, NULL,
	    find_proc("c1", "t")->arg);
	write_alloc("c1", false, ", \"args\": [\"again\"]");
	wait_state("c1", "stopping");
	task_ends("c1");
	wait_state("c1", "unmounting");
	vol_answer(last_vcall(false, "c1"), VOLMGR_OK, "");
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	cleanup_reply(held(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC));
	/* Its new version starts the moment the old one is gone. */
	wait_state("c1", "running");
	ck_assert(fake_run_until(base, two_procs, NULL, 3000));
}
END_TEST

START_TEST(test_recovery_adopts_and_stops_stale)
{
	Berth__Handle *hs[2];
	struct taskproc *mine, *stale;
	ProtobufCBinaryData *id;

	hs[0] = make_handle("r1", "t", 4242);
	hs[1] = make_handle("gone", "t", 4343);
	write_alloc("r1", true, NULL);
	start_with_handles(hs, 2);
	/* Its task is adopted before its volumes are checked. */
	mine = find_proc("r1", "t");
	ck_assert_ptr_nonnull(mine);
	ck_assert(mine->adopted);
	ck_assert_int_eq(mine->pid, 4242);
	ck_assert_str_eq(state_of("r1"), "mounting");
	mine->started(mine, 0, NULL, mine->arg);
	/* Adopted tasks run on what is in place: a failure leaves it. */
	wait_vcalls(1);
	vol_answer(last_vcall(true, "r1"), VOLMGR_FAILED, "stage: gone");
	ck_assert_str_eq(state_of("r1"), "running");
	ck_assert_int_eq(mine->nsigs, 0);
	/* The stale one: adopted, TERM, then KILL after the default. */
	stale = find_proc("gone", "t");
	ck_assert_ptr_nonnull(stale);
	ck_assert(stale->adopted);
	stale->started(stale, 0, NULL, stale->arg);
	ck_assert_int_eq(stale->nsigs, 1);
	ck_assert_int_eq(stale->sigs[0], SIGTERM);
	proc_exits(stale, 0);
	ck_assert(stale->freed);
	ck_assert(has_event("Terminated", "gone"));
	/* Its handle is forgotten and what it left is cleaned up. */
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_DELETE_HANDLE, 1);
	ck_assert_str_eq(held(reg_fp, BERTH__ENVELOPE__BODY_DELETE_HANDLE)->env->
	    delete_handle->handle->reattach->alloc, "gone");
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	id = &held(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC)->env->
	    cleanup_alloc->alloc_id;
	ck_assert_uint_eq(id->len, 4);
	ck_assert_int_eq(memcmp(id->data, "gone", 4), 0);
}
END_TEST

START_TEST(test_stale_task_that_ended_meanwhile)
{
	Berth__Handle *hs[1];
	struct taskproc *stale;

	hs[0] = make_handle("old", "t", 4444);
	start_with_handles(hs, 1);
	stale = find_proc("old", "t");
	ck_assert_ptr_nonnull(stale);
	stale->started(stale, ESRCH, "exited with status 0", stale->arg);
	ck_assert_int_eq(stale->nsigs, 0);
	ck_assert(has_event("Terminated", "old"));
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_DELETE_HANDLE, 1);
}
END_TEST

/* An ended task of an alloc gone meanwhile: forgotten, not adopted. */
START_TEST(test_stale_ended_task_is_forgotten)
{
	Berth__Handle *hs[1];

	hs[0] = make_end_handle("old", "t", true, "1-2-3.000000004");
	start_with_handles(hs, 1);
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_DELETE_HANDLE, 1);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	ck_assert_int_eq(nprocs, 0);
	ck_assert(!has_event("Terminated", "old"));
}
END_TEST

START_TEST(test_handles_unreadable_or_never_read)
{
	write_alloc("h1", false, NULL);
	allocs_start(am);
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_LIST_HANDLES, 1);
	/* Never answered: nothing starts (it could start a task twice). */
	run_for(300);
	ck_assert_uint_eq(allocs_count(am), 0);
	ck_assert_int_eq(nprocs, 0);
	ck_assert_int_eq(nfailed, 0);
	/* An error: the supervisor is told to stop. */
	fake_reply_error(reg_fp, held(reg_fp,
	    BERTH__ENVELOPE__BODY_LIST_HANDLES),
	    BERTH__ERROR_CODE__ERROR_INTERNAL, "disk I/O error");
	run_for(200);
	ck_assert_int_eq(nfailed, 1);
	ck_assert_ptr_nonnull(strstr(failed_why, "task handles"));
	ck_assert_uint_eq(allocs_count(am), 0);
	ck_assert_int_eq(nprocs, 0);
}
END_TEST

START_TEST(test_stale_registrations_and_volumes)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PluginList list = BERTH__PLUGIN_LIST__INIT;
	Berth__PluginInstance pi[2] = { BERTH__PLUGIN_INSTANCE__INIT,
		BERTH__PLUGIN_INSTANCE__INIT };
	Berth__PluginInstance *items[2] = { &pi[0], &pi[1] };
	struct fake_req *req;

	vol_holders[0] = "held";
	write_alloc("live", false, NULL);
	start_with_handles(NULL, 0);
	/* Volumes of an alloc not running are taken back, then cleaned. */
	vol_answer(last_vcall(false, "held"), VOLMGR_OK, "");
	ck_assert(!vcalls[0].with_doc);
	wait_requests(mnt_fp, BERTH__ENVELOPE__BODY_CLEANUP_ALLOC, 1);
	/* Registrations of allocs not running go; a running one's stay. */
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_LIST_PLUGINS, 1);
	pi[0].type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE;
	pi[0].name = "hp";
	pi[0].alloc = "old";
	pi[1].type = BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE;
	pi[1].name = "hp";
	pi[1].alloc = "live";
	list.instances = items;
	list.n_instances = 2;
	env.body_case = BERTH__ENVELOPE__BODY_PLUGIN_LIST;
	env.plugin_list = &list;
	fake_reply(reg_fp, held(reg_fp, BERTH__ENVELOPE__BODY_LIST_PLUGINS),
	    &env, -1);
	wait_requests(reg_fp, BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN, 1);
	run_for(100);
	ck_assert_uint_eq(fake_count(reg_fp,
	    BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN), 1);
	req = held(reg_fp, BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN);
	ck_assert_str_eq(req->env->deregister_plugin->key->alloc, "old");
}
END_TEST

START_TEST(test_stale_volumes_wait_for_the_volume_manager)
{
	vol_ready = false;
	vol_holders[0] = "held";
	start_with_handles(NULL, 0);
	run_for(250);
	ck_assert_int_eq(nvcalls, 0);
	vol_ready = true;
	wait_vcalls(1);
	last_vcall(false, "held");
	/* A failed take-back is left for the next resync. */
	vol_answer(&vcalls[0], VOLMGR_FAILED, "unpublish: busy");
	run_for(100);
	ck_assert_uint_eq(fake_count(mnt_fp,
	    BERTH__ENVELOPE__BODY_CLEANUP_ALLOC), 0);
}
END_TEST

START_TEST(test_api_submit_and_stop)
{
	static const char json[] = "{\"id\": \"api1\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}}]}";
	struct alloc_problems probs = { 0 };
	struct alloc *a;
	char why[256];

	start_with_handles(NULL, 0);
	ck_assert_int_eq(alloc_parse(json, strlen(json), &a, &probs), 0);
	alloc_problems_free(&probs);
	ck_assert_int_eq(allocs_submit(am, a, why, sizeof(why)), 0);
	wait_state("api1", "running");
	ck_assert_int_eq(allocs_stop(am, "nope", why, sizeof(why)), -ENOENT);
	ck_assert_int_eq(allocs_stop(am, "api1", why, sizeof(why)), 0);
	wait_state("api1", "stopping");
	alloc_free(a);
	/* One running from a file the API did not write is not its own. */
	write_alloc("x", false, NULL);
	{
		char from[1024], to[1024];

		snprintf(from, sizeof(from), "%s/x.json", alloc_dir);
		snprintf(to, sizeof(to), "%s/mine.json", alloc_dir);
		ck_assert_int_eq(rename(from, to), 0);
	}
	wait_state("x", "running");
	ck_assert_int_eq(allocs_stop(am, "x", why, sizeof(why)), -EEXIST);
}
END_TEST

START_TEST(test_runner_not_made_leaves_no_task_running)
{
	Berth__Handle *hs[1];
	struct taskproc *tp;
	char path[1024];

	/* A plugin task whose plugin supervisor cannot be made (here: no
	 * plugin supervisor at all): its file is refused, and the task it
	 * left running from before is stopped as stale, not forgotten. */
	snprintf(path, sizeof(path), "%s/p1.json", alloc_dir);
	harness_write(path, "{\"id\": \"p1\", \"tasks\": [{\"name\": \"t\", "
	    "\"driver\": \"exec\", \"config\": {\"command\": \"/bin/true\"}, "
	    "\"csi_plugin\": {\"id\": \"hp\", \"type\": \"node\"}}]}");
	hs[0] = make_handle("p1", "t", 4545);
	start_with_handles(hs, 1);
	ck_assert_str_eq(state_of("p1"), "failed");
	assert_view("p1", "failed", "plugin", "its plugin socket path is too "
	    "long");
	ck_assert(has_event("AllocFailed", "p1"));
	tp = find_proc("p1", "t");
	ck_assert_ptr_nonnull(tp);
	ck_assert(tp->adopted);
	tp->started(tp, 0, NULL, tp->arg);
	ck_assert_int_eq(tp->nsigs, 1);
	ck_assert_int_eq(tp->sigs[0], SIGTERM);
	/* Refused once: a rescan does not try this version again. */
	run_for(200);
	ck_assert_int_eq(nprocs, 1);
	/* Its file removed, it is gone. */
	remove_alloc("p1");
	wait_state("p1", "gone");
}
END_TEST

START_TEST(test_blocked_driver_refused_or_failed)
{
	static const char json[] = "{\"id\": \"b1\", \"tasks\": [{\"name\": "
	    "\"t\", \"driver\": \"privileged\", \"config\": {\"plugin\": "
	    "\"hp\"}, "
	    "\"csi_plugin\": {\"id\": \"hp\", \"type\": \"node\"}}]}";
	struct alloc_problems probs = { 0 };
	struct alloc *a;
	char why[256], path[1024];

	start_with_handles(NULL, 0);
	ck_assert_int_eq(alloc_parse(json, strlen(json), &a, &probs), 0);
	alloc_problems_free(&probs);
	/* Through the API: refused at once, nothing written. */
	ck_assert_int_eq(allocs_submit(am, a, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "task t uses driver privileged, which "
	    "driver_allow or driver_block in the config does not allow");
	alloc_free(a);
	snprintf(path, sizeof(path), "%s/b1.json", alloc_dir);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* A file written by hand: listed as failed, for good, with an
	 * event; nothing started. */
	harness_write(path, json);
	wait_state("b1", "failed");
	assert_view("b1", "failed", "driver", why);
	ck_assert_str_eq(event_message("AllocFailed", "b1"), "driver: task t "
	    "uses driver privileged, which driver_allow or driver_block in "
	    "the config does not allow");
	{
		struct alloc_view v;

		ck_assert(allocs_get(am, 0, &v));
		ck_assert_str_eq(v.doc->id, "b1");
		ck_assert(!allocs_get(am, 1, &v));
	}
	run_for(200);
	ck_assert_int_eq(nprocs, 0);
	ck_assert_int_eq(nvcalls, 0);
	/* Said once per version. */
	{
		const struct berth_event *e;
		uint64_t seq = 0;
		int n = 0;

		while ((e = events_after(events, seq)) != NULL) {
			n += strcmp(e->type, "AllocFailed") == 0;
			seq = e->index;
		}
		ck_assert_int_eq(n, 1);
	}
	/* Stopped through the API: gone. */
	ck_assert_int_eq(allocs_stop(am, "b1", why, sizeof(why)), 0);
	wait_state("b1", "gone");
	ck_assert_uint_eq(allocs_count(am), 0);
}
END_TEST

START_TEST(test_two_plugin_tasks_listed_failed)
{
	struct alloc_view v;
	char path[1024];

	snprintf(path, sizeof(path), "%s/two.json", alloc_dir);
	harness_write(path, "{\"id\": \"two\", \"tasks\": [{\"name\": "
	    "\"a\", \"driver\": \"exec\", \"config\": {\"command\": "
	    "\"/bin/true\"}, \"csi_plugin\": {\"id\": \"p1\", \"type\": "
	    "\"node\"}}, {\"name\": \"b\", \"driver\": \"exec\", "
	    "\"config\": {\"command\": \"/bin/true\"}, \"csi_plugin\": "
	    "{\"id\": \"p2\", \"type\": \"node\"}}]}");
	start_with_handles(NULL, 0);
	wait_state("two", "failed");
	ck_assert(allocs_find(am, "two", &v));
	ck_assert_str_eq(v.status, "failed");
	ck_assert_str_eq(v.step, "plugin");
	ck_assert_ptr_nonnull(strstr(v.reason, "an alloc may run one plugin "
	    "task"));
	ck_assert(has_event("AllocFailed", "two"));
	ck_assert_int_eq(nprocs, 0);
}
END_TEST

START_TEST(test_task_not_started_is_pending_at_its_driver)
{
	struct taskproc *tp;
	struct alloc_view v;
	struct timespec now;
	int64_t ms;

	write_text("d1", "{\"id\": \"d1\", \"tasks\": [{\"name\": \"t\", "
	    "\"driver\": \"exec\", \"config\": {\"command\": \"/bin/true\"}, "
	    "\"restart\": {\"delay\": \"1s\"}}]}");
	start_with_handles(NULL, 0);
	tp = wait_proc("d1", "t");
	/* The driver cannot start it: pending, saying why and when (its
	 * restart policy's delay). */
	tp->started(tp, -EIO, "the shim is missing", tp->arg);
	assert_view("d1", "pending", "driver", "the shim is missing");
	ck_assert(allocs_find(am, "d1", &v));
	clock_gettime(CLOCK_REALTIME, &now);
	ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	ck_assert_int_gt(v.next_retry_ms, ms + 500);
	ck_assert_int_le(v.next_retry_ms, ms + 1000);
	ck_assert(has_event("DriverFailure", "d1"));
	/* Started at the next try: running, nothing said any more. */
	ck_assert(fake_run_until(base, two_procs, NULL, 3000));
	tp = find_proc("d1", "t");
	tp->started(tp, 0, NULL, tp->arg);
	assert_view("d1", "running", NULL, NULL);
	ck_assert(allocs_find(am, "d1", &v));
	ck_assert_int_eq(v.next_retry_ms, 0);
}
END_TEST

START_TEST(test_stop_while_undoing_or_mount_fails_late)
{
	write_alloc("s1", true, NULL);
	write_alloc("s2", true, NULL);
	start_with_handles(NULL, 0);
	wait_vcalls(2);
	/* s1: its mount fails and is being undone when its file goes. */
	vol_answer(strcmp(vcalls[0].alloc, "s1") == 0 ? &vcalls[0] :
	    &vcalls[1], VOLMGR_FAILED, "publish: refused");
	ck_assert_str_eq(state_of("s1"), "undoing");
	remove_alloc("s1");
	/* s2: its mount is in flight when its file goes. */
	remove_alloc("s2");
	wait_state("s2", "stop-mounting");
	/* The undo's answer stops s1: nothing waits on the file. */
	ck_assert_str_eq(state_of("s1"), "undoing");
	vol_answer(last_vcall(false, "s1"), VOLMGR_OK, "");
	ck_assert_str_eq(state_of("s1"), "unmounting");
	/* A late failure of s2's mount stops it all the same. */
	vol_answer(strcmp(vcalls[0].alloc, "s2") == 0 ? &vcalls[0] :
	    &vcalls[1], VOLMGR_FAILED, "stage: timed out");
	ck_assert_str_eq(state_of("s2"), "unmounting");
	ck_assert_int_eq(nprocs, 0);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("alloc_runner");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_no_volumes_run_and_stop);
	tcase_add_test(tc, test_mount_wait_then_running);
	tcase_add_test(tc, test_mount_fails_undo_refused_until_changed);
	tcase_add_test(tc, test_volume_wait_is_bounded);
	tcase_add_test(tc, test_stop_while_mounting_waits_for_reply);
	tcase_add_test(tc, test_stop_while_waiting);
	tcase_add_test(tc, test_stop_while_undoing_or_mount_fails_late);
	tcase_add_test(tc, test_blocked_driver_refused_or_failed);
	tcase_add_test(tc, test_task_not_started_is_pending_at_its_driver);
	tcase_add_test(tc, test_two_plugin_tasks_listed_failed);
	tcase_add_test(tc, test_unmount_retried_and_mounter_gone);
	tcase_add_test(tc, test_changed_file_restarts_it);
	tcase_add_test(tc, test_all_tasks_exit_zero_complete);
	tcase_add_test(tc, test_failed_task_fails_the_alloc);
	tcase_add_test(tc, test_ended_alloc_stays_ended_after_a_restart);
	tcase_add_test(tc, test_recovery_adopts_and_stops_stale);
	tcase_add_test(tc, test_stale_task_that_ended_meanwhile);
	tcase_add_test(tc, test_stale_ended_task_is_forgotten);
	tcase_add_test(tc, test_handles_unreadable_or_never_read);
	tcase_add_test(tc, test_stale_registrations_and_volumes);
	tcase_add_test(tc, test_stale_volumes_wait_for_the_volume_manager);
	tcase_add_test(tc, test_api_submit_and_stop);
	tcase_add_test(tc, test_runner_not_made_leaves_no_task_running);
	return harness_run("alloc_runner", tc);
}
