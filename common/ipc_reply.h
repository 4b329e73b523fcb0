/*
 * ipc_reply.h: which reply body answers each request body, for every
 * peer's protocol (proto/ipc.proto, mounter.proto, registry.proto).
 *
 * The channel (channel.c) checks every successful reply against this
 * table before a callback sees it, so that no caller ever reads a union
 * member the peer did not send.
 */
#ifndef BERTH_IPC_REPLY_H
#define BERTH_IPC_REPLY_H

#include "ipc.pb-c.h"

/*
 * The body a successful reply to a request with this body must carry;
 * BERTH__ENVELOPE__BODY__NOT_SET when the body is not a request any peer
 * serves (then only an error reply is expected).
 */
Berth__Envelope__BodyCase ipc_reply_body(Berth__Envelope__BodyCase request);
/*
 * How many descriptors a body carries when it carries any (the channel's
 * takes_fd says whether it does): 2 for TaskStarted, else 1.
 */
int ipc_body_fds(Berth__Envelope__BodyCase body);

#endif
