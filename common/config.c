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
#include "layout.h"

enum key_check { CHECK_NONE, CHECK_ABS_DIR, CHECK_LEVEL };

struct key {
	const char *name;
	size_t off;
	const char *def;
	enum key_check check;
};

static const struct key keys[] = {
	{ "data_dir", offsetof(struct berth_config, data_dir),
	  "/var/lib/berth", CHECK_ABS_DIR },
	{ "run_dir", offsetof(struct berth_config, run_dir), "/run/berth",
	  CHECK_ABS_DIR },
	{ "user", offsetof(struct berth_config, user), "berth", CHECK_NONE },
	{ "registry_user", offsetof(struct berth_config, registry_user),
	  "berth-registry", CHECK_NONE },
	{ "log_level", offsetof(struct berth_config, log_level), "info",
	  CHECK_LEVEL },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static char **
slot(struct berth_config *cfg, const struct key *k)
{
	return (char **)((char *)cfg + k->off);
}

int
config_defaults(struct berth_config *cfg)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < NKEYS; i++)
		if ((*slot(cfg, &keys[i]) = strdup(keys[i].def)) == NULL)
			return -ENOMEM;
	return 0;
}

void
config_free(struct berth_config *cfg)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		free(*slot(cfg, &keys[i]));
	free(cfg->path);
	memset(cfg, 0, sizeof(*cfg));
}

static int
check_value(const struct key *k, const char *v, char *err, size_t errlen)
{
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

int
config_load(const char *path, struct berth_config *cfg, char *err,
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
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
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
		if (!json_is_string(val)) {
			snprintf(err, errlen, "config %s: \"%s\" must be a "
			    "string", path, name);
			goto fail;
		}
		if (check_value(&keys[i], json_string_value(val), err,
		    errlen) < 0) {
			prefix_path(err, errlen, path);
			goto fail;
		}
		free(*slot(cfg, &keys[i]));
		if ((*slot(cfg, &keys[i]) = strdup(json_string_value(val))) ==
		    NULL) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	json_decref(root);
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
