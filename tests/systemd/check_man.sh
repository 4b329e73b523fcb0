#!/bin/sh
# check_man.sh MANDIR PAGE...: every page was built by scdoc and reads as a
# man page (a NAME section, no scdoc markup left over). Skips (77) only
# when scdoc is not installed, so no page could be built.
set -u

mandir=$1
shift
if [ $# -eq 0 ]; then
	echo "check_man: no page built: is scdoc installed? (apt-get" \
	    "install scdoc; scripts/setup.sh does)" >&2
	exit 77
fi
fail=0
for want in berth-supervisor.8 berth-mounter.8 berth-registry.8 \
    berthctl.1 berth.json.5 berth-plugins.d.5 berth-alloc.5 \
    berth-volume.5; do
	page=$mandir/$want
	if [ ! -s "$page" ]; then
		echo "check_man: $want was not built" >&2
		fail=1
		continue
	fi
	if ! grep -q '^\.SH NAME' "$page"; then
		echo "check_man: $want has no NAME section" >&2
		fail=1
	fi
	if command -v man >/dev/null 2>&1; then
		text=$(MANWIDTH=80 man -l "$page" 2>&1) || {
			echo "check_man: man cannot render $want" >&2
			fail=1
		}
		# Unbalanced scdoc emphasis shows up as stray * or _ pairs.
		if echo "$text" | grep -q '\*[A-Za-z-]*\*'; then
			echo "check_man: $want has scdoc markup left:" >&2
			echo "$text" | grep '\*[A-Za-z-]*\*' >&2
			fail=1
		fi
	fi
	echo "built: $want"
done
exit $fail
