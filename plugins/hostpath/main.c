/*
 * main.c: berth-csi-hostpath's flags and start-up.
 *
 * Reads its flags and the endpoint (--endpoint, or CSI_ENDPOINT unless
 * --strict), makes sure the state directory exists, and hands over to
 * the gRPC server loop (server.c). It must not serve anything itself:
 * every RPC goes through server.c's dispatch.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hostpath.h"
#include "log.h"

static void
usage(void)
{
	fprintf(stderr, "usage: berth-csi-hostpath --node-id ID "
	    "--state-dir DIR [--endpoint unix:///PATH] [--strict]\n"
	    "    [--no-mount-group] [--mode node|controller|monolith]\n"
	    "    [--expand-offline] [--no-snapshots] [-v]\n"
	    "    [--fault-slow-start-ms N] [--fault-probe-fail-after N]\n"
	    "    [--fault-probe-no-ready] [--fault-validate-no-confirmed]\n"
	    "    [--fault-unknown-capabilities] [--fault-exit-in RPCNAME]\n"
	    "    [--fault-minimal] [--fault-slow-probe N:MS]\n"
	    "    [--fault-slow-reply RPCNAME:MS]\n"
	    "    [--topology KEY=VALUE] [--max-volumes N]\n"
	    "    [--no-single-node-multi-writer] [--block] [--fuse]\n"
	    "Without --endpoint, CSI_ENDPOINT=unix:///path/csi.sock in the "
	    "environment\nnames the socket; --strict reads --endpoint only.\n");
	exit(EX_USAGE);
}

static int
number(const char *flag, const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < 0 || v > INT_MAX)
		fatalx("%s: '%s' is not a non-negative number", flag, s);
	return (int)v;
}

/*
 * The endpoint from --endpoint, else (lenient only) from CSI_ENDPOINT.
 * A definition's arg is passed as written, so "$CSI_ENDPOINT" arrives
 * unexpanded: said so, rather than made a socket of.
 */
static const char *
endpoint_choose(const struct hostpath *hp, const char *flag)
{
	const char *env = getenv("CSI_ENDPOINT"), *from = "--endpoint";

	if (flag == NULL && hp->strict)
		fatalx("--strict: --endpoint unix:///path/csi.sock is "
		    "required; CSI_ENDPOINT%s is not read in strict mode",
		    env != NULL ? ", though set," : "");
	if (flag == NULL) {
		if (env == NULL || *env == '\0')
			fatalx("no endpoint: give --endpoint "
			    "unix:///path/csi.sock or set CSI_ENDPOINT");
		flag = env;
		from = "CSI_ENDPOINT";
	}
	if (strchr(flag, '$') != NULL)
		fatalx("%s %s: looks like a shell variable that was never "
		    "expanded; give the socket's path", from, flag);
	if (endpoint_path(flag) == NULL)
		fatalx("%s %s: not unix:///absolute/path (or /absolute/path) "
		    "of at most %d bytes", from, flag, SOCKET_PATH_MAX);
	return flag;
}

/* The state directory's name, made if missing, pinned (O_PATH). */
static int
pin_dir(const struct hostpath *hp, int state, const char *name)
{
	int fd;

	if (mkdirat(state, name, 0700) < 0 && errno != EEXIST)
		fatal("mkdir %s/%s", hp->state_dir, name);
	if ((fd = tree_open(state, name, O_PATH | O_DIRECTORY, 0)) < 0) {
		errno = -fd;
		fatal("open %s/%s (a symlink is refused)", hp->state_dir, name);
	}
	return fd;
}

enum {
	OPT_NODE_ID = 256, OPT_STATE_DIR, OPT_MODE, OPT_SLOW_START,
	OPT_PROBE_FAIL_AFTER, OPT_PROBE_NO_READY, OPT_VALIDATE_NO_CONFIRMED,
	OPT_UNKNOWN_CAPS, OPT_EXIT_IN, OPT_MINIMAL, OPT_SLOW_PROBE, OPT_SLOW_REPLY,
	OPT_ENDPOINT, OPT_STRICT, OPT_TOPOLOGY, OPT_MAX_VOLUMES, OPT_NO_SNMW,
	OPT_EXPAND_OFFLINE, OPT_NO_MOUNT_GROUP,
	OPT_NO_SNAPSHOTS,
	OPT_BLOCK,	/* block.c */
	OPT_FUSE,	/* fuse.c */
};

