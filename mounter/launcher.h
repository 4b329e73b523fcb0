/*
 * launcher.h: the messages between berth-mounter and its plugin launcher.
 *
 * Fixed-size structs on a SOCK_SEQPACKET socketpair, checked by exact
 * size and NUL termination on receipt. The mounter has already validated
 * everything; the launcher checks again that the message is well formed.
 */
#ifndef BERTH_MOUNTER_LAUNCHER_H
#define BERTH_MOUNTER_LAUNCHER_H

#include <stdint.h>
#include <sys/types.h>

#define LAUNCH_ARGS 32
#define LAUNCH_STR 256

/* Mounter to launcher; with three descriptors: exe, stdout, stderr. */
struct launch_req {
	uint32_t nargs;
	uint64_t caps;			/* bit n: capability n */
	char args[LAUNCH_ARGS][LAUNCH_STR];
	char root[LAUNCH_STR];		/* mount root, relative to data dir */
	char sockdir[LAUNCH_STR];	/* socket dir, relative to data dir */
	char endpoint[LAUNCH_STR];	/* "CSI_ENDPOINT=unix://..." */
};

enum launch_type { LAUNCH_STARTED = 1, LAUNCH_FAILED, LAUNCH_EXITED };

/* Launcher to mounter; LAUNCH_STARTED carries the plugin's pidfd. */
struct launch_msg {
	int32_t type;
	int32_t pid;
	int32_t err;			/* LAUNCH_FAILED: errno */
	int32_t status;			/* LAUNCH_EXITED: wait status */
	char what[64];			/* LAUNCH_FAILED: the step */
};

/* Fork the launcher; returns the mounter's end of its socket or -errno. */
int launcher_spawn(int data_fd, pid_t *pid);

#endif
