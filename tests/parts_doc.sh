#!/bin/sh
# parts_doc.sh SRCDIR: docs/ARCHITECTURE.md's table of the supervisor's
# parts says what supervisor/meson.build's sv_uses says: the same parts,
# each allowed the same parts.
set -eu
src=$1
doc=$src/docs/ARCHITECTURE.md
build=$src/supervisor/meson.build
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "| volume | ... | base, ipc, spec, csi |" -> "volume: base ipc spec csi"
sed -n '/^<!-- parts:/,/^$/p' "$doc" | grep '^| [a-z]* |' | grep -v '^| part |' |
    awk -F'|' '{ gsub(/ /, "", $2); gsub(/,/, " ", $4);
	n = split($4, u, " "); s = $2 ":"; for (i = 1; i <= n; i++) s = s " " u[i];
	print s }' | sort >"$tmp/doc"

# "  'volume' : ['base', 'ipc', 'spec', 'csi']," (maybe over two lines)
sed -n '/^sv_uses = {/,/^}/p' "$build" | sed '1d;$d' | tr -d '\n' |
    sed "s/\],/]\n/g" | tr -d "[]'," | awk -F':' '{ gsub(/^ +| +$/, "", $1);
	gsub(/ +/, " ", $2); sub(/^ /, "", $2); sub(/ $/, "", $2);
	s = $1 ":"; if ($2 != "") s = s " " $2; print s }' |
    grep -v '^:$' | sort >"$tmp/build"

if [ ! -s "$tmp/doc" ] || [ ! -s "$tmp/build" ]; then
	echo "parts_doc: could not read the table or sv_uses" >&2
	exit 1
fi
if ! diff -u "$tmp/build" "$tmp/doc"; then
	echo "parts_doc: docs/ARCHITECTURE.md and supervisor/meson.build disagree (- build, + doc)" >&2
	exit 1
fi
echo "parts_doc: $(wc -l <"$tmp/build") parts agree"
