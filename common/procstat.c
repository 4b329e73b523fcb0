/*
 * procstat.c: a process's start time and session from /proc (see
 * procstat.h).
 *
 * Shared by the supervisor, which adopts tasks by pid and start time,
 * and berth-shim, which reports both for itself and its task.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"

/* Field i (from 1, as proc(5) counts) of /proc/<pid>/stat, i > 2. */
static int
stat_field(pid_t pid, int i, unsigned long long *v)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* comm may hold anything, even ") ": the last one ends it. */
	if ((p = strrchr(buf, ')')) == NULL)
		return -EIO;
	for (i -= 2; i > 0 && p != NULL; i--)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", v) != 1)
		return -EIO;
	return 0;
}

int
proc_start_time(pid_t pid, uint64_t *start)
{
	unsigned long long v;
	int r;

	if ((r = stat_field(pid, 22, &v)) < 0)
		return r;
	*start = v;
	return 0;
}

int
proc_session(pid_t pid, pid_t *sid)
{
	unsigned long long v;
	int r;

	if ((r = stat_field(pid, 6, &v)) < 0)
		return r;
	*sid = (pid_t)v;
	return 0;
}
