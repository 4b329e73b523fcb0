/*
 * fuzz_verbs.c: libFuzzer target that runs the mounter's verbs, not only
 * its checks: protobuf-c decoding, request_check(), then mounter_act()
 * on a scratch data directory (a tmpfs) in a private mount namespace.
 * Needs root (scripts/fuzz.sh runs it so in CI); nothing it does reaches
 * the host (its tree is a tmpfs over /run in its own mount namespace),
 * and the tree is renewed every RENEW inputs so that directories and
 * mounts do not pile up.
 *
 * Beyond "no crash": every mount made since the start lies beneath the
 * scratch directory, and a refused request never leaves a descriptor.
 * After a PrepareVolume it mounts a tmpfs on the target, as the plugin
 * would, so that later inputs can bind, unbind and clean up real mounts.
 * StartPlugin reaches the definition, its executable and the logs; the
 * launcher is absent (-1), so no process is ever started.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "mounter.h"

#define RENEW 4000

static struct mounter m;
static const char scratch[] = "/run/berth-fuzz-verbs";
static int cwd_fd, runs;
static unsigned max_mount_id;

static void
die(const char *what)
{
	fprintf(stderr, "fuzz_verbs: %s: %s\n", what, strerror(errno));
	abort();
}

/* Every mount newer than the start lies beneath the scratch directory. */
static void
check_mounts(bool init)
{
	char line[4096], mp[2048];
	unsigned id;
	FILE *f;

	if ((f = fopen("/proc/self/mountinfo", "r")) == NULL)
		die("/proc/self/mountinfo");
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%u %*u %*s %*s %2047s", &id, mp) != 2)
			continue;
		if (init && id > max_mount_id)
			max_mount_id = id;
		else if (!init && id > max_mount_id && strncmp(mp, scratch,
		    strlen(scratch)) != 0) {
			fprintf(stderr, "fuzz_verbs: a mount escaped: %s", line);
			abort();
		}
	}
	fclose(f);
}

static void
write_def(const char *name, const char *text)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/plugins/%s.conf", scratch, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

/* A fresh tmpfs with data/ and plugins/ (two definitions). */
static void
renew(void)
{
	static char data[64];
	char plugins[64];

	if (m.data_fd > 0) {
		close(m.data_fd);
		close(m.plugins_fd);
		if (umount2(scratch, MNT_DETACH) < 0)
			die("unmounting the scratch tree");
	}
	if (mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV,
	    "size=16m,nr_inodes=20000,mode=0755") < 0)
		die("mounting the scratch tree");
	snprintf(data, sizeof(data), "%s/data", scratch);
	snprintf(plugins, sizeof(plugins), "%s/plugins", scratch);
	if (mkdir(data, 0755) < 0 || mkdir(plugins, 0755) < 0)
		die("mkdir");
	write_def("hostpath", "exec /bin/true\narg --v=5\ncap CAP_SYS_ADMIN\n"
	    "hostns uts\n");
	write_def("csi", "exec /bin/true\n");
	m.data_dir = data;
	if ((m.data_fd = open(data, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (m.plugins_fd = open(plugins, O_PATH | O_DIRECTORY |
	    O_CLOEXEC)) < 0)
		die("opening the scratch tree");
}

/* What a plugin's NodeStage or NodePublish would do: mount the target. */
static void
plugin_mounts(const struct mreq *rq)
{
	char path[MREQ_PATH + 64];

	snprintf(path, sizeof(path), "%s/%s", m.data_dir, rq->path);
	if ((mkdir(path, 0755) == 0 || errno == EEXIST) &&
	    mount("tmpfs", path, "tmpfs", MS_NOSUID, "size=64k") < 0 &&
	    errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
		die(path);
}

static void
init(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "fuzz_verbs: needs root (it mounts, in a "
		    "private mount namespace)\n");
		exit(1);
	}
	/* Over /run, in our own namespace: nothing is made on the host. */
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV,
	    "size=1m,mode=0755") < 0)
		die("private mount namespace");
	check_mounts(true);
	if (mkdir(scratch, 0755) < 0)
		die(scratch);
	if ((cwd_fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (m.proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (m.h.base = event_base_new()) == NULL)
		die("setting up");
	snprintf(m.boot_id, sizeof(m.boot_id), "fuzz");
	m.launcher_fd = -1;
	log_init("fuzz_verbs", 0);
	renew();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Berth__Envelope *env;
	struct mreply out = { .pidfd = -1 };
	Berth__ErrorCode code;
	struct mreq rq;
	char why[WHY_MAX];

	if (cwd_fd == 0)
		init();
	if (size > BERTH_IPC_MAX ||
	    (env = berth__envelope__unpack(NULL, size, data)) == NULL)
		return 0;
	if (request_check(env, &rq, why) == BERTH__ERROR_CODE__ERROR_NONE) {
		code = mounter_act(&m, &rq, &out, why);
		if (code != BERTH__ERROR_CODE__ERROR_NONE && out.pidfd >= 0)
			abort();
		if (code == BERTH__ERROR_CODE__ERROR_NONE && !out.mounted &&
		    rq.body == BERTH__ENVELOPE__BODY_PREPARE_VOLUME)
			plugin_mounts(&rq);
	}
	if (out.pidfd >= 0)
		close(out.pidfd);
	berth__envelope__free_unpacked(env, NULL);
	/* resolve.c's unmounts fchdir; libFuzzer writes crashes to ".". */
	if (fchdir(cwd_fd) < 0)
		die("fchdir");
	if (++runs % RENEW == 0) {
		check_mounts(false);
		renew();
	}
	return 0;
}
