/*
 * log.h: one logging idiom for all three processes.
 *
 * Lines go to stderr with a syslog priority prefix ("<3>", "<6>", ...) so
 * that journald keeps the level, followed by "name[pid]: ". fatal() and
 * fatalx() are for what must never happen; they log and exit(1).
 * The *_warn / fatal variants append strerror(errno).
 *
 * One event per line: control characters in a message are escaped. A
 * message starts with the function (or area) that logs it; values a reader
 * searches for are written key=value (alloc=, plugin=, peer_pid=). Never
 * log CSI secrets or mount options, which may hold them.
 */
#ifndef BERTH_LOG_H
#define BERTH_LOG_H

#include <stdarg.h>
#include <stddef.h>

#define BERTH_PRINTF(a, b) __attribute__((format(printf, a, b)))

void log_init(const char *name, int verbose);
const char *log_name(void);
int log_verbose(void);

void log_warn(const char *fmt, ...) BERTH_PRINTF(1, 2);
void log_warnx(const char *fmt, ...) BERTH_PRINTF(1, 2);
void log_err(const char *fmt, ...) BERTH_PRINTF(1, 2);
void log_errx(const char *fmt, ...) BERTH_PRINTF(1, 2);
void log_info(const char *fmt, ...) BERTH_PRINTF(1, 2);
void log_debug(const char *fmt, ...) BERTH_PRINTF(1, 2);
void fatal(const char *fmt, ...) BERTH_PRINTF(1, 2) __attribute__((noreturn));
void fatalx(const char *fmt, ...) BERTH_PRINTF(1, 2) __attribute__((noreturn));
/* src with control characters as \xNN, cut to fit n; returns the length. */
size_t log_escape(char *dst, size_t n, const char *src);

#endif
