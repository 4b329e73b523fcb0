/*
 * request.h: berthctl's one way to the API: an HTTP request over the
 * supervisor's unix socket, made by libcurl (CURLOPT_UNIX_SOCKET_PATH),
 * the whole answer read into memory. Owns no state between requests.
 */
#ifndef BERTHCTL_REQUEST_H
#define BERTHCTL_REQUEST_H

#include <stddef.h>
#include <stdint.h>

/* The longest answer read: more is an error, not a truncation. */
#define REQUEST_MAX_ANSWER (16 * 1024 * 1024)

struct answer {
	long status;			/* 200, 404, ... */
	char *body;			/* NUL-terminated; "" when none */
	size_t len;
	char *head;			/* the headers, NUL-terminated */
};

/*
 * method path (with its query; ids in it already checked) and body (NULL:
 * none) to the socket sock, waiting up to timeout_ms for the whole
 * answer. 0, or -1 with why set: the supervisor could not be reached or
 * did not answer as HTTP.
 */
int request(const char *sock, const char *method, const char *path,
    const char *body, size_t len, long timeout_ms, struct answer *a,
    char *why, size_t whylen);
void answer_free(struct answer *a);
/* A header's value ("X-Berth-Log-Next") copied into buf; NULL: none. */
const char *answer_header(const struct answer *a, const char *name,
    char *buf, size_t n);
/* CLOCK_MONOTONIC in milliseconds. */
int64_t now_ms(void);

#endif
