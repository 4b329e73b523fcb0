/*
 * fuzz_plugindef.c: libFuzzer target for the plugin definition parser
 * (mounter/plugindef.c, included so its static functions are reached).
 *
 * Beyond "no crash": an accepted definition has an absolute exec path,
 * at most LAUNCH_ARGS NUL-terminated arguments, grants no capability
 * but the mounter's own, and keeps no host namespace but those of
 * LAUNCH_NS, and no argument with "${", which nothing would expand.
 * "The mounter's own" is production's mounter_caps (mounter/sandbox.c,
 * linked in), never a copy that could drift.
 */
#include <stdlib.h>

#include "../mounter/plugindef.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t
held_caps(void)
{
	uint64_t m = 0;
	int i;

	for (i = 0; i < MOUNTER_NCAPS; i++)
		if (mounter_caps[i] < 64)
			m |= 1ULL << mounter_caps[i];
	return m;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plugindef d;
	char why[256];
	int i;

	if (plugindef_parse((const char *)data, size,
	    "unix:///var/lib/berth/csi/plugins/a/csi.sock", &d, why,
	    sizeof(why)) < 0)
		return 0;
	if (d.args[0][0] != '/' || d.nargs < 1 || d.nargs > LAUNCH_ARGS ||
	    (d.caps & ~held_caps()) != 0 ||
	    (d.hostns & ~(uint32_t)LAUNCH_NS) != 0)
		abort();
	for (i = 0; i < d.nargs; i++)
		if (memchr(d.args[i], '\0', LAUNCH_STR) == NULL ||
		    (i > 0 && strstr(d.args[i], "${") != NULL))
			abort();
	return 0;
}
