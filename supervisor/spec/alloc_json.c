/*
 * alloc_json.c: a checked alloc written back as JSON (see alloc.h), for
 * the operator API and berthctl.
 *
 * Defaults are written out, so that what an operator reads back is what
 * runs; fields in the order the jobspec lists them. Must not: write a
 * document that alloc_parse() would refuse or read differently.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"
#include "duration.h"
#include "xalloc.h"

/*
 * A string jansson refuses (not UTF-8) makes the whole document fail;
 * containers and numbers fail only for lack of memory, which is fatal.
 */
static void
put(json_t *obj, const char *key, json_t *v, bool *ok)
{
	if (v == NULL || json_object_set_new(obj, key, v) < 0)
		*ok = false;
}

static void
append(json_t *arr, json_t *v, bool *ok)
{
	if (v == NULL || json_array_append_new(arr, v) < 0)
		*ok = false;
}

static json_t *
strings(char *const *v, size_t n, bool *ok)
{
	json_t *arr;
	size_t i;

	arr = xnonnull(json_array(), "strings: json_array");
	for (i = 0; i < n; i++)
		append(arr, json_string(v[i]), ok);
	return arr;
}

static json_t *
duration(int64_t ms)
{
	char buf[32];

	duration_format(ms, buf, sizeof(buf));
	return xnonnull(json_string(buf), "duration: json_string");
}

static json_t *
task_config(const struct alloc_task *t, bool *ok)
{
	json_t *c;

	c = xnonnull(json_object(), "task_config: json_object");
	if (t->driver == ALLOC_DRIVER_PRIVILEGED)
		put(c, "plugin", json_string(t->plugin), ok);
	else {
		put(c, "command", json_string(t->command), ok);
		if (t->nargs > 0)
			put(c, "args", strings(t->args, t->nargs, ok), ok);
	}
	return c;
}

/* env holds "K=V"; the name ends at the first '=' (names have none). */
static json_t *
task_env(const struct alloc_task *t, bool *ok)
{
	json_t *env;
	size_t i, len;

	env = xnonnull(json_object(), "task_env: json_object");
	for (i = 0; i < t->nenv; i++) {
		len = strcspn(t->env[i], "=");
		if (json_object_setn_new(env, t->env[i], len,
		    json_string(t->env[i] + len + 1)) < 0)
			*ok = false;
	}
	return env;
}

static json_t *
task_csi(const struct alloc_csi_plugin *c, bool *ok)
{
	json_t *o;

	o = xnonnull(json_object(), "task_csi: json_object");
	put(o, "id", json_string(c->id), ok);
	put(o, "type", json_string(alloc_csi_type_name(c->type)), ok);
	put(o, "health_timeout", duration(c->health_timeout_ms), ok);
	return o;
}

static json_t *
task_mounts(const struct alloc_task *t, bool *ok)
{
	json_t *arr, *m;
	size_t i;

	arr = xnonnull(json_array(), "task_mounts: json_array");
	for (i = 0; i < t->nmounts; i++) {
		m = xnonnull(json_object(), "task_mounts: json_object");
		put(m, "volume", json_string(t->mounts[i].volume), ok);
		put(m, "destination", json_string(t->mounts[i].destination),
		    ok);
		put(m, "read_only", json_boolean(t->mounts[i].read_only), ok);
		append(arr, m, ok);
	}
	return arr;
}

static json_t *
task_restart(const struct alloc_restart *r, bool *ok)
{
	json_t *o;

	o = xnonnull(json_object(), "task_restart: json_object");
	put(o, "attempts", json_integer(r->attempts), ok);
	put(o, "interval", duration(r->interval_ms), ok);
	put(o, "delay", duration(r->delay_ms), ok);
	put(o, "mode", json_string(alloc_restart_mode_name(r->mode)), ok);
	return o;
}

