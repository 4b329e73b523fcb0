/*
 * volmgr_recover.c: volumes whose mounts died with their node plugin.
 *
 * The mounts of a FUSE-based plugin (and of some network ones) are
 * served by its process: when it dies, its staging paths, publish
 * targets and the tasks' binds of them answer ENOTCONN, and stay dead
 * under the running tasks. When a node instance of a plugin comes up
 * healthy after a (re)registration (the CSI manager says so), every
 * staging path and publish target recorded for that plugin is checked
 * from a child process, with a deadline (RECOVER_CHECK_MS): a dead
 * mount can hang statfs(2), and the supervisor's loop must never hang.
 * statfs asks the file system (stat may answer from cached attributes).
 * A path that answers ENOTCONN, EIO, ESTALE or ECONNABORTED, or none at
 * all by the deadline (the child is then killed), is stale.
 *
 * What happens to a stale volume is its on_plugin_restart:
 * - "remount" (the default): each task's bind of it is unbound
 *   (UnbindVolume), the dead target and staging path are unpublished
 *   and unstaged through the new instance (which must take a dead mount
 *   for a mount, as CSI's corrupted-mount handling does), and the
 *   alloc's volumes are set up again by the ordinary mount job: stage,
 *   publish, and a fresh bind (BindVolume) in the task's directory. The
 *   running task sees it: its sandbox's copy of the task directory is a
 *   slave of the mounter's shared self-bind of it (SECURITY.md);
 * - "restart_tasks": the same, then the alloc's tasks are restarted
 *   (deps.restart_tasks), for tasks that keep files open on it;
 * - "none": nothing, but an event says the volume is stale.
 * Each is an event: VolumeRemounted, VolumeTasksRestarted, VolumeStale,
 * VolumeRecoveryFailed.
 *
 * Must not: block (the check is a child's), or act on a volume whose
 * mounts answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <event2/event.h>

#include "alloc.h"
#include "events.h"
#include "layout.h"
#include "volmgr_int.h"
#include "xalloc.h"

#define RECOVER_CHECK_MS	2000

/* One pub of the plugin, as checked: who it is, and whether it is dead. */
struct rpub {
	char *alloc, *ns, *vol, *usage;
	char staging[BERTH_PATH_BUF], target[BERTH_PATH_BUF];
	char answer[2];			/* per path: 'o' alive, 's' stale */
	bool stale;
};

struct recovery {
	TAILQ_ENTRY(recovery) entry;
	struct volmgr *vm;
	char *plugin;
	struct rpub *pubs;
	size_t n, got, next;
	pid_t pid;
	int rfd, pidfd;
	struct event *rev, *timer;
	bool checked, again;
	struct timespec started;
};

static void act_next(struct recovery *rc);

static void
recovery_free(struct recovery *rc)
{
	size_t i;

	TAILQ_REMOVE(&rc->vm->recoveries, rc, entry);
	for (i = 0; i < rc->n; i++) {
		free(rc->pubs[i].alloc);
		free(rc->pubs[i].ns);
		free(rc->pubs[i].vol);
		free(rc->pubs[i].usage);
	}
	free(rc->pubs);
	if (rc->rev != NULL)
		event_free(rc->rev);
	if (rc->timer != NULL)
		event_free(rc->timer);
	if (rc->rfd >= 0)
		close(rc->rfd);
	free(rc->plugin);
	free(rc);
}

/* ---- the check: a child stats each path, one answer byte per path ---- */

static bool
dead_errno(int e)
{
	return e == ENOTCONN || e == EIO || e == ESTALE || e == ECONNABORTED;
}

static void __attribute__((noreturn))
check_child(const struct recovery *rc, int wfd)
{
	struct statfs sf;
	struct stat st;
	size_t i, k;
	char c;

	for (i = 0; i < rc->n; i++)
		for (k = 0; k < 2; k++) {
			const char *path = k ? rc->pubs[i].target :
			    rc->pubs[i].staging;

			/* statfs asks the file system itself, where stat
			 * may answer from cached attributes. */
			c = path[0] != '\0' && ((statfs(path, &sf) < 0 &&
			    dead_errno(errno)) || (stat(path, &st) < 0 &&
			    dead_errno(errno))) ? 's' : 'o';
			if (write(wfd, &c, 1) != 1)
				_exit(1);
		}
	_exit(0);
}

