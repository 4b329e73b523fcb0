/*
 * benchutil.h: what the benchmarks that start berth-supervisor share:
 * reading its log (a file), counting and waiting for lines in it, and
 * killing the tasks it names, which outlive it by design.
 */
#ifndef BERTH_BENCHUTIL_H
#define BERTH_BENCHUTIL_H

#include <stdbool.h>
#include <sys/types.h>

/* CLOCK_MONOTONIC in milliseconds. */
double bench_now_ms(void);
/* The whole file, NUL-terminated ("" when it cannot be read). */
char *bench_slurp(const char *path);
/* How many times text stands in s. */
int bench_count(const char *s, const char *text);
/* Until the log at path holds text want times; false (said) after ms. */
bool bench_wait_log(const char *path, const char *text, int want, int ms);
/* CPU time of every thread of pid, in seconds, from schedstat; -1. */
double bench_cpu_s(pid_t pid);
/* SIGKILL every pid the log's task events name ("message=\"pid N"). */
void bench_kill_tasks(const char *path);

#endif
