/*
 * http.h: the tests' HTTP client over the supervisor's unix socket
 * (tests/svtest.c and the integration tests), on libcurl as berthctl
 * is: one request per connection (Connection: close), the whole answer
 * read into memory.
 */
#ifndef BERTH_TESTS_HTTP_H
#define BERTH_TESTS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest answer read: more is an error, not a truncation. */
#define HTTP_MAX_RESPONSE (16 * 1024 * 1024)

struct http_response {
	int status;			/* 200, 404, ... */
	char *body;			/* NUL-terminated */
	size_t len;
	char *head;			/* the status line and headers */
};

/* A header's value ("Allow"), copied into buf; NULL when absent. */
const char *http_header(const struct http_response *resp, const char *name,
    char *buf, size_t n);
void http_response_free(struct http_response *resp);
/* CLOCK_MONOTONIC in milliseconds. */
int64_t http_now_ms(void);

/*
 * Send method path (with its query) and body (NULL: none) to the unix
 * socket at sock; wait up to timeout_ms for the whole answer. 0, or
 * -1 with why set: the supervisor could not be reached or did not answer
 * as HTTP.
 */
int http_request(const char *sock, const char *method, const char *path,
    const char *body, size_t body_len, int timeout_ms,
    struct http_response *resp, char *why, size_t whylen);

#endif
