/*
 * volmgr_int.h: what the volume manager's files share, and no one else.
 *
 * The manager (volmgr.c) queues units of work and runs each as a small
 * state machine; a unit makes one asynchronous call at a time (registry,
 * mounter, or the plugin over CSI, volmgr_calls.c) and its reply comes
 * back to the unit's step function as an argument (struct vreply). The
 * units: mounting one volume of an alloc and binding it into a task
 * (volmgr_mount.c), taking it back (volmgr_unmount.c), the operator's
 * register, create and delete (volmgr_operator.c), expansion
 * (volmgr_expand.c) and snapshots (volmgr_snapshot.c); what they ask a
 * plugin is built and addressed by volmgr_plugins.c. What an alloc uses
 * is kept in pubs (volmgr_pubs.c), mirrored by the registry's mount
 * records (volmgr_records.c). Apart from the units, volmgr_stats.c asks
 * the node plugins how each volume in use is doing. Before a mount
 * records anything, volmgr_admit.c checks what the node's plugin admits;
 * volmgr_topology.c carries a volume's topologies to CSI and back.
 */
#ifndef BERTH_VOLMGR_INT_H
#define BERTH_VOLMGR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>
#include <time.h>

#include <protobuf-c/protobuf-c.h>

#include "csi.pb-c.h"
#include "csi_client.h"
#include "csimanager.h"
#include "ident.h"
#include "log.h"
#include "mounter_client.h"
#include "registry_client.h"
#include "volmgr.h"

struct alloc_volume;

#define CTX_MAX 64
/* Mount flags: the volume's (the registry keeps at most 32) and an
 * alloc's (at most ALLOC_MAX_FLAGS), merged. */
#define FLAGS_MAX 64

/* A CSI context (volume or publish): key = value pairs, copied. */
struct kvs {
	size_t n;
	char *key[CTX_MAX], *value[CTX_MAX];
};

/*
 * One alloc's use of one volume (a publish), as its record says. A
 * volume has one staging path, shared by all its pubs whatever their
 * usage: stage_usage is "" for it, or the usage of the per-usage path an
 * older berth staged the volume at, which its pubs keep using until it
 * is unstaged there.
 */
struct vpub {
	TAILQ_ENTRY(vpub) entry;
	char *alloc, *ns, *vol, *name, *plugin, *usage, *stage_usage;
	bool staged, published;
	/* Filled in by a unit that runs on it. */
	char type[16];
	char *external_id;
	struct kvs vctx, pctx;
	struct kvs srefs;		/* secret references: call = name */
	char *fs_type;			/* the volume's mount options */
	char *flags[FLAGS_MAX];
	size_t nflags;
	Berth__AccessMode access;
	Berth__AttachmentMode attachment;
	bool read_only;
	const struct alloc_volume *req;	/* NULL for one known from records */
	gid_t group;			/* the mount group asked; 0: none */
	/* volmgr_recover.c: the alloc's document and group, while req is
	 * set; the volume's on_plugin_restart (0: not read yet). */
	const struct alloc *doc;
	gid_t alloc_group;
	enum recover_policy { RECOVER_REMOUNT = 1, RECOVER_RESTART_TASKS,
		RECOVER_NONE } on_restart;
	bool going;			/* its alloc's unmount job was made */
	bool foreign_owner;		/* its plugin takes no mount group */
};
TAILQ_HEAD(vpub_list, vpub);

enum unit_kind { U_MOUNT, U_UNMOUNT, U_BIND, U_UNBIND, U_REGISTER,
	U_CREATE, U_DELETE, U_EXPAND, U_SNAPSHOT, U_RECOVER };

/* Mounting one volume: each state names the call the unit waits on. */
enum mount_state {
	MS_START,
	MS_GET,			/* GetVolume */
	MS_RECORD,		/* PutHandle: the record, before anything */
	MS_CLAIM,		/* ClaimVolume */
	MS_CPUBLISH,		/* ControllerPublishVolume */
	MS_PREP_STAGE,		/* PrepareVolume, staging */
	MS_STAGE,		/* NodeStageVolume */
	MS_STAGED,		/* PutHandle: staged */
	MS_PREP_PUBLISH,	/* PrepareVolume, publish */
	MS_PUBLISH,		/* NodePublishVolume */
	MS_PUBLISHED,		/* PutHandle: published; then done */
};

/* Taking one volume back, the same way. */
enum unmount_state {
	US_START,
	US_GET,			/* GetVolume (known from records only) */
	US_UNPUBLISH,		/* NodeUnpublishVolume */
	US_UNSTAGE,		/* NodeUnstageVolume */
	US_CUNPUBLISH,		/* ControllerUnpublishVolume */
	US_RELEASE,		/* ReleaseClaim */
	US_FORGET,		/* DeleteHandle; then done */
};

