#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Build the libFuzzer harness (tests/fuzz/fuzz-ops.c) with clang, the
# library's sources compiled straight into it, and fuzz every backend
# the library accepts for a bounded time:
#
#   tests/fuzz/run.sh [SECONDS [WORKDIR]]      (make fuzz FUZZ_SECONDS=60)
#
# SECONDS per backend (default 60); WORKDIR (default fuzz-work) gets the
# binary, one growing corpus per backend seeded from tests/fuzz/corpus and
# tests/fuzz/regress, and any crashing input under artifacts-BACKEND/.
# Exit status 1 if any backend's run found a failure. FUZZ_CC overrides
# the compiler (a clang with libFuzzer).
#
# libFuzzer's per-input leak check is off (-detect_leaks=0): a backend
# that frees through call_rcu has more mallocs than frees in every input,
# and a LeakSanitizer scan after each one would take nearly all the time.
# Leaks are LeakSanitizer's job in the sanitizer build's make check, which
# replays this harness's corpus (tests/fuzz-replay) and ends with
# rcu_barrier(); -rss_limit_mb stops a run whose memory keeps growing.
set -eu

src=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
work=${2:-fuzz-work}
cc=${FUZZ_CC:-clang}
san="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined"
san="$san -fno-sanitize-recover=all"

mkdir -p "$work/obj"
work=$(cd "$work" && pwd)
echo "fuzz: building $work/fuzz-ops with $($cc --version | head -n 1)"
# shellcheck disable=SC2046 # pkg-config prints one flag per word
for f in "$src"/lib/*.c "$src"/lib/*/*.c; do
	$cc $san -fsanitize=fuzzer-no-link -DCONNTAB_BUILDING \
		-I"$src/include" -I"$src/lib" $(pkg-config --cflags liburcu) \
		-c "$f" -o "$work/obj/$(basename "$f" .c).o"
done
# shellcheck disable=SC2046
$cc $san -fsanitize=fuzzer -Wall -Wextra -Wno-unused-parameter \
	-I"$src/include" $(pkg-config --cflags liburcu) \
	"$src/tests/fuzz/fuzz-ops.c" "$work"/obj/*.o \
	$(pkg-config --libs liburcu) -lpthread -o "$work/fuzz-ops"

seeds="$src/tests/fuzz/corpus"
[ -d "$src/tests/fuzz/regress" ] && seeds="$seeds $src/tests/fuzz/regress"
failed=0
for b in $(FUZZ_LIST_BACKENDS=1 "$work/fuzz-ops"); do
	mkdir -p "$work/corpus-$b" "$work/artifacts-$b"
	log="$work/fuzz-$b.log"
	echo "fuzz: $b for $secs s (log $log)"
	# shellcheck disable=SC2086 # $seeds is a list of directories
	if FUZZ_BACKEND=$b "$work/fuzz-ops" -max_total_time="$secs" \
		-max_len=1024 -timeout=20 -rss_limit_mb=2048 -detect_leaks=0 \
		-print_final_stats=1 \
		-artifact_prefix="$work/artifacts-$b/" \
		"$work/corpus-$b" $seeds >"$log" 2>&1; then
		res=ok
	else
		res=FAILED
		failed=1
		tail -n 60 "$log"
		for a in "$work/artifacts-$b"/*; do
			[ -f "$a" ] || continue
			echo "fuzz: failing input $a:"
			od -An -tx1 "$a" | head -n 40
		done
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1)
	echo "fuzz: $b: $res, ${runs:-?} executions in $secs s, $cov," \
		"corpus $(ls "$work/corpus-$b" | wc -l) inputs"
done
exit $failed
