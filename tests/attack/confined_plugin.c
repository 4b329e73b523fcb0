/*
 * confined_plugin.c: a stand-in for a privileged CSI plugin, for the
 * attack suite. It mounts a tmpfs on each path it is given (one outside
 * its mount root, which the host must not see; one inside, which the host
 * must see), then listens on CSI_ENDPOINT and waits to be signalled.
 * Two more arguments make it try what a compromised plugin would, in
 * order, saying how each went on stdout: --enter=NSFILE (setns into that
 * namespace) and --sethostname=NAME.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>

int
main(int argc, char **argv)
{
	const char *ep = getenv("CSI_ENDPOINT");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int i, s;

	for (i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--enter=", 8) == 0) {
			int fd = open(argv[i] + 8, O_RDONLY | O_CLOEXEC);

			printf("confined_plugin: setns %s: %s\n", argv[i] + 8,
			    fd < 0 || setns(fd, 0) < 0 ? strerror(errno) :
			    "done");
			if (fd >= 0)
				close(fd);
		} else if (strncmp(argv[i], "--sethostname=", 14) == 0)
			printf("confined_plugin: sethostname %s: %s\n",
			    argv[i] + 14, sethostname(argv[i] + 14,
			    strlen(argv[i] + 14)) < 0 ? strerror(errno) :
			    "done");
		else
			fprintf(stderr, "confined_plugin: mount tmpfs on %s: "
			    "%s\n", argv[i], mount("tmpfs", argv[i], "tmpfs",
			    0, "size=1m") < 0 ? strerror(errno) : "done");
	}
	if (ep == NULL || strncmp(ep, "unix://", 7) != 0) {
		fprintf(stderr, "confined_plugin: no CSI_ENDPOINT\n");
		return 2;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", ep + 7);
	unlink(sun.sun_path);
	if ((s = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
	    bind(s, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(s, 1) < 0) {
		fprintf(stderr, "confined_plugin: listen on %s: %s\n",
		    sun.sun_path, strerror(errno));
		return 3;
	}
	printf("confined_plugin: ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
