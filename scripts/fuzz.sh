#!/bin/sh
# Build berth-mounter's libFuzzer targets with clang and run each one for
# N seconds (default 60) on a copy of its seed corpus.
#
#	scripts/fuzz.sh [SECONDS]
#
# Targets: fuzz_request (protobuf-c decoding plus the mounter's request
# validation), fuzz_plugindef (the plugin definition parser) and
# fuzz_verbs (the verbs themselves, on a scratch tmpfs in a private mount
# namespace: needs root; it starts from the request corpus). A crash
# leaves its input as crash-* in the current directory and fails the run.
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$src/build-fuzz}

if [ ! -d "$build" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzzing=true -Dtests=disabled \
	    -Db_lundef=false
fi
ninja -C "$build" fuzz/fuzz_request fuzz/fuzz_plugindef fuzz/fuzz_verbs \
    fuzz/make_corpus
if [ -z "$(ls "$src/fuzz/corpus/request" 2>/dev/null)" ]; then
	"$build/fuzz/make_corpus" "$src/fuzz/corpus/request"
fi
for t in request plugindef verbs; do
	corpus=$t
	quiet=
	# fuzz_verbs: the mounter's log of each refusal, not the reports.
	[ "$t" = verbs ] && corpus=request && quiet=-close_fd_mask=2
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cp "$src/fuzz/corpus/$corpus/"* "$work/"
	echo "fuzz.sh: fuzz_$t for ${secs}s"
	"$build/fuzz/fuzz_$t" -max_total_time="$secs" -max_len=65536 \
	    -print_final_stats=1 $quiet "$work"
	rm -rf "$work"
done