/* A bind or an unbind: one mounter call. */
enum bind_state {
	BS_START,
	BS_SENT,		/* BindVolume or UnbindVolume; then done */
};

/* A stale pub's dead mounts taken away (volmgr_recover.c). */
enum recover_state {
	RS_START,
	RS_UNBIND,		/* UnbindVolume, each task's bind */
	RS_UNPUBLISH,		/* NodeUnpublishVolume */
	RS_UNSTAGE,		/* NodeUnstageVolume; then done */
};

/* The operator's units. */
enum op_state {
	OS_START,
	OS_VALIDATE,		/* ValidateVolumeCapabilities */
	OS_CREATE,		/* CreateVolume */
	OS_GET,			/* GetVolume */
	OS_DELETE,		/* DeleteVolume on the plugin */
	OS_FORGET,		/* DeleteVolume in the registry; then done */
	OS_PUT,			/* PutVolume; then done */
	OS_CEXPAND,		/* ControllerExpandVolume */
	OS_NEXPAND,		/* NodeExpandVolume, one path at a time */
	OS_REREAD,		/* GetVolume, to keep the new capacity */
	OS_SNAPSHOT,		/* Create-, Delete- or ListSnapshots */
};

/* What a U_SNAPSHOT unit does (volmgr_snapshot.c). */
enum snap_op { SNAP_CREATE, SNAP_DELETE, SNAP_LIST };

/*
 * A reply as the step that asked receives it: the member for the call
 * it waited on. Errors never reach a step (the unit ends), except those
 * a step lets pass, which come with the member NULL.
 */
struct vreply {
	const Berth__Envelope *reg;	/* the registry's reply */
	bool mounted;			/* PrepareVolume: a mount point */
	const ProtobufCMessage *csi;	/* the plugin's reply */
};

struct job;
struct vcall;
struct vstat;
struct recovery;

struct unit {
	TAILQ_ENTRY(unit) entry;	/* vm->units: waiting or running */
	struct job *job;
	enum unit_kind kind;
	char ns[BERTH_IDENT_MAX + 1], vol[BERTH_IDENT_MAX + 1];
	struct vpub *pub;
	const struct alloc_volume *req;	/* U_MOUNT: the alloc's request */
	struct vcall *call;		/* the call in flight, if any */
	bool running;
	union {
		enum mount_state mount;
		enum unmount_state unmount;
		enum bind_state bind;
		enum op_state op;
		enum recover_state recover;
	} st;
	/* U_BIND / U_UNBIND */
	const char *task, *dest;
	bool ro;
	/* operator units */
	struct volmgr_spec spec;
	char *created_id;
	struct kvs created_ctx;		/* the volume context to keep */
	struct kvs srefs;		/* the volume's secret references */
	/* U_CREATE, U_EXPAND: the capacity as the plugin said it, 0 not
	 * (kept with the volume); the range asked is in spec */
	int64_t capacity;
	/* U_EXPAND (volmgr_expand.c) */
	size_t expand_next;		/* the next published path */
	bool expand_ctl;		/* the controller expanded it */
	bool expand_node;		/* NodeExpandVolume next */
	char expand_plugin[BERTH_IDENT_MAX + 1];
	/* U_SNAPSHOT (volmgr_snapshot.c) */
	enum snap_op snap_op;
	char *snap_name;		/* create: the name; delete: the id */
	char *snap_token;		/* list: the next page's */
	int snap_pages;
	struct volmgr_snapshots *snap_out;	/* the caller's, or NULL */
	char snap_plugin[BERTH_IDENT_MAX + 1];
	size_t recover_next;		/* U_RECOVER: the next task bind */
};

struct job {
	struct volmgr *vm;
	char *alloc;
	const struct alloc *doc;
	gid_t group;			/* mount: the alloc's, 0 none */
	bool mount;
	size_t next;			/* the next unit to make */
	enum volmgr_status status;
	char why[1200];
	volmgr_cb cb;
	void *arg;
	struct unit *single;		/* an operator's one unit */
	/* volmgr_recover.c: a recovery's mount of an alloc, and once its
	 * alloc goes, what ends it and then starts (the alloc's unmount). */
	bool recovery, cancelled;
	struct job *then;
	struct timespec started;
	double rpc_ms;			/* waiting for the plugin */
	int rpcs;
	TAILQ_ENTRY(job) entry;
};

struct volmgr {
	struct volmgr_deps d;		/* data_dir: our copy */
	bool ready, dying;
	int inflight;
	struct vpub_list pubs;
	TAILQ_HEAD(, unit) units;
	TAILQ_HEAD(, job) waiting;	/* until the records are read */
	TAILQ_HEAD(, vstat) stats;	/* volmgr_stats.c: one per volume */
	struct event *stats_timer;
	int stats_out;			/* stats calls out */
	TAILQ_HEAD(, recovery) recoveries;	/* volmgr_recover.c */
};

