/*
 * svtest.h: what the integration tests that run a whole berth share:
 * a config in a fresh directory, berth-supervisor started in spawn mode
 * with its helpers' pids tracked, allocation files, and what the
 * supervisor reports through its API (api.sock): the typed event log
 * (GET /v1/events) and the state of allocations and plugins, waited for
 * and counted. A test judges berth by these, not by its log wording.
 *
 * The test becomes a child subreaper: tasks that outlive a killed
 * supervisor come to it, and die with it (their pids are tracked).
 */
#ifndef BERTH_TEST_SVTEST_H
#define BERTH_TEST_SVTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "harness.h"

struct berth {
	char *dir;
	char cfg[512], allocs[512], sock[108];
	char cgroup[128];		/* its tasks' cgroup parent */
	struct proc sv;
	pid_t mounter, registry;
	/* Events at or below this index are ignored (event_mark()). */
	uint64_t since;
};

/* A private mount namespace, a fresh directory, and the config file:
 * data and run dirs in it, an alloc_dir, heartbeat, and extra keys
 * (", \"k\": v" or NULL). */
void berth_config(struct berth *b, const char *heartbeat, const char *extra);
/*
 * A binary of the build where a sandboxed task finds it: berth_config
 * binds the build dir read-only on SV_SANDBOX_BIN (empty on Debian),
 * beneath /usr, which root's template binds into every sandbox.
 */
#define SV_SANDBOX_BIN "/usr/local/src"
const char *sv_sandbox_bin(const char *name);
/* Rewrite the config in the same directory (for a restart). */
void berth_reconfig(struct berth *b, const char *heartbeat,
    const char *extra);
/* The paths in b (cfg, allocs, sock) for the directory b->dir. */
void berth_paths(struct berth *b);
/*
 * Start the supervisor and wait until its API answers GET /v1/health
 * with 200 (both helpers ready); the helpers' pids come from /v1/status.
 */
void berth_start(struct berth *b);
/* SIGKILL the supervisor; its helpers must be gone within 3 s. */
void berth_kill(struct berth *b);
/* berth_kill, and remove the directory. */
void berth_stop(struct berth *b);
/* Task pids in "Started" events, tracked; how many; the last. */
int task_pids(struct berth *b, pid_t *last);
/*
 * How often text is in the supervisor's log so far; fail unless it
 * appears within ms. Only for what the API cannot show (a log line that
 * is itself the feature under test): say why where it is used.
 */
int count(struct berth *b, const char *text);
void wait_log(struct berth *b, const char *text, int ms);

/*
 * One request to the API: the answer's status and its body as JSON (NULL
 * when not JSON). Fails the test when the API cannot be reached.
 */
json_t *sv_api(struct berth *b, const char *method, const char *path,
    const char *body, int *status);
/* As sv_api() for a GET answered 200; NULL if unreachable or not 200. */
json_t *sv_get(struct berth *b, const char *path);

/*
 * Events from GET /v1/events with an index above b->since that match:
 * type ("AllocStopped", "Started", "PluginHealthy"...), subject (NULL:
 * any; for the plugin topic the plugin id, else "alloc" or "alloc/task"),
 * text (NULL: any; a substring of the message).
 * wait_event() fails unless one is recorded within ms and returns the
 * first one's index; count_events() counts them.
 */
uint64_t wait_event(struct berth *b, const char *type, const char *subject,
    const char *text, int ms);
int count_events(struct berth *b, const char *type, const char *subject,
    const char *text);
/* Ignore the events recorded so far from here on (a new supervisor
 * starts from none: berth_start() clears the mark). */
void event_mark(struct berth *b);
/* The index of the first matching event so far (0: none). */
uint64_t event_index(struct berth *b, const char *type, const char *subject,
    const char *text);

/*
 * State the API reports. wait_alloc(): GET /v1/allocation/<id> has
 * "status" status within ms (NULL: the allocation is gone, 404).
 * wait_instance(): /v1/plugin/<id> has an instance of type ("node",
 * "controller") for alloc, healthy when healthy is set (alloc NULL: no
 * instance of that type is left); returns the instance (json_decref) or
 * NULL when none is left.
 */
void wait_alloc(struct berth *b, const char *id, const char *status, int ms);
json_t *wait_instance(struct berth *b, const char *id, const char *type,
    const char *alloc, bool healthy, int ms);
/* Write an allocation file, renamed into place as a tool would. */
void berth_alloc(struct berth *b, const char *file, const char *text);
void remove_alloc(struct berth *b, const char *file);
/*
 * The same by allocation id: <name>.json written; removed, then its
 * AllocStopped event and its 404 waited for.
 */
void sv_put_alloc(struct berth *b, const char *name, const char *doc);
void sv_stop_alloc(struct berth *b, const char *name);
/* Allocation "plugin": root's definition "hostpath" as a privileged
 * monolith of plugin "hp"; both its instances healthy. */
void sv_plugin_up(struct berth *b);
/* Root's secret name in b->dir/secrets, the supervisor's user's alone. */
void sv_secret(struct berth *b, const char *name, const char *text);
/* Mount points under b's data dir, only those whose path holds part
 * when part is not NULL (/proc/self/mountinfo). */
int berth_mounts(struct berth *b, const char *part);
/* berthctl ARGS... (NULL-ended, at most 6) against b: its exit code, and
 * what it printed on stdout in out. */
int sv_ctl(struct berth *b, char *out, size_t outlen, ...);

#endif
