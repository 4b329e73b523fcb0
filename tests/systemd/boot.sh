#!/bin/sh
# boot.sh SRCDIR BUILDDIR
#
# The shipped units under a real systemd (meson suite systemd-boot): a
# Debian 12 root built with mmdebstrap (cached in /var/cache/berth-test,
# rebuilt only when its package list changes), berth installed into a
# fresh copy of it with "DESTDIR=... meson install" from a build
# configured as README says (--prefix=/usr), booted with systemd-nspawn,
# and boot-inside.sh run in it as a service of its systemd.
#
# On the host nothing is left: nspawn runs in a mount namespace of its
# own (the overlay and everything it mounts go with it) and in a cgroup
# of its own, which is killed and removed whatever happens. A root that
# cannot be built is a failure that says why, never a skip.
set -u

src=$1 build=$2
PKGS="systemd,systemd-sysv,dbus,sudo,jq,procps,util-linux,mount,crun"
# berth's runtime libraries (what meson links, as Debian 12 names them).
PKGS="$PKGS,libprotobuf-c1,libgrpc29,libevent-2.1-7,libevent-core-2.1-7"
PKGS="$PKGS,libevent-pthreads-2.1-7,libevent-extra-2.1-7,libcap2"
PKGS="$PKGS,libseccomp2,libsqlite3-0,libjansson4,libsystemd0,libcurl4"
PKGS="$PKGS,libfuse3-3"
SUITE=bookworm
cache=${BERTH_BOOT_CACHE:-/var/cache/berth-test}

