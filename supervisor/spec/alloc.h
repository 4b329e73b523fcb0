/*
 * alloc.h: allocation documents, the JSON an operator submits to run
 * tasks (a task may be a CSI plugin) and to request volumes for them.
 *
 * Owns: the document's format (field names follow Nomad's jobspec), its
 * complete validation, the checked C structure, and the JSON written back
 * out. A document is accepted whole or not at all: with any problem, no
 * structure is returned, only the list of every problem found, each one
 * "<field path>: <reason>" (tasks[1].csi_plugin.type: must be one of
 * "node", "controller", "monolith", not "nod"), in document order.
 *
 * Must not: touch the network, or the filesystem beyond reading the one
 * file alloc_load_file() is given; decide whether a plugin or volume
 * exists (the registry and the mounter do, when the alloc runs). Every
 * string in a returned structure is free of NUL bytes and every
 * identifier passed ident_problem(), so callers may hand them on as is.
 *
 * Where problems stand in document order: a problem with one field at
 * that field; a missing required field, and a rule that ties two fields
 * of an object together (a reader-only access mode and read_only), at
 * the end of that object, after the problems inside it.
 */
#ifndef BERTH_ALLOC_H
#define BERTH_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "volume.pb-c.h"

#define ALLOC_MAX_BYTES		(256 * 1024)	/* checked before parsing */
#define ALLOC_MAX_TASKS		32
#define ALLOC_MAX_ARGS		64
#define ALLOC_MAX_ENV		128
#define ALLOC_MAX_MOUNTS	32		/* per task */
#define ALLOC_MAX_VOLUMES	32
#define ALLOC_MAX_FLAGS		16
#define ALLOC_FLAG_MAX_LEN	64		/* bytes, one mount flag */
#define ALLOC_FS_TYPE_MAX_LEN	32
#define ALLOC_MAX_MOUNT_GROUP	4294967294u	/* (gid_t)-1 is no gid */
#define ALLOC_DEFAULT_NAMESPACE	"default"
#define ALLOC_DEFAULT_KILL_TIMEOUT_MS	(5 * 1000)
#define ALLOC_MAX_KILL_TIMEOUT_MS	(5 * 60 * 1000)
#define ALLOC_DEFAULT_HEALTH_TIMEOUT_MS	(30 * 1000)
/* An exec task's "logs": files kept per stream (the current one too),
 * and the size of one, in MiB (Nomad's max_files and max_file_size). */
#define ALLOC_DEFAULT_LOG_FILES	5
#define ALLOC_MAX_LOG_FILES	100
#define ALLOC_DEFAULT_LOG_FILE_MB	10
#define ALLOC_MAX_LOG_FILE_MB	1024
/* An exec task's "resources", as Nomad's: cpu in MHz (the cgroup's CPU
 * weight, cpu.shares), memory and memory_max in MiB (the soft and the hard
 * limit; memory_max absent: memory is the hard limit), plus pids, the
 * most processes and threads the task may hold at once. */
#define ALLOC_DEFAULT_CPU	100
#define ALLOC_MAX_CPU		262144		/* cpu.shares' top */
#define ALLOC_DEFAULT_MEMORY_MB	300
#define ALLOC_MIN_MEMORY_MB	10		/* Nomad's least */
#define ALLOC_MAX_MEMORY_MB	(1024 * 1024)
#define ALLOC_DEFAULT_PIDS	512
#define ALLOC_MAX_PIDS		65536
/* A task's "user": a name on root's allow-list (the mounter checks). */
#define ALLOC_USER_MAX_LEN	32
/*
 * A task's "restart" block, Nomad's (its defaults are those of Nomad's
 * service jobs): at most attempts restarts within interval, each after
 * delay; then mode "fail" ends the task for good, "delay" waits for the
 * interval to end and starts the count again.
 */
#define ALLOC_DEFAULT_RESTART_ATTEMPTS	2
#define ALLOC_MAX_RESTART_ATTEMPTS	10000
#define ALLOC_DEFAULT_RESTART_INTERVAL_MS	(30 * 60 * 1000)
#define ALLOC_MIN_RESTART_INTERVAL_MS	(5 * 1000)
#define ALLOC_DEFAULT_RESTART_DELAY_MS	(15 * 1000)
/* A volume spec's "parameters" (PUT /v1/volume/<id>/create). */
#define ALLOC_MAX_PARAMS	32
#define ALLOC_MAX_CONTEXT	32	/* volume context entries */
#define ALLOC_MAX_TOPOLOGIES	8	/* per required or preferred list */
#define ALLOC_MAX_SEGMENTS	8	/* key = value pairs per topology */
/* The plugin calls a volume's secrets are named for: "create",
 * "delete", "validate", "controller_publish", "controller_unpublish",
 * "stage", "publish", "expand", "snapshot"; NULL-terminated. */
