/*
 * test_alloc.c: allocation documents: every field read back, defaults,
 * every refusal with its path and reason, all problems at once and in
 * document order, the size cap, duplicate keys, files, and the JSON
 * written back out reading back to the same alloc.
 *
 * Documents are written with ' for " to keep them readable; sq() turns
 * them into JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "alloc.h"
#include "harness.h"

/* A task and a volume that are valid on their own; X adds fields. */
#define TASK_N(n, x) "{'name':'" n "','driver':'exec','config':{'command':" \
	"'/bin/true'}" x "}"
#define TASK(x) TASK_N("t", x)
#define VOL(x) "{'type':'csi','source':'s1','access_mode':" \
	"'single-node-writer','attachment_mode':'file-system'" x "}"
#define DOC(tasks, x) "{'id':'a1','tasks':[" tasks "]" x "}"

static const char *
sq(const char *s)
{
	static char buf[16384];
	size_t i;

	ck_assert_uint_lt(strlen(s), sizeof(buf));
	for (i = 0; s[i] != '\0'; i++)
		buf[i] = s[i] == '\'' ? '"' : s[i];
	buf[i] = '\0';
	return buf;
}

static void
dump(const struct alloc_problems *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		fprintf(stderr, "  problem: %s\n", p->items[i]);
}

static struct alloc *
parse_ok(const char *doc)
{
	struct alloc_problems p;
	struct alloc *a = NULL;
	const char *text = sq(doc);

	if (alloc_parse(text, strlen(text), &a, &p) != 0)
		dump(&p);
	ck_assert_msg(a != NULL, "refused: %s (%zu problems)", text, p.n);
	ck_assert_uint_eq(p.n, 0);
	alloc_problems_free(&p);
	return a;
}

/* doc is refused with exactly the n problems in want, in that order. */
static void
refused_n(const char *doc, const char *const *want, size_t n)
{
	struct alloc_problems p;
	struct alloc *a = (struct alloc *)&p;
	const char *text = sq(doc);
	size_t i;

	ck_assert_int_eq(alloc_parse(text, strlen(text), &a, &p), -1);
	ck_assert_ptr_null(a);
	if (p.n != n)
		dump(&p);
	ck_assert_msg(p.n == n, "%s: %zu problems, expected %zu", text, p.n, n);
	for (i = 0; i < n; i++)
		ck_assert_msg(strcmp(p.items[i], want[i]) == 0,
		    "%s:\n   got: %s\n  want: %s", text, p.items[i], want[i]);
	alloc_problems_free(&p);
}

static void
refused(const char *doc, const char *want)
{
	refused_n(doc, &want, 1);
}

static const char full_doc[] = "{'id':'web-1','namespace':'prod',"
    "'network':{'mode':'none'},"
    "'tasks':[{'name':'plugin','driver':'exec','config':{'command':"
    "'/usr/bin/csi','args':['--node','n1','caf\\u00e9']},'env':{'B':'2',"
    "'A0':'x','A':'1=2'},'kill_timeout':'90s','logs':{'max_files':3,"
    "'max_file_size':1},'user':'_csi-1','resources':{'cpu':500,"
    "'memory':64,'memory_max':128,'pids':20},'csi_plugin':{'id':"
    "'hostpath','type':'monolith','health_timeout':'45s'},"
    "'volume_mounts':[{'volume':'logs','destination':'out',"
    "'read_only':true},{'volume':'data','destination':'data'}]},"
    "{'name':'priv','driver':'privileged','config':{'plugin':'lvm'},"
    "'csi_plugin':{'id':'lvm','type':'node'}}],"
    "'volumes':{'data':{'type':'csi','source':'vol1','access_mode':"
    "'multi-node-multi-writer','attachment_mode':'block-device',"
    "'read_only':false,'mount_options':{'fs_type':'ext4',"
    "'mount_flags':['noatime','uid=1000,gid=1000']}},'logs':{"
    "'type':'csi','source':'vol2','access_mode':"
    "'single-node-reader-only','attachment_mode':'file-system',"
    "'read_only':true}}}";

