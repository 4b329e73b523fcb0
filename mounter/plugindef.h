/*
 * plugindef.h: a privileged plugin's definition, written by root.
 */
#ifndef BERTH_MOUNTER_PLUGINDEF_H
#define BERTH_MOUNTER_PLUGINDEF_H

#include <stddef.h>
#include <stdint.h>

#include "launcher.h"

/* Largest definition file read; a definition is a handful of lines. */
#define PLUGINDEF_MAX 8192
#define PLUGINDEF_SUFFIX ".conf"

struct plugindef {
	char exe[LAUNCH_STR];
	char args[LAUNCH_ARGS - 1][LAUNCH_STR];	/* argv[1..] */
	int nargs;
	uint64_t caps;			/* bit n: capability n */
};

/* Parse buf; 0, or -1 with why set ("line 3: ..."). */
int plugindef_parse(const char *buf, size_t len, struct plugindef *d,
    char *why, size_t n);

#endif