#define ALLOC_SECRET_CALLS	9
extern const char *const alloc_secret_calls[ALLOC_SECRET_CALLS + 1];
#define ALLOC_PARAM_KEY_MAX_LEN		128	/* bytes */
#define ALLOC_PARAM_VALUE_MAX_LEN	1024	/* bytes */
/* Problems listed; more are counted in dropped and summed up in a line. */
#define ALLOC_PROBLEMS_MAX	64

enum alloc_driver {
	ALLOC_DRIVER_EXEC = 1,		/* started by the supervisor */
	ALLOC_DRIVER_PRIVILEGED		/* a root-defined plugin, by the mounter */
};

enum alloc_csi_type {
	ALLOC_CSI_NONE = 0,		/* the task is not a CSI plugin */
	ALLOC_CSI_NODE,
	ALLOC_CSI_CONTROLLER,
	ALLOC_CSI_MONOLITH		/* serves as both node and controller */
};

enum alloc_restart_mode {
	ALLOC_RESTART_FAIL = 1,		/* the task fails for good */
	ALLOC_RESTART_DELAY		/* it waits for the next interval */
};

struct alloc_restart {
	int attempts;			/* restarts allowed per interval */
	int64_t interval_ms;
	int64_t delay_ms;		/* before each restart */
	enum alloc_restart_mode mode;
};

struct alloc_mount {
	char *volume;		/* a key of the alloc's volumes */
	char *destination;	/* allocs/<alloc>/<task>/volumes/<destination> */
	bool read_only;
	size_t volume_index;	/* that volume in struct alloc's volumes */
};

struct alloc_csi_plugin {
	enum alloc_csi_type type;	/* ALLOC_CSI_NONE: no csi_plugin block */
	char *id;
	int64_t health_timeout_ms;
};

struct alloc_task {
	char *name;
	enum alloc_driver driver;
	char *command;		/* exec: an absolute path */
	char **args;		/* exec */
	size_t nargs;
	char *plugin;		/* privileged: the name in plugins.d */
	char **env;		/* "K=V", sorted by name; never CSI_ENDPOINT */
	size_t nenv;
	int64_t kill_timeout_ms;
	int log_max_files;	/* exec: "logs" */
	int log_max_file_mb;
	/* exec: who it runs as; NULL: the alloc's dynamic uid and gid. */
	char *user;
	int cpu;		/* exec: "resources", defaults filled in */
	int memory_mb;
	int memory_max_mb;	/* >= memory_mb; memory_mb when absent */
	int pids;
	struct alloc_csi_plugin csi;
	struct alloc_restart restart;
	struct alloc_mount *mounts;
	size_t nmounts;
};

/*
 * In a plugin task's args (an exec task with a csi_plugin): its endpoint,
 * "unix://" and the socket path, and that path alone. A plugin's args
 * holding "$NAME" or "${" are refused, as nothing expands them.
 */
#define ALLOC_CSI_ENDPOINT "{csi_endpoint}"
#define ALLOC_CSI_SOCKET "{csi_socket}"

/* t's args with the placeholders replaced: t->nargs, NULL-ended, owned. */
char **alloc_task_args(const struct alloc_task *t, const char *socket);

struct alloc_volume {
	char *name;		/* the request's name, the key in "volumes" */
	char *source;		/* the registered volume's id */
	Berth__AccessMode access_mode;
	Berth__AttachmentMode attachment_mode;
	bool read_only;
	char *fs_type;		/* NULL when not given */
	char **mount_flags;
	size_t nflags;
	/* The secrets this alloc's stage and publish get, by name, in
	 * place of the volume's; NULL: the volume's. */
	char *stage_secret, *publish_secret;
	/* The group the task's user shares on the volume (a gid, handed to
	 * a plugin that takes one at stage and publish); 0: none named, the
	 * allocation's own group is used. */
	uint32_t mount_group;
};

