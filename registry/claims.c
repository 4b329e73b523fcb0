/*
 * claims.c: volumes and the claims allocs hold on them.
 *
 * Owns: the volumes and claims tables, the claim events, and the access
 * mode rules: a single-writer mode (single-node-writer,
 * single-node-single-writer, multi-node-single-writer) admits one write
 * claim, a reader-only mode none, a multi-writer mode
 * (single-node-multi-writer, multi-node-multi-writer) any number (this
 * registry's claims are all of one node); all claims on a volume share
 * one access mode, and a claim must match one of the volume's capabilities
 * when it lists any. A provider's volume (plugin_id, external_id) has
 * one id. Must not: validate identifiers (dispatch.c did).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

#define VOLUME_COLS "namespace, id, plugin_id, external_id, spec, " \
	"create_index, modify_index"
#define CLAIM_COLS "namespace, volume, alloc, mode, access_mode, " \
	"attachment_mode, create_index, modify_index"

const char *
reg_access_mode_name(Berth__AccessMode m)
{
	switch (m) {
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY:
		return "single-node-reader-only";
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER:
		return "single-node-writer";
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_READER_ONLY:
		return "multi-node-reader-only";
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_SINGLE_WRITER:
		return "multi-node-single-writer";
	case BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER:
		return "multi-node-multi-writer";
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER:
		return "single-node-single-writer";
	case BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_MULTI_WRITER:
		return "single-node-multi-writer";
	default:
		return "unknown";
	}
}

static Berth__Volume *
row_volume(struct arena *a, sqlite3_stmt *st)
{
	Berth__Volume *v, *spec;

	v = arena_alloc(a, sizeof(*v));
	berth__volume__init(v);
	v->namespace_ = arena_text(a, st, 0);
	v->id = arena_text(a, st, 1);
	v->plugin_id = arena_text(a, st, 2);
	v->external_id = arena_text(a, st, 3);
	spec = arena_unpack(a, &berth__volume__descriptor,
	    sqlite3_column_blob(st, 4), sqlite3_column_bytes(st, 4));
	if (spec != NULL) {
		v->n_capabilities = spec->n_capabilities;
		v->capabilities = spec->capabilities;
		v->n_context = spec->n_context;
		v->context = spec->context;
		v->fs_type = spec->fs_type;
		v->on_plugin_restart = spec->on_plugin_restart;
		v->n_mount_flags = spec->n_mount_flags;
		v->mount_flags = spec->mount_flags;
		v->n_secrets = spec->n_secrets;
		v->secrets = spec->secrets;
		v->n_requisite = spec->n_requisite;
		v->requisite = spec->requisite;
		v->n_preferred = spec->n_preferred;
		v->preferred = spec->preferred;
		v->n_accessible_topology = spec->n_accessible_topology;
		v->accessible_topology = spec->accessible_topology;
		v->capacity_bytes = spec->capacity_bytes;
		v->snapshot_id = spec->snapshot_id;
	} else {
		log_warnx("row_volume: volume %s/%s has an unreadable spec",
		    v->namespace_, v->id);
	}
	v->create_index = sqlite3_column_int64(st, 5);
	v->modify_index = sqlite3_column_int64(st, 6);
	return v;
}

static Berth__Claim *
row_claim(struct arena *a, sqlite3_stmt *st)
{
	Berth__Claim *c = arena_alloc(a, sizeof(*c));

	berth__claim__init(c);
	c->namespace_ = arena_text(a, st, 0);
	c->volume = arena_text(a, st, 1);
	c->alloc = arena_text(a, st, 2);
	c->mode = sqlite3_column_int(st, 3);
	c->access_mode = sqlite3_column_int(st, 4);
	c->attachment_mode = sqlite3_column_int(st, 5);
	c->create_index = sqlite3_column_int64(st, 6);
	c->modify_index = sqlite3_column_int64(st, 7);
	return c;
}

/* 1 found, 0 not, -1 database error. */
static int
find_volume(struct registry *r, struct op *op, const char *ns,
    const char *id, Berth__Volume **out)
{
	sqlite3_stmt *st;
	int rc;

	st = store_stmt(&r->store, "SELECT " VOLUME_COLS " FROM volumes "
	    "WHERE namespace = ?1 AND id = ?2");
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = row_volume(&op->arena, st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "find_volume");
	return 0;
}

