/*
 * request.c: HTTP over the API's unix socket with libcurl (see
 * request.h). The host in the URL is a placeholder: the socket is the
 * address.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "request.h"

struct sink {
	char *buf;
	size_t len, cap;
	int too_long;
};

static size_t
sink_write(char *data, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t add = size * n;

	if (s->len + add > REQUEST_MAX_ANSWER) {
		s->too_long = 1;
		return 0;
	}
	if (s->len + add + 1 > s->cap) {
		s->cap = (s->len + add + 1) * 2;
		if ((s->buf = realloc(s->buf, s->cap)) == NULL) {
			fprintf(stderr, "berthctl: out of memory\n");
			exit(1);
		}
	}
	memcpy(s->buf + s->len, data, add);
	s->len += add;
	s->buf[s->len] = '\0';
	return add;
}

/* Why a request failed, in words about the socket rather than curl's. */
static void
failure(CURL *h, CURLcode rc, const char *sock, const struct sink *s,
    const char *err, char *why, size_t n)
{
	long os = 0;

	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os);
	if (rc == CURLE_COULDNT_CONNECT)
		snprintf(why, n, "cannot connect to %s: %s", sock, os != 0 ?
		    strerror((int)os) : err);
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		snprintf(why, n, "no answer from %s in time", sock);
	else if (s->too_long)
		snprintf(why, n, "the answer from %s is over %d bytes", sock,
		    REQUEST_MAX_ANSWER);
	else
		snprintf(why, n, "%s: %s", sock, err[0] != '\0' ? err :
		    curl_easy_strerror(rc));
}

int
request(const char *sock, const char *method, const char *path,
    const char *body, size_t len, long timeout_ms, struct answer *a,
    char *why, size_t whylen)
{
	char url[4096], err[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	struct sink s = { NULL, 0, 0, 0 }, hs = { NULL, 0, 0, 0 };
	CURLcode rc;
	CURL *h;

	memset(a, 0, sizeof(*a));
	if ((h = curl_easy_init()) == NULL) {
		snprintf(why, whylen, "libcurl cannot start");
		return -1;
	}
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, sink_write);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &hs);
	/* The body goes at once: the API does not answer 100 Continue. */
	hdrs = curl_slist_append(hdrs, "Expect:");
	if (body != NULL) {
		hdrs = curl_slist_append(hdrs, "Content-Type: "
		    "application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)len);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	rc = curl_easy_perform(h);
	if (rc != CURLE_OK) {
		failure(h, rc, sock, &s, err, why, whylen);
		free(s.buf);
		free(hs.buf);
	} else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
		a->body = s.buf != NULL ? s.buf : strdup("");
		a->len = s.len;
		a->head = hs.buf;
	}
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	return rc == CURLE_OK && a->body != NULL ? 0 : -1;
}

void
answer_free(struct answer *a)
{
	free(a->body);
	free(a->head);
	a->body = a->head = NULL;
}

const char *
answer_header(const struct answer *a, const char *name, char *buf, size_t n)
{
	const char *p, *end;
	size_t len = strlen(name);

	for (p = a->head; p != NULL && *p != '\0'; p = end) {
		end = strchr(p, '\n');
		end = end != NULL ? end + 1 : p + strlen(p);
		if (strncasecmp(p, name, len) != 0 || p[len] != ':')
			continue;
		p += len + 1;
		while (*p == ' ' || *p == '\t')
			p++;
		len = strcspn(p, "\r\n");
		snprintf(buf, n, "%.*s", (int)len, p);
		return buf;
	}
	return NULL;
}

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
