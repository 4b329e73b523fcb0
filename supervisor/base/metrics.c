/*
 * metrics.c: counters and histograms for GET /v1/metrics (see metrics.h).
 *
 * Owns: fixed tables of series, found by a linear search (there are a
 * few dozen at most). Must not: allocate in a hook.
 */
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "metrics.h"

struct series {
	char l1[METRICS_LABEL_MAX + 1], l2[METRICS_LABEL_MAX + 1];
	uint64_t count;
};

struct counter {
	const char *name, *help, *k1, *k2;
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
	"CSI calls that ended with a gRPC code other than OK.", "method",
	"code", { { "", "", 0 } }, 0 };
static struct counter mount_ops = { "berth_mount_operations_total",
	"Requests to berth-mounter, by verb and result.", "verb", "result",
	{ { "", "", 0 } }, 0 };
static struct histogram probes = { "berth_plugin_probe_duration_seconds",
	"How long a CSI Probe of a plugin took, whatever its outcome.", NULL,
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
count(struct counter *c, const char *l1, const char *l2)
{
	char a[METRICS_LABEL_MAX + 1], b[METRICS_LABEL_MAX + 1];
	size_t i;

	copy_label(a, l1);
	copy_label(b, l2);
	for (i = 0; i < c->n; i++)
		if (strcmp(c->s[i].l1, a) == 0 && strcmp(c->s[i].l2, b) == 0)
			break;
	if (i == c->n) {
		if (c->n == METRICS_SERIES_MAX) {
			/* The last slot collects what does not fit. */
			i = c->n - 1;
			copy_label(c->s[i].l1, "other");
			copy_label(c->s[i].l2, "other");
		} else {
			copy_label(c->s[i].l1, a);
			copy_label(c->s[i].l2, b);
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
metrics_csi_rpc_error(const char *method, const char *code)
{
	count(&rpc_errors, method, code);
}

void
metrics_probe_latency(double ms)
{
	observe(&probes, NULL, ms);
}

void
metrics_mount_op(const char *verb, const char *result)
{
	count(&mount_ops, verb, result);
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

	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s counter\n", c->name,
	    c->help, c->name);
	for (i = 0; i < c->n; i++) {
		const char *labels[] = { c->k1, c->s[i].l1, c->k2, c->s[i].l2,
			NULL };

		metrics_line(out, c->name, labels, (double)c->s[i].count);
	}
}

static void
write_histogram(struct evbuffer *out, const struct histogram *h)
{
	char name[128], le[32];
	size_t i, b;

	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s histogram\n",
	    h->name, h->help, h->name);
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
	write_histogram(out, &probes);
	write_histogram(out, &reg_writes);
}

void
metrics_reset(void)
{
	rpc_errors.n = mount_ops.n = probes.n = reg_writes.n = 0;
	memset(rpc_errors.s, 0, sizeof(rpc_errors.s));
	memset(mount_ops.s, 0, sizeof(mount_ops.s));
	memset(probes.s, 0, sizeof(probes.s));
	memset(reg_writes.s, 0, sizeof(reg_writes.s));
}
