/*
 * task.c: StartTask, a task's sandbox. The ids are checked (never root's
 * or berth's; in --task-ids, or the user's line of root's users.allow);
 * the launcher runs crun, the mounter's child, on a bundle that root's
 * template makes by substitution of numbers and of paths the mounter
 * derives from identifiers (no JSON is parsed here). The task's
 * status dir (shim/<alloc>/<task>: its uid, the peer's group, 02750) and
 * one end of a socketpair go to crun as fds 3 and 4 (--preserve-fds), the
 * other end and crun's pidfd to the supervisor.
 * Must not: take a path, an option or a command line from the peer.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "mounter.h"

#define PERM BERTH__ERROR_CODE__ERROR_PERMISSION
#define TEMPLATE_MAX 16384
#define CONFIG_MAX 32768
#define SUBST 9

/* Never root's or berth's own; in the range, or the user's own line. */
Berth__ErrorCode
task_ids(struct mounter *m, uid_t uid, gid_t gid, const char *user,
    char *why)
{
	char buf[TEMPLATE_MAX + 1], name[MREQ_IDENT], *line, *save = NULL;
	Berth__ErrorCode code;
	unsigned u, g;
	int i;

	for (i = 0; i < 3; i++)
		if (uid == m->deny_uid[i] || gid == m->deny_gid[i])
			return fail(why, PERM, "uid %u or gid %u is berth's own",
			    uid, gid);
	if (user[0] == '\0')
		return uid >= m->ids[0] && uid <= m->ids[1] &&
		    gid >= m->ids[0] && gid <= m->ids[1] ? OK :
		    fail(why, PERM, "uid %u gid %u is not in --task-ids %u-%u",
		    uid, gid, m->ids[0], m->ids[1]);
	if ((code = read_root_file(m->conf_fd, "--task-conf", TASK_USERS, buf,
	    TEMPLATE_MAX, why)) != OK)
		return code;
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "%128s %u %u", name, &u, &g) == 3 &&
		    strcmp(name, user) == 0)
			return u == uid && g == gid ? OK : fail(why,
			    PERM, "user %s is uid %u gid %u in " TASK_USERS,
			    name, u, g);
	return fail(why, PERM, "user %s is not in " TASK_USERS, user);
}

/* Each "{key}" of tpl as its value; a value never holds '"' or '\\'. */
static int
fill(const char *tpl, char *out, size_t n, const char *const kv[SUBST][2])
{
	size_t o = 0, k, kl;
	int i;

	/* The last three (resources, netns, plugin_mounts): our own JSON. */
	for (i = 0; i < SUBST - 3; i++)
		if (strpbrk(kv[i][1], "\"\\") != NULL)
			return -EINVAL;
	while (*tpl != '\0' && o + 1 < n) {
		for (i = 0; i < SUBST; i++)
			if (tpl[0] == '{' && strncmp(tpl + 1, kv[i][0],
			    (kl = strlen(kv[i][0]))) == 0 && tpl[kl + 1] == '}')
				break;
		if (i == SUBST) {
			out[o++] = *tpl++;
			continue;
		}
		if ((k = strlen(kv[i][1])) >= n - o)
			return -ENAMETOOLONG;
		memcpy(out + o, kv[i][1], k);
		o += k;
		tpl += kl + 2;
	}
	out[o] = '\0';
	return *tpl == '\0' ? (int)o : -ENAMETOOLONG;
}

/*
 * linux.resources: only the limits asked for (0: none), so that a task
 * asking for none starts where a controller is missing.
 */
static void
limits(const struct mreq *rq, char *buf, size_t n)
{
	uint64_t max = rq->memory_max ? rq->memory_max : rq->memory;
	int o = 0;

	buf[0] = '\0';
	if (max != 0)
		o = snprintf(buf, n, "\"memory\": { \"limit\": %" PRIu64
		    ", \"reservation\": %" PRIu64 " }", max, rq->memory ?
		    rq->memory : max);
	if (rq->cpu_shares != 0)
		o += snprintf(buf + o, n - o, "%s\"cpu\": { \"shares\": %"
		    PRIu32 " }", o ? ", " : "", rq->cpu_shares);
	if (rq->pids_max != 0)
		snprintf(buf + o, n - o, "%s\"pids\": { \"limit\": %" PRIu32
		    " }", o ? ", " : "", rq->pids_max);
}

