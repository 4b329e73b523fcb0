#!/bin/sh
# Install what berth needs on Debian 12, idempotently: build tools and
# libraries (apt), the tools of the systemd-boot suite (mmdebstrap builds
# a Debian root, systemd-nspawn boots it), and the two unprivileged users
# the processes run as, and the API's group.
# Sourced by run.sh and test.sh; safe to run again and again.
set -eu

PKGS="meson ninja-build pkg-config gcc clang libclang-rt-14-dev
 libprotobuf-c-dev protobuf-c-compiler libgrpc-dev libevent-dev libcap-dev
 libseccomp-dev libsqlite3-dev libjansson-dev libcurl4-openssl-dev check
 sqlite3 util-linux procps systemd scdoc mmdebstrap systemd-container
 prometheus"

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
