/*
 * make_corpus.c: writes fuzz/corpus/request/ from real encoded requests,
 * one per mounter verb (and a few refused ones), as the supervisor would
 * send them. Run by scripts/fuzz.sh when the corpus is missing; the
 * result is committed.
 */
#include <stdio.h>
#include <string.h>

#include "ipc.pb-c.h"

#define B(s) ((ProtobufCBinaryData){ strlen(s), (uint8_t *)(s) })

static void
put(const char *dir, const char *name, Berth__Envelope *env, uint64_t id)
{
	uint8_t buf[4096];
	char path[512];
	size_t n;
	FILE *f;

	env->version = 1;
	env->kind = BERTH__KIND__KIND_REQUEST;
	env->request_id = id;
	n = berth__envelope__pack(env, buf);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "wb")) != NULL) {
		fwrite(buf, 1, n, f);
		fclose(f);
	}
}

int
main(int argc, char **argv)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__VolumeUsage u = BERTH__VOLUME_USAGE__INIT;
	Berth__PreparePlugin pp = BERTH__PREPARE_PLUGIN__INIT;
	Berth__PrepareVolume pv = BERTH__PREPARE_VOLUME__INIT;
	Berth__BindVolume bv = BERTH__BIND_VOLUME__INIT;
	Berth__UnbindVolume ub = BERTH__UNBIND_VOLUME__INIT;
	Berth__CleanupAlloc ca = BERTH__CLEANUP_ALLOC__INIT;
	Berth__StartPlugin sp = BERTH__START_PLUGIN__INIT;
	Berth__AdoptPlugin ap = BERTH__ADOPT_PLUGIN__INIT;
	Berth__SignalPlugin sg = BERTH__SIGNAL_PLUGIN__INIT;
	Berth__PluginHandle h = BERTH__PLUGIN_HANDLE__INIT;
	Berth__PrepareTask pt = BERTH__PREPARE_TASK__INIT;
	Berth__StartTask st = BERTH__START_TASK__INIT;
	const char *dir = argc > 1 ? argv[1] : ".";

	u.attachment = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	u.access = BERTH__ACCESS_MODE__ACCESS_MODE_SINGLE_NODE_WRITER;
	pp.plugin_type = B("hostpath");
	pp.plugin_id = B("hp");
	pp.alloc_id = B("5f6a8f5e-3c1b-4d2a-9b7e-0a1b2c3d4e5f");
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_PLUGIN;
	env.prepare_plugin = &pp;
	put(dir, "prepare_plugin", &env, 1);
	pv.dir = BERTH__VOLUME_DIR__VOLUME_DIR_STAGING;
	pv.plugin_type = B("hostpath");
	pv.plugin_id = B("hp");
	pv.volume_ns = B("default");
	pv.volume_id = B("vol-1");
	pv.usage = &u;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_VOLUME;
	env.prepare_volume = &pv;
	put(dir, "prepare_staging", &env, 2);
	pv.dir = BERTH__VOLUME_DIR__VOLUME_DIR_PUBLISH;
	pv.volume_ns = B("");
	pv.alloc_id = pp.alloc_id;
	pv.plugin_alloc = pp.alloc_id;
	put(dir, "prepare_publish", &env, 3);
	bv.plugin_type = B("hostpath");
	bv.plugin_id = B("hp");
	bv.alloc_id = pp.alloc_id;
	bv.volume_id = B("vol-1");
	bv.usage = &u;
	bv.task = B("web");
	bv.name = B("data");
	bv.read_only = 1;
	bv.group = 60000;
	env.body_case = BERTH__ENVELOPE__BODY_BIND_VOLUME;
	env.bind_volume = &bv;
	put(dir, "bind_volume", &env, 4);
	bv.name = B("..");
	put(dir, "bind_volume_dotdot", &env, 5);
	bv.name = (ProtobufCBinaryData){ 7, (uint8_t *)"ab\0../x" };
	put(dir, "bind_volume_nul", &env, 6);
	pt.alloc_id = pp.alloc_id;
	pt.task = B("web");
	pt.owner_uid = 1000;
	pt.owner_gid = 1000;
	env.body_case = BERTH__ENVELOPE__BODY_PREPARE_TASK;
	env.prepare_task = &pt;
	put(dir, "prepare_task", &env, 12);
	ub.alloc_id = pp.alloc_id;
	ub.task = B("web");
	ub.name = B("data");
	env.body_case = BERTH__ENVELOPE__BODY_UNBIND_VOLUME;
	env.unbind_volume = &ub;
	put(dir, "unbind_volume", &env, 7);
	ca.alloc_id = pp.alloc_id;
	env.body_case = BERTH__ENVELOPE__BODY_CLEANUP_ALLOC;
	env.cleanup_alloc = &ca;
	put(dir, "cleanup_alloc", &env, 8);
	sp.definition = B("hostpath");
	sp.plugin_type = B("hostpath");
	sp.plugin_id = B("hp");
	sp.alloc_id = pp.alloc_id;
	env.body_case = BERTH__ENVELOPE__BODY_START_PLUGIN;
	env.start_plugin = &sp;
	put(dir, "start_plugin", &env, 9);
	h.pid = 4242;
	h.start_time = 123456;
	ap.handle = &h;
	env.body_case = BERTH__ENVELOPE__BODY_ADOPT_PLUGIN;
	env.adopt_plugin = &ap;
	put(dir, "adopt_plugin", &env, 10);
	sg.handle = &h;
	sg.signal = BERTH__PLUGIN_SIGNAL__PLUGIN_SIGNAL_TERM;
	env.body_case = BERTH__ENVELOPE__BODY_SIGNAL_PLUGIN;
	env.signal_plugin = &sg;
	put(dir, "signal_plugin", &env, 11);
	st.alloc_id = pp.alloc_id;
	st.task = B("web");
	st.uid = st.gid = 70001;
	st.memory_bytes = 64 << 20;
	st.pids_max = 100;
	env.body_case = BERTH__ENVELOPE__BODY_START_TASK;
	env.start_task = &st;
	put(dir, "start_task", &env, 12);
	st.user = B("svc");
	st.uid = st.gid = 70500;
	put(dir, "start_task_user", &env, 13);
	st.uid = 0;
	put(dir, "start_task_root", &env, 14);
	st.user = B("");
	st.uid = st.gid = 70002;
	st.plugin_type = B("node");
	st.plugin_id = B("hp");
	put(dir, "start_task_plugin", &env, 15);
	return 0;
}
