/*
 * request.c: the first switch: what a well-formed request is. Identifiers
 * pass ident_problem() on their exact bytes (a NUL is refused, never
 * truncated), enums hold a known value, unused fields are empty, no
 * message has unknown fields; paths are built with common/layout.c.
 * Must not: touch the file system or a process (fuzz_request includes it).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "mounter.h"

#define BAD BERTH__ERROR_CODE__ERROR_BAD_REQUEST
#define TRY(x) do { if ((code = (x)) != OK) return code; } while (0)

/* A message, or a sub-message, with fields we do not know: refused. */
static Berth__ErrorCode
known(const void *msg, const char *what, char *why)
{
	const ProtobufCMessage *m = msg;

	if (m == NULL)
		return fail(why, BAD, "%s is missing", what);
	if (m->n_unknown_fields != 0)
		return fail(why, BAD, "%s has %u field(s) this version does "
		    "not know", what, m->n_unknown_fields);
	return OK;
}

static Berth__ErrorCode
ident(char *dst, ProtobufCBinaryData b, const char *field, char *why)
{
	const char *problem;

	if ((problem = ident_problem((const char *)b.data, b.len)) != NULL)
		return fail(why, BAD, "%s %s", field, problem);
	memcpy(dst, b.data, b.len);
	dst[b.len] = '\0';
	return OK;
}

static Berth__ErrorCode
usage(struct mreq *rq, const Berth__VolumeUsage *u, char *why)
{
	/* Indexed by the enums' values; 0 is "unknown". */
	static const char *const attach[] = { NULL, "file-system",
		"block-device" };
	static const char *const access[] = { NULL, "single-node-reader-only",
		"single-node-writer", "multi-node-reader-only",
		"multi-node-single-writer", "multi-node-multi-writer" };
	Berth__ErrorCode code;
	unsigned a, c;

	TRY(known(u, "usage", why));
	a = (unsigned)u->attachment;
	c = (unsigned)u->access;
	if (a == 0 || a >= sizeof(attach) / sizeof(attach[0]))
		return fail(why, BAD, "usage.attachment %d is unknown",
		    (int)u->attachment);
	if (c == 0 || c >= sizeof(access) / sizeof(access[0]))
		return fail(why, BAD, "usage.access %d is unknown",
		    (int)u->access);
	if (layout_usage(rq->usage, sizeof(rq->usage), u->read_only,
	    attach[a], access[c]) < 0)
		return fail(why, BAD, "usage does not make a path component");
	rq->read_only = u->read_only;
	rq->block = a == 2;
	return OK;
}

static Berth__ErrorCode
handle(struct mreq *rq, const Berth__PluginHandle *hd, char *why)
{
	Berth__ErrorCode code;

	TRY(known(hd, "handle", why));
	/* pid_max is at most 2^22; 1 is init, never ours. */
	if (hd->pid <= 1 || hd->pid > (1U << 22))
		return fail(why, BAD, "handle.pid %u is out of range", hd->pid);
	if (hd->start_time == 0)
		return fail(why, BAD, "handle.start_time is missing");
	rq->pid = (pid_t)hd->pid;
	rq->start_time = hd->start_time;
	return OK;
}

#define ID(field, src, name) TRY(ident(rq->field, (src), (name), why))
/* layout_* fail only for a path too long or plugin type "plugins". */
#define PATH(x) do { if ((x) < 0) return fail(why, BAD, "the identifiers " \
	"make a path too long, or plugin type \"plugins\""); } while (0)
/* A plugin's type and id; opt: both empty, for none. */
#define PLUGIN(r, opt) do { if (!(opt) || (r)->plugin_type.len > 0 || \
	(r)->plugin_id.len > 0) { ID(type, (r)->plugin_type, "plugin_type"); \
	ID(plugin, (r)->plugin_id, "plugin_id"); } } while (0)
