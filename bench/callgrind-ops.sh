#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/callgrind-ops.sh [N]: instructions per lookup (hit), lookup
# (miss), insert and remove, of chained and bihash (IMPLS: any of
# chained split exthash trie plain bihash), counted by callgrind in
# conntab-bench at N keys (default 256K), one repetition, seed 1. Run
# from the top of a build tree; a few minutes under valgrind.
#
# Each count is a function's inclusive instructions over its calls: for
# conntab's backends the library's entry point (conntab_lookup(), ...,
# what an application calls), for the peers the benchmark's function
# (the key's packing included). The lookup-miss workload looks up a mix,
# half present keys and half absent ones in random order: a miss is
# twice the mix's count less a hit's.
set -eu
n=${1:-256K}
impls=${IMPLS:-chained,bihash}
bench=${BENCH:-bench/conntab-bench}
libtool=${LIBTOOL:-./libtool}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run WORKLOAD: callgrind's annotated call tree of one run.
run() {
	if ! $libtool --mode=execute valgrind --tool=callgrind \
		--callgrind-out-file="$tmp/$1.out" "$bench" --n "$n" \
		--reps 1 --seed 1 --impl "$impls" --workload "$1" \
		>"$tmp/$1.log" 2>&1; then
		cat "$tmp/$1.log" >&2
		exit 1
	fi
	callgrind_annotate --inclusive=yes --tree=caller "$tmp/$1.out" \
		>"$tmp/$1.txt"
}

# per WORKLOAD FUNC: FUNC's inclusive instructions over its calls (the
# callers' lines, "< ... (Nx)", come before the function's "*" line).
per() {
	awk -v f="$2" '
	function num(s) { gsub(/,/, "", s); return s + 0 }
	/^ *$/ { calls = 0; next }
	/ < / { if (match($0, /\(([0-9,]+)x\)/)) calls += num(substr($0, RSTART + 1, RLENGTH - 3)); next }
	/ \* / {
		if ($0 ~ (":" f " ") && calls > 0) { printf "%.1f", num($1) / calls; found = 1; exit }
		calls = 0
	}
	END { if (!found) printf "-" }' "$tmp/$1.txt"
}

# The function that counts IMPL's operation OP.
fn() {
	case $1 in
	chained|split|exthash|trie) echo "conntab_$2" ;;
	plain) echo "pl_$2" ;;
	bihash) echo "bh_$2" ;;
	*) echo "no function known for $1" >&2; exit 2 ;;
	esac
}

run lookup
run lookup-miss
run insert,remove
printf '# instructions per operation (callgrind, n=%s): lookup hit, miss, insert, remove\n' "$n"
printf '%-10s %8s %8s %8s %8s\n' impl hit miss insert remove
for im in ${impls//,/ }; do
	hit=$(per lookup "$(fn "$im" lookup)")
	mix=$(per lookup-miss "$(fn "$im" lookup)")
	miss=$(awk -v h="$hit" -v m="$mix" 'BEGIN { printf "%.1f", 2 * m - h }')
	printf '%-10s %8s %8s %8s %8s\n' "$im" "$hit" "$miss" \
		"$(per insert,remove "$(fn "$im" insert)")" \
		"$(per insert,remove "$(fn "$im" remove)")"
done
