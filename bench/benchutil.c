/*
 * benchutil.c: see benchutil.h.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

double
bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

char *
bench_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long len;

	if (f == NULL)
		return strdup("");
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	if ((buf = malloc(len + 1)) == NULL)
		abort();
	len = (long)fread(buf, 1, len, f);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

int
bench_count(const char *s, const char *text)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, text)) != NULL;
	    p += strlen(text))
		n++;
	return n;
}

bool
bench_wait_log(const char *path, const char *text, int want, int ms)
{
	double until = bench_now_ms() + ms;
	char *log;
	int n;

	do {
		log = bench_slurp(path);
		n = bench_count(log, text);
		free(log);
		if (n >= want)
			return true;
		usleep(20000);
	} while (bench_now_ms() < until);
	fprintf(stderr, "bench: %d of %d \"%s\" in %s\n", n, want, text, path);
	return false;
}

void
bench_kill_tasks(const char *path)
{
	const char *key = "message=\"pid ";
	char *log = bench_slurp(path);

	for (const char *p = log; (p = strstr(p, key)) != NULL; ) {
		p += strlen(key);
		kill((pid_t)atol(p), SIGKILL);
	}
	free(log);
}

double
bench_cpu_s(pid_t pid)
{
	char path[64], file[400];
	unsigned long long ns, sum = 0;
	struct dirent *de;
	DIR *d;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/schedstat", path,
		    de->d_name);
		if ((f = fopen(file, "r")) == NULL)
			continue;
		if (fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		fclose(f);
	}
	closedir(d);
	return sum / 1e9;
}