/* volmgr.c: units and jobs */
/* An operator's job of one unit on ns/id, with a copy of s (or none). */
void operator_job(struct volmgr *vm, enum unit_kind kind,
    const struct volmgr_spec *s, const char *ns, const char *id,
    volmgr_cb cb, void *arg);
/* The same, its unit made but not started: set it up, then
 * units_pump(). */
struct unit *operator_unit(struct volmgr *vm, enum unit_kind kind,
    const struct volmgr_spec *s, const char *ns, const char *id,
    volmgr_cb cb, void *arg);
void units_pump(struct volmgr *vm);
/* Start the job, or queue it until the records are read. */
void volmgr_job_go(struct job *j);
void unit_step(struct unit *u, const struct vreply *r);
/* The unit is done (its job's status says how): free it, go on. */
void unit_end(struct unit *u);
/* Say why the unit's job failed: step and reason; keeps the first. */
void unit_fail(struct unit *u, enum volmgr_status st, const char *fmt, ...)
    BERTH_PRINTF(3, 4);
double ms_since(const struct timespec *t);
/* One volume event for the unit's volume: "volume NS/ID done". */
void unit_event(struct unit *u, const char *type, const char *plugin,
    const char *done);

/* volmgr_pubs.c */
void kvs_clear(struct kvs *k);
void kvs_add(struct kvs *k, const char *key, const char *value);
struct vpub *pub_find(struct volmgr *vm, const char *alloc, const char *ns,
    const char *vol, const char *usage);
struct vpub *pub_new(struct volmgr *vm, const char *alloc, const char *ns,
    const char *vol, const char *name, const char *plugin, const char *usage);
void pub_free(struct volmgr *vm, struct vpub *p);
void pub_usage(char *buf, size_t n, const struct alloc_volume *r);
/* A usage's parts from its name; false when it names none. */
bool usage_parse(const char *usage, bool *read_only,
    Berth__AttachmentMode *attachment, Berth__AccessMode *access);
/* A new pub stages where the volume's other pubs do: there is one path. */
void pub_join_stage(struct volmgr *vm, struct vpub *me);
/* Others staged at the pub's staging path. */
bool stage_shared(struct volmgr *vm, const struct vpub *me);
bool volume_shared(struct volmgr *vm, const struct vpub *me,
    bool same_alloc);
void take_volume(struct vpub *p, const Berth__Volume *v);

/* volmgr_secrets.c: a call's secrets, by the volume's references (key
 * the call, one of alloc_secret_calls, value the secret's name) */
/* The secret name names, else the one refs names for call, into out
 * (empty when none is named); false, the unit failed and ended, when it
 * cannot be read. Wipe out with secrets_wipe() once the call is sent. */
bool secrets_load(struct unit *u, const char *name, const struct kvs *refs,
    const char *call, struct kvs *out);
void secrets_wipe(struct kvs *k);

/* volmgr_stats.c: each volume's usage and condition */
void stats_start(struct volmgr *vm);
void stats_free(struct volmgr *vm);

/* volmgr_records.c */
void put_record(struct unit *u);
void forget_record(struct unit *u);
void records_read(struct volmgr *vm);

/* volmgr_calls.c: each sends one call, whose reply reaches unit_step() */
void call_registry(struct unit *u, int r);
struct vcall *reg_ticket(struct unit *u);
void on_registry(const struct regclient_result *res, void *arg);
void call_mounter(struct unit *u, int r);
struct vcall *mounter_ticket(struct unit *u);
void on_mounter(const struct priv_result *res, void *arg);
void on_volume_prepared(const struct priv_result *res, bool mounted,
    void *arg);
void csi_send(struct unit *u, struct csi_conn *conn, enum csi_method m,
    const ProtobufCMessage *req);
/* A call of the manager's own (not a unit's) is out, or came back:
 * false when the manager is gone with it. */
void call_out(struct volmgr *vm);
bool call_back(struct volmgr *vm);
/* The unit is gone: its call's reply is dropped when it comes. */
void volmgr_call_orphan(struct vcall *c);

/* volmgr_plugins.c: the plugin's instances and the requests' parts */
bool controller_of(struct volmgr *vm, const char *plugin,
    struct volmgr_plugin *out);
/* A controller instance not healthy: true, and the unit waits (ended). */
bool controller_sick(struct unit *u, const char *plugin);
/* The plugin's node instance, healthy; false when none. */
bool node_of(struct volmgr *vm, const char *plugin,
    struct volmgr_plugin *out);
/* The pub's node instance; false (and the unit ended) when none. */
bool node_or_end(struct unit *u, struct volmgr_plugin *out);
/* The <type> of the pub's mount root, into p->type. */
void pub_mount_type(struct volmgr *vm, struct vpub *p,
    const struct volmgr_plugin *node);
