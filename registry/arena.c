/*
 * arena.c: the memory of one reply: zeroed blocks bumped from chunks that
 * grow from 1 KiB to 64 KiB, all freed at once when the reply is sent.
 *
 * Owns: nothing beyond the arena it is handed. Must not: be used for
 * anything that outlives one request (events have their own lifetimes).
 */
#include <stdlib.h>
#include <string.h>

#include "registry.h"

#define ARENA_CHUNK (64 * 1024)

static void *
arena_block(struct arena *a, size_t len)
{
	void *p, **nb;

	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		if ((nb = realloc(a->blocks, a->cap * sizeof(*nb))) == NULL)
			fatal("arena_alloc");
		a->blocks = nb;
	}
	if ((p = calloc(1, len)) == NULL)
		fatal("arena_alloc");
	a->blocks[a->n++] = p;
	return p;
}

void *
arena_alloc(struct arena *a, size_t len)
{
	void *p;

	len = (len + 15) & ~(size_t)15;
	if (len == 0)
		len = 16;
	if (len > ARENA_CHUNK / 4)
		return arena_block(a, len);
	if (len > a->left) {
		/* Small replies stay small: chunks grow 1, 2, 4 ... 64 KiB. */
		a->chunk = a->chunk ? a->chunk * 2 : 1024;
		if (a->chunk > ARENA_CHUNK)
			a->chunk = ARENA_CHUNK;
		if (a->chunk < len)
			a->chunk = len;
		a->cur = arena_block(a, a->chunk);
		a->left = a->chunk;
	}
	p = a->cur;
	a->cur += len;
	a->left -= len;
	return p;
}

char *
arena_text(struct arena *a, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	int len = sqlite3_column_bytes(st, col);
	char *s = arena_alloc(a, len + 1);

	if (t != NULL)
		memcpy(s, t, len);
	return s;
}

void
arena_blob(struct arena *a, sqlite3_stmt *st, int col, ProtobufCBinaryData *out)
{
	const void *b = sqlite3_column_blob(st, col);
	int len = sqlite3_column_bytes(st, col);

	out->len = len;
	out->data = arena_alloc(a, len);
	if (b != NULL)
		memcpy(out->data, b, len);
}

void
arena_free(struct arena *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->blocks[i]);
	free(a->blocks);
	memset(a, 0, sizeof(*a));
}

static void *
arena_pb_alloc(void *data, size_t size)
{
	return arena_alloc(data, size);
}

static void
arena_pb_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

void *
arena_unpack(struct arena *a, const ProtobufCMessageDescriptor *d,
    const void *buf, size_t len)
{
	ProtobufCAllocator al = { arena_pb_alloc, arena_pb_free, a };

	return protobuf_c_message_unpack(d, &al, len, buf);
}

void *
arena_copy(struct arena *a, const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = arena_alloc(a, len);

	protobuf_c_message_pack(m, buf);
	return arena_unpack(a, m->descriptor, buf, len);
}