START_TEST(every_field_read_back)
{
	struct alloc *a = parse_ok(full_doc);
	struct alloc_task *t;
	struct alloc_volume *v;

	ck_assert_str_eq(a->id, "web-1");
	ck_assert_str_eq(a->ns, "prod");
	ck_assert_uint_eq(a->ntasks, 2);
	t = &a->tasks[0];
	ck_assert_str_eq(t->name, "plugin");
	ck_assert_int_eq(t->driver, ALLOC_DRIVER_EXEC);
	ck_assert_str_eq(t->command, "/usr/bin/csi");
	ck_assert_uint_eq(t->nargs, 3);
	ck_assert_str_eq(t->args[0], "--node");
	ck_assert_str_eq(t->args[1], "n1");
	ck_assert_str_eq(t->args[2], "caf\xc3\xa9");
	ck_assert_ptr_null(t->plugin);
	/* Sorted by name: "A" before "A0", though "A0=" sorts before "A=". */
	ck_assert_uint_eq(t->nenv, 3);
	ck_assert_str_eq(t->env[0], "A=1=2");
	ck_assert_str_eq(t->env[1], "A0=x");
	ck_assert_str_eq(t->env[2], "B=2");
	ck_assert_int_eq(t->kill_timeout_ms, 90000);
	ck_assert_int_eq(t->log_max_files, 3);
	ck_assert_int_eq(t->log_max_file_mb, 1);
	ck_assert(a->network_none);
	ck_assert_str_eq(t->user, "_csi-1");
	ck_assert_int_eq(t->cpu, 500);
	ck_assert_int_eq(t->memory_mb, 64);
	ck_assert_int_eq(t->memory_max_mb, 128);
	ck_assert_int_eq(t->pids, 20);
	ck_assert_int_eq(t->csi.type, ALLOC_CSI_MONOLITH);
	ck_assert_str_eq(t->csi.id, "hostpath");
	ck_assert_int_eq(t->csi.health_timeout_ms, 45000);
	ck_assert_uint_eq(t->nmounts, 2);
	ck_assert_str_eq(t->mounts[0].volume, "logs");
	ck_assert_str_eq(t->mounts[0].destination, "out");
	ck_assert(t->mounts[0].read_only);
	ck_assert_uint_eq(t->mounts[0].volume_index, 1);
	ck_assert_str_eq(t->mounts[1].volume, "data");
	ck_assert(!t->mounts[1].read_only);
	ck_assert_uint_eq(t->mounts[1].volume_index, 0);
	t = &a->tasks[1];
	ck_assert_str_eq(t->name, "priv");
	ck_assert_int_eq(t->driver, ALLOC_DRIVER_PRIVILEGED);
	ck_assert_str_eq(t->plugin, "lvm");
	ck_assert_ptr_null(t->command);
	ck_assert_uint_eq(t->nargs, 0);
	ck_assert_int_eq(t->csi.type, ALLOC_CSI_NODE);
	ck_assert_str_eq(t->csi.id, "lvm");
	ck_assert_uint_eq(a->nvolumes, 2);
	v = &a->volumes[0];
	ck_assert_str_eq(v->name, "data");
	ck_assert_str_eq(v->source, "vol1");
	ck_assert_int_eq(v->access_mode,
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
	ck_assert_int_eq(v->attachment_mode,
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE);
	ck_assert(!v->read_only);
	ck_assert_str_eq(v->fs_type, "ext4");
	ck_assert_uint_eq(v->nflags, 2);
	ck_assert_str_eq(v->mount_flags[0], "noatime");
	ck_assert_str_eq(v->mount_flags[1], "uid=1000,gid=1000");
	v = &a->volumes[1];
	ck_assert_str_eq(v->name, "logs");
	ck_assert_int_eq(v->access_mode,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_READER_ONLY);
	ck_assert(v->read_only);
	ck_assert_ptr_null(v->fs_type);
	alloc_free(a);
}
END_TEST

START_TEST(defaults_applied)
{
	struct alloc *a = parse_ok(DOC(TASK(",'csi_plugin':{'id':'p',"
	    "'type':'node'},'volume_mounts':[{'volume':'v','destination':"
	    "'d'}]"), ",'volumes':{'v':" VOL("") "}"));
	struct alloc_task *t = &a->tasks[0];

	ck_assert_str_eq(a->ns, "default");
	ck_assert_uint_eq(t->nargs, 0);
	ck_assert_uint_eq(t->nenv, 0);
	ck_assert_int_eq(t->kill_timeout_ms, 5000);
	ck_assert_int_eq(t->log_max_files, 5);
	ck_assert_int_eq(t->log_max_file_mb, 10);
	ck_assert(!a->network_none);
	ck_assert_ptr_null(t->user);
	ck_assert_int_eq(t->cpu, 100);
	ck_assert_int_eq(t->memory_mb, 300);
	ck_assert_int_eq(t->memory_max_mb, 300);
	ck_assert_int_eq(t->pids, 512);
	ck_assert_int_eq(t->csi.health_timeout_ms, 30000);
	/* Nomad's restart defaults for service jobs. */
	ck_assert_int_eq(t->restart.attempts, 2);
	ck_assert_int_eq(t->restart.interval_ms, 30 * 60 * 1000);
	ck_assert_int_eq(t->restart.delay_ms, 15000);
	/* A plugin's mode is "delay": it is never given up for good. */
	ck_assert_int_eq(t->restart.mode, ALLOC_RESTART_DELAY);
	ck_assert(!t->mounts[0].read_only);
	ck_assert(!a->volumes[0].read_only);
	ck_assert_ptr_null(a->volumes[0].fs_type);
	ck_assert_uint_eq(a->volumes[0].nflags, 0);
	alloc_free(a);
	a = parse_ok(DOC(TASK(""), ""));
	ck_assert_int_eq(a->tasks[0].csi.type, ALLOC_CSI_NONE);
	ck_assert_ptr_null(a->tasks[0].csi.id);
	ck_assert_uint_eq(a->tasks[0].nmounts, 0);
	ck_assert_uint_eq(a->nvolumes, 0);
	alloc_free(a);
}
END_TEST

START_TEST(top_level_refusals)
{
	refused("[1]", "document: must be an object, not an array");
	refused("{'tasks':[" TASK("") "]}", "id: is required");
	refused("{'id':'a/b','tasks':[" TASK("") "]}", "id: \"a/b\" is not an "
	    "identifier ([A-Za-z0-9._-], 1 to 128 bytes, not \".\" or \"..\"): "
	    "it contains '/'");
	refused("{'id':'..','tasks':[" TASK("") "]}", "id: \"..\" is not an "
	    "identifier ([A-Za-z0-9._-], 1 to 128 bytes, not \".\" or \"..\"): "
	    "it is '.' or '..'");
	refused("{'id':'a\\u0000b','tasks':[" TASK("") "]}", "id: \"a\\x00b\" "
	    "is not an identifier ([A-Za-z0-9._-], 1 to 128 bytes, not \".\" "
	    "or \"..\"): it contains a NUL byte");
	refused("{'id':7,'tasks':[" TASK("") "]}",
	    "id: must be a string, not a number");
	refused(DOC(TASK(""), ",'namespace':''"), "namespace: \"\" is not an "
	    "identifier ([A-Za-z0-9._-], 1 to 128 bytes, not \".\" or \"..\"): "
	    "it is empty");
	refused("{'id':'a'}", "tasks: is required");
	refused("{'id':'a','tasks':{}}", "tasks: must be an array, not an "
	    "object");
	refused("{'id':'a','tasks':[]}", "tasks: must hold at least one task");
	refused(DOC(TASK(""), ",'colour':'blue'"),
	    "colour: unknown field; remove it");
	/* Keys that could be mistaken for path punctuation are quoted. */
	refused(DOC(TASK(""), ",'a.b\\n':null"),
	    "[\"a.b\\x0a\"]: unknown field; remove it");
	refused(DOC(TASK(""), ",'volumes':[]"),
	    "volumes: must be an object, not an array");
}
END_TEST

START_TEST(task_refusals)
{
	refused(DOC("{'driver':'exec','config':{'command':'/x'}}", ""),
	    "tasks[0].name: is required");
	refused(DOC(TASK("") "," TASK(""), ""), "tasks[1].name: \"t\" is the "
	    "name of tasks[0] already; task names must be unique");
	refused(DOC("{'name':'t','driver':'docker','config':{}}", ""),
	    "tasks[0].driver: must be one of \"exec\", \"privileged\", not "
	    "\"docker\"");
	refused(DOC("{'name':'t','driver':'exec'}", ""),
	    "tasks[0].config: is required");
	refused(DOC("{'name':'t','driver':'exec','config':[]}", ""),
	    "tasks[0].config: must be an object, not an array");
	refused(DOC("{'name':'t','driver':'exec','config':{}}", ""),
	    "tasks[0].config.command: is required");
	refused(DOC("{'name':'t','driver':'exec','config':{'command':'bin'}}",
	    ""), "tasks[0].config.command: must be an absolute path, not "
	    "\"bin\"");
	refused(DOC("{'name':'t','driver':'exec','config':{'command':"
	    "'/a\\u0000b'}}", ""), "tasks[0].config.command: contains a NUL "
	    "byte");
	refused(DOC("{'name':'t','driver':'exec','config':{'command':'/x',"
	    "'args':'-v'}}", ""), "tasks[0].config.args: must be an array, "
	    "not a string");
	refused(DOC("{'name':'t','driver':'exec','config':{'command':'/x',"
	    "'args':['a',false]}}", ""), "tasks[0].config.args[1]: must be a "
	    "string, not false");
	refused(DOC("{'name':'t','driver':'exec','config':{'command':'/x',"
	    "'plugin':'p'}}", ""), "tasks[0].config.plugin: unknown field; "
	    "remove it");
	refused(DOC("{'name':'t','driver':'privileged','config':{'plugin':"
	    "'p','command':'/x'},'csi_plugin':{'id':'p','type':'node'}}", ""),
	    "tasks[0].config.command: unknown field; remove it");
	refused(DOC("{'name':'t','driver':'privileged','config':{'plugin':"
	    "'a b'},'csi_plugin':{'id':'p','type':'node'}}", ""),
	    "tasks[0].config.plugin: \"a b\" is not an identifier "
	    "([A-Za-z0-9._-], 1 to 128 bytes, not \".\" or \"..\"): it "
	    "contains a character outside [A-Za-z0-9._-]");
	refused(DOC("{'name':'t','driver':'privileged','config':{'plugin':"
	    "'p'}}", ""), "tasks[0].csi_plugin: is required with the "
	    "\"privileged\" driver (the mounter starts privileged tasks only "
	    "as CSI plugins)");
	refused(DOC(TASK(",'logs':{'max_files':0}"), ""),
	    "tasks[0].logs.max_files: must be from 1 to 100, not 0");
	refused(DOC(TASK(",'logs':{'max_file_size':'10MB'}"), ""),
	    "tasks[0].logs.max_file_size: must be a whole number, not a "
	    "string");
	{
		static const char *const logs[] = {
			"tasks[0].logs.max_file_size: must be from 1 to 1024, "
			    "not 1025",
			"tasks[0].logs.keep: unknown field; remove it",
		};

		refused_n(DOC(TASK(",'logs':{'max_file_size':1025,'keep':1}"),
		    ""), logs, 2);
	}
	refused(DOC(TASK(",'kill_timeout':'6m'"), ""),
	    "tasks[0].kill_timeout: must be at most 5m, not \"6m\"");
	refused(DOC(TASK(",'kill_timeout':'5x'"), ""),
	    "tasks[0].kill_timeout: \"5x\": unknown unit \"x\" (use ms, s, m "
	    "or h)");
	refused(DOC(TASK(",'kill_timeout':5"), ""), "tasks[0].kill_timeout: "
	    "must be a string such as \"30s\", not a number");
	refused(DOC(TASK(",'image':'x'"), ""),
	    "tasks[0].image: unknown field; remove it");
	refused(DOC("7", ""), "tasks[0]: must be an object, not a number");
}
END_TEST

START_TEST(isolation_refusals)
{
	struct alloc *a;

	refused(DOC(TASK(",'user':'root beer'"), ""), "tasks[0].user: "
	    "\"root beer\" contains ' ', which is not in [a-z0-9_-]");
	refused(DOC(TASK(",'user':'1000'"), ""), "tasks[0].user: must start "
	    "with a letter or '_', not '1'");
	refused(DOC(TASK(",'user':'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'"), ""),
	    "tasks[0].user: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" is 33 "
	    "bytes, more than the 32 allowed");
	refused(DOC("{'name':'t','driver':'privileged','config':{'plugin':"
	    "'p'},'user':'x','csi_plugin':{'id':'p','type':'node'}}", ""),
	    "tasks[0].user: is not allowed with the \"privileged\" driver "
	    "(root's plugin definition says how it runs); remove it");
	refused(DOC(TASK(",'resources':{'memory':9}"), ""),
	    "tasks[0].resources.memory: must be from 10 to 1048576, not 9");
	refused(DOC(TASK(",'resources':{'cpu':0}"), ""),
	    "tasks[0].resources.cpu: must be from 1 to 262144, not 0");
	refused(DOC(TASK(",'resources':{'pids':65537}"), ""),
	    "tasks[0].resources.pids: must be from 1 to 65536, not 65537");
	refused(DOC(TASK(",'resources':{'memory':'1G'}"), ""),
	    "tasks[0].resources.memory: must be a whole number, not a string");
	refused(DOC(TASK(",'resources':{'disk':10}"), ""),
	    "tasks[0].resources.disk: unknown field; remove it");
	refused(DOC(TASK(",'resources':{'memory':64,'memory_max':32}"), ""),
	    "tasks[0].resources: memory_max (32) must not be less than "
	    "memory (64)");
	refused(DOC(TASK(",'resources':[]"), ""),
	    "tasks[0].resources: must be an object, not an array");
	refused("{'id':'a1','network':{'mode':'bridge'},'tasks':["
	    TASK("") "]}", "network.mode: must be one of \"host\", "
	    "\"none\", not \"bridge\"");
	refused("{'id':'a1','network':{},'tasks':[" TASK("") "]}",
	    "network.mode: is required");
	/* memory alone is the hard limit too, as in Nomad. */
	a = parse_ok(DOC(TASK(",'resources':{'memory':64}"), ""));
	ck_assert_int_eq(a->tasks[0].memory_max_mb, 64);
	ck_assert_int_eq(a->tasks[0].cpu, 100);
	ck_assert_int_eq(a->tasks[0].pids, 512);
	alloc_free(a);
}
END_TEST

/* The restart block: what is given is read, the rest is defaulted. */
/* Any other task's mode is "fail"; a plugin with no attempts too. */
START_TEST(restart_mode_defaults)
{
	struct alloc *a = parse_ok(DOC(TASK(""), ""));

	ck_assert_int_eq(a->tasks[0].restart.mode, ALLOC_RESTART_FAIL);
	alloc_free(a);
	a = parse_ok(DOC(TASK(",'csi_plugin':{'id':'p','type':'node'},"
	    "'restart':{'attempts':0}"), ""));
	ck_assert_int_eq(a->tasks[0].restart.mode, ALLOC_RESTART_FAIL);
	alloc_free(a);
	a = parse_ok(DOC(TASK(",'csi_plugin':{'id':'p','type':'node'},"
	    "'restart':{'attempts':1,'mode':'fail'}"), ""));
	ck_assert_int_eq(a->tasks[0].restart.mode, ALLOC_RESTART_FAIL);
	alloc_free(a);
}
END_TEST

START_TEST(restart_read_and_refused)
{
	struct alloc *a = parse_ok(DOC(TASK(",'restart':{'attempts':5,"
	    "'interval':'10m','delay':'1s','mode':'delay'}"), ""));
	static const char *const several[] = {
		"tasks[0].restart.attempts: must be from 0 to 10000, not -1",
		"tasks[0].restart.interval: must be at least 5s",
		("tasks[0].restart.mode: must be one of \"fail\", \"delay\", "
		    "not \"never\""),
		"tasks[0].restart.tries: unknown field; remove it",
	};

	ck_assert_int_eq(a->tasks[0].restart.attempts, 5);
	ck_assert_int_eq(a->tasks[0].restart.interval_ms, 600000);
	ck_assert_int_eq(a->tasks[0].restart.delay_ms, 1000);
	ck_assert_int_eq(a->tasks[0].restart.mode, ALLOC_RESTART_DELAY);
	alloc_free(a);
	a = parse_ok(DOC(TASK(",'restart':{'delay':'0s'}"), ""));
	ck_assert_int_eq(a->tasks[0].restart.attempts, 2);
	ck_assert_int_eq(a->tasks[0].restart.delay_ms, 0);
	alloc_free(a);
	refused_n(DOC(TASK(",'restart':{'attempts':-1,'interval':'1s',"
	    "'mode':'never','tries':3}"), ""), several, 4);
	refused(DOC(TASK(",'restart':{'attempts':'3'}"), ""),
	    "tasks[0].restart.attempts: must be a whole number, not a string");
	refused(DOC(TASK(",'restart':{'attempts':0,'mode':'delay'}"), ""),
	    "tasks[0].restart: mode \"delay\" with 0 attempts would never "
	    "start the task again; give attempts, or use mode \"fail\"");
	refused(DOC(TASK(",'restart':{'attempts':3,'interval':'30s',"
	    "'delay':'15s'}"), ""), "tasks[0].restart: 3 attempts with a "
	    "delay of 15s do not fit in an interval of 30s; lengthen the "
	    "interval or lower attempts or delay");
	refused(DOC(TASK(",'restart':{'delay':'-1s'}"), ""),
	    "tasks[0].restart.delay: \"-1s\" is not a duration (write for "
	    "example \"30s\" or \"1m30s\")");
	refused(DOC(TASK(",'restart':[]"), ""),
	    "tasks[0].restart: must be an object, not an array");
}
END_TEST

START_TEST(env_refusals)
{
	struct alloc *a;

	refused(DOC(TASK(",'env':['A=1']"), ""),
	    "tasks[0].env: must be an object, not an array");
	refused(DOC(TASK(",'env':{'1A':'x'}"), ""), "tasks[0].env.1A: "
	    "\"1A\" is not a variable name: use [A-Za-z_] and then "
	    "[A-Za-z0-9_]");
	refused(DOC(TASK(",'env':{'A=B':'x'}"), ""), "tasks[0].env[\"A=B\"]: "
	    "\"A=B\" is not a variable name: use [A-Za-z_] and then "
	    "[A-Za-z0-9_]");
	refused(DOC(TASK(",'env':{'':'x'}"), ""), "tasks[0].env[\"\"]: \"\" "
	    "is not a variable name: use [A-Za-z_] and then [A-Za-z0-9_]");
	refused(DOC(TASK(",'env':{'CSI_ENDPOINT':'unix:///x'}"), ""),
	    "tasks[0].env.CSI_ENDPOINT: is reserved: berth sets it to the "
	    "plugin's socket; remove it");
	refused(DOC(TASK(",'env':{'A':1}"), ""),
	    "tasks[0].env.A: must be a string, not a number");
	refused(DOC(TASK(",'env':{'A':'x\\u0000y'}"), ""),
	    "tasks[0].env.A: contains a NUL byte");
	/* A privileged plugin's log writer takes the "logs" block too. */
	a = parse_ok(DOC("{'name':'t','driver':'privileged','config':{"
	    "'plugin':'p'},'logs':{'max_files':2},'csi_plugin':{'id':'p',"
	    "'type':'node'}}", ""));
	ck_assert_int_eq(a->tasks[0].log_max_files, 2);
	alloc_free(a);
	refused(DOC("{'name':'t','driver':'privileged','config':{'plugin':"
	    "'p'},'env':{'LD_PRELOAD':'/x.so'},'csi_plugin':{'id':'p',"
	    "'type':'node'}}", ""), "tasks[0].env: is not allowed with the "
	    "\"privileged\" driver (the plugin's definition in plugins.d sets "
	    "its environment); remove it");
}
END_TEST

START_TEST(csi_plugin_refusals)
{
	refused(DOC(TASK(",'csi_plugin':true"), ""),
	    "tasks[0].csi_plugin: must be an object, not true");
	refused(DOC(TASK(",'csi_plugin':{'type':'node'}"), ""),
	    "tasks[0].csi_plugin.id: is required");
	refused(DOC(TASK(",'csi_plugin':{'id':'p'}"), ""),
	    "tasks[0].csi_plugin.type: is required");
	refused(DOC(TASK("") "," TASK_N("u", ",'csi_plugin':{'id':'p',"
	    "'type':'nod'}"), ""), "tasks[1].csi_plugin.type: must be one of "
	    "\"node\", \"controller\", \"monolith\", not \"nod\"");
	refused(DOC(TASK(",'csi_plugin':{'id':'p','type':'node',"
	    "'health_timeout':'0s'}"), ""),
	    "tasks[0].csi_plugin.health_timeout: must be longer than 0s");
	refused(DOC(TASK(",'csi_plugin':{'id':'p','type':'node','extra':1}"),
	    ""), "tasks[0].csi_plugin.extra: unknown field; remove it");
}
END_TEST

/* A plugin's endpoint as a placeholder, replaced; never as a variable. */
#define PLUGIN_ARGS(args) DOC("{'name':'p','driver':'exec','config':{" \
	"'command':'/x','args':[" args "]},'csi_plugin':{'id':'p'," \
	"'type':'node'}}", "")
