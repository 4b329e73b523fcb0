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

#define BERTH_EX_CONFIG 78	/* sysexits.h EX_CONFIG */

struct berth_config {
	char *path;
	char *data_dir;		/* default /var/lib/berth */
	char *run_dir;		/* default /run/berth */
	char *user;		/* default berth */
	char *registry_user;	/* default berth-registry */
	char *log_level;	/* "info" or "debug" */
};

/* 0, or -1 with a one-line reason in err (and cfg left empty). */
int config_load(const char *path, struct berth_config *cfg, char *err,
    size_t errlen);
/* Defaults only, for tools that run without a file. */
int config_defaults(struct berth_config *cfg);
void config_free(struct berth_config *cfg);

#endif
