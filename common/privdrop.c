/*
 * privdrop.c: dropping users, groups and capabilities (see privdrop.h).
 *
 * Order matters: the bounding set can only be reduced while CAP_SETPCAP is
 * still held, so it goes first; the uid change follows; then the process
 * sets are cleared explicitly (rather than trusting the kernel's uid-change
 * rule, which SECBIT_KEEP_CAPS could defeat) and read back.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

#include "privdrop.h"

int
priv_lookup_user(const char *name, struct priv_user *u, char *err,
    size_t errlen)
{
	struct passwd *pw;

	errno = 0;
	if ((pw = getpwnam(name)) == NULL) {
		snprintf(err, errlen, "user '%s' does not exist: create it "
		    "(useradd --system --no-create-home --shell /usr/sbin/nologin "
		    "%s) or name another in the config", name, name);
		return -ENOENT;
	}
	if (pw->pw_uid == 0) {
		snprintf(err, errlen, "user '%s' is root: berth needs an "
		    "unprivileged user there", name);
		return -EPERM;
	}
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	snprintf(u->name, sizeof(u->name), "%s", name);
	return 0;
}

/* Drop every capability not in keep from the bounding set. */
static int
reduce_bounding(const cap_value_t *keep, int n)
{
	cap_value_t cap;
	int i, kept;

	for (cap = 0; cap_get_bound(cap) >= 0; cap++) {
		for (kept = 0, i = 0; i < n; i++)
			if (keep[i] == cap)
				kept = 1;
		if (kept || cap_get_bound(cap) == 0)
			continue;
		if (cap_drop_bound(cap) < 0)
			return -errno;
	}
	return 0;
}

/* Set the process sets to exactly keep (effective and permitted). */
static int
set_caps(const cap_value_t *keep, int n)
{
	cap_t caps;
	int r = 0;

	if ((caps = cap_init()) == NULL)
		return -errno;
	if (n > 0 && (cap_set_flag(caps, CAP_EFFECTIVE, n, keep, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_PERMITTED, n, keep, CAP_SET) < 0))
		r = -errno;
	if (r == 0 && cap_set_proc(caps) < 0)
		r = -errno;
	cap_free(caps);
	return r;
}

static int
clear_ambient(void)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	return 0;
}

int
priv_drop_to_user(const struct priv_user *u)
{
	int r;

	if ((r = clear_ambient()) < 0 || (r = reduce_bounding(NULL, 0)) < 0)
		return r;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return -errno;
	if (setgroups(0, NULL) < 0 ||
	    setresgid(u->gid, u->gid, u->gid) < 0 ||
	    setresuid(u->uid, u->uid, u->uid) < 0)
		return -errno;
	if ((r = set_caps(NULL, 0)) < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* Verify: there must be no way back. */
	if (getuid() != u->uid || geteuid() != u->uid || getgid() != u->gid ||
	    getegid() != u->gid || setuid(0) == 0 || setgid(0) == 0)
		return -EPERM;
	return 0;
}

int
priv_keep_only(const cap_value_t *keep, int n)
{
	cap_flag_value_t v;
	cap_t caps;
	int r, i;

	if ((r = clear_ambient()) < 0 || (r = reduce_bounding(keep, n)) < 0)
		return r;
	if ((r = set_caps(keep, n)) < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if ((caps = cap_get_proc()) == NULL)
		return -errno;
	for (i = 0; i < n; i++)
		if (cap_get_flag(caps, keep[i], CAP_EFFECTIVE, &v) < 0 ||
		    v != CAP_SET)
			r = -EPERM;
	cap_free(caps);
	return r;
}

/*
 * PR_SET_PDEATHSIG fires when the thread that forked us exits. It is reset
 * by a credential change, so helpers call this after dropping. If the
 * parent died before the call, getppid() no longer matches: exit at once.
 */
int
priv_die_with_parent(pid_t expected_parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	if (getppid() != expected_parent)
		return -ESRCH;
	return 0;
}
