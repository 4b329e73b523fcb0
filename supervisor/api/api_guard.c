/*
 * api_guard.c: every answer in JSON, the ones evhttp writes itself too.
 *
 * libevent 2.1 answers a request it cannot parse (a malformed request
 * line or header, a method it does not know, headers or a body over the
 * limits) with evhttp_send_error()'s HTML page, before any callback of
 * ours runs, and has no hook for it (evhttp_set_errorcb came in 2.2).
 * What it does give is the bufferevent of each connection (api_conn.c
 * makes it), and so the buffer that answers are written into before the
 * loop sends them. A callback on that buffer looks at every addition
 * that ends the way evhttp's page ends; a page of evhttp's, found whole
 * (a text/html head, then its page's opening and end), is written again in place as our JSON error, status kept, before any
 * byte of it has left. Nothing else in the buffer is touched.
 *
 * A filter bufferevent was tried first and cannot do this: evhttp frees
 * a connection it is closing as soon as the filter has taken its bytes,
 * and the socket's bufferevent is freed with them still unsent.
 *
 * Must not: change a byte of any answer but evhttp's HTML pages.
 */
#include <stdbool.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "api_int.h"
#include "xalloc.h"

/* How evhttp_send_error()'s page opens and ends (libevent 2.1). */
#define PAGE_OPEN "<HTML><HEAD>\n<TITLE>"
#define PAGE_END "</BODY></HTML>\n"

static const char *
why(int code)
{
	switch (code) {
	case 400:
		return "the request could not be read: a malformed request "
		    "line or header";
	case 413:
		return "the request's headers or body are over the limit";
	case 501:
		return "the method is not one the API knows";
	default:
		return "the request was refused before it was read";
	}
}

/* Does buf end with PAGE_END? Read from its chains, last first. */
static bool
ends_like_page(struct evbuffer *buf)
{
	struct evbuffer_iovec v[16];
	size_t want = strlen(PAGE_END), have = 0, take;
	char tail[sizeof(PAGE_END)];
	int n, i;

	if (evbuffer_get_length(buf) < want)
		return false;
	/* More chains than that: not a page evhttp has just written. */
	if ((n = evbuffer_peek(buf, -1, NULL, v, 16)) > 16)
		return false;
	for (i = n - 1; i >= 0 && have < want; i--) {
		take = v[i].iov_len < want - have ? v[i].iov_len : want - have;
		memcpy(tail + want - have - take, (char *)v[i].iov_base +
		    v[i].iov_len - take, take);
		have += take;
	}
	return have == want && memcmp(tail, PAGE_END, want) == 0;
}

/*
 * In text (NUL-terminated), where the answer whose body is
 * evhttp's page starts, or -1: its head says text/html and ends right
 * before the page, and the page runs to the end.
 */
static ssize_t
page_answer(const char *text)
{
	const char *page = NULL, *p, *start, *ct;

	for (p = text; (p = strstr(p, PAGE_OPEN)) != NULL; p++)
		page = p;
	if (page == NULL || page < text + 4 ||
	    memcmp(page - 4, "\r\n\r\n", 4) != 0)
		return -1;
	/* The head: from the last status line at a line's start. */
	for (start = page - 4; start > text; start--)
		if (start[-1] == '\n' && strncmp(start, "HTTP/1.", 7) == 0)
			break;
	if (strncmp(start, "HTTP/1.", 7) != 0)
		return -1;
	ct = strstr(start, "\r\nContent-Type: text/html");
	if (ct == NULL || ct > page)
		return -1;
	return start - text;
}

/* text from start on, evhttp's page, written again in buf as JSON. */
static void
rewrite(struct evbuffer *buf, const char *text, size_t start)
{
	char version[16] = "HTTP/1.1", reason[64] = "Error", body[256];
	int code = 400, len;

	if (sscanf(text + start, "%15s %d %63[^\r\n]", version, &code,
	    reason) < 2 || code < 400 || code > 599)
		code = 400;
	evbuffer_drain(buf, evbuffer_get_length(buf));
	evbuffer_add(buf, text, start);
	len = snprintf(body, sizeof(body), "{\"code\":%d,\"error\":\"%s\"}\n",
	    code, why(code));
	evbuffer_add_printf(buf, "%s %d %s\r\nContent-Type: application/json"
	    "\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", version,
	    code, reason, len, body);
}

static void
changed(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	static bool busy;	/* our own rewrite calls back */
	size_t len = evbuffer_get_length(buf);
	ssize_t start;
	bool frozen;
	char *text;

	(void)arg;
	if (busy || info->n_added == 0 || !ends_like_page(buf))
		return;
	text = xmalloc(len + 1);
	/*
	 * evhttp freezes the buffer's start on a failed request after
	 * another on the same connection; what is taken out is put back
	 * unchanged, and the start frozen again.
	 */
	if ((frozen = evbuffer_copyout(buf, text, len) < 0)) {
		evbuffer_unfreeze(buf, 1);
		if (evbuffer_copyout(buf, text, len) != (ev_ssize_t)len)
			len = 0;
	}
	text[len] = '\0';
	/* A NUL in what is pending: not evhttp's page, leave it. */
	if (len > 0 && strlen(text) == len &&
	    (start = page_answer(text)) >= 0) {
		busy = true;
		rewrite(buf, text, (size_t)start);
		busy = false;
	}
	if (frozen)
		evbuffer_freeze(buf, 1);
	free(text);
}

void
api_guard(struct bufferevent *bev)
{
	evbuffer_add_cb(bufferevent_get_output(bev), changed, NULL);
}
