/*
 * identity.c: the CSI Identity service of berth-csi-hostpath.
 *
 * Who the plugin is, what it serves, and whether it is ready; also where
 * the Probe faults are injected. Strict, it gives the required fields
 * only: no manifest, no `ready`, no topology capability (NodeGetInfo then
 * gives none). It must not touch the file system.
 */
#include <string.h>
#include <unistd.h>

#include "hostpath.h"

#define SVC(t)	CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__##t

#ifndef HOSTPATH_VERSION
#define HOSTPATH_VERSION "0"
#endif

static void
get_plugin_info(struct hostpath *hp, const ProtobufCMessage *req,
    struct rpc_reply *r)
{
	Csi__V1__GetPluginInfoResponse out =
	    CSI__V1__GET_PLUGIN_INFO_RESPONSE__INIT;

	out.name = HOSTPATH_NAME;
	if (!hp->fault_minimal)
		out.vendor_version = HOSTPATH_VERSION;
	reply_ok(r, &out.base);
}

static void
get_plugin_capabilities(struct hostpath *hp, const ProtobufCMessage *req,
    struct rpc_reply *r)
{
	Csi__V1__GetPluginCapabilitiesResponse out =
	    CSI__V1__GET_PLUGIN_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__PluginCapability caps[5], *list[5];
	Csi__V1__PluginCapability__Service svc[5];
	Csi__V1__PluginCapability__VolumeExpansion exp =
	    CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__INIT;
	size_t n = 0, i;

	for (i = 0; i < 5; i++) {
		csi__v1__plugin_capability__init(&caps[i]);
		csi__v1__plugin_capability__service__init(&svc[i]);
		list[i] = &caps[i];
	}
	/* NodeGetInfo reports a topology, which needs this capability. */
	if (optional_fields(hp) || hp->topology_key != NULL) {
		svc[n].type = SVC(VOLUME_ACCESSIBILITY_CONSTRAINTS);
		caps[n].type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE;
		caps[n].service = &svc[n];
		n++;
	}
	if (hp->mode & HOSTPATH_CONTROLLER) {
		svc[n].type = SVC(CONTROLLER_SERVICE);
		caps[n].type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE;
		caps[n].service = &svc[n];
		n++;
	}
	/* Expansion, ONLINE unless told otherwise (expand.c). */
	exp.type = hp->expand_offline ?
	    CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__OFFLINE :
	    CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__ONLINE;
	caps[n].type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_VOLUME_EXPANSION;
	caps[n].volume_expansion = &exp;
	n++;
	if (hp->fault_unknown_caps) {
		/* One entry of an unknown type, one with no type at all. */
		svc[n].type = HOSTPATH_UNKNOWN_CAP;
		caps[n].type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE;
		caps[n].service = &svc[n];
		n++;
		n++;
	}
	out.n_capabilities = n;
	out.capabilities = list;
	reply_ok(r, &out.base);
}

static void
probe(struct hostpath *hp, const ProtobufCMessage *req, struct rpc_reply *r)
{
	Csi__V1__ProbeResponse out = CSI__V1__PROBE_RESPONSE__INIT;
	Csi__V1__BoolValue ready = CSI__V1__BOOL_VALUE__INIT;

	if (hp->fault_probe_fail_after >= 0 &&
	    hp->probes >= hp->fault_probe_fail_after) {
		reply_error(r, GRPC_STATUS_INTERNAL, "Probe: failing after %d "
		    "probes, as --fault-probe-fail-after asks", hp->probes);
		return;
	}
	hp->probes++;
	if (hp->probes == hp->fault_slow_probe)
		usleep((useconds_t)hp->fault_slow_probe_ms * 1000);
	ready.value = true;
	if (!hp->fault_probe_no_ready && optional_fields(hp))
		out.ready = &ready;
	reply_ok(r, &out.base);
}

const struct rpc_method identity_methods[] = {
	{ "/csi.v1.Identity/GetPluginInfo", "GetPluginInfo", 0,
	    &csi__v1__get_plugin_info_request__descriptor, get_plugin_info },
	{ "/csi.v1.Identity/GetPluginCapabilities", "GetPluginCapabilities", 0,
	    &csi__v1__get_plugin_capabilities_request__descriptor,
	    get_plugin_capabilities },
	{ "/csi.v1.Identity/Probe", "Probe", 0,
	    &csi__v1__probe_request__descriptor, probe },
	{ NULL, NULL, 0, NULL, NULL },
};
