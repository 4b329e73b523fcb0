#!/bin/sh
# check_man_examples.sh SRCDIR BUILDDIR: every example in the man pages
# (man/*.scd) runs against a real berth that this test starts.
#
# Each code block of a page follows a line "; example: KIND" (an scdoc
# comment); a block without one fails the test, so no example goes
# unrun. KIND says what the block is and how it is run:
#
#   berth.json       a configuration: berth-supervisor starts with it
#   plugins.d        a plugin definition, its file named on its first
#                    line: put in the plugins directory, for the mounter
#   alloc            an allocation: berthctl alloc run --wait; the
#                    plugins it defines must become healthy
#   volume-create    berthctl volume create
#   volume-register  berthctl volume register
#   shell            a script: sh -e, with berthctl and the API at hand
#   drain            a shell script that drains the node: run last, once
#                    the examples' allocations and volumes are gone, so
#                    that it stops the plugins itself
#
# Blocks run as written but for the installed layout's paths, which a
# test must not touch: a berth.json's directories become the test's own,
# and a plugin definition's /usr/libexec/berth/ and /var/lib/ become the
# build directory and a scratch directory (tests/systemd/boot-inside.sh
# runs the plugins.d and berth.json examples at the installed paths,
# under systemd). Pages run in the order their examples build on each
# other: the plugin, then its volumes, then allocations that use them.
#
# Root; in a mount and a pid namespace of its own, so that every mount
# and process of berth's goes with it. Skips (77) when not root.
set -u

if [ "${1:-}" != inner ]; then
	src=$1 build=$2
	if [ "$(id -u)" -ne 0 ]; then
		echo "check_man_examples: needs root (a berth in namespaces)" >&2
		exit 77
	fi
	tmp=$(mktemp -d /tmp/berth-test-man-XXXXXX) || exit 1
	chmod 755 "$tmp"
	unshare -m -p -f --mount-proc --propagation private \
	    sh "$0" inner "$src" "$build" "$tmp"
	rc=$?
	rm -rf "$tmp"
	exit $rc
fi

src=$2 build=$3 tmp=$4
api=$tmp/run/api.sock
export BERTH_API="$api" PATH="$build:$PATH"
sv=
fail() {
	echo "check_man_examples: FAIL: $*" >&2
	if [ -n "$sv" ] && [ -f "$tmp/sv.log" ]; then
		echo "--- the supervisor's last lines:" >&2
		tail -n 30 "$tmp/sv.log" >&2
	fi
	exit 1
}
# wait_for SECONDS COMMAND...: until COMMAND succeeds, or 1.
wait_for() {
	n=$(($1 * 10))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}
gone() { ! berthctl alloc status "$1" >/dev/null 2>&1; }

# start CONFIG LOG: berth-supervisor with CONFIG, until its API answers.
start() {
	"$build/berth-supervisor" -c "$1" >"$2" 2>&1 &
	sv=$!
	wait_for 30 berthctl --socket "$3" status ||
	    fail "berth-supervisor -c $1 did not come up: $(tail -n 5 "$2")"
}
stop() {
	kill -TERM "$sv" 2>/dev/null
	wait "$sv"
	sv=
}

