/*
 * volmgr_calls.c: the volume manager's calls to berth-registry,
 * berth-mounter and the plugins, and their replies.
 *
 * Each call carries a ticket, so that a reply for a unit that is gone
 * (its manager freed) is dropped. A reply goes to the unit's step as an
 * argument (struct vreply), never through a static; an error ends the
 * unit with "who: why" and whether waiting may help, unless the unit lets
 * that error pass (an unmount's NOT_FOUND, a bind already in place, an
 * unbind of what is gone). Must not: decide what a unit does next.
 */
#include <stdlib.h>
#include <time.h>

#include "volmgr_int.h"
#include "xalloc.h"

#define CSI_DEADLINE_MS 10000
#define CSI_RETRY_TOTAL_MS 20000

struct vcall {
	struct volmgr *vm;
	struct unit *u;		/* NULL once the unit is gone */
	struct timespec sent;
};

void
call_out(struct volmgr *vm)
{
	vm->inflight++;
}

bool
call_back(struct volmgr *vm)
{
	vm->inflight--;
	if (vm->dying) {
		if (vm->inflight == 0) {
			free((char *)vm->d.data_dir);
			free((char *)vm->d.secrets_dir);
			free(vm);
		}
		return false;
	}
	return true;
}

void
volmgr_call_orphan(struct vcall *c)
{
	c->u = NULL;
}

static struct vcall *
call_new(struct unit *u)
{
	struct vcall *c = xcalloc(1, sizeof(*c));

	c->vm = u->job->vm;
	c->u = u;
	clock_gettime(CLOCK_MONOTONIC, &c->sent);
	u->call = c;
	call_out(c->vm);
	return c;
}

/* The unit the reply is for, or NULL when it is gone (and maybe the
 * manager with it). */
static struct unit *
call_end(struct vcall *c)
{
	struct unit *u = c->u;
	struct volmgr *vm = c->vm;

	free(c);
	if (!call_back(vm))
		return NULL;
	if (u != NULL)
		u->call = NULL;
	return u;
}

static enum volmgr_status
ipc_status(Berth__ErrorCode code)
{
	return code == BERTH__ERROR_CODE__ERROR_CLOSED ||
	    code == BERTH__ERROR_CODE__ERROR_TIMEOUT ? VOLMGR_RETRY :
	    VOLMGR_FAILED;
}

/* ---- berth-registry ---- */

struct vcall *
reg_ticket(struct unit *u)
{
	return call_new(u);
}

/*
 * A helper's error, as the operator reads it: its own message, without
 * the code's internal name (logged); a deadline or a lost connection
 * already says who did not answer.
 */
static void
peer_failed(struct unit *u, const char *peer, Berth__ErrorCode code,
    const char *msg)
{
	log_info("volmgr: %s: %s: %s", peer, ipc_error_name(code), msg);
	if (code == BERTH__ERROR_CODE__ERROR_TIMEOUT ||
	    code == BERTH__ERROR_CODE__ERROR_CLOSED)
		unit_fail(u, ipc_status(code), "%s", msg);
	else
		unit_fail(u, ipc_status(code), "%s refused: %s", peer, msg);
}

/* r: a regclient_*() call's return, made with reg_ticket(u). */
void
call_registry(struct unit *u, int r)
{
	if (r < 0) {
		call_end(u->call);
		unit_fail(u, VOLMGR_RETRY, "cannot reach berth-registry");
		unit_end(u);
	}
}

void
on_registry(const struct regclient_result *res, void *arg)
{
	struct unit *u = call_end(arg);
	struct vreply r = { 0 };

	if (u == NULL)
		return;
	if (res->code == BERTH__ERROR_CODE__ERROR_NONE)
		r.reg = res->reply;
	else if (!(u->kind == U_UNMOUNT && res->code ==
	    BERTH__ERROR_CODE__ERROR_NOT_FOUND)) {
		peer_failed(u, "berth-registry", res->code, res->message);
		unit_end(u);
		return;
	}
	unit_step(u, &r);
}

