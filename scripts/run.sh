#!/bin/sh
# berth's main job, from a fresh Debian 12 machine: install, build, start
# the three processes in spawn mode with a default config, show each one
# with its privileges as the kernel reports them, then stop them cleanly.
#
#	sudo scripts/run.sh
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/scripts/setup.sh"

build=$src/build
[ -d "$build" ] || meson setup "$build" "$src" >/dev/null
ninja -C "$build" berth-supervisor berth-mounter berth-registry \
    berth-csi-hostpath >/dev/null

work=$(mktemp -d /tmp/berth-run-XXXXXX)
chmod 755 "$work"
sv=""
cleanup() {
	[ -n "$sv" ] && kill "$sv" 2>/dev/null && wait "$sv" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
cat >"$work/berth.json" <<JSON
{
  "data_dir": "$work/data",
  "run_dir": "$work/run"
}
JSON
echo "== config $work/berth.json"
cat "$work/berth.json"
echo "== starting berth-supervisor (spawn mode: it starts the two helpers)"
# Its own mount namespace: nothing berth does here reaches the host.
unshare -m --propagation private "$build/berth-supervisor" \
    -c "$work/berth.json" 2>"$work/log" &
sv=$!
i=0
until grep -q "ready:" "$work/log"; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 "$sv" 2>/dev/null; then
		cat "$work/log" >&2
		echo "run.sh: berth did not become ready" >&2
		exit 1
	fi
	sleep 0.1
done
cat "$work/log"
# unshare(1) execs the supervisor in place, so $sv is its pid.
mp=$(sed -n 's/.*berth-mounter pid \([0-9]*\).*/\1/p' "$work/log")
rp=$(sed -n 's/.*berth-registry pid \([0-9]*\).*/\1/p' "$work/log")
echo
echo "== the three processes, from /proc/<pid>/status"
printf '%-17s %-7s %-6s %-17s %-17s %-4s %s\n' process pid uid CapEff CapBnd \
    NNP Seccomp
for p in "berth-supervisor:$sv" "berth-mounter:$mp" "berth-registry:$rp"; do
	name=${p%%:*}
	pid=${p##*:}
	f() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
	printf '%-17s %-7s %-6s %-17s %-17s %-4s %s\n' "$name" "$pid" \
	    "$(f Uid)" "$(f CapEff)" "$(f CapBnd)" "$(f NoNewPrivs)" \
	    "$(f Seccomp)"
done
echo "(CapEff 0000000000200001 = CAP_SYS_ADMIN + CAP_CHOWN; Seccomp 2 = filter)"
echo
echo "== registry database"
ls -l "$work/data/registry/"
echo
echo "== stopping with SIGTERM: mounter, then registry, then supervisor"
kill -TERM "$sv"
wait "$sv" && status=0 || status=$?
sv=""
sed -n '/supervisor_stop/,$p' "$work/log"
echo "run.sh: berth stopped with status $status"
exit "$status"
