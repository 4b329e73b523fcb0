/*
 * test_devmgr.c: the device manager and its sysfs plugin on a sysfs tree
 * built in a temporary directory the way the kernel lays it out (devices
 * under devices/, reached through relative symlinks from block/,
 * class/block/, class/drm/ and bus/usb/devices/): groups and attributes,
 * what is left out (partitions, loop devices, connectors, root hubs,
 * interfaces), hostile content (symlinks out of the tree, a FIFO, control
 * bytes, a number too big), stats with their backoff, reservations
 * granted and refused, a device that disappears and comes back, the
 * class/block fallback, and a missing root retried until it appears.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <check.h>
#include <event2/event.h>

#include "devmgr.h"
#include "harness.h"
#include "log.h"

static char *root;
static struct event_base *base;
static struct devmgr *dm;
static struct berth_config cfg;

/* Every ancestor of root/rel, made as needed. */
static void
mkparents(const char *rel, bool self)
{
	char path[1024], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			ck_abort_msg("mkdir %s: %s", path, strerror(errno));
		*p = '/';
	}
	if (self && mkdir(path, 0755) < 0 && errno != EEXIST)
		ck_abort_msg("mkdir %s: %s", path, strerror(errno));
}

static void
mk(const char *rel)
{
	mkparents(rel, true);
}

static void
put(const char *rel, const char *text)
{
	char path[1024];

	mkparents(rel, false);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	harness_write(path, text);
}

/* A symlink at rel to target (both from the root), relative as sysfs's. */
static void
ln(const char *target, const char *rel)
{
	char path[1024], up[1024] = "";
	const char *p;

	mkparents(rel, false);
	for (p = rel; (p = strchr(p, '/')) != NULL; p++)
		strcat(up, "../");
	strcat(up, target);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (symlink(up, path) < 0)
		ck_abort_msg("symlink %s: %s", path, strerror(errno));
}

/* A symlink exactly as given, for the hostile ones. */
static void
ln_raw(const char *target, const char *rel)
{
	char path[1024];

	mkparents(rel, false);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (symlink(target, path) < 0)
		ck_abort_msg("symlink %s: %s", path, strerror(errno));
}

static void
rm(const char *rel)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	harness_rmtree(path);
	unlink(path);
}

#define ATA "devices/pci0000:00/0000:00:1f.2/ata1/host0"
#define XHCI "devices/pci0000:00/0000:00:14.0/usb1"
#define GPU0 "devices/pci0000:00/0000:00:02.0"
#define GPU1 "devices/pci0000:00/0000:00:01.0/0000:01:00.0"
#define EVIL "devices/platform/evil/host9/9:0:0:0"
#define STAT_SDA "    1000        0     8000       12      500        0     " \
	"4000       40        0      300       52        0        0        " \
	"0        0        0        0\n"

/* A path built from a format, in one of a few rotating buffers: good for
 * the call it is passed to, not to keep. */
static const char *P(const char *fmt, ...) BERTH_PRINTF(1, 2);

static const char *
P(const char *fmt, ...)
{
	static char bufs[4][1024];
	static unsigned next;
	char *b = bufs[next++ % 4];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, sizeof(bufs[0]), fmt, ap);
	va_end(ap);
	ck_assert(n > 0 && (size_t)n < sizeof(bufs[0]));
	return b;
}

/* A SCSI disk: its device directory and block entries. */
static void
disk(const char *dev, const char *name, const char *vendor,
    const char *model, const char *size, const char *removable,
    bool sys_block)
{
	char blk[512];

	snprintf(blk, sizeof(blk), "%s", P("%s/block/%s", dev, name));

	put(P("%s/vendor", dev), vendor);
	put(P("%s/model", dev), model);
	ln("bus/scsi/drivers/sd", P("%s/driver", dev));
	put(P("%s/size", blk), size);
	put(P("%s/removable", blk), removable);
	put(P("%s/queue/rotational", blk), "0\n");
	put(P("%s/stat", blk), STAT_SDA);
	ln(dev, P("%s/device", blk));
	ln(blk, P("class/block/%s", name));
	if (sys_block)
		ln(blk, P("block/%s", name));
}

