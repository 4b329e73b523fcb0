/*
 * volmgr.c: the volume manager; volmgr.h says what it does and in what
 * order. Each unit of work (one volume of one alloc, mounted or taken
 * back; one bind; one operator request) is a small state machine that
 * makes one asynchronous call at a time (registry, mounter, or the plugin
 * over CSI) and moves on in that call's callback. Units of one alloc run
 * one after another; units on one volume never overlap.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "alloc_runner.h"
#include "csi_client.h"
#include "csimanager.h"
#include "ident.h"
#include "layout.h"
#include "log.h"
#include "supervisor.h"
#include "volmgr.h"

#define CSI_DEADLINE_MS 10000
#define CTX_MAX 64

static const struct csi_retry csi_retry_volume = { 0, 200, 2000, 20000 };

struct kvs {
	size_t n;
	char *key[CTX_MAX], *value[CTX_MAX];
};

/* One alloc's use of one volume (a publish), as its record says. */
struct vpub {
	TAILQ_ENTRY(vpub) entry;
	char *alloc, *ns, *vol, *name, *plugin, *usage;
	bool staged, published;
	/* Filled in by a unit that runs on it. */
	char type[16];
	char *external_id;
	struct kvs vctx, pctx;
	Berth__AccessMode access;
	Berth__AttachmentMode attachment;
	bool read_only;
	const struct alloc_volume *req;	/* NULL for one known from records */
};
TAILQ_HEAD(vpub_list, vpub);

enum unit_kind { U_MOUNT, U_UNMOUNT, U_BIND, U_UNBIND, U_REGISTER,
	U_CREATE, U_DELETE };

struct job;

struct unit {
	TAILQ_ENTRY(unit) entry;	/* vm->units: waiting or running */
	struct job *job;
	enum unit_kind kind;
	char ns[BERTH_IDENT_MAX + 1], vol[BERTH_IDENT_MAX + 1];
	struct vpub *pub;
	const struct alloc_volume *req;	/* U_MOUNT: the alloc's request */
	struct vcall *call;		/* the call in flight, if any */
	int step;
	bool running, mounted;		/* mounted: PrepareVolume's answer */
	/* U_BIND / U_UNBIND */
	const char *task, *dest;
	bool ro;
	/* operator units */
	struct volmgr_spec spec;
	char *created_id;
	struct kvs created_ctx;
};

struct job {
	struct volmgr *vm;
	char *alloc;
	const struct alloc *doc;
	bool mount;
	size_t next;			/* the next unit to make */
	enum volmgr_status status;
	char why[1200];
	volmgr_cb cb;
	void *arg;
	struct unit *single;		/* an operator's one unit */
	struct timespec started;
	double rpc_ms;			/* waiting for the plugin */
	int rpcs;
	TAILQ_ENTRY(job) entry;
};

struct volmgr {
	struct supervisor *sv;
	bool ready, dying;
	int inflight;
	struct vpub_list pubs;
	TAILQ_HEAD(, unit) units;
	TAILQ_HEAD(, job) waiting;	/* until the records are read */
};

static void unit_step(struct unit *u);
static void job_next(struct job *j);

/* ---- small things ---- */

static char *
xstrdup(const char *s)
{
	char *d = strdup(s != NULL ? s : "");

	if (d == NULL)
		fatal("volmgr");
	return d;
}

static void
kvs_clear(struct kvs *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->key[i]);
		free(k->value[i]);
	}
	k->n = 0;
}

static void
kvs_add(struct kvs *k, const char *key, const char *value)
{
	if (k->n == CTX_MAX)
		return;
	k->key[k->n] = xstrdup(key);
	k->value[k->n++] = xstrdup(value);
}

/* Map entries all share one layout: { base, key, value }. */
struct kv_entry {
	ProtobufCMessage base;
	char *key, *value;
};

static void **
kv_entries(const struct kvs *k, const ProtobufCMessageDescriptor *d,
    struct kv_entry *store)
{
	static void *ptrs[4][CTX_MAX];
	static int next;
	void **p = ptrs[next++ % 4];

	for (size_t i = 0; i < k->n; i++) {
		protobuf_c_message_init(d, &store[i]);
		store[i].key = k->key[i];
		store[i].value = k->value[i];
		p[i] = &store[i];
	}
	return p;
}

static Csi__V1__VolumeCapability__AccessMode__Mode
csi_mode(Berth__AccessMode m)
{
	switch (m) {
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY;
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER;
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_READER_ONLY:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_SINGLE_WRITER:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_SINGLE_WRITER;
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
	default:
		return CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__UNKNOWN;
	}
}

/* A capability on the caller's stack: cap, with mnt/blk/mode beside it. */
struct capbuf {
	Csi__V1__VolumeCapability cap;
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__BlockVolume blk;
	Csi__V1__VolumeCapability__AccessMode mode;
};

static Csi__V1__VolumeCapability *
capability(struct capbuf *b, Berth__AccessMode access,
    Berth__AttachmentMode attachment, const char *fs_type,
    char *const *flags, size_t nflags)
{
	csi__v1__volume_capability__init(&b->cap);
	csi__v1__volume_capability__mount_volume__init(&b->mnt);
	csi__v1__volume_capability__block_volume__init(&b->blk);
	csi__v1__volume_capability__access_mode__init(&b->mode);
	b->mode.mode = csi_mode(access);
	b->cap.access_mode = &b->mode;
	if (attachment == BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE) {
		b->cap.access_type_case =
		    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
		b->cap.block = &b->blk;
	} else {
		b->cap.access_type_case =
		    CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
		b->cap.mount = &b->mnt;
		b->mnt.fs_type = (char *)(fs_type != NULL ? fs_type : "");
		b->mnt.n_mount_flags = nflags;
		b->mnt.mount_flags = (char **)flags;
	}
	return &b->cap;
}

static Csi__V1__VolumeCapability *
pub_capability(struct capbuf *b, const struct vpub *p)
{
	return capability(b, p->access, p->attachment, p->req != NULL ?
	    p->req->fs_type : NULL, p->req != NULL ? p->req->mount_flags :
	    NULL, p->req != NULL ? p->req->nflags : 0);
}

/* Say why the unit's job failed: step and reason; keeps the first. */
static void
unit_fail(struct unit *u, enum volmgr_status st, const char *fmt, ...)
    BERTH_PRINTF(3, 4);

static void
unit_fail(struct unit *u, enum volmgr_status st, const char *fmt, ...)
{
	struct job *j = u->job;
	va_list ap;

	if (j->status == VOLMGR_OK) {
		va_start(ap, fmt);
		vsnprintf(j->why, sizeof(j->why), fmt, ap);
		va_end(ap);
		j->status = st;
	} else if (st == VOLMGR_FAILED)
		j->status = st;
}

