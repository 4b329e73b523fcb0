/*
 * fuzz_verbs.c: libFuzzer target that runs the mounter's verbs, not only
 * its checks. Each input is one datagram to the mounter's own channel and
 * dispatch (mounter_serve_on, as a peer past its hello would send it):
 * the channel's checks, protobuf-c decoding, request_check(), the verb,
 * the reply; on a scratch data directory in a private mount namespace.
 * Needs root (scripts/fuzz.sh runs it so in CI); nothing it does reaches
 * the host (its tree is a tmpfs over /run in its own mount namespace),
 * and the tree is renewed every RENEW inputs so that directories and
 * mounts do not pile up. The mounter logs each refusal: run it with
 * -close_fd_mask=2 (fuzz.sh does), which keeps libFuzzer's and the
 * sanitizers' reports.
 *
 * Beyond "no crash": every mount made since the start lies beneath the
 * scratch directory, and every request gets exactly one reply.
 * After a PrepareVolume it mounts a tmpfs on the target, as the plugin
 * would, so that later inputs can bind, unbind and clean up real mounts.
 * StartPlugin reaches the definition, its executable and the logs;
 * StartTask the id checks, root's template and allow-list (conf/), the
 * bundle and the status dir; the launcher is absent (-1), so no process
 * is ever started.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "mounter.h"

#define RENEW 4000

static struct mounter m;
static int peer;		/* the supervisor's end */
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

/* rel: beneath the scratch tree. */
static void
write_file(const char *rel, const char *text)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", scratch, rel);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

/* A fresh tmpfs with data/, plugins/ (two definitions) and conf/. */
static void
renew(void)
{
	static char data[64];
	char plugins[64], conf[64];

	if (m.data_fd > 0) {
		close(m.data_fd);
		close(m.plugins_fd);
		close(m.conf_fd);
		if (umount2(scratch, MNT_DETACH) < 0)
			die("unmounting the scratch tree");
	}
	if (mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV,
	    "size=16m,nr_inodes=20000,mode=0755") < 0)
		die("mounting the scratch tree");
	snprintf(data, sizeof(data), "%s/data", scratch);
	snprintf(plugins, sizeof(plugins), "%s/plugins", scratch);
	snprintf(conf, sizeof(conf), "%s/conf", scratch);
	if (mkdir(data, 0755) < 0 || mkdir(plugins, 0755) < 0 ||
	    mkdir(conf, 0755) < 0)
		die("mkdir");
	write_file("plugins/hostpath.conf", "exec /bin/true\narg --v=5\n"
	    "cap CAP_SYS_ADMIN\n"
	    "hostns uts\n");
	write_file("plugins/csi.conf", "exec /bin/true\n");
	write_file("conf/" TASK_USERS, "svc 70500 70500\n");
	write_file("conf/" TASK_TEMPLATE, "{ \"uid\": {uid}, \"gid\": {gid}, "
	    "\"dir\": \"{task_dir}\", \"root\": \"{rootfs}\", {netns} "
	    "\"m\": { {resources} }, "
	    "\"cg\": \"{cgroup}\", \"shim\": \"{shim}\" {x} "
	    "[ {plugin_mounts} ]");
	m.data_dir = data;
	if ((m.data_fd = open(data, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (m.plugins_fd = open(plugins, O_PATH | O_DIRECTORY |
	    O_CLOEXEC)) < 0 || (m.conf_fd = open(conf, O_PATH | O_DIRECTORY |
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
	int sp[2];

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
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		die("setting up");
	snprintf(m.boot_id, sizeof(m.boot_id), "fuzz");
	m.launcher_fd = -1;
	/* StartTask: a range, a peer and a registry of 70000-70099's. */
	m.ids[0] = 70000;
	m.ids[1] = 70099;
	m.deny_uid[0] = m.deny_gid[0] = m.peer_gid = 70050;
	m.deny_uid[1] = m.deny_gid[1] = 70051;
	m.shim = "/usr/libexec/berth/berth-shim";
	m.cgroup = "/berth";
	log_init("fuzz_verbs", 0);
	if (mounter_serve_on(&m, sp[0]) < 0)
		die("mounter_serve_on");
	m.h.hello_done = true;
	peer = sp[1];
	renew();
}

/*
 * Read every answer; close any descriptor. How many replies to id came,
 * and whether one was a PrepareVolume that found no mount yet.
 */
static int
answers(uint64_t id, bool *unmounted)
{
	static uint8_t in[BERTH_IPC_MAX];
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} cm;
	struct iovec iov = { in, sizeof(in) };
	struct msghdr mh;
	struct cmsghdr *c;
	Berth__Envelope *rep;
	int n = 0, fd;
	ssize_t len;

	*unmounted = false;
	for (;;) {
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
		    .msg_control = cm.space, .msg_controllen = sizeof(cm) };
		if ((len = recvmsg(peer, &mh, MSG_DONTWAIT |
		    MSG_CMSG_CLOEXEC)) < 0)
			return n;
		for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
			for (size_t i = 0; c->cmsg_type == SCM_RIGHTS &&
			    i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int),
				    sizeof(int));
				close(fd);
			}
		if ((rep = berth__envelope__unpack(NULL, (size_t)len,
		    in)) == NULL)
			abort();	/* the mounter sent garbage */
		if (rep->kind == BERTH__KIND__KIND_REPLY &&
		    rep->request_id == id) {
			n++;
			*unmounted = rep->error == NULL &&
			    rep->prepare_volume_reply != NULL &&
			    rep->body_case ==
			    BERTH__ENVELOPE__BODY_PREPARE_VOLUME_REPLY &&
			    !rep->prepare_volume_reply->mounted;
		}
		berth__envelope__free_unpacked(rep, NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Berth__Envelope *env;
	bool request, checked = false, unmounted;
	uint64_t id = 0;
	struct mreq rq;
	char why[WHY_MAX];

	if (cwd_fd == 0)
		init();
	if (size == 0 || size > BERTH_IPC_MAX)
		return 0;
	/* What the mounter will make of it, for the checks below. */
	env = berth__envelope__unpack(NULL, size, data);
	request = env != NULL && env->kind == BERTH__KIND__KIND_REQUEST &&
	    env->version == BERTH_PROTOCOL_VERSION && env->request_id != 0;
	if (request) {
		id = env->request_id;
		checked = request_check(env, &rq, why) ==
		    BERTH__ERROR_CODE__ERROR_NONE;
	}
	if (env != NULL)
		berth__envelope__free_unpacked(env, NULL);
	if (send(peer, data, size, MSG_DONTWAIT) != (ssize_t)size)
		die("sending to the mounter");
	if (event_base_loop(m.h.base, EVLOOP_NONBLOCK) < 0)
		die("event loop");
	/* A reply is never dropped, nor sent twice. */
	if (answers(id, &unmounted) != 1 && request)
		abort();
	if (checked && unmounted)
		plugin_mounts(&rq);
	/* resolve.c's unmounts fchdir; libFuzzer writes crashes to ".". */
	if (fchdir(cwd_fd) < 0)
		die("fchdir");
	if (++runs % RENEW == 0) {
		check_mounts(false);
		renew();
	}
	return 0;
}
