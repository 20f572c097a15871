#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions per operation of ct-icount's phases under callgrind, the
# empty loop's subtracted: bench/ct-icount.sh [ct-icount [backend [n]]]
set -e
prog=${1:-bench/ct-icount}
backend=${2:-chained}
n=${3:-262144}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
valgrind -q --tool=callgrind --callgrind-out-file="$dir/cg.%p" \
	"$prog" "$backend" "$n" >/dev/null
# Each dump names its phase (desc: Trigger: Client Request: NAME) and
# ends with its total (totals: N).
for f in "$dir"/cg.*; do
	awk '/^desc: Trigger: Client Request:/ { name = $NF }
	     /^totals:/ { if (name != "") print name, $2 }' "$f"
done | awk -v n="$n" -v b="$backend" '
	{ tot[$1] = $2 }
	END {
		ops = int(n / 4)
		loop = tot["loop"] / ops
		printf "%s:", b
		split("lookup miss batch16 batch32 batch64 remove insert", ph)
		for (i = 1; i in ph; i++) {
			p = ph[i]
			if (!(p in tot))
				continue
			printf " %s %.1f", p, tot[p] / ops - (p ~ /^batch/ ? 0 : loop)
		}
		printf "\n"
	}'