/* A plugin task's socket dir and mount root, bound at their own paths. */
static int
plugin_mounts(const struct mounter *m, const struct mreq *rq, char *buf,
    size_t n)
{
	char rel[MREQ_PATH], abs[MREQ_PATH];
	int i, o = 0;

	for (i = 0, buf[0] = '\0'; rq->type[0] != '\0' && i < 2; i++)
		if ((i ? layout_plugin_root(rel, sizeof(rel), rq->type,
		    rq->plugin) : layout_plugin_socket_dir(rel, sizeof(rel),
		    rq->alloc)) < 0 || layout_abs(abs, sizeof(abs),
		    m->data_dir, rel) < 0 || strpbrk(abs, "\"\\") != NULL ||
		    (o += snprintf(buf + o, n - o, ", { \"destination\": "
		    "\"%s\", \"type\": \"bind\", \"source\": \"%s\", "
		    "\"options\": [ \"rbind\", \"rslave\", \"nosuid\", "
		    "\"nodev\" ] }", abs, abs)) >= (int)n)
			return -1;
	return 0;
}

/* mounter/tasks/<alloc>/<task>/: root's config.json and rootfs/. */
static Berth__ErrorCode
bundle(struct mounter *m, const struct mreq *rq, const char *rel,
    char *why)
{
	static char tpl[TEMPLATE_MAX + 1], cfg[CONFIG_MAX];
	char num[2][24], res[256], root[MREQ_PATH], dir[MREQ_PATH];
	char cg[MREQ_PATH], sub[MREQ_PATH + 8], pm[3 * MREQ_PATH];
	const char *kv[SUBST][2] = { { "uid", num[0] }, { "gid", num[1] },
	    { "rootfs", root }, { "task_dir", dir }, { "shim", m->shim },
	    { "cgroup", cg }, { "resources", res },
	    { "netns", rq->network_none ? ", { \"type\": \"network\" }" : "" },
	    { "plugin_mounts", pm } };
	Berth__ErrorCode code;
	int fd, cf, len;

	if ((code = read_root_file(m->conf_fd, "--task-conf", TASK_TEMPLATE,
	    tpl, TEMPLATE_MAX, why)) != OK)
		return code;
	if (rq->type[0] != '\0' && strstr(tpl, "{plugin_mounts}") == NULL)
		return fail(why, PERM, "no {plugin_mounts} in " TASK_TEMPLATE);
	snprintf(num[0], 24, "%" PRIu32, (uint32_t)rq->uid);
	snprintf(num[1], 24, "%" PRIu32, (uint32_t)rq->gid);
	limits(rq, res, sizeof(res));
	snprintf(sub, sizeof(sub), "%s/rootfs", rel);
	if (snprintf(cg, sizeof(cg), "%s/%s@%s", m->cgroup, rq->alloc,
	    rq->task) >= (int)sizeof(cg) ||
	    layout_abs(dir, sizeof(dir), m->data_dir, rq->path) < 0 ||
	    layout_abs(root, sizeof(root), m->data_dir, sub) < 0 ||
	    plugin_mounts(m, rq, pm, sizeof(pm)) < 0 ||
	    (len = fill(tpl, cfg, sizeof(cfg), kv)) < 0)
		return fail(why, BERTH__ERROR_CODE__ERROR_INTERNAL, "the "
		    "template, or a path in it, is too long or holds a quote");
	if ((fd = res_mkdirs(m->data_fd, rel)) < 0)
		return fail_errno(why, -fd, "creating", rel);
	if (!res_trusted(fd) || (mkdirat(fd, "rootfs", 0755) < 0 &&
	    errno != EEXIST)) {
		close(fd);
		return fail(why, PERM, "%s is not root's, or has no rootfs/",
		    rel);
	}
	code = (cf = res_open(fd, "config.json", O_WRONLY | O_CREAT | O_TRUNC,
	    0600)) < 0 ? fail_errno(why, -cf, "writing", rel) :
	    write(cf, cfg, len) != len ? fail_errno(why, errno, "writing",
	    rel) : OK;
	if (cf >= 0)
		close(cf);
	close(fd);
	return code;
}

