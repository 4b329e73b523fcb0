/*
 * volmgr_pubs.c: what each alloc uses (one pub per alloc, volume and
 * usage), where a volume is staged (once, for all its pubs), and who else
 * uses a staging path or a volume, counted from the pubs. The pubs
 * mirror the registry's mount records (volmgr_records.c), so the counts
 * survive a restart. Must not: call anyone.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "alloc.h"
#include "layout.h"
#include "volmgr_int.h"
#include "xalloc.h"

static void take_options(struct vpub *, const Berth__Volume *);

void
kvs_clear(struct kvs *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->key[i]);
		free(k->value[i]);
	}
	k->n = 0;
}

void
kvs_add(struct kvs *k, const char *key, const char *value)
{
	if (k->n == CTX_MAX)
		return;
	k->key[k->n] = xstrdup(key != NULL ? key : "");
	k->value[k->n++] = xstrdup(value != NULL ? value : "");
}

struct vpub *
pub_find(struct volmgr *vm, const char *alloc, const char *ns,
    const char *vol, const char *usage)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (strcmp(p->alloc, alloc) == 0 && strcmp(p->ns, ns) == 0 &&
		    strcmp(p->vol, vol) == 0 && strcmp(p->usage, usage) == 0)
			return p;
	return NULL;
}

static char *
dup_or_empty(const char *s)
{
	return xstrdup(s != NULL ? s : "");
}

struct vpub *
pub_new(struct volmgr *vm, const char *alloc, const char *ns,
    const char *vol, const char *name, const char *plugin, const char *usage)
{
	struct vpub *p = xcalloc(1, sizeof(*p));

	p->alloc = dup_or_empty(alloc);
	p->ns = dup_or_empty(ns);
	p->vol = dup_or_empty(vol);
	p->name = dup_or_empty(name);
	p->plugin = dup_or_empty(plugin);
	p->usage = dup_or_empty(usage);
	p->stage_usage = dup_or_empty(NULL);
	TAILQ_INSERT_TAIL(&vm->pubs, p, entry);
	return p;
}

static bool same_volume(const struct vpub *, const struct vpub *);

void
pub_free(struct volmgr *vm, struct vpub *p)
{
	struct vpub *q;

	TAILQ_REMOVE(&vm->pubs, p, entry);
	TAILQ_FOREACH(q, &vm->pubs, entry)
		if (same_volume(p, q))
			break;
	/* The last use of that volume here: room for another. */
	if (q == NULL && !vm->dying && vm->d.room != NULL)
		vm->d.room(vm->d.allocs_ctx, p->plugin);
	free(p->alloc);
	free(p->ns);
	free(p->vol);
	free(p->name);
	free(p->plugin);
	free(p->usage);
	free(p->stage_usage);
	free(p->external_id);
	kvs_clear(&p->vctx);
	kvs_clear(&p->pctx);
	kvs_clear(&p->srefs);
	take_options(p, NULL);
	free(p);
}

/* The usage a request names ("rw-file-system-single-node-writer"). */
void
pub_usage(char *buf, size_t n, const struct alloc_volume *r)
{
	layout_usage(buf, n, r->read_only,
	    alloc_attachment_mode_name(r->attachment_mode),
	    alloc_access_mode_name(path_access(r->access_mode)));
}

bool
usage_parse(const char *usage, bool *read_only,
    Berth__AttachmentMode *attachment, Berth__AccessMode *access)
{
	char u[160];

	for (int ro = 0; ro < 2; ro++)
		for (int at = 1; at <= 2; at++)
			for (int ac = 1; ac <= 5; ac++) {
				if (layout_usage(u, sizeof(u), ro,
				    alloc_attachment_mode_name(at),
				    alloc_access_mode_name(ac)) < 0 ||
				    strcmp(u, usage) != 0)
					continue;
				*read_only = ro;
				*attachment = at;
				*access = ac;
				return true;
			}
	return false;
}

static bool
same_volume(const struct vpub *a, const struct vpub *b)
{
	return strcmp(a->plugin, b->plugin) == 0 && strcmp(a->ns, b->ns) ==
	    0 && strcmp(a->vol, b->vol) == 0;
}

/* A staged one first: there are several only where an older berth
 * staged one volume per usage. */
void
pub_join_stage(struct volmgr *vm, struct vpub *me)
{
	struct vpub *p, *to = NULL;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (p != me && same_volume(p, me) && (to == NULL ||
		    (p->staged && !to->staged)))
			to = p;
	if (to != NULL) {
		free(me->stage_usage);
		me->stage_usage = xstrdup(to->stage_usage);
	}
}

/*
 * Others still using the staging path: the same plugin, volume and
 * path under the same plugin root (a pub known from its record only
 * does not know its root's <type> yet: taken as the same).
 */
bool
stage_shared(struct volmgr *vm, const struct vpub *me)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (p != me && p->staged && same_volume(p, me) &&
		    strcmp(p->stage_usage, me->stage_usage) == 0 &&
		    (p->type[0] == '\0' || strcmp(p->type, me->type) == 0))
			return true;
	return false;
}

/* Others using the volume at all: by any alloc (node), or this alloc. */
bool
volume_shared(struct volmgr *vm, const struct vpub *me, bool same_alloc)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (p != me && strcmp(p->ns, me->ns) == 0 && strcmp(p->vol,
		    me->vol) == 0 && (!same_alloc || strcmp(p->alloc,
		    me->alloc) == 0))
			return true;
	return false;
}

/* The volume's mount options (none when v is NULL), replacing any. */
static void
take_options(struct vpub *p, const Berth__Volume *v)
{
	free(p->fs_type);
	p->fs_type = NULL;
	for (size_t i = 0; i < p->nflags; i++)
		free(p->flags[i]);
	p->nflags = 0;
	if (v == NULL)
		return;
	if (v->fs_type != NULL && v->fs_type[0] != '\0')
		p->fs_type = xstrdup(v->fs_type);
	for (size_t i = 0; i < v->n_mount_flags && i < FLAGS_MAX / 2; i++)
		p->flags[p->nflags++] = xstrdup(v->mount_flags[i]);
}

/* The registry's volume: the provider's id, its context, options and
 * secret references. */
void
take_volume(struct vpub *p, const Berth__Volume *v)
{
	free(p->external_id);
	p->external_id = xstrdup(v->external_id != NULL &&
	    v->external_id[0] != '\0' ? v->external_id : v->id);
	recover_policy(p, v);
	kvs_clear(&p->vctx);
	for (size_t i = 0; i < v->n_context; i++)
		kvs_add(&p->vctx, v->context[i]->key, v->context[i]->value);
	kvs_clear(&p->srefs);
	for (size_t i = 0; i < v->n_secrets; i++)
		kvs_add(&p->srefs, v->secrets[i]->key, v->secrets[i]->value);
	take_options(p, v);
}
