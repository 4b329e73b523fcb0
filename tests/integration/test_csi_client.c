/*
 * test_csi_client.c: the supervisor's CSI client against the real
 * berth-csi-hostpath plugin, on a unix socket in a temporary directory,
 * in a private mount namespace: identity and fingerprint calls, a volume
 * staged and published with real bind mounts and nothing left after,
 * deadlines, retries, and the plugin faults that real plugins commit.
 *
 * Each test runs in check's forked child, whose teardown stops the plugin
 * by pid (SIGTERM, then SIGKILL) and removes its directory. A failed
 * assertion ends the child with _exit(), skipping that teardown: check
 * then kills the child's process group (the plugin with it), the private
 * mount namespace dies with its last process, and the unchecked
 * teardown, in the parent, removes the suite's directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <event2/event.h>

#include "csi_client.h"
#include "harness.h"

#define PLUGIN_START_MS	10000

/* The generated enum names, shortened. */
#define SVC(t)	CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__##t
#define NODE(t)	CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__##t
#define CTL(t)	CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__##t

static char *suite_dir;		/* made by the parent, holds each test's */

static struct {
	char *dir;
	char endpoint[300];
	char sock[256];
	char state[256];
	struct proc plugin;
	bool plugin_started;
	const char *plugin_args[12];
	struct event_base *base;
	struct csi_client *client;
	struct csi_conn *conn;
} fx;

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Is path a mount point in this namespace, per /proc/self/mountinfo? */
static bool
mounted(const char *path)
{
	char line[4096], point[4096];
	bool found = false;
	FILE *f;

	if ((f = fopen("/proc/self/mountinfo", "r")) == NULL)
		ck_abort_msg("open mountinfo: %s", strerror(errno));
	while (!found && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
		    strcmp(point, path) == 0)
			found = true;
	fclose(f);
	return found;
}

/* How many mounts lie at or under prefix? */
static int
mounts_under(const char *prefix)
{
	char line[4096], point[4096];
	size_t n = strlen(prefix);
	int count = 0;
	FILE *f;

	if ((f = fopen("/proc/self/mountinfo", "r")) == NULL)
		ck_abort_msg("open mountinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
		    strncmp(point, prefix, n) == 0 &&
		    (point[n] == '/' || point[n] == '\0'))
			count++;
	fclose(f);
	return count;
}

static void
plugin_stop(void)
{
	if (!fx.plugin_started)
		return;
	if (!fx.plugin.reaped) {
		kill(fx.plugin.pid, SIGTERM);
		proc_wait_exit(&fx.plugin, 5000);
	}
	proc_kill(&fx.plugin);
	fx.plugin_started = false;
}

static void
cleanup(void)
{
	char path[512];
	int i;

	if (fx.client != NULL)
		csi_client_free(fx.client);
	fx.client = NULL;
	plugin_stop();
	if (fx.base != NULL)
		event_base_free(fx.base);
	fx.base = NULL;
	if (fx.dir == NULL)
		return;
	/* Whatever a failed test left mounted, innermost first. */
	for (i = 0; i < 16 && mounts_under(fx.dir) > 0; i++) {
		snprintf(path, sizeof(path), "%s/target/vol", fx.dir);
		umount2(path, MNT_DETACH);
		snprintf(path, sizeof(path), "%s/staging/vol", fx.dir);
		umount2(path, MNT_DETACH);
	}
	harness_rmtree(fx.dir);
	free(fx.dir);
	fx.dir = NULL;
}

/* Start the plugin with extra flags (NULL-terminated), wait for it. */
static void
plugin_start_nowait(const char *const *extra)
{
	char *argv[24];
	int n = 0;

	argv[n++] = (char *)harness_bin("berth-csi-hostpath");
	argv[n++] = "--node-id";
	argv[n++] = "node-1";
	argv[n++] = "--state-dir";
	argv[n++] = fx.state;
	while (extra != NULL && *extra != NULL && n < 22)
		argv[n++] = (char *)*extra++;
	argv[n] = NULL;
	setenv("CSI_ENDPOINT", fx.endpoint, 1);
	proc_start(&fx.plugin, argv, -1);
	fx.plugin_started = true;
}

static void
plugin_start(const char *const *extra)
{
	plugin_start_nowait(extra);
	ck_assert_msg(proc_wait_log(&fx.plugin, "listening on",
	    PLUGIN_START_MS), "plugin did not start: %s", fx.plugin.log);
}

/* Private mounts, a directory, a client and a conn; no plugin yet. */
static void
setup(void)
{
	char tmpl[512];

	harness_private_mounts();
	memset(&fx, 0, sizeof(fx));
	snprintf(tmpl, sizeof(tmpl), "%s/t-XXXXXX", suite_dir);
	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	ck_assert_ptr_nonnull(fx.dir = strdup(tmpl));
	snprintf(fx.sock, sizeof(fx.sock), "%s/csi.sock", fx.dir);
	snprintf(fx.endpoint, sizeof(fx.endpoint), "unix://%s", fx.sock);
	snprintf(fx.state, sizeof(fx.state), "%s/state", fx.dir);
	ck_assert_ptr_nonnull(fx.base = event_base_new());
	ck_assert_ptr_nonnull(fx.client = csi_client_new(fx.base));
	ck_assert_ptr_nonnull(fx.conn = csi_conn_open(fx.client,
	    fx.endpoint));
}

static void
teardown(void)
{
	cleanup();
}

/* Call and expect a code; returns the reply (NULL unless CSI_OK). */
static ProtobufCMessage *
call(enum csi_method m, const ProtobufCMessage *req, enum csi_code want,
    struct csi_result *res)
{
	struct csi_result local;
	ProtobufCMessage *reply;

