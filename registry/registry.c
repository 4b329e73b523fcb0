/*
 * registry.c: berth-registry, the owner of berth's persisted state.
 *
 * Started by berth-supervisor as root with its socket as descriptor 3, it
 * drops at once to its own user (no capabilities, no_new_privs) and then
 * serves the supervisor. It never needs a privilege: its database lives in
 * a directory that user owns. In service mode systemd starts it as that
 * user on berth-registry.socket, and it serves the first connection from
 * the supervisor's user (service.c).
 *
 * Exit codes: 0 when the supervisor says stop or hangs up; 65 (EX_DATAERR)
 * when the database is corrupt or not the registry's, 78 (EX_CONFIG) when
 * a newer berth-registry wrote it, 73 (EX_CANTCREAT) when it cannot be
 * opened or created. A database that is refused is never touched.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "notify.h"
#include "privdrop.h"
#include "registry.h"
#include "service.h"

static void
usage(void)
{
	fprintf(stderr, "usage: berth-registry [--spawned | --peer-user USER] "
	    "--data-dir DIR [--peer-cgroup DIR] [--user NAME] [--verbose]\n"
	    "berth-registry is started by berth-supervisor or "
	    "berth-registry.socket; see berth-registry(8).\n");
	exit(EX_USAGE);
}

/* A Shutdown read in the same turn as writes: commit and answer them. */
static void
registry_before_close(struct helper *h)
{
	batch_flush(h->arg);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spawned", no_argument, NULL, 's' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "user", required_argument, NULL, 'u' },
		{ "peer-user", required_argument, NULL, 'p' },
		{ "peer-cgroup", required_argument, NULL, 'G' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	static struct registry reg;
	struct helper *h = &reg.h;
	struct priv_user u;
	const char *data_dir = NULL, *user = NULL;
	const char *peer_user = SERVICE_PEER_USER, *peer_cgroup = NULL;
	int spawned = 0, verbose = 0, ch, r;
	pid_t parent;
	char err[256];

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's': spawned = 1; break;
		case 'd': data_dir = optarg; break;
		case 'u': user = optarg; break;
		case 'p': peer_user = optarg; break;
		case 'G': peer_cgroup = optarg; break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	if (data_dir == NULL || optind != argc)
		usage();
	log_init("berth-registry", verbose);
	/* Spawn mode: the socketpair; service mode: systemd's listener. */
	if (service_helper_peer(spawned, peer_user, peer_cgroup, &parent, err,
	    sizeof(err)) < 0)
		fatalx("main: %s", err);
	if ((r = helper_close_inherited(BERTH_HELPER_FD)) < 0)
		fatalx("main: closing inherited descriptors: %s", strerror(-r));
	if ((r = notify_init()) < 0)
		log_warnx("main: NOTIFY_SOCKET: %s; not telling systemd",
		    strerror(-r));
	if (geteuid() == 0) {
		if (user == NULL)
			fatalx("main: refusing to run as root: name the "
			    "registry's user with --user");
		if (priv_lookup_user(user, &u, err, sizeof(err)) < 0) {
			log_errx("main: %s", err);
			return EX_CONFIG;
		}
		if ((r = priv_drop_to_user(&u)) < 0)
			fatalx("main: dropping to user %s: %s", user,
			    strerror(-r));
	}
	/* After the drop: a credential change resets the parent-death signal. */
	if (spawned && (r = priv_die_with_parent(parent)) < 0)
		fatalx("main: supervisor pid %ld is gone", (long)parent);

	if ((r = store_open(&reg.store, data_dir, err, sizeof(err))) != 0) {
		log_errx("main: %s", err);
		return r;
	}
	h->name = "berth-registry";
	h->role = BERTH__ROLE__ROLE_REGISTRY;
	h->dispatch = registry_dispatch;
	h->arg = &reg;
	h->before_close = registry_before_close;
	/*
	 * Three priorities; events get the middle one by default. The group
	 * commit runs at the lowest, once nothing readable is left.
	 */
	if ((h->base = event_base_new()) == NULL ||
	    event_base_priority_init(h->base, 3) < 0)
		fatalx("main: cannot set up the event loop");
	if ((r = helper_init(h, BERTH_HELPER_FD)) < 0)
		fatalx("main: event loop: %s", strerror(-r));
	if (batch_init(&reg) < 0)
		fatalx("main: cannot set up the group commit");
	events_init(&reg);
	log_info("main: serving as uid %ld; %s at index %llu", (long)getuid(),
	    reg.store.path, (unsigned long long)reg.store.index);
	if (notify_watchdog_start(h->base) < 0)
		fatalx("main: watchdog timer");
	notify_ready("serving supervisor pid %ld; %s at index %llu",
	    (long)parent, reg.store.path,
	    (unsigned long long)reg.store.index);
	r = helper_serve(h);
	notify_stopping("stopping at index %llu: supervisor pid %ld hung up "
	    "or asked us to", (unsigned long long)reg.store.committed,
	    (long)parent);
	batch_free(&reg);
	events_free(&reg);
	log_info("main: stopping at index %llu after %llu requests in %llu "
	    "commits", (unsigned long long)reg.store.committed,
	    (unsigned long long)reg.batched, (unsigned long long)reg.batches);
	store_close(&reg.store);
	notify_free();
	event_base_free(h->base);
	return r;
}