void mount_type(struct unit *u, const struct volmgr_plugin *node);
/* The volume's staging path, or the pub's publish target, for CSI. */
void pub_csi_path(struct volmgr *vm, const struct vpub *p, bool staging,
    char *buf, size_t n);
void csi_path(struct unit *u, bool staging, char *buf, size_t n);
/* A capability on the caller's stack: cap, with mnt/blk/mode beside it. */
struct capbuf {
	Csi__V1__VolumeCapability cap;
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__BlockVolume blk;
	Csi__V1__VolumeCapability__AccessMode mode;
	char *flags[FLAGS_MAX];		/* pub_capability(): merged */
	char group[16];			/* pub_mount_group() */
};
Csi__V1__VolumeCapability *capability(struct capbuf *b,
    Berth__AccessMode access, Berth__AttachmentMode attachment,
    const char *fs_type, char *const *flags, size_t nflags);
Csi__V1__VolumeCapability *pub_capability(struct capbuf *b,
    const struct vpub *p);
/* The pub's mount group into b's capability (made by pub_capability()),
 * only for a node plugin that advertises VOLUME_MOUNT_GROUP. */
void pub_mount_group(struct capbuf *b, const struct vpub *p,
    const struct volmgr_plugin *node);
/* A map field's entries, in the caller's store and ptrs. */
struct kv_entry {
	ProtobufCMessage base;
	char *key, *value;
};
void *kv_entries(const struct kvs *k, const ProtobufCMessageDescriptor *d,
    struct kv_entry *store, void **ptrs);
struct priv_volume priv_volume_of(const struct vpub *p);
/* The same for its staging path, which may be an older per-usage one. */
struct priv_volume priv_staging_of(const struct vpub *p);

/* volmgr_admit.c: what a node's plugin admits */
bool access_is_csi15(Berth__AccessMode m);
/* The mode the mounter's paths name (1 to 5). */
Berth__AccessMode path_access(Berth__AccessMode m);
bool topology_matches(const char *node_topo, Berth__Topology *const *t,
    size_t n);
/* Before anything for the unit's volume v: false (the unit failed and
 * ended) when the node's plugin cannot take it, or not now. */
bool admit_mount(struct unit *u, const Berth__Volume *v);
/* Register, create: a CSI 1.5 mode with a node plugin that does not
 * take it: true, and the unit failed and ended. */
bool spec_refused(struct unit *u);

/* volmgr_topology.c: a volume's topologies, spec to CSI to registry */
void spec_topology_copy(struct volmgr_spec *d, const struct volmgr_spec *s);
void spec_topology_free(struct volmgr_spec *s);
void spec_take_accessible(struct volmgr_spec *s, Csi__V1__Topology *const *t,
    size_t n);
/* NULL when the spec asks none; free with csi_requirement_free(). */
Csi__V1__TopologyRequirement *csi_requirement(const struct volmgr_spec *s);
void csi_requirement_free(Csi__V1__TopologyRequirement *r);
/* The spec's topologies into v; free with volume_topologies_free(). */
void volume_topologies(Berth__Volume *v, const struct volmgr_spec *s);
void volume_topologies_free(Berth__Volume *v);

/* volmgr_mount.c, volmgr_unmount.c, volmgr_operator.c */
void mount_step(struct unit *u, const struct vreply *r);
void bind_step(struct unit *u, const struct vreply *r);
void unmount_step(struct unit *u, const struct vreply *r);
void unbind_step(struct unit *u, const struct vreply *r);
void register_step(struct unit *u, const struct vreply *r);
void create_step(struct unit *u, const struct vreply *r);
void delete_step(struct unit *u, const struct vreply *r);
void expand_step(struct unit *u, const struct vreply *r);
void snapshot_step(struct unit *u, const struct vreply *r);
void spec_copy(struct volmgr_spec *d, const struct volmgr_spec *s);
void spec_free(struct volmgr_spec *s);

/* volmgr_recover.c */
/* A job of one U_RECOVER unit on p (volmgr.c). */
struct job *recover_job(struct volmgr *vm, struct vpub *p, volmgr_cb cb,
    void *arg);
void recover_step(struct unit *u, const struct vreply *r);
/* The alloc's volumes set up again as volmgr_mount does, for a
 * recovery (volmgr.c). */
void recover_mount(struct volmgr *vm, const struct alloc *a, gid_t group,
    volmgr_cb cb, void *arg);
/* The alloc goes: true when its unmount job j waits for a recovery's
 * mount of it, cancelled (the job starts j once it ends). */
bool recover_alloc_goes(struct volmgr *vm, const char *alloc, struct job *j);
/* The volume's on_plugin_restart, kept with the pub (take_volume()). */
void recover_policy(struct vpub *p, const Berth__Volume *v);
void recover_free(struct volmgr *vm);

#endif