Berth__ErrorCode
task_start(struct mounter *m, const struct mreq *rq, struct mreply *out,
    char *why)
{
	static struct launch_req lr;
	char rel[MREQ_PATH], abs[MREQ_PATH], state[MREQ_PATH];
	char id[2 * MREQ_IDENT];
	const char *argv[] = { TASK_CRUN, "--root", state, "run",
	    "--no-new-keyring", "--bundle", abs, "--preserve-fds", "2", id };
	int fds[3] = { -1, -1, -1 }, sp[2] = { -1, -1 }, fd, i;
	Berth__ErrorCode code;

	snprintf(rel, sizeof(rel), MOUNTER_TASKS_DIR "/%s/%s", rq->alloc,
	    rq->task);
	snprintf(id, sizeof(id), "%s@%s", rq->alloc, rq->task);
	/* Refuse before launching: a crun we cannot watch must not run. */
	if (!plugin_room(m, true))
		return fail(why, BERTH__ERROR_CODE__ERROR_CONFLICT, "at most "
		    "%d tasks at once", TASK_MAX);
	if ((code = task_ids(m, rq->uid, rq->gid, rq->user,
	    why)) != OK ||
	    (code = bundle(m, rq, rel, why)) != OK)
		return code;
	if ((fd = res_mkdirs(m->data_fd, MOUNTER_CRUN_DIR)) < 0)
		return fail_errno(why, -fd, "creating", MOUNTER_CRUN_DIR);
	close(fd);
	/* Its status dir, then by name: only root renames in shim/<alloc>. */
	if ((fd = res_mkdirs(m->data_fd, rq->path2)) < 0)
		return fail_errno(why, -fd, "creating", rq->path2);
	if ((code = give(fd, rq->path2, NULL, rq->uid, m->peer_gid, 02750,
	    why)) != OK)
		return code;
	memset(&lr, 0, sizeof(lr));
	lr.task = true;
	i = layout_abs(abs, sizeof(abs), m->data_dir, rel) < 0 ||
	    layout_abs(state, sizeof(state), m->data_dir, MOUNTER_CRUN_DIR) < 0;
	for (lr.def.nargs = 0; !i && lr.def.nargs < (int)(sizeof(argv) /
	    sizeof(argv[0])); lr.def.nargs++)
		i = snprintf(lr.def.args[lr.def.nargs], LAUNCH_STR, "%s",
		    argv[lr.def.nargs]) >= LAUNCH_STR;
	if (i)
		return fail(why, BERTH__ERROR_CODE__ERROR_BAD_REQUEST, "the "
		    "bundle's path or crun's id is over %d bytes", LAUNCH_STR);
	if ((code = open_exe(TASK_CRUN, &fds[0], why)) != OK)
		return code;
	if ((fds[1] = res_open(m->data_fd, rq->path2, O_PATH | O_DIRECTORY,
	    0)) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sp) < 0) {
		code = fail_errno(why, fds[1] < 0 ? -fds[1] : errno,
		    "preparing", rq->path2);
		goto out;
	}
	fds[2] = sp[1];
	sp[1] = -1;
	if ((code = launcher_run(m, &lr, fds, out, why)) != OK)
		goto out;
	log_info("task_start: %s is crun pid %ld, uid %u gid %u", id,
	    (long)out->pid, rq->uid, rq->gid);
	out->chanfd = sp[0];
	sp[0] = -1;
out:
	for (i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (i = 0; i < 2; i++)
		if (sp[i] >= 0)
			close(sp[i]);
	return code;
}
