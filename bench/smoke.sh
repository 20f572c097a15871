#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# conntab-bench at a tiny size: every workload on every implementation
# must find every present key, never miss one during grow or timewait,
# and print one line per result. Times are not checked.
set -e
bench=${BENCH:-bench/conntab-bench}
out=$($bench --quick --n 4K --reps 1 --seed 7)
echo "$out" | grep -q '^lookup	chained	4096	1	'
echo "$out" | grep -q '^grow-misses	lfht	4096	1	0	'
echo "$out" | grep -q '^# memory B/entry'
# flood: both tables of a hash backend, and the ratio between them.
echo "$out" | grep -q '^flood-known	chained	4096	1	'
echo "$out" | grep -q '^flood-protection	chained	4096	1	.*	x	'
# zipf and trains: one thread and two readers, one at a time and batched;
# the draws were checked against their distributions (exit status).
echo "$out" | grep -q '^zipf-s1.00	chained	4096	1	'
echo "$out" | grep -q '^zipf-s1.00-b16	plain	4096	2	'
echo "$out" | grep -q '^trains-s1.00	lfht	4096	2	'
echo "$out" | grep -q '^# zipf-s1.00 ns/lookup'
# JSON lines are objects, one per line.
$bench --quick --n 4K --reps 1 --workload lookup,memory --json |
	grep -v '^{.*}$' && exit 1
exit 0
