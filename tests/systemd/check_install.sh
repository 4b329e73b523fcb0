#!/bin/sh
# check_install.sh MESON BUILDDIR SBINDIR LIBEXECDIR MANDIR UNITDIR
#     SYSUSERSDIR TMPFILESDIR
#
# "meson install" into a scratch DESTDIR puts every file where Debian
# expects it, and the installed units start the installed binaries.
set -u

meson=$1 builddir=$2 sbindir=$3 libexecdir=$4 mandir=$5 unitdir=$6
sysusersdir=$7 tmpfilesdir=$8

dest=$(mktemp -d /tmp/berth-test-install-XXXXXX) || exit 1
trap 'rm -rf "$dest"' EXIT INT TERM

if ! "$meson" install -C "$builddir" --no-rebuild --quiet \
    --destdir "$dest" >"$dest.log" 2>&1; then
	cat "$dest.log" >&2
	rm -f "$dest.log"
	exit 1
fi
rm -f "$dest.log"
fail=0

want() {
	if [ ! -f "$dest$1" ]; then
		echo "check_install: $1 was not installed" >&2
		fail=1
	elif [ -n "${2:-}" ] && [ ! -x "$dest$1" ]; then
		echo "check_install: $1 is not executable" >&2
		fail=1
	fi
}

want "$sbindir/berth-supervisor" x
want "$libexecdir/berth-mounter" x
want "$libexecdir/berth-registry" x
want "$libexecdir/berth-stop-workloads" x
want "$libexecdir/berth-csi-hostpath" x
for u in berth-supervisor.service berth-mounter.service \
    berth-registry.service berth-mounter.socket berth-registry.socket \
    berth.target berth-helpers.target; do
	want "$unitdir/$u"
done
want "$sysusersdir/berth.conf"
want "$tmpfilesdir/berth.conf"
if command -v scdoc >/dev/null 2>&1; then
	for p in man8/berth-supervisor.8 man8/berth-mounter.8 \
	    man8/berth-registry.8 man1/berthctl.1 man5/berth.json.5 \
	    man5/berth-plugins.d.5 man5/berth-alloc.5 man5/berth-volume.5; do
		want "$mandir/$p"
	done
fi

# Each ExecStart= names a binary that was installed.
for u in berth-supervisor berth-mounter berth-registry; do
	exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' \
	    "$dest$unitdir/$u.service" 2>/dev/null)
	if [ -z "$exe" ] || [ ! -x "$dest$exe" ]; then
		echo "check_install: $u.service starts '$exe'," \
		    "which was not installed" >&2
		fail=1
	fi
done
[ $fail -eq 0 ] &&
    echo "installed: $(cd "$dest" && find . -type f | wc -l) files"
exit $fail
