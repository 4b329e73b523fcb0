/*
 * fuzz_request.c: libFuzzer target for the mounter's request decoding and
 * validation: protobuf-c's decoder, then request.c's first switch.
 *
 * It includes request.c (wireguard-tools style) so the static helpers are
 * reached. Beyond "no crash", it checks what the switch promises: an
 * accepted request names only identifiers, and every path it built is
 * relative, made of identifiers, with no "." or ".." component.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../mounter/request.c"

Berth__ErrorCode
fail(char *why, Berth__ErrorCode code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_MAX, fmt, ap);
	va_end(ap);
	return code;
}

static void
check_path(const char *p)
{
	char buf[MREQ_PATH], *c, *save = NULL;

	if (p[0] == '\0')
		return;
	if (p[0] == '/' || strstr(p, "//") != NULL)
		abort();
	snprintf(buf, sizeof(buf), "%s", p);
	for (c = strtok_r(buf, "/", &save); c != NULL;
	    c = strtok_r(NULL, "/", &save))
		if (!ident_valid_str(c))
			abort();
}

static void
check_ident(const char *s)
{
	if (s[0] != '\0' && !ident_valid_str(s))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Berth__Envelope *env;
	struct mreq rq;
	char why[WHY_MAX];

	if (size > BERTH_IPC_MAX)
		return 0;
	if ((env = berth__envelope__unpack(NULL, size, data)) == NULL)
		return 0;
	if (request_check(env, &rq, why) == BERTH__ERROR_CODE__ERROR_NONE) {
		check_ident(rq.type);
		check_ident(rq.plugin);
		check_ident(rq.alloc);
		check_ident(rq.ns);
		check_ident(rq.vol);
		check_ident(rq.usage);
		check_ident(rq.task);
		check_ident(rq.name);
		check_ident(rq.def);
		check_ident(rq.user);
		/* StartTask: never root, never -1; crun's limits fit int64. */
		if (rq.body == BERTH__ENVELOPE__BODY_START_TASK &&
		    (rq.uid == 0 || rq.gid == 0 || rq.uid == (uid_t)-1 ||
		    rq.gid == (gid_t)-1 || (rq.memory | rq.memory_max) >> 62))
			abort();
		check_path(rq.path);
		check_path(rq.path2);
	}
	berth__envelope__free_unpacked(env, NULL);
	return 0;
}