static void
sdb(void)
{
	disk(ATA "/target1:0:0/1:0:0:0", "sdb", "ATA     \n",
	    "Samsung SSD 860 \n", "500107608\n", "0\n", true);
}

static void
usb(const char *id, const char *vid, const char *pid, const char *mfr,
    const char *product, const char *devnum)
{
	char dev[512];

	snprintf(dev, sizeof(dev), "%s", P(XHCI "/%s", id));

	put(P("%s/idVendor", dev), vid);
	put(P("%s/idProduct", dev), pid);
	if (mfr != NULL) {
		put(P("%s/manufacturer", dev), mfr);
		put(P("%s/product", dev), product);
	}
	put(P("%s/busnum", dev), "1\n");
	put(P("%s/devnum", dev), devnum);
	put(P("%s/speed", dev), "12\n");
	ln(dev, P("bus/usb/devices/%s", id));
}

static void
gpu(const char *dev, const char *card, const char *render,
    const char *vendor, const char *device, const char *driver)
{
	char drv[512];

	snprintf(drv, sizeof(drv), "%s", P("bus/pci/drivers/%s", driver));

	put(P("%s/vendor", dev), vendor);
	put(P("%s/device", dev), device);
	mk(drv);
	ln(drv, P("%s/driver", dev));
	ln(dev, P("%s/drm/%s/device", dev, card));
	put(P("%s/drm/%s/%s-HDMI-A-1/status", dev, card, card), "connected\n");
	mk(P("%s/drm/%s", dev, render));
	ln(P("%s/drm/%s", dev, card), P("class/drm/%s", card));
	ln(P("%s/drm/%s/%s-HDMI-A-1", dev, card, card),
	    P("class/drm/%s-HDMI-A-1", card));
	ln(P("%s/drm/%s", dev, render), P("class/drm/%s", render));
}

static void
build_tree(bool sys_block)
{
	mk("bus/scsi/drivers/sd");
	disk(ATA "/target0:0:0/0:0:0:0", "sda", "ATA     \n",
	    "Samsung SSD 860 \n", "1000215216\n", "0\n", sys_block);
	put(ATA "/target0:0:0/0:0:0:0/block/sda/sda1/partition", "1\n");
	put(ATA "/target0:0:0/0:0:0:0/block/sda/sda1/size", "2048\n");
	ln(ATA "/target0:0:0/0:0:0:0/block/sda/sda1", "class/block/sda1");
	/* Not backed by a device: left out. */
	put("devices/virtual/block/loop0/size", "0\n");
	ln("devices/virtual/block/loop0", "class/block/loop0");
	if (!sys_block)
		return;
	ln("devices/virtual/block/loop0", "block/loop0");
	sdb();
	disk(XHCI "/1-3/1-3:1.0/host2/target2:0:0/2:0:0:0", "sdc",
	    "Generic \n", "Flash Disk\n", "0\n", "1\n", true);

	/* Hostile: control bytes, links out of the tree, a FIFO, overflow. */
	put(EVIL "/vendor", "Ev\001il\033[31m\n");
	ln_raw("/etc/hostname", EVIL "/model");
	put(EVIL "/block/sdx/size", "99999999999999999999999\n");
	ln_raw("../../../../../../../../../../../../etc/passwd",
	    EVIL "/block/sdx/stat");
	ck_assert_int_eq(mkfifo(P("%s/" EVIL "/block/sdx/removable", root),
	    0644), 0);
	ln(EVIL, EVIL "/block/sdx/device");
	ln(EVIL "/block/sdx", "block/sdx");
	ln_raw("../../../../../../../../../../../../dev", "block/esc");
	ln_raw("../devices/virtual/block/loop0", "block/bad name");

	gpu(GPU0, "card0", "renderD128", "0x8086\n", "0x46a6\n", "i915");
	gpu(GPU1, "card1", "renderD129", "0x1002\n", "0x73bf\n", "amdgpu");
	put(GPU1 "/gpu_busy_percent", "37\n");
	put("class/drm/version", "drm 1.1.0 20060810\n");

	put(XHCI "/idVendor", "1d6b\n");
	put(XHCI "/idProduct", "0002\n");
	ln(XHCI, "bus/usb/devices/usb1");
	usb("1-1", "046d\n", "c52b\n", "Logitech\n", "USB Receiver\n", "2\n");
	put(XHCI "/1-1/1-1:1.0/bInterfaceClass", "03\n");
	ln(XHCI "/1-1/1-1:1.0", "bus/usb/devices/1-1:1.0");
	usb("1-2", "0bda\n", "8153\n", NULL, NULL, "3\n");
	usb("1-3", "090c\n", "1000\n", "Generic\n", "Flash Disk\n", "4\n");
}

