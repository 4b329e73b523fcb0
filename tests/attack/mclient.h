/*
 * mclient.h: a test's side of berth-mounter: start the real binary with
 * its socket as fd 3, say hello as the supervisor, and make requests one
 * at a time. Used by the attack suite and the benchmark.
 */
#ifndef BERTH_TEST_MCLIENT_H
#define BERTH_TEST_MCLIENT_H

#include <stdbool.h>
#include <string.h>

#include "channel.h"
#include "harness.h"

/* An identifier field from a C string, or from bytes with a length. */
#define B(s) ((ProtobufCBinaryData){ strlen(s), (uint8_t *)(s) })
#define BN(s, n) ((ProtobufCBinaryData){ (n), (uint8_t *)(s) })

struct mclient {
	struct proc proc;
	struct event_base *base;
	struct chan *chan;
	struct event *drain;		/* reads its stderr */
	int raw;			/* the socket, for raw datagrams */
	char *data, *run, *plugins;
	int exits;			/* PluginExited notices seen */
	Berth__PluginExited last_exit;
	const char *const *args;	/* more options, NULL-ended */
	uid_t peer;			/* its peer's euid (SO_PEERCRED) */
	/* Sent with each PrepareVolume and BindVolume when set. */
	const char *plugin_alloc;
	unsigned group;
};

/* Start berth-mounter on fresh temp dirs; plugins may be NULL. */
void mc_start(struct mclient *c, const char *plugins);
/* The same with more options (args, NULL-ended), seen from uid peer. */
void mc_start_opts(struct mclient *c, const char *plugins,
    const char *const *args, uid_t peer);
void mc_stop(struct mclient *c);
/* Stop berth-mounter and start a new one on the same directories. */
void mc_restart(struct mclient *c);
/* Start, adopt or signal a plugin; handle in/out. */
int mc_start_plugin(struct mclient *c, const char *def, const char *type,
    const char *plugin, const char *alloc, Berth__PluginHandle *h, int *pidfd);
int mc_adopt(struct mclient *c, Berth__PluginHandle *h, int *pidfd);
int mc_signal(struct mclient *c, const Berth__PluginHandle *h, int sig);
/* Make one request; returns the error code (0: success). fd: the reply's
 * descriptor, or its two (fd[2]) for TaskStarted. */
int mc_call(struct mclient *c, Berth__Envelope *env, int *fd,
    Berth__Envelope **reply);
/* Run the event loop for up to ms (for notices). */
void mc_wait(struct mclient *c, int ms);

int mc_prepare_plugin(struct mclient *c, const char *type, const char *plugin,
    const char *alloc);
/* For a plugin the supervisor runs: its socket dir given to uid:gid. */
int mc_prepare_plugin_owned(struct mclient *c, const char *type,
    const char *plugin, const char *alloc, unsigned uid, unsigned gid);
/* Staging: the volume's one path, csi/<type>/<plugin>/staging/<ns>/<vol>. */
int mc_prepare_volume(struct mclient *c, bool staging, const char *type,
    const char *plugin, const char *ns_or_alloc, const char *vol,
    bool *mounted);
/* Staging at the per-usage path of older berths, .../<vol>/MC_USAGE. */
int mc_prepare_old_staging(struct mclient *c, const char *type,
    const char *plugin, const char *ns, const char *vol);
int mc_bind(struct mclient *c, const char *type, const char *plugin,
    const char *alloc, const char *vol, const char *task, const char *name,
    bool ro);
int mc_prepare_task(struct mclient *c, const char *alloc, const char *task,
    unsigned uid, unsigned gid);
int mc_unbind(struct mclient *c, const char *alloc, const char *task,
    const char *name);
int mc_cleanup(struct mclient *c, const char *alloc);
/* With a plugin: its mount root goes too if nothing is left in it. */
int mc_cleanup_plugin(struct mclient *c, const char *alloc, const char *type,
    const char *plugin);

/* Prepare a plugin and publish vol as its plugin would (a tmpfs). */
void mc_publish(struct mclient *c, const char *type, const char *plugin,
    const char *alloc, const char *vol);
void mc_unpublish(struct mclient *c, const char *type, const char *plugin,
    const char *alloc, const char *vol);
/* Unmount the plugin's mount root (prepare_plugin's self-bind). */
void mc_release_plugin(struct mclient *c, const char *type,
    const char *plugin);

/* Unchecked fixture: kill the plugins the tests started (see mclient.c). */
void mc_track_init(void);
void mc_track_cleanup(void);
/* /proc/<pid>/stat field 22, or 0. */
uint64_t mc_start_time(pid_t pid);

/* Absolute path under the data dir. */
const char *mc_path(struct mclient *c, const char *rel);
/* The publish target's usage mc_bind uses, and an older staging path's. */
#define MC_USAGE "rw-file-system-single-node-writer"

/* Mount table snapshot, and whether anything was added since. */
char *mounts_snapshot(void);
bool mounts_added(const char *before, char *what, size_t n);
/*
 * For harness_run_attacks(): each test runs in its own namespace, so the
 * host's table must not change between these two calls. The second says
 * what was added, and counts it as one attack that got through.
 */
void mc_host_mounts_before(void);
int mc_host_mounts_gained(void);
bool is_mountpoint(const char *path);

#endif
