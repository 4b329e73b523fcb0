/*
 * config.c: load and check the JSON configuration (see config.h).
 *
 * The table of keys is the single place a new setting is added: its name,
 * its type, where it lives, its default and how it is checked.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "duration.h"
#include "layout.h"

enum key_type { KEY_STRING, KEY_DURATION, KEY_LIST };
enum key_check { CHECK_NONE, CHECK_ABS_DIR, CHECK_LEVEL, CHECK_POSITIVE,
	CHECK_ANY, CHECK_IDS };

struct key {
	const char *name;
	size_t off;
	const char *def;	/* a list's default is empty */
	enum key_check check;
	enum key_type type;
};

#define STR(n, f, d, c) { n, offsetof(struct berth_config, f), d, c, KEY_STRING }
#define DUR(n, f, d) { n, offsetof(struct berth_config, f), d, \
	CHECK_POSITIVE, KEY_DURATION }
#define LIST(n, f) { n, offsetof(struct berth_config, f), NULL, CHECK_NONE, \
	KEY_LIST }

static const struct key keys[] = {
	STR("data_dir", data_dir, "/var/lib/berth", CHECK_ABS_DIR),
	STR("run_dir", run_dir, "/run/berth", CHECK_ABS_DIR),
	STR("user", user, "berth", CHECK_NONE),
	STR("registry_user", registry_user, "berth-registry", CHECK_NONE),
	STR("log_level", log_level, "info", CHECK_LEVEL),
	STR("alloc_dir", alloc_dir, "/etc/berth/allocs.d", CHECK_ABS_DIR),
	STR("plugins_dir", plugins_dir, "/etc/berth/plugins.d", CHECK_ABS_DIR),
	STR("sysfs_root", sysfs_root, "/sys", CHECK_ABS_DIR),
	STR("secrets_dir", secrets_dir, "/etc/berth/secrets", CHECK_ABS_DIR),
	STR("api_group", api_group, "berth-api", CHECK_ANY),
	STR("task_ids", task_ids, "61184-65519", CHECK_IDS),
	STR("cgroup_parent", cgroup_parent, "/berth", CHECK_ABS_DIR),
	DUR("plugin_heartbeat", plugin_heartbeat_ms, "30s"),
	DUR("plugin_resync", plugin_resync_ms, "30s"),
	DUR("plugin_retry_initial", plugin_retry_initial_ms, "5s"),
	DUR("plugin_retry_max", plugin_retry_max_ms, "2m"),
	DUR("device_stats_interval", device_stats_interval_ms, "1s"),
	DUR("volume_stats_interval", volume_stats_interval_ms, "1m"),
	DUR("log_retention", log_retention_ms, "1h"),
	DUR("volume_wait", volume_wait_ms, "2m"),
	LIST("driver_allow", driver_allow),
	LIST("driver_block", driver_block),
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static char **
slot(struct berth_config *cfg, const struct key *k)
{
	return (char **)((char *)cfg + k->off);
}

static void
free_value(struct berth_config *cfg, const struct key *k)
{
	char **l;

	if (k->type == KEY_STRING)
		free(*slot(cfg, k));
	else if (k->type == KEY_LIST && (l = *(char ***)slot(cfg, k)) != NULL) {
		for (; *l != NULL; l++)
			free(*l);
		free(*(char ***)slot(cfg, k));
		*(char ***)slot(cfg, k) = NULL;
	}
}

/*
 * Store one value: a string or duration from v, a list from the JSON
 * array val (NULL: the empty list). -ENOMEM, or -EINVAL with err set.
 */
static int
set_value(struct berth_config *cfg, const struct key *k, const char *v,
    json_t *val)
{
	char **list, err[256];
	size_t i, n;

	switch (k->type) {
	case KEY_STRING:
		free(*slot(cfg, k));
		return (*slot(cfg, k) = strdup(v)) == NULL ? -ENOMEM : 0;
	case KEY_DURATION:
		return duration_parse(v, (int64_t *)(void *)slot(cfg, k), err,
		    sizeof(err)) < 0 ? -EINVAL : 0;
	case KEY_LIST:
		n = val != NULL ? json_array_size(val) : 0;
		if ((list = calloc(n + 1, sizeof(*list))) == NULL)
			return -ENOMEM;
		for (i = 0; i < n; i++)
			if ((list[i] = strdup(json_string_value(
			    json_array_get(val, i)))) == NULL)
				break;
		free_value(cfg, k);
		*(char ***)slot(cfg, k) = list;
		if (i < n)
			return -ENOMEM;
		return 0;
	}
	return -EINVAL;
}

/* "MIN-MAX": never root's 0, within what a uid may be, not too many. */
static int
parse_ids(const char *v, uint32_t *first, uint32_t *count)
{
	unsigned long long lo, hi;
	char tail;

	if (sscanf(v, "%llu-%llu%c", &lo, &hi, &tail) != 2 || v[0] < '0' ||
	    v[0] > '9' || lo == 0 || lo > hi || hi > 2147483647ULL ||
	    hi - lo + 1 > BERTH_TASK_IDS_MAX)
		return -1;
	*first = (uint32_t)lo;
	*count = (uint32_t)(hi - lo + 1);
	return 0;
}

int
config_defaults(struct berth_config *cfg)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < NKEYS; i++)
		if (set_value(cfg, &keys[i], keys[i].def, NULL) < 0)
			return -ENOMEM;
	return parse_ids(cfg->task_ids, &cfg->task_id_first,
	    &cfg->task_id_count) < 0 ? -EINVAL : 0;
}

