/*
 * alloc.c: parse and check an allocation document (see alloc.h).
 *
 * One walk over the jansson tree, in document order (jansson keeps an
 * object's keys in the order they were read), checks every field and
 * fills the structure as it goes; problems are collected, never returned
 * early, so the operator sees all of them at once. A field's check may
 * look ahead at a sibling (a task's "config" depends on its "driver", a
 * mount names a volume defined later), but reports only on its own field.
 * Must not: touch the filesystem beyond alloc_load_file()'s one file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc.h"
#include "duration.h"
#include "ident.h"
#include "xalloc.h"

#define QUOTE_MAX	64	/* bytes of a value shown in a problem */
#define QUOTE_BUF	(QUOTE_MAX * 4 + 8)

struct walk {
	struct alloc_problems *pr;
	struct alloc *a;
	json_t *volumes;	/* the document's "volumes", when an object */
	bool volumes_absent;	/* then no mount can name a volume */
	struct alloc_task *task;	/* the task being walked */
	enum alloc_driver driver;	/* its driver, read ahead; 0: unknown */
	bool csi;			/* it has a csi_plugin, read ahead */
	char path[1024];
	size_t pathlen;
	const char *volume_id;	/* a volume spec's, from the API's path */
};

/* A document spelling and its value; tables end with a NULL name. */
struct name {
	const char *name;
	int value;
};

static const struct name drivers[] = {
	{ "exec", ALLOC_DRIVER_EXEC },
	{ "privileged", ALLOC_DRIVER_PRIVILEGED },
	{ NULL, 0 }
};

static const struct name csi_types[] = {
	{ "node", ALLOC_CSI_NODE },
	{ "controller", ALLOC_CSI_CONTROLLER },
	{ "monolith", ALLOC_CSI_MONOLITH },
	{ NULL, 0 }
};

static const struct name restart_modes[] = {
	{ "fail", ALLOC_RESTART_FAIL },
	{ "delay", ALLOC_RESTART_DELAY },
	{ NULL, 0 }
};

static const struct name access_modes[] = {
	{ "single-node-reader-only",
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY },
	{ "single-node-writer",
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER },
	{ "multi-node-reader-only",
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_READER_ONLY },
	{ "multi-node-single-writer",
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_SINGLE_WRITER },
	{ "multi-node-multi-writer",
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER },
	/* CSI 1.5's: only with plugins that advertise
	 * SINGLE_NODE_MULTI_WRITER (the volume manager checks). */
	{ "single-node-single-writer",
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER },
	{ "single-node-multi-writer",
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_MULTI_WRITER },
	{ NULL, 0 }
};

static const struct name attachment_modes[] = {
	{ "file-system", BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM },
	{ "block-device", BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE },
	{ NULL, 0 }
};

/* Only CSI volumes exist; the field is there because Nomad's has it. */
static const struct name volume_types[] = {
	{ "csi", 1 },
	{ NULL, 0 }
};

/* 0 when s (len bytes) is none of the table's names. */
static int
name_value(const struct name *t, const char *s, size_t len)
{
	for (; t->name != NULL; t++)
		if (strlen(t->name) == len && memcmp(t->name, s, len) == 0)
			return t->value;
	return 0;
}

static const char *
value_name(const struct name *t, int value)
{
	for (; t->name != NULL; t++)
		if (t->value == value)
			return t->name;
	return "unknown";
}

const char *
alloc_access_mode_name(Berth__AccessMode m)
{
	return value_name(access_modes, m);
}

const char *
alloc_attachment_mode_name(Berth__AttachmentMode m)
{
	return value_name(attachment_modes, m);
}

const char *
alloc_csi_type_name(enum alloc_csi_type t)
{
	return value_name(csi_types, t);
}

const char *
alloc_driver_name(enum alloc_driver d)
{
	return value_name(drivers, d);
}

const char *
alloc_restart_mode_name(enum alloc_restart_mode m)
{
	return value_name(restart_modes, m);
}

/*
 * Operator input goes into problems, and problems into logs and
 * terminals: show it printable, cut after max bytes. Printable ASCII
 * stays, '"' and '\' are escaped, anything else is \xNN.
 */
static const char *
escaped(char *buf, size_t size, const char *s, size_t len, size_t max,
    bool quotes)
{
	size_t i, off = 0;

	if (quotes)
		off += snprintf(buf + off, size - off, "\"");
	for (i = 0; i < len && i < max && off < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			off += snprintf(buf + off, size - off, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			off += snprintf(buf + off, size - off, "%c", c);
		else
			off += snprintf(buf + off, size - off, "\\x%02x", c);
	}
	if (off < size)
		snprintf(buf + off, size - off, "%s%s", len > max ? "..." : "",
		    quotes ? "\"" : "");
	return buf;
}

static const char *
quoted(char *buf, const char *s, size_t len)
{
	return escaped(buf, QUOTE_BUF, s, len, QUOTE_MAX, true);
}

static void
problem(struct walk *w, const char *fmt, ...)
{
	struct alloc_problems *pr = w->pr;
	char reason[1024];
	va_list ap;

	if (pr->n == ALLOC_PROBLEMS_MAX) {
		pr->dropped++;
		return;
	}
	if (pr->items == NULL)
		pr->items = xcalloc(ALLOC_PROBLEMS_MAX + 1, sizeof(*pr->items));
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	xasprintf(&pr->items[pr->n], "%s: %s", w->pathlen > 0 ? w->path :
	    "document", reason);
	pr->n++;
}

/*
 * Path segments: ".key" when the key is plain, ["key"] when it holds
 * anything a reader could mistake for the path's own punctuation.
 */
static size_t
push_key(struct walk *w, const char *key)
{
	size_t old = w->pathlen, len = strlen(key), i;
	char q[QUOTE_BUF];
	bool plain = len > 0;

	for (i = 0; i < len; i++)
		if (!(key[i] >= 'a' && key[i] <= 'z') &&
		    !(key[i] >= 'A' && key[i] <= 'Z') &&
		    !(key[i] >= '0' && key[i] <= '9') && key[i] != '_' &&
		    key[i] != '-')
			plain = false;
	if (plain)
		snprintf(w->path + old, sizeof(w->path) - old, "%s%s",
		    old > 0 ? "." : "", escaped(q, sizeof(q), key, len,
		    QUOTE_MAX, false));
	else
		snprintf(w->path + old, sizeof(w->path) - old, "[%s]",
		    quoted(q, key, len));
	w->pathlen = strlen(w->path);
	return old;
}

static size_t
push_index(struct walk *w, size_t i)
{
	size_t old = w->pathlen;

	snprintf(w->path + old, sizeof(w->path) - old, "[%zu]", i);
	w->pathlen = strlen(w->path);
	return old;
}

static void
pop(struct walk *w, size_t old)
{
	w->pathlen = old;
	w->path[old] = '\0';
}

static const char *
type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_NULL:
		break;
	}
	return "null";
}

