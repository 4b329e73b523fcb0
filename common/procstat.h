/*
 * procstat.h: what berth reads of another process in /proc, to tell a
 * process from a later one that reuses its pid.
 */
#ifndef BERTH_PROCSTAT_H
#define BERTH_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

/* /proc/<pid>/stat field 22 (start time in clock ticks); 0 or -errno. */
int proc_start_time(pid_t pid, uint64_t *start);
/* The same from an open /proc/<pid>/stat. */
int proc_read_start_time(int fd, uint64_t *start);
/* /proc/<pid>/stat field 6 (session id); 0 or -errno. */
int proc_session(pid_t pid, pid_t *sid);

#endif