/* ---- pubs and who uses what ---- */

static struct vpub *
pub_find(struct volmgr *vm, const char *alloc, const char *ns,
    const char *vol, const char *usage)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (strcmp(p->alloc, alloc) == 0 && strcmp(p->ns, ns) == 0 &&
		    strcmp(p->vol, vol) == 0 && strcmp(p->usage, usage) == 0)
			return p;
	return NULL;
}

static struct vpub *
pub_new(struct volmgr *vm, const char *alloc, const char *ns,
    const char *vol, const char *name, const char *plugin, const char *usage)
{
	struct vpub *p = calloc(1, sizeof(*p));

	if (p == NULL)
		fatal("pub_new");
	p->alloc = xstrdup(alloc);
	p->ns = xstrdup(ns);
	p->vol = xstrdup(vol);
	p->name = xstrdup(name);
	p->plugin = xstrdup(plugin);
	p->usage = xstrdup(usage);
	TAILQ_INSERT_TAIL(&vm->pubs, p, entry);
	return p;
}

static void
pub_free(struct volmgr *vm, struct vpub *p)
{
	TAILQ_REMOVE(&vm->pubs, p, entry);
	free(p->alloc);
	free(p->ns);
	free(p->vol);
	free(p->name);
	free(p->plugin);
	free(p->usage);
	free(p->external_id);
	kvs_clear(&p->vctx);
	kvs_clear(&p->pctx);
	free(p);
}

/* Others still using the staging path (same plugin, volume, usage). */
static bool
stage_shared(struct volmgr *vm, const struct vpub *me)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (p != me && p->staged && strcmp(p->plugin, me->plugin) ==
		    0 && strcmp(p->ns, me->ns) == 0 && strcmp(p->vol,
		    me->vol) == 0 && strcmp(p->usage, me->usage) == 0)
			return true;
	return false;
}

/* Others using the volume at all: by any alloc (node), or this alloc. */
static bool
volume_shared(struct volmgr *vm, const struct vpub *me, bool same_alloc)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (p != me && strcmp(p->ns, me->ns) == 0 && strcmp(p->vol,
		    me->vol) == 0 && (!same_alloc || strcmp(p->alloc,
		    me->alloc) == 0))
			return true;
	return false;
}

/* ---- calls: each has a ticket, so that a freed unit drops its reply ---- */

struct vcall {
	struct volmgr *vm;
	struct unit *u;		/* NULL once the unit is gone */
	struct timespec sent;
};

static double
ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1e3 + (now.tv_nsec - t->tv_nsec) /
	    1e6;
}

static struct vcall *
call_new(struct unit *u)
{
	struct vcall *c = calloc(1, sizeof(*c));

	if (c == NULL)
		fatal("call_new");
	c->vm = u->job->vm;
	c->u = u;
	clock_gettime(CLOCK_MONOTONIC, &c->sent);
	u->call = c;
	c->vm->inflight++;
	return c;
}

/* The unit the reply is for, or NULL when it is gone (and maybe the
 * manager with it). */
static struct unit *
call_end(struct vcall *c)
{
	struct volmgr *vm = c->vm;
	struct unit *u = c->u;

	free(c);
	vm->inflight--;
	if (vm->dying) {
		if (vm->inflight == 0)
			free(vm);
		return NULL;
	}
	if (u != NULL)
		u->call = NULL;
	return u;
}

/* The mounter's answer to a unit's request: the unit's next step. */
static void
mounter_answered(struct unit *u, const struct priv_result *res)
{
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		/* Already in place (a bind after a restart), or already
		 * gone (an unbind): neither is a failure. */
		if ((u->kind == U_BIND && res->code ==
		    BERTH__ERROR_CODE__ERROR_CONFLICT) || u->kind == U_UNBIND) {
			if (u->kind == U_UNBIND)
				log_debug("volmgr: unbind %s/%s: %s", u->task,
				    u->dest, res->message);
			unit_step(u);
			return;
		}
		unit_fail(u, res->code == BERTH__ERROR_CODE__ERROR_CLOSED ||
		    res->code == BERTH__ERROR_CODE__ERROR_TIMEOUT ?
		    VOLMGR_RETRY : VOLMGR_FAILED, "berth-mounter: %s: %s",
		    ipc_error_name(res->code), res->message);
		u->step = -1;
	}
	unit_step(u);
}

static void
on_mounter(const struct priv_result *res, void *arg)
{
	struct unit *u = call_end(arg);

	if (u != NULL)
		mounter_answered(u, res);
}

static void
on_volume_prepared(const struct priv_result *res, bool mounted, void *arg)
{
	struct unit *u = call_end(arg);

	if (u == NULL)
		return;
	/* Kept for the step that asked. */
	if (res->code == BERTH__ERROR_CODE__ERROR_NONE)
		u->mounted = mounted;
	mounter_answered(u, res);
}

/* r: a priv_*() call's return, made with mounter_ticket(u). */
static void
mounter_sent(struct unit *u, int r)
{
	if (r < 0) {
		call_end(u->call);
		unit_fail(u, VOLMGR_RETRY, "%s", MCLIENT_UNREACHABLE);
		u->step = -1;
		unit_step(u);
	}
}

static struct vcall *
mounter_ticket(struct unit *u)
{
	return call_new(u);
}

static struct mclient *
mounter_of(struct unit *u)
{
	return u->job->vm->sv->mounter.mclient;
}

/*
 * The registry's answer, kept for the step that asked. A step reads
 * reg_reply->volume_reply only after regclient_get_volume(): the channel
 * fails any other body (common/ipc_reply.c) before on_registry() runs.
 */
static const Berth__Envelope *reg_reply;

static void
on_registry(const struct regclient_result *res, void *arg)
{
	struct unit *u = call_end(arg);

	if (u == NULL)
		return;
	reg_reply = NULL;
	if (res->code == BERTH__ERROR_CODE__ERROR_NONE)
		reg_reply = res->reply;
	else if (!(u->kind == U_UNMOUNT && res->code ==
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND)) {
		unit_fail(u, res->code == BERTH__ERROR_CODE__ERROR_CLOSED ||
		    res->code == BERTH__ERROR_CODE__ERROR_TIMEOUT ?
		    VOLMGR_RETRY : VOLMGR_FAILED, "berth-registry: %s: %s",
		    ipc_error_name(res->code), res->message);
		u->step = -1;
	}
	unit_step(u);
	reg_reply = NULL;
}