static struct plugin *
sysfs_plugin(void)
{
	struct plugin *p = pluginmgr_find(devmgr_plugins(dm), "sysfs");

	ck_assert_ptr_nonnull(p);
	return p;
}

static void
start(const char *sysfs_root)
{
	ck_assert_int_eq(config_defaults(&cfg), 0);
	free(cfg.sysfs_root);
	ck_assert_ptr_nonnull(cfg.sysfs_root = strdup(sysfs_root));
	/* Fingerprints come when the test asks (devmgr_refresh). */
	cfg.plugin_heartbeat_ms = 3600 * 1000;
	cfg.device_stats_interval_ms = 10;
	cfg.plugin_retry_initial_ms = 10;
	cfg.plugin_retry_max_ms = 40;
	ck_assert_ptr_nonnull(base = event_base_new());
	ck_assert_ptr_nonnull(dm = devmgr_new(base, &cfg));
	devmgr_start(dm);
}

static void
stop(void)
{
	devmgr_free(dm);
	event_base_free(base);
	config_free(&cfg);
}

static void
run_until(bool (*pred)(void))
{
	while (!pred())
		ck_assert_int_eq(event_base_loop(base, EVLOOP_ONCE), 0);
}

static bool
healthy(void)
{
	return plugin_get_state(sysfs_plugin()) == PLUGIN_HEALTHY;
}

static const struct dev_group *
group(const char *vendor, const char *type, const char *name)
{
	const struct dev_group *g = devmgr_find_group(dm, vendor, type, name);

	if (g == NULL)
		ck_abort_msg("no group %s/%s/%s", vendor, type, name);
	return g;
}

static const struct dev_device *
device(const char *vendor, const char *type, const char *name, const char *id)
{
	const struct dev_device *d = dev_group_find_device(group(vendor, type,
	    name), id);

	if (d == NULL)
		ck_abort_msg("no device %s in %s/%s/%s", id, vendor, type, name);
	return d;
}

static void
attr_is(const struct dev_device *d, const char *key, const char *want)
{
	const char *v = dev_attr_get(d, key);

	if (v == NULL)
		ck_abort_msg("%s: no attribute %s", d->id, key);
	ck_assert_str_eq(v, want);
}

static uint64_t
counter(const struct dev_device *d, const char *key)
{
	size_t i;

	for (i = 0; i < d->ncounters; i++)
		if (strcmp(d->counters[i].key, key) == 0)
			return d->counters[i].value;
	return UINT64_MAX;
}

