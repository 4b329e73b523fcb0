/*
 * service.h: service mode, where systemd starts berth-mounter and
 * berth-registry through socket units (contrib/systemd/) and
 * berth-supervisor, running as its own user, connects to them.
 *
 * The helpers' code after start-up is the same as in spawn mode: the one
 * accepted connection is moved to BERTH_HELPER_FD and checked like the
 * socketpair of spawn mode. What differs is who the peer may be: in spawn
 * mode the parent's pid, in service mode a process of the supervisor's
 * user (SO_PEERCRED at connect time) and, with --peer-cgroup, in the
 * supervisor's own cgroup (which a task cannot join).
 */
#ifndef BERTH_SERVICE_H
#define BERTH_SERVICE_H

#include <stddef.h>
#include <sys/types.h>

/* In the run directory; config.c checks that their paths fit. */
#define SERVICE_MOUNTER_SOCKET "mounter.sock"
#define SERVICE_REGISTRY_SOCKET "registry.sock"
/* The user whose processes may connect, unless --peer-user says another. */
#define SERVICE_PEER_USER "berth"

/*
 * Take the one listening SOCK_SEQPACKET unix socket systemd passed, wait
 * for a connection from a process of peer_uid, in the cgroup v2
 * directory peer_cgroup unless it is NULL (closing any other with a log
 * line), close the listener and move the connection to BERTH_HELPER_FD.
 * 0 with *peer_pid set, or -1 with err set.
 */
int service_accept(uid_t peer_uid, const char *peer_cgroup, pid_t *peer_pid,
    char *err, size_t errlen);
/*
 * A helper's start: in spawn mode check the socketpair on BERTH_HELPER_FD
 * (the peer must be our parent); otherwise service_accept() a process of
 * peer_user in peer_cgroup. 0 with *peer_pid set, or -1 with err set.
 */
int service_helper_peer(int spawned, const char *peer_user,
    const char *peer_cgroup, pid_t *peer_pid, char *err, size_t errlen);
/*
 * The supervisor's side: connect to run_dir/name. Returns a non-blocking,
 * close-on-exec descriptor, or -1 with err saying what to start.
 */
int service_connect(const char *run_dir, const char *name, char *err,
    size_t errlen);

#endif