/* Tasks and volumes are in document order. */
struct alloc {
	char *id;
	char *ns;
	struct alloc_task *tasks;
	size_t ntasks;
	struct alloc_volume *volumes;
	size_t nvolumes;
	/* network { mode = "none" }: its tasks get a new, empty network
	 * namespace; "host" (the default): the host's network. */
	bool network_none;
};

/*
 * At most ALLOC_PROBLEMS_MAX problems; when more were found, they are
 * counted in dropped and items ends with one more line, "... and N more
 * problems", so that printing items shows the cut.
 */
struct alloc_problems {
	char **items;
	size_t n;
	size_t dropped;
};

/*
 * Parse and check len bytes of text. Returns 0 with *out set, or -1 with
 * *out NULL and every problem in problems. problems is overwritten (it
 * need not be initialized) and must be freed with alloc_problems_free()
 * after either outcome. Out of memory ends the process (xalloc.h).
 */
int alloc_parse(const char *text, size_t len, struct alloc **out,
    struct alloc_problems *problems);
/*
 * alloc_parse() on a file's contents. Only a regular file is read, never
 * more than ALLOC_MAX_BYTES of it; a file that cannot be read is one
 * problem ("document: cannot read <path>: <reason>").
 */
int alloc_load_file(const char *path, struct alloc **out,
    struct alloc_problems *problems);
void alloc_free(struct alloc *a);
void alloc_problems_free(struct alloc_problems *p);

/* One CreateVolume parameter, kept as the operator wrote it. */
struct alloc_param {
	char *key;
	char *value;
};

/*
 * A volume to register (an existing one, by the provider's external_id)
 * or to create through its plugin, the body of PUT /v1/volume/<id> and
 * PUT /v1/volume/<id>/create (see api_volume.c for the fields).
 */
/* One topology of a create's topology_request: key = value segments. */
struct alloc_topology {
	struct alloc_param *seg;
	size_t nseg;
};

struct alloc_volume_spec {
	/* First: the alloc's volume checks fill it (access_mode,
	 * attachment_mode, mount_options); name, source and read_only
	 * stay unset. */
	struct alloc_volume vol;
	char *ns;		/* "default" when absent */
	char *plugin;
	char *external_id;	/* register only; NULL when absent */
	int64_t capacity_min;	/* create only, bytes; 0 when absent */
	char *snapshot_id;	/* create only: the content; NULL none */
	struct alloc_param *params;	/* create only, in document order */
	size_t nparams;
	struct alloc_param *context;	/* register only, document order */
	size_t ncontext;
	/* The secret each plugin call gets, by name (never its value);
	 * NULL: none. Indexed as alloc_secret_calls. */
	char *secrets[ALLOC_SECRET_CALLS];
	/* topology_request's required (CSI's requisite; register: where
	 * the volume can be reached) and preferred (create only)
	 * topologies, in document order. */
	struct alloc_topology *requisite, *preferred;
	size_t nrequisite, npreferred;
	/* on_plugin_restart: "remount", "restart_tasks" or "none"; NULL
	 * when absent (the default). Static strings. */
	const char *on_plugin_restart;
};

/*
 * Parse and check a volume spec for the volume id (an "id" field, if
 * given, must equal it), as alloc_parse() does a document: 0 and *out,
 * or -1 and every problem.
 */
int alloc_volume_spec_parse(const char *text, size_t len, const char *id,
    bool create, struct alloc_volume_spec **out,
    struct alloc_problems *problems);
void alloc_volume_spec_free(struct alloc_volume_spec *s);

/* The document's spelling of a value ("single-node-writer"); "unknown"
 * for a value outside the enum. */
const char *alloc_access_mode_name(Berth__AccessMode m);
const char *alloc_attachment_mode_name(Berth__AttachmentMode m);
const char *alloc_csi_type_name(enum alloc_csi_type t);
const char *alloc_driver_name(enum alloc_driver d);
const char *alloc_restart_mode_name(enum alloc_restart_mode m);

/*
 * The alloc as a compact JSON document, defaults written out, which
 * alloc_parse() reads back to an equal structure (unless the written
 * defaults take it over ALLOC_MAX_BYTES, possible only for a document
 * already at the limit). malloc'd; NULL only for a string jansson
 * refuses (not UTF-8), which an alloc from alloc_parse() never holds.
 */
char *alloc_to_json(const struct alloc *a);

#endif
