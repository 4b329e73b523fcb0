/*
 * metrics.h: the supervisor's counters and histograms, written out in
 * Prometheus' text format by the API (GET /v1/metrics).
 *
 * Owns: counts that only grow (CSI RPC errors by plugin, method and gRPC
 * code, mounter calls by verb and result, volume stats calls skipped)
 * and latency histograms (plugin probes and volume stats calls by
 * plugin, registry writes), and the process' own metrics
 * (memory, CPU, descriptors, start time, read from /proc when written).
 * Gauges that describe the present (plugin health, tasks, volumes) are
 * read from their owners when the API writes the page.
 *
 * Must not: allocate while counting, or block: the hooks are called from
 * hot paths on the event loop. The state is one per process, on purpose:
 * the hooks need no handle passed down through the modules that call them.
 * Label values are copied (truncated to METRICS_LABEL_MAX bytes); past
 * METRICS_SERIES_MAX series of one family, new label sets are counted
 * in one "other" series so that a misbehaving peer cannot grow memory.
 */
#ifndef BERTH_METRICS_H
#define BERTH_METRICS_H

#include <stdint.h>

struct evbuffer;

#define METRICS_LABEL_MAX	48
#define METRICS_SERIES_MAX	64

/* A CSI call to plugin ("" unknown) ended with a gRPC code not OK. */
void metrics_csi_rpc_error(const char *plugin, const char *method,
    const char *code);
/* One probe of a plugin's socket took ms milliseconds (any outcome). */
void metrics_probe_latency(const char *plugin, double ms);
/* One NodeGetVolumeStats call to plugin took ms milliseconds (any
 * outcome); one was not made, as the volume's last was still out or
 * waiting its turn. */
void metrics_volume_stats_latency(const char *plugin, double ms);
void metrics_volume_stats_skipped(const char *plugin);
/* One mounter request was answered: result "ok", "kept" (a bind found
 * in place, as after a restart: not an error) or the error's name. */
void metrics_mount_op(const char *verb, const char *result);
/* One registry write was acknowledged (or failed) after ms milliseconds. */
void metrics_registry_write(const char *verb, double ms);

/* Append every family above, with HELP and TYPE lines. */
void metrics_write(struct evbuffer *out);
/* Append process_* (Prometheus' standard names) for this process. */
void metrics_write_process(struct evbuffer *out);
/* A family's HELP and TYPE ("gauge", "counter") lines. */
void metrics_family(struct evbuffer *out, const char *name,
    const char *type, const char *help);
/* One gauge or counter line with up to three label pairs (NULL ends). */
void metrics_line(struct evbuffer *out, const char *name,
    const char *const *labels, double value);
/* Forget everything (tests). */
void metrics_reset(void);

#endif
