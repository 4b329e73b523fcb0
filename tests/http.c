/*
 * http.c: the tests' HTTP client over a unix socket (see http.h), on
 * Debian's libcurl, which berthctl speaks through too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "http.h"

struct sink {
	char *buf;
	size_t len;
	bool over;
};

int64_t
http_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t
take(char *data, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	char *grown;

	if (s->len + len > HTTP_MAX_RESPONSE) {
		s->over = true;
		return 0;
	}
	if ((grown = realloc(s->buf, s->len + len + 1)) == NULL)
		return 0;
	s->buf = grown;
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	s->buf[s->len] = '\0';
	return len;
}

const char *
http_header(const struct http_response *resp, const char *name, char *buf,
    size_t n)
{
	size_t len = strlen(name);
	const char *p, *end;

	for (p = strstr(resp->head, "\r\n"); p != NULL;
	    p = strstr(p, "\r\n")) {
		p += 2;
		if (strncasecmp(p, name, len) != 0 || p[len] != ':')
			continue;
		for (p += len + 1; *p == ' '; p++)
			;
		end = strstr(p, "\r\n");
		snprintf(buf, n, "%.*s", (int)(end != NULL ? end - p :
		    (long)strlen(p)), p);
		return buf;
	}
	return NULL;
}

void
http_response_free(struct http_response *resp)
{
	free(resp->body);
	free(resp->head);
	memset(resp, 0, sizeof(*resp));
}

int
http_request(const char *sock, const char *method, const char *path,
    const char *body, size_t body_len, int timeout_ms,
    struct http_response *resp, char *why, size_t whylen)
{
	struct sink bsink = { NULL, 0, false }, hsink = { NULL, 0, false };
	char url[4096], err[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	long status = 0;
	CURLcode rc;
	CURL *c;

	memset(resp, 0, sizeof(*resp));
	snprintf(url, sizeof(url), "http://localhost%s", path);
	if ((c = curl_easy_init()) == NULL) {
		snprintf(why, whylen, "curl_easy_init failed");
		return -1;
	}
	hdrs = curl_slist_append(hdrs, "Connection: close");
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);	/* "..": the server judges */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &bsink);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, take);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &hsink);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)body_len);
	}
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	if (rc != CURLE_OK || status == 0) {
		snprintf(why, whylen, "%s %s: %s", method, path,
		    bsink.over || hsink.over ? "answer over the limit" :
		    err[0] != '\0' ? err : curl_easy_strerror(rc));
		free(bsink.buf);
		free(hsink.buf);
		return -1;
	}
	resp->status = (int)status;
	resp->body = bsink.buf != NULL ? bsink.buf : strdup("");
	resp->len = bsink.len;
	resp->head = hsink.buf != NULL ? hsink.buf : strdup("");
	return 0;
}
