/*
 * launcher.h: the messages between berth-mounter and its plugin launcher.
 *
 * Fixed-size structs on a SOCK_SEQPACKET socketpair, checked by exact
 * size and NUL termination on receipt. The mounter has already validated
 * everything; the launcher checks again that the message is well formed.
 */
#ifndef BERTH_MOUNTER_LAUNCHER_H
#define BERTH_MOUNTER_LAUNCHER_H

#include <stddef.h>
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

/* Launcher to mounter; with the plugin's pidfd when err is 0. */
struct launch_msg {
	int32_t pid;
	int32_t err;			/* errno of the step that failed */
	char what[64];			/* that step */
};

/* One datagram with nfd (at most 3) descriptors; 0 or -errno. */
int fdmsg_send(int sock, const void *buf, size_t len, const int *fds,
    int nfd);
/*
 * One datagram of exactly len bytes: the number of descriptors received
 * (at most nfd; extras are closed), -EPIPE at end of file, -EBADMSG for a
 * datagram of another size (its descriptors closed), or -errno.
 */
int fdmsg_recv(int sock, void *buf, size_t len, int *fds, int nfd,
    int flags);
/* Fork the launcher; returns the mounter's end of its socket or -errno. */
int launcher_spawn(int data_fd);

#endif
