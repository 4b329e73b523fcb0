/*
 * volmgr_admit.c: whether this node's plugin may take a volume, before
 * anything is claimed or recorded for it: the two CSI 1.5 access modes
 * only with a node plugin that advertises SINGLE_NODE_MULTI_WRITER; a
 * volume with an accessible topology only on a node whose fingerprinted
 * topology matches one of it; and no more volumes than the plugin's
 * max_volumes_per_node (the alloc then waits until one is released).
 * It also names the new modes as the mounter's paths know them, and
 * carries a volume's topologies between the operator's spec, CSI and
 * the registry. Must not: call anyone (the registry enforces the claim
 * rules themselves, registry/claims.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "volmgr_int.h"
#include "xalloc.h"

bool
access_is_csi15(Berth__AccessMode m)
{
	return m == BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER ||
	    m == BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_MULTI_WRITER;
}

/*
 * The mode a path names. The mounter derives per-usage paths from modes
 * 1 to 5 only; both CSI 1.5 modes are single-node writer modes, and a
 * volume's claims all share one mode, so single-node-writer names them
 * without two uses of one alloc ever meeting at one path.
 */
Berth__AccessMode
path_access(Berth__AccessMode m)
{
	return access_is_csi15(m) ?
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER : m;
}

/* Is "key=value" one of the fingerprint's "k=v,k=v" segments? */
static bool
node_has(const char *topo, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);
	const char *p = topo, *end;

	for (; *p != '\0'; p = *end == ',' ? end + 1 : end) {
		if ((end = strchr(p, ',')) == NULL)
			end = p + strlen(p);
		if ((size_t)(end - p) == kl + 1 + vl &&
		    strncmp(p, key, kl) == 0 && p[kl] == '=' &&
		    strncmp(p + kl + 1, value, vl) == 0)
			return true;
	}
	return false;
}

/*
 * A node matches a volume with no accessible topology, or one of whose
 * topologies has every segment among the node's (CSI: accessible from
 * nodes whose topology matches one of them).
 */
bool
topology_matches(const char *node_topo, Berth__Topology *const *t, size_t n)
{
	size_t i, j;

	if (n == 0)
		return true;
	for (i = 0; i < n; i++) {
		for (j = 0; j < t[i]->n_segments; j++)
			if (!node_has(node_topo, t[i]->segments[j]->key,
			    t[i]->segments[j]->value))
				break;
		if (j == t[i]->n_segments)
			return true;
	}
	return false;
}

/* "{k=v,k=v} or {k=v}", for a refusal. */
static void
topologies_text(char *buf, size_t n, Berth__Topology *const *t, size_t nt)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nt && off < n; i++) {
		off += (size_t)snprintf(buf + off, n - off, "%s{", i > 0 ?
		    " or " : "");
		for (size_t j = 0; j < t[i]->n_segments && off < n; j++)
			off += (size_t)snprintf(buf + off, n - off, "%s%s=%s",
			    j > 0 ? "," : "", t[i]->segments[j]->key,
			    t[i]->segments[j]->value);
		if (off < n)
			off += (size_t)snprintf(buf + off, n - off, "}");
	}
}

/* Volumes of plugin in use on this node, other than ns/vol; and
 * whether ns/vol is in use here already. */
static size_t
volumes_in_use(struct volmgr *vm, const char *plugin, const char *ns,
    const char *vol, bool *here)
{
	struct vpub *p, *q;
	size_t n = 0;

	*here = false;
	TAILQ_FOREACH(p, &vm->pubs, entry) {
		if (strcmp(p->plugin, plugin) != 0)
			continue;
		if (strcmp(p->ns, ns) == 0 && strcmp(p->vol, vol) == 0) {
			*here = true;
			continue;
		}
		/* Each volume once: counted at its first pub. */
		for (q = TAILQ_FIRST(&vm->pubs); q != p;
		    q = TAILQ_NEXT(q, entry))
			if (strcmp(q->ns, p->ns) == 0 &&
			    strcmp(q->vol, p->vol) == 0)
				break;
		if (q == p)
			n++;
	}
	return n;
}

/* The mode needs SINGLE_NODE_MULTI_WRITER, which node lacks: why. */
static bool
mode_refused(const struct volmgr_plugin *node, const char *ns,
    const char *id, const char *plugin, Berth__AccessMode m, char *why,
    size_t n)
{
	if (!access_is_csi15(m) || node->fp->single_node_multi_writer)
		return false;
	snprintf(why, n, "volume %s/%s: access mode %s needs a node plugin "
	    "that advertises SINGLE_NODE_MULTI_WRITER, and plugin %s does not",
	    ns, id, alloc_access_mode_name(m), plugin);
	return true;
}

bool
volmgr_refuses(struct volmgr *vm, const Berth__Volume *v,
    Berth__AccessMode access, char *why, size_t n)
{
	struct volmgr_plugin node;
	char want[512];

	/* No healthy node instance: asked again when there is one. */
	if (!node_of(vm, v->plugin_id, &node))
		return false;
	if (mode_refused(&node, v->namespace_, v->id, v->plugin_id, access,
	    why, n))
		return true;
	if (topology_matches(node.fp->topology, v->accessible_topology,
	    v->n_accessible_topology))
		return false;
	topologies_text(want, sizeof(want), v->accessible_topology,
	    v->n_accessible_topology);
	snprintf(why, n, "volume %s/%s is accessible from topology %s, and "
	    "this node's (plugin %s) is {%s}", v->namespace_, v->id, want,
	    v->plugin_id, node.fp->topology);
	return true;
}

bool
spec_refused(struct unit *u)
{
	struct volmgr_plugin node;
	char why[512];

	if (!node_of(u->job->vm, u->spec.plugin, &node) ||
	    !mode_refused(&node, u->spec.ns, u->spec.id, u->spec.plugin,
	    u->spec.access, why, sizeof(why)))
		return false;
	unit_fail(u, VOLMGR_FAILED, "%s", why);
	unit_end(u);
	return true;
}

bool
admit_mount(struct unit *u, const Berth__Volume *v)
{
	const struct alloc_volume *r = u->req;
	struct volmgr_plugin node;
	char why[1024];
	size_t used;
	bool here;

	if (r != NULL && volmgr_refuses(u->job->vm, v, r->access_mode, why,
	    sizeof(why))) {
		unit_fail(u, VOLMGR_FAILED, "%s", why);
		unit_end(u);
		return false;
	}
	/* No healthy node instance: node_or_end() makes the unit wait. */
	if (!node_of(u->job->vm, v->plugin_id, &node))
		return true;
	used = volumes_in_use(u->job->vm, v->plugin_id, u->ns, u->vol, &here);
	if (!here && node.fp->max_volumes > 0 &&
	    (int64_t)used >= node.fp->max_volumes) {
		unit_fail(u, VOLMGR_RETRY, "volume %s/%s: plugin %s holds %zu "
		    "volumes on this node, its max_volumes_per_node; waiting "
		    "for one to be released", u->ns, u->vol, v->plugin_id,
		    used);
		unit_end(u);
		return false;
	}
	return true;
}

/* ---- topologies: the spec's, CSI's, the registry's ---- */

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
