/*
 * dev_sysfs.h: the built-in device plugin. It reads real devices from a
 * sysfs tree (config sysfs_root, /sys by default): block devices
 * (/sys/block, or /sys/class/block without partitions), GPUs of the DRM
 * class (/sys/class/drm/cardN/device) and USB devices
 * (/sys/bus/usb/devices), grouped by vendor, type ("block", "gpu",
 * "usb") and name, with their attributes; block I/O counters (and a GPU's
 * busy percentage where the driver has one) as stats; and device nodes
 * plus BERTH_VISIBLE_DEVICES for a reservation.
 *
 * sysfs content is untrusted input: every lookup goes from the root with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so relative symlinks
 * inside the tree work as in real sysfs while none leads out of it;
 * reads are bounded, non-printable bytes are replaced, names are checked
 * against an allow-list, and the number of devices is capped.
 */
#ifndef BERTH_DEV_SYSFS_H
#define BERTH_DEV_SYSFS_H

#include "devmgr.h"

extern const struct devplugin dev_sysfs_plugin;

/* The plugin's state for the tree at root; never NULL. */
void *dev_sysfs_new(const char *root);

#endif
