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
/*
 * Rate-limited lines, for what a peer can make us say as often as it
 * likes: one struct log_rl per call site (log_warnx_limited() declares
 * it). At most LOG_RL_BURST lines per LOG_RL_WINDOW_MS pass from a site;
 * the rest are counted, not written, and the next line from the site,
 * or log_rl_flush() (call it now and then), says "N similar messages
 * suppressed" with the last one. For one thread, the event loop's.
 */
#define LOG_RL_BURST		10
#define LOG_RL_WINDOW_MS	10000
struct log_rl {
	long long window_ms;		/* start of the current window */
	unsigned int passed;		/* lines written in it */
	unsigned long suppressed;	/* counted since the last report */
	char last[200];			/* the last one suppressed */
	struct log_rl *next;		/* on the list that flush walks */
	int listed;
};
void log_rl_warnx(struct log_rl *rl, const char *fmt, ...) BERTH_PRINTF(2, 3);
void log_rl_info(struct log_rl *rl, const char *fmt, ...) BERTH_PRINTF(2, 3);
/* Report what each site suppressed in a window now past. */
void log_rl_flush(void);
#define log_warnx_limited(...) do {					\
		static struct log_rl log_rl_site_;			\
		log_rl_warnx(&log_rl_site_, __VA_ARGS__);		\
	} while (0)
#define log_info_limited(...) do {					\
		static struct log_rl log_rl_site_;			\
		log_rl_info(&log_rl_site_, __VA_ARGS__);		\
	} while (0)
/* src with control characters as \xNN, cut to fit n; returns the length. */
size_t log_escape(char *dst, size_t n, const char *src);

#endif