#define SOCK "/var/lib/berth/csi/plugins/a1/csi.sock"

START_TEST(csi_plugin_endpoint_args)
{
	static const char *const vars[] = {
		"$CSI_ENDPOINT", "${CSI_ENDPOINT}", "${X}", "--e=$x", "a $_",
	};
	struct alloc *a;
	char **v, doc[256], want[512];
	size_t i;

	a = parse_ok(PLUGIN_ARGS("'--endpoint={csi_endpoint}',"
	    "'--csi-address={csi_socket}','{csi_socket}{csi_socket}',"
	    "'{csi_Endpoint}','50$','$1 $$'"));
	ck_assert_str_eq(a->tasks[0].args[0], "--endpoint={csi_endpoint}");
	v = alloc_task_args(&a->tasks[0], SOCK);
	ck_assert_str_eq(v[0], "--endpoint=unix://" SOCK);
	ck_assert_str_eq(v[1], "--csi-address=" SOCK);
	ck_assert_str_eq(v[2], SOCK SOCK);
	ck_assert_str_eq(v[3], "{csi_Endpoint}");
	ck_assert_str_eq(v[4], "50$");
	ck_assert_str_eq(v[5], "$1 $$");
	ck_assert_ptr_null(v[6]);
	for (i = 0; i < 6; i++)
		free(v[i]);
	free(v);
	alloc_free(a);
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		snprintf(doc, sizeof(doc), PLUGIN_ARGS("'-v','%s'"), vars[i]);
		snprintf(want, sizeof(want), "tasks[0].config.args[1]: \"%s\" "
		    "would reach the plugin as written: nothing expands "
		    "variables; for its socket write {csi_endpoint} "
		    "(unix://PATH) or {csi_socket} (PATH)", vars[i]);
		refused(doc, want);
	}
	/* Other tasks: a shell's variables are theirs; no socket to name. */
	a = parse_ok(DOC("{'name':'s','driver':'exec','config':{'command':"
	    "'/bin/sh','args':['-c','echo $HOME ${X}']}}", ""));
	alloc_free(a);
	refused(DOC("{'name':'s','driver':'exec','config':{'command':'/x',"
	    "'args':['--endpoint={csi_endpoint}']}}", ""),
	    "tasks[0].config.args[0]: names the plugin socket, but the task "
	    "has no \"csi_plugin\" block");
}
END_TEST