say() { echo "boot: $*"; }
fail() { echo "boot: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] ||
    fail "needs root: it builds a root file system and boots it"
for t in mmdebstrap systemd-nspawn nsenter unshare findmnt flock meson \
    ninja; do
	command -v "$t" >/dev/null 2>&1 || fail "$t is missing (apt-get" \
	    "install mmdebstrap systemd-container; scripts/setup.sh does)"
done

# Everything below happens in a mount namespace of our own.
if [ -z "${BERTH_BOOT_NS:-}" ]; then
	BERTH_BOOT_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi

# 1. The root file system, built once per package list.
key=$(printf '%s minbase %s\n' "$SUITE" "$PKGS" | sha256sum | cut -c1-16)
rootfs=$cache/rootfs-$key
mkdir -p "$cache" || fail "cannot create $cache"
exec 9>"$cache/lock"
flock 9
if [ ! -d "$rootfs" ]; then
	say "building a $SUITE root in $rootfs (once per package list)"
	for old in "$cache"/rootfs-*; do
		[ -d "$old" ] && rm -rf "$old"
	done
	if ! mmdebstrap --variant=minbase --include="$PKGS" "$SUITE" \
	    "$rootfs.tmp" >"$cache/mmdebstrap.log" 2>&1; then
		tail -n 30 "$cache/mmdebstrap.log" >&2
		rm -rf "$rootfs.tmp"
		fail "mmdebstrap could not build the root (log above, whole in" \
		    "$cache/mmdebstrap.log): is Debian's package registry" \
		    "reachable?"
	fi
	mv "$rootfs.tmp" "$rootfs"
fi
flock -u 9
exec 9>&-

work=$(mktemp -d /tmp/berth-test-boot-XXXXXX) || fail "mktemp"
cg="" nspawn="" cpid=""
cleanup() {
	if [ -n "$cg" ] && [ -d "$cg" ]; then
		echo 1 >"$cg/cgroup.kill" 2>/dev/null
		i=0
		while [ -n "$(find "$cg" -name cgroup.procs -exec cat {} + \
		    2>/dev/null)" ] && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$cg" ] && echo "boot: cannot remove $cg" >&2
	fi
	# On a hybrid host the same cgroup is made in the v1 hierarchies too
	# (name=systemd, as systemd-nspawn follows it): emptied and removed.
	for d in /sys/fs/cgroup/*/"berth-test-boot-$$"; do
		[ -d "$d" ] || continue
		i=0
		while p=$(find "$d" -name cgroup.procs -exec cat {} + \
		    2>/dev/null) && [ -n "$p" ] && [ $i -lt 100 ]; do
			kill -KILL $p 2>/dev/null
			sleep 0.1
			i=$((i + 1))
		done
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$d" ] && echo "boot: cannot remove $d" >&2
	done
	[ -n "$nspawn" ] && wait "$nspawn" 2>/dev/null
	umount -l "$work/root" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# 2. A fresh copy of it (an overlay: the cache stays clean), and berth.
mkdir "$work/upper" "$work/ovl" "$work/root"
mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$work/upper" \
    -o "workdir=$work/ovl" "$work/root" || fail "cannot mount an overlay"
ib=$build/systemd-boot-install
if [ ! -d "$ib" ]; then
	meson setup "$ib" "$src" --prefix=/usr -Dtests=disabled \
	    >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2;
	    fail "meson setup --prefix=/usr failed"; }
fi
ninja -C "$ib" >"$work/ninja.log" 2>&1 ||
    { tail -n 40 "$work/ninja.log" >&2; fail "building $ib failed"; }
DESTDIR=$work/root meson install -C "$ib" --no-rebuild --quiet \
    >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "meson install failed"; }
say "installed: $(find "$work/upper" -type f | wc -l) files"
t=$work/root/root/berth-test
mkdir -p "$t"
cp "$src/tests/systemd/boot-inside.sh" "$src/README.md" "$t/"
cp "$src"/man/*.scd "$t/"
echo berth-boot >"$work/root/etc/hostname"
echo "127.0.1.1 berth-boot" >>"$work/root/etc/hosts"

# 3. Boot it, from a cgroup of its own on the cgroup2 hierarchy, twice:
# the second boot is the reboot of a node whose allocations ran.
cgroot=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$cgroot" ] || fail "no cgroup2 hierarchy is mounted"
cg=$cgroot/berth-test-boot-$$
mkdir "$cg" || fail "cannot create the cgroup $cg"
ctr() { nsenter -t "$cpid" -a "$@"; }

boot() {
	cpid=""
	(
		echo 0 >"$cg/cgroup.procs" || exit 1
		exec env SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 systemd-nspawn \
		    -q -b -D "$work/root" --register=no --keep-unit \
		    --private-network \
		    -M berth-boot </dev/null >>"$work/console" 2>&1
	) &
	nspawn=$!
	i=0
	while [ -z "$cpid" ]; do
		for f in $(find "$cg" -name cgroup.procs); do
			for p in $(cat "$f"); do
				grep -qs '^NSpid:.*[[:space:]]1$' \
				    "/proc/$p/status" && cpid=$p
			done
		done
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 "$nspawn" 2>/dev/null; then
			cat "$work/console" >&2
			fail "the container did not start"
		fi
		[ -n "$cpid" ] || sleep 0.1
	done
	# Until its systemd answers on its private bus ("offline" before it
	# made /run/systemd/system), then until it booted.
	i=0
	while :; do
		state=$(ctr timeout 60 systemctl is-system-running --wait 2>&1)
		case $state in *bus*|offline) ;; *) break ;; esac
		i=$((i + 1))
		[ $i -gt 300 ] && break
		sleep 0.1
	done
	case $state in
	running|degraded) say "booted: systemd pid $cpid on the host, $state" ;;
	*)	cat "$work/console" >&2; fail "the system did not boot: $state" ;;
	esac
	[ "$state" = degraded ] && ctr systemctl --failed --no-pager
}

# halt poweroff|reboot: the container's systemd stops everything.
halt() {
	ctr systemctl "$1" >/dev/null 2>&1
	i=0
	while kill -0 "$nspawn" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -0 "$nspawn" 2>/dev/null && fail "the container did not $1"
	wait "$nspawn"
	nspawn=""
	find "$cg" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
}

# 4. The checks, as a service of the container's systemd.
checks() {
	ctr systemd-run --wait --pipe -q --collect \
	    -p RuntimeMaxSec=15min /bin/sh /root/berth-test/boot-inside.sh \
	    "$1" || fail "the checks inside failed ($1)"
}
boot
checks first-boot
halt reboot
say "rebooting, with the plugin and the writer running"
boot
checks after-reboot
halt poweroff
say "all checks passed"
