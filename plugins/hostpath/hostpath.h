/*
 * hostpath.h: berth-csi-hostpath, the bundled sample CSI plugin.
 *
 * A volume is a directory under <state-dir>/volumes/; staging and
 * publishing are bind mounts. The plugin exists so that berth's CSI code
 * is exercised against a real gRPC server that really mounts, and so
 * that tests can make it misbehave on purpose (the fault_* settings).
 * In strict mode (--strict) it behaves as the plugins berth did not
 * write: one staging path per volume, volume directories 0755 of its own
 * user, its endpoint from --endpoint only, no optional reply field. In
 * both modes it advertises VOLUME_MOUNT_GROUP and gives a volume's root
 * to the group a stage or publish names (node.c), and ONLINE expansion
 * (OFFLINE with --expand-offline; expand.c), and snapshots as copies
 * (unless --no-snapshots; snapshot.c). It must not be mistaken for
 * storage: it has no capacity accounting, and it trusts whoever can
 * reach its socket, as every CSI plugin does.
 */
#ifndef BERTH_HOSTPATH_H
#define BERTH_HOSTPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <grpc/status.h>
#include <protobuf-c/protobuf-c.h>

#include "csi.pb-c.h"

#define HOSTPATH_NAME		"hostpath.csi.berth.dev"
#define HOSTPATH_TOPOLOGY_KEY	"topology.hostpath.csi.berth.dev/node"
#define HOSTPATH_MAX_VOLUMES	1024
#define HOSTPATH_MAX_CREATED	256
/* A capability type that no CSI version defines (--fault-unknown-*). */
#define HOSTPATH_UNKNOWN_CAP	1000
#define SOCKET_PATH_MAX		107	/* sizeof(sun_path) - 1 */

enum hostpath_mode {
	HOSTPATH_NODE = 1,
	HOSTPATH_CONTROLLER = 2,
	HOSTPATH_MONOLITH = HOSTPATH_NODE | HOSTPATH_CONTROLLER,
};

struct hostpath {
	const char *node_id;
	const char *state_dir;
	char volumes_dir[4096];		/* <state-dir>/volumes */
	int volumes_fd;			/* it, pinned at start (O_PATH) */
	int staged_fd;			/* <state-dir>/staged, strict only */
	enum hostpath_mode mode;
	bool strict;			/* --strict: as plugins of others */
	bool expand_offline;		/* --expand-offline: not ONLINE */
	bool no_mount_group;		/* --no-mount-group: not advertised */
	bool no_snapshots;		/* --no-snapshots: not advertised */
	bool fuse;			/* --fuse: mounts die with it (fuse.c) */

	/* Mount targets this process created, removed again on undo. */
	char *created[HOSTPATH_MAX_CREATED];

	/* Fault injection, for tests only. */
	int fault_slow_start_ms;	/* serve nothing for this long */
	int fault_probe_fail_after;	/* < 0: never */
	int probes;
	bool fault_probe_no_ready;	/* Probe reply without `ready` */
	bool fault_validate_no_confirmed; /* VVC reply without `confirmed` */
	bool fault_unknown_caps;	/* capability entries of unknown type */
	bool fault_minimal;		/* every optional field left out */
	int fault_slow_probe;		/* this probe (1-based) is slow ... */
	int fault_slow_probe_ms;	/* ... by this much */
	const char *fault_exit_in;	/* method name: exit while serving it */
	const char *fault_slow_reply;	/* method name: done, then answer ... */
	int fault_slow_reply_ms;	/* ... this much later */

	/* topology.c: --topology KEY=VALUE, --max-volumes N,
	 * --no-single-node-multi-writer */
	const char *topology_key, *topology_value;	/* NULL: the default */
	int64_t max_volumes;		/* 0: the default */
	bool no_single_node_multi_writer;
};

/* What a handler answers: a status, a message and a packed reply. */
struct rpc_reply {
	grpc_status_code status;
	char message[512];
	uint8_t *buf;			/* packed reply when status is OK */
	size_t len;
};

/* Each handler gets the decoded request and fills the reply. */
typedef void (*rpc_handler)(struct hostpath *, const ProtobufCMessage *,
    struct rpc_reply *);