/* One plugin instance per type and id in an alloc; a monolith is both. */
START_TEST(csi_plugin_pairs)
{
	struct alloc *a;

	refused(DOC("{'name':'a','driver':'exec','config':{'command':'/x'},"
	    "'csi_plugin':{'id':'p','type':'node'}},{'name':'b','driver':"
	    "'exec','config':{'command':'/x'},'csi_plugin':{'id':'p','type':"
	    "'node'}}", ""), "tasks[1].csi_plugin: plugin \"p\" of type "
	    "\"node\" overlaps tasks[0]'s \"node\" (one instance of a plugin "
	    "per alloc; a monolith is both node and controller)");
	refused(DOC("{'name':'a','driver':'exec','config':{'command':'/x'},"
	    "'csi_plugin':{'id':'p','type':'monolith'}},{'name':'b','driver':"
	    "'exec','config':{'command':'/x'},'csi_plugin':{'id':'p','type':"
	    "'controller'}}", ""), "tasks[1].csi_plugin: plugin \"p\" of type "
	    "\"controller\" overlaps tasks[0]'s \"monolith\" (one instance of a "
	    "plugin per alloc; a monolith is both node and controller)");
	a = parse_ok(DOC("{'name':'a','driver':'exec','config':{'command':"
	    "'/x'},'csi_plugin':{'id':'p','type':'node'}},{'name':'b',"
	    "'driver':'exec','config':{'command':'/x'},'csi_plugin':{'id':'p',"
	    "'type':'controller'}},{'name':'c','driver':'exec','config':{"
	    "'command':'/x'},'csi_plugin':{'id':'q','type':'node'}}", ""));
	ck_assert_uint_eq(a->ntasks, 3);
	alloc_free(a);
}
END_TEST

START_TEST(mount_refusals)
{
	struct alloc *a;

	refused(DOC(TASK(",'volume_mounts':{}"), ""),
	    "tasks[0].volume_mounts: must be an array, not an object");
	refused(DOC(TASK(",'volume_mounts':[{'destination':'d'}]"),
	    ",'volumes':{'v':" VOL("") "}"),
	    "tasks[0].volume_mounts[0].volume: is required");
	refused(DOC(TASK(",'volume_mounts':[{'volume':'w','destination':"
	    "'d'}]"), ",'volumes':{'v':" VOL("") "}"),
	    "tasks[0].volume_mounts[0].volume: \"w\" is not one of the "
	    "alloc's \"volumes\"");
	refused(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':"
	    "'d'}]"), ""), "tasks[0].volume_mounts[0].volume: \"v\" is not "
	    "one of the alloc's \"volumes\"");
	refused(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':"
	    "'../d'}]"), ",'volumes':{'v':" VOL("") "}"),
	    "tasks[0].volume_mounts[0].destination: \"../d\" is not an "
	    "identifier ([A-Za-z0-9._-], 1 to 128 bytes, not \".\" or \"..\"): "
	    "it contains '/'");
	refused(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':'d'},"
	    "{'volume':'v','destination':'d'}]"), ",'volumes':{'v':" VOL("")
	    "}"), "tasks[0].volume_mounts[1].destination: \"d\" is the "
	    "destination of volume_mounts[0] already");
	refused(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':'d',"
	    "'read_only':'yes'}]"), ",'volumes':{'v':" VOL("") "}"),
	    "tasks[0].volume_mounts[0].read_only: must be a boolean (true or "
	    "false), not a string");
	refused(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':'d',"
	    "'read_only':false}]"), ",'volumes':{'v':" VOL(",'read_only':true")
	    "}"), "tasks[0].volume_mounts[0].read_only: must be true: volume "
	    "\"v\" is read_only");
	refused(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':'d'}]"),
	    ",'volumes':{'v':" VOL(",'read_only':true") "}"),
	    "tasks[0].volume_mounts[0].read_only: must be true: volume \"v\" "
	    "is read_only");
	refused(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':'d',"
	    "'propagation':'shared'}]"), ",'volumes':{'v':" VOL("") "}"),
	    "tasks[0].volume_mounts[0].propagation: unknown field; remove it");
	/* A read-only mount of a writable volume is fine. */
	a = parse_ok(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':"
	    "'d','read_only':true}]"), ",'volumes':{'v':" VOL("") "}"));
	ck_assert(a->tasks[0].mounts[0].read_only);
	alloc_free(a);
	/* The same destination in two tasks is two different places. */
	a = parse_ok(DOC(TASK(",'volume_mounts':[{'volume':'v','destination':"
	    "'d'}]") "," TASK_N("u", ",'volume_mounts':[{'volume':'v',"
	    "'destination':'d'}]"), ",'volumes':{'v':" VOL("") "}"));
	alloc_free(a);
}
END_TEST

START_TEST(volume_refusals)
{
	refused(DOC(TASK(""), ",'volumes':{'a b':" VOL("") "}"),
	    "volumes[\"a b\"]: \"a b\" is not an identifier ([A-Za-z0-9._-], 1 "
	    "to 128 bytes, not \".\" or \"..\"): it contains a character "
	    "outside [A-Za-z0-9._-]");
	refused(DOC(TASK(""), ",'volumes':{'v':[]}"),
	    "volumes.v: must be an object, not an array");
	refused(DOC(TASK(""), ",'volumes':{'v':{'type':'host','source':'s',"
	    "'access_mode':'single-node-writer','attachment_mode':"
	    "'file-system'}}"), "volumes.v.type: must be \"csi\", not \"host\"");
	refused(DOC(TASK(""), ",'volumes':{'v':{'type':'csi','access_mode':"
	    "'single-node-writer','attachment_mode':'file-system'}}"),
	    "volumes.v.source: is required");
	refused(DOC(TASK(""), ",'volumes':{'v':{'type':'csi','source':'s',"
	    "'access_mode':'single-node','attachment_mode':'file-system'}}"),
	    "volumes.v.access_mode: must be one of \"single-node-reader-only\", "
	    "\"single-node-writer\", \"multi-node-reader-only\", "
	    "\"multi-node-single-writer\", \"multi-node-multi-writer\", "
	    "\"single-node-single-writer\", \"single-node-multi-writer\", "
	    "not \"single-node\"");
	refused(DOC(TASK(""), ",'volumes':{'v':{'type':'csi','source':'s',"
	    "'access_mode':'single-node-writer','attachment_mode':'block'}}"),
	    "volumes.v.attachment_mode: must be one of \"file-system\", "
	    "\"block-device\", not \"block\"");
	refused(DOC(TASK(""), ",'volumes':{'v':{'type':'csi','source':'s',"
	    "'access_mode':'multi-node-reader-only','attachment_mode':"
	    "'file-system'}}"), "volumes.v.read_only: must be true with "
	    "access_mode \"multi-node-reader-only\"");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'read_only':1") "}"),
	    "volumes.v.read_only: must be a boolean (true or false), not a "
	    "number");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'per_alloc':true") "}"),
	    "volumes.v.per_alloc: unknown field; remove it");
}
END_TEST

