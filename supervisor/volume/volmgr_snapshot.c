/*
 * volmgr_snapshot.c: the operator's snapshots, one unit (U_SNAPSHOT)
 * through enum op_state: create, delete, or list a volume's snapshots
 * (the volume from the registry first: its plugin, its id at the
 * provider, its "snapshot" secret, which all three calls get), or list
 * every snapshot of a plugin (no secret: no volume names one).
 *
 * CreateSnapshot and DeleteSnapshot only when the plugin's controller
 * advertises CREATE_DELETE_SNAPSHOT, ListSnapshots only with
 * LIST_SNAPSHOTS; without, the refusal names the capability and nothing
 * is asked. A list goes page by page (max_entries, next_token) until the
 * plugin says there is no more, up to a bound. Snapshots are the
 * plugin's: berth keeps no record of them, so a list is the plugin's
 * word, and a snapshot outlives its volume there. Create and delete are
 * events. Must not: touch a volume's mounts, or keep a snapshot's data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "volmgr_int.h"
#include "xalloc.h"

#define PAGE_ENTRIES	100
#define PAGES_MAX	100

static const char *const verbs[] = {
	[SNAP_CREATE] = "create", [SNAP_DELETE] = "delete",
	[SNAP_LIST] = "list",
};

/* The reply's snapshot into the caller's list, copied. */
static void
take(struct unit *u, const Csi__V1__Snapshot *s)
{
	struct volmgr_snapshots *out = u->snap_out;
	struct volmgr_snapshot *v;

	if (out == NULL || s == NULL || s->snapshot_id == NULL ||
	    s->snapshot_id[0] == '\0')
		return;
	out->v = xreallocarray(out->v, out->n + 1, sizeof(*out->v));
	v = &out->v[out->n++];
	memset(v, 0, sizeof(*v));
	v->id = xstrdup(s->snapshot_id);
	v->source = xstrdup(s->source_volume_id != NULL ?
	    s->source_volume_id : "");
	v->plugin = xstrdup(u->snap_plugin);
	v->size_bytes = s->size_bytes;
	if (s->creation_time != NULL) {
		v->created_sec = s->creation_time->seconds;
		v->created_nsec = s->creation_time->nanos;
	}
	v->ready = s->ready_to_use;
}

void
volmgr_snapshots_free(struct volmgr_snapshots *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].id);
		free(s->v[i].source);
		free(s->v[i].plugin);
	}
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* The controller, able to do the unit's verb; false: u failed, ended. */
static bool
able(struct unit *u, struct volmgr_plugin *ctl)
{
	const char *plugin = u->snap_plugin;
	bool list = u->snap_op == SNAP_LIST;

	if (controller_sick(u, plugin))
		return false;
	if (!controller_of(u->job->vm, plugin, ctl)) {
		unit_fail(u, VOLMGR_FAILED, "plugin %s has no healthy "
		    "controller instance: snapshots go through the "
		    "controller", plugin);
		unit_end(u);
		return false;
	}
	if (list ? !ctl->fp->list_snapshots : !ctl->fp->snapshots) {
		unit_fail(u, VOLMGR_FAILED, "plugin %s's controller does not "
		    "advertise %s: it cannot %s snapshots", plugin, list ?
		    "LIST_SNAPSHOTS" : "CREATE_DELETE_SNAPSHOT",
		    verbs[u->snap_op]);
		unit_end(u);
		return false;
	}
	return true;
}

static void
create_snapshot(struct unit *u, const struct volmgr_plugin *ctl)
{
	Csi__V1__CreateSnapshotRequest req =
	    CSI__V1__CREATE_SNAPSHOT_REQUEST__INIT;
	struct kv_entry es[CTX_MAX];
	void *ps[CTX_MAX];
	struct kvs sec;

	if (!secrets_load(u, NULL, &u->srefs, "snapshot", &sec))
		return;
	req.source_volume_id = u->created_id;
	req.name = u->snap_name;
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__create_snapshot_request__secrets_entry__descriptor, es,
	    ps);
	u->st.op = OS_SNAPSHOT;
	csi_send(u, ctl->conn, CSI_CREATE_SNAPSHOT, &req.base);
	secrets_wipe(&sec);
}

