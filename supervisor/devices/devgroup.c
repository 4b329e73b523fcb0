/*
 * devgroup.c: the device manager's value types (see devmgr.h): groups of
 * devices, stats reports and reservations, built and freed here so that
 * every plugin and the catalogue do it the same way.
 *
 * Owns: the memory of these values only. Must not: accept a string that
 * does not fit (values are cut at their field's size, never overrun).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmgr.h"
#include "xalloc.h"

/* Grow *arr (of *n elements of size sz) by one zeroed element. */
static void *
grow(void *arr, size_t *n, size_t sz, void **elem)
{
	char *a;

	a = xreallocarray(arr, *n + 1, sz);
	memset(a + *n * sz, 0, sz);
	*elem = a + *n * sz;
	(*n)++;
	return a;
}

struct dev_group *
dev_groups_find(const struct dev_groups *gs, const char *vendor,
    const char *type, const char *name)
{
	size_t i;

	for (i = 0; i < gs->n; i++)
		if (strcmp(gs->g[i].vendor, vendor) == 0 &&
		    strcmp(gs->g[i].type, type) == 0 &&
		    strcmp(gs->g[i].name, name) == 0)
			return &gs->g[i];
	return NULL;
}

/* The group with this key, made if it is new. */
struct dev_group *
dev_groups_add(struct dev_groups *gs, const char *vendor, const char *type,
    const char *name)
{
	struct dev_group *g;
	void *a, *e;

	if ((g = dev_groups_find(gs, vendor, type, name)) != NULL)
		return g;
	a = grow(gs->g, &gs->n, sizeof(*gs->g), &e);
	gs->g = a;
	g = e;
	snprintf(g->vendor, sizeof(g->vendor), "%s", vendor);
	snprintf(g->type, sizeof(g->type), "%s", type);
	snprintf(g->name, sizeof(g->name), "%s", name);
	return g;
}

struct dev_device *
dev_group_find_device(const struct dev_group *g, const char *id)
{
	size_t i;

	for (i = 0; i < g->ndevs; i++)
		if (strcmp(g->devs[i].id, id) == 0)
			return &g->devs[i];
	return NULL;
}

/* A new healthy device. */
struct dev_device *
dev_group_add_device(struct dev_group *g, const char *id)
{
	struct dev_device *d;
	void *a, *e;

	a = grow(g->devs, &g->ndevs, sizeof(*g->devs), &e);
	g->devs = a;
	d = e;
	snprintf(d->id, sizeof(d->id), "%s", id);
	d->healthy = true;
	return d;
}

void
dev_groups_copy(struct dev_groups *dst, const struct dev_groups *src)
{
	size_t i;

	dst->n = 0;
	if (src->n == 0) {
		dst->g = NULL;
		return;
	}
	dst->g = xcalloc(src->n, sizeof(*dst->g));
	for (i = 0; i < src->n; i++, dst->n++) {
		dst->g[i] = src->g[i];
		dst->g[i].devs = NULL;
		if (src->g[i].ndevs == 0)
			continue;
		dst->g[i].devs = xcalloc(src->g[i].ndevs,
		    sizeof(*src->g[i].devs));
		memcpy(dst->g[i].devs, src->g[i].devs,
		    src->g[i].ndevs * sizeof(*src->g[i].devs));
	}
}

void
dev_groups_free(struct dev_groups *gs)
{
	size_t i;

	for (i = 0; i < gs->n; i++)
		free(gs->g[i].devs);
	free(gs->g);
	gs->g = NULL;
	gs->n = 0;
}

int
dev_attr_set(struct dev_device *d, const char *key, const char *value)
{
	struct dev_attr *a = NULL;
	size_t i;

	for (i = 0; i < d->nattrs && a == NULL; i++)
		if (strcmp(d->attrs[i].key, key) == 0)
			a = &d->attrs[i];
	if (a == NULL) {
		if (d->nattrs == DEV_ATTRS_MAX)
			return -ENOSPC;
		a = &d->attrs[d->nattrs++];
		snprintf(a->key, sizeof(a->key), "%s", key);
	}
	snprintf(a->value, sizeof(a->value), "%s", value);
	return 0;
}

const char *
dev_attr_get(const struct dev_device *d, const char *key)
{
	size_t i;

	for (i = 0; i < d->nattrs; i++)
		if (strcmp(d->attrs[i].key, key) == 0)
			return d->attrs[i].value;
	return NULL;
}

struct dev_stat *
dev_stats_add(struct dev_stats *st, const char *type, const char *id)
{
	struct dev_stat *s;
	void *a, *e;

	a = grow(st->s, &st->n, sizeof(*st->s), &e);
	st->s = a;
	s = e;
	snprintf(s->type, sizeof(s->type), "%s", type);
	snprintf(s->id, sizeof(s->id), "%s", id);
	return s;
}

int
dev_stat_set(struct dev_stat *s, const char *key, uint64_t value)
{
	if (s->ncounters == DEV_COUNTERS_MAX)
		return -ENOSPC;
	snprintf(s->counters[s->ncounters].key,
	    sizeof(s->counters[s->ncounters].key), "%s", key);
	s->counters[s->ncounters++].value = value;
	return 0;
}

void
dev_stats_free(struct dev_stats *st)
{
	free(st->s);
	st->s = NULL;
	st->n = 0;
}

static void
push_str(char ***arr, size_t *n, char *s)
{
	*arr = xreallocarray(*arr, *n + 1, sizeof(**arr));
	(*arr)[(*n)++] = s;
}

void
dev_reservation_node(struct dev_reservation *r, const char *path)
{
	push_str(&r->nodes, &r->nnodes, xstrdup(path));
}

void
dev_reservation_env(struct dev_reservation *r, const char *key,
    const char *value)
{
	char *s;

	xasprintf(&s, "%s=%s", key, value);
	push_str(&r->env, &r->nenv, s);
}

void
dev_reservation_free(struct dev_reservation *r)
{
	size_t i;

	for (i = 0; i < r->nnodes; i++)
		free(r->nodes[i]);
	for (i = 0; i < r->nenv; i++)
		free(r->env[i]);
	free(r->nodes);
	free(r->env);
	memset(r, 0, sizeof(*r));
}
