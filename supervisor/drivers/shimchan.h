/*
 * shimchan.h: the supervisor's side of a sandboxed task's channel to its
 * shim (the protocol is in shim/shim.h): what to run, a stop, the shim's
 * reports, a restarted supervisor's way back in through ctl.sock, and the
 * status file a shim leaves when it ended unseen.
 *
 * Calls take the channel's descriptor and keep no state. Must not: send
 * anything but whole datagrams, or take a report for another run's.
 */
#ifndef BERTH_SHIMCHAN_H
#define BERTH_SHIMCHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim.h"

struct shimchan_spec {
	const char *command;		/* absolute */
	char *const *args;		/* after the command */
	size_t nargs;
	char *const *env;		/* "K=V" */
	size_t nenv;
	const char *dir;		/* the task's working dir; NULL: "/" */
	uint64_t run_id;
	uid_t sv_uid;			/* who may come back via ctl.sock */
	int64_t max_bytes;		/* 0: the shim's defaults */
	int max_files;
	bool plugin;			/* a CSI plugin: umask 007 */
};

/* Everything before the task starts: 0, or -errno (-E2BIG: a string
 * over a datagram, -EINVAL: a relative command or an entry with no '='). */
int shimchan_send_spec(int fd, const struct shimchan_spec *s);
/* sig to every process of the task; SIGKILL to the rest after grace. */
int shimchan_stop(int fd, int sig, unsigned grace_ms);

struct shimchan_msg {
	uint32_t type;			/* SHIM_MSG_STARTED or SHIM_MSG_EXIT */
	struct shim_started started;
	struct shim_exit exit;
};

/* One report: 1 and *m, 0 when the channel closed, -EAGAIN when none is
 * there (a non-blocking fd), -EPROTO for anything else. */
int shimchan_recv(int fd, struct shimchan_msg *m);

/* A connection to <status_dir>/ctl.sock: the new channel, or -errno. */
int shimchan_connect(const char *status_dir);

/* The shim's status file for run_id: 1 with *signaled and *code, 0 when
 * there is none for this run, -errno. */
int shimchan_read_status(const char *status_dir, uint64_t run_id,
    bool *signaled, int *code);

#endif