static const struct option options[] = {
	{ "node-id", required_argument, NULL, OPT_NODE_ID },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "endpoint", required_argument, NULL, OPT_ENDPOINT },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "expand-offline", no_argument, NULL, OPT_EXPAND_OFFLINE },
	{ "no-mount-group", no_argument, NULL, OPT_NO_MOUNT_GROUP },
	{ "fault-slow-start-ms", required_argument, NULL, OPT_SLOW_START },
	{ "fault-probe-fail-after", required_argument, NULL,
	    OPT_PROBE_FAIL_AFTER },
	{ "fault-probe-no-ready", no_argument, NULL, OPT_PROBE_NO_READY },
	{ "fault-validate-no-confirmed", no_argument, NULL,
	    OPT_VALIDATE_NO_CONFIRMED },
	{ "fault-unknown-capabilities", no_argument, NULL, OPT_UNKNOWN_CAPS },
	{ "fault-exit-in", required_argument, NULL, OPT_EXIT_IN },
	{ "fault-minimal", no_argument, NULL, OPT_MINIMAL },
	{ "fault-slow-probe", required_argument, NULL, OPT_SLOW_PROBE },
	{ "fault-slow-reply", required_argument, NULL, OPT_SLOW_REPLY },
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "max-volumes", required_argument, NULL, OPT_MAX_VOLUMES },
	{ "no-single-node-multi-writer", no_argument, NULL, OPT_NO_SNMW },
	{ "no-snapshots", no_argument, NULL, OPT_NO_SNAPSHOTS },
	{ "block", no_argument, NULL, OPT_BLOCK },
	{ "fuse", no_argument, NULL, OPT_FUSE },		/* fuse.c */
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char *argv[])
{
	struct hostpath hp;
	const char *endpoint = NULL;
	char *state = NULL;
	int ch, fd, verbose = 0;
	size_t i;

	memset(&hp, 0, sizeof(hp));
	hp.mode = HOSTPATH_MONOLITH;
	hp.fault_probe_fail_after = -1;
	while ((ch = getopt_long(argc, argv, "v", options, NULL)) != -1) {
		switch (ch) {
		case OPT_NODE_ID:
			hp.node_id = optarg;
			break;
		case OPT_STATE_DIR:
			hp.state_dir = optarg;
			break;
		case OPT_MODE:
			if (strcmp(optarg, "node") == 0)
				hp.mode = HOSTPATH_NODE;
			else if (strcmp(optarg, "controller") == 0)
				hp.mode = HOSTPATH_CONTROLLER;
			else if (strcmp(optarg, "monolith") == 0)
				hp.mode = HOSTPATH_MONOLITH;
			else
				usage();
			break;
		case OPT_ENDPOINT:
			endpoint = optarg;
			break;
		case OPT_STRICT:
			hp.strict = true;
			break;
		case OPT_EXPAND_OFFLINE:
			hp.expand_offline = true;
			break;
		case OPT_NO_MOUNT_GROUP:
			hp.no_mount_group = true;
			break;
		case OPT_SLOW_START:
			hp.fault_slow_start_ms = number("--fault-slow-start-ms",
			    optarg);
			break;
		case OPT_PROBE_FAIL_AFTER:
			hp.fault_probe_fail_after = number(
			    "--fault-probe-fail-after", optarg);
			break;
		case OPT_PROBE_NO_READY:
			hp.fault_probe_no_ready = true;
			break;
		case OPT_VALIDATE_NO_CONFIRMED:
			hp.fault_validate_no_confirmed = true;
			break;
		case OPT_UNKNOWN_CAPS:
			hp.fault_unknown_caps = true;
			break;
		case OPT_EXIT_IN:
			hp.fault_exit_in = optarg;
			break;
		case OPT_MINIMAL:
			hp.fault_minimal = true;
			hp.fault_probe_no_ready = true;
			hp.fault_unknown_caps = true;
			break;
		case OPT_SLOW_PROBE: {
			char *colon = strchr(optarg, ':');

			if (colon == NULL)
				fatalx("--fault-slow-probe %s: write N:MS, for "
				    "example 3:2000", optarg);
			*colon = '\0';
			hp.fault_slow_probe = number("--fault-slow-probe",
			    optarg);
			hp.fault_slow_probe_ms = number("--fault-slow-probe",
			    colon + 1);
			break;
		}
		case OPT_SLOW_REPLY: {
			char *colon = strrchr(optarg, ':');

			if (colon == NULL)
				fatalx("--fault-slow-reply %s: write RPCNAME:MS, "
				    "for example NodePublishVolume:2000", optarg);
			*colon = '\0';
			hp.fault_slow_reply = optarg;
			hp.fault_slow_reply_ms = number("--fault-slow-reply",
			    colon + 1);
			break;
		}
		case OPT_TOPOLOGY:
			topology_flag(&hp, optarg);
			break;
		case OPT_MAX_VOLUMES:
			hp.max_volumes = number("--max-volumes", optarg);
			break;
		case OPT_NO_SNMW:
			hp.no_single_node_multi_writer = true;
			break;
		case OPT_NO_SNAPSHOTS:
			hp.no_snapshots = true;
			break;
		case OPT_BLOCK:
			hostpath_block = true;
			break;
		case OPT_FUSE:	/* mounts that die with the plugin (fuse.c) */
			hp.fuse = true;
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || hp.node_id == NULL || hp.state_dir == NULL)
		usage();
	log_init("berth-csi-hostpath", verbose);

	endpoint = endpoint_choose(&hp, endpoint);
	/* A relative state directory is the task's: under its cwd. */
	if (mkdir(hp.state_dir, 0700) < 0 && errno != EEXIST)
		fatal("mkdir %s", hp.state_dir);
	if (hp.state_dir[0] != '/') {
		if ((state = realpath(hp.state_dir, NULL)) == NULL)
			fatal("realpath %s", hp.state_dir);
		hp.state_dir = state;
	}
	if ((size_t)snprintf(hp.volumes_dir, sizeof(hp.volumes_dir),
	    "%s/volumes", hp.state_dir) >= sizeof(hp.volumes_dir))
		fatalx("--state-dir %s: path too long", hp.state_dir);
	/* From here on, every volume is reached from this descriptor. */
	if ((fd = open(hp.state_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		fatal("open %s", hp.state_dir);
	hp.volumes_fd = pin_dir(&hp, fd, "volumes");
	hp.staged_fd = -1;
	if (hp.strict)
		hp.staged_fd = pin_dir(&hp, fd, "staged");
	close(fd);

	ch = server_run(&hp, endpoint);
	close(hp.volumes_fd);
	if (hp.staged_fd >= 0)
		close(hp.staged_fd);
	/* Targets still published stay; only the memory of them goes. */
	for (i = 0; i < HOSTPATH_MAX_CREATED; i++)
		free(hp.created[i]);
	free(state);
	return ch;
}
