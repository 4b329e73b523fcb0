/*
 * mounter.h: what the files of berth-mounter share. request.c turns an
 * envelope into a checked struct mreq; a verb gets that, never the
 * envelope, and answers a Berth__ErrorCode and, on failure, why.
 */
#ifndef BERTH_MOUNTER_H
#define BERTH_MOUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <linux/openat2.h>

#include "helper.h"
#include "ident.h"
#include "layout.h"

#define MREQ_IDENT (BERTH_IDENT_MAX + 1)
#define MREQ_PATH 1024
#define WHY_MAX 256
#define OK BERTH__ERROR_CODE__ERROR_NONE
/* Records of the plugins this mounter started, by boot: only root writes. */
#define MOUNTER_STARTED_DIR "mounter/started"
#define MOUNTER_PLUGINS_DIR "/etc/berth/plugins.d"
#define PLUGIN_MAX 64
#define TASK_MAX 1024		/* tasks' crun at once */
/* StartTask (task.c): in --task-conf, root's; beneath the data dir. */
#define TASK_CONF_DIR "/etc/berth"
#define TASK_TEMPLATE "task-sandbox.json"
#define TASK_USERS "users.allow"
#define TASK_CRUN "/usr/bin/crun"
#define MOUNTER_TASKS_DIR "mounter/tasks"
#define MOUNTER_CRUN_DIR "mounter/crun"

#define LAUNCH_ARGS 32
#define LAUNCH_STR 256
/* A plugin's own namespaces besides its mount namespace, by default. */
#define LAUNCH_NS (CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP)

/* plugindef.c: root's plugin definitions, a handful of lines each. */
#define PLUGINDEF_MAX 8192
#define PLUGINDEF_SUFFIX ".conf"

struct plugindef {
	char args[LAUNCH_ARGS][LAUNCH_STR];	/* argv; [0]: exec path */
	int nargs;				/* with argv[0] */
	uint64_t caps;			/* bit n: capability n */
	uint32_t hostns;		/* LAUNCH_NS bits kept the host's */
};

/* Parse buf, ep ("unix://...") for {csi_endpoint}; 0, or -1 with why set. */
int plugindef_parse(const char *buf, size_t len, const char *ep,
    struct plugindef *d, char *why, size_t n);

/*
 * launcher.c: fixed-size messages on a SOCK_SEQPACKET socketpair, checked
 * by exact size and NUL termination on receipt. The mounter has already
 * validated everything; the launcher checks that a message is well formed.
 * Mounter to launcher; with descriptors: exe and berth-shim (a plugin).
 */
struct launch_req {
	struct plugindef def;
	char root[MREQ_PATH];		/* mount root, under the data dir */
	char sockdir[MREQ_PATH];	/* socket dir, under the data dir */
	char endpoint[LAUNCH_STR];	/* "CSI_ENDPOINT=unix://..." */
	bool task;	/* crun for a task: fds exe, status dir, channel */
	char logdir[MREQ_PATH];	/* a plugin's log writer's, as log_uid */
	uid_t log_uid;
	gid_t log_gid;
};

/* Fork the launcher; returns the mounter's end of its socket or -errno. */
int launcher_spawn(int data_fd);

/* A request that request_check() accepted: every string is an identifier. */
struct mreq {
	Berth__Envelope__BodyCase body;
	char type[MREQ_IDENT], plugin[MREQ_IDENT], alloc[MREQ_IDENT];
	char ns[MREQ_IDENT], vol[MREQ_IDENT], usage[MREQ_IDENT];
	char task[MREQ_IDENT], name[MREQ_IDENT], def[MREQ_IDENT];
	char user[MREQ_IDENT], palloc[MREQ_IDENT];	/* plugin's alloc */
	bool staging, read_only, network_none, block;
	uint64_t memory, memory_max;
	uint32_t cpu_shares, pids_max;
	pid_t pid;
	uint64_t start_time;
	int sig;
	uid_t uid;
	gid_t gid;
	char path[MREQ_PATH], path2[MREQ_PATH];	/* under the data dir */
	uint64_t id;			/* the envelope's, for a later answer */
};

/* What a verb answers besides success. */
struct mreply {
	bool mounted;
	uint32_t unmounted, removed;
	pid_t pid;
	uint64_t start_time;
	int pidfd, chanfd;	/* owned by the reply; -1: none */
	bool later;		/* answered later, with mounter_answer() */
};

/* A plugin started or adopted; the slot is free while pidfd is 0. */
struct plugin {
	struct mounter *owner;
	pid_t pid;
	uint64_t start_time;
	int pidfd;
	bool task;		/* a task's crun: no record, no notice */
	struct event *ev;	/* the pidfd is readable: it has ended */
};

