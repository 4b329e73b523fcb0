#!/bin/sh
# berth's main job, from a fresh Debian 12 machine: install, build, start
# the three processes (spawn mode), run the bundled sample CSI plugin as a
# privileged plugin confined by the mounter, create a volume, run an
# allocation whose task writes to it and another whose task reads it,
# then stop everything and show that no mount is left behind.
#
#	sudo scripts/run.sh
#
# Everything happens in a temporary directory and a mount namespace of
# its own: nothing berth mounts here reaches the host.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${BERTH_RUN_INSIDE:-}" ]; then
	. "$src/scripts/setup.sh"
	build=$src/build
	[ -d "$build" ] || meson setup "$build" "$src" >/dev/null
	ninja -C "$build" berth-supervisor berth-mounter berth-registry \
	    berth-csi-hostpath berth-shim berthctl >/dev/null
	BERTH_RUN_INSIDE=1 exec unshare -m --propagation private "$0" "$@"
fi

build=$src/build
work=$(mktemp -d /tmp/berth-run-XXXXXX)
chmod 755 "$work"
sv=""
step() { printf '\n== %s\n' "$*"; }
cleanup() {
	if [ -n "$sv" ] && kill -0 "$sv" 2>/dev/null; then
		kill -TERM "$sv" 2>/dev/null
		wait "$sv" 2>/dev/null || true
	fi
	# Tasks and plugins outlive the supervisor by design; here they go.
	for p in $(sed -n 's/.*message="pid \([0-9]*\).*/\1/p' \
	    "$work/log" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null || true
	done
	grep " $work/" /proc/self/mountinfo | awk '{ print $5 }' |
	    sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE
fail() {
	echo "run.sh: $*" >&2
	echo "--- the supervisor's log:" >&2
	cat "$work/log" >&2
	exit 1
}
ctl() { "$build/berthctl" --socket "$work/run/api.sock" "$@"; }
mounts() { grep -c " $work/" /proc/self/mountinfo || true; }

mkdir -p "$work/allocs" "$work/plugins.d" "$work/hostpath"
chmod 755 "$work/plugins.d"
cat >"$work/berth.json" <<JSON
{
  "data_dir": "$work/data",
  "run_dir": "$work/run",
  "alloc_dir": "$work/allocs",
  "plugins_dir": "$work/plugins.d",
  "plugin_heartbeat": "5s"
}
JSON
chmod 777 "$work/allocs"	# the API writes submitted allocations here
# Root's definition of a privileged plugin: what the mounter may start.
cat >"$work/plugins.d/hostpath.conf" <<CONF
exec $build/berth-csi-hostpath
arg --node-id
arg $(hostname)
arg --state-dir
arg $work/hostpath
arg --mode
arg monolith
arg --strict
arg --endpoint={csi_endpoint}
cap CAP_SYS_ADMIN
cap CAP_CHOWN
CONF
chmod 644 "$work/plugins.d/hostpath.conf"

step "config $work/berth.json"
cat "$work/berth.json"
step "starting berth-supervisor (spawn mode: it starts the two helpers)"
"$build/berth-supervisor" -c "$work/berth.json" 2>"$work/log" &
sv=$!
i=0
until grep -q "ready:" "$work/log"; do
	i=$((i + 1))
	[ $i -le 100 ] && kill -0 "$sv" 2>/dev/null ||
	    fail "berth did not become ready"
	sleep 0.1
done
mp=$(sed -n 's/.*berth-mounter pid \([0-9]*\).*/\1/p' "$work/log")
rp=$(sed -n 's/.*berth-registry pid \([0-9]*\).*/\1/p' "$work/log")
printf '%-17s %-7s %-6s %-17s %-4s %s\n' process pid uid CapEff NNP Seccomp
for p in "berth-supervisor:$sv" "berth-mounter:$mp" "berth-registry:$rp"; do
	pid=${p##*:}
	f() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
	printf '%-17s %-7s %-6s %-17s %-4s %s\n' "${p%%:*}" "$pid" "$(f Uid)" \
	    "$(f CapEff)" "$(f NoNewPrivs)" "$(f Seccomp)"
done
echo "(CapEff 0000000000200001 = CAP_SYS_ADMIN + CAP_CHOWN; Seccomp 2 = filter)"

step "the sample CSI plugin, privileged, confined by the mounter"
cat >"$work/plugin.json" <<JSON
{"id": "hostpath-plugin", "tasks": [{"name": "plugin",
  "driver": "privileged", "config": {"plugin": "hostpath"},
  "csi_plugin": {"id": "hostpath", "type": "monolith"}}]}
JSON
ctl alloc run "$work/plugin.json" --wait --timeout 30s ||
    fail "the plugin's allocation did not start"
ctl plugin status hostpath --wait-healthy --timeout 30s ||
    fail "the plugin did not become healthy"

step "a volume, created through the plugin's controller"
cat >"$work/volume.json" <<JSON
{"id": "shared", "plugin_id": "hostpath",
 "access_mode": "multi-node-single-writer", "attachment_mode": "file-system"}
JSON
ctl volume create "$work/volume.json" || fail "volume create failed"

step "an allocation whose task writes to the volume"
cat >"$work/writer.json" <<JSON
{"id": "writer",
 "volumes": {"data": {"type": "csi", "source": "shared",
   "access_mode": "multi-node-single-writer",
   "attachment_mode": "file-system"}},
 "tasks": [{"name": "write", "driver": "exec",
   "config": {"command": "/bin/sh", "args": ["-c",
     "date -u +'written at %H:%M:%S' > volumes/data/note && sleep 3600"]},
   "volume_mounts": [{"volume": "data", "destination": "data"}]}]}
JSON
ctl alloc run "$work/writer.json" --wait --timeout 60s ||
    fail "the writer did not start"
i=0
until [ -s "$work/hostpath/volumes/shared/note" ]; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "the writer wrote nothing"
	sleep 0.1
done

step "an allocation whose task reads it (read-only)"
cat >"$work/reader.json" <<JSON
{"id": "reader",
 "volumes": {"data": {"type": "csi", "source": "shared", "read_only": true,
   "access_mode": "multi-node-single-writer",
   "attachment_mode": "file-system"}},
 "tasks": [{"name": "read", "driver": "exec",
   "config": {"command": "/bin/sh", "args": ["-c",
     "echo \"reader sees: \$(cat volumes/data/note)\"; echo x > volumes/data/x 2>/dev/null && echo 'it could write!' || echo 'and cannot write to it'; sleep 3600"]},
   "volume_mounts": [{"volume": "data", "destination": "data",
     "read_only": true}]}]}
JSON
ctl alloc run "$work/reader.json" --wait --timeout 60s ||
    fail "the reader did not start"
out=$work/data/shim/reader/read/stdout.log	# the shim keeps logs out of the sandbox
i=0
until grep -q "write to it" "$out" 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "the reader printed nothing"
	sleep 0.1
done
cat "$out"
ctl alloc list
ctl volume status shared

step "what berth mounted ($(mounts) mount points under $work)"
grep " $work/" /proc/self/mountinfo |
    awk -v w="$work/" '{ sub(w, "", $5); print "  " $5, $6 }'

step "stopping the allocations, deleting the volume, stopping the plugin"
# Each task leads a process group (its shell and the shell's sleep).
groups=""
for a in reader writer; do
	groups="$groups $(ctl --json alloc status "$a" |
	    sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' | head -n 1)"
done
for a in reader writer; do
	ctl alloc stop "$a"
	i=0
	while ctl alloc status "$a" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -le 300 ] || fail "alloc $a did not stop"
		sleep 0.1
	done
done
ctl volume delete shared || fail "volume delete failed"
ctl alloc stop hostpath-plugin
i=0
while ctl alloc status hostpath-plugin >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -le 300 ] || fail "the plugin's allocation did not stop"
	sleep 0.1
done

# Killed when their task ended; gone once their new parent reaps them.
i=0
while left=$(for g in $groups; do pgrep -g "$g"; done | tr '\n' ' ') &&
    [ -n "$left" ]; do
	i=$((i + 1))
	[ $i -le 50 ] || fail "processes of the tasks outlived them: $left"
	sleep 0.1
done
echo "no process of the tasks' groups ($groups ) is left"

step "events, as the supervisor logged them"
grep -E "event:|volmgr:|alloc [a-z-]*: (stopped|[0-9]* volume)" "$work/log" |
    sed 's/^<[0-9]>//'

step "stopping with SIGTERM: mounter, then registry, then supervisor"
kill -TERM "$sv"
wait "$sv" && status=0 || status=$?
sv=""
left=$(mounts)
echo "berth stopped with status $status; mounts left under $work: $left"
[ "$status" -eq 0 ] && [ "$left" -eq 0 ] || exit 1
echo "run.sh: done"