START_TEST(fingerprint_groups_and_attributes)
{
	const struct dev_device *d;
	const struct dev_group *g;
	char line[256];
	const char *log;
	size_t i, ndevs = 0;

	root = harness_tmpdir("sysfs");
	build_tree(true);
	harness_capture_stderr();
	start(root);
	run_until(healthy);
	log = harness_captured_stderr();

	ck_assert_str_eq(plugin_desc(sysfs_plugin()), "9 devices in 8 groups");
	ck_assert_uint_eq(devmgr_group_count(dm), 8);
	for (i = 0; i < devmgr_group_count(dm); i++) {
		g = devmgr_group_at(dm, i);
		ck_assert_str_eq(g->plugin, "sysfs");
		ndevs += g->ndevs;
	}
	ck_assert_uint_eq(ndevs, 9);
	ck_assert_ptr_null(devmgr_group_at(dm, 8));

	g = group("ATA", "block", "Samsung SSD 860");
	ck_assert_uint_eq(g->ndevs, 2);
	d = device("ATA", "block", "Samsung SSD 860", "sda");
	ck_assert(d->healthy && !d->gone);
	attr_is(d, "dev_node", "/dev/sda");
	attr_is(d, "size_bytes", "512110190592");
	attr_is(d, "rotational", "0");
	attr_is(d, "removable", "0");
	attr_is(d, "driver", "sd");
	attr_is(d, "model", "Samsung SSD 860");
	/* A removable disk with no medium is there, but not usable. */
	d = device("Generic", "block", "Flash Disk", "sdc");
	ck_assert(!d->healthy);
	ck_assert_str_eq(d->health, "no medium");
	/* Hostile content: cleaned, not followed, not waited for. */
	d = device("Ev?il?[31m", "block", "unknown", "sdx");
	attr_is(d, "model", "");
	attr_is(d, "removable", "");
	attr_is(d, "rotational", "");
	attr_is(d, "size_bytes", "0");

	d = device("intel", "gpu", "0x46a6", "card0");
	attr_is(d, "dev_node", "/dev/dri/card0");
	attr_is(d, "render_node", "/dev/dri/renderD128");
	attr_is(d, "driver", "i915");
	attr_is(d, "vendor_id", "0x8086");
	attr_is(d, "pci_slot", "0000:00:02.0");
	d = device("amd", "gpu", "0x73bf", "card1");
	attr_is(d, "driver", "amdgpu");
	attr_is(d, "render_node", "/dev/dri/renderD129");

	d = device("Logitech", "usb", "USB Receiver", "1-1");
	attr_is(d, "dev_node", "/dev/bus/usb/001/002");
	attr_is(d, "vendor_id", "046d");
	attr_is(d, "product_id", "c52b");
	attr_is(d, "speed_mbps", "12");
	/* No strings: the ids name the group. */
	device("0bda", "usb", "8153", "1-2");
	device("Generic", "usb", "Flash Disk", "1-3");

	/* Left out: partitions, loop, connectors, render nodes, hubs. */
	for (i = 0; i < devmgr_group_count(dm); i++) {
		g = devmgr_group_at(dm, i);
		ck_assert_ptr_null(dev_group_find_device(g, "sda1"));
		ck_assert_ptr_null(dev_group_find_device(g, "loop0"));
		ck_assert_ptr_null(dev_group_find_device(g, "esc"));
		ck_assert_ptr_null(dev_group_find_device(g, "usb1"));
		ck_assert_ptr_null(dev_group_find_device(g, "renderD128"));
		ck_assert_ptr_null(dev_group_find_device(g,
		    "card0-HDMI-A-1"));
	}
	pluginmgr_states(devmgr_plugins(dm), line, sizeof(line));
	ck_assert_str_eq(line, "devices: sysfs=healthy");
	ck_assert_ptr_nonnull(strstr(log, "]: devices: sysfs=healthy\n"));
	ck_assert_ptr_nonnull(strstr(log,
	    "]: devices: sysfs: found gpu device card0 (intel, 0x46a6)\n"));
	stop();
	harness_rmtree(root);
}
END_TEST

static bool
sda_counted(void)
{
	return healthy() &&
	    device("ATA", "block", "Samsung SSD 860", "sda")->ncounters > 0;
}

static bool
sda_uncounted(void)
{
	return device("ATA", "block", "Samsung SSD 860", "sda")->ncounters ==
	    0;
}