static char *
copy(const char *s, size_t len)
{
	char *p;

	p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* The string in v, or NULL after saying what was expected instead. */
static const char *
string_of(struct walk *w, json_t *v, const char *example, size_t *len)
{
	if (!json_is_string(v)) {
		problem(w, "must be a string%s%s, not %s", example != NULL ?
		    " such as " : "", example != NULL ? example : "",
		    type_name(v));
		return NULL;
	}
	*len = json_string_length(v);
	return json_string_value(v);
}

/* A string that a C API will see whole: no NUL may cut it short. */
static char *
take_text(struct walk *w, json_t *v)
{
	const char *s;
	size_t len;

	if ((s = string_of(w, v, NULL, &len)) == NULL)
		return NULL;
	if (memchr(s, '\0', len) != NULL) {
		problem(w, "contains a NUL byte");
		return NULL;
	}
	return copy(s, len);
}

static bool
ident_ok(struct walk *w, const char *s, size_t len)
{
	const char *why;
	char q[QUOTE_BUF];

	if ((why = ident_problem(s, len)) == NULL)
		return true;
	problem(w, "%s is not an identifier ([A-Za-z0-9._-], 1 to %d bytes, "
	    "not \".\" or \"..\"): it %s", quoted(q, s, len), BERTH_IDENT_MAX,
	    why);
	return false;
}

static char *
take_ident(struct walk *w, json_t *v)
{
	const char *s;
	size_t len;

	if ((s = string_of(w, v, NULL, &len)) == NULL || !ident_ok(w, s, len))
		return NULL;
	return copy(s, len);
}

/* One of the table's names; 0 after a problem. */
static int
take_enum(struct walk *w, json_t *v, const struct name *t)
{
	const struct name *n;
	const char *s;
	char list[256], q[QUOTE_BUF];
	size_t len, off = 0;
	int value;

	if ((s = string_of(w, v, NULL, &len)) == NULL)
		return 0;
	if ((value = name_value(t, s, len)) != 0)
		return value;
	for (n = t; n->name != NULL && off < sizeof(list); n++)
		off += snprintf(list + off, sizeof(list) - off, "%s\"%s\"",
		    n == t ? "" : ", ", n->name);
	if (t[1].name == NULL)
		problem(w, "must be %s, not %s", list, quoted(q, s, len));
	else
		problem(w, "must be one of %s, not %s", list, quoted(q, s, len));
	return 0;
}

/* A duration up to max; positive: 0s is refused. -1 after a problem. */
static int64_t
take_duration(struct walk *w, json_t *v, bool positive, int64_t max)
{
	const char *s;
	char why[256], maxs[32], q[QUOTE_BUF];
	size_t len;
	int64_t ms;

	if ((s = string_of(w, v, "\"30s\"", &len)) == NULL)
		return -1;
	if (memchr(s, '\0', len) != NULL) {
		problem(w, "contains a NUL byte");
		return -1;
	}
	if (duration_parse(s, &ms, why, sizeof(why)) < 0) {
		problem(w, "%s", why);
		return -1;
	}
	if (positive && ms == 0) {
		problem(w, "must be longer than 0s");
		return -1;
	}
	if (ms > max) {
		duration_format(max, maxs, sizeof(maxs));
		problem(w, "must be at most %s, not %s", maxs, quoted(q, s, len));
		return -1;
	}
	return ms;
}

static bool
take_bool(struct walk *w, json_t *v)
{
	if (!json_is_boolean(v)) {
		problem(w, "must be a boolean (true or false), not %s",
		    type_name(v));
		return false;
	}
	return json_is_true(v);
}

/*
 * A short word from an allow-list: letters a-z (and A-Z when upper),
 * digits and the characters in punct; set names the list for people.
 */
static char *
take_word(struct walk *w, json_t *v, const char *punct, bool upper,
    size_t max, const char *set)
{
	const char *s;
	char q[QUOTE_BUF], c[8];
	size_t len, i;

	if ((s = string_of(w, v, NULL, &len)) == NULL)
		return NULL;
	if (len == 0) {
		problem(w, "must not be empty");
		return NULL;
	}
	if (len > max) {
		problem(w, "%s is %zu bytes, more than the %zu allowed",
		    quoted(q, s, len), len, max);
		return NULL;
	}
	for (i = 0; i < len; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') &&
		    !(upper && s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') &&
		    (s[i] == '\0' || strchr(punct, s[i]) == NULL)) {
			problem(w, "%s contains '%s', which is not in %s",
			    quoted(q, s, len), escaped(c, sizeof(c), s + i, 1,
			    1, false), set);
			return NULL;
		}
	return copy(s, len);
}

static bool
object_of(struct walk *w, json_t *v)
{
	if (json_is_object(v))
		return true;
	problem(w, "must be an object, not %s", type_name(v));
	return false;
}

/* An array or object of at most max entries; its entries are checked
 * even when there are too many, so that one pass shows everything. */
static bool
sized(struct walk *w, json_t *v, bool array, size_t max)
{
	size_t n;

	if (array ? !json_is_array(v) : !json_is_object(v)) {
		problem(w, "must be %s, not %s", array ? "an array" :
		    "an object", type_name(v));
		return false;
	}
	n = array ? json_array_size(v) : json_object_size(v);
	if (n > max)
		problem(w, "has %zu entries, more than the %zu allowed", n, max);
	return true;
}

typedef void (*elem_fn)(struct walk *, json_t *, size_t, void *);
typedef void (*member_fn)(struct walk *, const char *, json_t *, size_t,
    void *);

static void
each_element(struct walk *w, json_t *arr, elem_fn fn, void *ctx)
{
	json_t *v;
	size_t i, old;

	json_array_foreach(arr, i, v) {
		old = push_index(w, i);
		fn(w, v, i, ctx);
		pop(w, old);
	}
}

static void
each_member(struct walk *w, json_t *obj, member_fn fn, void *ctx)
{
	const char *key;
	json_t *v;
	size_t i = 0, old;

	json_object_foreach(obj, key, v) {
		old = push_key(w, key);
		fn(w, key, v, i++, ctx);
		pop(w, old);
	}
}

/*
 * A field of a fixed-shape object: an identifier or a boolean stored at
 * off in the object's structure, or a check of its own.
 */
enum field_kind { FIELD_IDENT, FIELD_BOOL, FIELD_FN };

struct field {
	const char *name;
	bool required;
	enum field_kind kind;
	size_t off;
	void (*fn)(struct walk *, json_t *, void *);
};

#define IDENT(n, req, type, m) { n, req, FIELD_IDENT, offsetof(type, m), NULL }
#define BOOL(n, type, m) { n, false, FIELD_BOOL, offsetof(type, m), NULL }
#define FN(n, req, f) { n, req, FIELD_FN, 0, f }
#define NFIELDS(t) (sizeof(t) / sizeof(t[0]))

/* Every field of obj in order, then the required ones that are missing. */
static void
walk_fields(struct walk *w, json_t *obj, const struct field *fields,
    size_t nfields, void *dst)
{
	const struct field *f;
	const char *key;
	json_t *v;
	size_t old;

	json_object_foreach(obj, key, v) {
		old = push_key(w, key);
		for (f = fields; f < fields + nfields; f++)
			if (strcmp(f->name, key) == 0)
				break;
		if (f == fields + nfields)
			problem(w, "unknown field; remove it");
		else if (f->kind == FIELD_IDENT)
			*(char **)((char *)dst + f->off) = take_ident(w, v);
		else if (f->kind == FIELD_BOOL)
			*(bool *)((char *)dst + f->off) = take_bool(w, v);
		else
			f->fn(w, v, dst);
		pop(w, old);
	}
	for (f = fields; f < fields + nfields; f++)
		if (f->required && json_object_get(obj, f->name) == NULL) {
			old = push_key(w, f->name);
			problem(w, "is required");
			pop(w, old);
		}
}

/* An absent read_only means false; a wrong type is its own problem. */
static bool
false_or_absent(json_t *v)
{
	return v == NULL || json_is_false(v);
}

static void
exec_command(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;
	char q[QUOTE_BUF];

	if ((t->command = take_text(w, v)) == NULL)
		return;
	if (t->command[0] != '/')
		problem(w, "must be an absolute path, not %s", quoted(q,
		    t->command, strlen(t->command)));
	else if (strlen(t->command) >= PATH_MAX)
		problem(w, "is longer than %d bytes", PATH_MAX - 1);
}

/* "$NAME" or "${": what a shell would expand, and berth does not. */
static bool
shell_var(const char *s)
{
	for (; (s = strchr(s, '$')) != NULL; s++)
		if (s[1] == '{' || s[1] == '_' || (s[1] >= 'a' && s[1] <= 'z') ||
		    (s[1] >= 'A' && s[1] <= 'Z'))
			return true;
	return false;
}

/*
 * A plugin's endpoint comes as a placeholder, replaced when it starts,
 * never as a variable that nothing would expand (the argument would reach
 * the plugin as written). Other tasks have no endpoint to put there.
 */
static void
exec_arg(struct walk *w, json_t *v, size_t i, void *ctx)
{
	struct alloc_task *t = ctx;
	char q[QUOTE_BUF];
	const char *s;

	if ((s = t->args[i] = take_text(w, v)) == NULL)
		return;
	if (w->csi && shell_var(s))
		problem(w, "%s would reach the plugin as written: nothing "
		    "expands variables; for its socket write "
		    ALLOC_CSI_ENDPOINT " (unix://PATH) or " ALLOC_CSI_SOCKET
		    " (PATH)", quoted(q, s, strlen(s)));
	else if (!w->csi && (strstr(s, ALLOC_CSI_ENDPOINT) != NULL ||
	    strstr(s, ALLOC_CSI_SOCKET) != NULL))
		problem(w, "names the plugin socket, but the task has no "
		    "\"csi_plugin\" block");
}

static void
exec_args(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;

	if (!sized(w, v, true, ALLOC_MAX_ARGS))
		return;
	t->nargs = json_array_size(v);
	t->args = xcalloc(t->nargs, sizeof(*t->args));
	each_element(w, v, exec_arg, t);
}

static const struct field exec_fields[] = {
	FN("command", true, exec_command),
	FN("args", false, exec_args),
};

static const struct field privileged_fields[] = {
	IDENT("plugin", true, struct alloc_task, plugin),
};

static void
task_config(struct walk *w, json_t *v, void *dst)
{
	if (!object_of(w, v))
		return;
	/* Without a known driver there is no telling which fields belong. */
	if (w->driver == ALLOC_DRIVER_EXEC)
		walk_fields(w, v, exec_fields, NFIELDS(exec_fields), dst);
	else if (w->driver == ALLOC_DRIVER_PRIVILEGED)
		walk_fields(w, v, privileged_fields,
		    NFIELDS(privileged_fields), dst);
}

static void
task_name(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;
	size_t i;

	if ((t->name = take_ident(w, v)) == NULL)
		return;
	for (i = 0; &w->a->tasks[i] != t; i++)
		if (w->a->tasks[i].name != NULL &&
		    strcmp(w->a->tasks[i].name, t->name) == 0) {
			problem(w, "\"%s\" is the name of tasks[%zu] already; "
			    "task names must be unique", t->name, i);
			return;
		}
}

static void
task_driver(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;

	t->driver = take_enum(w, v, drivers);
}

static void
env_var(struct walk *w, const char *key, json_t *v, size_t i, void *ctx)
{
	struct alloc_task *t = ctx;
	char q[QUOTE_BUF];
	const char *p;
	char *val;

	for (p = key; *p != '\0'; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    *p != '_' && (p == key || !(*p >= '0' && *p <= '9')))
			break;
	if (p == key || *p != '\0') {
		problem(w, "%s is not a variable name: use [A-Za-z_] and then "
		    "[A-Za-z0-9_]", quoted(q, key, strlen(key)));
		return;
	}
	if (strcmp(key, "CSI_ENDPOINT") == 0) {
		problem(w, "is reserved: berth sets it to the plugin's socket; "
		    "remove it");
		return;
	}
	if ((val = take_text(w, v)) == NULL)
		return;
	xasprintf(&t->env[i], "%s=%s", key, val);
	free(val);
}

/* By name, so that the order does not depend on the values. */
static int
env_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t nx = strcspn(x, "="), ny = strcspn(y, "=");
	int c;

	if ((c = memcmp(x, y, nx < ny ? nx : ny)) != 0)
		return c;
	return nx < ny ? -1 : nx > ny;
}

static void
task_env(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;

	if (!sized(w, v, false, ALLOC_MAX_ENV))
		return;
	/*
	 * The mounter starts a privileged plugin with the environment its
	 * root-owned definition gives, and nothing from the supervisor: an
	 * operator's LD_PRELOAD must never reach a process that holds
	 * capabilities.
	 */
	if (w->driver == ALLOC_DRIVER_PRIVILEGED) {
		problem(w, "is not allowed with the \"privileged\" driver (the "
		    "plugin's definition in plugins.d sets its environment); "
		    "remove it");
		return;
	}
	t->nenv = json_object_size(v);
	t->env = xcalloc(t->nenv, sizeof(*t->env));
	each_member(w, v, env_var, t);
	if (w->pr->n == 0)
		qsort(t->env, t->nenv, sizeof(*t->env), env_cmp);
}

static void
task_kill_timeout(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;

	t->kill_timeout_ms = take_duration(w, v, false,
	    ALLOC_MAX_KILL_TIMEOUT_MS);
}

static void
csi_type(struct walk *w, json_t *v, void *dst)
{
	struct alloc_csi_plugin *c = dst;

	c->type = take_enum(w, v, csi_types);
}

static void
csi_health_timeout(struct walk *w, json_t *v, void *dst)
{
	struct alloc_csi_plugin *c = dst;

	c->health_timeout_ms = take_duration(w, v, true, DURATION_MAX_MS);
}

static const struct field csi_fields[] = {
	IDENT("id", true, struct alloc_csi_plugin, id),
	FN("type", true, csi_type),
	FN("health_timeout", false, csi_health_timeout),
};

/*
 * The registry keeps one instance of a plugin (type and id) per alloc,
 * and a monolith registers as both node and controller: two tasks of one
 * alloc that would register the same instance are refused.
 */
static void
task_csi_plugin(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;
	struct alloc_csi_plugin *c = &t->csi, *o;
	size_t i;

	c->health_timeout_ms = ALLOC_DEFAULT_HEALTH_TIMEOUT_MS;
	if (!object_of(w, v))
		return;
	walk_fields(w, v, csi_fields, NFIELDS(csi_fields), c);
	if (c->id == NULL || c->type == ALLOC_CSI_NONE)
		return;
	for (i = 0; &w->a->tasks[i] != t; i++) {
		o = &w->a->tasks[i].csi;
		if (o->id == NULL || strcmp(o->id, c->id) != 0 ||
		    (o->type != c->type && o->type != ALLOC_CSI_MONOLITH &&
		    c->type != ALLOC_CSI_MONOLITH))
			continue;
		problem(w, "plugin \"%s\" of type \"%s\" overlaps tasks[%zu]'s "
		    "\"%s\" (one instance of a plugin per alloc; a monolith is "
		    "both node and controller)", c->id, value_name(csi_types,
		    c->type), i, value_name(csi_types, o->type));
		return;
	}
}

static void
mount_volume(struct walk *w, json_t *v, void *dst)
{
	struct alloc_mount *m = dst;
	const char *s, *key;
	json_t *found, *vol;
	char q[QUOTE_BUF];
	size_t len, i = 0;

	if ((s = string_of(w, v, NULL, &len)) == NULL)
		return;
	/* A "volumes" of the wrong type has its own problem; say no more. */
	if (w->volumes == NULL && !w->volumes_absent) {
		m->volume = copy(s, len);
		return;
	}
	found = w->volumes != NULL ? json_object_getn(w->volumes, s, len) :
	    NULL;
	if (found == NULL) {
		problem(w, "%s is not one of the alloc's \"volumes\"",
		    quoted(q, s, len));
		return;
	}
	json_object_foreach(w->volumes, key, vol) {
		if (vol == found)
			break;
		i++;
	}
	m->volume_index = i;
	m->volume = copy(s, len);
}

static void
mount_destination(struct walk *w, json_t *v, void *dst)
{
	struct alloc_mount *m = dst;
	struct alloc_task *t = w->task;
	size_t i;

	if ((m->destination = take_ident(w, v)) == NULL)
		return;
	for (i = 0; &t->mounts[i] != m; i++)
		if (t->mounts[i].destination != NULL &&
		    strcmp(t->mounts[i].destination, m->destination) == 0) {
			problem(w, "\"%s\" is the destination of "
			    "volume_mounts[%zu] already", m->destination, i);
			return;
		}
}

static const struct field mount_fields[] = {
	FN("volume", true, mount_volume),
	FN("destination", true, mount_destination),
	BOOL("read_only", struct alloc_mount, read_only),
};

static void
task_mount(struct walk *w, json_t *v, size_t i, void *ctx)
{
	struct alloc_task *t = ctx;
	struct alloc_mount *m = &t->mounts[i];
	json_t *vol;
	size_t old;

	if (!object_of(w, v))
		return;
	walk_fields(w, v, mount_fields, NFIELDS(mount_fields), m);
	if (m->volume == NULL || w->volumes == NULL)
		return;
	vol = json_object_get(w->volumes, m->volume);
	if (json_is_object(vol) && json_is_true(json_object_get(vol,
	    "read_only")) && false_or_absent(json_object_get(v, "read_only"))) {
		old = push_key(w, "read_only");
		problem(w, "must be true: volume \"%s\" is read_only",
		    m->volume);
		pop(w, old);
	}
}

static void
task_volume_mounts(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;

	if (!sized(w, v, true, ALLOC_MAX_MOUNTS))
		return;
	t->nmounts = json_array_size(v);
	t->mounts = xcalloc(t->nmounts, sizeof(*t->mounts));
	each_element(w, v, task_mount, t);
}

/* A whole number from min to max; 0 after a problem. */
static int
take_range(struct walk *w, json_t *v, int min, int max)
{
	json_int_t n;

	if (!json_is_integer(v)) {
		problem(w, "must be a whole number, not %s", type_name(v));
		return 0;
	}
	if ((n = json_integer_value(v)) < min || n > max) {
		problem(w, "must be from %d to %d, not %lld", min, max,
		    (long long)n);
		return 0;
	}
	return (int)n;
}

static int
take_count(struct walk *w, json_t *v, int max)
{
	return take_range(w, v, 1, max);
}

static void
logs_max_files(struct walk *w, json_t *v, void *dst)
{
	((struct alloc_task *)dst)->log_max_files = take_count(w, v,
	    ALLOC_MAX_LOG_FILES);
}

static void
logs_max_file_size(struct walk *w, json_t *v, void *dst)
{
	((struct alloc_task *)dst)->log_max_file_mb = take_count(w, v,
	    ALLOC_MAX_LOG_FILE_MB);
}

static const struct field logs_fields[] = {
	FN("max_files", false, logs_max_files),
	FN("max_file_size", false, logs_max_file_size),
};

static void
task_logs(struct walk *w, json_t *v, void *dst)
{
	if (object_of(w, v))
		walk_fields(w, v, logs_fields, NFIELDS(logs_fields), dst);
}

/* A task runs as root's user, never as berth's: exec tasks only. */
static bool
exec_only(struct walk *w)
{
	if (w->driver != ALLOC_DRIVER_PRIVILEGED)
		return true;
	problem(w, "is not allowed with the \"privileged\" driver (root's "
	    "plugin definition says how it runs); remove it");
	return false;
}

/* A login name as useradd takes it: [a-z_][a-z0-9_-]*, short. */
static void
task_user(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;

	if (!exec_only(w))
		return;
	t->user = take_word(w, v, "_-", false, ALLOC_USER_MAX_LEN,
	    "[a-z0-9_-]");
	if (t->user != NULL && (t->user[0] == '-' ||
	    (t->user[0] >= '0' && t->user[0] <= '9'))) {
		problem(w, "must start with a letter or '_', not '%c'",
		    t->user[0]);
		free(t->user);
		t->user = NULL;
	}
}

static void
res_cpu(struct walk *w, json_t *v, void *dst)
{
	((struct alloc_task *)dst)->cpu = take_range(w, v, 1, ALLOC_MAX_CPU);
}

static void
res_memory(struct walk *w, json_t *v, void *dst)
{
	((struct alloc_task *)dst)->memory_mb = take_range(w, v,
	    ALLOC_MIN_MEMORY_MB, ALLOC_MAX_MEMORY_MB);
}

static void
res_memory_max(struct walk *w, json_t *v, void *dst)
{
	((struct alloc_task *)dst)->memory_max_mb = take_range(w, v,
	    ALLOC_MIN_MEMORY_MB, ALLOC_MAX_MEMORY_MB);
}

static void
res_pids(struct walk *w, json_t *v, void *dst)
{
	((struct alloc_task *)dst)->pids = take_range(w, v, 1, ALLOC_MAX_PIDS);
}

static const struct field resources_fields[] = {
	FN("cpu", false, res_cpu),
	FN("memory", false, res_memory),
	FN("memory_max", false, res_memory_max),
	FN("pids", false, res_pids),
};

static void
task_resources(struct walk *w, json_t *v, void *dst)
{
	struct alloc_task *t = dst;

	if (!exec_only(w) || !object_of(w, v))
		return;
	t->memory_max_mb = 0;
	walk_fields(w, v, resources_fields, NFIELDS(resources_fields), t);
	if (json_object_get(v, "memory_max") == NULL)
		t->memory_max_mb = t->memory_mb;
	else if (t->memory_max_mb != 0 && t->memory_mb != 0 &&
	    t->memory_max_mb < t->memory_mb)
		problem(w, "memory_max (%d) must not be less than memory (%d)",
		    t->memory_max_mb, t->memory_mb);
}

static void
restart_attempts(struct walk *w, json_t *v, void *dst)
{
	struct alloc_restart *r = dst;
	json_int_t n;

	r->attempts = -1;
	if (!json_is_integer(v)) {
		problem(w, "must be a whole number, not %s", type_name(v));
		return;
	}
	if ((n = json_integer_value(v)) < 0 ||
	    n > ALLOC_MAX_RESTART_ATTEMPTS) {
		problem(w, "must be from 0 to %d, not %lld",
		    ALLOC_MAX_RESTART_ATTEMPTS, (long long)n);
		return;
	}
	r->attempts = (int)n;
}

static void
restart_interval(struct walk *w, json_t *v, void *dst)
{
	struct alloc_restart *r = dst;
	char min[32];

	if ((r->interval_ms = take_duration(w, v, true, DURATION_MAX_MS)) < 0)
		return;
	if (r->interval_ms < ALLOC_MIN_RESTART_INTERVAL_MS) {
		duration_format(ALLOC_MIN_RESTART_INTERVAL_MS, min,
		    sizeof(min));
		problem(w, "must be at least %s", min);
		r->interval_ms = -1;
	}
}

static void
restart_delay(struct walk *w, json_t *v, void *dst)
{
	((struct alloc_restart *)dst)->delay_ms = take_duration(w, v, false,
	    DURATION_MAX_MS);
}

static void
restart_mode(struct walk *w, json_t *v, void *dst)
{
	((struct alloc_restart *)dst)->mode = take_enum(w, v, restart_modes);
}

static const struct field restart_fields[] = {
	FN("attempts", false, restart_attempts),
	FN("interval", false, restart_interval),
	FN("delay", false, restart_delay),
	FN("mode", false, restart_mode),
};

/*
 * Nomad's restart block; what is absent keeps its default. Two rules tie
 * the fields together, as in Nomad: "delay" needs attempts to count, and
 * the attempts with their delays must fit in the interval.
 */
static void
task_restart(struct walk *w, json_t *v, void *dst)
{
	struct alloc_restart *r = &((struct alloc_task *)dst)->restart;
	char iv[32], dl[32];

	if (!object_of(w, v))
		return;
	walk_fields(w, v, restart_fields, NFIELDS(restart_fields), r);
	/* A plugin's default "delay" means nothing with no attempts. */
	if (json_object_get(v, "mode") == NULL && r->attempts == 0)
		r->mode = ALLOC_RESTART_FAIL;
	if (r->attempts < 0 || r->interval_ms < 0 || r->delay_ms < 0 ||
	    r->mode == 0)
		return;		/* said already */
	if (r->attempts == 0 && r->mode == ALLOC_RESTART_DELAY)
		problem(w, "mode \"delay\" with 0 attempts would never start "
		    "the task again; give attempts, or use mode \"fail\"");
	else if ((int64_t)r->attempts * r->delay_ms > r->interval_ms) {
		duration_format(r->interval_ms, iv, sizeof(iv));
		duration_format(r->delay_ms, dl, sizeof(dl));
		problem(w, "%d attempts with a delay of %s do not fit in an "
		    "interval of %s; lengthen the interval or lower attempts "
		    "or delay", r->attempts, dl, iv);
	}
}

static const struct field task_fields[] = {
	FN("name", true, task_name),
	FN("driver", true, task_driver),
	FN("config", true, task_config),
	FN("env", false, task_env),
	FN("kill_timeout", false, task_kill_timeout),
	FN("logs", false, task_logs),
	FN("user", false, task_user),
	FN("resources", false, task_resources),
	FN("csi_plugin", false, task_csi_plugin),
	FN("restart", false, task_restart),
	FN("volume_mounts", false, task_volume_mounts),
};

static void
alloc_task(struct walk *w, json_t *v, size_t i, void *ctx)
{
	struct alloc_task *t = &w->a->tasks[i];
	json_t *d;
	size_t old;

	t->kill_timeout_ms = ALLOC_DEFAULT_KILL_TIMEOUT_MS;
	t->log_max_files = ALLOC_DEFAULT_LOG_FILES;
	t->log_max_file_mb = ALLOC_DEFAULT_LOG_FILE_MB;
	t->cpu = ALLOC_DEFAULT_CPU;
	t->memory_mb = t->memory_max_mb = ALLOC_DEFAULT_MEMORY_MB;
	t->pids = ALLOC_DEFAULT_PIDS;
	t->restart = (struct alloc_restart){ ALLOC_DEFAULT_RESTART_ATTEMPTS,
	    ALLOC_DEFAULT_RESTART_INTERVAL_MS, ALLOC_DEFAULT_RESTART_DELAY_MS,
	    ALLOC_RESTART_FAIL };
	if (!object_of(w, v))
		return;
	w->task = t;
	d = json_object_get(v, "driver");
	w->driver = json_is_string(d) ? name_value(drivers,
	    json_string_value(d), json_string_length(d)) : 0;
	w->csi = json_object_get(v, "csi_plugin") != NULL;
	/* A plugin is started again for good: berth has no scheduler to
	 * move its work elsewhere, and its volumes would stay stuck. */
	if (w->csi)
		t->restart.mode = ALLOC_RESTART_DELAY;
	walk_fields(w, v, task_fields, NFIELDS(task_fields), t);
	/* The mounter starts a privileged process only as a CSI plugin. */
	if (w->driver == ALLOC_DRIVER_PRIVILEGED &&
	    json_object_get(v, "csi_plugin") == NULL) {
		old = push_key(w, "csi_plugin");
		problem(w, "is required with the \"privileged\" driver (the "
		    "mounter starts privileged tasks only as CSI plugins)");
		pop(w, old);
	}
}

static void
alloc_tasks(struct walk *w, json_t *v, void *dst)
{
	struct alloc *a = dst;

	if (!sized(w, v, true, ALLOC_MAX_TASKS))
		return;
	if (json_array_size(v) == 0) {
		problem(w, "must hold at least one task");
		return;
	}
	a->ntasks = json_array_size(v);
	a->tasks = xcalloc(a->ntasks, sizeof(*a->tasks));
	each_element(w, v, alloc_task, a);
}

static void
options_fs_type(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume *vol = dst;

	vol->fs_type = take_word(w, v, "._-", false, ALLOC_FS_TYPE_MAX_LEN,
	    "[a-z0-9._-]");
}

static void
options_flag(struct walk *w, json_t *v, size_t i, void *ctx)
{
	struct alloc_volume *vol = ctx;

	vol->mount_flags[i] = take_word(w, v, "._=,-", true,
	    ALLOC_FLAG_MAX_LEN, "[A-Za-z0-9._=,-]");
}

static void
options_mount_flags(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume *vol = dst;

	if (!sized(w, v, true, ALLOC_MAX_FLAGS))
		return;
	vol->nflags = json_array_size(v);
	vol->mount_flags = xcalloc(vol->nflags, sizeof(*vol->mount_flags));
	each_element(w, v, options_flag, vol);
}

static const struct field options_fields[] = {
	FN("fs_type", false, options_fs_type),
	FN("mount_flags", false, options_mount_flags),
};

static void
volume_mount_options(struct walk *w, json_t *v, void *dst)
{
	if (object_of(w, v))
		walk_fields(w, v, options_fields, NFIELDS(options_fields), dst);
}

static void
volume_type(struct walk *w, json_t *v, void *dst)
{
	take_enum(w, v, volume_types);
}

static void
volume_access_mode(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume *vol = dst;

	vol->access_mode = take_enum(w, v, access_modes);
}

static void
volume_attachment_mode(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume *vol = dst;

	vol->attachment_mode = take_enum(w, v, attachment_modes);
}

static const struct field request_secret_fields[] = {
	IDENT("stage", false, struct alloc_volume, stage_secret),
	IDENT("publish", false, struct alloc_volume, publish_secret),
};

/*
 * The secrets this alloc's stage and publish get, by name, in place of
 * the volume's: one name for both, or {"stage": ..., "publish": ...}.
 * Only these: the calls that undo a controller publish or a create come
 * when the alloc may be gone, so theirs are the volume's alone.
 */
static void
volume_secrets(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume *vol = dst;

	if (json_is_string(v)) {
		if ((vol->stage_secret = take_ident(w, v)) != NULL)
			vol->publish_secret = copy(vol->stage_secret,
			    strlen(vol->stage_secret));
		return;
	}
	if (object_of(w, v))
		walk_fields(w, v, request_secret_fields,
		    NFIELDS(request_secret_fields), dst);
}

/* A gid, as a whole number: 0 is none named, like an absent field. */
static void
volume_mount_group(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume *vol = dst;
	json_int_t n;

	if (!json_is_integer(v)) {
		problem(w, "must be a whole number (a group id), not %s",
		    type_name(v));
		return;
	}
	if ((n = json_integer_value(v)) < 0 || n > ALLOC_MAX_MOUNT_GROUP) {
		problem(w, "must be a group id from 0 to %u, not %lld",
		    ALLOC_MAX_MOUNT_GROUP, (long long)n);
		return;
	}
	vol->mount_group = (uint32_t)n;
}

static const struct field volume_fields[] = {
	FN("type", true, volume_type),
	IDENT("source", true, struct alloc_volume, source),
	FN("access_mode", true, volume_access_mode),
	FN("attachment_mode", true, volume_attachment_mode),
	BOOL("read_only", struct alloc_volume, read_only),
	FN("mount_options", false, volume_mount_options),
	FN("secrets", false, volume_secrets),
	FN("mount_group", false, volume_mount_group),
};

static bool
reader_only(Berth__AccessMode m)
{
	return m == BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY ||
	    m == BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_READER_ONLY;
}

static void
alloc_volume(struct walk *w, const char *key, json_t *v, size_t i,
    void *ctx)
{
	struct alloc *a = ctx;
	struct alloc_volume *vol = &a->volumes[i];
	size_t old;

	if (ident_ok(w, key, strlen(key)))
		vol->name = copy(key, strlen(key));
	if (!object_of(w, v))
		return;
	walk_fields(w, v, volume_fields, NFIELDS(volume_fields), vol);
	if (reader_only(vol->access_mode) &&
	    false_or_absent(json_object_get(v, "read_only"))) {
		old = push_key(w, "read_only");
		problem(w, "must be true with access_mode \"%s\"",
		    value_name(access_modes, vol->access_mode));
		pop(w, old);
	}
}

static void
alloc_volumes(struct walk *w, json_t *v, void *dst)
{
	struct alloc *a = dst;

	if (!sized(w, v, false, ALLOC_MAX_VOLUMES))
		return;
	a->nvolumes = json_object_size(v);
	a->volumes = xcalloc(a->nvolumes, sizeof(*a->volumes));
	each_member(w, v, alloc_volume, a);
}

static void
alloc_namespace(struct walk *w, json_t *v, void *dst)
{
	struct alloc *a = dst;

	free(a->ns);
	a->ns = take_ident(w, v);
}

static const struct name network_modes[] = {
	{ "host", 1 },
	{ "none", 2 },
	{ NULL, 0 }
};

static void
network_mode(struct walk *w, json_t *v, void *dst)
{
	((struct alloc *)dst)->network_none = take_enum(w, v,
	    network_modes) == 2;
}

static const struct field network_fields[] = {
	FN("mode", true, network_mode),
};

static void
alloc_network(struct walk *w, json_t *v, void *dst)
{
	if (object_of(w, v))
		walk_fields(w, v, network_fields, NFIELDS(network_fields), dst);
}

static const struct field alloc_fields[] = {
	IDENT("id", true, struct alloc, id),
	FN("namespace", false, alloc_namespace),
	FN("network", false, alloc_network),
	FN("tasks", true, alloc_tasks),
	FN("volumes", false, alloc_volumes),
};

static void
walk_alloc(struct walk *w, json_t *root)
{
	json_t *vols;

	if (!object_of(w, root))
		return;
	/* Mounts are checked against "volumes" wherever it stands. */
	vols = json_object_get(root, "volumes");
	w->volumes = json_is_object(vols) ? vols : NULL;
	w->volumes_absent = vols == NULL;
	w->a->ns = xstrdup(ALLOC_DEFAULT_NAMESPACE);
	walk_fields(w, root, alloc_fields, NFIELDS(alloc_fields), w->a);
}

/* s with each ph replaced by to, newly allocated. */
static char *
replace(const char *s, const char *ph, const char *to)
{
	char *out = xstrdup(""), *o;
	const char *p;

	for (; (p = strstr(s, ph)) != NULL; s = p + strlen(ph)) {
		xasprintf(&o, "%s%.*s%s", out, (int)(p - s), s, to);
		free(out);
		out = o;
	}
	xasprintf(&o, "%s%s", out, s);
	free(out);
	return o;
}

char **
alloc_task_args(const struct alloc_task *t, const char *socket)
{
	char **v = xcalloc(t->nargs + 1, sizeof(*v)), *ep, *s;
	size_t i;

	xasprintf(&ep, "unix://%s", socket);
	for (i = 0; i < t->nargs; i++) {
		s = replace(t->args[i], ALLOC_CSI_ENDPOINT, ep);
		v[i] = replace(s, ALLOC_CSI_SOCKET, socket);
		free(s);
	}
	free(ep);
	return v;
}

static void
strv_free(char **v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
alloc_free(struct alloc *a)
{
	struct alloc_task *t;
	size_t i, j;

	if (a == NULL)
		return;
	for (i = 0; a->tasks != NULL && i < a->ntasks; i++) {
		t = &a->tasks[i];
		free(t->name);
		free(t->command);
		free(t->user);
		strv_free(t->args, t->nargs);
		free(t->plugin);
		strv_free(t->env, t->nenv);
		free(t->csi.id);
		for (j = 0; t->mounts != NULL && j < t->nmounts; j++) {
			free(t->mounts[j].volume);
			free(t->mounts[j].destination);
		}
		free(t->mounts);
	}
	free(a->tasks);
	for (i = 0; a->volumes != NULL && i < a->nvolumes; i++) {
		free(a->volumes[i].name);
		free(a->volumes[i].source);
		free(a->volumes[i].fs_type);
		strv_free(a->volumes[i].mount_flags, a->volumes[i].nflags);
		free(a->volumes[i].stage_secret);
		free(a->volumes[i].publish_secret);
	}
	free(a->volumes);
	free(a->id);
	free(a->ns);
	free(a);
}

void
alloc_problems_free(struct alloc_problems *p)
{
	strv_free(p->items, p->n);
	memset(p, 0, sizeof(*p));
}

/* Hand over the alloc, or sum up what stopped it. */
static int
finish(struct walk *w, struct alloc **out)
{
	struct alloc_problems *pr = w->pr;

	if (pr->n == 0) {
		*out = w->a;
		return 0;
	}
	alloc_free(w->a);
	if (pr->dropped > 0) {
		xasprintf(&pr->items[pr->n], "... and %zu more problems",
		    pr->dropped);
		pr->n++;
	}
	return -1;
}

static void
size_problem(struct walk *w, size_t len)
{
	problem(w, "is %zu bytes, over the limit of %d bytes", len,
	    ALLOC_MAX_BYTES);
}

int
alloc_parse(const char *text, size_t len, struct alloc **out,
    struct alloc_problems *problems)
{
	struct walk w;
	json_error_t jerr;
	json_t *root;
	char buf[sizeof(jerr.text) * 4 + 8];

	*out = NULL;
	memset(problems, 0, sizeof(*problems));
	memset(&w, 0, sizeof(w));
	w.pr = problems;
	if (len > ALLOC_MAX_BYTES) {
		size_problem(&w, len);
		return finish(&w, out);
	}
	/*
	 * NUL bytes are let through the decoder so that each field can
	 * refuse them by name; jansson refuses them in keys itself.
	 */
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &jerr);
	if (root == NULL) {
		problem(&w, "line %d column %d: %s", jerr.line, jerr.column,
		    escaped(buf, sizeof(buf), jerr.text, strlen(jerr.text),
		    sizeof(jerr.text), false));
		return finish(&w, out);
	}
	w.a = xcalloc(1, sizeof(*w.a));
	walk_alloc(&w, root);
	json_decref(root);
	return finish(&w, out);
}

/* ---- a volume spec, for the API ---- */

static void
spec_id(struct walk *w, json_t *v, void *dst)
{
	const char *s;
	char q[QUOTE_BUF];
	size_t len;

	(void)dst;
	if ((s = string_of(w, v, NULL, &len)) != NULL &&
	    (len != strlen(w->volume_id) || memcmp(s, w->volume_id,
	    len) != 0))
		problem(w, "%s differs from the path's \"%s\"", quoted(q, s,
		    len), w->volume_id);
}

/* What a node plugin's restart does to the volume (volmgr_recover.c). */
static const struct name restart_policies[] = {
	{ "remount", 1 }, { "restart_tasks", 2 }, { "none", 3 }, { NULL, 0 }
};

static void
spec_on_plugin_restart(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume_spec *s = dst;
	int p = take_enum(w, v, restart_policies);

	if (p != 0)
		s->on_plugin_restart = restart_policies[p - 1].name;
}

static void
spec_capacity_min(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume_spec *s = dst;

	if (!json_is_integer(v)) {
		problem(w, "must be a whole number of bytes, not %s",
		    type_name(v));
		return;
	}
	if (json_integer_value(v) < 0) {
		problem(w, "must be at least 0 bytes, not %" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
		return;
	}
	s->capacity_min = json_integer_value(v);
}

/* One key = value of a map the plugin gets as it is: p, on success. */
static void
take_param(struct walk *w, const char *key, json_t *v, struct alloc_param *p)
{
	const char *s;
	size_t len;

	if (strlen(key) == 0 || strlen(key) > ALLOC_PARAM_KEY_MAX_LEN) {
		problem(w, "a key must be 1 to %d bytes, not %zu",
		    ALLOC_PARAM_KEY_MAX_LEN, strlen(key));
		return;
	}
	if ((s = string_of(w, v, NULL, &len)) == NULL)
		return;
	/* Cut, a value would reach the plugin changed: refused instead. */
	if (len > ALLOC_PARAM_VALUE_MAX_LEN) {
		problem(w, "is %zu bytes, more than the %d allowed", len,
		    ALLOC_PARAM_VALUE_MAX_LEN);
		return;
	}
	if ((p->value = take_text(w, v)) != NULL)
		p->key = copy(key, strlen(key));
}

static void
spec_param(struct walk *w, const char *key, json_t *v, size_t i,
    void *ctx)
{
	take_param(w, key, v, &((struct alloc_volume_spec *)ctx)->params[i]);
}

static void
spec_context_entry(struct walk *w, const char *key, json_t *v, size_t i,
    void *ctx)
{
	take_param(w, key, v, &((struct alloc_volume_spec *)ctx)->context[i]);
}

/* register: the volume context, passed at stage and publish. */
static void
spec_context(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume_spec *s = dst;

	if (!sized(w, v, false, ALLOC_MAX_CONTEXT))
		return;
	s->ncontext = json_object_size(v);
	s->context = xcalloc(s->ncontext, sizeof(*s->context));
	each_member(w, v, spec_context_entry, s);
}

static void
spec_params(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume_spec *s = dst;

	if (!sized(w, v, false, ALLOC_MAX_PARAMS))
		return;
	s->nparams = json_object_size(v);
	s->params = xcalloc(s->nparams, sizeof(*s->params));
	each_member(w, v, spec_param, s);
}

const char *const alloc_secret_calls[ALLOC_SECRET_CALLS + 1] = { "create",
	"delete", "validate", "controller_publish", "controller_unpublish",
	"stage", "publish", "expand", "snapshot", NULL };

static void
spec_secret(struct walk *w, const char *key, json_t *v, size_t i, void *ctx)
{
	struct alloc_volume_spec *s = ctx;
	size_t c;

	(void)i;
	for (c = 0; c < ALLOC_SECRET_CALLS; c++)
		if (strcmp(alloc_secret_calls[c], key) == 0)
			break;
	if (c == ALLOC_SECRET_CALLS) {
		problem(w, "is not a call that takes secrets (create, delete, "
		    "validate, controller_publish, controller_unpublish, "
		    "stage, publish, expand, snapshot)");
		return;
	}
	s->secrets[c] = take_ident(w, v);
}

/*
 * The secrets the plugin's calls get, by name: one name for every call,
 * or an object naming one per call (as Kubernetes' per-operation secret
 * references). The values are read from root's files at each call.
 */
static void
spec_secrets(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume_spec *s = dst;
	char *name;

	if (json_is_string(v)) {
		if ((name = take_ident(w, v)) == NULL)
			return;
		for (size_t c = 0; c < ALLOC_SECRET_CALLS; c++)
			s->secrets[c] = copy(name, strlen(name));
		free(name);
		return;
	}
	if (!json_is_object(v)) {
		problem(w, "must be a secret's name or an object of them by "
		    "call, not %s", type_name(v));
		return;
	}
	each_member(w, v, spec_secret, s);
}

/* vol comes first in struct alloc_volume_spec: the volume checks'
 * dst (a struct alloc_volume) is the spec itself. */
#define SPEC_COMMON							\
	FN("id", false, spec_id),					\
	IDENT("namespace", false, struct alloc_volume_spec, ns),	\
	IDENT("plugin_id", true, struct alloc_volume_spec, plugin),	\
	FN("access_mode", true, volume_access_mode),			\
	FN("attachment_mode", false, volume_attachment_mode),		\
	FN("mount_options", false, volume_mount_options),		\
	FN("secrets", false, spec_secrets),				\
	FN("on_plugin_restart", false, spec_on_plugin_restart)

/* ---- create: topology_request {required, preferred}, as Nomad's ---- */

static void
topology_segment(struct walk *w, const char *key, json_t *v, size_t i,
    void *ctx)
{
	take_param(w, key, v, &((struct alloc_topology *)ctx)->seg[i]);
}

static void
topology_segments(struct walk *w, json_t *v, void *dst)
{
	struct alloc_topology *t = dst;

	if (!sized(w, v, false, ALLOC_MAX_SEGMENTS))
		return;
	if (json_object_size(v) == 0) {
		problem(w, "must name at least one segment");
		return;
	}
	t->nseg = json_object_size(v);
	t->seg = xcalloc(t->nseg, sizeof(*t->seg));
	each_member(w, v, topology_segment, t);
}

static const struct field topology_fields[] = {
	FN("segments", true, topology_segments),
};

static void
topology_one(struct walk *w, json_t *v, size_t i, void *ctx)
{
	if (object_of(w, v))
		walk_fields(w, v, topology_fields, NFIELDS(topology_fields),
		    &((struct alloc_topology *)ctx)[i]);
}

static void
topology_list(struct walk *w, json_t *v, struct alloc_topology **out,
    size_t *n)
{
	if (!sized(w, v, true, ALLOC_MAX_TOPOLOGIES))
		return;
	*n = json_array_size(v);
	*out = xcalloc(*n + 1, sizeof(**out));
	each_element(w, v, topology_one, *out);
}

static void
topology_required(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume_spec *s = dst;

	topology_list(w, v, &s->requisite, &s->nrequisite);
}

static void
topology_preferred(struct walk *w, json_t *v, void *dst)
{
	struct alloc_volume_spec *s = dst;

	topology_list(w, v, &s->preferred, &s->npreferred);
}

static const struct field topology_request_fields[] = {
	FN("required", false, topology_required),
	FN("preferred", false, topology_preferred),
};

static void
spec_topology_request(struct walk *w, json_t *v, void *dst)
{
	if (object_of(w, v))
		walk_fields(w, v, topology_request_fields,
		    NFIELDS(topology_request_fields), dst);
}

/* register: where the volume can be reached, as Nomad's register reads
 * topology_request's required; nothing to prefer. */
static const struct field register_topology_fields[] = {
	FN("required", true, topology_required),
};

static void
register_topology_request(struct walk *w, json_t *v, void *dst)
{
	if (object_of(w, v))
		walk_fields(w, v, register_topology_fields,
		    NFIELDS(register_topology_fields), dst);
}

static const struct field register_fields[] = {
	SPEC_COMMON,
	IDENT("external_id", false, struct alloc_volume_spec, external_id),
	FN("context", false, spec_context),
	FN("topology_request", false, register_topology_request),
};

static const struct field create_fields[] = {
	SPEC_COMMON,
	FN("capacity_min", false, spec_capacity_min),
	FN("parameters", false, spec_params),
	IDENT("snapshot_id", false, struct alloc_volume_spec, snapshot_id),
	FN("topology_request", false, spec_topology_request),
};

static void
topologies_free(struct alloc_topology *t, size_t n)
{
	for (size_t i = 0; t != NULL && i < n; i++) {
		for (size_t j = 0; t[i].seg != NULL && j < t[i].nseg; j++) {
			free(t[i].seg[j].key);
			free(t[i].seg[j].value);
		}
		free(t[i].seg);
	}
	free(t);
}

void
alloc_volume_spec_free(struct alloc_volume_spec *s)
{
	size_t i;

	if (s == NULL)
		return;
	free(s->vol.fs_type);
	strv_free(s->vol.mount_flags, s->vol.nflags);
	free(s->ns);
	free(s->plugin);
	free(s->external_id);
	free(s->snapshot_id);
	for (i = 0; s->params != NULL && i < s->nparams; i++) {
		free(s->params[i].key);
		free(s->params[i].value);
	}
	free(s->params);
	for (i = 0; s->context != NULL && i < s->ncontext; i++) {
		free(s->context[i].key);
		free(s->context[i].value);
	}
	free(s->context);
	for (i = 0; i < ALLOC_SECRET_CALLS; i++)
		free(s->secrets[i]);
	topologies_free(s->requisite, s->nrequisite);
	topologies_free(s->preferred, s->npreferred);
	free(s);
}

int
alloc_volume_spec_parse(const char *text, size_t len, const char *id,
    bool create, struct alloc_volume_spec **out,
    struct alloc_problems *problems)
{
	struct alloc_volume_spec *s;
	struct walk w;
	json_error_t jerr;
	json_t *root = NULL;
	char buf[sizeof(jerr.text) * 4 + 8];

	*out = NULL;
	memset(problems, 0, sizeof(*problems));
	memset(&w, 0, sizeof(w));
	w.pr = problems;
	w.volume_id = id;
	s = xcalloc(1, sizeof(*s));
	if (len > ALLOC_MAX_BYTES)
		size_problem(&w, len);
	else if ((root = json_loadb(text, len, JSON_REJECT_DUPLICATES |
	    JSON_ALLOW_NUL, &jerr)) == NULL)
		problem(&w, "line %d column %d: %s", jerr.line, jerr.column,
		    escaped(buf, sizeof(buf), jerr.text, strlen(jerr.text),
		    sizeof(jerr.text), false));
	else if (object_of(&w, root)) {
		s->vol.attachment_mode =
		    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
		if (create)
			walk_fields(&w, root, create_fields,
			    NFIELDS(create_fields), s);
		else
			walk_fields(&w, root, register_fields,
			    NFIELDS(register_fields), s);
		if (s->ns == NULL)
			s->ns = xstrdup(ALLOC_DEFAULT_NAMESPACE);
	}
	json_decref(root);
	if (problems->n > 0) {
		alloc_volume_spec_free(s);
		if (problems->dropped > 0) {
			xasprintf(&problems->items[problems->n],
			    "... and %zu more problems", problems->dropped);
			problems->n++;
		}
		return -1;
	}
	*out = s;
	return 0;
}

/* Read at most ALLOC_MAX_BYTES + 1, so that a longer file is seen as one. */
static ssize_t
read_capped(int fd, char *buf)
{
	size_t off = 0;
	ssize_t n;

	while (off < ALLOC_MAX_BYTES + 1) {
		n = read(fd, buf + off, ALLOC_MAX_BYTES + 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		off += (size_t)n;
	}
	return (ssize_t)off;
}

int
alloc_load_file(const char *path, struct alloc **out,
    struct alloc_problems *problems)
{
	struct walk w;
	struct stat st;
	char *buf = NULL, q[QUOTE_BUF];
	ssize_t n = -1;
	int fd, rc;

	*out = NULL;
	memset(problems, 0, sizeof(*problems));
	memset(&w, 0, sizeof(w));
	w.pr = problems;
	/* O_NONBLOCK: a FIFO put in place of the file must not hang us. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0)
		goto fail;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		problem(&w, "cannot read %s: not a regular file",
		    quoted(q, path, strlen(path)));
		goto out;
	}
	if (st.st_size > ALLOC_MAX_BYTES) {
		size_problem(&w, (size_t)st.st_size);
		goto out;
	}
	buf = xmalloc(ALLOC_MAX_BYTES + 1);
	if ((n = read_capped(fd, buf)) < 0)
		goto fail;
	close(fd);
	rc = alloc_parse(buf, n, out, problems);
	free(buf);
	return rc;
fail:
	problem(&w, "cannot read %s: %s", quoted(q, path, strlen(path)),
	    strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return finish(&w, out);
}
