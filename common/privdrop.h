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
/* Kill the caller with SIGKILL when its parent dies; see privdrop.c. */
int priv_die_with_parent(pid_t expected_parent);

#endif