struct mounter {
	struct helper h;
	const char *data_dir;
	int data_fd, plugins_fd, proc_fd, launcher_fd, conf_fd;
	uid_t ids[2], deny_uid[3];	/* --task-ids; berth's own (main()) */
	gid_t deny_gid[3], peer_gid;	/* peer_gid: its user's group */
	const char *shim, *cgroup;		/* for the template */
	char boot_id[MREQ_IDENT];
	struct plugin plugins[PLUGIN_MAX + TASK_MAX];
	struct cleanups *cleanups;	/* cleanup.c's, in progress */
};

/* mounter.c */
Berth__ErrorCode fail(char *why, Berth__ErrorCode code, const char *fmt, ...)
    BERTH_PRINTF(3, 4);
Berth__ErrorCode fail_errno(char *why, int err, const char *what,
    const char *path);
/* The channel and dispatch on a connected socket (fuzz_verbs uses it). */
int mounter_serve_on(struct mounter *m, int fd);
/* A verb's answer: at once, or later when it set out->later. */
void mounter_answer(struct mounter *m, const struct mreq *rq,
    struct mreply *out);

/* request.c: the first switch. */
Berth__ErrorCode request_check(const Berth__Envelope *env, struct mreq *rq,
    char *why);

/*
 * resolve.c: paths beneath a pinned directory, never through a symlink;
 * res adds RESOLVE_* flags. res_open_here crosses no mount: -EXDEV.
 */
int res_openat2(int dirfd, const char *rel, int flags, mode_t mode,
    uint64_t res);
#define res_open(dirfd, rel, flags, mode) \
	res_openat2((dirfd), (rel), (flags), (mode), 0)
#define res_open_here(dirfd, rel, flags) \
	res_openat2((dirfd), (rel), (flags), 0, RESOLVE_NO_XDEV)
/* "a/b/c": "a/b" into parent, and "c"; "c": "." and "c". */
const char *res_split(const char *rel, char *parent, size_t n);
int res_mkdirs(int dirfd, const char *rel);
bool res_trusted(int fd);
/* Directory fd root's again, by descriptor; opened to read. */
int res_take_back(int fd, gid_t gid);
/* A plugin root or socket dir: berth's self-bind, else -EXDEV. */
int res_self_bind(int dirfd, const char *rel, int flags);
/* Entries of directory fd (with . and ..); leaf's inode in *ino. */
int res_entries(int fd, const char *leaf, ino_t *ino);
int res_is_mount(int dirfd, const char *name);
int res_unmount_all(int dirfd, const char *name);
int res_remove(int dirfd, const char *name);

/* A verb: act on a checked request; on failure say why. */
typedef Berth__ErrorCode verb_fn(struct mounter *m, const struct mreq *rq,
    struct mreply *out, char *why);

/* volume.c */
verb_fn volume_prepare_plugin, volume_prepare, volume_prepare_task,
    volume_bind, volume_unbind;
/* Directory fd (closed) to uid:gid, mode; sub made in it root's first. */
Berth__ErrorCode give(int fd, const char *rel, const char *sub, uid_t uid,
    gid_t gid, mode_t mode, char *why);
/* A plugin's root or socket dir, prepared: berth's shared self-bind. */
Berth__ErrorCode volume_shared_root(struct mounter *m, const char *rel,
    int *fdp, char *why);
/* cleanup.c */
verb_fn volume_cleanup;

/* plugin.c */
verb_fn plugin_start, plugin_adopt, plugin_signal;
/* name in dirfd, both root's: read whole (< n bytes), NUL-terminated. */
Berth__ErrorCode read_root_file(int dirfd, const char *dir,
    const char *name, char *buf, size_t n, char *why);
/* An executable of root's, opened once: what was checked runs. */
Berth__ErrorCode open_exe(const char *path, int *fd, char *why);
/* Is there a free slot to watch one more? Ask before starting it. */
bool plugin_room(struct mounter *m, bool task);
/* Watch a process we started (start 0: read it) and answer its handle. */
Berth__ErrorCode plugin_keep(struct mounter *m, pid_t pid, uint64_t start,
    bool task, int pidfd, struct mreply *out, char *why);
/* The launcher starts lr with fds; plugin_keep() watches it, into out. */
Berth__ErrorCode launcher_run(struct mounter *m, struct launch_req *lr,
    const int fds[3], struct mreply *out, char *why);
/* task.c */
verb_fn task_start;
/* A task's ids: never root's or berth's; in --task-ids, or user's line. */
Berth__ErrorCode task_ids(struct mounter *m, uid_t uid, gid_t gid,
    const char *user, char *why);

/*
 * sandbox.c: the capabilities the mounter keeps, the first MOUNTER_NCAPS;
 * the launcher keeps them all, for crun (SECURITY.md: why).
 */
#define MOUNTER_NCAPS 2
extern const cap_value_t mounter_caps[];
extern const int mounter_ncaps;
/* The seccomp allow-list; main() keeps only mounter_caps first. */
int sandbox_seccomp(void);
/*
 * The launcher's filter, which every plugin it starts inherits: all but
 * plugin_denied[], new user namespaces and setuid/setgid mode bits.
 */
int sandbox_plugin_filter(void);

#endif
