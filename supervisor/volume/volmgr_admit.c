/*
 * volmgr_admit.c: whether this node's plugin may take a volume, before
 * anything is claimed or recorded for it: the two CSI 1.5 access modes
 * only with a node plugin that advertises SINGLE_NODE_MULTI_WRITER; a
 * volume with an accessible topology only on a node whose fingerprinted
 * topology matches one of it; and no more volumes than the plugin's
 * max_volumes_per_node (the alloc then waits until one is released).
 * It also names the new modes as the mounter's paths know them. Must
 * not: call anyone (the registry enforces the claim rules themselves,
 * registry/claims.c).
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "volmgr_int.h"

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
