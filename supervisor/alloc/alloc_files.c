/*
 * alloc_files.c: what an allocation's tasks left in their directories
 * (logs, exit status, their own files), removed as the supervisor's
 * user when the allocation is gone, then the mounter's clean-up of the
 * rest.
 *
 * Must not: follow a symlink, enter a mount point, or touch volumes/
 * (root's and the mounter's to clear).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "alloc_int.h"
#include "ident.h"
#include "layout.h"
#include "xalloc.h"
/*
 * Remove dirfd/name and all under it, as the supervisor's user: never
 * following a symlink, never entering a mount point (a volume's bind).
 */
void
files_remove_tree(int at, const char *name, int depth)
{
	struct statx stx;
	struct dirent *de;
	DIR *d;
	int fd;

	if (statx(at, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) < 0 ||
	    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return;
	if (!S_ISDIR(stx.stx_mode)) {
		unlinkat(at, name, 0);
		return;
	}
	if (depth > 32 || (fd = openat(at, name, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") !=
		    0)
			files_remove_tree(dirfd(d), de->d_name,
			    depth + 1);
	closedir(d);
	unlinkat(at, name, AT_REMOVEDIR);
}

/*
 * What the alloc's tasks left in their directories (logs, exit status,
 * their own files) goes; volumes/ is root's and the mounter's to clear.
 * Every task directory, so that an alloc known only from what it left
 * (after a restart) is cleared too. How many entries are left: a
 * sandboxed task's own files are its uid's, in a sticky directory, and
 * stay; then its task id must not go to another alloc.
 */
static int
remove_task_files(struct allocs *am, const char *alloc)
{
	char path[BERTH_PATH_BUF];
	struct dirent *de, *te;
	DIR *d, *t;
	int fd, left = 0;

	snprintf(path, sizeof(path), "%s/%s/%s", am->d.data_dir,
	    LAYOUT_ALLOCS_DIR, alloc);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || (fd = openat(dirfd(d), de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			continue;
		if ((t = fdopendir(fd)) == NULL) {
			close(fd);
			continue;
		}
		while ((te = readdir(t)) != NULL)
			if (strcmp(te->d_name, ".") != 0 && strcmp(te->d_name,
			    "..") != 0 && strcmp(te->d_name, "volumes") != 0) {
				files_remove_tree(dirfd(t), te->d_name, 0);
				left += faccessat(dirfd(t), te->d_name, F_OK,
				    AT_SYMLINK_NOFOLLOW) == 0;
			}
		closedir(t);
	}
	closedir(d);
	return left;
}

struct cleanup {
	struct allocs *am;
	char alloc[BERTH_IDENT_MAX + 1];
	priv_cleanup_cb cb;
	void *arg;
	int left;		/* task files that could not be removed */
};

/* Cleaned up: nothing of the alloc is left, and its task id goes. */
static void
on_cleaned(const struct priv_result *res, uint32_t unmounted,
    uint32_t removed, void *arg)
{
	struct cleanup *c = arg;

	if (res->code == BERTH__ERROR_CODE__ERROR_NONE && c->left == 0)
		ids_release(c->am, c->alloc);
	else if (c->left > 0)
		log_warnx("alloc %s: %d file(s) of its tasks are left in "
		    "%s/%s/%s, so its task id stays held and is never given "
		    "to another alloc", c->alloc, c->left, c->am->d.data_dir,
		    LAYOUT_ALLOCS_DIR, c->alloc);
	c->cb(res, unmounted, removed, c->arg);
	free(c);
}

/*
 * type and plugin (or NULL): the plugin task this alloc ran, when no
 * other alloc runs one of that plugin and no volume of it is held: then
 * its mount root goes too, once nothing is left in it.
 */
void
cleanup_alloc(struct allocs *am, const char *alloc, const char *type,
    const char *plugin, priv_cleanup_cb cb, void *arg)
{
	const struct priv_result unreachable = {
		BERTH__ERROR_CODE__ERROR_CLOSED, MCLIENT_UNREACHABLE };

	struct cleanup *c = xcalloc(1, sizeof(*c));

	c->am = am;
	snprintf(c->alloc, sizeof(c->alloc), "%s", alloc);
	c->cb = cb;
	c->arg = arg;
	logs_keep(am, alloc);	/* before the mounter removes them */
	c->left = remove_task_files(am, alloc);
	if (priv_cleanup_alloc(am->d.mounter, alloc, type, plugin, on_cleaned,
	    c) < 0)
		on_cleaned(&unreachable, 0, 0, c);
}