START_TEST(mount_options_refusals)
{
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':'ro'")
	    "}"), "volumes.v.mount_options: must be an object, not a string");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
	    "'fs_type':'EXT4'}") "}"), "volumes.v.mount_options.fs_type: "
	    "\"EXT4\" contains 'E', which is not in [a-z0-9._-]");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
	    "'fs_type':''}") "}"), "volumes.v.mount_options.fs_type: must not "
	    "be empty");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
	    "'fs_type':'abcdefghijklmnopqrstuvwxyz0123456'}") "}"),
	    "volumes.v.mount_options.fs_type: "
	    "\"abcdefghijklmnopqrstuvwxyz0123456\" is 33 bytes, more than the "
	    "32 allowed");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
	    "'mount_flags':'noatime'}") "}"), "volumes.v.mount_options."
	    "mount_flags: must be an array, not a string");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
	    "'mount_flags':['ro','x;y']}") "}"), "volumes.v.mount_options."
	    "mount_flags[1]: \"x;y\" contains ';', which is not in "
	    "[A-Za-z0-9._=,-]");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
	    "'mount_flags':['a\\u0000b']}") "}"), "volumes.v.mount_options."
	    "mount_flags[0]: \"a\\x00b\" contains '\\x00', which is not in "
	    "[A-Za-z0-9._=,-]");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
	    "'mount_flags':['context=/x']}") "}"), "volumes.v.mount_options."
	    "mount_flags[0]: \"context=/x\" contains '/', which is not in "
	    "[A-Za-z0-9._=,-]");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
	    "'fs':'ext4'}") "}"), "volumes.v.mount_options.fs: unknown field; "
	    "remove it");
}
END_TEST

/* n comma-separated copies of fmt, whose one %zu is the copy's index. */
static const char *
joined(char *buf, size_t size, const char *fmt, size_t n)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < n && off < size; i++) {
		off += snprintf(buf + off, size - off, "%s", i ? "," : "");
		off += snprintf(buf + off, size - off, fmt, i);
	}
	ck_assert_uint_lt(off, size);
	return buf;
}

/* tmpl with its one "%s" replaced by list. */
static const char *
subst(char *buf, size_t size, const char *tmpl, const char *list)
{
	const char *at = strstr(tmpl, "%s");

	ck_assert_ptr_nonnull(at);
	ck_assert_uint_lt(strlen(tmpl) + strlen(list), size);
	snprintf(buf, size, "%.*s%s%s", (int)(at - tmpl), tmpl, list, at + 2);
	return buf;
}

/* Each cap: at the limit accepted, one over refused. */
START_TEST(counts_are_capped)
{
	static const struct {
		const char *doc;	/* %s: the list */
		const char *elem;
		size_t max;
		const char *want;
	} caps[] = {
		{ DOC("%s", ""), "{'name':'t%zu','driver':'exec','config':{"
		    "'command':'/x'}}", 32, "tasks: has 33 entries, more than "
		    "the 32 allowed" },
		{ DOC("{'name':'t','driver':'exec','config':{'command':'/x',"
		    "'args':[%s]}}", ""), "'a%zu'", 64, "tasks[0].config.args: "
		    "has 65 entries, more than the 64 allowed" },
		{ DOC(TASK(",'env':{%s}"), ""), "'E%zu':'x'", 128,
		    "tasks[0].env: has 129 entries, more than the 128 allowed" },
		{ DOC(TASK(",'volume_mounts':[%s]"), ",'volumes':{'v':" VOL("")
		    "}"), "{'volume':'v','destination':'d%zu'}", 32,
		    "tasks[0].volume_mounts: has 33 entries, more than the 32 "
		    "allowed" },
		{ DOC(TASK(""), ",'volumes':{%s}"), "'v%zu':" VOL(""), 32,
		    "volumes: has 33 entries, more than the 32 allowed" },
		{ DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_options':{"
		    "'mount_flags':[%s]}") "}"), "'f%zu'", 16,
		    "volumes.v.mount_options.mount_flags: has 17 entries, more "
		    "than the 16 allowed" },
	};
	char list[8192], doc[12288];
	struct alloc *a;
	size_t i;

	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		a = parse_ok(subst(doc, sizeof(doc), caps[i].doc, joined(list,
		    sizeof(list), caps[i].elem, caps[i].max)));
		alloc_free(a);
		refused(subst(doc, sizeof(doc), caps[i].doc, joined(list,
		    sizeof(list), caps[i].elem, caps[i].max + 1)), caps[i].want);
	}
}
END_TEST

START_TEST(all_problems_at_once_in_document_order)
{
	static const char *const want[] = {
		"id: \"a/b\" is not an identifier ([A-Za-z0-9._-], 1 to 128 "
		    "bytes, not \".\" or \"..\"): it contains '/'",
		"colour: unknown field; remove it",
		"tasks[0].config.command: must be an absolute path, not \"x\"",
		"tasks[0].kill_timeout: must be at most 5m, not \"9m\"",
		"tasks[0].csi_plugin.type: must be one of \"node\", "
		    "\"controller\", \"monolith\", not \"nod\"",
		"tasks[0].csi_plugin.id: is required",
		"tasks[1].name: \"t\" is the name of tasks[0] already; task "
		    "names must be unique",
		"tasks[1].volume_mounts[0].volume: \"nope\" is not one of the "
		    "alloc's \"volumes\"",
		"volumes.v.mount_options.fs_type: \"X\" contains 'X', which is "
		    "not in [a-z0-9._-]",
		"volumes.v.read_only: must be true with access_mode "
		    "\"single-node-reader-only\"",
	};

	refused_n("{'id':'a/b','colour':1,'tasks':[{'name':'t','driver':"
	    "'exec','config':{'command':'x'},'kill_timeout':'9m','csi_plugin':"
	    "{'type':'nod'}},{'name':'t','driver':'exec','config':{'command':"
	    "'/x'},'volume_mounts':[{'volume':'nope','destination':'d'}]}],"
	    "'volumes':{'v':{'type':'csi','source':'s','access_mode':"
	    "'single-node-reader-only','attachment_mode':'file-system',"
	    "'mount_options':{'fs_type':'X'}}}}", want,
	    sizeof(want) / sizeof(want[0]));
}
END_TEST

START_TEST(problems_are_capped)
{
	char list[4096], doc[8192];
	struct alloc_problems p;
	struct alloc *a;
	const char *text;

	/* 70 unknown fields, then the missing id: 71 problems. */
	snprintf(doc, sizeof(doc), "{'tasks':[" TASK("") "],%s}",
	    joined(list, sizeof(list), "'k%zu':0", 70));
	text = sq(doc);
	ck_assert_int_eq(alloc_parse(text, strlen(text), &a, &p), -1);
	ck_assert_uint_eq(p.n, ALLOC_PROBLEMS_MAX + 1);
	ck_assert_uint_eq(p.dropped, 7);
	ck_assert_str_eq(p.items[0], "k0: unknown field; remove it");
	ck_assert_str_eq(p.items[63], "k63: unknown field; remove it");
	ck_assert_str_eq(p.items[64], "... and 7 more problems");
	alloc_problems_free(&p);
	ck_assert_uint_eq(p.n, 0);
	alloc_problems_free(&p);
}
END_TEST

/* A doc of exactly len bytes: a valid alloc padded with spaces. */
static char *
padded(size_t len)
{
	const char *text = sq(DOC(TASK(""), ""));
	char *buf;

	ck_assert_ptr_nonnull(buf = malloc(len));
	memset(buf, ' ', len);
	memcpy(buf, text, strlen(text));
	return buf;
}

