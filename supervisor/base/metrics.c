/*
 * metrics.c: counters and histograms for GET /v1/metrics (see metrics.h).
 *
 * Owns: fixed tables of series, found by a linear search (there are a
 * few dozen at most). Must not: allocate in a hook.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include <event2/buffer.h>

#include "metrics.h"

struct series {
	char l1[METRICS_LABEL_MAX + 1], l2[METRICS_LABEL_MAX + 1];
	char l3[METRICS_LABEL_MAX + 1];
	uint64_t count;
};

/* k3 NULL: two labels. */
struct counter {
	const char *name, *help, *k1, *k2, *k3;
	struct series s[METRICS_SERIES_MAX];
	size_t n;
};

/* Upper bounds in seconds; +Inf is the count. */
static const double bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))

struct histogram {
	const char *name, *help, *k1;
	struct {
		char l1[METRICS_LABEL_MAX + 1];
		uint64_t buckets[NBOUNDS], count;
		double sum;
	} s[METRICS_SERIES_MAX];
	size_t n;
};

static struct counter rpc_errors = { "berth_csi_rpc_errors_total",
	"CSI calls that ended with a gRPC code other than OK.", "plugin",
	"method", "code", { { "", "", "", 0 } }, 0 };
static struct counter mount_ops = { "berth_mount_operations_total",
	"Requests to berth-mounter, by verb and result.", "verb", "result",
	NULL, { { "", "", "", 0 } }, 0 };
static struct histogram probes = { "berth_plugin_probe_duration_seconds",
	"How long a CSI Probe of a plugin took, whatever its outcome.",
	"plugin", { { "", { 0 }, 0, 0 } }, 0 };
static struct counter stats_skipped = {
	"berth_volume_stats_skipped_total", "NodeGetVolumeStats calls not "
	"made: the volume's last was still out or waiting its turn.",
	"plugin", NULL, NULL,
	{ { "", "", "", 0 } }, 0 };
static struct histogram stats_calls = {
	"berth_volume_stats_duration_seconds", "How long a NodeGetVolumeStats "
	"call took, whatever its outcome.", "plugin",
	{ { "", { 0 }, 0, 0 } }, 0 };
static struct histogram reg_writes = {
	"berth_registry_write_duration_seconds",
	"From sending a write to berth-registry to its durable answer.",
	"verb", { { "", { 0 }, 0, 0 } }, 0 };

static void
copy_label(char *dst, const char *src)
{
	snprintf(dst, METRICS_LABEL_MAX + 1, "%s", src != NULL ? src : "");
}

static void
count(struct counter *c, const char *l1, const char *l2, const char *l3)
{
	char a[METRICS_LABEL_MAX + 1], b[METRICS_LABEL_MAX + 1];
	char d[METRICS_LABEL_MAX + 1];
	size_t i;

	copy_label(a, l1);
	copy_label(b, l2);
	copy_label(d, l3);
	for (i = 0; i < c->n; i++)
		if (strcmp(c->s[i].l1, a) == 0 &&
		    strcmp(c->s[i].l2, b) == 0 && strcmp(c->s[i].l3, d) == 0)
			break;
	if (i == c->n) {
		if (c->n == METRICS_SERIES_MAX) {
			/* The last slot collects what does not fit. */
			i = c->n - 1;
			copy_label(c->s[i].l1, "other");
			copy_label(c->s[i].l2, "other");
			copy_label(c->s[i].l3, "other");
		} else {
			copy_label(c->s[i].l1, a);
			copy_label(c->s[i].l2, b);
			copy_label(c->s[i].l3, d);
			c->n++;
		}
	}
	c->s[i].count++;
}

static void
observe(struct histogram *h, const char *l1, double ms)
{
	char a[METRICS_LABEL_MAX + 1];
	double secs = ms / 1000;
	size_t i, b;

	copy_label(a, l1);
	for (i = 0; i < h->n; i++)
		if (strcmp(h->s[i].l1, a) == 0)
			break;
	if (i == h->n) {
		if (h->n == METRICS_SERIES_MAX)
			i = h->n - 1;
		else
			h->n++;
		copy_label(h->s[i].l1, a);
	}
	for (b = 0; b < NBOUNDS; b++)
		if (secs <= bounds[b])
			h->s[i].buckets[b]++;
	h->s[i].count++;
	h->s[i].sum += secs;
}

void
metrics_csi_rpc_error(const char *plugin, const char *method,
    const char *code)
{
	count(&rpc_errors, plugin, method, code);
}

void
metrics_probe_latency(const char *plugin, double ms)
{
	observe(&probes, plugin, ms);
}

void
metrics_volume_stats_latency(const char *plugin, double ms)
{
	observe(&stats_calls, plugin, ms);
}

void
metrics_volume_stats_skipped(const char *plugin)
{
	count(&stats_skipped, plugin, NULL, NULL);
}

void
metrics_mount_op(const char *verb, const char *result)
{
	/* The volume manager takes a bind in place (found again after a
	 * restart) as done: so do the metrics. */
	if (verb != NULL && result != NULL &&
	    strcmp(verb, "bind_volume") == 0 &&
	    strcmp(result, "ERROR_CONFLICT") == 0)
		result = "kept";
	count(&mount_ops, verb, result, NULL);
}

void
metrics_registry_write(const char *verb, double ms)
{
	observe(&reg_writes, verb, ms);
}

/* A label value with \, " and newlines escaped, as the format asks. */
static void
add_value(struct evbuffer *out, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' || *v == '"')
			evbuffer_add_printf(out, "\\%c", *v);
		else if (*v == '\n')
			evbuffer_add(out, "\\n", 2);
		else
			evbuffer_add(out, v, 1);
	}
}