/* r: a regclient_*() call's return, made with reg_ticket(u). */
static void
reg_sent(struct unit *u, int r)
{
	if (r < 0) {
		call_end(u->call);
		unit_fail(u, VOLMGR_RETRY, "cannot reach berth-registry");
		u->step = -1;
		unit_step(u);
	}
}

static struct vcall *
reg_ticket(struct unit *u)
{
	return call_new(u);
}

/* The plugin's answer, kept for the step that asked. */
static ProtobufCMessage *csi_reply;

static void
on_csi(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	double ms = ms_since(&((struct vcall *)arg)->sent);
	struct unit *u = call_end(arg);

	if (u == NULL) {
		if (reply != NULL)
			protobuf_c_message_free_unpacked(reply, NULL);
		return;
	}
	u->job->rpc_ms += ms;
	u->job->rpcs++;
	csi_reply = reply;
	if (res->code != CSI_OK && !(u->kind == U_UNMOUNT && res->code ==
	    CSI_NOT_FOUND)) {
		/* A plugin that died under the call (its connection closed,
		 * CANCELLED here) comes back: that may pass too. */
		unit_fail(u, res->code == CSI_UNAVAILABLE || res->code ==
		    CSI_DEADLINE_EXCEEDED || res->code == CSI_ABORTED ||
		    res->code == CSI_RESOURCE_EXHAUSTED || (res->code ==
		    CSI_CANCELLED && res->origin == CSI_FROM_CLIENT) ?
		    VOLMGR_RETRY : VOLMGR_FAILED, "%s", res->message);
		u->step = -1;
	}
	unit_step(u);
	if (csi_reply != NULL)
		protobuf_c_message_free_unpacked(csi_reply, NULL);
	csi_reply = NULL;
}

static void
csi_send(struct unit *u, struct csi_inst *in, enum csi_method m,
    const ProtobufCMessage *req)
{
	csi_call(csi_inst_conn(in), m, req, CSI_DEADLINE_MS,
	    csi_method_idempotent(m) ? &csi_retry_volume : NULL, on_csi,
	    call_new(u));
}

/* ---- the plugin's instances ---- */

static struct csi_inst *
healthy(struct volmgr *vm, Berth__PluginType type, const char *plugin)
{
	struct csi_inst *in = csimgr_find(vm->sv->csimgr, type, plugin);
	const struct csi_fingerprint *fp;

	if (in == NULL || csi_inst_conn(in) == NULL)
		return NULL;
	fp = csi_inst_fingerprint(in);
	return fp->done && fp->healthy ? in : NULL;
}

static struct csi_inst *
node_of(struct unit *u)
{
	struct csi_inst *in = healthy(u->job->vm,
	    BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE, u->pub->plugin);

	if (in == NULL) {
		unit_fail(u, VOLMGR_RETRY, "plugin %s: no healthy node "
		    "instance yet", u->pub->plugin);
		u->step = -1;
	}
	return in;
}

static struct csi_inst *
controller_of(struct volmgr *vm, const char *plugin)
{
	return healthy(vm, BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER,
	    plugin);
}

/*
 * The <type> of the node plugin's mount root, csi/<type>/<plugin>/: the
 * type its node task declared (a monolith's root is
 * csi/monolith/<plugin>), never that of a controller task (the alloc
 * runner allows one plugin task per alloc today; the lookup does not
 * lean on that). When the alloc is not running (after a restart, before
 * it is read back) the type is inferred from the registry's instances:
 * there is always an answer, so an unmount is never held back for want
 * of one, and mount_type() cannot fail.
 */
static void
mount_type(struct unit *u, struct csi_inst *node)
{
	struct volmgr *vm = u->job->vm;
	struct csi_inst *ctl = csimgr_find(vm->sv->csimgr,
	    BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER, u->pub->plugin);
	const char *t = allocs_node_plugin_type(vm->sv->allocs,
	    csi_inst_alloc(node), u->pub->plugin);

	if (t == NULL)
		t = ctl != NULL && strcmp(csi_inst_alloc(ctl),
		    csi_inst_alloc(node)) == 0 ? "monolith" : "node";
	snprintf(u->pub->type, sizeof(u->pub->type), "%s", t);
}

/* The pub's staging path, or its publish target: absolute, for CSI. */
static void
csi_path(struct unit *u, bool staging, char *buf, size_t n)
{
	char rel[1024];
	struct vpub *p = u->pub;

	if ((staging ? layout_staging(rel, sizeof(rel), p->type, p->plugin,
	    p->ns, p->vol, p->usage) : layout_publish(rel, sizeof(rel),
	    p->type, p->plugin, p->alloc, p->vol, p->usage)) < 0 ||
	    layout_abs(buf, n, u->job->vm->sv->cfg.data_dir, rel) < 0)
		buf[0] = '\0';
}

/* ---- registry records ---- */

static void
put_record(struct unit *u)
{
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;
	struct vpub *p = u->pub;

	mh.plugin = p->plugin;
	mh.namespace_ = p->ns;
	mh.volume = p->vol;
	mh.alloc = p->alloc;
	mh.task = p->name;
	mh.usage = p->usage;
	mh.staged = p->staged;
	mh.published = p->published;
	h.handle_case = BERTH__HANDLE__HANDLE_MOUNT;
	h.mount = &mh;
	reg_sent(u, regclient_put_handle(u->job->vm->sv->registry.client, &h,
	    on_registry, reg_ticket(u)));
}

static void
take_volume(struct vpub *p, const Berth__Volume *v)
{
	free(p->external_id);
	p->external_id = xstrdup(v->external_id != NULL &&
	    v->external_id[0] != '\0' ? v->external_id : v->id);
	kvs_clear(&p->vctx);
	for (size_t i = 0; i < v->n_context; i++)
		kvs_add(&p->vctx, v->context[i]->key, v->context[i]->value);
}

/* ---- mounting one volume of an alloc ---- */

enum { M_GET, M_RECORD, M_CLAIM, M_CPUBLISH, M_PREP_STAGE, M_STAGE,
	M_STAGED, M_PREP_PUBLISH, M_PUBLISH, M_PUBLISHED, M_DONE };

/* The volume's place under its plugin, as the mounter's verbs name it. */
static struct priv_volume
priv_volume_of(const struct vpub *p)
{
	return (struct priv_volume){ .plugin_type = p->type,
	    .plugin_id = p->plugin, .volume_ns = p->ns, .alloc_id = p->alloc,
	    .volume_id = p->vol, .read_only = p->read_only,
	    .attachment = p->attachment, .access = p->access };
}

