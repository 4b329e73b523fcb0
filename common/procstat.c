/*
 * procstat.c: a process's start time and session from /proc (see
 * procstat.h).
 *
 * Shared by the supervisor, which adopts tasks by pid and start time,
 * berth-shim, which reports both for itself and its task, and
 * berth-mounter, which opens the file itself beneath its pinned /proc.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"

/* Field i (from 1, as proc(5) counts) of an open /proc/<pid>/stat, i > 2. */
static int
stat_field_of(int fd, int i, unsigned long long *v)
{
	char buf[1024], *p;
	ssize_t n;

	if ((n = read(fd, buf, sizeof(buf) - 1)) <= 0)
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

static int
stat_field(pid_t pid, int i, unsigned long long *v)
{
	char path[64];
	int fd, r;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	r = stat_field_of(fd, i, v);
	close(fd);
	return r;
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
proc_read_start_time(int fd, uint64_t *start)
{
	unsigned long long v;
	int r;

	if ((r = stat_field_of(fd, 22, &v)) < 0)
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
