#!/bin/sh
# The root-run berth-mounter links only what it needs (issue 14): the
# protobuf-c decoder, libevent's core, libcap and libseccomp. A library
# that is not on this list (libsystemd brought libgcrypt, liblzma,
# libzstd and liblz4 into the root process) fails the test; the
# sanitizers' runtimes are let through for -Db_sanitize builds.
#
#	tests/mounter_links.sh BERTH-MOUNTER
set -eu
needed=$(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
bad=
for lib in $needed; do
	case $lib in
	libprotobuf-c.so.*|libevent_core-*.so.*|libcap.so.*|\
	libseccomp.so.*|libc.so.*|libasan.so.*|libubsan.so.*) ;;
	*) bad="$bad $lib" ;;
	esac
done
if [ -n "$bad" ]; then
	echo "berth-mounter links what it must not:$bad" >&2
	exit 1
fi
echo "berth-mounter links: $needed"
