/*
 * plugins.c: plugin instances. One per (type, name, alloc); per (type,
 * name) the newest alloc, the one with the highest create index, is the
 * active one, and older ones stay until they are deregistered.
 *
 * Owns: the plugins table and its events (registered, deregistered,
 * promoted). Must not: validate input (dispatch.c did), or reorder
 * instances when one registers again: that updates its record only.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "registry.h"

#define PLUGIN_COLS "type, name, alloc, endpoint, provider, " \
	"provider_version, capabilities, registered_at, create_index, " \
	"modify_index, create_index = (SELECT MAX(create_index) FROM " \
	"plugins n WHERE n.type = p.type AND n.name = p.name), rowid"

const char *
reg_plugin_type_name(Berth__PluginType t)
{
	switch (t) {
	case BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_CONTROLLER:
		return "csi-controller";
	case BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE:
		return "csi-node";
	case BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DRIVER:
		return "driver";
	case BERTH__PLUGIN_TYPE__PLUGIN_TYPE_DEVICE:
		return "device";
	default:
		return "unknown";
	}
}

static Berth__PluginInstance *
row_instance(struct arena *a, sqlite3_stmt *st)
{
	Berth__PluginInstance *pi = arena_alloc(a, sizeof(*pi));

	berth__plugin_instance__init(pi);
	pi->type = sqlite3_column_int(st, 0);
	pi->name = arena_text(a, st, 1);
	pi->alloc = arena_text(a, st, 2);
	pi->endpoint = arena_text(a, st, 3);
	pi->provider = arena_text(a, st, 4);
	pi->provider_version = arena_text(a, st, 5);
	arena_blob(a, st, 6, &pi->capabilities);
	pi->registered_at_ms = sqlite3_column_int64(st, 7);
	pi->create_index = sqlite3_column_int64(st, 8);
	pi->modify_index = sqlite3_column_int64(st, 9);
	pi->active = sqlite3_column_int(st, 10) != 0;
	return pi;
}

/* The instance for key; alloc "" is the active one. 1 found, 0 not, -1. */
static int
find(struct registry *r, struct op *op, const Berth__PluginKey *key,
    Berth__PluginInstance **out)
{
	sqlite3_stmt *st;
	int rc;

	if (key->alloc[0] == '\0') {
		st = store_stmt(&r->store, "SELECT " PLUGIN_COLS " FROM "
		    "plugins p WHERE type = ?1 AND name = ?2 ORDER BY "
		    "create_index DESC LIMIT 1");
	} else {
		st = store_stmt(&r->store, "SELECT " PLUGIN_COLS " FROM "
		    "plugins p WHERE type = ?1 AND name = ?2 AND alloc = ?3");
		sqlite3_bind_text(st, 3, key->alloc, -1, SQLITE_STATIC);
	}
	sqlite3_bind_int(st, 1, key->type);
	sqlite3_bind_text(st, 2, key->name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = row_instance(&op->arena, st);
		sqlite3_reset(st);
		return 1;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "plugins find");
	return 0;
}

static int
not_found(struct registry *r, struct op *op, const Berth__PluginKey *key)
{
	sqlite3_stmt *st;
	bool named;

	st = store_stmt(&r->store, "SELECT 1 FROM plugins WHERE type = ?1 "
	    "AND name = ?2 LIMIT 1");
	sqlite3_bind_int(st, 1, key->type);
	sqlite3_bind_text(st, 2, key->name, -1, SQLITE_STATIC);
	named = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_reset(st);
	if (!named)
		return op_fail(op, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
		    "no %s plugin named %s", reg_plugin_type_name(key->type),
		    key->name);
	return op_fail(op, BERTH__ERROR_CODE__ERROR_NOT_FOUND,
	    "%s plugin %s has no instance for alloc %s",
	    reg_plugin_type_name(key->type), key->name, key->alloc);
}

