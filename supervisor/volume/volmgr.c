/*
 * volmgr.c: the volume manager; volmgr.h says what it does and in what
 * order, volmgr_int.h which file does which part. This file owns the
 * manager itself and its queue: a job (one alloc's mount or unmount, or
 * one operator request) is made of units run one after another; units on
 * one volume never overlap; a job waits until the mount records are read
 * back. Must not: build a request (the unit files do).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "alloc.h"
#include "events.h"
#include "volmgr_int.h"
#include "xalloc.h"

static void job_next(struct job *j);

double
ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1e3 + (now.tv_nsec - t->tv_nsec) /
	    1e6;
}

void
unit_fail(struct unit *u, enum volmgr_status st, const char *fmt, ...)
{
	struct job *j = u->job;
	va_list ap;

	if (j->status == VOLMGR_OK) {
		va_start(ap, fmt);
		vsnprintf(j->why, sizeof(j->why), fmt, ap);
		va_end(ap);
		j->status = st;
	} else if (st == VOLMGR_FAILED)
		j->status = st;
}

/* ---- units and jobs ---- */

static bool
key_busy(struct volmgr *vm, const struct unit *me)
{
	struct unit *u;

	if (me->ns[0] == '\0')
		return false;
	TAILQ_FOREACH(u, &vm->units, entry)
		if (u != me && u->running && strcmp(u->ns, me->ns) == 0 &&
		    strcmp(u->vol, me->vol) == 0)
			return true;
	return false;
}

/* Start every waiting unit whose volume is free, in order. */
static void
pump(struct volmgr *vm)
{
	struct unit *u;

again:
	TAILQ_FOREACH(u, &vm->units, entry)
		if (!u->running && !key_busy(vm, u)) {
			u->running = true;
			unit_step(u, NULL);
			goto again;
		}
}

static void
unit_free(struct unit *u)
{
	if (u->call != NULL)
		volmgr_call_orphan(u->call);
	free(u->created_id);
	free(u->snap_name);
	free(u->snap_token);
	kvs_clear(&u->created_ctx);
	kvs_clear(&u->srefs);
	spec_free(&u->spec);
	free(u);
}

static void
job_free(struct job *j)
{
	free(j->alloc);
	free(j);
}

static void
job_finish(struct job *j)
{
	struct job *then = j->then;

	if (j->mount && j->status == VOLMGR_OK && j->doc != NULL)
		log_info("volmgr: alloc %s: %zu volume%s in place in %.1f ms, "
		    "%.1f ms of it in %d plugin RPC%s", j->alloc,
		    j->doc->nvolumes, j->doc->nvolumes == 1 ? "" : "s",
		    ms_since(&j->started), j->rpc_ms, j->rpcs, j->rpcs == 1 ?
		    "" : "s");
	if (j->cb != NULL)
		j->cb(j->status, j->status == VOLMGR_OK ? "" : j->why, j->arg);
	job_free(j);
	if (then != NULL)
		volmgr_job_go(then);
}

void
unit_end(struct unit *u)
{
	struct volmgr *vm = u->job->vm;
	struct job *j = u->job;

	TAILQ_REMOVE(&vm->units, u, entry);
	unit_free(u);
	if (j->single != NULL || j->status != VOLMGR_OK)
		job_finish(j);
	else
		job_next(j);
	pump(vm);
}

/* r: the reply to the call the unit waited on; NULL to start it. */
void
unit_step(struct unit *u, const struct vreply *r)
{
	switch (u->kind) {
	case U_MOUNT:
		mount_step(u, r);
		break;
	case U_UNMOUNT:
		unmount_step(u, r);
		break;
	case U_BIND:
		bind_step(u, r);
		break;
	case U_UNBIND:
		unbind_step(u, r);
		break;
	case U_REGISTER:
		register_step(u, r);
		break;
	case U_CREATE:
		create_step(u, r);
		break;
	case U_DELETE:
		delete_step(u, r);
		break;
	case U_EXPAND:
		expand_step(u, r);
		break;
	case U_SNAPSHOT:
		snapshot_step(u, r);
		break;
	case U_RECOVER:
		recover_step(u, r);
		break;
	}
}

static struct unit *
unit_new(struct job *j, enum unit_kind kind, const char *ns, const char *vol)
{
	struct unit *u = xcalloc(1, sizeof(*u));

	u->job = j;
	u->kind = kind;
	snprintf(u->ns, sizeof(u->ns), "%s", ns != NULL ? ns : "");
	snprintf(u->vol, sizeof(u->vol), "%s", vol != NULL ? vol : "");
	TAILQ_INSERT_TAIL(&j->vm->units, u, entry);
	return u;
}

/* The k-th (task, mount) pair of the alloc, in document order. */
static bool
nth_mount(const struct alloc *a, size_t k, const struct alloc_task **t,
    const struct alloc_mount **m)
{
	for (size_t i = 0; a != NULL && i < a->ntasks; i++) {
		if (k < a->tasks[i].nmounts) {
			*t = &a->tasks[i];
			*m = &a->tasks[i].mounts[k];
			return true;
		}
		k -= a->tasks[i].nmounts;
	}
	return false;
}

