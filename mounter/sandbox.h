/*
 * sandbox.h: the mounter's confinement, applied once at start.
 */
#ifndef BERTH_MOUNTER_SANDBOX_H
#define BERTH_MOUNTER_SANDBOX_H

#include <sys/capability.h>

/* The capabilities the mounter keeps; SECURITY.md says why each. */
extern const cap_value_t mounter_caps[];
extern const int mounter_ncaps;

/* Clean environment, not dumpable. */
int sandbox_prepare(void);
/* Keep only mounter_caps, no_new_privs, then the seccomp allow-list. */
int sandbox_lock(void);
/* The seccomp allow-list alone (the unit test installs it in a child). */
int sandbox_seccomp(void);
/*
 * The launcher's filter, which every plugin it starts inherits: all but
 * plugin_denied[], new user namespaces and setuid/setgid mode bits.
 */
int sandbox_plugin_filter(void);

#endif