static void
prepare_volume(struct unit *u, bool staging)
{
	struct priv_volume v = priv_volume_of(u->pub);

	u->mounted = false;
	mounter_sent(u, priv_prepare_volume(mounter_of(u), staging ?
	    BERTH__VOLUME_DIR__VOLUME_DIR_STAGING :
	    BERTH__VOLUME_DIR__VOLUME_DIR_PUBLISH, &v, on_volume_prepared,
	    mounter_ticket(u)));
}

static void
mount_step(struct unit *u)
{
	struct volmgr *vm = u->job->vm;
	struct vpub *p = u->pub;
	struct regclient *rc = vm->sv->registry.client;
	struct csi_inst *node, *ctl;
	const struct csi_fingerprint *fp;
	struct capbuf cb;
	struct kv_entry e1[CTX_MAX], e2[CTX_MAX];
	char stage[BERTH_PATH_BUF], target[BERTH_PATH_BUF];

	switch (u->step++) {
	case M_GET:
		reg_sent(u, regclient_get_volume(rc, u->ns, u->vol,
		    on_registry, reg_ticket(u)));
		return;
	case M_RECORD: {
		const Berth__Volume *v = reg_reply->volume_reply->volume;

		if (v == NULL) {
			unit_fail(u, VOLMGR_FAILED, "volume %s/%s: not "
			    "registered", u->ns, u->vol);
			break;
		}
		if (p == NULL) {
			char usage[160];
			const struct alloc_volume *r = u->req;

			layout_usage(usage, sizeof(usage), r->read_only,
			    alloc_attachment_mode_name(r->attachment_mode),
			    alloc_access_mode_name(r->access_mode));
			if ((p = pub_find(vm, u->job->alloc, u->ns, u->vol,
			    usage)) == NULL)
				p = pub_new(vm, u->job->alloc, u->ns, u->vol,
				    r->name, v->plugin_id, usage);
			u->pub = p;
			p->req = r;
			p->access = r->access_mode;
			p->attachment = r->attachment_mode;
			p->read_only = r->read_only;
		}
		take_volume(p, v);
		if ((node = node_of(u)) == NULL)
			break;
		mount_type(u, node);
		put_record(u);
		return;
	}
	case M_CLAIM: {
		Berth__Claim c = BERTH__CLAIM__INIT;

		c.namespace_ = p->ns;
		c.volume = p->vol;
		c.alloc = p->alloc;
		c.mode = p->read_only ? BERTH__CLAIM_MODE__CLAIM_MODE_READ :
		    BERTH__CLAIM_MODE__CLAIM_MODE_WRITE;
		c.access_mode = p->access;
		c.attachment_mode = p->attachment;
		reg_sent(u, regclient_claim(rc, &c, on_registry, reg_ticket(u)));
		return;
	}
	case M_CPUBLISH: {
		Csi__V1__ControllerPublishVolumeRequest req =
		    CSI__V1__CONTROLLER_PUBLISH_VOLUME_REQUEST__INIT;

		if ((node = node_of(u)) == NULL)
			break;
		ctl = controller_of(vm, p->plugin);
		if (ctl == NULL || !csi_inst_fingerprint(ctl)->publish_unpublish) {
			unit_step(u);
			return;
		}
		req.volume_id = p->external_id;
		req.node_id = (char *)csi_inst_fingerprint(node)->node_id;
		req.volume_capability = pub_capability(&cb, p);
		req.readonly = p->read_only;
		req.n_volume_context = p->vctx.n;
		req.volume_context = (void *)kv_entries(&p->vctx,
		    &csi__v1__controller_publish_volume_request__volume_context_entry__descriptor,
		    e1);
		csi_send(u, ctl, CSI_CONTROLLER_PUBLISH_VOLUME, &req.base);
		return;
	}
	case M_PREP_STAGE:
		if (csi_reply != NULL) {
			const Csi__V1__ControllerPublishVolumeResponse *r =
			    (const void *)csi_reply;

			kvs_clear(&p->pctx);
			for (size_t i = 0; i < r->n_publish_context; i++)
				kvs_add(&p->pctx, r->publish_context[i]->key,
				    r->publish_context[i]->value);
		}
		if ((node = node_of(u)) == NULL)
			break;
		if (!csi_inst_fingerprint(node)->stage_unstage) {
			u->step = M_PREP_PUBLISH;
			unit_step(u);
			return;
		}
		prepare_volume(u, true);
		return;
	case M_STAGE: {
		Csi__V1__NodeStageVolumeRequest req =
		    CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;

		/* Mounted already: staged before (by another alloc, or
		 * before a restart). Never a second stage. */
		if (u->mounted) {
			log_info("volmgr: alloc %s: volume %s/%s already staged "
			    "(%s); kept", p->alloc, p->ns, p->vol, p->usage);
			p->staged = true;
			u->step = M_PREP_PUBLISH;
			unit_step(u);
			return;
		}
		if ((node = node_of(u)) == NULL)
			break;
		csi_path(u, true, stage, sizeof(stage));
		req.volume_id = p->external_id;
		req.staging_target_path = stage;
		req.volume_capability = pub_capability(&cb, p);
		req.n_publish_context = p->pctx.n;
		req.publish_context = (void *)kv_entries(&p->pctx,
		    &csi__v1__node_stage_volume_request__publish_context_entry__descriptor,
		    e1);
		req.n_volume_context = p->vctx.n;
		req.volume_context = (void *)kv_entries(&p->vctx,
		    &csi__v1__node_stage_volume_request__volume_context_entry__descriptor,
		    e2);
		csi_send(u, node, CSI_NODE_STAGE_VOLUME, &req.base);
		return;
	}
	case M_STAGED:
		log_info("volmgr: alloc %s: volume %s/%s staged (%s)", p->alloc,
		    p->ns, p->vol, p->usage);
		p->staged = true;
		put_record(u);
		return;
	case M_PREP_PUBLISH:
		prepare_volume(u, false);
		return;
	case M_PUBLISH: {
		Csi__V1__NodePublishVolumeRequest req =
		    CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;

		if (u->mounted) {
			log_info("volmgr: alloc %s: volume %s/%s already "
			    "published; kept", p->alloc, p->ns, p->vol);
			p->published = true;
			u->step = M_DONE;
			put_record(u);
			return;
		}
		if ((node = node_of(u)) == NULL)
			break;
		fp = csi_inst_fingerprint(node);
		if (fp->stage_unstage)
			csi_path(u, true, stage, sizeof(stage));
		csi_path(u, false, target, sizeof(target));
		req.volume_id = p->external_id;
		req.staging_target_path = fp->stage_unstage ? stage : "";
		req.target_path = target;
		req.volume_capability = pub_capability(&cb, p);
		req.readonly = p->read_only;
		req.n_publish_context = p->pctx.n;
		req.publish_context = (void *)kv_entries(&p->pctx,
		    &csi__v1__node_publish_volume_request__publish_context_entry__descriptor,
		    e1);
		req.n_volume_context = p->vctx.n;
		req.volume_context = (void *)kv_entries(&p->vctx,
		    &csi__v1__node_publish_volume_request__volume_context_entry__descriptor,
		    e2);
		csi_send(u, node, CSI_NODE_PUBLISH_VOLUME, &req.base);
		return;
	}
	case M_PUBLISHED:
		log_info("volmgr: alloc %s: volume %s/%s published", p->alloc,
		    p->ns, p->vol);
		p->published = true;
		put_record(u);
		return;
	default:
		break;
	}
	u->step = -1;
	unit_step(u);
}