static bool
stats_retried_twice(void)
{
	return plugin_stats_starts(sysfs_plugin()) >= 3;
}

static bool
sda_counted_again(void)
{
	return counter(device("ATA", "block", "Samsung SSD 860", "sda"),
	    "read_ios") == 1001;
}

START_TEST(stats_and_their_backoff)
{
	const struct dev_device *d;

	root = harness_tmpdir("sysfs");
	build_tree(true);
	start(root);
	run_until(sda_counted);
	d = device("ATA", "block", "Samsung SSD 860", "sda");
	ck_assert_uint_eq(counter(d, "read_ios"), 1000);
	ck_assert_uint_eq(counter(d, "read_sectors"), 8000);
	ck_assert_uint_eq(counter(d, "write_ios"), 500);
	ck_assert_uint_eq(counter(d, "write_sectors"), 4000);
	ck_assert_uint_eq(counter(d, "io_ticks_ms"), 300);
	ck_assert_uint_eq(counter(d, "in_flight"), 0);
	d = device("amd", "gpu", "0x73bf", "card1");
	ck_assert_uint_eq(counter(d, "busy_percent"), 37);
	ck_assert_uint_eq(device("intel", "gpu", "0x46a6", "card0")->ncounters,
	    0);
	ck_assert_ptr_nonnull(plugin_stats_data(sysfs_plugin()));

	/* One device's unreadable counters are its own problem (sdx's
	 * stat leads out of the tree, and the stream goes on) ... */
	put(ATA "/target0:0:0/0:0:0:0/block/sda/stat", "12 x 7\n");
	run_until(sda_uncounted);
	ck_assert_uint_eq(plugin_stats_starts(sysfs_plugin()), 1);
	/* ... but none readable stops the stream; it restarts with backoff. */
	put(ATA "/target1:0:0/1:0:0:0/block/sdb/stat", "\n");
	put(XHCI "/1-3/1-3:1.0/host2/target2:0:0/2:0:0:0/block/sdc/stat",
	    "1 2 3\n");
	put(GPU1 "/gpu_busy_percent", "101\n");
	run_until(stats_retried_twice);
	ck_assert_int_eq(plugin_stats_last_backoff_ms(sysfs_plugin()), 20);
	/* ... and the fingerprint stream is not touched by it. */
	ck_assert_uint_eq(plugin_starts(sysfs_plugin()), 1);
	put(ATA "/target0:0:0/0:0:0:0/block/sda/stat",
	    "1001 0 8000 0 500 0 4000 0 0 300 0\n");
	run_until(sda_counted_again);
	stop();
	harness_rmtree(root);
}
END_TEST

static int
reserve(const char *vendor, const char *type, const char *name,
    const char *const *ids, size_t n, struct dev_reservation *r, char *err)
{
	return devmgr_reserve(dm, vendor, type, name, ids, n, r, err, 256);
}