/*
 * Is the provider's volume registered under another id already? Two ids
 * for one backend volume would each admit a writer. 0 when free, else
 * -1 with op set (a conflict, or a database error).
 */
static int
external_taken(struct registry *r, struct op *op, const Berth__Volume *in)
{
	sqlite3_stmt *st;
	int rc;

	st = store_stmt(&r->store, "SELECT namespace, id FROM volumes WHERE "
	    "plugin_id = ?1 AND external_id = ?2 AND NOT (namespace = ?3 AND "
	    "id = ?4) LIMIT 1");
	sqlite3_bind_text(st, 1, in->plugin_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, in->external_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, in->id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		op_fail(op, BERTH__ERROR_CODE__ERROR_CONFLICT, "plugin %s's "
		    "volume %s is registered already, as %s/%s",
		    in->plugin_id, in->external_id, sqlite3_column_text(st, 0),
		    sqlite3_column_text(st, 1));
		sqlite3_reset(st);
		return -1;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "external_taken");
	return 0;
}

int
claims_put_volume(struct registry *r, struct op *op)
{
	const Berth__Volume *in = op->req->put_volume->volume;
	Berth__Volume spec = BERTH__VOLUME__INIT, *out, *was;
	Berth__VolumeReply *vr;
	Berth__Envelope *rep;
	sqlite3_stmt *st;
	uint64_t index = store_next_index(&r->store);
	uint8_t *buf;
	size_t len;
	int rc;

	spec.n_capabilities = in->n_capabilities;
	spec.capabilities = in->capabilities;
	spec.n_context = in->n_context;
	spec.context = in->context;
	spec.fs_type = in->fs_type;
	spec.on_plugin_restart = in->on_plugin_restart;
	spec.n_mount_flags = in->n_mount_flags;
	spec.mount_flags = in->mount_flags;
	spec.n_secrets = in->n_secrets;
	spec.secrets = in->secrets;
	spec.n_requisite = in->n_requisite;
	spec.requisite = in->requisite;
	spec.n_preferred = in->n_preferred;
	spec.preferred = in->preferred;
	spec.n_accessible_topology = in->n_accessible_topology;
	spec.accessible_topology = in->accessible_topology;
	spec.capacity_bytes = in->capacity_bytes;
	spec.snapshot_id = in->snapshot_id;
	if (external_taken(r, op, in) != 0)
		return -1;
	/* A put that says no capacity (a register again) keeps the one an
	 * expansion set. */
	if (spec.capacity_bytes == 0) {
		if ((rc = find_volume(r, op, in->namespace_, in->id, &was)) < 0)
			return -1;
		if (rc == 1)
			spec.capacity_bytes = was->capacity_bytes;
	}
	len = berth__volume__get_packed_size(&spec);
	buf = arena_alloc(&op->arena, len);
	berth__volume__pack(&spec, buf);
	st = store_stmt(&r->store, "INSERT INTO volumes (namespace, id, "
	    "plugin_id, external_id, spec, create_index, modify_index) VALUES "
	    "(?1, ?2, ?3, ?4, ?5, ?6, ?6) ON CONFLICT (namespace, id) DO "
	    "UPDATE SET plugin_id = excluded.plugin_id, external_id = "
	    "excluded.external_id, spec = excluded.spec, modify_index = "
	    "excluded.modify_index");
	sqlite3_bind_text(st, 1, in->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, in->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in->plugin_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, in->external_id, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 5, buf, len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (int64_t)index);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "claims_put_volume");
	if (find_volume(r, op, in->namespace_, in->id, &out) != 1)
		return op_db_fail(op, &r->store, "claims_put_volume: reading back");
	rep = op_reply(op, BERTH__ENVELOPE__BODY_VOLUME_REPLY);
	vr = arena_alloc(&op->arena, sizeof(*vr));
	berth__volume_reply__init(vr);
	vr->volume = out;
	rep->volume_reply = vr;
	return 0;
}