/* ---- taking one volume of an alloc back ---- */

enum { D_GET, D_NODE, D_UNPUBLISH, D_UNSTAGE, D_CUNPUBLISH, D_RELEASE,
	D_FORGET, D_DONE };

static void
unmount_step(struct unit *u)
{
	struct volmgr *vm = u->job->vm;
	struct vpub *p = u->pub;
	struct regclient *rc = vm->sv->registry.client;
	struct csi_inst *node, *ctl;
	char path[BERTH_PATH_BUF];

	switch (u->step++) {
	case D_GET:
		/* Known from records only: the provider's id is needed. */
		if (p->external_id == NULL) {
			reg_sent(u, regclient_get_volume(rc, p->ns, p->vol,
			    on_registry, reg_ticket(u)));
			return;
		}
		unit_step(u);
		return;
	case D_NODE:
		if (p->external_id == NULL) {
			if (reg_reply != NULL &&
			    reg_reply->volume_reply->volume != NULL)
				take_volume(p, reg_reply->volume_reply->volume);
			else
				p->external_id = xstrdup(p->vol);
		}
		if ((node = node_of(u)) == NULL)
			break;
		mount_type(u, node);
		unit_step(u);
		return;
	case D_UNPUBLISH: {
		Csi__V1__NodeUnpublishVolumeRequest req =
		    CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;

		/* Always: a crash may have come between the plugin's
		 * publish and our record of it; unpublish is idempotent. */
		if ((node = node_of(u)) == NULL)
			break;
		csi_path(u, false, path, sizeof(path));
		req.volume_id = p->external_id;
		req.target_path = path;
		csi_send(u, node, CSI_NODE_UNPUBLISH_VOLUME, &req.base);
		return;
	}
	case D_UNSTAGE: {
		Csi__V1__NodeUnstageVolumeRequest req =
		    CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;

		p->published = false;
		if ((node = node_of(u)) == NULL)
			break;
		/* The last user of the staging path unstages it. */
		if (!csi_inst_fingerprint(node)->stage_unstage ||
		    stage_shared(vm, p)) {
			unit_step(u);
			return;
		}
		csi_path(u, true, path, sizeof(path));
		req.volume_id = p->external_id;
		req.staging_target_path = path;
		csi_send(u, node, CSI_NODE_UNSTAGE_VOLUME, &req.base);
		return;
	}
	case D_CUNPUBLISH: {
		Csi__V1__ControllerUnpublishVolumeRequest req =
		    CSI__V1__CONTROLLER_UNPUBLISH_VOLUME_REQUEST__INIT;

		p->staged = false;
		ctl = controller_of(vm, p->plugin);
		if ((node = node_of(u)) == NULL)
			break;
		if (ctl == NULL ||
		    !csi_inst_fingerprint(ctl)->publish_unpublish ||
		    volume_shared(vm, p, false)) {
			unit_step(u);
			return;
		}
		req.volume_id = p->external_id;
		req.node_id = (char *)csi_inst_fingerprint(node)->node_id;
		csi_send(u, ctl, CSI_CONTROLLER_UNPUBLISH_VOLUME, &req.base);
		return;
	}
	case D_RELEASE:
		if (volume_shared(vm, p, true)) {
			unit_step(u);
			return;
		}
		reg_sent(u, regclient_release(rc, p->ns, p->vol, p->alloc,
		    on_registry, reg_ticket(u)));
		return;
	case D_FORGET: {
		Berth__Handle h = BERTH__HANDLE__INIT;
		Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;

		mh.plugin = p->plugin;
		mh.namespace_ = p->ns;
		mh.volume = p->vol;
		mh.alloc = p->alloc;
		mh.task = p->name;
		mh.usage = p->usage;
		h.handle_case = BERTH__HANDLE__HANDLE_MOUNT;
		h.mount = &mh;
		reg_sent(u, regclient_delete_handle(rc, &h, on_registry,
		    reg_ticket(u)));
		return;
	}
	case D_DONE:
		log_info("volmgr: alloc %s: volume %s/%s taken back", p->alloc,
		    p->ns, p->vol);
		pub_free(vm, p);
		u->pub = NULL;
		break;
	default:
		break;
	}
	u->step = -1;
	unit_step(u);
}

/* ---- binds ---- */

static void
bind_step(struct unit *u)
{
	struct priv_volume v;
	struct vpub *p = u->pub;

	if (u->step++ > 0) {
		u->step = -1;
		unit_step(u);
		return;
	}
	if (u->kind == U_UNBIND) {
		mounter_sent(u, priv_unbind_volume(mounter_of(u),
		    u->job->alloc, u->task, u->dest, on_mounter,
		    mounter_ticket(u)));
		return;
	}
	v = priv_volume_of(p);
	mounter_sent(u, priv_bind_volume(mounter_of(u), &v, u->task, u->dest,
	    u->ro || p->read_only, on_mounter, mounter_ticket(u)));
}

/* ---- the operator's volumes ---- */

enum { O_FIRST, O_SECOND, O_THIRD, O_FOURTH, O_DONE };

static void
put_volume(struct unit *u, const char *external_id, const struct kvs *ctx)
{
	Berth__Volume v = BERTH__VOLUME__INIT;
	Berth__VolumeCapability vc = BERTH__VOLUME_CAPABILITY__INIT, *vcs[1];
	Berth__KeyValue kv[CTX_MAX], *kvp[CTX_MAX];
	const struct volmgr_spec *s = &u->spec;

	v.namespace_ = (char *)s->ns;
	v.id = (char *)s->id;
	v.plugin_id = (char *)s->plugin;
	v.external_id = (char *)external_id;
	vc.access_mode = s->access;
	vc.attachment_mode = s->attachment;
	vcs[0] = &vc;
	v.n_capabilities = 1;
	v.capabilities = vcs;
	for (size_t i = 0; ctx != NULL && i < ctx->n; i++) {
		berth__key_value__init(&kv[i]);
		kv[i].key = ctx->key[i];
		kv[i].value = ctx->value[i];
		kvp[i] = &kv[i];
	}
	v.n_context = ctx != NULL ? ctx->n : 0;
	v.context = kvp;
	reg_sent(u, regclient_put_volume(u->job->vm->sv->registry.client, &v,
	    on_registry, reg_ticket(u)));
}

