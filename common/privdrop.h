/*
 * privdrop.h: giving up privileges, with libcap.
 *
 * priv_drop_to_user() is how the supervisor and the registry become
 * unprivileged: supplementary groups cleared, gid and uid set in all three
 * slots, every capability set empty (effective, permitted, inheritable,
 * ambient, bounding), no_new_privs. priv_keep_only() is the mounter's: it
 * stays uid 0 but keeps only the listed capabilities, with the bounding
 * set reduced to them. Both verify the result and return -errno on any
 * failure; callers treat a failure as fatal.
 */
#ifndef BERTH_PRIVDROP_H
#define BERTH_PRIVDROP_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/capability.h>

struct priv_user {
	uid_t uid;
	gid_t gid;
	char name[64];
};

/* 0, or -ENOENT when there is no such user (err says what to do). */
int priv_lookup_user(const char *name, struct priv_user *u, char *err,
    size_t errlen);
int priv_drop_to_user(const struct priv_user *u);
int priv_keep_only(const cap_value_t *keep, int n);
/*
 * Root's paths. Root never resolves a path through a directory that a
 * less trusted user owns or can write: there, a rename or a symlink swap
 * between root's check and root's act would redirect it.
 *
 * priv_trusted_parent() walks an absolute path from "/", one component
 * at a time (openat with O_NOFOLLOW), and returns an O_PATH descriptor of
 * the directory that holds the last component, with that component's
 * name in last. Every directory on the way must be owned by root and not
 * writable by group or others, or be sticky (like /tmp), where only an
 * entry's owner can rename it, and then the next entry must be root's.
 * A symlink on the way is followed only when root owns it (it sits in a
 * directory only root can change); "." and ".." are refused. -errno with
 * a one-line reason in err.
 *
 * priv_open_trusted() then opens the last component itself, never
 * through a symlink, with flags (O_NOFOLLOW | O_CLOEXEC added), and
 * refuses it unless root owns it and group and others cannot write it.
 */
int priv_trusted_parent(const char *path, char *last, size_t lastlen,
    char *err, size_t errlen);
int priv_open_trusted(const char *path, int flags, char *err, size_t errlen);
/* Is st something only root can change: root's, not group/other-writable. */
int priv_root_only(const struct stat *st);
/* Kill the caller with SIGKILL when its parent dies; see privdrop.c. */
int priv_die_with_parent(pid_t expected_parent);

#endif
