/*
 * volmgr_pubs.c: what each alloc uses (one pub per alloc, volume and
 * usage), and who else uses a staging path or a volume, counted from the
 * pubs. The pubs mirror the registry's mount records (volmgr_records.c),
 * so the counts survive a restart. Must not: call anyone.
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
	TAILQ_INSERT_TAIL(&vm->pubs, p, entry);
	return p;
}

void
pub_free(struct volmgr *vm, struct vpub *p)
{
	TAILQ_REMOVE(&vm->pubs, p, entry);
	free(p->alloc);
	free(p->ns);
	free(p->vol);
	free(p->name);
	free(p->plugin);
	free(p->usage);
	free(p->external_id);
	kvs_clear(&p->vctx);
	kvs_clear(&p->pctx);
	take_options(p, NULL);
	free(p);
}

/* The usage a request names ("rw-file-system-single-node-writer"). */
void
pub_usage(char *buf, size_t n, const struct alloc_volume *r)
{
	layout_usage(buf, n, r->read_only,
	    alloc_attachment_mode_name(r->attachment_mode),
	    alloc_access_mode_name(r->access_mode));
}

/* Others still using the staging path (same plugin, volume, usage). */
bool
stage_shared(struct volmgr *vm, const struct vpub *me)
{
	struct vpub *p;

	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (p != me && p->staged && strcmp(p->plugin, me->plugin) ==
		    0 && strcmp(p->ns, me->ns) == 0 && strcmp(p->vol,
		    me->vol) == 0 && strcmp(p->usage, me->usage) == 0)
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

/* The registry's volume: the provider's id, its context and options. */
void
take_volume(struct vpub *p, const Berth__Volume *v)
{
	free(p->external_id);
	p->external_id = xstrdup(v->external_id != NULL &&
	    v->external_id[0] != '\0' ? v->external_id : v->id);
	kvs_clear(&p->vctx);
	for (size_t i = 0; i < v->n_context; i++)
		kvs_add(&p->vctx, v->context[i]->key, v->context[i]->value);
	take_options(p, v);
}