static struct csi_inst *
operator_controller(struct unit *u, bool need_create)
{
	struct csi_inst *ctl = controller_of(u->job->vm, u->spec.plugin);

	if (ctl == NULL && need_create)
		unit_fail(u, VOLMGR_FAILED, "plugin %s has no healthy "
		    "controller instance", u->spec.plugin);
	else if (ctl != NULL && need_create &&
	    !csi_inst_fingerprint(ctl)->create_delete) {
		unit_fail(u, VOLMGR_FAILED, "plugin %s's controller does not "
		    "advertise CREATE_DELETE_VOLUME", u->spec.plugin);
		ctl = NULL;
	}
	return ctl;
}

static void
register_step(struct unit *u)
{
	const struct volmgr_spec *s = &u->spec;
	Csi__V1__ValidateVolumeCapabilitiesRequest req =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_REQUEST__INIT;
	Csi__V1__VolumeCapability *caps[1];
	struct csi_inst *ctl;
	struct capbuf cb;
	char why[512];

	switch (u->step++) {
	case O_FIRST:
		/* Without a controller service, nothing to ask. */
		if ((ctl = controller_of(u->job->vm, s->plugin)) == NULL) {
			u->step = O_THIRD;
			unit_step(u);
			return;
		}
		caps[0] = capability(&cb, s->access, s->attachment,
		    s->fs_type, s->flags, s->nflags);
		req.volume_id = (char *)s->external_id;
		req.n_volume_capabilities = 1;
		req.volume_capabilities = caps;
		csi_send(u, ctl, CSI_VALIDATE_VOLUME_CAPABILITIES, &req.base);
		return;
	case O_SECOND:
		caps[0] = capability(&cb, s->access, s->attachment,
		    s->fs_type, s->flags, s->nflags);
		req.volume_id = (char *)s->external_id;
		req.n_volume_capabilities = 1;
		req.volume_capabilities = caps;
		if (csi_validation_check(&req, (const void *)csi_reply, why,
		    sizeof(why)) == CSI_VALIDATION_MISMATCH) {
			unit_fail(u, VOLMGR_FAILED, "ValidateVolumeCapabilities: "
			    "%s", why);
			break;
		}
		unit_step(u);
		return;
	case O_THIRD:
		put_volume(u, s->external_id, NULL);
		return;
	default:
		break;
	}
	u->step = -1;
	unit_step(u);
}

static void
create_step(struct unit *u)
{
	const struct volmgr_spec *s = &u->spec;
	Csi__V1__CreateVolumeRequest req = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__CapacityRange range = CSI__V1__CAPACITY_RANGE__INIT;
	Csi__V1__VolumeCapability *caps[1];
	struct kv_entry e[CTX_MAX];
	struct kvs params = { 0 };
	struct csi_inst *ctl;
	struct capbuf cb;

	switch (u->step++) {
	case O_FIRST:
		if ((ctl = operator_controller(u, true)) == NULL)
			break;
		caps[0] = capability(&cb, s->access, s->attachment,
		    s->fs_type, s->flags, s->nflags);
		req.name = (char *)s->id;
		req.n_volume_capabilities = 1;
		req.volume_capabilities = caps;
		if (s->capacity_min > 0) {
			range.required_bytes = s->capacity_min;
			req.capacity_range = &range;
		}
		for (size_t i = 0; i < s->nparams; i++)
			kvs_add(&params, s->params[i].key, s->params[i].value);
		req.n_parameters = params.n;
		req.parameters = (void *)kv_entries(&params,
		    &csi__v1__create_volume_request__parameters_entry__descriptor,
		    e);
		csi_send(u, ctl, CSI_CREATE_VOLUME, &req.base);
		kvs_clear(&params);
		return;
	case O_SECOND: {
		const Csi__V1__CreateVolumeResponse *r = (const void *)csi_reply;

		if (r == NULL || r->volume == NULL || r->volume->volume_id ==
		    NULL || r->volume->volume_id[0] == '\0') {
			unit_fail(u, VOLMGR_FAILED, "CreateVolume: the plugin "
			    "answered no volume id");
			break;
		}
		u->created_id = xstrdup(r->volume->volume_id);
		for (size_t i = 0; i < r->volume->n_volume_context; i++)
			kvs_add(&u->created_ctx,
			    r->volume->volume_context[i]->key,
			    r->volume->volume_context[i]->value);
		put_volume(u, u->created_id, &u->created_ctx);
		return;
	}
	default:
		break;
	}
	u->step = -1;
	unit_step(u);
}

static void
delete_step(struct unit *u)
{
	Csi__V1__DeleteVolumeRequest req = CSI__V1__DELETE_VOLUME_REQUEST__INIT;
	struct regclient *rc = u->job->vm->sv->registry.client;
	const Berth__VolumeReply *vr;
	struct csi_inst *ctl;

	switch (u->step++) {
	case O_FIRST:
		reg_sent(u, regclient_get_volume(rc, u->ns, u->vol,
		    on_registry, reg_ticket(u)));
		return;
	case O_SECOND:
		vr = reg_reply->volume_reply;
		if (vr->volume == NULL) {
			unit_fail(u, VOLMGR_FAILED, "volume %s/%s: not "
			    "registered", u->ns, u->vol);
			break;
		}
		if (vr->n_claims > 0) {
			unit_fail(u, VOLMGR_FAILED, "volume %s/%s is claimed "
			    "by alloc %s%s", u->ns, u->vol,
			    vr->claims[0]->alloc, vr->n_claims > 1 ?
			    " and others" : "");
			break;
		}
		ctl = controller_of(u->job->vm, vr->volume->plugin_id);
		if (ctl == NULL || !csi_inst_fingerprint(ctl)->create_delete) {
			unit_step(u);
			return;
		}
		req.volume_id = vr->volume->external_id != NULL &&
		    vr->volume->external_id[0] != '\0' ?
		    vr->volume->external_id : vr->volume->id;
		csi_send(u, ctl, CSI_DELETE_VOLUME, &req.base);
		return;
	case O_THIRD:
		reg_sent(u, regclient_delete_volume(rc, u->ns, u->vol,
		    on_registry, reg_ticket(u)));
		return;
	default:
		break;
	}
	u->step = -1;
	unit_step(u);
}