START_TEST(reserve_granted_and_refused)
{
	const char *disks[] = { "sda", "sdb" }, *gpu0[] = { "card0" };
	const char *usb1[] = { "1-1" }, *twice[] = { "sda", "sda" };
	const char *nope[] = { "sdz" }, *sdc[] = { "sdc" };
	struct dev_reservation r;
	char err[256];

	root = harness_tmpdir("sysfs");
	build_tree(true);
	start(root);
	run_until(healthy);

	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", disks, 2,
	    &r, err), 0);
	ck_assert_uint_eq(r.nnodes, 2);
	ck_assert_str_eq(r.nodes[0], "/dev/sda");
	ck_assert_str_eq(r.nodes[1], "/dev/sdb");
	ck_assert_uint_eq(r.nenv, 1);
	ck_assert_str_eq(r.env[0], "BERTH_VISIBLE_DEVICES=sda,sdb");
	dev_reservation_free(&r);

	ck_assert_int_eq(reserve("intel", "gpu", "0x46a6", gpu0, 1, &r, err),
	    0);
	ck_assert_uint_eq(r.nnodes, 2);
	ck_assert_str_eq(r.nodes[0], "/dev/dri/card0");
	ck_assert_str_eq(r.nodes[1], "/dev/dri/renderD128");
	ck_assert_str_eq(r.env[0], "BERTH_VISIBLE_DEVICES=card0");
	dev_reservation_free(&r);

	ck_assert_int_eq(reserve("Logitech", "usb", "USB Receiver", usb1, 1,
	    &r, err), 0);
	ck_assert_str_eq(r.nodes[0], "/dev/bus/usb/001/002");
	dev_reservation_free(&r);

	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 999", disks, 2,
	    &r, err), -ENOENT);
	ck_assert_str_eq(err, "no device group ATA/block/Samsung SSD 999");
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", nope, 1,
	    &r, err), -ENOENT);
	ck_assert_str_eq(err,
	    "no device sdz in group ATA/block/Samsung SSD 860");
	/* An id of another group is unknown in this one. */
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", gpu0, 1,
	    &r, err), -ENOENT);
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", twice, 2,
	    &r, err), -EINVAL);
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", disks, 0,
	    &r, err), -EINVAL);
	ck_assert_int_eq(reserve("Generic", "block", "Flash Disk", sdc, 1, &r,
	    err), -EBUSY);
	ck_assert_str_eq(err, "device sdc of group Generic/block/Flash Disk "
	    "is unhealthy: no medium");
	ck_assert_uint_eq(r.nnodes + r.nenv, 0);
	stop();
	harness_rmtree(root);
}
END_TEST

static bool
sdb_gone(void)
{
	return device("ATA", "block", "Samsung SSD 860", "sdb")->gone &&
	    device("0bda", "usb", "8153", "1-2")->gone;
}

static void *last_fp;

static bool
fingerprinted(void)
{
	return plugin_fp_data(sysfs_plugin()) != last_fp;
}

static bool
sdb_back(void)
{
	return !device("ATA", "block", "Samsung SSD 860", "sdb")->gone;
}

START_TEST(device_disappears_and_comes_back)
{
	const char *sdb_id[] = { "sdb" }, *sda_id[] = { "sda" };
	const struct dev_device *d;
	struct dev_reservation r;
	const char *log;
	char err[256];

	root = harness_tmpdir("sysfs");
	build_tree(true);
	start(root);
	run_until(healthy);

	harness_capture_stderr();
	rm("block/sdb");
	rm("class/block/sdb");
	rm(ATA "/target1:0:0");
	rm("bus/usb/devices/1-2");
	rm(XHCI "/1-2");
	/* Before the next fingerprint: the plugin itself refuses it ... */
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", sdb_id, 1,
	    &r, err), -ENODEV);
	ck_assert_str_eq(err, "device sdb (ATA block Samsung SSD 860) is no "
	    "longer in sysfs; it cannot be reserved");
	/* ... and asks for a fingerprint at once, which reports it. */
	run_until(sdb_gone);
	log = harness_captured_stderr();
	ck_assert_ptr_nonnull(strstr(log, "]: devices: sysfs: block device "
	    "sdb (ATA, Samsung SSD 860) disappeared; it can no longer be "
	    "reserved\n"));
	ck_assert_ptr_nonnull(strstr(log, "]: devices: sysfs: usb device 1-2 "
	    "(0bda, 8153) disappeared"));
	d = device("ATA", "block", "Samsung SSD 860", "sdb");
	ck_assert(!d->healthy);
	ck_assert_str_eq(d->health, "disappeared");
	attr_is(d, "dev_node", "/dev/sdb");
	ck_assert(!device("ATA", "block", "Samsung SSD 860", "sda")->gone);
	ck_assert_uint_eq(devmgr_group_count(dm), 8);
	ck_assert_str_eq(plugin_desc(sysfs_plugin()), "7 devices in 7 groups");
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", sdb_id, 1,
	    &r, err), -ENODEV);
	ck_assert_str_eq(err, "device sdb of group ATA/block/Samsung SSD 860 "
	    "disappeared; it cannot be reserved");
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", sda_id, 1,
	    &r, err), 0);
	dev_reservation_free(&r);
	/* Reported once, not at every fingerprint. */
	harness_capture_stderr();
	last_fp = plugin_fp_data(sysfs_plugin());
	devmgr_refresh(dm);
	run_until(fingerprinted);
	log = harness_captured_stderr();
	ck_assert_ptr_null(strstr(log, "disappeared"));

	harness_capture_stderr();
	sdb();
	devmgr_refresh(dm);
	run_until(sdb_back);
	log = harness_captured_stderr();
	ck_assert_ptr_nonnull(strstr(log, "]: devices: sysfs: block device "
	    "sdb (ATA, Samsung SSD 860) is back\n"));
	ck_assert(device("ATA", "block", "Samsung SSD 860", "sdb")->healthy);
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", sdb_id, 1,
	    &r, err), 0);
	dev_reservation_free(&r);
	stop();
	harness_rmtree(root);
}
END_TEST

