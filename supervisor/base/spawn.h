/*
 * spawn.h: starting berth-mounter and berth-registry in spawn mode.
 */
#ifndef BERTH_SPAWN_H
#define BERTH_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* Where helper binary name lives: beside our executable, else libexecdir. */
int spawn_helper_path(const char *name, char *buf, size_t n);
/*
 * Start path with argv, a clean environment, its own session, stdin on
 * /dev/null, and one end of a new SOCK_SEQPACKET socketpair as descriptor
 * 3. Returns 0 with *pid and our end in *fd, or -errno.
 */
int spawn_helper(const char *path, char *const argv[], pid_t *pid, int *fd);
/* "exited with status 3", "was killed by signal 9 (SIGKILL)". */
const char *spawn_describe_status(int status, char *buf, size_t n);

#endif