START_TEST(size_is_capped_before_parsing)
{
	struct alloc_problems p;
	struct alloc *a;
	char *buf = padded(ALLOC_MAX_BYTES + 1);

	ck_assert_int_eq(alloc_parse(buf, ALLOC_MAX_BYTES, &a, &p), 0);
	alloc_free(a);
	alloc_problems_free(&p);
	ck_assert_int_eq(alloc_parse(buf, ALLOC_MAX_BYTES + 1, &a, &p), -1);
	ck_assert_uint_eq(p.n, 1);
	ck_assert_str_eq(p.items[0], "document: is 262145 bytes, over the "
	    "limit of 262144 bytes");
	alloc_problems_free(&p);
	/* Not even looked at: a syntax error over the cap is not reported. */
	buf[0] = '}';
	ck_assert_int_eq(alloc_parse(buf, ALLOC_MAX_BYTES + 1, &a, &p), -1);
	ck_assert_uint_eq(p.n, 1);
	ck_assert_ptr_nonnull(strstr(p.items[0], "over the limit"));
	alloc_problems_free(&p);
	free(buf);
}
END_TEST

/* A decoder problem: its position depends on jansson; its text does not. */
static void
refused_decoding(const char *doc, const char *tail)
{
	struct alloc_problems p;
	struct alloc *a;
	const char *text = sq(doc);
	size_t n;

	ck_assert_int_eq(alloc_parse(text, strlen(text), &a, &p), -1);
	ck_assert_uint_eq(p.n, 1);
	ck_assert_msg(strncmp(p.items[0], "document: line 1 column ", 24) == 0,
	    "%s", p.items[0]);
	n = strlen(p.items[0]);
	ck_assert_msg(n > strlen(tail) && strcmp(p.items[0] + n - strlen(tail),
	    tail) == 0, "'%s' does not end in '%s'", p.items[0], tail);
	alloc_problems_free(&p);
}

START_TEST(duplicate_keys_refused)
{
	refused_decoding(DOC(TASK(""), ",'id':'b'"),
	    ": duplicate object key near '\\\"id\\\"'");
	refused_decoding(DOC(TASK(",'name':'u'"), ""),
	    ": duplicate object key near '\\\"name\\\"'");
	refused_decoding(DOC(TASK(",'env':{'A':'1','A':'2'}"), ""),
	    ": duplicate object key near '\\\"A\\\"'");
	refused_decoding(DOC(TASK(""), ",'volumes':{'v':" VOL(",'type':'csi'")
	    "}"), ": duplicate object key near '\\\"type\\\"'");
	refused_decoding("{", ": string or '}' expected near end of file");
	refused_decoding("{'a':1} x", ": end of file expected near 'x'");
}
END_TEST

static void
same_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		ck_assert_ptr_eq(a, b);
	else
		ck_assert_str_eq(a, b);
}

static void
same_strv(char **a, size_t na, char **b, size_t nb)
{
	size_t i;

	ck_assert_uint_eq(na, nb);
	for (i = 0; i < na; i++)
		same_str(a[i], b[i]);
}

static void
same_task(const struct alloc_task *x, const struct alloc_task *y)
{
	size_t i;

	same_str(x->name, y->name);
	ck_assert_int_eq(x->driver, y->driver);
	same_str(x->command, y->command);
	same_strv(x->args, x->nargs, y->args, y->nargs);
	same_str(x->plugin, y->plugin);
	same_strv(x->env, x->nenv, y->env, y->nenv);
	ck_assert_int_eq(x->kill_timeout_ms, y->kill_timeout_ms);
	ck_assert_int_eq(x->restart.attempts, y->restart.attempts);
	ck_assert_int_eq(x->restart.interval_ms, y->restart.interval_ms);
	ck_assert_int_eq(x->restart.delay_ms, y->restart.delay_ms);
	ck_assert_int_eq(x->restart.mode, y->restart.mode);
	ck_assert_int_eq(x->log_max_files, y->log_max_files);
	ck_assert_int_eq(x->log_max_file_mb, y->log_max_file_mb);
	same_str(x->user, y->user);
	ck_assert_int_eq(x->cpu, y->cpu);
	ck_assert_int_eq(x->memory_mb, y->memory_mb);
	ck_assert_int_eq(x->memory_max_mb, y->memory_max_mb);
	ck_assert_int_eq(x->pids, y->pids);
	ck_assert_int_eq(x->csi.type, y->csi.type);
	same_str(x->csi.id, y->csi.id);
	ck_assert_int_eq(x->csi.health_timeout_ms, y->csi.health_timeout_ms);
	ck_assert_uint_eq(x->nmounts, y->nmounts);
	for (i = 0; i < x->nmounts; i++) {
		same_str(x->mounts[i].volume, y->mounts[i].volume);
		same_str(x->mounts[i].destination, y->mounts[i].destination);
		ck_assert_int_eq(x->mounts[i].read_only, y->mounts[i].read_only);
		ck_assert_uint_eq(x->mounts[i].volume_index,
		    y->mounts[i].volume_index);
	}
}

static void
same_alloc(const struct alloc *x, const struct alloc *y)
{
	const struct alloc_volume *v, *w;
	size_t i;

	same_str(x->id, y->id);
	same_str(x->ns, y->ns);
	ck_assert_int_eq(x->network_none, y->network_none);
	ck_assert_uint_eq(x->ntasks, y->ntasks);
	for (i = 0; i < x->ntasks; i++)
		same_task(&x->tasks[i], &y->tasks[i]);
	ck_assert_uint_eq(x->nvolumes, y->nvolumes);
	for (i = 0; i < x->nvolumes; i++) {
		v = &x->volumes[i];
		w = &y->volumes[i];
		same_str(v->name, w->name);
		same_str(v->source, w->source);
		ck_assert_int_eq(v->access_mode, w->access_mode);
		ck_assert_int_eq(v->attachment_mode, w->attachment_mode);
		ck_assert_int_eq(v->read_only, w->read_only);
		same_str(v->fs_type, w->fs_type);
		same_strv(v->mount_flags, v->nflags, w->mount_flags, w->nflags);
	}
}

/* text parses, writes out, parses back to the same alloc and text. */
static char *
round_trip(const char *text)
{
	struct alloc_problems p;
	struct alloc *a, *b;
	char *out, *again;

	ck_assert_int_eq(alloc_parse(text, strlen(text), &a, &p), 0);
	ck_assert_ptr_nonnull(out = alloc_to_json(a));
	if (alloc_parse(out, strlen(out), &b, &p) != 0)
		dump(&p);
	ck_assert_msg(b != NULL, "written form refused: %s", out);
	same_alloc(a, b);
	ck_assert_ptr_nonnull(again = alloc_to_json(b));
	ck_assert_str_eq(again, out);
	free(again);
	alloc_free(a);
	alloc_free(b);
	alloc_problems_free(&p);
	return out;
}

START_TEST(json_round_trip)
{
	char *out;

	out = round_trip(sq(DOC(TASK(""), "")));
	ck_assert_str_eq(out, "{\"id\":\"a1\",\"namespace\":\"default\","
	    "\"network\":{\"mode\":\"host\"},"
	    "\"tasks\":[{\"name\":\"t\",\"driver\":\"exec\",\"config\":{"
	    "\"command\":\"/bin/true\"},\"kill_timeout\":\"5s\",\"logs\":{"
	    "\"max_files\":5,\"max_file_size\":10},\"resources\":{\"cpu\":"
	    "100,\"memory\":300,\"memory_max\":300,\"pids\":512},"
	    "\"restart\":{"
	    "\"attempts\":2,\"interval\":\"30m\",\"delay\":\"15s\","
	    "\"mode\":\"fail\"}}]}");
	free(out);
	out = round_trip(sq(DOC(TASK(",'restart':{'attempts':0}"), "")));
	ck_assert_ptr_nonnull(strstr(out, "\"restart\":{\"attempts\":0,"
	    "\"interval\":\"30m\",\"delay\":\"15s\",\"mode\":\"fail\"}"));
	free(out);
	out = round_trip(sq(full_doc));
	/* Defaults written out, durations in their shortest form. */
	ck_assert_ptr_nonnull(strstr(out, "\"kill_timeout\":\"1m30s\""));
	ck_assert_ptr_nonnull(strstr(out, "{\"id\":\"lvm\",\"type\":\"node\","
	    "\"health_timeout\":\"30s\"}"));
	ck_assert_ptr_nonnull(strstr(out, "\"env\":{\"A\":\"1=2\",\"A0\":"
	    "\"x\",\"B\":\"2\"}"));
	ck_assert_ptr_nonnull(strstr(out, "{\"volume\":\"data\","
	    "\"destination\":\"data\",\"read_only\":false}"));
	ck_assert_ptr_nonnull(strstr(out, "\"caf\xc3\xa9\""));
	free(out);
}
END_TEST