static void
delete_snapshot(struct unit *u, const struct volmgr_plugin *ctl)
{
	Csi__V1__DeleteSnapshotRequest req =
	    CSI__V1__DELETE_SNAPSHOT_REQUEST__INIT;
	struct kv_entry es[CTX_MAX];
	void *ps[CTX_MAX];
	struct kvs sec;

	if (!secrets_load(u, NULL, &u->srefs, "snapshot", &sec))
		return;
	req.snapshot_id = u->snap_name;
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__delete_snapshot_request__secrets_entry__descriptor, es,
	    ps);
	u->st.op = OS_SNAPSHOT;
	csi_send(u, ctl->conn, CSI_DELETE_SNAPSHOT, &req.base);
	secrets_wipe(&sec);
}

/* The next page, from u->snap_token ("" the first). */
static void
list_page(struct unit *u)
{
	Csi__V1__ListSnapshotsRequest req =
	    CSI__V1__LIST_SNAPSHOTS_REQUEST__INIT;
	struct kv_entry es[CTX_MAX];
	void *ps[CTX_MAX];
	struct volmgr_plugin ctl;
	struct kvs sec;

	/* A plugin's whole list has no volume to name a secret. */
	if (!able(u, &ctl) || !secrets_load(u, NULL, &u->srefs, "snapshot",
	    &sec))
		return;
	req.max_entries = PAGE_ENTRIES;
	req.starting_token = u->snap_token != NULL ? u->snap_token : "";
	if (u->created_id != NULL)
		req.source_volume_id = u->created_id;
	req.n_secrets = sec.n;
	req.secrets = kv_entries(&sec,
	    &csi__v1__list_snapshots_request__secrets_entry__descriptor, es,
	    ps);
	u->st.op = OS_SNAPSHOT;
	csi_send(u, ctl.conn, CSI_LIST_SNAPSHOTS, &req.base);
	secrets_wipe(&sec);
}

static void
listed(struct unit *u, const ProtobufCMessage *reply)
{
	const Csi__V1__ListSnapshotsResponse *r = (const void *)reply;

	for (size_t i = 0; r != NULL && i < r->n_entries; i++)
		if (r->entries[i] != NULL && (u->created_id == NULL ||
		    r->entries[i]->snapshot == NULL ||
		    strcmp(r->entries[i]->snapshot->source_volume_id,
		    u->created_id) == 0))
			take(u, r->entries[i]->snapshot);
	if (r == NULL || r->next_token == NULL || r->next_token[0] == '\0') {
		unit_end(u);
		return;
	}
	if (++u->snap_pages >= PAGES_MAX || (u->snap_token != NULL &&
	    strcmp(u->snap_token, r->next_token) == 0)) {
		unit_fail(u, VOLMGR_FAILED, "ListSnapshots: plugin %s is still "
		    "paging after %d pages (next_token \"%s\"); the list is "
		    "cut short", u->snap_plugin, u->snap_pages, r->next_token);
		unit_end(u);
		return;
	}
	free(u->snap_token);
	u->snap_token = xstrdup(r->next_token);
	list_page(u);
}

static void
got_volume(struct unit *u, const Berth__VolumeReply *vr)
{
	const Berth__Volume *v = vr->volume;
	struct volmgr_plugin ctl;

	if (v == NULL) {
		unit_fail(u, VOLMGR_FAILED, "volume %s/%s: not registered",
		    u->ns, u->vol);
		unit_end(u);
		return;
	}
	snprintf(u->snap_plugin, sizeof(u->snap_plugin), "%s", v->plugin_id);
	u->created_id = xstrdup(v->external_id != NULL &&
	    v->external_id[0] != '\0' ? v->external_id : v->id);
	kvs_clear(&u->srefs);
	for (size_t i = 0; i < v->n_secrets; i++)
		kvs_add(&u->srefs, v->secrets[i]->key, v->secrets[i]->value);
	if (u->snap_op == SNAP_LIST) {
		list_page(u);
		return;
	}
	if (!able(u, &ctl))
		return;
	if (u->snap_op == SNAP_CREATE)
		create_snapshot(u, &ctl);
	else
		delete_snapshot(u, &ctl);
}