# Every block, with its kind, into $tmp/ex/<page>.<n>@<kind>.
mkdir -m 755 "$tmp/ex" "$tmp/work" "$tmp/var-lib" || exit 1
for scd in "$src"/man/*.scd; do
	page=$(basename "$scd" .scd)
	awk -v out="$tmp/ex" -v page="$page" '
	/^```/ {
		if (inb) { inb = 0; close(f); next }
		inb = 1; n++
		if (prev !~ /^; example: [a-z.-]+$/) {
			printf "%s: code block %d has no \"; example: KIND\" " \
			    "line before it\n", page, n > "/dev/stderr"
			bad = 1; f = "/dev/null"
		} else {
			kind = prev; sub(/^; example: /, "", kind)
			f = sprintf("%s/%s.%d@%s", out, page, n, kind)
		}
		next
	}
	inb { print > f; next }
	{ prev = $0 }
	END { exit bad }' "$scd" || fail "$page has an unmarked example"
done
ls "$tmp/ex"
[ -n "$(ls "$tmp/ex")" ] || fail "no example found in $src/man"

# The configurations first, each with a berth of its own.
i=0
for ex in "$tmp"/ex/*@berth.json; do
	[ -e "$ex" ] || continue
	i=$((i + 1))
	d=$tmp/cfg$i
	mkdir -m 755 "$d" "$d/allocs" "$d/plugins.d"
	jq --arg d "$d" '. + {data_dir: ($d + "/data"), run_dir: ($d + "/run"),
	    alloc_dir: ($d + "/allocs"), plugins_dir: ($d + "/plugins.d")}' \
	    "$ex" >"$d/berth.json" || fail "$ex is not JSON"
	echo "== $(basename "$ex"): berth-supervisor starts with it"
	cat "$d/berth.json"
	start "$d/berth.json" "$d/sv.log" "$d/run/api.sock"
	berthctl --socket "$d/run/api.sock" status || fail "status"
	stop
done

# The plugin definitions, then the berth that runs everything else.
mkdir -m 755 "$tmp/plugins.d" "$tmp/allocs"
# The API writes allocations there as the supervisor's user (tmpfiles.d).
chown berth "$tmp/allocs" || exit 1
for ex in "$tmp"/ex/*@plugins.d; do
	[ -e "$ex" ] || continue
	name=$(sed -n '1s|^# /etc/berth/plugins.d/\([^/ ]*\.conf\)$|\1|p' "$ex")
	[ -n "$name" ] || fail "$ex names no plugins.d file on its first line"
	sed "s|/usr/libexec/berth/|$build/|g; s|/var/lib/|$tmp/var-lib/|g" \
	    "$ex" >"$tmp/plugins.d/$name"
	echo "== $(basename "$ex"): $name, for the mounter"
	cat "$tmp/plugins.d/$name"
done
cat >"$tmp/berth.json" <<EOF
{"data_dir": "$tmp/data", "run_dir": "$tmp/run",
 "alloc_dir": "$tmp/allocs", "plugins_dir": "$tmp/plugins.d",
 "plugin_heartbeat": "1s", "plugin_resync": "2s"}
EOF
start "$tmp/berth.json" "$tmp/sv.log" "$api"

allocs= plugins= volumes=
run_alloc() {
	id=$(jq -r .id "$1") || fail "$1 is not JSON"
	cp "$1" "$tmp/work/$id.json"
	berthctl alloc run "$tmp/work/$id.json" --wait --timeout 60s ||
	    fail "alloc run $(basename "$1")"
	for p in $(jq -r '.tasks[].csi_plugin.id // empty' "$1"); do
		berthctl plugin status "$p" --wait-healthy --timeout 60s ||
		    fail "plugin $p of $(basename "$1") is not healthy"
	done
	if [ -n "$(jq -r '.tasks[].csi_plugin // empty' "$1")" ]; then
		plugins="$id $plugins"
	else
		allocs="$id $allocs"
	fi
}
run_volume() {
	id=$(jq -r .id "$2") || fail "$2 is not JSON"
	cp "$2" "$tmp/work/$id.json"
	berthctl volume "$1" "$tmp/work/$id.json" ||
	    fail "volume $1 $(basename "$2")"
	berthctl --json volume status "$id" >/dev/null ||
	    fail "volume $id is not there after volume $1"
	volumes="$id $volumes"
}
for page in berth-plugins.d.5 berth-volume.5 berth-alloc.5 berthctl.1 \
    $(cd "$src/man" && ls *.scd | sed 's/\.scd$//'); do
	for ex in "$tmp/ex/$page".*; do
		[ -e "$ex" ] || continue
		kind=${ex##*@}
		case $kind in
		berth.json|plugins.d|drain) continue ;;
		esac
		echo "== $(basename "$ex")"
		cat "$ex"
		case $kind in
		alloc) run_alloc "$ex" ;;
		volume-create) run_volume create "$ex" ;;
		volume-register) run_volume register "$ex" ;;
		shell) (cd "$tmp/work" && sh -e "$ex") ||
		    fail "$(basename "$ex") failed" ;;
		*) fail "$(basename "$ex"): unknown kind \"$kind\"" ;;
		esac
		rm "$ex"
	done
done

# What the examples started stops, and their volumes go: the user's
# allocations, then the volumes, then the plugins.
echo "== stopping: $allocs; volumes: $volumes; plugins: $plugins"
for a in $allocs; do
	berthctl alloc stop "$a" >/dev/null || fail "alloc stop $a"
	wait_for 30 gone "$a" || fail "alloc $a did not stop"
done
for v in $volumes; do
	berthctl volume delete "$v" >/dev/null || fail "volume delete $v"
done
for ex in "$tmp/ex/"*@drain; do
	[ -e "$ex" ] || continue
	echo "== $(basename "$ex")"
	cat "$ex"
	(cd "$tmp/work" && sh -e "$ex") || fail "$(basename "$ex") failed"
	rm "$ex"
done
for a in $plugins; do
	# A drain example stopped them already.
	berthctl alloc status "$a" >/dev/null 2>&1 || continue
	berthctl alloc stop "$a" >/dev/null || fail "alloc stop $a"
	wait_for 30 gone "$a" || fail "plugin alloc $a did not stop"
done
stop
echo "check_man_examples: every example ran"