static int
volume_not_found(struct op *op, const char *ns, const char *id)
{
	return op_fail(op, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
	    "no volume %s in namespace %s", id, ns);
}

/* The volume's claims, oldest first, into vr; -1: database error. */
static int
add_claims(struct registry *r, struct op *op, Berth__VolumeReply *vr,
    const char *ns, const char *id)
{
	sqlite3_stmt *st;
	size_t cap = 16;
	int rc;

	vr->claims = arena_alloc(&op->arena, cap * sizeof(*vr->claims));
	st = store_stmt(&r->store, "SELECT " CLAIM_COLS " FROM claims WHERE "
	    "namespace = ?1 AND volume = ?2 ORDER BY create_index");
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (vr->n_claims == cap) {
			Berth__Claim **bigger;

			bigger = arena_alloc(&op->arena,
			    2 * cap * sizeof(*bigger));
			memcpy(bigger, vr->claims, cap * sizeof(*bigger));
			vr->claims = bigger;
			cap *= 2;
		}
		vr->claims[vr->n_claims++] = row_claim(&op->arena, st);
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int
claims_get_volume(struct registry *r, struct op *op)
{
	const Berth__VolumeKey *key = op->req->get_volume->key;
	Berth__VolumeReply *vr;
	Berth__Envelope *rep;
	Berth__Volume *v;
	int rc;

	if ((rc = find_volume(r, op, key->namespace_, key->id, &v)) <= 0)
		return rc < 0 ? rc : volume_not_found(op, key->namespace_,
		    key->id);
	rep = op_reply(op, BERTH__ENVELOPE__BODY_VOLUME_REPLY);
	vr = arena_alloc(&op->arena, sizeof(*vr));
	berth__volume_reply__init(vr);
	vr->volume = v;
	rep->volume_reply = vr;
	if (add_claims(r, op, vr, key->namespace_, key->id) < 0)
		return op_db_fail(op, &r->store, "claims_get_volume");
	return 0;
}

/* One page in (namespace, id) order after the cursor, within the budget. */
int
claims_list_volumes(struct registry *r, struct op *op)
{
	const Berth__ListVolumes *lv = op->req->list_volumes;
	Berth__VolumeReply *vr;
	Berth__Envelope *rep;
	Berth__VolumeList *vl;
	sqlite3_stmt *st;
	size_t cap = 32, used = 0;
	int rc;

	rep = op_reply(op, BERTH__ENVELOPE__BODY_VOLUME_LIST);
	vl = arena_alloc(&op->arena, sizeof(*vl));
	berth__volume_list__init(vl);
	rep->volume_list = vl;
	vl->volumes = arena_alloc(&op->arena, cap * sizeof(*vl->volumes));
	st = store_stmt(&r->store, "SELECT " VOLUME_COLS " FROM volumes "
	    "WHERE (?1 = '' OR namespace = ?1) AND (namespace, id) > (?2, ?3) "
	    "ORDER BY namespace, id");
	sqlite3_bind_text(st, 1, lv->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, lv->after_namespace, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, lv->after_id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (used >= REG_PAGE_BUDGET) {
			vl->more = true;
			break;
		}
		if (vl->n_volumes == cap) {
			Berth__VolumeReply **bigger;

			bigger = arena_alloc(&op->arena,
			    2 * cap * sizeof(*bigger));
			memcpy(bigger, vl->volumes, cap * sizeof(*bigger));
			vl->volumes = bigger;
			cap *= 2;
		}
		vr = arena_alloc(&op->arena, sizeof(*vr));
		berth__volume_reply__init(vr);
		vr->volume = row_volume(&op->arena, st);
		vl->volumes[vl->n_volumes++] = vr;
		vl->next_namespace = vr->volume->namespace_;
		vl->next_id = vr->volume->id;
		used += berth__volume__get_packed_size(vr->volume) + 16;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return op_db_fail(op, &r->store, "claims_list_volumes");
	for (size_t i = 0; i < vl->n_volumes; i++) {
		vr = vl->volumes[i];
		if (add_claims(r, op, vr, vr->volume->namespace_,
		    vr->volume->id) < 0)
			return op_db_fail(op, &r->store, "claims_list_volumes");
	}
	return 0;
}

int
claims_delete_volume(struct registry *r, struct op *op)
{
	const Berth__VolumeKey *key = op->req->delete_volume->key;
	sqlite3_stmt *st;
	int64_t claims;
	int rc;

	st = store_stmt(&r->store, "SELECT COUNT(*) FROM claims WHERE "
	    "namespace = ?1 AND volume = ?2");
	sqlite3_bind_text(st, 1, key->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key->id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	claims = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return op_db_fail(op, &r->store, "claims_delete_volume");
	if (claims > 0)
		return op_fail(op, BERTH__ERROR_CODE__ERROR_CONFLICT,
		    "volume %s/%s still has %lld claim(s)", key->namespace_,
		    key->id, (long long)claims);
	st = store_stmt(&r->store, "DELETE FROM volumes WHERE namespace = ?1 "
	    "AND id = ?2");
	sqlite3_bind_text(st, 1, key->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, key->id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "claims_delete_volume");
	if (sqlite3_changes(r->store.db) == 0)
		return volume_not_found(op, key->namespace_, key->id);
	return op_reply_index(op, store_next_index(&r->store));
}

static bool
single_writer(Berth__AccessMode m)
{
	return m == BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER ||
	    m == BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER ||
	    m == BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_SINGLE_WRITER;
}

/* May this claim join the others on its volume? 0, or -1 with op set. */
static int
admit(struct registry *r, struct op *op, const Berth__Claim *in,
    const Berth__Volume *v)
{
	sqlite3_stmt *st;
	size_t i;
	int rc, others = 0;

	if (v->n_capabilities > 0) {
		for (i = 0; i < v->n_capabilities; i++)
			if (v->capabilities[i]->access_mode == in->access_mode &&
			    v->capabilities[i]->attachment_mode ==
			    in->attachment_mode)
				break;
		if (i == v->n_capabilities)
			return op_fail(op, BERTH__ERROR_CODE__ERROR_CONFLICT,
			    "volume %s/%s does not offer access mode %s with "
			    "that attachment mode", in->namespace_, in->volume,
			    reg_access_mode_name(in->access_mode));
	}
	/* Every other alloc's claim, to check against. */
	st = store_stmt(&r->store, "SELECT alloc, mode, access_mode FROM "
	    "claims WHERE namespace = ?1 AND volume = ?2 AND alloc != ?3");
	sqlite3_bind_text(st, 1, in->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, in->volume, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in->alloc, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		Berth__AccessMode am = sqlite3_column_int(st, 2);

		if (++others >= REG_CLAIMS_MAX) {
			op_fail(op, BERTH__ERROR_CODE__ERROR_CONFLICT,
			    "volume %s/%s already has %d claims, the most one "
			    "volume may have", in->namespace_, in->volume,
			    REG_CLAIMS_MAX);
			sqlite3_reset(st);
			return -1;
		}
		Berth__ClaimMode cm = sqlite3_column_int(st, 1);

		if (am != in->access_mode) {
			op_fail(op, BERTH__ERROR_CODE__ERROR_CONFLICT,
			    "volume %s/%s is claimed %s by alloc %s; a %s "
			    "claim cannot join it", in->namespace_, in->volume,
			    reg_access_mode_name(am),
			    sqlite3_column_text(st, 0),
			    reg_access_mode_name(in->access_mode));
			sqlite3_reset(st);
			return -1;
		}
		if (single_writer(am) &&
		    in->mode == BERTH__CLAIM_MODE__CLAIM_MODE_WRITE &&
		    cm == BERTH__CLAIM_MODE__CLAIM_MODE_WRITE) {
			op_fail(op, BERTH__ERROR_CODE__ERROR_CONFLICT,
			    "volume %s/%s is %s and alloc %s already holds "
			    "its write claim", in->namespace_, in->volume,
			    reg_access_mode_name(am),
			    sqlite3_column_text(st, 0));
			sqlite3_reset(st);
			return -1;
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "admit");
	return 0;
}

static int
emit(struct registry *r, Berth__EventType type, uint64_t index,
    const char *ns, const char *vol, const char *alloc, Berth__ClaimMode m)
{
	Berth__Event *ev = events_new(type, index);

	ev->namespace_ = strdup(ns);
	ev->volume = strdup(vol);
	ev->alloc = strdup(alloc);
	ev->claim_mode = m;
	if (ev->namespace_ == NULL || ev->volume == NULL || ev->alloc == NULL)
		fatal("emit");
	return events_emit(r, ev);
}

int
claims_claim(struct registry *r, struct op *op)
{
	const Berth__Claim *in = op->req->claim_volume->claim;
	Berth__ClaimReply *cr;
	Berth__Envelope *rep;
	Berth__Volume *v;
	sqlite3_stmt *st;
	uint64_t index;
	int rc;

	if ((rc = find_volume(r, op, in->namespace_, in->volume, &v)) <= 0)
		return rc < 0 ? rc : volume_not_found(op, in->namespace_,
		    in->volume);
	if (admit(r, op, in, v) < 0)
		return -1;
	index = store_next_index(&r->store);
	st = store_stmt(&r->store, "INSERT INTO claims (namespace, volume, "
	    "alloc, mode, access_mode, attachment_mode, create_index, "
	    "modify_index) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) ON CONFLICT "
	    "(namespace, volume, alloc) DO UPDATE SET mode = excluded.mode, "
	    "access_mode = excluded.access_mode, attachment_mode = "
	    "excluded.attachment_mode, modify_index = excluded.modify_index");
	sqlite3_bind_text(st, 1, in->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, in->volume, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in->alloc, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, in->mode);
	sqlite3_bind_int(st, 5, in->access_mode);
	sqlite3_bind_int(st, 6, in->attachment_mode);
	sqlite3_bind_int64(st, 7, (int64_t)index);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "claims_claim");
	if (emit(r, BERTH__EVENT_TYPE__EVENT_TYPE_CLAIM_ADDED, index,
	    in->namespace_, in->volume, in->alloc, in->mode) < 0)
		return op_db_fail(op, &r->store, "claims_claim: event");
	st = store_stmt(&r->store, "SELECT " CLAIM_COLS " FROM claims WHERE "
	    "namespace = ?1 AND volume = ?2 AND alloc = ?3");
	sqlite3_bind_text(st, 1, in->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, in->volume, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in->alloc, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_reset(st);
		return op_db_fail(op, &r->store, "claims_claim: reading back");
	}
	rep = op_reply(op, BERTH__ENVELOPE__BODY_CLAIM_REPLY);
	cr = arena_alloc(&op->arena, sizeof(*cr));
	berth__claim_reply__init(cr);
	cr->claim = row_claim(&op->arena, st);
	sqlite3_reset(st);
	rep->claim_reply = cr;
	return 0;
}

int
claims_release(struct registry *r, struct op *op)
{
	const Berth__ReleaseClaim *in = op->req->release_claim;
	Berth__ClaimMode mode;
	sqlite3_stmt *st;
	uint64_t index;
	int rc;

	st = store_stmt(&r->store, "DELETE FROM claims WHERE namespace = ?1 "
	    "AND volume = ?2 AND alloc = ?3 RETURNING mode");
	sqlite3_bind_text(st, 1, in->namespace_, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, in->volume, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in->alloc, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	mode = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	if (rc == SQLITE_ROW)
		rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "claims_release");
	if (mode == 0)
		return op_fail(op, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
		    "alloc %s holds no claim on volume %s/%s", in->alloc,
		    in->namespace_, in->volume);
	index = store_next_index(&r->store);
	if (emit(r, BERTH__EVENT_TYPE__EVENT_TYPE_CLAIM_RELEASED, index,
	    in->namespace_, in->volume, in->alloc, mode) < 0)
		return op_db_fail(op, &r->store, "claims_release: event");
	return op_reply_index(op, index);
}