/* ---- berth-mounter ---- */

struct vcall *
mounter_ticket(struct unit *u)
{
	return call_new(u);
}

/* r: a priv_*() call's return, made with mounter_ticket(u). */
void
call_mounter(struct unit *u, int r)
{
	if (r < 0) {
		call_end(u->call);
		unit_fail(u, VOLMGR_RETRY, "%s", MCLIENT_UNREACHABLE);
		unit_end(u);
	}
}

static void
mounter_answered(struct unit *u, const struct priv_result *res,
    const struct vreply *r)
{
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		/* Already in place (a bind after a restart), or already
		 * gone (an unbind): neither is a failure. */
		if (u->kind == U_UNBIND || (u->kind == U_RECOVER &&
		    u->st.recover == RS_UNBIND)) {
			log_debug("volmgr: unbind %s/%s: %s", u->task, u->dest,
			    res->message);
			unit_step(u, r);
			return;
		}
		if (u->kind == U_BIND && res->code ==
		    BERTH__ERROR_CODE__ERROR_CONFLICT) {
			unit_step(u, r);
			return;
		}
		peer_failed(u, "berth-mounter", res->code, res->message);
		unit_end(u);
		return;
	}
	unit_step(u, r);
}

void
on_mounter(const struct priv_result *res, void *arg)
{
	struct unit *u = call_end(arg);
	struct vreply r = { 0 };

	if (u != NULL)
		mounter_answered(u, res, &r);
}

void
on_volume_prepared(const struct priv_result *res, bool mounted, void *arg)
{
	struct unit *u = call_end(arg);
	struct vreply r = { 0 };

	if (u == NULL)
		return;
	r.mounted = res->code == BERTH__ERROR_CODE__ERROR_NONE && mounted;
	mounter_answered(u, res, &r);
}

/* ---- the plugins ---- */

static enum volmgr_status
csi_status(const struct csi_result *res)
{
	/* A plugin that died under the call (its connection closed,
	 * CANCELLED here) comes back: that may pass too. */
	return res->code == CSI_UNAVAILABLE || res->code ==
	    CSI_DEADLINE_EXCEEDED || res->code == CSI_ABORTED ||
	    res->code == CSI_RESOURCE_EXHAUSTED || (res->code ==
	    CSI_CANCELLED && res->origin == CSI_FROM_CLIENT) ?
	    VOLMGR_RETRY : VOLMGR_FAILED;
}

static void
on_csi(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	double ms = ms_since(&((struct vcall *)arg)->sent);
	struct unit *u = call_end(arg);
	struct vreply r = { 0 };

	if (u == NULL) {
		if (reply != NULL)
			protobuf_c_message_free_unpacked(reply, NULL);
		return;
	}
	u->job->rpc_ms += ms;
	u->job->rpcs++;
	if (res->code != CSI_OK && !(u->kind == U_UNMOUNT && res->code ==
	    CSI_NOT_FOUND)) {
		/* A snapshot's operator is answered by the code (409, 404). */
		unit_fail(u, csi_status(res), "%s%s%s%s", res->message,
		    u->kind == U_SNAPSHOT ? " (" : "", u->kind == U_SNAPSHOT ?
		    csi_code_name(res->code) : "", u->kind == U_SNAPSHOT ?
		    ")" : "");
		unit_end(u);
	} else {
		r.csi = reply;
		unit_step(u, &r);
	}
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
}

void
csi_send(struct unit *u, struct csi_conn *conn, enum csi_method m,
    const ProtobufCMessage *req)
{
	const struct volmgr_deps *d = &u->job->vm->d;
	struct csi_retry retry = { 0, 200, 2000, CSI_RETRY_TOTAL_MS };

	if (d->csi_retry_total_ms > 0)
		retry.total_ms = d->csi_retry_total_ms;
	csi_call(conn, m, req, d->csi_deadline_ms > 0 ? d->csi_deadline_ms :
	    CSI_DEADLINE_MS, csi_method_idempotent(m) ? &retry : NULL, on_csi,
	    call_new(u));
}