struct rpc_method {
	const char *path;		/* "/csi.v1.Node/NodeGetInfo" */
	const char *name;		/* "NodeGetInfo", for --fault-exit-in */
	enum hostpath_mode service;	/* 0: Identity, always served */
	const ProtobufCMessageDescriptor *request;
	rpc_handler handler;
};

/* Whether replies carry the fields the spec makes optional. */
static inline bool
optional_fields(const struct hostpath *hp)
{
	return !hp->strict && !hp->fault_minimal;
}

/* block.c: --block, block access over loop devices. */
extern bool hostpath_block;
bool block_capability(const Csi__V1__VolumeCapability *);
/* Each true when the call was block.c's, answered in r. */
bool block_publish(struct hostpath *,
    const Csi__V1__NodePublishVolumeRequest *, struct rpc_reply *);
bool block_unpublish(struct hostpath *, const char *volume,
    const char *target, struct rpc_reply *);
/* Detach every loop device of the volume; with its backing file. */
void block_detach_all(struct hostpath *, const char *volume);
void block_delete(struct hostpath *, const char *volume);
/* fuse.c: --fuse, a stage served by this process; a device it serves. */
bool fuse_stage(struct hostpath *, int vol, const char *target,
    struct rpc_reply *);
bool fuse_ours(dev_t);

/* topology.c */
void topology_flag(struct hostpath *, char *arg);
/* The plugin's topology into topo (seg, segs[1] its storage): whether a
 * reply carries it. */
bool topology_own(const struct hostpath *, Csi__V1__Topology *topo,
    Csi__V1__Topology__SegmentsEntry *seg,
    Csi__V1__Topology__SegmentsEntry **segs);
/* max_volumes_per_node to report; 0: none. */
int64_t topology_max_volumes(const struct hostpath *);
/* CreateVolume's requisite includes the plugin's topology (or is none). */
bool topology_create_ok(const struct hostpath *,
    const Csi__V1__CreateVolumeRequest *, struct rpc_reply *);
/* The node advertises SINGLE_NODE_MULTI_WRITER. */
bool topology_snmw(const struct hostpath *);

/* server.c */
/* The socket path of "unix:///p", "unix:/p" or "/p"; NULL if none. */
const char *endpoint_path(const char *endpoint);
int server_run(struct hostpath *, const char *endpoint);
void reply_ok(struct rpc_reply *, const ProtobufCMessage *msg);
void reply_error(struct rpc_reply *, grpc_status_code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* identity.c, node.c, controller.c, expand.c: the method tables. */
extern const struct rpc_method identity_methods[];
extern const struct rpc_method node_methods[];
extern const struct rpc_method controller_methods[];
extern const struct rpc_method expand_methods[];
extern const struct rpc_method snapshot_methods[];

/* snapshot.c: CreateVolume's content source (a snapshot) copied into
 * the volume name, made just now; false with r filled. */
bool snapshot_restore(struct hostpath *,
    const Csi__V1__VolumeContentSource *src, const char *name,
    struct rpc_reply *r);

/* Shared checks (controller.c). */
bool volume_id_ok(const char *id, struct rpc_reply *);
int volume_open(struct hostpath *, const char *id, const char *rpc,
    struct rpc_reply *);
bool capability_supported(const Csi__V1__VolumeCapability *, const char **why);

/*
 * staged.c: the staging path recorded for a volume (strict mode).
 * staged_get returns 1 and fills path, 0 if there is no record, or
 * -errno; the others 0 or -errno.
 */
int staged_get(struct hostpath *, const char *volume, char *path, size_t n);
int staged_put(struct hostpath *, const char *volume, const char *path);
int staged_drop(struct hostpath *, const char *volume);

/*
 * tree.c: lookups and removal by descriptor, never through a symlink.
 * Each returns a descriptor or 0 on success, -errno on failure.
 */
/* openat2 without symlinks; beneath dirfd unless rel is absolute. */
int tree_open(int dirfd, const char *rel, int flags, mode_t mode);
/* The parent directory of an absolute path, O_PATH; its last name. */
int tree_parent(const char *path, char *name, size_t n);
int tree_mount_id(int fd, uint64_t *id);
/*
 * Remove dirfd/name and all in it, without following a symlink or
 * entering another mount; why says what failed first, and where.
 */
int tree_remove(int dirfd, const char *name, char *why, size_t whylen);

#endif