	if (res == NULL)
		res = &local;
	csi_call_sync(fx.conn, m, req, 5000, &csi_retry_default, res, &reply);
	ck_assert_msg(res->code == want, "%s: got %s (%s), want %s",
	    csi_method_name(m), csi_code_name(res->code), res->message,
	    csi_code_name(want));
	return reply;
}

/* The same, for when the reply does not matter. */
static void
expect(enum csi_method m, const ProtobufCMessage *req, enum csi_code want,
    struct csi_result *res)
{
	ProtobufCMessage *reply = call(m, req, want, res);

	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
}

static void
mount_capability(Csi__V1__VolumeCapability *cap,
    Csi__V1__VolumeCapability__MountVolume *mnt,
    Csi__V1__VolumeCapability__AccessMode *mode)
{
	csi__v1__volume_capability__init(cap);
	csi__v1__volume_capability__mount_volume__init(mnt);
	csi__v1__volume_capability__access_mode__init(mode);
	mode->mode =
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER;
	cap->access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
	cap->mount = mnt;
	cap->access_mode = mode;
}

START_TEST(identity_and_fingerprint)
{
	Csi__V1__ProbeRequest probe = CSI__V1__PROBE_REQUEST__INIT;
	Csi__V1__GetPluginInfoRequest info = CSI__V1__GET_PLUGIN_INFO_REQUEST__INIT;
	Csi__V1__GetPluginCapabilitiesRequest pcaps =
	    CSI__V1__GET_PLUGIN_CAPABILITIES_REQUEST__INIT;
	Csi__V1__NodeGetCapabilitiesRequest ncaps =
	    CSI__V1__NODE_GET_CAPABILITIES_REQUEST__INIT;
	Csi__V1__ControllerGetCapabilitiesRequest ccaps =
	    CSI__V1__CONTROLLER_GET_CAPABILITIES_REQUEST__INIT;
	Csi__V1__NodeGetInfoRequest ninfo = CSI__V1__NODE_GET_INFO_REQUEST__INIT;
	Csi__V1__ProbeResponse *pr;
	Csi__V1__GetPluginInfoResponse *ir;
	Csi__V1__GetPluginCapabilitiesResponse *pc;
	Csi__V1__NodeGetCapabilitiesResponse *nc;
	Csi__V1__ControllerGetCapabilitiesResponse *cc;
	Csi__V1__NodeGetInfoResponse *ni;
	struct csi_result res;

	plugin_start(NULL);
	pr = (void *)call(CSI_PROBE, &probe.base, CSI_OK, &res);
	ck_assert_int_eq(res.attempts, 1);
	ck_assert_int_eq(csi_probe_ready(pr), CSI_READY_TRUE);
	protobuf_c_message_free_unpacked(&pr->base, NULL);

	ir = (void *)call(CSI_GET_PLUGIN_INFO, &info.base, CSI_OK, NULL);
	ck_assert_str_eq(ir->name, "hostpath.csi.berth.dev");
	ck_assert_str_ne(ir->vendor_version, "");
	protobuf_c_message_free_unpacked(&ir->base, NULL);

	pc = (void *)call(CSI_GET_PLUGIN_CAPABILITIES, &pcaps.base, CSI_OK,
	    NULL);
	ck_assert(csi_plugin_has_service(pc,
	    SVC(CONTROLLER_SERVICE)));
	ck_assert(csi_plugin_has_service(pc,
	    SVC(VOLUME_ACCESSIBILITY_CONSTRAINTS)));
	protobuf_c_message_free_unpacked(&pc->base, NULL);

	nc = (void *)call(CSI_NODE_GET_CAPABILITIES, &ncaps.base, CSI_OK, NULL);
	ck_assert(csi_node_has_rpc(nc,
	    NODE(STAGE_UNSTAGE_VOLUME)));
	ck_assert(csi_node_has_rpc(nc,
	    NODE(GET_VOLUME_STATS)));
	ck_assert(csi_node_has_rpc(nc,
	    NODE(VOLUME_CONDITION)));
	ck_assert(csi_node_has_rpc(nc,
	    NODE(VOLUME_MOUNT_GROUP)));
	ck_assert(csi_node_has_rpc(nc,
	    NODE(SINGLE_NODE_MULTI_WRITER)));
	ck_assert(csi_node_has_rpc(nc,
	    NODE(EXPAND_VOLUME)));
	protobuf_c_message_free_unpacked(&nc->base, NULL);

	cc = (void *)call(CSI_CONTROLLER_GET_CAPABILITIES, &ccaps.base, CSI_OK,
	    NULL);
	ck_assert(csi_controller_has_rpc(cc,
	    CTL(CREATE_DELETE_VOLUME)));
	ck_assert(!csi_controller_has_rpc(cc,
	    CTL(PUBLISH_UNPUBLISH_VOLUME)));
	protobuf_c_message_free_unpacked(&cc->base, NULL);

	ni = (void *)call(CSI_NODE_GET_INFO, &ninfo.base, CSI_OK, NULL);
	ck_assert_str_eq(ni->node_id, "node-1");
	ck_assert_int_eq(ni->max_volumes_per_node, 1024);
	ck_assert_ptr_nonnull(ni->accessible_topology);
	ck_assert_uint_eq(ni->accessible_topology->n_segments, 1);
	ck_assert_str_eq(ni->accessible_topology->segments[0]->key,
	    "topology.hostpath.csi.berth.dev/node");
	ck_assert_str_eq(ni->accessible_topology->segments[0]->value,
	    "node-1");
	protobuf_c_message_free_unpacked(&ni->base, NULL);
}
END_TEST