static json_t *
task(const struct alloc_task *t, bool *ok)
{
	json_t *o;

	o = xnonnull(json_object(), "task: json_object");
	put(o, "name", json_string(t->name), ok);
	put(o, "driver", json_string(alloc_driver_name(t->driver)), ok);
	put(o, "config", task_config(t, ok), ok);
	if (t->nenv > 0)
		put(o, "env", task_env(t, ok), ok);
	put(o, "kill_timeout", duration(t->kill_timeout_ms), ok);
	if (t->driver == ALLOC_DRIVER_EXEC)
		put(o, "logs", xnonnull(json_pack("{s:i, s:i}", "max_files",
		    t->log_max_files, "max_file_size", t->log_max_file_mb),
		    "task: json_pack"), ok);
	if (t->user != NULL)
		put(o, "user", json_string(t->user), ok);
	if (t->driver == ALLOC_DRIVER_EXEC)
		put(o, "resources", xnonnull(json_pack("{s:i, s:i, s:i, s:i}",
		    "cpu", t->cpu, "memory", t->memory_mb, "memory_max",
		    t->memory_max_mb, "pids", t->pids), "task: json_pack"), ok);
	if (t->csi.type != ALLOC_CSI_NONE)
		put(o, "csi_plugin", task_csi(&t->csi, ok), ok);
	put(o, "restart", task_restart(&t->restart, ok), ok);
	if (t->nmounts > 0)
		put(o, "volume_mounts", task_mounts(t, ok), ok);
	return o;
}

static json_t *
volume(const struct alloc_volume *v, bool *ok)
{
	json_t *o, *opts;

	o = xnonnull(json_object(), "volume: json_object");
	put(o, "type", json_string("csi"), ok);
	put(o, "source", json_string(v->source), ok);
	put(o, "access_mode", json_string(alloc_access_mode_name(
	    v->access_mode)), ok);
	put(o, "attachment_mode", json_string(alloc_attachment_mode_name(
	    v->attachment_mode)), ok);
	put(o, "read_only", json_boolean(v->read_only), ok);
	if (v->mount_group != 0)
		put(o, "mount_group", json_integer(v->mount_group), ok);
	if (v->stage_secret != NULL || v->publish_secret != NULL) {
		/* Names only: an alloc never holds a secret's value. */
		opts = xnonnull(json_object(), "volume: json_object");
		if (v->stage_secret != NULL)
			put(opts, "stage", json_string(v->stage_secret), ok);
		if (v->publish_secret != NULL)
			put(opts, "publish", json_string(v->publish_secret),
			    ok);
		put(o, "secrets", opts, ok);
	}
	if (v->fs_type == NULL && v->nflags == 0)
		return o;
	opts = xnonnull(json_object(), "volume: json_object");
	if (v->fs_type != NULL)
		put(opts, "fs_type", json_string(v->fs_type), ok);
	if (v->nflags > 0)
		put(opts, "mount_flags", strings(v->mount_flags, v->nflags, ok),
		    ok);
	put(o, "mount_options", opts, ok);
	return o;
}

char *
alloc_to_json(const struct alloc *a)
{
	json_t *root, *tasks, *vols;
	bool ok = true;
	char *text = NULL;
	size_t i;

	root = xnonnull(json_object(), "alloc_to_json: json_object");
	put(root, "id", json_string(a->id), &ok);
	put(root, "namespace", json_string(a->ns), &ok);
	put(root, "network", xnonnull(json_pack("{s:s}", "mode",
	    a->network_none ? "none" : "host"), "alloc_to_json: json_pack"),
	    &ok);
	tasks = xnonnull(json_array(), "alloc_to_json: json_array");
	for (i = 0; i < a->ntasks; i++)
		append(tasks, task(&a->tasks[i], &ok), &ok);
	put(root, "tasks", tasks, &ok);
	if (a->nvolumes > 0) {
		vols = xnonnull(json_object(), "alloc_to_json: json_object");
		for (i = 0; i < a->nvolumes; i++)
			put(vols, a->volumes[i].name,
			    volume(&a->volumes[i], &ok), &ok);
		put(root, "volumes", vols, &ok);
	}
	if (ok)
		text = xnonnull(json_dumps(root, JSON_COMPACT),
		    "alloc_to_json: json_dumps");
	json_decref(root);
	return text;
}