START_TEST(class_block_without_sys_block)
{
	const struct dev_group *g;

	root = harness_tmpdir("sysfs");
	build_tree(false);
	start(root);
	run_until(healthy);
	ck_assert_uint_eq(devmgr_group_count(dm), 1);
	g = group("ATA", "block", "Samsung SSD 860");
	ck_assert_uint_eq(g->ndevs, 1);
	ck_assert_str_eq(g->devs[0].id, "sda");
	stop();
	harness_rmtree(root);
}
END_TEST

static bool
retried_twice(void)
{
	return plugin_starts(sysfs_plugin()) >= 3;
}

START_TEST(missing_root_is_retried)
{
	char *top, path[1024];

	top = harness_tmpdir("sysfs");
	snprintf(path, sizeof(path), "%s/sys", top);
	start(path);
	run_until(retried_twice);
	/* Never fingerprinted: undetected, with the reason. */
	ck_assert_int_eq(plugin_get_state(sysfs_plugin()), PLUGIN_UNDETECTED);
	ck_assert_ptr_nonnull(strstr(plugin_desc(sysfs_plugin()),
	    "fingerprint: sysfs root "));
	ck_assert_int_eq(plugin_last_backoff_ms(sysfs_plugin()), 20);
	root = path;
	mk("");
	build_tree(true);
	run_until(healthy);
	ck_assert_uint_eq(devmgr_group_count(dm), 8);
	stop();
	harness_rmtree(top);
	free(top);
	root = NULL;
}
END_TEST

START_TEST(empty_tree_is_undetected)
{
	const char *ids[] = { "sda" };
	struct dev_reservation r;
	char err[256];

	root = harness_tmpdir("sysfs");
	start(root);
	/* The first fingerprint: nothing there, so not detected. */
	while (plugin_starts(sysfs_plugin()) == 0 ||
	    strcmp(plugin_desc(sysfs_plugin()), "no devices found") != 0)
		ck_assert_int_eq(event_base_loop(base, EVLOOP_ONCE), 0);
	ck_assert_int_eq(plugin_get_state(sysfs_plugin()), PLUGIN_UNDETECTED);
	ck_assert_uint_eq(devmgr_group_count(dm), 0);
	ck_assert_int_eq(reserve("ATA", "block", "Samsung SSD 860", ids, 1,
	    &r, err), -ENOENT);
	stop();
	harness_rmtree(root);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("devmgr");

	tcase_add_test(tc, fingerprint_groups_and_attributes);
	tcase_add_test(tc, stats_and_their_backoff);
	tcase_add_test(tc, reserve_granted_and_refused);
	tcase_add_test(tc, device_disappears_and_comes_back);
	tcase_add_test(tc, class_block_without_sys_block);
	tcase_add_test(tc, missing_root_is_retried);
	tcase_add_test(tc, empty_tree_is_undetected);
	return harness_run("devmgr", tc);
}