/* The body, present and with no field this version does not know. */
#define BODY(type, r, field) const type *r = env->field; \
	TRY(known(r, #field, why))

/* Not -1; root only as the uid, and only if optional (gid 0 too: none). */
static Berth__ErrorCode
owner(uint32_t uid, uint32_t gid, bool optional, struct mreq *rq, char *why)
{
	if (uid == (uint32_t)-1 || gid == (uint32_t)-1 || (uid == 0 &&
	    !optional) || (gid == 0 && !(optional && uid == 0)))
		return fail(why, BAD, "an owner must be neither root nor -1");
	rq->uid = uid;
	rq->gid = gid;
	return OK;
}

Berth__ErrorCode
request_check(const Berth__Envelope *env, struct mreq *rq, char *why)
{
	Berth__ErrorCode code;
	size_t n = MREQ_PATH;

	memset(rq, 0, sizeof(*rq));
	rq->body = env->body_case;
	rq->id = env->request_id;
	if (env->kind != BERTH__KIND__KIND_REQUEST || env->error != NULL)
		return fail(why, BAD, "only requests without an error are "
		    "served");
	TRY(known(env, "envelope", why));
	switch (env->body_case) {
	case BERTH__ENVELOPE__BODY_PREPARE_PLUGIN: {
		BODY(Berth__PreparePlugin, r, prepare_plugin);

		PLUGIN(r, false);
		ID(alloc, r->alloc_id, "alloc_id");
		TRY(owner(r->owner_uid, r->owner_gid, true, rq, why));
		PATH(layout_plugin_root(rq->path, n, rq->type, rq->plugin));
		PATH(layout_plugin_socket_dir(rq->path2, n, rq->alloc));
		return OK;
	}
	case BERTH__ENVELOPE__BODY_PREPARE_VOLUME: {
		BODY(Berth__PrepareVolume, r, prepare_volume);

		PLUGIN(r, false);
		ID(vol, r->volume_id, "volume_id");
		if (r->plugin_alloc.len > 0)
			ID(palloc, r->plugin_alloc, "plugin_alloc");
		/* Staging names a usage only for an older per-usage path. */
		if (r->dir != BERTH__VOLUME_DIR__VOLUME_DIR_STAGING ||
		    r->usage != NULL)
			TRY(usage(rq, r->usage, why));
		switch (r->dir) {
		case BERTH__VOLUME_DIR__VOLUME_DIR_STAGING:
			rq->staging = true;
			ID(ns, r->volume_ns, "volume_ns");
			if (r->alloc_id.len != 0)
				return fail(why, BAD, "alloc_id is for "
				    "publish");
			PATH(layout_staging(rq->path, n, rq->type,
			    rq->plugin, rq->ns, rq->vol, rq->usage[0] != '\0' ?
			    rq->usage : NULL));
			break;
		case BERTH__VOLUME_DIR__VOLUME_DIR_PUBLISH:
			ID(alloc, r->alloc_id, "alloc_id");
			if (r->volume_ns.len != 0)
				return fail(why, BAD, "volume_ns is for "
				    "staging");
			PATH(layout_publish(rq->path, n, rq->type,
			    rq->plugin, rq->alloc, rq->vol, rq->usage));
			break;
		default:
			return fail(why, BAD, "dir %d is unknown", (int)r->dir);
		}
		PATH(layout_plugin_root(rq->path2, n, rq->type, rq->plugin));
		return OK;
	}
	case BERTH__ENVELOPE__BODY_BIND_VOLUME: {
		BODY(Berth__BindVolume, r, bind_volume);

		PLUGIN(r, false);
		ID(alloc, r->alloc_id, "alloc_id");
		ID(vol, r->volume_id, "volume_id");
		ID(task, r->task, "task");
		ID(name, r->name, "name");
		TRY(usage(rq, r->usage, why));
		rq->read_only = rq->read_only || r->read_only;
		rq->gid = r->group;	/* task.c's task_ids() checks it */
		PATH(layout_publish(rq->path, n, rq->type, rq->plugin,
		    rq->alloc, rq->vol, rq->usage));
		PATH(layout_task_volume(rq->path2, n, rq->alloc, rq->task,
		    rq->name));
		return OK;
	}
	case BERTH__ENVELOPE__BODY_PREPARE_TASK: {
		BODY(Berth__PrepareTask, r, prepare_task);

		ID(alloc, r->alloc_id, "alloc_id");
		ID(task, r->task, "task");
		TRY(owner(r->owner_uid, r->owner_gid, false, rq, why));
		PATH(layout_task_dir(rq->path, n, rq->alloc, rq->task));
		return OK;
	}
	case BERTH__ENVELOPE__BODY_START_TASK: {
		BODY(Berth__StartTask, r, start_task);

		ID(alloc, r->alloc_id, "alloc_id");
		ID(task, r->task, "task");
		if (r->user.len > 0)
			ID(user, r->user, "user");
		/* Root's ids, and berth's, are refused by task.c. */
		TRY(owner(r->uid, r->gid, false, rq, why));
		/* crun takes limits as int64. */
		if ((r->memory_bytes | r->memory_max_bytes) >> 62 != 0)
			return fail(why, BAD, "a memory limit is over 2^62");
		rq->network_none = r->network_none;
		rq->memory = r->memory_bytes;
		rq->memory_max = r->memory_max_bytes;
		rq->cpu_shares = r->cpu_shares;
		rq->pids_max = r->pids_max;
		/* A plugin task: task.c binds its socket dir and root in. */
		PLUGIN(r, true);
		if (rq->type[0] != '\0')
			PATH(layout_plugin_root(rq->path2, n, rq->type,
			    rq->plugin));
		PATH(layout_task_dir(rq->path, n, rq->alloc, rq->task));
		snprintf(rq->path2, n, LAYOUT_SHIM_DIR "/%s/%s", rq->alloc,
		    rq->task);
		return OK;
	}
	case BERTH__ENVELOPE__BODY_UNBIND_VOLUME: {
		BODY(Berth__UnbindVolume, r, unbind_volume);

		ID(alloc, r->alloc_id, "alloc_id");
		ID(task, r->task, "task");
		ID(name, r->name, "name");
		PATH(layout_task_volume(rq->path, n, rq->alloc, rq->task,
		    rq->name));
		return OK;
	}
	case BERTH__ENVELOPE__BODY_CLEANUP_ALLOC: {
		BODY(Berth__CleanupAlloc, r, cleanup_alloc);

		ID(alloc, r->alloc_id, "alloc_id");
		PLUGIN(r, true);
		PATH(layout_plugin_socket_dir(rq->path2, n, rq->alloc));
		snprintf(rq->path, n, LAYOUT_ALLOCS_DIR "/%s", rq->alloc);
		return OK;
	}
	case BERTH__ENVELOPE__BODY_START_PLUGIN: {
		BODY(Berth__StartPlugin, r, start_plugin);

		ID(def, r->definition, "definition");
		PLUGIN(r, false);
		ID(alloc, r->alloc_id, "alloc_id");
		PATH(layout_plugin_root(rq->path, n, rq->type, rq->plugin));
		PATH(layout_plugin_socket_dir(rq->path2, n, rq->alloc));
		return OK;
	}
	case BERTH__ENVELOPE__BODY_ADOPT_PLUGIN:
		TRY(known(env->adopt_plugin, "adopt_plugin", why));
		return handle(rq, env->adopt_plugin->handle, why);
	case BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN: {
		static const int sigs[] = {
			[BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM] = SIGTERM,
			[BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_KILL] = SIGKILL,
			[BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_INT] = SIGINT,
			[BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_HUP] = SIGHUP,
		};
		unsigned s;
		BODY(Berth__SignalPlugin, r, signal_plugin);

		TRY(handle(rq, r->handle, why));
		s = (unsigned)r->signal;
		if (s == 0 || s >= sizeof(sigs) / sizeof(sigs[0]))
			return fail(why, BAD, "signal %d is unknown",
			    (int)r->signal);
		rq->sig = sigs[s];
		return OK;
	}
	default:
		return fail(why, BERTH__ERROR_CODE__ERROR_UNSUPPORTED,
		    "berth-mounter does not serve %s",
		    ipc_body_name(env->body_case));
	}
}
