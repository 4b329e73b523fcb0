/*
 * log.c: stderr logging with syslog priority prefixes.
 *
 * One write(2) per line so that lines from the three processes sharing a
 * stderr never interleave mid-line. No allocation: safe in a child between
 * fork and exec, and under the mounter's seccomp filter (write only).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

static const char *log_progname = "berth";
static int log_verbosity;

void
log_init(const char *name, int verbose)
{
	log_progname = name;
	log_verbosity = verbose;
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

static void
vlog(int pri, int with_errno, const char *fmt, va_list ap)
{
	char line[2048];
	int saved = errno;
	int n, m;

	if (pri == LOG_DEBUG && !log_verbosity)
		return;
	n = snprintf(line, sizeof(line), "<%d>%s[%ld]: ", pri, log_progname,
	    (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n >= sizeof(line) - 64)
		n = sizeof(line) - 64;
	if (with_errno)
		n += snprintf(line + n, sizeof(line) - n, ": %s",
		    strerror(saved));
	line[n++] = '\n';
	/* Best effort: there is nowhere else to report a failed log write. */
	if (write(STDERR_FILENO, line, n) < 0)
		(void)0;
	errno = saved;
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
