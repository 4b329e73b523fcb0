/*
 * config.h: berth's JSON configuration file, read with jansson.
 *
 * Only the supervisor parses it (the helpers get what they need on their
 * command line from root, so the mounter carries no JSON parser). Unknown
 * keys, wrong types and socket paths over 107 bytes are refused with one
 * line that says what to change.
 */
#ifndef BERTH_CONFIG_H
#define BERTH_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define BERTH_EX_CONFIG 78	/* sysexits.h EX_CONFIG */
/* Task ids in one range at most (the registry's bound). */
#define BERTH_TASK_IDS_MAX 1000000

struct berth_config {
	char *path;
	char *data_dir;		/* default /var/lib/berth */
	char *run_dir;		/* default /run/berth */
	char *user;		/* default berth */
	char *registry_user;	/* default berth-registry */
	char *log_level;	/* "info" or "debug" */
	char *alloc_dir;	/* allocation documents; /etc/berth/allocs.d */
	char *plugins_dir;	/* privileged plugins; /etc/berth/plugins.d */
	char *sysfs_root;	/* where devices are read from; /sys */
	char *secrets_dir;	/* CSI secrets, one file each; readable by
				   the supervisor's user alone;
				   /etc/berth/secrets */
	char *api_group;	/* may use api.sock; berth-api; "": the
				   supervisor's group */
	char *task_ids;		/* "MIN-MAX", tasks' uids and gids;
				   61184-65519, systemd's DynamicUser's */
	uint32_t task_id_first, task_id_count;	/* task_ids, read */
	char *cgroup_parent;	/* spawn mode: tasks' cgroups; /berth */
	/* Durations, in milliseconds. */
	int64_t plugin_heartbeat_ms;	/* probe interval once healthy; 30s */
	int64_t plugin_resync_ms;	/* CSI manager's backstop resync; 30s */
	int64_t plugin_retry_initial_ms; /* driver/device retry; 5s */
	int64_t plugin_retry_max_ms;	/* doubling up to this; 2m */
	int64_t device_stats_interval_ms; /* 1s */
	int64_t volume_stats_interval_ms; /* NodeGetVolumeStats; 1m */
	int64_t log_retention_ms;	/* tasks' logs after a stop; 1h */
	int64_t volume_wait_ms;		/* alloc volumes wait; 2m */
	/* Lists: NULL-terminated, empty by default. */
	char **driver_allow;	/* empty: every driver */
	char **driver_block;
};

/* 0, or -1 with a one-line reason in err (and cfg left empty). */
int config_load(const char *path, struct berth_config *cfg, char *err,
    size_t errlen);
/* The same, read from fd (opened by the caller; path names it in errors). */
int config_load_fd(int fd, const char *path, struct berth_config *cfg,
    char *err, size_t errlen);
/* Defaults only, for tools that run without a file. */
int config_defaults(struct berth_config *cfg);
void config_free(struct berth_config *cfg);

#endif
