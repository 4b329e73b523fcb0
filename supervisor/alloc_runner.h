/*
 * alloc_runner.h: the allocations the operator asked for, and their
 * tasks. Until the operator API exists, an allocation is a JSON document
 * in the config's alloc_dir (one file per allocation, "<name>.json"): a
 * new file starts it, a removed file stops it, a changed file stops it
 * and starts the new version. The directory is watched with inotify and
 * read again every plugin_resync as a backstop.
 *
 * At start it first reads the task handles the registry kept, so that
 * tasks still running from before a supervisor restart are adopted, not
 * started again; tasks of allocations that are gone are stopped, and
 * plugin registrations of allocations that are not running are removed.
 *
 * Must not: write into alloc_dir (it is the operator's), or stop tasks
 * when the supervisor stops.
 */
#ifndef BERTH_ALLOC_RUNNER_H
#define BERTH_ALLOC_RUNNER_H

struct supervisor;
struct allocs;

struct allocs *allocs_new(struct supervisor *sv);
/* Recover, then run: once the registry and the mounter are ready. */
void allocs_start(struct allocs *am);
/* Forget everything; tasks keep running. */
void allocs_free(struct allocs *am);
/* The csi_plugin type ("node", "controller", "monolith") the task of
 * alloc that serves plugin declared; NULL if no such task runs. */
const char *allocs_plugin_type(struct allocs *am, const char *alloc,
    const char *plugin);

#endif