START_TEST(errors_are_typed_and_not_retried)
{
	Csi__V1__NodeStageVolumeRequest stage =
	    CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
	Csi__V1__ValidateVolumeCapabilitiesRequest vvc =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_REQUEST__INIT;
	Csi__V1__VolumeCapability cap, *caps[1] = { &cap };
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;
	Csi__V1__ProbeRequest probe = CSI__V1__PROBE_REQUEST__INIT;
	struct csi_result res;

	plugin_start(NULL);
	/* Missing staging path: the plugin's INVALID_ARGUMENT, sent once. */
	stage.volume_id = "vol";
	expect(CSI_NODE_STAGE_VOLUME, &stage.base, CSI_INVALID_ARGUMENT, &res);
	ck_assert_int_eq(res.origin, CSI_FROM_PLUGIN);
	ck_assert_int_eq(res.attempts, 1);

	mount_capability(&cap, &mnt, &mode);
	vvc.volume_id = "no-such-volume";
	vvc.n_volume_capabilities = 1;
	vvc.volume_capabilities = caps;
	expect(CSI_VALIDATE_VOLUME_CAPABILITIES, &vvc.base, CSI_NOT_FOUND, &res);
	ck_assert_int_eq(res.attempts, 1);

	/* A request of the wrong type never leaves the client. */
	expect(CSI_NODE_GET_INFO, &probe.base, CSI_INVALID_ARGUMENT, &res);
	ck_assert_int_eq(res.origin, CSI_FROM_CLIENT);
	ck_assert_int_eq(res.attempts, 0);
}
END_TEST

START_TEST(node_mode_serves_no_controller)
{
	static const char *args[] = { "--mode", "node", NULL };
	Csi__V1__GetPluginCapabilitiesRequest pcaps =
	    CSI__V1__GET_PLUGIN_CAPABILITIES_REQUEST__INIT;
	Csi__V1__DeleteVolumeRequest del = CSI__V1__DELETE_VOLUME_REQUEST__INIT;
	Csi__V1__GetPluginCapabilitiesResponse *pc;

	plugin_start(args);
	pc = (void *)call(CSI_GET_PLUGIN_CAPABILITIES, &pcaps.base, CSI_OK,
	    NULL);
	ck_assert(!csi_plugin_has_service(pc,
	    SVC(CONTROLLER_SERVICE)));
	protobuf_c_message_free_unpacked(&pc->base, NULL);
	del.volume_id = "vol";
	expect(CSI_DELETE_VOLUME, &del.base, CSI_UNIMPLEMENTED, NULL);
}
END_TEST

