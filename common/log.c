/*
 * log.c: stderr logging with syslog priority prefixes.
 *
 * One write(2) per line so that lines from the three processes sharing a
 * stderr never interleave mid-line. No allocation: safe in a child between
 * fork and exec, and under the mounter's seccomp filter (write only).
 *
 * One event, one line: messages quote what peers and plugins say (error
 * texts, names), so a control character in them is written as \xNN. A
 * newline there would otherwise start a forged line, with a priority
 * prefix of the writer's choosing, in the journal.
 *
 * Under journald (stderr is the stream that JOURNAL_STREAM names) the
 * journal adds "name[pid]: " itself, so berth's own is left out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "log.h"

static const char *log_progname = "berth";
static int log_verbosity;
static int log_journal;		/* stderr is journald's: no name prefix */

/* JOURNAL_STREAM is "<dev>:<inode>" of the stream systemd connected. */
static int
stderr_is_journal(void)
{
	unsigned long long dev, ino;
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void
log_init(const char *name, int verbose)
{
	log_progname = name;
	log_verbosity = verbose;
	log_journal = stderr_is_journal();
}

const char *
log_name(void)
{
	return log_progname;
}

int
log_verbose(void)
{
	return log_verbosity;
}

/*
 * Copy src into dst (room for n bytes, n > 0) with control characters
 * escaped; returns the length written, always NUL-terminated.
 */
size_t
log_escape(char *dst, size_t n, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)src;
	size_t o = 0;

	for (; *p != '\0'; p++) {
		if (*p >= 0x20 && *p != 0x7f) {
			if (o + 1 >= n)
				break;
			dst[o++] = (char)*p;
			continue;
		}
		if (o + 4 >= n)
			break;
		dst[o++] = '\\';
		dst[o++] = 'x';
		dst[o++] = hex[*p >> 4];
		dst[o++] = hex[*p & 0xf];
	}
	dst[o] = '\0';
	return o;
}

static void
vlog(int pri, int with_errno, const char *fmt, va_list ap)
{
	char line[2048], msg[1536];
	int saved = errno;
	int n;

	if (pri == LOG_DEBUG && !log_verbosity)
		return;
	if (log_journal)
		n = snprintf(line, sizeof(line), "<%d>", pri);
	else
		n = snprintf(line, sizeof(line), "<%d>%s[%ld]: ", pri,
		    log_progname, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(line) / 4)
		n = 0;
	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		msg[0] = '\0';
	/* Room is left for the errno text and the newline. */
	n += (int)log_escape(line + n, sizeof(line) - n - 160, msg);
	if (with_errno)
		n += snprintf(line + n, sizeof(line) - n, ": %s",
		    strerror(saved));
	line[n++] = '\n';
	/* Best effort: there is nowhere else to report a failed log write. */
	if (write(STDERR_FILENO, line, n) < 0)
		(void)0;
	errno = saved;
}

static void
log_emit(int pri, const char *fmt, ...) BERTH_PRINTF(2, 3);

static void
log_emit(int pri, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(pri, 0, fmt, ap);
	va_end(ap);
}

#define LOGFN(fn, pri, e)                 \
	void fn(const char *fmt, ...)     \
	{                                 \
		va_list ap;               \
		va_start(ap, fmt);        \
		vlog(pri, e, fmt, ap);    \
		va_end(ap);               \
	}

LOGFN(log_warn, LOG_WARNING, 1)
LOGFN(log_warnx, LOG_WARNING, 0)
LOGFN(log_err, LOG_ERR, 1)
LOGFN(log_errx, LOG_ERR, 0)
LOGFN(log_info, LOG_INFO, 0)
LOGFN(log_debug, LOG_DEBUG, 0)

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, 0, fmt, ap);
	va_end(ap);
	exit(1);
}

/*
 * Rate limiting (see log.h). A flood of one message costs a clock read
 * and a vsnprintf per line, never a write.
 */
static struct log_rl *log_rl_sites;

static long long
log_rl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
log_rl_report(struct log_rl *rl, int pri)
{
	if (rl->suppressed == 0)
		return;
	log_emit(pri, "%lu similar messages suppressed in %d s, the last: "
	    "%s", rl->suppressed, LOG_RL_WINDOW_MS / 1000, rl->last);
	rl->suppressed = 0;
}

static void
log_rl_v(struct log_rl *rl, int pri, const char *fmt, va_list ap)
{
	long long now = log_rl_now_ms();

	if (pri == LOG_DEBUG && !log_verbosity)
		return;
	if (now - rl->window_ms >= LOG_RL_WINDOW_MS) {
		log_rl_report(rl, pri);
		rl->window_ms = now;
		rl->passed = 0;
	}
	if (rl->passed < LOG_RL_BURST) {
		rl->passed++;
		vlog(pri, 0, fmt, ap);
		return;
	}
	if (!rl->listed) {
		rl->listed = 1;
		rl->next = log_rl_sites;
		log_rl_sites = rl;
	}
	rl->suppressed++;
	if (vsnprintf(rl->last, sizeof(rl->last), fmt, ap) < 0)
		rl->last[0] = '\0';
}

void
log_rl_warnx(struct log_rl *rl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_rl_v(rl, LOG_WARNING, fmt, ap);
	va_end(ap);
}

void
log_rl_info(struct log_rl *rl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_rl_v(rl, LOG_INFO, fmt, ap);
	va_end(ap);
}

void
log_rl_flush(void)
{
	long long now = log_rl_now_ms();
	struct log_rl *rl;

	for (rl = log_rl_sites; rl != NULL; rl = rl->next)
		if (rl->suppressed > 0 && now - rl->window_ms >=
		    LOG_RL_WINDOW_MS) {
			log_rl_report(rl, LOG_WARNING);
			rl->window_ms = now;
			rl->passed = 0;
		}
}