static struct vpub *
pub_of_request(struct volmgr *vm, const struct alloc *a,
    const struct alloc_volume *r)
{
	char usage[160];

	pub_usage(usage, sizeof(usage), r);
	return pub_find(vm, a->id, a->ns, r->source, usage);
}

/* Make and start the job's next unit, or finish it. */
static void
job_next(struct job *j)
{
	struct volmgr *vm = j->vm;
	const struct alloc *a = j->doc;
	const struct alloc_task *t;
	const struct alloc_mount *m;
	struct unit *u;
	struct vpub *p = NULL;
	size_t k = j->next++;

	/* A recovery's mount whose alloc goes: its document may go next. */
	if (j->cancelled) {
		snprintf(j->why, sizeof(j->why), "its alloc was stopped "
		    "meanwhile");
		j->status = VOLMGR_FAILED;
		job_finish(j);
		return;
	}
	if (j->mount && a != NULL && k < a->nvolumes) {
		u = unit_new(j, U_MOUNT, a->ns, a->volumes[k].source);
		u->req = &a->volumes[k];
		pump(vm);
		return;
	}
	if (j->mount && a != NULL)
		k -= a->nvolumes;
	if (nth_mount(a, k, &t, &m)) {
		if (j->mount && (p = pub_of_request(vm, a,
		    &a->volumes[m->volume_index])) == NULL) {
			job_next(j);
			return;
		}
		u = unit_new(j, j->mount ? U_BIND : U_UNBIND, NULL, NULL);
		u->pub = j->mount ? p : NULL;
		u->task = t->name;
		u->dest = m->destination;
		u->ro = m->read_only;
		pump(vm);
		return;
	}
	if (!j->mount)
		TAILQ_FOREACH(p, &vm->pubs, entry)
			if (strcmp(p->alloc, j->alloc) == 0) {
				u = unit_new(j, U_UNMOUNT, p->ns, p->vol);
				u->pub = p;
				pump(vm);
				return;
			}
	job_finish(j);
}

static struct job *
job_new(struct volmgr *vm, const char *alloc, const struct alloc *a,
    bool mount, volmgr_cb cb, void *arg)
{
	struct job *j = xcalloc(1, sizeof(*j));

	j->vm = vm;
	j->alloc = xstrdup(alloc);
	j->doc = a;
	j->mount = mount;
	j->cb = cb;
	j->arg = arg;
	clock_gettime(CLOCK_MONOTONIC, &j->started);
	return j;
}

void
volmgr_job_go(struct job *j)
{
	if (!j->vm->ready) {
		TAILQ_INSERT_TAIL(&j->vm->waiting, j, entry);
		return;
	}
	if (j->single != NULL)
		pump(j->vm);
	else
		job_next(j);
}

/* ---- the interface ---- */

struct volmgr *
volmgr_new(const struct volmgr_deps *d)
{
	struct volmgr *vm = xcalloc(1, sizeof(*vm));

	vm->d = *d;
	vm->d.data_dir = xstrdup(d->data_dir != NULL ? d->data_dir : "");
	vm->d.secrets_dir = xstrdup(d->secrets_dir != NULL ? d->secrets_dir :
	    "/etc/berth/secrets");
	TAILQ_INIT(&vm->pubs);
	TAILQ_INIT(&vm->units);
	TAILQ_INIT(&vm->waiting);
	TAILQ_INIT(&vm->stats);
	TAILQ_INIT(&vm->recoveries);
	return vm;
}

void
volmgr_start(struct volmgr *vm)
{
	records_read(vm);
	stats_start(vm);
}

bool
volmgr_ready(const struct volmgr *vm)
{
	return vm->ready;
}

bool
volmgr_uses_plugin(struct volmgr *vm, const char *plugin)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (strcmp(p->plugin, plugin) == 0)
			return true;
	return false;
}

void
volmgr_each_pub_of(struct volmgr *vm, const char *plugin,
    void (*fn)(const char *ns, const char *vol, const char *alloc,
    void *arg), void *arg)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (strcmp(p->plugin, plugin) == 0)
			fn(p->ns, p->vol, p->alloc, arg);
}

void
volmgr_free(struct volmgr *vm)
{
	struct unit *u;
	struct job *j;
	struct vpub *p;

	if (vm == NULL)
		return;
	while ((u = TAILQ_FIRST(&vm->units)) != NULL) {
		TAILQ_REMOVE(&vm->units, u, entry);
		j = u->job;
		/* A job has one unit at a time: free it with its unit. */
		unit_free(u);
		if (j->then != NULL)
			job_free(j->then);
		job_free(j);
	}
	while ((j = TAILQ_FIRST(&vm->waiting)) != NULL) {
		TAILQ_REMOVE(&vm->waiting, j, entry);
		if (j->then != NULL)
			job_free(j->then);
		job_free(j);
	}
	while ((p = TAILQ_FIRST(&vm->pubs)) != NULL)
		pub_free(vm, p);
	stats_free(vm);
	recover_free(vm);
	/* Calls still out come back to call_back(), which frees it. */
	vm->dying = true;
	if (vm->inflight == 0) {
		free((char *)vm->d.data_dir);
		free((char *)vm->d.secrets_dir);
		free(vm);
	}
}