/* The child, reaped once it has gone (its pidfd readable): a child
 * killed in a dead mount's wait may take a moment. */
struct reap {
	struct event *ev;
	pid_t pid;
	int fd;
};

static void
on_reap(evutil_socket_t fd, short ev, void *arg)
{
	struct reap *r = arg;

	(void)fd, (void)ev;
	waitpid(r->pid, NULL, WNOHANG);
	event_free(r->ev);
	close(r->fd);
	free(r);
}

static void
reap_later(struct recovery *rc)
{
	struct reap *r;

	if (rc->pidfd < 0) {
		waitpid(rc->pid, NULL, WNOHANG);
		return;
	}
	r = xcalloc(1, sizeof(*r));
	r->pid = rc->pid;
	r->fd = rc->pidfd;
	r->ev = xnonnull(event_new(rc->vm->d.base, r->fd, EV_READ, on_reap,
	    r), "volmgr: recover: event_new");
	event_add(r->ev, NULL);
	rc->pidfd = -1;
}

static void
check_done(struct recovery *rc, bool timed_out)
{
	size_t i, k;

	if (timed_out) {
		kill(rc->pid, SIGKILL);
		log_warnx("volmgr: plugin %s: checking its mounts took over "
		    "%d ms: each one not answered is stale", rc->plugin,
		    RECOVER_CHECK_MS);
	}
	reap_later(rc);
	event_del(rc->rev);
	event_del(rc->timer);
	close(rc->rfd);
	rc->rfd = -1;
	rc->checked = true;
	for (i = 0; i < rc->n; i++)
		for (k = 0; k < 2; k++)
			if (rc->pubs[i].answer[k] != 'o')
				rc->pubs[i].stale = true;
	log_info("volmgr: plugin %s: %zu mount%s checked in %.1f ms",
	    rc->plugin, rc->n, rc->n == 1 ? "" : "s", ms_since(&rc->started));
	act_next(rc);
}

static void
on_answer(evutil_socket_t fd, short ev, void *arg)
{
	struct recovery *rc = arg;
	char buf[256];
	ssize_t n, i;

	(void)ev;
	if ((n = read(fd, buf, sizeof(buf))) < 0 && errno == EAGAIN)
		return;
	for (i = 0; i < n && rc->got < 2 * rc->n; i++, rc->got++)
		rc->pubs[rc->got / 2].answer[rc->got % 2] = buf[i];
	if (n <= 0)
		check_done(rc, false);
}

static void
on_check_timeout(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd, (void)ev;
	check_done(arg, true);
}

