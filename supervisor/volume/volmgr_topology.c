/*
 * volmgr_topology.c: a volume's topologies as they go between the
 * operator's spec (copied with it), CSI's CreateVolume (its
 * accessibility requirements, and the accessible_topology answered) and
 * the registry's volume record. Whether a node matches them is
 * volmgr_admit.c's. Must not: call anyone.
 */
#include <stdlib.h>

#include "volmgr_int.h"
#include "xalloc.h"

static struct volmgr_topology *
topo_copy(const struct volmgr_topology *t, size_t n)
{
	struct volmgr_topology *c = xcalloc(n + 1, sizeof(*c));
	struct volmgr_param *seg;

	for (size_t i = 0; i < n; i++) {
		seg = xcalloc(t[i].nseg + 1, sizeof(*seg));
		for (size_t j = 0; j < t[i].nseg; j++) {
			seg[j].key = xstrdup(t[i].seg[j].key);
			seg[j].value = xstrdup(t[i].seg[j].value);
		}
		c[i].seg = seg;
		c[i].nseg = t[i].nseg;
	}
	return c;
}

static void
topo_free(const struct volmgr_topology *t, size_t n)
{
	for (size_t i = 0; t != NULL && i < n; i++) {
		for (size_t j = 0; j < t[i].nseg; j++) {
			free((char *)t[i].seg[j].key);
			free((char *)t[i].seg[j].value);
		}
		free((struct volmgr_param *)t[i].seg);
	}
	free((struct volmgr_topology *)t);
}

void
spec_topology_copy(struct volmgr_spec *d, const struct volmgr_spec *s)
{
	d->requisite = topo_copy(s->requisite, s->nrequisite);
	d->preferred = topo_copy(s->preferred, s->npreferred);
	d->accessible = topo_copy(s->accessible, s->naccessible);
}

void
spec_topology_free(struct volmgr_spec *s)
{
	topo_free(s->requisite, s->nrequisite);
	topo_free(s->preferred, s->npreferred);
	topo_free(s->accessible, s->naccessible);
	s->requisite = s->preferred = s->accessible = NULL;
}

/* CreateVolume's accessible_topology, kept as the spec's accessible. */
void
spec_take_accessible(struct volmgr_spec *s, Csi__V1__Topology *const *t,
    size_t n)
{
	struct volmgr_topology *c = xcalloc(n + 1, sizeof(*c));
	struct volmgr_param *seg;

	for (size_t i = 0; i < n; i++) {
		seg = xcalloc(t[i]->n_segments + 1, sizeof(*seg));
		for (size_t j = 0; j < t[i]->n_segments; j++) {
			seg[j].key = xstrdup(t[i]->segments[j]->key);
			seg[j].value = xstrdup(t[i]->segments[j]->value);
		}
		c[i].seg = seg;
		c[i].nseg = t[i]->n_segments;
	}
	topo_free(s->accessible, s->naccessible);
	s->accessible = c;
	s->naccessible = n;
}

/* CSI's message for the spec's topologies, all on the heap. */
static Csi__V1__Topology **
csi_topologies(const struct volmgr_topology *t, size_t n)
{
	Csi__V1__Topology **v = xcalloc(n + 1, sizeof(*v));
	Csi__V1__Topology__SegmentsEntry *e;

	for (size_t i = 0; i < n; i++) {
		v[i] = xcalloc(1, sizeof(*v[i]));
		csi__v1__topology__init(v[i]);
		v[i]->segments = xcalloc(t[i].nseg + 1,
		    sizeof(*v[i]->segments));
		for (size_t j = 0; j < t[i].nseg; j++) {
			e = xcalloc(1, sizeof(*e));
			csi__v1__topology__segments_entry__init(e);
			e->key = (char *)t[i].seg[j].key;
			e->value = (char *)t[i].seg[j].value;
			v[i]->segments[j] = e;
		}
		v[i]->n_segments = t[i].nseg;
	}
	return v;
}

static void
csi_topologies_free(Csi__V1__Topology **v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++) {
		for (size_t j = 0; j < v[i]->n_segments; j++)
			free(v[i]->segments[j]);
		free(v[i]->segments);
		free(v[i]);
	}
	free(v);
}

Csi__V1__TopologyRequirement *
csi_requirement(const struct volmgr_spec *s)
{
	Csi__V1__TopologyRequirement *r;

	if (s->nrequisite == 0 && s->npreferred == 0)
		return NULL;
	r = xcalloc(1, sizeof(*r));
	csi__v1__topology_requirement__init(r);
	r->requisite = csi_topologies(s->requisite, s->nrequisite);
	r->n_requisite = s->nrequisite;
	r->preferred = csi_topologies(s->preferred, s->npreferred);
	r->n_preferred = s->npreferred;
	return r;
}

void
csi_requirement_free(Csi__V1__TopologyRequirement *r)
{
	if (r == NULL)
		return;
	csi_topologies_free(r->requisite, r->n_requisite);
	csi_topologies_free(r->preferred, r->n_preferred);
	free(r);
}

/* The registry's message for the spec's topologies, on the heap. */
static Berth__Topology **
reg_topologies(const struct volmgr_topology *t, size_t n)
{
	Berth__Topology **v = xcalloc(n + 1, sizeof(*v));
	Berth__KeyValue *kv;

	for (size_t i = 0; i < n; i++) {
		v[i] = xcalloc(1, sizeof(*v[i]));
		berth__topology__init(v[i]);
		v[i]->segments = xcalloc(t[i].nseg + 1,
		    sizeof(*v[i]->segments));
		for (size_t j = 0; j < t[i].nseg; j++) {
			kv = xcalloc(1, sizeof(*kv));
			berth__key_value__init(kv);
			kv->key = (char *)t[i].seg[j].key;
			kv->value = (char *)t[i].seg[j].value;
			v[i]->segments[j] = kv;
		}
		v[i]->n_segments = t[i].nseg;
	}
	return v;
}

static void
reg_topologies_free(Berth__Topology **v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++) {
		for (size_t j = 0; j < v[i]->n_segments; j++)
			free(v[i]->segments[j]);
		free(v[i]->segments);
		free(v[i]);
	}
	free(v);
}

void
volume_topologies(Berth__Volume *v, const struct volmgr_spec *s)
{
	v->requisite = reg_topologies(s->requisite, s->nrequisite);
	v->n_requisite = s->nrequisite;
	v->preferred = reg_topologies(s->preferred, s->npreferred);
	v->n_preferred = s->npreferred;
	v->accessible_topology = reg_topologies(s->accessible, s->naccessible);
	v->n_accessible_topology = s->naccessible;
}

void
volume_topologies_free(Berth__Volume *v)
{
	reg_topologies_free(v->requisite, v->n_requisite);
	reg_topologies_free(v->preferred, v->n_preferred);
	reg_topologies_free(v->accessible_topology, v->n_accessible_topology);
}
