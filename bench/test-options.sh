#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# conntab-bench's command-line mistakes: each one is refused before
# anything runs, with exit status 2 and one line on stderr that names the
# option and what is wrong (not the whole usage); --help still prints it.
set -eu
bench=${BENCH:-bench/conntab-bench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

# refused 'EXPECTED STDERR LINE (a grep regex)' ARGS...
refused() {
	local want=$1 rc=0
	shift
	timeout 20 "$bench" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" = 2 ] || fail "$*: exit status $rc, not 2"
	[ "$(wc -l <"$tmp/err")" = 1 ] ||
		fail "$*: not one line on stderr: $(cat "$tmp/err")"
	grep -q "^conntab-bench: $want" "$tmp/err" ||
		fail "$*: '$(cat "$tmp/err")' does not match '$want'"
	[ ! -s "$tmp/out" ] || fail "$*: printed on stdout"
	echo "ok: $* -> $(cat "$tmp/err")"
}

refused '--n: 0 is not a table size' --n 0
refused "--n: '1T' is not a table size" --n 1T
refused '--n: 4G is not a table size' --n 4G
refused "--n: '1M,,4M' has an empty item" --n 1M,,4M
refused '--n: needs a value' --n
refused '--threads: 1000 is not a thread count (1 to 64)' --threads 1000
refused "--threads: 'two' is not a number" --threads two
refused "--hash: unknown hash 'md5'" --hash md5
refused '--zipf: 11 is not a Zipf exponent (0 to 10)' --zipf 11
refused '--zipf: more than 8' --zipf 1,1,1,1,1,1,1,1,1
refused "stray argument 'extra'" --n 4K extra
refused "--impl: unknown implementation 'nope' (known: chained .*plain.*)" \
	--impl nope,chained
refused "--workload: unknown workload 'lookups' (known: floor " \
	--workload lookups
refused '--workload: pcap needs --pcap FILE' --workload pcap
refused '--plot: x.txt: the file name must end in .svg or .png' \
	--plot x.txt
refused '--reps: 0 is not a repetition count' --reps 0
refused '--pad: 1025 is not an instruction count (0 to 1024)' --pad 1025
refused '--rate: 0 is not a rate' --rate 0
refused '--writers: 0 is not a thread count' --writers 0
refused "--grid: '8' is not READERSxWRITERS" --grid 8
refused '--grid: 33 is not a thread count (0 to 32)' --grid 1x33
refused '--grid: a cell of 0 readers and 0 writers' --grid 0,1x0,1
refused '--grid: more than 8 reader counts' --grid 1,2,3,4,5,6,7,8,9x1
refused "--grid: '1,,2' has an empty item" --grid 1,,2x1
refused '--train: 0.5 is not a mean train length' --train 0.5
refused '--tw-share: 1.5 is not a share' --tw-share 1.5
refused "--budget: '2s' is not a number" --budget 2s
refused '--seed: -1 is not a seed (0 to ' --seed -1
refused "--secret: 'one' is not a secret" --secret one
refused "--keys: unknown key set 'worst'" --keys worst
refused "--clock: unknown clock 'tsc'" --clock tsc
refused '--n: 4194304 is more than worst-mem' --keys worst-mem --n 4M
refused '--table: not with --json' --table --json
refused '--tsv: not with --json or --table' --tsv --json
refused '--frob: unknown option' --frob
"$bench" --help | grep -q '^  --quick ' || fail "--help has no --quick"
exit 0