/* ---- units and jobs ---- */

static bool
key_busy(struct volmgr *vm, const struct unit *me)
{
	struct unit *u;

	if (me->ns[0] == '\0')
		return false;
	TAILQ_FOREACH(u, &vm->units, entry)
		if (u != me && u->running && strcmp(u->ns, me->ns) == 0 &&
		    strcmp(u->vol, me->vol) == 0)
			return true;
	return false;
}

/* Start every waiting unit whose volume is free, in order. */
static void
pump(struct volmgr *vm)
{
	struct unit *u;

again:
	TAILQ_FOREACH(u, &vm->units, entry)
		if (!u->running && !key_busy(vm, u)) {
			u->running = true;
			unit_step(u);
			goto again;
		}
}

static void
unit_free(struct unit *u)
{
	if (u->call != NULL)
		u->call->u = NULL;
	free(u->created_id);
	kvs_clear(&u->created_ctx);
	if (u->spec.ns != NULL) {
		free((char *)u->spec.ns);
		free((char *)u->spec.id);
		free((char *)u->spec.plugin);
		free((char *)u->spec.external_id);
		free((char *)u->spec.fs_type);
		for (size_t i = 0; i < u->spec.nflags; i++)
			free(u->spec.flags[i]);
		for (size_t i = 0; i < u->spec.nparams; i++) {
			free((char *)u->spec.params[i].key);
			free((char *)u->spec.params[i].value);
		}
		free((char **)u->spec.flags);
		free((struct volmgr_param *)u->spec.params);
	}
	free(u);
}

static void
job_finish(struct job *j)
{
	struct volmgr *vm = j->vm;

	if (j->mount && j->status == VOLMGR_OK && j->doc != NULL)
		log_info("volmgr: alloc %s: %zu volume%s in place in %.1f ms, "
		    "%.1f ms of it in %d plugin RPC%s", j->alloc,
		    j->doc->nvolumes, j->doc->nvolumes == 1 ? "" : "s",
		    ms_since(&j->started), j->rpc_ms, j->rpcs, j->rpcs == 1 ?
		    "" : "s");
	if (j->cb != NULL)
		j->cb(j->status, j->status == VOLMGR_OK ? "" : j->why, j->arg);
	free(j->alloc);
	free(j);
	(void)vm;
}

static void
unit_end(struct unit *u)
{
	struct volmgr *vm = u->job->vm;
	struct job *j = u->job;

	TAILQ_REMOVE(&vm->units, u, entry);
	unit_free(u);
	if (j->single != NULL || j->status != VOLMGR_OK)
		job_finish(j);
	else
		job_next(j);
	pump(vm);
}

static void
unit_step(struct unit *u)
{
	if (u->step < 0) {
		unit_end(u);
		return;
	}
	switch (u->kind) {
	case U_MOUNT:
		mount_step(u);
		break;
	case U_UNMOUNT:
		unmount_step(u);
		break;
	case U_BIND:
	case U_UNBIND:
		bind_step(u);
		break;
	case U_REGISTER:
		register_step(u);
		break;
	case U_CREATE:
		create_step(u);
		break;
	case U_DELETE:
		delete_step(u);
		break;
	}
}

static struct unit *
unit_new(struct job *j, enum unit_kind kind, const char *ns, const char *vol)
{
	struct unit *u = calloc(1, sizeof(*u));

	if (u == NULL)
		fatal("unit_new");
	u->job = j;
	u->kind = kind;
	snprintf(u->ns, sizeof(u->ns), "%s", ns != NULL ? ns : "");
	snprintf(u->vol, sizeof(u->vol), "%s", vol != NULL ? vol : "");
	TAILQ_INSERT_TAIL(&j->vm->units, u, entry);
	return u;
}

/* The k-th (task, mount) pair of the alloc, in document order. */
static bool
nth_mount(const struct alloc *a, size_t k, const struct alloc_task **t,
    const struct alloc_mount **m)
{
	for (size_t i = 0; a != NULL && i < a->ntasks; i++) {
		if (k < a->tasks[i].nmounts) {
			*t = &a->tasks[i];
			*m = &a->tasks[i].mounts[k];
			return true;
		}
		k -= a->tasks[i].nmounts;
	}
	return false;
}

static struct vpub *
pub_of_request(struct volmgr *vm, const struct alloc *a,
    const struct alloc_volume *r)
{
	char usage[160];

	layout_usage(usage, sizeof(usage), r->read_only,
	    alloc_attachment_mode_name(r->attachment_mode),
	    alloc_access_mode_name(r->access_mode));
	return pub_find(vm, a->id, a->ns, r->source, usage);
}

/* Make and start the job's next unit, or finish it. */
static void
job_next(struct job *j)
{
	struct volmgr *vm = j->vm;
	const struct alloc *a = j->doc;
	const struct alloc_task *t;
	const struct alloc_mount *m;
	struct unit *u;
	struct vpub *p = NULL;
	size_t k = j->next++;

	if (j->mount && a != NULL && k < a->nvolumes) {
		u = unit_new(j, U_MOUNT, a->ns, a->volumes[k].source);
		u->req = &a->volumes[k];
		pump(vm);
		return;
	}
	if (j->mount && a != NULL)
		k -= a->nvolumes;
	if (nth_mount(a, k, &t, &m)) {
		if (j->mount && (p = pub_of_request(vm, a,
		    &a->volumes[m->volume_index])) == NULL) {
			job_next(j);
			return;
		}
		u = unit_new(j, j->mount ? U_BIND : U_UNBIND, NULL, NULL);
		u->pub = j->mount ? p : NULL;
		u->task = t->name;
		u->dest = m->destination;
		u->ro = m->read_only;
		pump(vm);
		return;
	}
	if (!j->mount)
		TAILQ_FOREACH(p, &vm->pubs, entry)
			if (strcmp(p->alloc, j->alloc) == 0) {
				u = unit_new(j, U_UNMOUNT, p->ns, p->vol);
				u->pub = p;
				pump(vm);
				return;
			}
	job_finish(j);
}

static struct job *
job_new(struct volmgr *vm, const char *alloc, const struct alloc *a,
    bool mount, volmgr_cb cb, void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		fatal("job_new");
	j->vm = vm;
	j->alloc = xstrdup(alloc);
	j->doc = a;
	j->mount = mount;
	j->cb = cb;
	j->arg = arg;
	clock_gettime(CLOCK_MONOTONIC, &j->started);
	return j;
}

static void
job_go(struct job *j)
{
	if (!j->vm->ready) {
		TAILQ_INSERT_TAIL(&j->vm->waiting, j, entry);
		return;
	}
	if (j->single != NULL)
		pump(j->vm);
	else
		job_next(j);
}