static int
emit(struct registry *r, Berth__EventType type, uint64_t index,
    Berth__PluginType ptype, const char *name, const char *alloc,
    bool active)
{
	Berth__Event *ev = events_new(type, index);

	ev->plugin_type = ptype;
	ev->plugin_name = strdup(name);
	ev->alloc = strdup(alloc);
	ev->active = active;
	if (ev->plugin_name == NULL || ev->alloc == NULL)
		fatal("emit");
	return events_emit(r, ev);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
plugins_register(struct registry *r, struct op *op)
{
	const Berth__PluginInstance *in = op->req->register_plugin->instance;
	Berth__PluginKey key = BERTH__PLUGIN_KEY__INIT;
	Berth__Envelope *rep;
	Berth__RegisterPluginReply *rr;
	Berth__PluginInstance *out;
	sqlite3_stmt *st;
	uint64_t index = store_next_index(&r->store);

	st = store_stmt(&r->store, "INSERT INTO plugins (type, name, alloc, "
	    "endpoint, provider, provider_version, capabilities, "
	    "registered_at, create_index, modify_index) VALUES (?1, ?2, ?3, "
	    "?4, ?5, ?6, ?7, ?8, ?9, ?9) ON CONFLICT (type, name, alloc) DO "
	    "UPDATE SET endpoint = excluded.endpoint, provider = "
	    "excluded.provider, provider_version = excluded.provider_version, "
	    "capabilities = excluded.capabilities, modify_index = "
	    "excluded.modify_index");
	sqlite3_bind_int(st, 1, in->type);
	sqlite3_bind_text(st, 2, in->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in->alloc, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, in->endpoint, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, in->provider, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, in->provider_version, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 7, in->capabilities.data ?
	    (const void *)in->capabilities.data : "", in->capabilities.len,
	    SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, now_ms());
	sqlite3_bind_int64(st, 9, (int64_t)index);
	if (sqlite3_step(st) != SQLITE_DONE) {
		sqlite3_reset(st);
		return op_db_fail(op, &r->store, "plugins_register");
	}
	sqlite3_reset(st);
	key.type = in->type;
	key.name = in->name;
	key.alloc = in->alloc;
	if (find(r, op, &key, &out) != 1)
		return op_db_fail(op, &r->store, "plugins_register: reading back");
	if (emit(r, BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_REGISTERED, index,
	    in->type, in->name, in->alloc, out->active) < 0)
		return op_db_fail(op, &r->store, "plugins_register: event");
	rep = op_reply(op, BERTH__ENVELOPE__BODY_REGISTER_PLUGIN_REPLY);
	rr = arena_alloc(&op->arena, sizeof(*rr));
	berth__register_plugin_reply__init(rr);
	rr->instance = out;
	rep->register_plugin_reply = rr;
	return 0;
}

int
plugins_deregister(struct registry *r, struct op *op)
{
	const Berth__PluginKey *key = op->req->deregister_plugin->key;
	Berth__PluginKey active = BERTH__PLUGIN_KEY__INIT;
	Berth__PluginInstance *gone, *next;
	Berth__DeregisterPluginReply *dr;
	Berth__Envelope *rep;
	sqlite3_stmt *st;
	uint64_t index;
	int rc;

	if ((rc = find(r, op, key, &gone)) <= 0)
		return rc < 0 ? rc : not_found(r, op, key);
	index = store_next_index(&r->store);
	st = store_stmt(&r->store, "DELETE FROM plugins WHERE type = ?1 AND "
	    "name = ?2 AND alloc = ?3");
	sqlite3_bind_int(st, 1, key->type);
	sqlite3_bind_text(st, 2, key->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, key->alloc, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		sqlite3_reset(st);
		return op_db_fail(op, &r->store, "plugins_deregister");
	}
	sqlite3_reset(st);
	if (emit(r, BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_DEREGISTERED, index,
	    key->type, key->name, key->alloc, false) < 0)
		return op_db_fail(op, &r->store, "plugins_deregister: event");
	rep = op_reply(op, BERTH__ENVELOPE__BODY_DEREGISTER_PLUGIN_REPLY);
	dr = arena_alloc(&op->arena, sizeof(*dr));
	berth__deregister_plugin_reply__init(dr);
	dr->index = index;
	dr->promoted_alloc = "";
	rep->deregister_plugin_reply = dr;
	if (!gone->active)
		return 0;
	/* The active one went: the next newest takes over at once. */
	active.type = key->type;
	active.name = key->name;
	active.alloc = "";
	if ((rc = find(r, op, &active, &next)) < 0)
		return rc;
	if (rc == 0)
		return 0;
	if (emit(r, BERTH__EVENT_TYPE__EVENT_TYPE_PLUGIN_PROMOTED,
	    store_next_index(&r->store), key->type, key->name, next->alloc,
	    true) < 0)
		return op_db_fail(op, &r->store, "plugins_deregister: event");
	dr->promoted_alloc = next->alloc;
	return 0;
}

int
plugins_get(struct registry *r, struct op *op)
{
	const Berth__PluginKey *key = op->req->get_plugin->key;
	Berth__PluginInstance *pi;
	Berth__Envelope *rep;
	Berth__PluginList *pl;
	int rc;

	if ((rc = find(r, op, key, &pi)) <= 0)
		return rc < 0 ? rc : not_found(r, op, key);
	rep = op_reply(op, BERTH__ENVELOPE__BODY_PLUGIN_LIST);
	pl = arena_alloc(&op->arena, sizeof(*pl));
	berth__plugin_list__init(pl);
	pl->instances = arena_alloc(&op->arena, sizeof(*pl->instances));
	pl->instances[0] = pi;
	pl->n_instances = 1;
	rep->plugin_list = pl;
	return 0;
}

/* One page, in row order (stable across restarts), within the budget. */
int
plugins_list(struct registry *r, struct op *op)
{
	const Berth__ListPlugins *lp = op->req->list_plugins;
	Berth__PluginInstance *pi;
	Berth__Envelope *rep;
	Berth__PluginList *pl;
	sqlite3_stmt *st;
	size_t cap = 64, used = 0;
	int rc;

	st = store_stmt(&r->store, "SELECT " PLUGIN_COLS " FROM plugins p "
	    "WHERE rowid > ?1 AND (?2 = 0 OR type = ?2) AND (?3 = '' OR "
	    "name = ?3) ORDER BY rowid");
	sqlite3_bind_int64(st, 1, lp->after);
	sqlite3_bind_int(st, 2, lp->type);
	sqlite3_bind_text(st, 3, lp->name, -1, SQLITE_STATIC);
	rep = op_reply(op, BERTH__ENVELOPE__BODY_PLUGIN_LIST);
	pl = arena_alloc(&op->arena, sizeof(*pl));
	berth__plugin_list__init(pl);
	rep->plugin_list = pl;
	pl->instances = arena_alloc(&op->arena, cap * sizeof(*pl->instances));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (used >= REG_PAGE_BUDGET) {
			pl->more = true;
			break;
		}
		if (pl->n_instances == cap) {
			Berth__PluginInstance **bigger;

			bigger = arena_alloc(&op->arena,
			    2 * cap * sizeof(*bigger));
			memcpy(bigger, pl->instances, cap * sizeof(*bigger));
			pl->instances = bigger;
			cap *= 2;
		}
		pi = row_instance(&op->arena, st);
		used += berth__plugin_instance__get_packed_size(pi) + 8;
		pl->instances[pl->n_instances++] = pi;
		pl->next = sqlite3_column_int64(st, 11);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return op_db_fail(op, &r->store, "plugins_list");
	return 0;
}