static void
done(struct unit *u, const ProtobufCMessage *reply)
{
	const Csi__V1__CreateSnapshotResponse *r = (const void *)reply;
	char what[BERTH_IDENT_MAX * 2 + 64];
	const char *id = u->snap_name;

	if (u->snap_op == SNAP_CREATE) {
		if (r == NULL || r->snapshot == NULL ||
		    r->snapshot->snapshot_id == NULL ||
		    r->snapshot->snapshot_id[0] == '\0') {
			unit_fail(u, VOLMGR_FAILED, "CreateSnapshot: plugin %s "
			    "answered no snapshot id", u->snap_plugin);
			unit_end(u);
			return;
		}
		take(u, r->snapshot);
		id = r->snapshot->snapshot_id;
	}
	snprintf(what, sizeof(what), "snapshot %s %s", id,
	    u->snap_op == SNAP_CREATE ? "created" : "deleted");
	unit_event(u, u->snap_op == SNAP_CREATE ? "SnapshotCreated" :
	    "SnapshotDeleted", u->snap_plugin, what);
	log_info("volmgr: volume %s/%s: %s (plugin %s)", u->ns, u->vol, what,
	    u->snap_plugin);
	unit_end(u);
}

void
snapshot_step(struct unit *u, const struct vreply *r)
{
	switch (u->st.op) {
	case OS_START:
		if (u->vol[0] == '\0') {
			list_page(u);	/* every snapshot of the plugin */
			break;
		}
		u->st.op = OS_GET;
		call_registry(u, regclient_get_volume(u->job->vm->d.registry,
		    u->ns, u->vol, on_registry, reg_ticket(u)));
		break;
	case OS_GET:
		got_volume(u, r->reg->volume_reply);
		break;
	default:
		if (u->snap_op == SNAP_LIST)
			listed(u, r->csi);
		else
			done(u, r->csi);
		break;
	}
}

static void
snapshot_job(struct volmgr *vm, enum snap_op op, const char *ns,
    const char *vol, const char *plugin, const char *name,
    struct volmgr_snapshots *out, volmgr_cb cb, void *arg)
{
	struct unit *u = operator_unit(vm, U_SNAPSHOT, NULL, ns, vol, cb, arg);

	u->snap_op = op;
	u->snap_out = out;
	u->snap_name = name != NULL ? xstrdup(name) : NULL;
	if (plugin != NULL)
		snprintf(u->snap_plugin, sizeof(u->snap_plugin), "%s", plugin);
	units_pump(vm);
}

void
volmgr_snapshot_create(struct volmgr *vm, const char *ns, const char *vol,
    const char *name, struct volmgr_snapshots *out, volmgr_cb cb, void *arg)
{
	snapshot_job(vm, SNAP_CREATE, ns, vol, NULL, name, out, cb, arg);
}

void
volmgr_snapshot_delete(struct volmgr *vm, const char *ns, const char *vol,
    const char *snapshot_id, volmgr_cb cb, void *arg)
{
	snapshot_job(vm, SNAP_DELETE, ns, vol, NULL, snapshot_id, NULL, cb,
	    arg);
}

void
volmgr_snapshot_list(struct volmgr *vm, const char *ns, const char *vol,
    const char *plugin, struct volmgr_snapshots *out, volmgr_cb cb,
    void *arg)
{
	if (vol != NULL)
		snapshot_job(vm, SNAP_LIST, ns, vol, NULL, NULL, out, cb, arg);
	else
		snapshot_job(vm, SNAP_LIST, NULL, NULL, plugin, NULL, out, cb,
		    arg);
}