void
volmgr_mount(struct volmgr *vm, const struct alloc *a, gid_t group,
    volmgr_cb cb, void *arg)
{
	struct job *j = job_new(vm, a->id, a, true, cb, arg);

	j->group = group;
	volmgr_job_go(j);
}

void
recover_mount(struct volmgr *vm, const struct alloc *a, gid_t group,
    volmgr_cb cb, void *arg)
{
	struct job *j = job_new(vm, a->id, a, true, cb, arg);

	j->group = group;
	j->recovery = true;
	volmgr_job_go(j);
}

void
volmgr_unmount(struct volmgr *vm, const char *alloc, const struct alloc *a,
    volmgr_cb cb, void *arg)
{
	struct job *j = job_new(vm, alloc, a, false, cb, arg);

	if (!recover_alloc_goes(vm, alloc, j))
		volmgr_job_go(j);
}

void
volmgr_each_alloc(struct volmgr *vm, void (*fn)(const char *alloc,
    void *arg), void *arg)
{
	struct vpub *p, *q;

	TAILQ_FOREACH(p, &vm->pubs, entry) {
		/* Once per alloc. */
		for (q = TAILQ_FIRST(&vm->pubs); q != p; q =
		    TAILQ_NEXT(q, entry))
			if (strcmp(q->alloc, p->alloc) == 0)
				break;
		if (q == p)
			fn(p->alloc, arg);
	}
}

void
operator_job(struct volmgr *vm, enum unit_kind kind,
    const struct volmgr_spec *s, const char *ns, const char *id,
    volmgr_cb cb, void *arg)
{
	operator_unit(vm, kind, s, ns, id, cb, arg);
	/* Not queued behind the records: operator units need none. */
	pump(vm);
}

struct unit *
operator_unit(struct volmgr *vm, enum unit_kind kind,
    const struct volmgr_spec *s, const char *ns, const char *id,
    volmgr_cb cb, void *arg)
{
	struct job *j = job_new(vm, "-", NULL, false, cb, arg);
	struct unit *u = unit_new(j, kind, ns, id);

	if (s != NULL)
		spec_copy(&u->spec, s);
	j->single = u;
	return u;
}

void
units_pump(struct volmgr *vm)
{
	pump(vm);
}

struct job *
recover_job(struct volmgr *vm, struct vpub *p, volmgr_cb cb, void *arg)
{
	struct job *j = job_new(vm, p->alloc, NULL, false, cb, arg);

	j->single = unit_new(j, U_RECOVER, p->ns, p->vol);
	j->single->pub = p;
	return j;
}

void
volmgr_register(struct volmgr *vm, const struct volmgr_spec *s,
    volmgr_cb cb, void *arg)
{
	operator_job(vm, U_REGISTER, s, s->ns, s->id, cb, arg);
}

void
volmgr_create(struct volmgr *vm, const struct volmgr_spec *s, volmgr_cb cb,
    void *arg)
{
	operator_job(vm, U_CREATE, s, s->ns, s->id, cb, arg);
}

void
volmgr_delete(struct volmgr *vm, const char *ns, const char *id,
    volmgr_cb cb, void *arg)
{
	operator_job(vm, U_DELETE, NULL, ns, id, cb, arg);
}

void
unit_event(struct unit *u, const char *type, const char *plugin,
    const char *done)
{
	/* An operator's job is alloc "-": no alloc. */
	events_record(u->job->vm->d.events, "volume", type,
	    u->job->single == NULL ? u->job->alloc : NULL, NULL, plugin,
	    "volume %s/%s %s", u->ns, u->vol, done);
}

/* Is p's volume (staged, if so asked) also one of a pub before it? */
static bool
counted_before(const struct volmgr *vm, const struct vpub *p, bool staged)
{
	const struct vpub *q;

	TAILQ_FOREACH(q, &vm->pubs, entry) {
		if (q == p)
			return false;
		if ((!staged || q->staged) && strcmp(q->ns, p->ns) == 0 &&
		    strcmp(q->vol, p->vol) == 0)
			return true;
	}
	return false;
}

void
volmgr_counts(const struct volmgr *vm, struct volmgr_counts *c)
{
	const struct vpub *p;

	memset(c, 0, sizeof(*c));
	TAILQ_FOREACH(p, &vm->pubs, entry) {
		if (!counted_before(vm, p, false))
			c->in_use++;
		if (p->staged && !counted_before(vm, p, true))
			c->staged++;
		if (p->published)
			c->published++;
	}
}
