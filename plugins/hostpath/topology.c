/*
 * topology.c: where berth-csi-hostpath's volumes can be reached, and how
 * many one node takes. The plugin's one topology segment is
 * HOSTPATH_TOPOLOGY_KEY = its node id, or the --topology KEY=VALUE it
 * was given; NodeGetInfo reports it with max_volumes_per_node
 * (HOSTPATH_MAX_VOLUMES, or --max-volumes N), and CreateVolume answers
 * it as the volume's accessible_topology, refusing a request whose
 * requisite topologies it is in none of (its volumes live on its own
 * node). Strict, these optional fields are left out unless a flag asks
 * for them. It also says which of the CSI 1.5 access modes the node
 * takes (SINGLE_NODE_MULTI_WRITER, unless --no-single-node-multi-writer).
 * Must not: touch the file system.
 */
#include <string.h>

#include "hostpath.h"
#include "log.h"

void
topology_flag(struct hostpath *hp, char *arg)
{
	char *eq = strchr(arg, '=');

	if (eq == NULL || eq == arg)
		fatalx("--topology %s: write KEY=VALUE, for example zone=a",
		    arg);
	*eq = '\0';
	hp->topology_key = arg;
	hp->topology_value = eq + 1;
}

/* The plugin's segment into seg, topo: shown or not (strict). */
bool
topology_own(const struct hostpath *hp, Csi__V1__Topology *topo,
    Csi__V1__Topology__SegmentsEntry *seg,
    Csi__V1__Topology__SegmentsEntry **segs)
{
	csi__v1__topology__init(topo);
	csi__v1__topology__segments_entry__init(seg);
	seg->key = (char *)(hp->topology_key != NULL ? hp->topology_key :
	    HOSTPATH_TOPOLOGY_KEY);
	seg->value = (char *)(hp->topology_key != NULL ? hp->topology_value :
	    hp->node_id);
	segs[0] = seg;
	topo->n_segments = 1;
	topo->segments = segs;
	return optional_fields(hp) || hp->topology_key != NULL;
}

int64_t
topology_max_volumes(const struct hostpath *hp)
{
	if (hp->max_volumes > 0)
		return hp->max_volumes;
	return optional_fields(hp) ? HOSTPATH_MAX_VOLUMES : 0;
}

/* Is every segment of t the plugin's own? */
static bool
reaches(const Csi__V1__Topology *t, const Csi__V1__Topology *own)
{
	for (size_t i = 0; i < t->n_segments; i++)
		if (strcmp(t->segments[i]->key, own->segments[0]->key) != 0 ||
		    strcmp(t->segments[i]->value, own->segments[0]->value) != 0)
			return false;
	return true;
}

bool
topology_create_ok(const struct hostpath *hp,
    const Csi__V1__CreateVolumeRequest *req, struct rpc_reply *r)
{
	const Csi__V1__TopologyRequirement *tr = req->accessibility_requirements;
	Csi__V1__Topology own;
	Csi__V1__Topology__SegmentsEntry seg, *segs[1];

	if (tr == NULL || tr->n_requisite == 0)
		return true;
	topology_own(hp, &own, &seg, segs);
	for (size_t i = 0; i < tr->n_requisite; i++)
		if (reaches(tr->requisite[i], &own))
			return true;
	reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "CreateVolume %s: this "
	    "plugin's volumes are reached from %s=%s only, which is none of "
	    "the requisite topologies", req->name, seg.key, seg.value);
	return false;
}

bool
topology_snmw(const struct hostpath *hp)
{
	return !hp->no_single_node_multi_writer;
}
