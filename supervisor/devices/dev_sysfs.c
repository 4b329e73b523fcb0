/*
 * dev_sysfs.c: the built-in device plugin on a sysfs tree (see
 * dev_sysfs.h).
 *
 * Owns: reading the tree. Must not: open anything outside sysfs_root
 * (every path is relative to it and resolved beneath it), read more than
 * SYSFS_READ_MAX bytes of a file, block on a file that is not regular, or
 * pass on a byte that is not printable.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

#include "dev_sysfs.h"
#include "log.h"
#include "xalloc.h"

#define SYSFS_READ_MAX 512	/* a block stat line is the longest we read */
#define SYSFS_ENTRIES_MAX 1024	/* entries looked at in one directory */
#define SYSFS_DEVICES_MAX 1024	/* devices in one fingerprint */
#define SYSFS_PATH_MAX 512

struct sysfs {
	char *root;
};

/* One fingerprint or stats pass over the tree. */
struct scan {
	int rootfd;
	size_t ndevs;
	char *err;
	size_t errlen;
	unsigned ok, bad;	/* stats: devices read, devices not */
};

static int
scan_fail(struct scan *sc, int r, const char *what)
{
	snprintf(sc->err, sc->errlen, "%s: %s", what, strerror(-r));
	return r;
}

/*
 * One device's counters could not be read: it gets none this time. The
 * first reason is kept, for when no device could be read at all.
 */
static void
stat_bad(struct scan *sc, const char *what, const char *why)
{
	if (sc->bad++ == 0)
		snprintf(sc->err, sc->errlen, "%s: %s", what, why);
}

static int
sub_open(int rootfd, const char *rel, int flags)
{
	/* openat2 refuses O_PATH with any flag it ignores (O_NOCTTY). */
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC |
		    ((flags & O_PATH) ? 0 : O_NOCTTY)),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

static int
vrel(char *buf, size_t len, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, len, fmt, ap);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Does the path exist beneath the root (following symlinks inside)? */
static bool has(int rootfd, const char *fmt, ...) BERTH_PRINTF(2, 3);

static bool
has(int rootfd, const char *fmt, ...)
{
	char rel[SYSFS_PATH_MAX];
	va_list ap;
	int fd, r;

	va_start(ap, fmt);
	r = vrel(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (r < 0 || (fd = sub_open(rootfd, rel, O_PATH)) < 0)
		return false;
	close(fd);
	return true;
}

/* Printable ASCII only, up to the first newline, without outer blanks. */
static void
clean(char *s)
{
	size_t i, n, lead;

	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] == '\n') {
			s[i] = '\0';
			break;
		}
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			s[i] = '?';
	}
	n = strlen(s);
	while (n > 0 && s[n - 1] == ' ')
		s[--n] = '\0';
	for (lead = 0; s[lead] == ' '; lead++)
		;
	memmove(s, s + lead, n - lead + 1);
}

/*
 * Read a small regular file beneath the root into buf (cleaned): 0, or
 * -errno with buf empty.
 */
static int read_at(int rootfd, char *buf, size_t len, const char *fmt, ...)
    BERTH_PRINTF(4, 5);

static int
read_at(int rootfd, char *buf, size_t len, const char *fmt, ...)
{
	char rel[SYSFS_PATH_MAX];
	struct stat st;
	size_t off = 0;
	ssize_t n = 0;
	va_list ap;
	int fd, r;

	buf[0] = '\0';
	va_start(ap, fmt);
	r = vrel(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (r < 0)
		return r;
	if (len > SYSFS_READ_MAX + 1)
		len = SYSFS_READ_MAX + 1;
	/* O_NONBLOCK: a FIFO planted in the tree must not hang us. */
	if ((fd = sub_open(rootfd, rel, O_RDONLY | O_NONBLOCK)) < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	while (off < len - 1 && (n = read(fd, buf + off, len - 1 - off)) > 0)
		off += (size_t)n;
	r = n < 0 && off == 0 ? -errno : 0;
	close(fd);
	buf[off] = '\0';
	clean(buf);
	return r;
}

static bool
name_ok(const char *s, const char *extra)
{
	size_t i;

	if (s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 ||
	    strlen(s) >= DEV_ID_MAX)
		return false;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		    s[i] == '_' || s[i] == '-' ||
		    (extra != NULL && strchr(extra, s[i]) != NULL)))
			return false;
	return true;
}