static bool
check_start(struct recovery *rc)
{
	struct timeval tv = { RECOVER_CHECK_MS / 1000,
	    (RECOVER_CHECK_MS % 1000) * 1000 };
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return false;
	if ((rc->pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return false;
	}
	if (rc->pid == 0) {
		close(p[0]);
		check_child(rc, p[1]);
	}
	close(p[1]);
	rc->rfd = p[0];
	rc->pidfd = (int)syscall(SYS_pidfd_open, rc->pid, 0);
	rc->rev = xnonnull(event_new(rc->vm->d.base, rc->rfd, EV_READ |
	    EV_PERSIST, on_answer, rc), "volmgr: recover: event_new");
	rc->timer = xnonnull(evtimer_new(rc->vm->d.base, on_check_timeout,
	    rc), "volmgr: recover: evtimer_new");
	event_add(rc->rev, NULL);
	evtimer_add(rc->timer, &tv);
	return true;
}

/* ---- the actions ---- */

static struct vpub *
rpub_find(struct volmgr *vm, const struct rpub *r)
{
	return pub_find(vm, r->alloc, r->ns, r->vol, r->usage);
}

static const char *
policy_of(const Berth__Volume *v)
{
	return v == NULL || v->on_plugin_restart == NULL ||
	    v->on_plugin_restart[0] == '\0' ? "remount" :
	    v->on_plugin_restart;
}

/* The next stale pub's turn: its unit (remount, restart_tasks), or its
 * event (none); once all are done, the allocs' mount jobs. */
struct rstep {
	struct recovery *rc;
	size_t i;
};

static void
on_recover_unit(enum volmgr_status st, const char *why, void *arg)
{
	struct rstep *s = arg;
	struct recovery *rc = s->rc;
	struct rpub *r = &rc->pubs[s->i];

	if (st != VOLMGR_OK) {
		events_record(rc->vm->d.events, "volume", "VolumeRecoveryFailed",
		    r->alloc, NULL, rc->plugin, "volume %s/%s: its mount died "
		    "with plugin %s; taking the dead mount away failed: %s",
		    r->ns, r->vol, rc->plugin, why);
		r->stale = false;	/* not remounted */
	}
	free(s);
	act_next(rc);
}

struct remount {
	struct recovery *rc;
	char *alloc;
	bool restart;
};

static void
on_remounted(enum volmgr_status st, const char *why, void *arg)
{
	struct remount *m = arg;
	struct recovery *rc = m->rc;
	struct volmgr *vm = rc->vm;
	struct vpub *p;
	size_t i;

	for (i = 0; i < rc->n; i++) {
		struct rpub *r = &rc->pubs[i];

		if (!r->stale || strcmp(r->alloc, m->alloc) != 0)
			continue;
		/* Its alloc went meanwhile: its unmount job follows. */
		if (st != VOLMGR_OK && (p = rpub_find(vm, r)) != NULL &&
		    p->going)
			log_info("volmgr: alloc %s: volume %s/%s: its alloc "
			    "stops; not set up again", r->alloc, r->ns, r->vol);
		else if (st != VOLMGR_OK)
			events_record(vm->d.events, "volume",
			    "VolumeRecoveryFailed", r->alloc, NULL, rc->plugin,
			    "volume %s/%s: staging and publishing it again "
			    "after plugin %s restarted failed: %s", r->ns,
			    r->vol, rc->plugin, why);
		else
			events_record(vm->d.events, "volume", m->restart ?
			    "VolumeTasksRestarted" : "VolumeRemounted", r->alloc,
			    NULL, rc->plugin, "volume %s/%s: its mount died with "
			    "plugin %s; staged, published and bound again%s in "
			    "%.1f ms", r->ns, r->vol, rc->plugin, m->restart ?
			    ", and the alloc's tasks restarted" : " under the "
			    "running tasks", ms_since(&rc->started));
		r->stale = false;
	}
	if (st == VOLMGR_OK && m->restart && vm->d.restart_tasks != NULL)
		vm->d.restart_tasks(vm->d.allocs_ctx, m->alloc, "a volume's "
		    "mount died with its plugin");
	free(m->alloc);
	free(m);
	act_next(rc);
}

/* The next alloc with a stale pub taken away: its volumes set up again. */
static bool
remount_next(struct recovery *rc)
{
	struct volmgr *vm = rc->vm;
	struct remount *m;
	struct vpub *p;
	size_t i;

	for (i = 0; i < rc->n; i++) {
		struct rpub *r = &rc->pubs[i];

		if (!r->stale)
			continue;
		if ((p = rpub_find(vm, r)) == NULL || p->doc == NULL ||
		    p->going) {
			/* Stopped meanwhile, or known from records only. */
			r->stale = false;
			continue;
		}
		m = xcalloc(1, sizeof(*m));
		m->rc = rc;
		m->alloc = xstrdup(r->alloc);
		m->restart = p->on_restart == RECOVER_RESTART_TASKS;
		recover_mount(vm, p->doc, p->alloc_group, on_remounted, m);
		return true;
	}
	return false;
}

static void
act_next(struct recovery *rc)
{
	struct volmgr *vm = rc->vm;
	struct rstep *s;
	struct vpub *p;

	while (rc->next < rc->n) {
		struct rpub *r = &rc->pubs[rc->next++];

		if (!r->stale)
			continue;
		if ((p = rpub_find(vm, r)) == NULL || p->going) {
			/* Its alloc's unmount job takes it back. */
			r->stale = false;
			continue;
		}
		if (p->on_restart == RECOVER_NONE || p->doc == NULL) {
			events_record(vm->d.events, "volume", p->doc == NULL ?
			    "VolumeRecoveryFailed" : "VolumeStale", r->alloc,
			    NULL, rc->plugin, "volume %s/%s: its mount died with "
			    "plugin %s (%s); %s", r->ns, r->vol, rc->plugin,
			    r->answer[0] != 'o' ? r->staging : r->target,
			    p->doc == NULL ? "its alloc is known from records "
			    "only until it is set up again: nothing done" :
			    "on_plugin_restart is \"none\": nothing done");
			r->stale = false;
			continue;
		}
		s = xcalloc(1, sizeof(*s));
		s->rc = rc;
		s->i = rc->next - 1;
		volmgr_job_go(recover_job(vm, p, on_recover_unit, s));
		return;
	}
	if (remount_next(rc))
		return;
	/* Up again while this one acted: check once more, anew. */
	if (rc->again) {
		char *plugin = xstrdup(rc->plugin);

		recovery_free(rc);
		volmgr_plugin_up(vm, plugin);
		free(plugin);
		return;
	}
	recovery_free(rc);
}

/* ---- the unit: one stale pub's dead mounts taken away ---- */

/* The k-th task mount of p's request in its alloc; false past the last. */
static bool
pub_mount(const struct vpub *p, size_t k, const struct alloc_task **t,
    const struct alloc_mount **m)
{
	const struct alloc *a = p->doc;
	size_t i, n;

	for (i = 0; a != NULL && i < a->ntasks; i++)
		for (n = 0; n < a->tasks[i].nmounts; n++)
			if (&a->volumes[a->tasks[i].mounts[n].volume_index] ==
			    p->req && k-- == 0) {
				*t = &a->tasks[i];
				*m = &a->tasks[i].mounts[n];
				return true;
			}
	return false;
}

/* Another pub at p's staging path is still published. */
static bool
others_published(struct volmgr *vm, const struct vpub *p)
{
	const struct vpub *q;

	TAILQ_FOREACH(q, &vm->pubs, entry)
		if (q != p && q->published && strcmp(q->ns, p->ns) == 0 &&
		    strcmp(q->vol, p->vol) == 0 &&
		    strcmp(q->stage_usage, p->stage_usage) == 0)
			return true;
	return false;
}

static void
recover_unstage(struct unit *u)
{
	Csi__V1__NodeUnstageVolumeRequest req =
	    CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;
	struct volmgr_plugin node;
	struct vpub *p = u->pub, *q;
	char path[BERTH_PATH_BUF];

	p->published = false;
	if (!node_or_end(u, &node))
		return;
	if (!node.fp->stage_unstage || !p->staged ||
	    others_published(u->job->vm, p)) {
		unit_end(u);
		return;
	}
	TAILQ_FOREACH(q, &u->job->vm->pubs, entry)
		if (strcmp(q->ns, p->ns) == 0 && strcmp(q->vol, p->vol) == 0 &&
		    strcmp(q->stage_usage, p->stage_usage) == 0)
			q->staged = false;
	csi_path(u, true, path, sizeof(path));
	req.volume_id = p->external_id;
	req.staging_target_path = path;
	u->st.recover = RS_UNSTAGE;
	csi_send(u, node.conn, CSI_NODE_UNSTAGE_VOLUME, &req.base);
}

static void
recover_unpublish(struct unit *u)
{
	Csi__V1__NodeUnpublishVolumeRequest req =
	    CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;
	struct volmgr_plugin node;
	char path[BERTH_PATH_BUF];

	if (!node_or_end(u, &node))
		return;
	csi_path(u, false, path, sizeof(path));
	req.volume_id = u->pub->external_id;
	req.target_path = path;
	u->st.recover = RS_UNPUBLISH;
	csi_send(u, node.conn, CSI_NODE_UNPUBLISH_VOLUME, &req.base);
}

/* Each task's bind of the pub, unbound; UnbindVolume's errors pass
 * (volmgr_calls.c): what is gone is gone. */
static void
recover_unbind(struct unit *u)
{
	const struct alloc_task *t;
	const struct alloc_mount *m;

	if (!pub_mount(u->pub, u->recover_next++, &t, &m)) {
		recover_unpublish(u);
		return;
	}
	u->task = t->name;
	u->dest = m->destination;
	u->st.recover = RS_UNBIND;
	call_mounter(u, priv_unbind_volume(u->job->vm->d.mounter,
	    u->job->alloc, t->name, m->destination, on_mounter,
	    mounter_ticket(u)));
}

/* The pub is still there (an unmount before this unit may have gone). */
static bool
pub_alive(struct volmgr *vm, const struct vpub *p)
{
	const struct vpub *q;

	TAILQ_FOREACH(q, &vm->pubs, entry)
		if (q == p)
			return true;
	return false;
}

void
recover_step(struct unit *u, const struct vreply *r)
{
	(void)r;
	switch (u->st.recover) {
	case RS_START:
		if (!pub_alive(u->job->vm, u->pub)) {
			u->pub = NULL;
			unit_fail(u, VOLMGR_FAILED, "recover: the volume was "
			    "taken back meanwhile");
			unit_end(u);
			break;
		}
		/* FALLTHROUGH */
	case RS_UNBIND:
		recover_unbind(u);
		break;
	case RS_UNPUBLISH:
		recover_unstage(u);
		break;
	case RS_UNSTAGE:
		unit_end(u);
		break;
	}
}

/* ---- the interface ---- */

/* The pubs of plugin that are staged or published, with their paths. */
static void
collect(struct recovery *rc)
{
	struct volmgr *vm = rc->vm;
	struct volmgr_plugin node;
	struct vpub *p;
	size_t n = 0;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		n += strcmp(p->plugin, rc->plugin) == 0 && p->published;
	rc->pubs = xcalloc(n + 1, sizeof(*rc->pubs));
	if (n == 0 || !node_of(vm, rc->plugin, &node))
		return;
	TAILQ_FOREACH(p, &vm->pubs, entry) {
		struct rpub *r = &rc->pubs[rc->n];

		if (strcmp(p->plugin, rc->plugin) != 0 || !p->published)
			continue;
		if (p->type[0] == '\0')
			pub_mount_type(vm, p, &node);
		r->alloc = xstrdup(p->alloc);
		r->ns = xstrdup(p->ns);
		r->vol = xstrdup(p->vol);
		r->usage = xstrdup(p->usage);
		if (p->staged && node.fp->stage_unstage)
			pub_csi_path(vm, p, true, r->staging,
			    sizeof(r->staging));
		pub_csi_path(vm, p, false, r->target, sizeof(r->target));
		rc->n++;
	}
}

void
volmgr_plugin_up(struct volmgr *vm, const char *plugin)
{
	struct recovery *rc;

	TAILQ_FOREACH(rc, &vm->recoveries, entry)
		if (strcmp(rc->plugin, plugin) == 0) {
			rc->again = rc->checked;	/* while acting: again */
			return;
		}
	rc = xcalloc(1, sizeof(*rc));
	rc->vm = vm;
	rc->plugin = xstrdup(plugin);
	rc->rfd = rc->pidfd = -1;
	clock_gettime(CLOCK_MONOTONIC, &rc->started);
	TAILQ_INSERT_TAIL(&vm->recoveries, rc, entry);
	collect(rc);
	if (rc->n == 0) {
		recovery_free(rc);
		return;
	}
	if (!check_start(rc)) {
		log_warn("volmgr: plugin %s: cannot check its mounts", plugin);
		recovery_free(rc);
	}
}

/*
 * The alloc's document goes once its unmount job j ends: no recovery
 * may use it past then. Its pubs are not set up again; a recovery's
 * mount of it, in flight, ends after its current unit (the one unit a
 * job runs at a time) and only then starts j, which takes back what
 * that mount did. A recovery unit in flight needs no wait: it holds
 * the volume, which j's take-back of it waits for.
 */
bool
recover_alloc_goes(struct volmgr *vm, const char *alloc, struct job *j)
{
	struct vpub *p;
	struct unit *u;
	struct job *w;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (strcmp(p->alloc, alloc) == 0)
			p->going = true;
	TAILQ_FOREACH(u, &vm->units, entry)
		if (u->job->recovery && u->job->then == NULL &&
		    strcmp(u->job->alloc, alloc) == 0) {
			u->job->cancelled = true;
			u->job->then = j;
			return true;
		}
	TAILQ_FOREACH(w, &vm->waiting, entry)
		if (w->recovery && w->then == NULL &&
		    strcmp(w->alloc, alloc) == 0) {
			w->cancelled = true;
			w->then = j;
			return true;
		}
	return false;
}

void
recover_policy(struct vpub *p, const Berth__Volume *v)
{
	const char *s = policy_of(v);

	p->on_restart = strcmp(s, "none") == 0 ? RECOVER_NONE :
	    strcmp(s, "remount") == 0 ? RECOVER_REMOUNT :
	    RECOVER_RESTART_TASKS;
}

void
recover_free(struct volmgr *vm)
{
	struct recovery *rc;

	while ((rc = TAILQ_FIRST(&vm->recoveries)) != NULL) {
		if (rc->rfd >= 0 && !rc->checked) {
			kill(rc->pid, SIGKILL);
			waitpid(rc->pid, NULL, WNOHANG);
		}
		if (rc->pidfd >= 0)
			close(rc->pidfd);
		recovery_free(rc);
	}
}