void
config_free(struct berth_config *cfg)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		free_value(cfg, &keys[i]);
	free(cfg->path);
	memset(cfg, 0, sizeof(*cfg));
}

static int
check_value(const struct key *k, const char *v, char *err, size_t errlen)
{
	uint32_t first, count;

	size_t len = strlen(v);

	switch (k->check) {
	case CHECK_ABS_DIR:
		if (v[0] != '/' || strstr(v, "/../") != NULL ||
		    (len >= 3 && strcmp(v + len - 3, "/..") == 0)) {
			snprintf(err, errlen, "\"%s\" must be an absolute path "
			    "without '..', not \"%s\"", k->name, v);
			return -1;
		}
		break;
	case CHECK_LEVEL:
		if (strcmp(v, "info") != 0 && strcmp(v, "debug") != 0) {
			snprintf(err, errlen, "\"%s\" must be \"info\" or "
			    "\"debug\", not \"%s\"", k->name, v);
			return -1;
		}
		break;
	case CHECK_POSITIVE: {
		int64_t ms;
		char why[200];

		if (duration_parse(v, &ms, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "\"%s\": %s", k->name, why);
			return -1;
		}
		if (ms <= 0) {
			snprintf(err, errlen, "\"%s\" must be longer than 0s",
			    k->name);
			return -1;
		}
		break;
	}
	case CHECK_IDS:
		if (parse_ids(v, &first, &count) < 0) {
			snprintf(err, errlen, "\"%s\" must be \"MIN-MAX\", "
			    "from 1 to 2147483647, at most %d ids, such as "
			    "\"61184-65519\", not \"%s\"", k->name,
			    BERTH_TASK_IDS_MAX, v);
			return -1;
		}
		break;
	case CHECK_ANY:
		break;
	case CHECK_NONE:
		if (len == 0) {
			snprintf(err, errlen, "\"%s\" must not be empty",
			    k->name);
			return -1;
		}
		break;
	}
	return 0;
}

/* A list: an array of non-empty strings without duplicates. */
static int
check_list(const struct key *k, json_t *val, char *err, size_t errlen)
{
	size_t i, j;

	if (!json_is_array(val)) {
		snprintf(err, errlen, "\"%s\" must be an array of strings",
		    k->name);
		return -1;
	}
	for (i = 0; i < json_array_size(val); i++) {
		const char *s = json_string_value(json_array_get(val, i));

		if (s == NULL || *s == '\0') {
			snprintf(err, errlen, "\"%s\"[%zu] must be a non-empty "
			    "string", k->name, i);
			return -1;
		}
		for (j = 0; j < i; j++)
			if (strcmp(s, json_string_value(json_array_get(val,
			    j))) == 0) {
				snprintf(err, errlen, "\"%s\" names \"%s\" "
				    "twice", k->name, s);
				return -1;
			}
	}
	return 0;
}

/*
 * Every unix socket berth binds must fit in sun_path; say so now rather
 * than when a plugin starts. Plugin sockets are checked for a 36-byte
 * alloc id (a UUID), the form allocs take in practice.
 */