void
metrics_line(struct evbuffer *out, const char *name,
    const char *const *labels, double value)
{
	size_t i;

	evbuffer_add_printf(out, "%s", name);
	for (i = 0; labels != NULL && labels[i] != NULL; i += 2) {
		evbuffer_add_printf(out, "%s%s=\"", i == 0 ? "{" : ",",
		    labels[i]);
		add_value(out, labels[i + 1]);
		evbuffer_add(out, "\"", 1);
	}
	evbuffer_add_printf(out, "%s %.10g\n", i > 0 ? "}" : "", value);
}

static void
write_counter(struct evbuffer *out, const struct counter *c)
{
	size_t i;

	metrics_family(out, c->name, "counter", c->help);
	for (i = 0; i < c->n; i++) {
		const char *labels[] = { c->k1, c->s[i].l1, c->k2, c->s[i].l2,
			c->k3, c->s[i].l3, NULL };

		metrics_line(out, c->name, labels, (double)c->s[i].count);
	}
}

static void
write_histogram(struct evbuffer *out, const struct histogram *h)
{
	char name[128], le[32];
	size_t i, b;

	metrics_family(out, h->name, "histogram", h->help);
	for (i = 0; i < h->n; i++) {
		const char *labels[] = { "le", le, h->k1, h->s[i].l1, NULL };
		const char *plain[] = { h->k1, h->s[i].l1, NULL };

		if (h->k1 == NULL)
			labels[2] = plain[0] = NULL;
		snprintf(name, sizeof(name), "%s_bucket", h->name);
		for (b = 0; b < NBOUNDS; b++) {
			snprintf(le, sizeof(le), "%g", bounds[b]);
			metrics_line(out, name, labels,
			    (double)h->s[i].buckets[b]);
		}
		snprintf(le, sizeof(le), "+Inf");
		metrics_line(out, name, labels, (double)h->s[i].count);
		snprintf(name, sizeof(name), "%s_sum", h->name);
		metrics_line(out, name, plain, h->s[i].sum);
		snprintf(name, sizeof(name), "%s_count", h->name);
		metrics_line(out, name, plain, (double)h->s[i].count);
	}
}

void
metrics_write(struct evbuffer *out)
{
	write_counter(out, &rpc_errors);
	write_counter(out, &mount_ops);
	write_counter(out, &stats_skipped);
	write_histogram(out, &probes);
	write_histogram(out, &stats_calls);
	write_histogram(out, &reg_writes);
}

void
metrics_family(struct evbuffer *out, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

/* /proc/self/stat's fields from the 14th (utime) on, after the name. */
static int
read_stat(unsigned long long *utime, unsigned long long *stime,
    unsigned long long *start, long *rss, unsigned long long *vsize)
{
	char buf[1024], *p;
	FILE *f;
	size_t n;

	if ((f = fopen("/proc/self/stat", "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The name may hold spaces and parentheses: after the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
	    "%llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %ld", utime, stime,
	    start, vsize, rss) != 5)
		return -1;
	return 0;
}

/* Seconds since 1970 when the system booted, from /proc/stat. */
static double
boot_time(void)
{
	char line[256];
	double bt = 0;
	FILE *f;

	if ((f = fopen("/proc/stat", "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "btime %lf", &bt) == 1)
			break;
	fclose(f);
	return bt;
}

static int
open_fds(void)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;		/* not the one opendir holds */
}

void
metrics_write_process(struct evbuffer *out)
{
	unsigned long long ut, st, start, vsize;
	double hz = (double)sysconf(_SC_CLK_TCK);
	long page = sysconf(_SC_PAGESIZE), rss;
	struct rlimit rl;
	int fds;

	if (read_stat(&ut, &st, &start, &rss, &vsize) == 0 && hz > 0) {
		metrics_family(out, "process_cpu_seconds_total", "counter",
		    "User and system CPU time spent, in seconds.");
		metrics_line(out, "process_cpu_seconds_total", NULL,
		    (double)(ut + st) / hz);
		metrics_family(out, "process_resident_memory_bytes", "gauge",
		    "Resident memory size, in bytes.");
		metrics_line(out, "process_resident_memory_bytes", NULL,
		    (double)rss * (double)page);
		metrics_family(out, "process_virtual_memory_bytes", "gauge",
		    "Virtual memory size, in bytes.");
		metrics_line(out, "process_virtual_memory_bytes", NULL,
		    (double)vsize);
		metrics_family(out, "process_start_time_seconds", "gauge",
		    "Start time of the process since 1970, in seconds.");
		metrics_line(out, "process_start_time_seconds", NULL,
		    boot_time() + (double)start / hz);
	}
	if ((fds = open_fds()) >= 0) {
		metrics_family(out, "process_open_fds", "gauge",
		    "Open file descriptors.");
		metrics_line(out, "process_open_fds", NULL, fds);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY) {
		metrics_family(out, "process_max_fds", "gauge",
		    "The limit on open file descriptors.");
		metrics_line(out, "process_max_fds", NULL,
		    (double)rl.rlim_cur);
	}
}

void
metrics_reset(void)
{
	rpc_errors.n = mount_ops.n = probes.n = reg_writes.n = 0;
	stats_skipped.n = stats_calls.n = 0;
	memset(stats_skipped.s, 0, sizeof(stats_skipped.s));
	memset(stats_calls.s, 0, sizeof(stats_calls.s));
	memset(rpc_errors.s, 0, sizeof(rpc_errors.s));
	memset(mount_ops.s, 0, sizeof(mount_ops.s));
	memset(probes.s, 0, sizeof(probes.s));
	memset(reg_writes.s, 0, sizeof(reg_writes.s));
}