/* ---- the interface ---- */

struct volmgr *
volmgr_new(struct supervisor *sv)
{
	struct volmgr *vm = calloc(1, sizeof(*vm));

	if (vm == NULL)
		fatal("volmgr_new");
	vm->sv = sv;
	TAILQ_INIT(&vm->pubs);
	TAILQ_INIT(&vm->units);
	TAILQ_INIT(&vm->waiting);
	return vm;
}

static void
on_records(const struct regclient_result *res, Berth__Handle *const *items,
    size_t n, void *arg)
{
	struct volmgr *vm = arg;
	struct job *j;

	vm->inflight--;
	if (vm->dying) {
		if (vm->inflight == 0)
			free(vm);
		return;
	}
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		log_warnx("volmgr: cannot read the mount records: %s: %s; "
		    "going on without them", ipc_error_name(res->code),
		    res->message);
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		const Berth__MountHandle *mh = items[i]->mount;
		struct vpub *p;

		if (items[i]->handle_case != BERTH__HANDLE__HANDLE_MOUNT)
			continue;
		p = pub_new(vm, mh->alloc, mh->namespace_, mh->volume,
		    mh->task, mh->plugin, mh->usage);
		p->staged = mh->staged;
		p->published = mh->published;
		/* The usage names the request it was made for. */
		p->read_only = strncmp(mh->usage, "ro-", 3) == 0;
		p->attachment = strstr(mh->usage, "-block-device-") != NULL ?
		    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE :
		    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	}
	if (n > 0)
		log_info("volmgr: %zu mount record%s read back", n, n == 1 ?
		    "" : "s");
	vm->ready = true;
	while ((j = TAILQ_FIRST(&vm->waiting)) != NULL) {
		TAILQ_REMOVE(&vm->waiting, j, entry);
		job_go(j);
	}
}

void
volmgr_start(struct volmgr *vm)
{
	if (regclient_list_handles(vm->sv->registry.client,
	    BERTH__HANDLE_KIND__HANDLE_KIND_MOUNT, on_records, vm) < 0) {
		log_warnx("volmgr: cannot reach berth-registry for the mount "
		    "records");
		vm->ready = true;
		return;
	}
	vm->inflight++;
}

bool
volmgr_ready(const struct volmgr *vm)
{
	return vm->ready;
}

bool
volmgr_uses_plugin(struct volmgr *vm, const char *plugin)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (strcmp(p->plugin, plugin) == 0)
			return true;
	return false;
}

void
volmgr_free(struct volmgr *vm)
{
	struct unit *u;
	struct job *j;
	struct vpub *p;

	if (vm == NULL)
		return;
	while ((u = TAILQ_FIRST(&vm->units)) != NULL) {
		TAILQ_REMOVE(&vm->units, u, entry);
		j = u->job;
		/* A job has one unit at a time: free it with its unit. */
		unit_free(u);
		free(j->alloc);
		free(j);
	}
	while ((j = TAILQ_FIRST(&vm->waiting)) != NULL) {
		TAILQ_REMOVE(&vm->waiting, j, entry);
		free(j->alloc);
		free(j);
	}
	while ((p = TAILQ_FIRST(&vm->pubs)) != NULL)
		pub_free(vm, p);
	vm->dying = true;
	if (vm->inflight == 0)
		free(vm);
}

void
volmgr_mount(struct volmgr *vm, const struct alloc *a, volmgr_cb cb,
    void *arg)
{
	job_go(job_new(vm, a->id, a, true, cb, arg));
}

void
volmgr_unmount(struct volmgr *vm, const char *alloc, const struct alloc *a,
    volmgr_cb cb, void *arg)
{
	job_go(job_new(vm, alloc, a, false, cb, arg));
}

void
volmgr_each_alloc(struct volmgr *vm, void (*fn)(const char *alloc,
    void *arg), void *arg)
{
	struct vpub *p, *q;

	TAILQ_FOREACH(p, &vm->pubs, entry) {
		/* Once per alloc. */
		for (q = TAILQ_FIRST(&vm->pubs); q != p; q =
		    TAILQ_NEXT(q, entry))
			if (strcmp(q->alloc, p->alloc) == 0)
				break;
		if (q == p)
			fn(p->alloc, arg);
	}
}

static char **
strv_copy(char *const *v, size_t n)
{
	char **c = calloc(n + 1, sizeof(*c));

	if (c == NULL)
		fatal("strv_copy");
	for (size_t i = 0; i < n; i++)
		c[i] = xstrdup(v[i]);
	return c;
}

static struct volmgr_param *
params_copy(const struct volmgr_param *p, size_t n)
{
	struct volmgr_param *c = calloc(n + 1, sizeof(*c));

	if (c == NULL)
		fatal("params_copy");
	for (size_t i = 0; i < n; i++) {
		c[i].key = xstrdup(p[i].key);
		c[i].value = xstrdup(p[i].value);
	}
	return c;
}

/* The caller's strings need not outlive the call. */
static void
spec_copy(struct volmgr_spec *d, const struct volmgr_spec *s)
{
	*d = *s;
	d->ns = xstrdup(s->ns);
	d->id = xstrdup(s->id);
	d->plugin = xstrdup(s->plugin);
	d->external_id = xstrdup(s->external_id);
	d->fs_type = s->fs_type != NULL ? xstrdup(s->fs_type) : NULL;
	d->flags = strv_copy(s->flags, s->nflags);
	d->params = params_copy(s->params, s->nparams);
}

static void
operator_job(struct volmgr *vm, enum unit_kind kind,
    const struct volmgr_spec *s, const char *ns, const char *id,
    volmgr_cb cb, void *arg)
{
	struct job *j = job_new(vm, "-", NULL, false, cb, arg);
	struct unit *u = unit_new(j, kind, ns, id);

	if (s != NULL)
		spec_copy(&u->spec, s);
	j->single = u;
	/* Not queued behind the records: operator units need none. */
	pump(vm);
}

void
volmgr_register(struct volmgr *vm, const struct volmgr_spec *s,
    volmgr_cb cb, void *arg)
{
	operator_job(vm, U_REGISTER, s, s->ns, s->id, cb, arg);
}

void
volmgr_create(struct volmgr *vm, const struct volmgr_spec *s, volmgr_cb cb,
    void *arg)
{
	operator_job(vm, U_CREATE, s, s->ns, s->id, cb, arg);
}

void
volmgr_delete(struct volmgr *vm, const char *ns, const char *id,
    volmgr_cb cb, void *arg)
{
	operator_job(vm, U_DELETE, NULL, ns, id, cb, arg);
}
