#!/bin/sh
# The whole test suite, from a fresh Debian 12 machine: install, build,
# then run every unit, integration and attack test, first in a normal
# build and then under AddressSanitizer + UndefinedBehaviorSanitizer.
# The systemd-boot suite (the installed units booted in a container) runs
# once, in the normal build: it tests the installed files, not the code
# under the sanitizers.
#
#	sudo scripts/test.sh [--fuzz SECONDS]
#
# --fuzz also runs each of the mounter's libFuzzer targets (CI: 60 s).
# The last line says "tests: N passed, M failed".
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
BERTH_SETUP_TESTS=1
. "$src/scripts/setup.sh"

fuzz=0
if [ "${1:-}" = "--fuzz" ]; then
	fuzz=${2:-60}
fi

passed=0
failed=0
run_suite() {
	dir=$1
	shift
	if [ ! -d "$dir" ]; then
		meson setup "$dir" "$src" "$@" >/dev/null
	fi
	ninja -C "$dir"
	out=$(mktemp)
	# shellcheck disable=SC2086
	meson test -C "$dir" --print-errorlogs --num-processes 2 $tests 2>&1 |
	    tee "$out" || true
	ok=$(awk '/^Ok:/ { print $2 }' "$out")
	bad=0
	for k in Fail: Timeout: "Unexpected Pass:"; do
		n=$(grep "^$k" "$out" | awk '{ print $NF }')
		bad=$((bad + ${n:-0}))
	done
	if [ -z "$ok" ]; then
		echo "test.sh: no test summary from $dir" >&2
		bad=$((bad + 1))
		ok=0
	fi
	passed=$((passed + ok))
	failed=$((failed + bad))
	rm -f "$out"
}

tests=""
run_suite "$src/build"
tests="--no-suite systemd-boot"
run_suite "$src/build-asan" -Db_sanitize=address,undefined -Db_lundef=false

if [ "$fuzz" -gt 0 ]; then
	if "$src/scripts/fuzz.sh" "$fuzz"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
fi

# Tests must leave nothing behind; say so if one did.
if grep -q berth-test /proc/self/mountinfo; then
	echo "test.sh: a test leaked a mount:" >&2
	grep berth-test /proc/self/mountinfo >&2
	failed=$((failed + 1))
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
