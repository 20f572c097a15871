#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The ABI of libconntab.so against the baseline of the last release
# (abi/libconntab.abi), with libabigail (Debian: abigail-tools).
#
#   check-abi.sh check BASELINE LIB.so HEADERS-DIR
#	Describe the built library as the baseline was described (abidw,
#	same options) and compare (abidiff): fail when anything the baseline
#	has changed or went away (a function removed, a signature or a public
#	type changed: a struct field, a size, an enum value) while the soname
#	stayed; report additions (new functions). When the soname moved, the
#	break is the point of the bump: report it, and remind to write the
#	new baseline.
#   check-abi.sh write BASELINE LIB.so HEADERS-DIR
#	Write the baseline from LIB.so (at a release: doc/releasing.md).
#
# Types count when the public header (HEADERS-DIR) declares them; the
# library must carry DWARF (the default -g of configure).
set -euo pipefail

mode=${1:?usage: check-abi.sh check|write BASELINE LIB.so HEADERS-DIR}
base=${2:?usage: check-abi.sh check|write BASELINE LIB.so HEADERS-DIR}
lib=${3:?usage: check-abi.sh check|write BASELINE LIB.so HEADERS-DIR}
headers=${4:?usage: check-abi.sh check|write BASELINE LIB.so HEADERS-DIR}

for tool in abidw abidiff; do
	command -v "$tool" >/dev/null ||
		{ echo "check-abi: $tool not found (Debian: abigail-tools)"; exit 2; }
done

# No paths or line numbers: the file changes only when the ABI does.
describe() {
	abidw --no-corpus-path --no-comp-dir-path --short-locs --no-show-locs \
		--headers-dir "$headers" --drop-private-types \
		--type-id-style hash --out-file "$2" "$1"
}

if [ "$mode" = write ]; then
	describe "$lib" "$base"
	echo "check-abi: wrote $base from $lib"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
describe "$lib" "$tmp/built.abi"

# The corpus's first line names the architecture and the soname.
attr() {
	sed -n "1s/.* $1='\\([^']*\\)'.*/\\1/p" "$2"
}
if [ "$(attr architecture "$base")" != "$(attr architecture "$tmp/built.abi")" ]; then
	echo "check-abi: the baseline is of $(attr architecture "$base"), this" \
	     "library of $(attr architecture "$tmp/built.abi"): not compared"
	exit 0
fi
old=$(attr soname "$base")
new=$(attr soname "$tmp/built.abi")

# abidiff's status is a bit mask: 1 error, 2 usage, 4 ABI change,
# 8 incompatible change. Without added symbols, any change is one to
# what the baseline has.
status=0
abidiff --no-added-syms "$base" "$tmp/built.abi" >"$tmp/changes" || status=$?
if [ $((status & 3)) != 0 ]; then
	cat "$tmp/changes"
	echo "check-abi: abidiff failed ($status)"
	exit 2
fi
if [ "$status" != 0 ]; then
	sed 's/^/  /' "$tmp/changes"
	if [ "$old" = "$new" ]; then
		echo "check-abi: FAIL: the ABI of $old changed (above) without a" \
		     "soname bump: keep it, version the change in" \
		     "lib/libconntab.map, or bump the soname (doc/releasing.md)"
		exit 1
	fi
	echo "check-abi: the soname moved from $old to $new, as the changes" \
	     "above need: write the new baseline at the release" \
	     "(make abi-baseline)"
fi

abidiff "$base" "$tmp/built.abi" >"$tmp/all" || true
if grep -q '^ *[0-9]* Added functions*:' "$tmp/all"; then
	echo "check-abi: additions since the baseline (each needs its node in" \
	     "lib/libconntab.map and a page in man/):"
	sed -n '/Added functions*:/,$p' "$tmp/all" | grep . | sed 's/^/  /'
fi
if [ "$old" = "$new" ]; then
	echo "check-abi: $new: nothing the baseline has changed"
fi