/* A volume request's mount_group: a gid; 0 or absent is none. */
START_TEST(mount_group_read_and_refused)
{
	struct alloc *a;
	char *out;

	a = parse_ok(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_group':"
	    "4242") ",'w':" VOL("") ",'z':" VOL(",'mount_group':0") "}"));
	ck_assert_uint_eq(a->volumes[0].mount_group, 4242);
	ck_assert_uint_eq(a->volumes[1].mount_group, 0);
	ck_assert_uint_eq(a->volumes[2].mount_group, 0);
	alloc_free(a);
	a = parse_ok(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_group':"
	    "4294967294") "}"));
	ck_assert_uint_eq(a->volumes[0].mount_group, 4294967294u);
	alloc_free(a);
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_group':-1")
	    "}"), "volumes.v.mount_group: must be a group id from 0 to "
	    "4294967294, not -1");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_group':"
	    "4294967295") "}"), "volumes.v.mount_group: must be a group id "
	    "from 0 to 4294967294, not 4294967295");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_group':'100'")
	    "}"), "volumes.v.mount_group: must be a whole number (a group "
	    "id), not a string");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_group':1.5")
	    "}"), "volumes.v.mount_group: must be a whole number (a group "
	    "id), not a number");
	refused(DOC(TASK(""), ",'volumes':{'v':" VOL(",'mount_group':"
	    "'users'") "}"), "volumes.v.mount_group: must be a whole number "
	    "(a group id), not a string");
	/* Written back out when named, left out when none. */
	out = round_trip(sq(DOC(TASK(""), ",'volumes':{'v':" VOL(
	    ",'mount_group':4242") ",'w':" VOL("") "}")));
	ck_assert_ptr_nonnull(strstr(out, "\"read_only\":false,"
	    "\"mount_group\":4242"));
	ck_assert_ptr_null(strstr(strstr(out, "mount_group") + 1,
	    "mount_group"));
	free(out);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(alloc_access_mode_name(
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER),
	    "single-node-writer");
	ck_assert_str_eq(alloc_access_mode_name(
	    BERTH__ACCESS_MODE__ACCESS_MODE_MULTI_NODE_SINGLE_WRITER),
	    "multi-node-single-writer");
	ck_assert_str_eq(alloc_access_mode_name(
	    BERTH__ACCESS_MODE__ACCESS_MODE_UNKNOWN), "unknown");
	ck_assert_str_eq(alloc_attachment_mode_name(
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE),
	    "block-device");
	ck_assert_str_eq(alloc_attachment_mode_name(
	    (Berth__AttachmentMode)9), "unknown");
	ck_assert_str_eq(alloc_csi_type_name(ALLOC_CSI_CONTROLLER),
	    "controller");
	ck_assert_str_eq(alloc_csi_type_name(ALLOC_CSI_NONE), "unknown");
	ck_assert_str_eq(alloc_driver_name(ALLOC_DRIVER_PRIVILEGED),
	    "privileged");
}
END_TEST

static char *dir;

static void
setup(void)
{
	dir = harness_tmpdir("alloc");
}

static void
teardown(void)
{
	harness_rmtree(dir);
	free(dir);
}

/* The one problem of loading path, or NULL when it loads. */
static char *
load(const char *path)
{
	static char got[512];
	struct alloc_problems p;
	struct alloc *a;

	if (alloc_load_file(path, &a, &p) == 0) {
		ck_assert_uint_eq(p.n, 0);
		alloc_free(a);
		return NULL;
	}
	ck_assert_ptr_null(a);
	ck_assert_uint_eq(p.n, 1);
	snprintf(got, sizeof(got), "%s", p.items[0]);
	alloc_problems_free(&p);
	return got;
}

START_TEST(files)
{
	char path[512], want[640];
	char *big;
	FILE *f;

	snprintf(path, sizeof(path), "%s/a.json", dir);
	harness_write(path, sq(DOC(TASK(""), "")));
	ck_assert_ptr_null(load(path));
	harness_write(path, sq(DOC(TASK(""), ",'x':1")));
	ck_assert_str_eq(load(path), "x: unknown field; remove it");
	ck_assert_str_eq(load("/nonexistent/a.json"), "document: cannot read "
	    "\"/nonexistent/a.json\": No such file or directory");
	snprintf(want, sizeof(want), "document: cannot read \"%s\": not a "
	    "regular file", dir);
	ck_assert_str_eq(load(dir), want);
	/* A FIFO would block a reader forever: refused without a read. */
	snprintf(path, sizeof(path), "%s/fifo.json", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(want, sizeof(want), "document: cannot read \"%s\": not a "
	    "regular file", path);
	ck_assert_str_eq(load(path), want);
	snprintf(path, sizeof(path), "%s/big.json", dir);
	big = padded(ALLOC_MAX_BYTES + 1);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	ck_assert_uint_eq(fwrite(big, 1, ALLOC_MAX_BYTES + 1, f),
	    ALLOC_MAX_BYTES + 1);
	ck_assert_int_eq(fclose(f), 0);
	free(big);
	ck_assert_str_eq(load(path), "document: is 262145 bytes, over the "
	    "limit of 262144 bytes");
	ck_assert_int_eq(truncate(path, ALLOC_MAX_BYTES), 0);
	ck_assert_ptr_null(load(path));
}
END_TEST

/* ---- volume specs (PUT /v1/volume/<id>[/create]) ---- */

static struct alloc_volume_spec *
spec_parse(const char *doc, bool create, struct alloc_problems *p)
{
	struct alloc_volume_spec *s = NULL;
	const char *text = sq(doc);

	if (alloc_volume_spec_parse(text, strlen(text), "v1", create, &s,
	    p) == 0)
		ck_assert_ptr_nonnull(s);
	else
		ck_assert_ptr_null(s);
	return s;
}

START_TEST(volume_spec_read_back)
{
	struct alloc_problems p;
	struct alloc_volume_spec *s;

	s = spec_parse("{'id':'v1','plugin_id':'hp',"
	    "'access_mode':'single-node-writer','capacity_min':4096,"
	    "'mount_options':{'fs_type':'ext4','mount_flags':['noatime']},"
	    "'parameters':{'a=b':'c=d','empty':''}}", true, &p);
	if (s == NULL)
		dump(&p);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s->ns, "default");
	ck_assert_str_eq(s->plugin, "hp");
	ck_assert_ptr_null(s->external_id);
	ck_assert_int_eq(s->vol.access_mode,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER);
	ck_assert_int_eq(s->vol.attachment_mode,
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM);
	ck_assert_int_eq(s->capacity_min, 4096);
	ck_assert_str_eq(s->vol.fs_type, "ext4");
	ck_assert_uint_eq(s->vol.nflags, 1);
	ck_assert_str_eq(s->vol.mount_flags[0], "noatime");
	/* Key and value as written: an '=' in a key stays in the key. */
	ck_assert_uint_eq(s->nparams, 2);
	ck_assert_str_eq(s->params[0].key, "a=b");
	ck_assert_str_eq(s->params[0].value, "c=d");
	ck_assert_str_eq(s->params[1].key, "empty");
	ck_assert_str_eq(s->params[1].value, "");
	alloc_volume_spec_free(s);
	alloc_problems_free(&p);

	/* Create from a snapshot; its "snapshot" secret by name. */
	s = spec_parse("{'plugin_id':'hp','access_mode':'single-node-writer',"
	    "'snapshot_id':'snap-1','secrets':{'snapshot':'snapkey'}}", true,
	    &p);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s->snapshot_id, "snap-1");
	for (size_t i = 0; i < ALLOC_SECRET_CALLS; i++)
		if (strcmp(alloc_secret_calls[i], "snapshot") == 0)
			ck_assert_str_eq(s->secrets[i], "snapkey");
	alloc_volume_spec_free(s);
	alloc_problems_free(&p);

	s = spec_parse("{'namespace':'prod','plugin_id':'hp',"
	    "'external_id':'disk-7','access_mode':'multi-node-reader-only',"
	    "'attachment_mode':'block-device'}", false, &p);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s->ns, "prod");
	ck_assert_str_eq(s->external_id, "disk-7");
	ck_assert_int_eq(s->vol.attachment_mode,
	    BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_BLOCK_DEVICE);
	ck_assert_ptr_null(s->on_plugin_restart);	/* the default */
	alloc_volume_spec_free(s);
	alloc_problems_free(&p);

	s = spec_parse("{'plugin_id':'hp','access_mode':'single-node-writer',"
	    "'on_plugin_restart':'none'}", false, &p);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s->on_plugin_restart, "none");
	alloc_volume_spec_free(s);
	alloc_problems_free(&p);
}
END_TEST

static bool
has_problem(const struct alloc_problems *p, const char *want)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->items[i], want) == 0)
			return true;
	dump(p);
	return false;
}

