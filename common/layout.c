/*
 * layout.c: the paths of DESIGN.md's on-disk layout (see layout.h).
 * It validates; it never touches the file system.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ident.h"
#include "layout.h"

/* Every argument after count must be a valid identifier. */
static int check(int count, ...);

/* Format into buf; -ENAMETOOLONG when the result does not fit. */
static int
build(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= n)
		return -ENAMETOOLONG;
	return 0;
}

static int
check(int count, ...)
{
	va_list ap;
	int i, r = 0;

	va_start(ap, count);
	for (i = 0; i < count; i++)
		if (!ident_valid_str(va_arg(ap, const char *)))
			r = -EINVAL;
	va_end(ap);
	return r;
}

static bool
one_of(const char *s, const char *const *set)
{
	for (; s != NULL && *set != NULL; set++)
		if (strcmp(s, *set) == 0)
			return true;
	return false;
}

int
layout_usage(char *buf, size_t n, bool read_only, const char *attachment,
    const char *access)
{
	static const char *const attachments[] = { "file-system",
		"block-device", NULL };
	static const char *const accesses[] = { "single-node-reader-only",
		"single-node-writer", "multi-node-reader-only",
		"multi-node-single-writer", "multi-node-multi-writer", NULL };

	if (!one_of(attachment, attachments) || !one_of(access, accesses))
		return -EINVAL;
	return build(buf, n, "%s-%s-%s", read_only ? "ro" : "rw", attachment,
	    access);
}

int
layout_plugin_socket_dir(char *buf, size_t n, const char *alloc)
{
	if (check(1, alloc))
		return -EINVAL;
	return build(buf, n, LAYOUT_PLUGIN_SOCKETS_DIR "/%s", alloc);
}

int
layout_plugin_socket(char *buf, size_t n, const char *alloc)
{
	if (check(1, alloc))
		return -EINVAL;
	return build(buf, n, LAYOUT_PLUGIN_SOCKETS_DIR "/%s/csi.sock", alloc);
}

int
layout_plugin_root(char *buf, size_t n, const char *type, const char *plugin)
{
	/* "plugins" under csi/ is the socket tree, not a plugin type. */
	if (check(2, type, plugin) || strcmp(type, "plugins") == 0)
		return -EINVAL;
	return build(buf, n, "csi/%s/%s", type, plugin);
}

int
layout_staging(char *buf, size_t n, const char *type, const char *plugin,
    const char *ns, const char *vol, const char *usage)
{
	if (check(4, type, plugin, ns, vol) || (usage != NULL &&
	    check(1, usage)) || strcmp(type, "plugins") == 0)
		return -EINVAL;
	if (usage == NULL)
		return build(buf, n, "csi/%s/%s/staging/%s/%s", type, plugin,
		    ns, vol);
	return build(buf, n, "csi/%s/%s/staging/%s/%s/%s", type, plugin, ns,
	    vol, usage);
}

int
layout_publish(char *buf, size_t n, const char *type, const char *plugin,
    const char *alloc, const char *vol, const char *usage)
{
	if (check(5, type, plugin, alloc, vol, usage) ||
	    strcmp(type, "plugins") == 0)
		return -EINVAL;
	return build(buf, n, "csi/%s/%s/per-alloc/%s/%s/%s", type, plugin,
	    alloc, vol, usage);
}

int
layout_task_dir(char *buf, size_t n, const char *alloc, const char *task)
{
	if (check(2, alloc, task))
		return -EINVAL;
	return build(buf, n, LAYOUT_ALLOCS_DIR "/%s/%s", alloc, task);
}

int
layout_task_volume(char *buf, size_t n, const char *alloc, const char *task,
    const char *name)
{
	if (check(3, alloc, task, name))
		return -EINVAL;
	return build(buf, n, LAYOUT_ALLOCS_DIR "/%s/%s/volumes/%s", alloc, task,
	    name);
}

int
layout_abs(char *buf, size_t n, const char *data_dir, const char *rel)
{
	if (data_dir == NULL || data_dir[0] != '/' || rel == NULL ||
	    rel[0] == '/')
		return -EINVAL;
	if (strcmp(data_dir, "/") == 0)
		return build(buf, n, "/%s", rel);
	return build(buf, n, "%s/%s", data_dir, rel);
}
