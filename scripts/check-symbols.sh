#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Check the ABI surface of libconntab.so: it must export exactly the
# functions the public header marks CONNTAB_API, all named conntab_*.
# Anything else (a ct_* helper missing from -fvisibility=hidden, a stray
# global) would become ABI that applications can bind to.
#
# With the version script (lib/libconntab.map) it also checks the symbol
# versions: the script lists exactly the header's functions, each in one
# node, every node after the first inherits the one before, and every
# exported symbol carries, as its default version, the node that lists it.
#
# usage: check-symbols.sh LIBCONNTAB.so conntab.h [libconntab.map]
# NM may name the nm to use (libtool's "nm -B" works too).
set -euo pipefail

lib=${1:?usage: check-symbols.sh LIB.so HEADER [MAP]}
header=${2:?usage: check-symbols.sh LIB.so HEADER [MAP]}
map=${3:-}

if [ ! -e "$lib" ]; then
	echo "check-symbols: $lib not built (static-only build?), skipped"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=scripts/api-names.sh
. "$(dirname "$0")/api-names.sh"
ct_exported "$lib" >"$tmp/exported"
ct_declared "$header" >"$tmp/declared"

status=0
if grep -v '^conntab_' "$tmp/exported" >"$tmp/foreign"; then
	echo "check-symbols: exported symbols outside the conntab_ prefix:"
	sed 's/^/  /' "$tmp/foreign"
	status=1
fi
if ! diff -u "$tmp/declared" "$tmp/exported" >"$tmp/diff"; then
	echo "check-symbols: exports differ from the CONNTAB_API declarations"
	echo "  (- declared but not exported, + exported but not declared):"
	sed 's/^/  /' "$tmp/diff"
	status=1
fi

if [ -n "$map" ]; then
	ct_map_names "$map" >"$tmp/map"
	cut -d' ' -f1 "$tmp/map" | sort >"$tmp/map-names"
	if [ -n "$(uniq -d "$tmp/map-names")" ]; then
		echo "check-symbols: listed twice in $map: $(uniq -d "$tmp/map-names")"
		status=1
	fi
	for name in $(sort -u "$tmp/map-names" | comm -23 - "$tmp/declared"); do
		echo "check-symbols: $map lists $name, which conntab.h does not declare"
		status=1
	done
	for name in $(sort -u "$tmp/map-names" | comm -13 - "$tmp/declared"); do
		echo "check-symbols: $name is in no node of $map (so it is local)"
		status=1
	done
	# Each node inherits the one before: CONNTAB_0.3 { ... } CONNTAB_0.2;
	prev=
	while read -r node parent; do
		if [ "${parent:-}" != "$prev" ]; then
			echo "check-symbols: $map: node $node inherits '${parent:-}'," \
			     "not the node before it ('$prev')"
			status=1
		fi
		prev=$node
	done < <(ct_map_nodes "$map")
	# The default version (@@) of every export is its node.
	ct_exported_versioned "$lib" >"$tmp/versioned"
	while read -r sym; do
		name=${sym%%@*}
		node=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/map")
		case $sym in
		*@@*) have=${sym#*@@} ;;
		*) have= ;;
		esac
		if [ "$have" != "$node" ]; then
			echo "check-symbols: $name has version '${have:-none}'," \
			     "$map puts it in '${node:-no node}'"
			status=1
		fi
	done <"$tmp/versioned"
fi

if [ "$status" = 0 ]; then
	echo "check-symbols: $(wc -l <"$tmp/exported") symbols, all conntab_*," \
	     "matching conntab.h${map:+, versioned as $(basename "$map") says}"
fi
exit "$status"
