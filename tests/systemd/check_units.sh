#!/bin/sh
# check_units.sh UNITDIR BUILDDIR LIBEXECDIR SBINDIR
#
# The security targets of DESIGN.md, checked on the units meson configured:
# "systemd-analyze security --offline=yes" exposure at most the figure set
# below for each service, and "systemd-analyze verify" without a word.
# verify insists that ExecStart= names an executable, so the units are
# checked in a copy that points at the build tree instead of the install
# paths. Skips (77) only when systemd-analyze is not installed at all.
set -u

unitdir=$1 builddir=$2 libexecdir=$3 sbindir=$4

# Unit and its highest acceptable exposure. The mounter's figure is over
# DESIGN.md's 3.0 (root, mounting in the host's namespace, without
# RestrictSUIDSGID=, which breaks openat2, and creating each privileged
# plugin's mnt, uts, ipc and cgroup namespaces, and running each task's
# crun, which inherits the unit's sandbox): see contrib/systemd/README.md
# ("Exposure"). tests/systemd/boot-inside.sh holds the installed units to
# the same figures.
limits="berth-supervisor.service 1.0
berth-registry.service 1.0
berth-mounter.service 5.5"

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "check_units: systemd-analyze is missing (apt-get install" \
	    "systemd; scripts/setup.sh does)" >&2
	exit 77
fi

tmp=$(mktemp -d /tmp/berth-test-units-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

for f in "$unitdir"/berth*.service "$unitdir"/berth*.socket \
    "$unitdir"/berth.target "$unitdir"/berth-helpers.target; do
	[ -f "$f" ] || { echo "check_units: $f is missing" >&2; exit 1; }
	sed -e "s|$libexecdir/berth-stop|$unitdir/berth-stop|g" \
	    -e "s|$libexecdir/|$builddir/|g" -e "s|$sbindir/|$builddir/|g" \
	    "$f" > "$tmp/${f##*/}"
done

# --man=no: the pages are built, not installed, on a test machine.
out=$(cd "$tmp" && systemd-analyze verify --man=no ./berth* 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
	echo "check_units: systemd-analyze verify (status $rc):" >&2
	echo "$out" >&2
	fail=1
else
	echo "verify: clean"
fi

echo "$limits" | while read -r unit limit; do
	report=$(systemd-analyze security --offline=yes --no-pager \
	    "$tmp/$unit" 2>&1)
	got=$(echo "$report" | sed -n \
	    's/^.*Overall exposure level for [^:]*: \([0-9.]*\).*$/\1/p')
	if [ -z "$got" ]; then
		echo "check_units: no exposure figure for $unit:" >&2
		echo "$report" >&2
		exit 1
	fi
	if awk -v g="$got" -v l="$limit" 'BEGIN { exit !(g > l) }'; then
		echo "check_units: $unit exposure $got is over $limit;" \
		    "what it lacks:" >&2
		echo "$report" | grep '✗' >&2
		exit 1
	fi
	echo "security: $unit $got (at most $limit)"
done || fail=1

exit $fail
