/*
 * procstat.c: a process's start time from /proc (see procstat.h).
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

int
proc_read_start_time(int fd, uint64_t *start)
{
	char buf[1024], *p;
	unsigned long long v;
	ssize_t n;
	int i;

	if ((n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return -EIO;
	buf[n] = '\0';
	/* comm may hold anything, even ") ": the last one ends it. */
	if ((p = strrchr(buf, ')')) == NULL)
		return -EIO;
	for (i = 0; i < 20 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &v) != 1)
		return -EIO;
	*start = v;
	return 0;
}

int
proc_start_time(pid_t pid, uint64_t *start)
{
	char path[64];
	int fd, r;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	r = proc_read_start_time(fd, start);
	close(fd);
	return r;
}