START_TEST(volume_spec_refusals)
{
	static char doc[4096];
	struct alloc_problems p;
	char big[ALLOC_PARAM_VALUE_MAX_LEN + 2];

	/* A value one byte too long is refused, never cut. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(doc, sizeof(doc), "{'plugin_id':'hp','access_mode':"
	    "'single-node-writer','parameters':{'ok':'%.*s','big':'%s'}}",
	    ALLOC_PARAM_VALUE_MAX_LEN, big, big);
	ck_assert_ptr_null(spec_parse(doc, true, &p));
	ck_assert_uint_eq(p.n, 1);
	ck_assert(has_problem(&p, "parameters.big: is 1025 bytes, more than "
	    "the 1024 allowed"));
	alloc_problems_free(&p);

	/* Every problem at once, each at its path. */
	ck_assert_ptr_null(spec_parse("{'id':'v2','colour':1,"
	    "'access_mode':'some','parameters':{'n':1},"
	    "'external_id':'x','capacity_min':-1}", true, &p));
	ck_assert(has_problem(&p, "id: \"v2\" differs from the path's "
	    "\"v1\""));
	ck_assert(has_problem(&p, "colour: unknown field; remove it"));
	ck_assert(has_problem(&p, "parameters.n: must be a string, not a "
	    "number"));
	ck_assert(has_problem(&p, "capacity_min: must be at least 0 bytes, "
	    "not -1"));
	ck_assert(has_problem(&p, "external_id: unknown field; remove it"));
	ck_assert(has_problem(&p, "plugin_id: is required"));
	alloc_problems_free(&p);

	ck_assert_ptr_null(spec_parse("{'plugin_id':'hp','access_mode':"
	    "'single-node-writer','on_plugin_restart':'reboot'}", true, &p));
	ck_assert(has_problem(&p, "on_plugin_restart: must be one of "
	    "\"remount\", \"restart_tasks\", \"none\", not \"reboot\""));
	alloc_problems_free(&p);

	/* Register takes no create fields. */
	ck_assert_ptr_null(spec_parse("{'plugin_id':'hp','access_mode':"
	    "'single-node-writer','parameters':{}}", false, &p));
	ck_assert(has_problem(&p, "parameters: unknown field; remove it"));
	alloc_problems_free(&p);
	ck_assert_ptr_null(spec_parse("{'plugin_id':'hp','access_mode':"
	    "'single-node-writer','snapshot_id':'s1'}", false, &p));
	ck_assert(has_problem(&p, "snapshot_id: unknown field; remove it"));
	alloc_problems_free(&p);
	ck_assert_ptr_null(spec_parse("{'plugin_id':'hp','access_mode':"
	    "'single-node-writer','snapshot_id':'../s1'}", true, &p));
	ck_assert_uint_eq(p.n, 1);
	alloc_problems_free(&p);

	ck_assert_ptr_null(spec_parse("[1]", true, &p));
	ck_assert(has_problem(&p, "document: must be an object, not an "
	    "array"));
	alloc_problems_free(&p);
}
END_TEST

/* CSI 1.5's two modes, in an alloc and a volume document. */
START_TEST(csi15_access_modes_read)
{
	struct alloc_problems p;
	struct alloc_volume_spec *s;
	struct alloc *a;

	a = parse_ok(DOC(TASK(""), ",'volumes':{'v':{'type':'csi',"
	    "'source':'s1','access_mode':'single-node-single-writer',"
	    "'attachment_mode':'file-system'},'w':{'type':'csi','source':"
	    "'s2','access_mode':'single-node-multi-writer','attachment_mode':"
	    "'file-system','read_only':true}}"));
	ck_assert_int_eq(a->volumes[0].access_mode,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER);
	ck_assert_int_eq(a->volumes[1].access_mode,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_MULTI_WRITER);
	ck_assert(a->volumes[1].read_only);
	alloc_free(a);
	ck_assert_str_eq(alloc_access_mode_name(
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_MULTI_WRITER),
	    "single-node-multi-writer");

	s = spec_parse("{'plugin_id':'hp','access_mode':"
	    "'single-node-single-writer'}", true, &p);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(s->vol.access_mode,
	    BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_SINGLE_WRITER);
	alloc_volume_spec_free(s);
	alloc_problems_free(&p);
}
END_TEST

START_TEST(topology_request_read_back)
{
	struct alloc_problems p;
	struct alloc_volume_spec *s;

	s = spec_parse("{'plugin_id':'hp','access_mode':'single-node-writer',"
	    "'topology_request':{'required':[{'segments':{'zone':'a',"
	    "'rack':'r1'}},{'segments':{'zone':'b'}}],"
	    "'preferred':[{'segments':{'zone':'b'}}]}}", true, &p);
	if (s == NULL)
		dump(&p);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->nrequisite, 2);
	ck_assert_uint_eq(s->requisite[0].nseg, 2);
	ck_assert_str_eq(s->requisite[0].seg[0].key, "zone");
	ck_assert_str_eq(s->requisite[0].seg[0].value, "a");
	ck_assert_str_eq(s->requisite[0].seg[1].key, "rack");
	ck_assert_str_eq(s->requisite[0].seg[1].value, "r1");
	ck_assert_str_eq(s->requisite[1].seg[0].value, "b");
	ck_assert_uint_eq(s->npreferred, 1);
	ck_assert_str_eq(s->preferred[0].seg[0].value, "b");
	alloc_volume_spec_free(s);
	alloc_problems_free(&p);

	/* Register: where the volume is. */
	s = spec_parse("{'plugin_id':'hp','access_mode':'single-node-writer',"
	    "'topology_request':{'required':[{'segments':{'zone':'c'}}]}}",
	    false, &p);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->nrequisite, 1);
	ck_assert_str_eq(s->requisite[0].seg[0].value, "c");
	alloc_volume_spec_free(s);
	alloc_problems_free(&p);
}
END_TEST

START_TEST(topology_request_refusals)
{
	struct alloc_problems p;

	ck_assert_ptr_null(spec_parse("{'plugin_id':'hp','access_mode':"
	    "'single-node-writer','topology_request':{'required':"
	    "[{'segments':{}},{'zone':'a'},{'segments':{'z':1}}],"
	    "'wanted':[]}}", true, &p));
	ck_assert(has_problem(&p, "topology_request.required[0].segments: "
	    "must name at least one segment"));
	ck_assert(has_problem(&p, "topology_request.required[1].zone: "
	    "unknown field; remove it"));
	ck_assert(has_problem(&p, "topology_request.required[1].segments: "
	    "is required"));
	ck_assert(has_problem(&p, "topology_request.required[2].segments.z: "
	    "must be a string, not a number"));
	ck_assert(has_problem(&p, "topology_request.wanted: unknown field; "
	    "remove it"));
	alloc_problems_free(&p);

	/* Register says where the volume is: nothing to prefer. */
	ck_assert_ptr_null(spec_parse("{'plugin_id':'hp','access_mode':"
	    "'single-node-writer','topology_request':{'preferred':[]}}",
	    false, &p));
	ck_assert(has_problem(&p, "topology_request.preferred: unknown "
	    "field; remove it"));
	ck_assert(has_problem(&p, "topology_request.required: is required"));
	alloc_problems_free(&p);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("alloc");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, every_field_read_back);
	tcase_add_test(tc, defaults_applied);
	tcase_add_test(tc, top_level_refusals);
	tcase_add_test(tc, task_refusals);
	tcase_add_test(tc, env_refusals);
	tcase_add_test(tc, isolation_refusals);
	tcase_add_test(tc, restart_read_and_refused);
	tcase_add_test(tc, restart_mode_defaults);
	tcase_add_test(tc, csi_plugin_refusals);
	tcase_add_test(tc, csi_plugin_endpoint_args);
	tcase_add_test(tc, csi_plugin_pairs);
	tcase_add_test(tc, mount_refusals);
	tcase_add_test(tc, volume_refusals);
	tcase_add_test(tc, mount_options_refusals);
	tcase_add_test(tc, counts_are_capped);
	tcase_add_test(tc, all_problems_at_once_in_document_order);
	tcase_add_test(tc, problems_are_capped);
	tcase_add_test(tc, size_is_capped_before_parsing);
	tcase_add_test(tc, duplicate_keys_refused);
	tcase_add_test(tc, json_round_trip);
	tcase_add_test(tc, mount_group_read_and_refused);
	tcase_add_test(tc, names);
	tcase_add_test(tc, files);
	tcase_add_test(tc, volume_spec_read_back);
	tcase_add_test(tc, volume_spec_refusals);
	tcase_add_test(tc, csi15_access_modes_read);
	tcase_add_test(tc, topology_request_read_back);
	tcase_add_test(tc, topology_request_refusals);
	return harness_run("alloc", tc);
}