/* prefix followed by 1 to 4 digits: "card0", "renderD128". */
static bool
numbered(const char *s, const char *prefix)
{
	size_t n = strlen(prefix), i;

	if (strncmp(s, prefix, n) != 0 || s[n] == '\0')
		return false;
	for (i = n; s[i] != '\0'; i++)
		if (s[i] < '0' || s[i] > '9' || i - n >= 4)
			return false;
	return true;
}

/* The last component of the symlink dir/link, if it is a sane name. */
static int
link_name(int rootfd, const char *dir, const char *link, char *buf,
    size_t len)
{
	char target[SYSFS_PATH_MAX];
	const char *base;
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if ((fd = sub_open(rootfd, dir, O_PATH | O_DIRECTORY)) < 0)
		return fd;
	n = readlinkat(fd, link, target, sizeof(target) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	base = (base = strrchr(target, '/')) != NULL ? base + 1 : target;
	if (!name_ok(base, ":") || strlen(base) >= len)
		return -EINVAL;
	snprintf(buf, len, "%s", base);
	return 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The sane names in a directory beneath the root, sorted. */
static int
list_names(int rootfd, const char *rel, char (**names)[DEV_ID_MAX],
    size_t *n)
{
	struct dirent *de;
	DIR *d;
	int fd;

	*names = NULL;
	*n = 0;
	if ((fd = sub_open(rootfd, rel, O_RDONLY | O_DIRECTORY)) < 0)
		return fd;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	*names = xcalloc(SYSFS_ENTRIES_MAX, DEV_ID_MAX);
	while ((de = readdir(d)) != NULL) {
		if (!name_ok(de->d_name, NULL))
			continue;
		if (*n == SYSFS_ENTRIES_MAX) {
			log_warnx("devices: sysfs: more than %d entries in "
			    "%s; the rest are ignored", SYSFS_ENTRIES_MAX, rel);
			break;
		}
		memcpy((*names)[(*n)++], de->d_name, strlen(de->d_name) + 1);
	}
	closedir(d);
	qsort(*names, *n, DEV_ID_MAX, cmp_names);
	return 0;
}

/* Decimal digits only, no sign, no overflow. */
static bool
parse_u64(const char *s, const char **end, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return false;
	*v = x;
	if (end != NULL)
		*end = p;
	return end != NULL || *p == '\0';
}

/* "0x8086" (PCI, with 0x) or "046d" (USB, without). */
static bool
hex_id(const char *s, bool with_0x)
{
	size_t i;

	if (with_0x && (s[0] != '0' || s[1] != 'x'))
		return false;
	s += with_0x ? 2 : 0;
	for (i = 0; i < 4; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f') ||
		    (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return s[4] == '\0';
}

static const char *
pci_vendor(const char *id)
{
	static const struct { const char *id, *name; } known[] = {
		{ "0x10de", "nvidia" }, { "0x1002", "amd" },
		{ "0x8086", "intel" }, { "0x1af4", "redhat" },
		{ "0x1234", "qemu" }, { "0x15ad", "vmware" },
	};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcasecmp(id, known[i].id) == 0)
			return known[i].name;
	return id;
}

static const char *
first_of(const char *a, const char *b, const char *c)
{
	return a[0] != '\0' ? a : b[0] != '\0' ? b : c;
}

/* A new device in its group; NULL (nothing added) past the cap. */
static struct dev_device *
add_dev(struct scan *sc, struct dev_groups *out, const char *vendor,
    const char *type, const char *name, const char *id)
{
	if (sc->ndevs == SYSFS_DEVICES_MAX) {
		log_warnx("devices: sysfs: more than %d devices; %s %s is "
		    "ignored", SYSFS_DEVICES_MAX, type, id);
		return NULL;
	}
	sc->ndevs++;
	return dev_group_add_device(dev_groups_add(out, vendor, type, name),
	    id);
}

/* /sys/block when it exists (whole disks only), else /sys/class/block. */
static const char *
block_dir(int rootfd)
{
	return has(rootfd, "block") ? "block" : "class/block";
}

/* A disk, not a partition, and backed by a device (not loop, ram, dm). */
static bool
physical_disk(int rootfd, const char *dir, const char *name)
{
	return !has(rootfd, "%s/%s/partition", dir, name) &&
	    has(rootfd, "%s/%s/device", dir, name);
}

/* One entry of a directory being walked: 0 to go on, -errno to stop. */
typedef int (*entry_fn)(struct scan *sc, const char *dir, const char *name,
    void *out);

/* fn on every sane name in dir, in order; a missing dir has none. */
static int
walk(struct scan *sc, const char *dir, entry_fn fn, void *out)
{
	char (*names)[DEV_ID_MAX];
	size_t i, n;
	int r;

	if ((r = list_names(sc->rootfd, dir, &names, &n)) == -ENOENT)
		return 0;
	if (r < 0)
		return scan_fail(sc, r, dir);
	for (i = 0; i < n && r == 0; i++)
		r = fn(sc, dir, names[i], out);
	free(names);
	return r;
}

static int
block_entry(struct scan *sc, const char *dir, const char *name, void *out)
{
	char vendor[DEV_VALUE_MAX], model[DEV_VALUE_MAX], driver[DEV_ID_MAX];
	char devdir[SYSFS_PATH_MAX], val[64], removable[8], rotational[8];
	struct dev_device *d;
	uint64_t sectors;

	if (!physical_disk(sc->rootfd, dir, name))
		return 0;
	read_at(sc->rootfd, vendor, sizeof(vendor), "%s/%s/device/vendor",
	    dir, name);
	read_at(sc->rootfd, model, sizeof(model), "%s/%s/device/model", dir,
	    name);
	snprintf(devdir, sizeof(devdir), "%s/%s/device", dir, name);
	link_name(sc->rootfd, devdir, "driver", driver, sizeof(driver));
	read_at(sc->rootfd, removable, sizeof(removable), "%s/%s/removable",
	    dir, name);
	read_at(sc->rootfd, rotational, sizeof(rotational),
	    "%s/%s/queue/rotational", dir, name);
	read_at(sc->rootfd, val, sizeof(val), "%s/%s/size", dir, name);
	if (!parse_u64(val, NULL, &sectors) || sectors > UINT64_MAX / 512)
		sectors = 0;
	if ((d = add_dev(sc, out, first_of(pci_vendor(vendor), "", "unknown"),
	    "block", first_of(model, driver, "unknown"), name)) == NULL)
		return 0;
	snprintf(val, sizeof(val), "/dev/%s", name);
	dev_attr_set(d, "dev_node", val);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)sectors * 512);
	dev_attr_set(d, "size_bytes", val);
	dev_attr_set(d, "vendor", vendor);
	dev_attr_set(d, "model", model);
	dev_attr_set(d, "driver", driver);
	dev_attr_set(d, "removable", removable);
	dev_attr_set(d, "rotational", rotational);
	if (strcmp(removable, "1") == 0 && sectors == 0) {
		d->healthy = false;
		snprintf(d->health, sizeof(d->health), "no medium");
	}
	return 0;
}

/* The first renderD node of a card, or "". */
static void
render_node(int rootfd, const char *card, char *buf, size_t len)
{
	char rel[SYSFS_PATH_MAX], (*names)[DEV_ID_MAX];
	size_t i, n;

	buf[0] = '\0';
	snprintf(rel, sizeof(rel), "class/drm/%s/device/drm", card);
	if (list_names(rootfd, rel, &names, &n) < 0)
		return;
	for (i = 0; i < n; i++)
		if (numbered(names[i], "renderD")) {
			snprintf(buf, len, "/dev/dri/%s", names[i]);
			break;
		}
	free(names);
}

static int
drm_entry(struct scan *sc, const char *dir, const char *name, void *out)
{
	char vendor[DEV_VALUE_MAX], device[DEV_VALUE_MAX], driver[DEV_ID_MAX];
	char slot[DEV_ID_MAX], rel[SYSFS_PATH_MAX], node[DEV_VALUE_MAX];
	char render[DEV_VALUE_MAX];
	struct dev_device *d;

	/* Cards only, not their connectors (card0-HDMI-A-1). */
	if (!numbered(name, "card") ||
	    !has(sc->rootfd, "%s/%s/device", dir, name))
		return 0;
	read_at(sc->rootfd, vendor, sizeof(vendor), "%s/%s/device/vendor",
	    dir, name);
	read_at(sc->rootfd, device, sizeof(device), "%s/%s/device/device",
	    dir, name);
	if (!hex_id(vendor, true))
		vendor[0] = '\0';
	if (!hex_id(device, true))
		device[0] = '\0';
	snprintf(rel, sizeof(rel), "%s/%s/device", dir, name);
	link_name(sc->rootfd, rel, "driver", driver, sizeof(driver));
	snprintf(rel, sizeof(rel), "%s/%s", dir, name);
	link_name(sc->rootfd, rel, "device", slot, sizeof(slot));
	render_node(sc->rootfd, name, render, sizeof(render));
	if ((d = add_dev(sc, out, vendor[0] != '\0' ? pci_vendor(vendor) :
	    "unknown", "gpu", first_of(device, driver, "unknown"),
	    name)) == NULL)
		return 0;
	snprintf(node, sizeof(node), "/dev/dri/%s", name);
	dev_attr_set(d, "dev_node", node);
	if (render[0] != '\0')
		dev_attr_set(d, "render_node", render);
	dev_attr_set(d, "vendor_id", vendor);
	dev_attr_set(d, "device_id", device);
	dev_attr_set(d, "driver", driver);
	dev_attr_set(d, "pci_slot", slot);
	return 0;
}

static int
usb_entry(struct scan *sc, const char *dir, const char *name, void *out)
{
	static const char *const attrs[][2] = {
		{ "manufacturer", "manufacturer" }, { "product", "product" },
		{ "serial", "serial" }, { "speed", "speed_mbps" },
	};
	char vid[DEV_VALUE_MAX], pid[DEV_VALUE_MAX], val[4][DEV_VALUE_MAX];
	char bus[16], dev[16], node[64];
	struct dev_device *d;
	uint64_t busnum, devnum;
	size_t j;

	/* Root hubs are the controller's, not something to hand out;
	 * interfaces ("1-1:1.0") never pass name_ok(). */
	if (strncmp(name, "usb", 3) == 0)
		return 0;
	read_at(sc->rootfd, vid, sizeof(vid), "%s/%s/idVendor", dir, name);
	read_at(sc->rootfd, pid, sizeof(pid), "%s/%s/idProduct", dir, name);
	if (!hex_id(vid, false) || !hex_id(pid, false))
		return 0;
	for (j = 0; j < 4; j++)
		read_at(sc->rootfd, val[j], sizeof(val[j]), "%s/%s/%s", dir,
		    name, attrs[j][0]);
	read_at(sc->rootfd, bus, sizeof(bus), "%s/%s/busnum", dir, name);
	read_at(sc->rootfd, dev, sizeof(dev), "%s/%s/devnum", dir, name);
	if ((d = add_dev(sc, out, first_of(val[0], vid, "unknown"), "usb",
	    first_of(val[1], pid, "unknown"), name)) == NULL)
		return 0;
	dev_attr_set(d, "vendor_id", vid);
	dev_attr_set(d, "product_id", pid);
	for (j = 0; j < 4; j++)
		dev_attr_set(d, attrs[j][1], val[j]);
	if (parse_u64(bus, NULL, &busnum) && busnum >= 1 && busnum <= 999 &&
	    parse_u64(dev, NULL, &devnum) && devnum >= 1 && devnum <= 999) {
		snprintf(node, sizeof(node), "/dev/bus/usb/%03u/%03u",
		    (unsigned)busnum, (unsigned)devnum);
		dev_attr_set(d, "dev_node", node);
	} else {
		d->healthy = false;
		snprintf(d->health, sizeof(d->health),
		    "no bus or device number");
	}
	return 0;
}

static int
open_root(const struct sysfs *s, struct scan *sc, char *err, size_t errlen)
{
	memset(sc, 0, sizeof(*sc));
	sc->err = err;
	sc->errlen = errlen;
	if ((sc->rootfd = open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC)) <
	    0) {
		snprintf(err, errlen, "sysfs root %s: %s", s->root,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static int
sysfs_fingerprint(void *state, struct dev_groups *out, char *err,
    size_t errlen)
{
	struct scan sc;
	int r;

	if (open_root(state, &sc, err, errlen) < 0)
		return -1;
	if ((r = walk(&sc, block_dir(sc.rootfd), block_entry, out)) == 0 &&
	    (r = walk(&sc, "class/drm", drm_entry, out)) == 0)
		r = walk(&sc, "bus/usb/devices", usb_entry, out);
	close(sc.rootfd);
	if (r < 0) {
		dev_groups_free(out);
		return -1;
	}
	return 0;
}

/*
 * A device's stats file, read and parsed into at most nf numbers: the
 * count, 0 when the device went since the listing (the fingerprint will
 * say so), or -1 when it is unreadable (counted as bad).
 */
static int
stat_numbers(struct scan *sc, const char *what, uint64_t *f, size_t nf)
{
	char line[SYSFS_READ_MAX + 1];
	const char *p;
	size_t n;
	int r;

	if ((r = read_at(sc->rootfd, line, sizeof(line), "%s", what)) < 0) {
		if (r == -ENOENT)
			return 0;
		stat_bad(sc, what, strerror(-r));
		return -1;
	}
	for (p = line, n = 0; n < nf; n++) {
		while (*p == ' ')
			p++;
		if (*p == '\0' || !parse_u64(p, &p, &f[n]))
			break;
	}
	while (*p == ' ')
		p++;
	/* Newer kernels may add fields: nf read is enough. */
	if (n == 0 || (n < nf && *p != '\0')) {
		stat_bad(sc, what, "not a list of counters");
		return -1;
	}
	return (int)n;
}

/* Block I/O counters from "stat" (Documentation/block/stat.rst). */
static int
block_stat_entry(struct scan *sc, const char *dir, const char *name,
    void *out)
{
	static const struct { const char *key; int field; } fields[] = {
		{ "read_ios", 0 }, { "read_sectors", 2 }, { "write_ios", 4 },
		{ "write_sectors", 6 }, { "in_flight", 8 },
		{ "io_ticks_ms", 9 },
	};
	char what[SYSFS_PATH_MAX];
	struct dev_stat *st;
	uint64_t f[17];
	size_t j;
	int n;

	if (!physical_disk(sc->rootfd, dir, name))
		return 0;
	snprintf(what, sizeof(what), "%s/%s/stat", dir, name);
	if ((n = stat_numbers(sc, what, f, 17)) <= 0)
		return 0;
	if (n < 11) {
		stat_bad(sc, what, "fewer than 11 counters");
		return 0;
	}
	st = dev_stats_add(out, "block", name);
	sc->ok++;
	for (j = 0; j < sizeof(fields) / sizeof(fields[0]); j++)
		dev_stat_set(st, fields[j].key, f[fields[j].field]);
	return 0;
}

/* Where the driver has one (amdgpu): the GPU's busy percentage. */
static int
drm_stat_entry(struct scan *sc, const char *dir, const char *name, void *out)
{
	char what[SYSFS_PATH_MAX];
	struct dev_stat *st;
	uint64_t busy;

	if (!numbered(name, "card"))
		return 0;
	snprintf(what, sizeof(what), "%s/%s/device/gpu_busy_percent", dir,
	    name);
	if (stat_numbers(sc, what, &busy, 1) <= 0)
		return 0;
	if (busy > 100) {
		stat_bad(sc, what, "not a percentage");
		return 0;
	}
	st = dev_stats_add(out, "gpu", name);
	sc->ok++;
	dev_stat_set(st, "busy_percent", busy);
	return 0;
}

static int
sysfs_stats(void *state, struct dev_stats *out, char *err, size_t errlen)
{
	struct scan sc;
	int r;

	if (open_root(state, &sc, err, errlen) < 0)
		return -1;
	if ((r = walk(&sc, block_dir(sc.rootfd), block_stat_entry, out)) == 0)
		r = walk(&sc, "class/drm", drm_stat_entry, out);
	close(sc.rootfd);
	/* A device without counters is not an error; no counters at all is. */
	if (r == 0 && sc.ok == 0 && sc.bad > 0)
		r = -1;
	if (r < 0) {
		dev_stats_free(out);
		return -1;
	}
	return 0;
}

/* Is the device's sysfs entry still there? */
static bool
present(int rootfd, const char *type, const char *id)
{
	if (strcmp(type, "block") == 0)
		return physical_disk(rootfd, block_dir(rootfd), id);
	if (strcmp(type, "gpu") == 0)
		return has(rootfd, "class/drm/%s/device", id);
	if (strcmp(type, "usb") == 0)
		return has(rootfd, "bus/usb/devices/%s/idVendor", id);
	return false;
}

static int
sysfs_reserve(void *state, const struct dev_group *g,
    const struct dev_device *const *devs, size_t n,
    struct dev_reservation *out, char *err, size_t errlen)
{
	char visible[1024];
	const char *node;
	struct scan sc;
	size_t i, off = 0;
	int r = 0;

	if (open_root(state, &sc, err, errlen) < 0)
		return -EIO;
	visible[0] = '\0';
	for (i = 0; i < n && r == 0; i++) {
		if (!name_ok(devs[i]->id, NULL) ||
		    !present(sc.rootfd, g->type, devs[i]->id)) {
			snprintf(err, errlen, "device %s (%s %s %s) is no "
			    "longer in sysfs; it cannot be reserved",
			    devs[i]->id, g->vendor, g->type, g->name);
			r = -ENODEV;
		} else if ((node = dev_attr_get(devs[i], "dev_node")) == NULL) {
			snprintf(err, errlen, "device %s has no device node",
			    devs[i]->id);
			r = -ENODEV;
		} else {
			dev_reservation_node(out, node);
			if ((node = dev_attr_get(devs[i], "render_node")) !=
			    NULL)
				dev_reservation_node(out, node);
			if (off < sizeof(visible))
				off += (size_t)snprintf(visible + off,
				    sizeof(visible) - off, "%s%s", i > 0 ?
				    "," : "", devs[i]->id);
		}
	}
	close(sc.rootfd);
	if (r == 0 && off >= sizeof(visible)) {
		snprintf(err, errlen, "too many devices for one reservation");
		r = -E2BIG;
	}
	if (r == 0)
		dev_reservation_env(out, "BERTH_VISIBLE_DEVICES", visible);
	if (r < 0)
		dev_reservation_free(out);
	return r;
}

static void
sysfs_free(void *state)
{
	struct sysfs *s = state;

	if (s == NULL)
		return;
	free(s->root);
	free(s);
}

void *
dev_sysfs_new(const char *root)
{
	struct sysfs *s;

	s = xcalloc(1, sizeof(*s));
	s->root = xstrdup(root);
	return s;
}

const struct devplugin dev_sysfs_plugin = {
	.name = "sysfs",
	.fingerprint = sysfs_fingerprint,
	.stats = sysfs_stats,
	.reserve = sysfs_reserve,
	.free = sysfs_free,
};
