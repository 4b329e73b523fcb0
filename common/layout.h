/*
 * layout.h: berth's on-disk layout as one set of functions.
 *
 * Every path berth uses under its data directory is built here, from
 * identifiers that are validated first. The functions write a path
 * relative to the data directory ("csi/plugins/<alloc>/csi.sock"), which is
 * what the mounter resolves with openat2() from its pinned directory fd;
 * layout_abs() joins one with the data directory for the supervisor, which
 * must hand absolute paths to plugins over CSI.
 *
 * All return 0, -EINVAL when an identifier is invalid, or -ENAMETOOLONG.
 */
#ifndef BERTH_LAYOUT_H
#define BERTH_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

/* sizeof(sockaddr_un.sun_path) - 1: the longest usable unix socket path. */
#define BERTH_SOCKET_PATH_MAX 107
/* Alloc ids are UUIDs in practice; used to check socket paths at config time. */
#define BERTH_TYPICAL_ALLOC_LEN 36

/*
 * A buffer for an absolute path under a configured directory (data, alloc
 * or task directory, each up to PATH_MAX) with what berth appends to it,
 * or for an environment entry or command line that holds one.
 */
#define BERTH_PATH_BUF 4400

#define LAYOUT_REGISTRY_DIR "registry"
#define LAYOUT_REGISTRY_DB "registry/registry.db"
#define LAYOUT_PLUGIN_SOCKETS_DIR "csi/plugins"
#define LAYOUT_ALLOCS_DIR "allocs"
/* shim/<alloc>/<task>/: a task's status and logs (berth-mounter(8)). */
#define LAYOUT_SHIM_DIR "shim"
/* logs/+live/<alloc>/<definition>/: a root plugin's logs (berth-shim -L). */
#define LAYOUT_PLUGIN_LOGS_DIR "logs/+live"

int layout_usage(char *buf, size_t n, bool read_only, const char *attachment,
    const char *access);
int layout_plugin_socket_dir(char *buf, size_t n, const char *alloc);
int layout_plugin_socket(char *buf, size_t n, const char *alloc);
int layout_plugin_root(char *buf, size_t n, const char *type,
    const char *plugin);
/*
 * A volume's one staging path, csi/<type>/<plugin>/staging/<ns>/<vol>;
 * with a usage, the per-usage path .../<vol>/<usage> that berth staged
 * at before, still used by a volume staged there until it is unstaged.
 */
int layout_staging(char *buf, size_t n, const char *type, const char *plugin,
    const char *ns, const char *vol, const char *usage);
int layout_publish(char *buf, size_t n, const char *type, const char *plugin,
    const char *alloc, const char *vol, const char *usage);
int layout_task_dir(char *buf, size_t n, const char *alloc, const char *task);
int layout_task_volume(char *buf, size_t n, const char *alloc,
    const char *task, const char *name);
int layout_abs(char *buf, size_t n, const char *data_dir, const char *rel);

#endif
