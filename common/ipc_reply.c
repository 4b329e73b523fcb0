/*
 * ipc_reply.c: the table of request body to reply body (see ipc_reply.h).
 *
 * Owns: that table, and how many descriptors a body carries. Each row must match what the
 * serving side sends: common/helper.c for the handshake, mounter/mounter.c
 * act() for the mounter, op_reply() in registry/ for the registry.
 */
#include <stddef.h>

#include "ipc_reply.h"

#define B(x) BERTH__ENVELOPE__BODY_##x

static const struct {
	Berth__Envelope__BodyCase request, reply;
} replies[] = {
	/* Every helper (common/helper.c). */
	{ B(HELLO), B(HELLO_REPLY) },
	{ B(PING), B(PONG) },
	{ B(SHUTDOWN), B(ACK) },
	/* berth-mounter (proto/mounter.proto). */
	{ B(PREPARE_PLUGIN), B(ACK) },
	{ B(PREPARE_VOLUME), B(PREPARE_VOLUME_REPLY) },
	{ B(PREPARE_TASK), B(ACK) },
	{ B(BIND_VOLUME), B(ACK) },
	{ B(UNBIND_VOLUME), B(ACK) },
	{ B(CLEANUP_ALLOC), B(CLEANUP_REPLY) },
	{ B(START_PLUGIN), B(PLUGIN_STARTED) },
	{ B(ADOPT_PLUGIN), B(PLUGIN_STARTED) },
	{ B(SIGNAL_PLUGIN), B(ACK) },
	{ B(START_TASK), B(TASK_STARTED) },
	/* berth-registry (proto/registry.proto). */
	{ B(REGISTER_PLUGIN), B(REGISTER_PLUGIN_REPLY) },
	{ B(DEREGISTER_PLUGIN), B(DEREGISTER_PLUGIN_REPLY) },
	{ B(GET_PLUGIN), B(PLUGIN_LIST) },
	{ B(LIST_PLUGINS), B(PLUGIN_LIST) },
	{ B(PUT_VOLUME), B(VOLUME_REPLY) },
	{ B(GET_VOLUME), B(VOLUME_REPLY) },
	{ B(DELETE_VOLUME), B(INDEX_REPLY) },
	{ B(LIST_VOLUMES), B(VOLUME_LIST) },
	{ B(CLAIM_VOLUME), B(CLAIM_REPLY) },
	{ B(RELEASE_CLAIM), B(INDEX_REPLY) },
	{ B(PUT_HANDLE), B(HANDLE_REPLY) },
	{ B(DELETE_HANDLE), B(INDEX_REPLY) },
	{ B(LIST_HANDLES), B(HANDLE_LIST) },
	{ B(SUBSCRIBE), B(SUBSCRIBE_REPLY) },
	{ B(UNSUBSCRIBE), B(ACK) },
	{ B(ALLOCATE_IDS), B(IDS_REPLY) },
	{ B(RELEASE_IDS), B(INDEX_REPLY) },
};

Berth__Envelope__BodyCase
ipc_reply_body(Berth__Envelope__BodyCase request)
{
	size_t i;

	for (i = 0; i < sizeof(replies) / sizeof(replies[0]); i++)
		if (replies[i].request == request)
			return replies[i].reply;
	return BERTH__ENVELOPE__BODY__NOT_SET;
}

int
ipc_body_fds(Berth__Envelope__BodyCase body)
{
	return body == B(TASK_STARTED) ? 2 : 1;
}