static int
check_socket_paths(const struct berth_config *cfg, char *err, size_t errlen)
{
	static const char *const run_socks[] = { "api.sock", "mounter.sock",
		"registry.sock" };
	char alloc[BERTH_TYPICAL_ALLOC_LEN + 1], rel[256], path[512];
	size_t i;

	for (i = 0; i < sizeof(run_socks) / sizeof(run_socks[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", cfg->run_dir,
		    run_socks[i]);
		if (strlen(path) > BERTH_SOCKET_PATH_MAX) {
			snprintf(err, errlen, "socket path %s is %zu bytes, over "
			    "the %d-byte limit of unix sockets: choose a "
			    "shorter \"run_dir\"", path, strlen(path),
			    BERTH_SOCKET_PATH_MAX);
			return -1;
		}
	}
	memset(alloc, 'a', BERTH_TYPICAL_ALLOC_LEN);
	alloc[BERTH_TYPICAL_ALLOC_LEN] = '\0';
	if (layout_plugin_socket(rel, sizeof(rel), alloc) < 0 ||
	    layout_abs(path, sizeof(path), cfg->data_dir, rel) < 0 ||
	    strlen(path) > BERTH_SOCKET_PATH_MAX) {
		snprintf(err, errlen, "plugin socket paths under \"data_dir\" "
		    "%s would be over the %d-byte limit of unix sockets: choose "
		    "a shorter \"data_dir\"", cfg->data_dir,
		    BERTH_SOCKET_PATH_MAX);
		return -1;
	}
	return 0;
}

/* Put "config <path>: " in front of a reason already in err. */
static void
prefix_path(char *err, size_t errlen, const char *path)
{
	char reason[512];

	snprintf(reason, sizeof(reason), "%s", err);
	snprintf(err, errlen, "config %s: %s", path, reason);
}

static int load(int fd, const char *path, struct berth_config *cfg,
    char *err, size_t errlen);

int
config_load(const char *path, struct berth_config *cfg, char *err,
    size_t errlen)
{
	return load(-1, path, cfg, err, errlen);
}

int
config_load_fd(int fd, const char *path, struct berth_config *cfg,
    char *err, size_t errlen)
{
	return load(fd, path, cfg, err, errlen);
}

/* From fd when it is not -1, else from the file at path. */
static int
load(int fd, const char *path, struct berth_config *cfg, char *err,
    size_t errlen)
{
	json_error_t jerr;
	json_t *root, *val;
	const char *name;
	size_t i;

	if (config_defaults(cfg) < 0 || (cfg->path = strdup(path)) == NULL) {
		snprintf(err, errlen, "out of memory");
		config_free(cfg);
		return -1;
	}
	root = fd >= 0 ? json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr) :
	    json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		if (jerr.line < 0 || strstr(jerr.text, "unable to open") != NULL)
			snprintf(err, errlen, "cannot read config %s: %s", path,
			    jerr.text);
		else
			snprintf(err, errlen, "config %s, line %d column %d: %s",
			    path, jerr.line, jerr.column, jerr.text);
		config_free(cfg);
		return -1;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "config %s: the top level must be a JSON "
		    "object", path);
		goto fail;
	}
	json_object_foreach(root, name, val) {
		for (i = 0; i < NKEYS; i++)
			if (strcmp(name, keys[i].name) == 0)
				break;
		if (i == NKEYS) {
			snprintf(err, errlen, "config %s: unknown key \"%s\": "
			    "remove it (see berth.json(5) for the keys)", path,
			    name);
			goto fail;
		}
		if (keys[i].type == KEY_LIST) {
			if (check_list(&keys[i], val, err, errlen) < 0) {
				prefix_path(err, errlen, path);
				goto fail;
			}
		} else if (!json_is_string(val)) {
			snprintf(err, errlen, "config %s: \"%s\" must be a "
			    "string%s", path, name, keys[i].type ==
			    KEY_DURATION ? " such as \"30s\"" : "");
			goto fail;
		} else if (check_value(&keys[i], json_string_value(val), err,
		    errlen) < 0) {
			prefix_path(err, errlen, path);
			goto fail;
		}
		if (set_value(cfg, &keys[i], json_string_value(val), val) < 0) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	json_decref(root);
	(void)parse_ids(cfg->task_ids, &cfg->task_id_first,
	    &cfg->task_id_count);
	if (check_socket_paths(cfg, err, errlen) < 0) {
		prefix_path(err, errlen, path);
		config_free(cfg);
		return -1;
	}
	return 0;
fail:
	json_decref(root);
	config_free(cfg);
	return -1;
}
