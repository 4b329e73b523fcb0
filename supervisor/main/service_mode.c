/*
 * service_mode.c: the supervisor's start in service mode, when systemd
 * starts it as its own user and holds the helpers' sockets (see
 * common/service.h and contrib/systemd/). It replaces spawn mode's
 * directories, helpers and privilege drop: systemd made all three.
 */
#include <sys/prctl.h>

#include "notify.h"
#include "privdrop.h"
#include "service.h"
#include "service_mode.h"

/*
 * Nothing may be left to drop (ambient or inherited capabilities), and
 * exec must not gain any.
 */
static int
confine(void)
{
	cap_t now, none;
	int same;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	if ((now = cap_get_proc()) == NULL)
		return -1;
	if ((none = cap_init()) == NULL) {
		cap_free(now);
		return -1;
	}
	same = cap_compare(now, none) == 0;
	cap_free(now);
	cap_free(none);
	return same ? 0 : -1;
}

/* systemd starts the helper when we connect. */
static int
connect_helper(const char *run_dir, const char *name, const char *sock)
{
	char err[512];
	int fd;

	if ((fd = service_connect(run_dir, sock, err, sizeof(err))) < 0)
		fatalx("connect_helper: %s: %s", name, err);
	return fd;
}

void
service_mode_start(const char *run_dir, int *mounter_fd, int *registry_fd)
{
	notify_status("connecting to berth-mounter and berth-registry");
	*mounter_fd = connect_helper(run_dir, "berth-mounter",
	    SERVICE_MOUNTER_SOCKET);
	*registry_fd = connect_helper(run_dir, "berth-registry",
	    SERVICE_REGISTRY_SOCKET);
	if (confine() < 0)
		fatalx("service_mode_start: service mode runs with no "
		    "capability and no_new_privs, but we hold capabilities "
		    "(check the unit's CapabilityBoundingSet=)");
}
