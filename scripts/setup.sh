#!/bin/sh
# Install what berth needs on Debian 12, idempotently: build tools and
# libraries (apt), crun (berth-mounter runs each task's sandbox with it),
# the two unprivileged users the processes run as, the API's group, and
# root's task sandbox template. For the suite only (test.sh sets
# BERTH_SETUP_TESTS=1): the tools of the systemd-boot suite (mmdebstrap
# builds a Debian root, systemd-nspawn boots it), promtool (prometheus)
# and etcd-server (the etcd client's tests run a cluster of it); the main
# job does not install these, whose packages would also run daemons of
# their own on a booted machine.
# Sourced by run.sh and test.sh; safe to run again and again.
set -eu

PKGS="meson ninja-build pkg-config gcc clang libclang-rt-14-dev
 libprotobuf-c-dev protobuf-c-compiler libgrpc-dev libevent-dev libcap-dev
 libseccomp-dev libsqlite3-dev libjansson-dev libcurl4-openssl-dev check
 libfuse3-dev sqlite3 util-linux procps systemd scdoc crun"
if [ "${BERTH_SETUP_TESTS:-0}" = 1 ]; then
	PKGS="$PKGS mmdebstrap systemd-container prometheus etcd-server"
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: run as root (it installs packages and creates users)" >&2
	exit 77
fi

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
	    missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup.sh: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# berth-api: the default api_group, the operator API's own door (the
# helpers' sockets belong to group berth); as sysusers.d/berth.conf makes.
getent group berth-api >/dev/null || groupadd --system berth-api
for u in berth berth-registry; do
	getent passwd "$u" >/dev/null ||
	    useradd --system --no-create-home --home-dir /nonexistent \
	    --shell /usr/sbin/nologin "$u"
done

# Root's template of a task's sandbox, where berth-mounter looks by default
# (--task-conf /etc/berth); an operator's own copy is kept, unless it
# lacks a placeholder this berth's mounter needs: then it is set aside as
# .old and the shipped one installed, and that is said: {plugin_mounts},
# and the "rslave" of the {task_dir} bind (a running task then sees its
# volumes bound again after a plugin restart: berth-volume(5)).
here=$(dirname "$0")
install -d -m 0755 /etc/berth
for f in task-sandbox.json users.allow; do
	[ -e "/etc/berth/$f" ] ||
	    install -m 0644 "$here/../contrib/sandbox/$f" /etc/berth/
done
if ! grep -q '{plugin_mounts}' /etc/berth/task-sandbox.json ||
    ! grep -A1 '"source": "{task_dir}"' /etc/berth/task-sandbox.json |
    grep -q '"rslave"'; then
	mv /etc/berth/task-sandbox.json /etc/berth/task-sandbox.json.old
	install -m 0644 "$here/../contrib/sandbox/task-sandbox.json" \
	    /etc/berth/
	echo "setup: /etc/berth/task-sandbox.json had no {plugin_mounts}" \
	    "or no rslave {task_dir} bind; the shipped template replaces it" \
	    "(yours: task-sandbox.json.old)"
fi

# crun refuses a hybrid host whose cgroup v2 hierarchy holds a controller
# ("cgroups in hybrid mode not supported, drop all controllers from
# cgroupv2"). Where v2 is mounted beside v1 and holds one (hugetlb, on
# hosts whose systemd left it there), it goes back to a v1 hierarchy of
# its own, which takes it away from v2. Nothing is done on a pure v1 or
# pure v2 host.
v2=/sys/fs/cgroup/unified
if [ -r "$v2/cgroup.controllers" ] && [ -s "$v2/cgroup.controllers" ] &&
    grep -qw hugetlb "$v2/cgroup.controllers" &&
    ! mountpoint -q /sys/fs/cgroup/hugetlb; then
	mkdir -p /sys/fs/cgroup/hugetlb
	mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb
fi