START_TEST(volume_lifecycle_with_real_mounts)
{
	Csi__V1__CreateVolumeRequest create = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__ValidateVolumeCapabilitiesRequest vvc =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_REQUEST__INIT;
	Csi__V1__NodeStageVolumeRequest stage =
	    CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
	Csi__V1__NodePublishVolumeRequest publish =
	    CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;
	Csi__V1__NodeGetVolumeStatsRequest stats =
	    CSI__V1__NODE_GET_VOLUME_STATS_REQUEST__INIT;
	Csi__V1__NodeUnpublishVolumeRequest unpublish =
	    CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;
	Csi__V1__NodeUnstageVolumeRequest unstage =
	    CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;
	Csi__V1__DeleteVolumeRequest del = CSI__V1__DELETE_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeCapability cap, *caps[1] = { &cap };
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;
	Csi__V1__CreateVolumeResponse *cr;
	Csi__V1__ValidateVolumeCapabilitiesResponse *vr;
	Csi__V1__NodeGetVolumeStatsResponse *sr;
	char staging[512], target[512], voldir[512], file[600];
	struct stat st;
	int i, fd;

	plugin_start(NULL);
	snprintf(staging, sizeof(staging), "%s/staging", fx.dir);
	ck_assert_int_eq(mkdir(staging, 0755), 0);
	snprintf(staging, sizeof(staging), "%s/staging/vol", fx.dir);
	ck_assert_int_eq(mkdir(staging, 0755), 0);	/* as berth's mounter */
	snprintf(target, sizeof(target), "%s/target", fx.dir);
	ck_assert_int_eq(mkdir(target, 0755), 0);
	snprintf(target, sizeof(target), "%s/target/vol", fx.dir);
	snprintf(voldir, sizeof(voldir), "%s/volumes/vol", fx.state);
	mount_capability(&cap, &mnt, &mode);

	/* Create twice: one volume, the same id. */
	create.name = "vol";
	create.n_volume_capabilities = 1;
	create.volume_capabilities = caps;
	for (i = 0; i < 2; i++) {
		cr = (void *)call(CSI_CREATE_VOLUME, &create.base, CSI_OK, NULL);
		ck_assert_ptr_nonnull(cr->volume);
		ck_assert_str_eq(cr->volume->volume_id, "vol");
		ck_assert_uint_eq(cr->volume->n_accessible_topology, 1);
		protobuf_c_message_free_unpacked(&cr->base, NULL);
	}
	ck_assert_int_eq(stat(voldir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));

	vvc.volume_id = "vol";
	vvc.n_volume_capabilities = 1;
	vvc.volume_capabilities = caps;
	vr = (void *)call(CSI_VALIDATE_VOLUME_CAPABILITIES, &vvc.base, CSI_OK,
	    NULL);
	ck_assert_ptr_nonnull(vr->confirmed);
	ck_assert_uint_eq(vr->confirmed->n_volume_capabilities, 1);
	ck_assert_int_eq(csi_validation_check(&vvc, vr, NULL, 0),
	    CSI_VALIDATION_CONFIRMED);
	protobuf_c_message_free_unpacked(&vr->base, NULL);

	/* Stage (twice: idempotent), then see the volume through it. */
	stage.volume_id = "vol";
	stage.staging_target_path = staging;
	stage.volume_capability = &cap;
	expect(CSI_NODE_STAGE_VOLUME, &stage.base, CSI_OK, NULL);
	expect(CSI_NODE_STAGE_VOLUME, &stage.base, CSI_OK, NULL);
	ck_assert(mounted(staging));
	ck_assert_int_eq(mounts_under(staging), 1);
	snprintf(file, sizeof(file), "%s/hello", staging);
	harness_write(file, "hello\n");
	snprintf(file, sizeof(file), "%s/hello", voldir);
	ck_assert_int_eq(access(file, F_OK), 0);

	/* Publish read-only at a target the plugin must create. */
	publish.volume_id = "vol";
	publish.staging_target_path = staging;
	publish.target_path = target;
	publish.volume_capability = &cap;
	publish.readonly = true;
	expect(CSI_NODE_PUBLISH_VOLUME, &publish.base, CSI_OK, NULL);
	expect(CSI_NODE_PUBLISH_VOLUME, &publish.base, CSI_OK, NULL);
	ck_assert(mounted(target));
	ck_assert_int_eq(mounts_under(target), 1);
	snprintf(file, sizeof(file), "%s/hello", target);
	ck_assert_int_eq(access(file, F_OK), 0);
	snprintf(file, sizeof(file), "%s/new", target);
	fd = open(file, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_lt(fd, 0);
	ck_assert_int_eq(errno, EROFS);
	/* The same target asked read-write is a conflict. */
	publish.readonly = false;
	expect(CSI_NODE_PUBLISH_VOLUME, &publish.base, CSI_ALREADY_EXISTS, NULL);

	stats.volume_id = "vol";
	stats.volume_path = target;
	sr = (void *)call(CSI_NODE_GET_VOLUME_STATS, &stats.base, CSI_OK, NULL);
	ck_assert_uint_eq(sr->n_usage, 2);
	ck_assert_int_eq(sr->usage[0]->unit, CSI__V1__VOLUME_USAGE__UNIT__BYTES);
	ck_assert_int_gt(sr->usage[0]->total, 0);
	/* VOLUME_CONDITION: the volume's directory is there. */
	ck_assert_ptr_nonnull(sr->volume_condition);
	ck_assert(!sr->volume_condition->abnormal);
	protobuf_c_message_free_unpacked(&sr->base, NULL);

	/* Undo in order; each twice, as a retrying CO would. */
	unpublish.volume_id = "vol";
	unpublish.target_path = target;
	expect(CSI_NODE_UNPUBLISH_VOLUME, &unpublish.base, CSI_OK, NULL);
	expect(CSI_NODE_UNPUBLISH_VOLUME, &unpublish.base, CSI_OK, NULL);
	ck_assert(!mounted(target));
	ck_assert_int_eq(access(target, F_OK), -1);	/* it made it */

	unstage.volume_id = "vol";
	unstage.staging_target_path = staging;
	expect(CSI_NODE_UNSTAGE_VOLUME, &unstage.base, CSI_OK, NULL);
	expect(CSI_NODE_UNSTAGE_VOLUME, &unstage.base, CSI_OK, NULL);
	ck_assert(!mounted(staging));
	ck_assert_int_eq(access(staging, F_OK), 0);	/* not the plugin's */

	del.volume_id = "vol";
	expect(CSI_DELETE_VOLUME, &del.base, CSI_OK, NULL);
	expect(CSI_DELETE_VOLUME, &del.base, CSI_OK, NULL);
	ck_assert_int_eq(access(voldir, F_OK), -1);
	ck_assert_int_eq(mounts_under(fx.dir), 0);

	/* Unknown volumes: NOT_FOUND, not success. */
	expect(CSI_NODE_UNSTAGE_VOLUME, &unstage.base, CSI_NOT_FOUND, NULL);
}
END_TEST

START_TEST(deadline_expires_against_slow_start)
{
	static const char *args[] = { "--fault-slow-start-ms", "3000", NULL };
	Csi__V1__ProbeRequest probe = CSI__V1__PROBE_REQUEST__INIT;
	struct csi_retry bounded = { 0, 50, 200, 900 };
	ProtobufCMessage *reply;
	struct csi_result res;
	long t0, took;

	plugin_start(args);
	t0 = now_ms();
	csi_call_sync(fx.conn, CSI_PROBE, &probe.base, 300, NULL, &res, &reply);
	took = now_ms() - t0;
	ck_assert_ptr_null(reply);
	ck_assert_msg(res.code == CSI_DEADLINE_EXCEEDED, "got %s (%s)",
	    csi_code_name(res.code), res.message);
	ck_assert_int_eq(res.attempts, 1);
	ck_assert_int_ge(took, 250);
	ck_assert_int_lt(took, 2000);

	/* Retried within the overall bound, and no longer than it. */
	t0 = now_ms();
	csi_call_sync(fx.conn, CSI_PROBE, &probe.base, 300, &bounded, &res,
	    &reply);
	took = now_ms() - t0;
	ck_assert_ptr_null(reply);
	ck_assert_int_eq(res.code, CSI_DEADLINE_EXCEEDED);
	ck_assert_int_ge(res.attempts, 2);
	ck_assert_int_lt(took, 1500);
}
END_TEST

START_TEST(retries_outlast_a_slow_start)
{
	static const char *args[] = { "--fault-slow-start-ms", "1000", NULL };
	Csi__V1__ProbeRequest probe = CSI__V1__PROBE_REQUEST__INIT;
	struct csi_retry patient = { 0, 50, 200, 15000 };
	ProtobufCMessage *reply;
	struct csi_result res;

	plugin_start(args);
	csi_call_sync(fx.conn, CSI_PROBE, &probe.base, 300, &patient, &res,
	    &reply);
	ck_assert_msg(res.code == CSI_OK, "got %s (%s)",
	    csi_code_name(res.code), res.message);
	ck_assert_int_ge(res.attempts, 2);
	protobuf_c_message_free_unpacked(reply, NULL);
}
END_TEST

struct many {
	int done;
	int ok;
};

static void
many_cb(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	struct many *m = arg;

	m->done++;
	if (res->code == CSI_OK && reply != NULL)
		m->ok++;
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
}

START_TEST(many_calls_in_flight)
{
	Csi__V1__NodeGetInfoRequest ninfo = CSI__V1__NODE_GET_INFO_REQUEST__INIT;
	struct many m = { 0, 0 };
	int i;

	plugin_start(NULL);
	for (i = 0; i < 64; i++)
		csi_call(fx.conn, CSI_NODE_GET_INFO, &ninfo.base, 5000,
		    &csi_retry_default, many_cb, &m);
	ck_assert_int_eq(m.done, 0);
	while (m.done < 64)
		event_base_loop(fx.base, EVLOOP_ONCE);
	ck_assert_int_eq(m.ok, 64);
}
END_TEST

START_TEST(validation_mismatch_is_caught)
{
	Csi__V1__ValidateVolumeCapabilitiesRequest req =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_REQUEST__INIT;
	Csi__V1__ValidateVolumeCapabilitiesResponse reply =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__ValidateVolumeCapabilitiesResponse__Confirmed confirmed =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_RESPONSE__CONFIRMED__INIT;
	Csi__V1__VolumeCapability want, got, *wants[1] = { &want },
	    *gots[1] = { &got };
	Csi__V1__VolumeCapability__MountVolume wmnt, gmnt;
	Csi__V1__VolumeCapability__AccessMode wmode, gmode;
	Csi__V1__VolumeCapability__BlockVolume block =
	    CSI__V1__VOLUME_CAPABILITY__BLOCK_VOLUME__INIT;
	char *wflags[] = { "noatime" }, *gflags[] = { "nodev", "noatime" };
	char why[256];

	mount_capability(&want, &wmnt, &wmode);
	mount_capability(&got, &gmnt, &gmode);
	wmnt.fs_type = "ext4";
	wmnt.n_mount_flags = 1;
	wmnt.mount_flags = wflags;
	gmnt.fs_type = "ext4";
	gmnt.n_mount_flags = 2;
	gmnt.mount_flags = gflags;
	req.n_volume_capabilities = 1;
	req.volume_capabilities = wants;
	reply.confirmed = &confirmed;
	confirmed.n_volume_capabilities = 1;
	confirmed.volume_capabilities = gots;
	ck_assert_int_eq(csi_validation_check(&req, &reply, why, sizeof(why)),
	    CSI_VALIDATION_CONFIRMED);

	gmode.mode =
	    CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY;
	ck_assert_int_eq(csi_validation_check(&req, &reply, why, sizeof(why)),
	    CSI_VALIDATION_MISMATCH);
	ck_assert_str_eq(why, "requested capability 0 is not among the 1 "
	    "the plugin confirmed");
	gmode.mode = wmode.mode;

	gmnt.fs_type = "xfs";
	ck_assert_int_eq(csi_validation_check(&req, &reply, NULL, 0),
	    CSI_VALIDATION_MISMATCH);
	gmnt.fs_type = "ext4";

	gmnt.n_mount_flags = 1;		/* "nodev" only */
	ck_assert_int_eq(csi_validation_check(&req, &reply, NULL, 0),
	    CSI_VALIDATION_MISMATCH);
	gmnt.n_mount_flags = 2;

	got.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK;
	got.block = &block;
	ck_assert_int_eq(csi_validation_check(&req, &reply, NULL, 0),
	    CSI_VALIDATION_MISMATCH);

	/* Present but empty confirms nothing; absent is no verdict. */
	confirmed.n_volume_capabilities = 0;
	ck_assert_int_eq(csi_validation_check(&req, &reply, NULL, 0),
	    CSI_VALIDATION_MISMATCH);
	reply.confirmed = NULL;
	ck_assert_int_eq(csi_validation_check(&req, &reply, NULL, 0),
	    CSI_VALIDATION_ABSENT);
}
END_TEST

static void
start_plugin_cb(evutil_socket_t fd, short what, void *arg)
{
	plugin_start_nowait(NULL);
}

START_TEST(retries_until_the_socket_comes_up)
{
	Csi__V1__ProbeRequest probe = CSI__V1__PROBE_REQUEST__INIT;
	Csi__V1__CreateVolumeRequest create = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	struct csi_retry patient = { 0, 50, 200, 15000 };
	struct timeval later = { 0, 500 * 1000 };
	struct event *ev;
	ProtobufCMessage *reply;
	struct csi_result res;

	/* No plugin: fails at once, and CreateVolume is never retried. */
	create.name = "vol";
	csi_call_sync(fx.conn, CSI_CREATE_VOLUME, &create.base, 1000,
	    &patient, &res, &reply);
	ck_assert_int_eq(res.code, CSI_UNAVAILABLE);
	ck_assert_int_eq(res.attempts, 1);

	/* The plugin starts half a second into a patient Probe. */
	ev = evtimer_new(fx.base, start_plugin_cb, NULL);
	evtimer_add(ev, &later);
	csi_call_sync(fx.conn, CSI_PROBE, &probe.base, 1000, &patient, &res,
	    &reply);
	event_free(ev);
	ck_assert_msg(res.code == CSI_OK, "got %s (%s)",
	    csi_code_name(res.code), res.message);
	ck_assert_int_gt(res.attempts, 1);
	ck_assert_int_eq(csi_probe_ready((void *)reply), CSI_READY_TRUE);
	protobuf_c_message_free_unpacked(reply, NULL);
}
END_TEST

START_TEST(absent_optional_fields_are_not_false)
{
	static const char *args[] = { "--fault-probe-no-ready",
		"--fault-validate-no-confirmed", NULL };
	Csi__V1__ProbeRequest probe = CSI__V1__PROBE_REQUEST__INIT;
	Csi__V1__CreateVolumeRequest create = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__ValidateVolumeCapabilitiesRequest vvc =
	    CSI__V1__VALIDATE_VOLUME_CAPABILITIES_REQUEST__INIT;
	Csi__V1__VolumeCapability cap, *caps[1] = { &cap };
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;
	Csi__V1__ProbeResponse *pr;
	Csi__V1__ValidateVolumeCapabilitiesResponse *vr;
	ProtobufCMessage *m;

	plugin_start(args);
	pr = (void *)call(CSI_PROBE, &probe.base, CSI_OK, NULL);
	ck_assert_ptr_null(pr->ready);
	ck_assert_int_eq(csi_probe_ready(pr), CSI_READY_ABSENT);
	protobuf_c_message_free_unpacked(&pr->base, NULL);

	mount_capability(&cap, &mnt, &mode);
	create.name = "vol";
	create.n_volume_capabilities = 1;
	create.volume_capabilities = caps;
	m = call(CSI_CREATE_VOLUME, &create.base, CSI_OK, NULL);
	protobuf_c_message_free_unpacked(m, NULL);
	vvc.volume_id = "vol";
	vvc.n_volume_capabilities = 1;
	vvc.volume_capabilities = caps;
	vr = (void *)call(CSI_VALIDATE_VOLUME_CAPABILITIES, &vvc.base, CSI_OK,
	    NULL);
	ck_assert_ptr_null(vr->confirmed);
	ck_assert_int_eq(csi_validation_check(&vvc, vr, NULL, 0),
	    CSI_VALIDATION_ABSENT);
	protobuf_c_message_free_unpacked(&vr->base, NULL);
}
END_TEST

START_TEST(unknown_capabilities_are_tolerated)
{
	static const char *args[] = { "--fault-unknown-capabilities", NULL };
	Csi__V1__GetPluginCapabilitiesRequest pcaps =
	    CSI__V1__GET_PLUGIN_CAPABILITIES_REQUEST__INIT;
	Csi__V1__NodeGetCapabilitiesRequest ncaps =
	    CSI__V1__NODE_GET_CAPABILITIES_REQUEST__INIT;
	Csi__V1__ControllerGetCapabilitiesRequest ccaps =
	    CSI__V1__CONTROLLER_GET_CAPABILITIES_REQUEST__INIT;
	Csi__V1__GetPluginCapabilitiesResponse *pc;
	Csi__V1__NodeGetCapabilitiesResponse *nc;
	Csi__V1__ControllerGetCapabilitiesResponse *cc;

	plugin_start(args);
	nc = (void *)call(CSI_NODE_GET_CAPABILITIES, &ncaps.base, CSI_OK, NULL);
	/* An unknown rpc, a type not set, and the sample plugin's own
	 * six: expand, stage, volume stats, volume condition, the mount
	 * group and single-node multi-writer. */
	ck_assert_uint_eq(nc->n_capabilities, 8);
	/* The unknown value is kept as a number, not turned into UNKNOWN. */
	ck_assert_int_eq(nc->capabilities[0]->rpc->type, 1000);
	ck_assert_int_eq(nc->capabilities[1]->type_case,
	    CSI__V1__NODE_SERVICE_CAPABILITY__TYPE__NOT_SET);
	ck_assert(csi_node_has_rpc(nc,
	    NODE(STAGE_UNSTAGE_VOLUME)));
	ck_assert(csi_node_has_rpc(nc,
	    NODE(GET_VOLUME_STATS)));
	ck_assert(csi_node_has_rpc(nc,
	    NODE(VOLUME_CONDITION)));
	ck_assert(csi_node_has_rpc(nc,
	    NODE(VOLUME_MOUNT_GROUP)));
	protobuf_c_message_free_unpacked(&nc->base, NULL);

	pc = (void *)call(CSI_GET_PLUGIN_CAPABILITIES, &pcaps.base, CSI_OK,
	    NULL);
	ck_assert_uint_eq(pc->n_capabilities, 5);
	ck_assert(csi_plugin_has_service(pc,
	    SVC(CONTROLLER_SERVICE)));
	/* Read past the unknown entries too. */
	ck_assert_int_eq(csi_plugin_expansion(pc),
	    CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__ONLINE);
	protobuf_c_message_free_unpacked(&pc->base, NULL);

	cc = (void *)call(CSI_CONTROLLER_GET_CAPABILITIES, &ccaps.base, CSI_OK,
	    NULL);
	/* Its four (create and delete, expand, the two of snapshots), an
	 * unknown rpc and a type not set. */
	ck_assert_uint_eq(cc->n_capabilities, 6);
	ck_assert(csi_controller_has_rpc(cc,
	    CTL(CREATE_DELETE_VOLUME)));
	ck_assert(csi_controller_has_rpc(cc,
	    CTL(EXPAND_VOLUME)));
	ck_assert(csi_controller_has_rpc(cc,
	    CTL(CREATE_DELETE_SNAPSHOT)));
	ck_assert(csi_controller_has_rpc(cc,
	    CTL(LIST_SNAPSHOTS)));
	protobuf_c_message_free_unpacked(&cc->base, NULL);
}
END_TEST

START_TEST(probe_failure_and_exit_mid_call)
{
	static const char *args[] = { "--fault-probe-fail-after", "1",
		"--fault-exit-in", "NodeGetInfo", NULL };
	Csi__V1__ProbeRequest probe = CSI__V1__PROBE_REQUEST__INIT;
	Csi__V1__NodeGetInfoRequest ninfo = CSI__V1__NODE_GET_INFO_REQUEST__INIT;
	ProtobufCMessage *m;
	struct csi_result res;

	plugin_start(args);
	m = call(CSI_PROBE, &probe.base, CSI_OK, NULL);
	protobuf_c_message_free_unpacked(m, NULL);
	expect(CSI_PROBE, &probe.base, CSI_INTERNAL, &res);
	ck_assert_int_eq(res.attempts, 1);

	/* The plugin dies under the call: UNAVAILABLE, never a hang. */
	csi_call_sync(fx.conn, CSI_NODE_GET_INFO, &ninfo.base, 2000,
	    &csi_retry_none, &res, &m);
	ck_assert_msg(res.code == CSI_UNAVAILABLE, "got %s (%s)",
	    csi_code_name(res.code), res.message);
	ck_assert(proc_wait_exit(&fx.plugin, 5000));
	ck_assert(WIFEXITED(fx.plugin.status));
	ck_assert_int_eq(WEXITSTATUS(fx.plugin.status), 3);
}
END_TEST

struct closed_wait {
	bool done;
	struct csi_result result;
};

static void
closed_cb(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	struct closed_wait *w = arg;

	w->result = *res;
	w->done = true;
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
}

START_TEST(close_cancels_calls_and_sigterm_removes_socket)
{
	static const char *args[] = { "--fault-slow-start-ms", "3000", NULL };
	Csi__V1__ProbeRequest probe = CSI__V1__PROBE_REQUEST__INIT;
	struct closed_wait inflight = { 0 }, waiting = { 0 };
	struct csi_retry patient = { 0, 2000, 2000, 15000 };
	struct timeval tv = { 0, 200 * 1000 };

	plugin_start(args);
	/* One call stuck on the slow plugin, one in backoff (no socket). */
	csi_call(fx.conn, CSI_PROBE, &probe.base, 10000, NULL, closed_cb,
	    &inflight);
	event_base_loopexit(fx.base, &tv);
	event_base_dispatch(fx.base);
	ck_assert(!inflight.done);
	csi_conn_close(fx.conn);
	ck_assert(!inflight.done);	/* never from inside the close */
	while (!inflight.done)
		event_base_loop(fx.base, EVLOOP_ONCE);
	ck_assert_int_eq(inflight.result.code, CSI_CANCELLED);

	ck_assert_ptr_nonnull(fx.conn = csi_conn_open(fx.client,
	    "unix:/nonexistent/csi.sock"));
	csi_call(fx.conn, CSI_PROBE, &probe.base, 1000, &patient, closed_cb,
	    &waiting);
	event_base_loopexit(fx.base, &tv);
	event_base_dispatch(fx.base);
	ck_assert(!waiting.done);
	/* Freeing the client ends it too, with its callback run. */
	csi_client_free(fx.client);
	fx.client = NULL;
	ck_assert(waiting.done);
	ck_assert_int_eq(waiting.result.code, CSI_CANCELLED);
	ck_assert_int_ge(waiting.result.attempts, 1);

	ck_assert_int_eq(access(fx.sock, F_OK), 0);
	kill(fx.plugin.pid, SIGTERM);
	ck_assert(proc_wait_exit(&fx.plugin, 10000));
	ck_assert(WIFEXITED(fx.plugin.status));
	ck_assert_int_eq(WEXITSTATUS(fx.plugin.status), 0);
	ck_assert_int_eq(access(fx.sock, F_OK), -1);
}
END_TEST

START_TEST(malformed_endpoints_are_refused)
{
	ck_assert_ptr_null(csi_conn_open(fx.client, "tcp://127.0.0.1:1"));
	ck_assert_ptr_null(csi_conn_open(fx.client, "unix:relative.sock"));
	ck_assert_ptr_null(csi_conn_open(fx.client, "unix:///a/"
	    "very-long-path-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/csi.sock"));
	ck_assert(csi_method_idempotent(CSI_NODE_STAGE_VOLUME));
	ck_assert(!csi_method_idempotent(CSI_CREATE_VOLUME));
	ck_assert_str_eq(csi_method_name(CSI_NODE_GET_INFO), "NodeGetInfo");
	ck_assert_str_eq(csi_code_name(CSI_UNAVAILABLE), "UNAVAILABLE");
}
END_TEST

static void
suite_setup(void)
{
	suite_dir = harness_tmpdir("csi");
}

/* In the parent, after every test: what a failed test left behind. */
static void
suite_teardown(void)
{
	/* A killed test's plugin may take a moment to die, and its mounts. */
	if (!harness_rmtree_wait(suite_dir, 5000))
		fprintf(stderr, "suite_teardown: could not remove %s\n",
		    suite_dir);
	free(suite_dir);
}

/* A snapshot of volume vol named name: its id (the name), or the code. */
static void
snapshot(const char *vol, const char *name, enum csi_code want)
{
	Csi__V1__CreateSnapshotRequest req =
	    CSI__V1__CREATE_SNAPSHOT_REQUEST__INIT;
	Csi__V1__CreateSnapshotResponse *r;

	req.source_volume_id = (char *)vol;
	req.name = (char *)name;
	r = (void *)call(CSI_CREATE_SNAPSHOT, &req.base, want, NULL);
	if (want != CSI_OK)
		return;
	ck_assert_ptr_nonnull(r->snapshot);
	ck_assert_str_eq(r->snapshot->snapshot_id, name);
	ck_assert_str_eq(r->snapshot->source_volume_id, vol);
	ck_assert(r->snapshot->ready_to_use);
	ck_assert_ptr_nonnull(r->snapshot->creation_time);
	ck_assert_int_gt(r->snapshot->creation_time->seconds, 0);
	protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* One page: its ids joined by ' ' into ids, its next_token into next. */
static void
list_page(int max, const char *token, const char *vol, char *ids, size_t n,
    char *next, size_t nn)
{
	Csi__V1__ListSnapshotsRequest req =
	    CSI__V1__LIST_SNAPSHOTS_REQUEST__INIT;
	Csi__V1__ListSnapshotsResponse *r;

	req.max_entries = max;
	req.starting_token = (char *)token;
	req.source_volume_id = (char *)vol;
	r = (void *)call(CSI_LIST_SNAPSHOTS, &req.base, CSI_OK, NULL);
	ids[0] = '\0';
	for (size_t i = 0; i < r->n_entries; i++)
		snprintf(ids + strlen(ids), n - strlen(ids), "%s%s", i > 0 ?
		    " " : "", r->entries[i]->snapshot->snapshot_id);
	snprintf(next, nn, "%s", r->next_token);
	protobuf_c_message_free_unpacked(&r->base, NULL);
}

static void
create_plain(const char *name, const char *from_snapshot, enum csi_code want)
{
	Csi__V1__CreateVolumeRequest create = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
	Csi__V1__VolumeContentSource src = CSI__V1__VOLUME_CONTENT_SOURCE__INIT;
	Csi__V1__VolumeContentSource__SnapshotSource snap =
	    CSI__V1__VOLUME_CONTENT_SOURCE__SNAPSHOT_SOURCE__INIT;
	Csi__V1__VolumeCapability cap, *caps[1] = { &cap };
	Csi__V1__VolumeCapability__MountVolume mnt;
	Csi__V1__VolumeCapability__AccessMode mode;

	mount_capability(&cap, &mnt, &mode);
	create.name = (char *)name;
	create.n_volume_capabilities = 1;
	create.volume_capabilities = caps;
	if (from_snapshot != NULL) {
		snap.snapshot_id = (char *)from_snapshot;
		src.type_case = CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT;
		src.snapshot = &snap;
		create.volume_content_source = &src;
	}
	expect(CSI_CREATE_VOLUME, &create.base, want, NULL);
}

/*
 * Snapshots as the sample plugin keeps them: copies that outlive the
 * plugin's process, one per name (again with the same source: the same;
 * with another: ALREADY_EXISTS), listed a page at a time in name order
 * with next_token, filtered by source; a volume created from one holds
 * what the volume held when it was taken, not what it held later.
 */
START_TEST(snapshots_page_and_outlive_the_plugin)
{
	const char *strict[] = { "--strict", "--endpoint", fx.endpoint, NULL };
	Csi__V1__DeleteSnapshotRequest del =
	    CSI__V1__DELETE_SNAPSHOT_REQUEST__INIT;
	Csi__V1__ListSnapshotsRequest bad =
	    CSI__V1__LIST_SNAPSHOTS_REQUEST__INIT;
	char path[600], ids[256], next[256], buf[64];
	int fd;
	ssize_t n;

	plugin_start(strict);
	create_plain("a", NULL, CSI_OK);
	create_plain("b", NULL, CSI_OK);
	snprintf(path, sizeof(path), "%s/volumes/a/f", fx.state);
	harness_write(path, "then\n");
	snapshot("a", "s1", CSI_OK);
	snapshot("a", "s1", CSI_OK);		/* the same one */
	snapshot("b", "s1", CSI_ALREADY_EXISTS);
	snapshot("a", "s2", CSI_OK);
	snapshot("b", "s3", CSI_OK);
	snapshot("nope", "s4", CSI_NOT_FOUND);
	snapshot("a", ".part-x", CSI_INVALID_ARGUMENT);
	harness_write(path, "later\n");

	list_page(2, "", "", ids, sizeof(ids), next, sizeof(next));
	ck_assert_str_eq(ids, "s1 s2");
	ck_assert_str_eq(next, "s3");
	list_page(2, next, "", ids, sizeof(ids), next, sizeof(next));
	ck_assert_str_eq(ids, "s3");
	ck_assert_str_eq(next, "");
	list_page(0, "", "a", ids, sizeof(ids), next, sizeof(next));
	ck_assert_str_eq(ids, "s1 s2");
	bad.max_entries = -1;
	expect(CSI_LIST_SNAPSHOTS, &bad.base, CSI_INVALID_ARGUMENT, NULL);
	bad.max_entries = 0;
	bad.starting_token = "../x";
	expect(CSI_LIST_SNAPSHOTS, &bad.base, CSI_ABORTED, NULL);

	/* Restarted, the plugin still has them. */
	plugin_stop();
	plugin_start(strict);
	list_page(0, "", "", ids, sizeof(ids), next, sizeof(next));
	ck_assert_str_eq(ids, "s1 s2 s3");

	create_plain("c", "s1", CSI_OK);
	create_plain("d", "none", CSI_NOT_FOUND);
	snprintf(path, sizeof(path), "%s/volumes/c/f", fx.state);
	ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	ck_assert_str_eq(buf, "then\n");

	del.snapshot_id = "s1";
	expect(CSI_DELETE_SNAPSHOT, &del.base, CSI_OK, NULL);
	expect(CSI_DELETE_SNAPSHOT, &del.base, CSI_OK, NULL);	/* gone */
	list_page(0, "", "", ids, sizeof(ids), next, sizeof(next));
	ck_assert_str_eq(ids, "s2 s3");
	snprintf(path, sizeof(path), "%s/snapshots/s1", fx.state);
	ck_assert_int_lt(access(path, F_OK), 0);
	/* The volume made from it keeps its copy. */
	snprintf(path, sizeof(path), "%s/volumes/c/f", fx.state);
	ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("csi_client");

	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, identity_and_fingerprint);
	tcase_add_test(tc, errors_are_typed_and_not_retried);
	tcase_add_test(tc, node_mode_serves_no_controller);
	tcase_add_test(tc, volume_lifecycle_with_real_mounts);
	tcase_add_test(tc, deadline_expires_against_slow_start);
	tcase_add_test(tc, retries_until_the_socket_comes_up);
	tcase_add_test(tc, retries_outlast_a_slow_start);
	tcase_add_test(tc, many_calls_in_flight);
	tcase_add_test(tc, validation_mismatch_is_caught);
	tcase_add_test(tc, absent_optional_fields_are_not_false);
	tcase_add_test(tc, unknown_capabilities_are_tolerated);
	tcase_add_test(tc, probe_failure_and_exit_mid_call);
	tcase_add_test(tc, close_cancels_calls_and_sigterm_removes_socket);
	tcase_add_test(tc, malformed_endpoints_are_refused);
	tcase_add_test(tc, snapshots_page_and_outlive_the_plugin);
	return harness_run("csi_client", tc);
}
