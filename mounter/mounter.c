/*
 * mounter.c: berth-mounter, the only privileged process.
 *
 * Started as root by berth-supervisor (spawn mode) with its socket as
 * descriptor 3. It checks that socket's peer, sheds everything it does not
 * need (environment, inherited descriptors, dumpability, all capabilities
 * but mounter_caps), locks itself in its seccomp allow-list and then serves
 * requests. It takes its data and run directories from its command line,
 * which root wrote, never from its peer.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "helper.h"
#include "privdrop.h"
#include "sandbox.h"

static void
usage(void)
{
	fprintf(stderr, "usage: berth-mounter --spawned --data-dir DIR "
	    "--run-dir DIR [--verbose]\n"
	    "berth-mounter is started by berth-supervisor; see "
	    "berth-mounter(8).\n");
	exit(EX_USAGE);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spawned", no_argument, NULL, 's' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct helper h = { 0 };
	const char *data_dir = NULL, *run_dir = NULL;
	int spawned = 0, verbose = 0, ch, data_fd, r;
	char err[256];

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's': spawned = 1; break;
		case 'd': data_dir = optarg; break;
		case 'r': run_dir = optarg; break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	if (!spawned || data_dir == NULL || run_dir == NULL || optind != argc)
		usage();
	log_init("berth-mounter", verbose);
	if (geteuid() != 0)
		fatalx("main: berth-mounter must start as root (it keeps only "
		    "CAP_SYS_ADMIN); start it through berth-supervisor");
	if (helper_check_socket(BERTH_HELPER_FD, getppid(), err,
	    sizeof(err)) < 0)
		fatalx("main: %s", err);
	if ((r = priv_die_with_parent(getppid())) < 0)
		fatalx("main: cannot tie our life to the supervisor's: %s",
		    strerror(-r));
	if ((r = helper_close_inherited(BERTH_HELPER_FD)) < 0)
		fatalx("main: closing inherited descriptors: %s", strerror(-r));
	if ((r = sandbox_prepare()) < 0)
		fatalx("main: sandbox: %s", strerror(-r));
	/* Pinned now: every path the mounter will use is resolved from it. */
	data_fd = open(data_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (data_fd < 0)
		fatal("main: data directory %s", data_dir);

	h.name = "berth-mounter";
	h.role = BERTH__ROLE__ROLE_MOUNTER;
	if ((r = helper_init(&h, BERTH_HELPER_FD)) < 0)
		fatalx("main: event loop: %s", strerror(-r));
	if ((r = sandbox_lock()) < 0)
		fatalx("main: locking the sandbox: %s", strerror(-r));
	log_info("main: serving; data %s, run %s", data_dir, run_dir);
	r = helper_serve(&h);
	close(data_fd);
	event_base_free(h.base);
	return r;
}
