#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# conntab-bench at a tiny size: every workload on every implementation
# must find every present key, never miss one during grow or timewait,
# and print one line per result. Times are not checked.
set -eu
bench=${BENCH:-bench/conntab-bench}
srcdir=${srcdir:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

# has REGEX: a line of $out matches.
has() {
	echo "$out" | grep -q "$1" || fail "no line matching '$1'"
}

# The default output: one short table, the backends against each other
# and the peers, and what each backend buys, as ratios of the run.
out=$($bench --quick --budget 0 --n 4K --reps 1 --seed 7 --tw-share 0.5)
has '^impl  *lookup  *batch16  *insert  *remove  *B/entry  *grow '
for b in chained split exthash trie lfht plain; do
	has "^$b  *[0-9]"
done
has "^# chained: speed: lookup [0-9.]*x, insert [0-9.]*x the fastest concurrent peer's ([a-z_-]*);"
has "^#   lookup [0-9.]*x plain's (no locks, no RCU)"
has "^# split: TIME_WAIT in chains of its own: established lookups among TIME_WAIT entries [0-9.]*x chained's"
has "^#   TIME_WAIT transitions [0-9.]*x as many a second as chained's"
has "^# exthash: grows online, no sizing hint: inserts from empty [0-9.]*x the fastest"
has "^#   resizing peer's ([a-z_-]*), memory [0-9.]*x chained's"
has "^# trie: prefix walks [0-9.]*x chained's"
has "^#   among keys made for its secret, known: [0-9.]*x its lookups of random keys"
has '^chained  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *-  *[0-9.]*  *[0-9.]*  *[0-9.]*$'
has '^# chained vs lfht '
echo "$out" | grep -q '	' && fail "default output has tab-separated rows"
[ "$(echo "$out" | wc -l)" -lt 60 ] ||
	fail "default output: $(echo "$out" | wc -l) lines, not a short table"
[ "$(echo "$out" | awk '{ if (length > m) m = length } END { print m }')" \
	-le 160 ] || fail "default output wider than 160 columns"

# --budget 0: every row must be there, however slow the machine is;
# --targets: the developers' targets too.
out=$($bench --tsv --quick --budget 0 --n 4K --reps 1 --seed 7 --targets)
has '^lookup	chained	4096	1	'
has '^lookup	lfht-jhash	4096	1	'
has '^grow-misses	lfht-jhash	4096	1	0	'
has '^grow-misses	lfht	4096	1	0	'
has '^# memory B/entry'
# the shapes' floors, and the backends' targets against chained beside
# them (issue 38: each backend, its shape's floor on the lookup's line)
has '^floor	chain-dep	4096	1	'
has '^floor	trie-indep	4096	1	'
has '^floor	xchain-indep	4096	1	'
for s in chain trie xchain; do
	has "^floor	$s-insert	4096	1	"
	has "^floor	$s-remove	4096	1	"
done
has '^# insert trie/chained  *trie .*(shape floor [0-9.]*)'
has '^# remove exthash/chained  *exthash .*(shape floor [0-9.]*)'
has '^# lookup trie/chained  *trie .*(shape floors: '
has '^# remove trie/chained'
for b in split exthash trie; do
	for w in lookup batch16 insert remove; do
		has "^# $w $b/chained  *$b "
	done
done
has '^# lookup exthash/chained  *exthash .*(shape floor [0-9.]*)'
has '^# memory B/entry  *exthash .*  <= 12 '
# flood: both tables of a hash backend, and the ratio between them.
has '^flood-known	chained	4096	1	'
has '^flood-protection	chained	4096	1	.*	x	'
# zipf and trains: one thread and two readers, one at a time and batched;
# the draws were checked against their distributions (exit status).
has '^zipf-s1.00	chained	4096	1	'
has '^zipf-s1.00-b16	plain	4096	2	'
has '^trains-s1.00	lfht	4096	2	'
has '^# zipf-s1.00 ns/lookup'
has '^grow-p99.99	exthash	4096	1	'
has '^writers	lfht	4096	2	'
has '^writers-cpu	trie	4096	1	'
has '^prefix	trie	4096	1	'
has '^prefix-match	chained	4096	1	'
has '^depth	trie	4096	1	'
# scan and evict: passes and walks visit every key once, evictions make
# room (exit status); backends without them leave their rows out.
has '^scan-64/walk	chained	4096	1	'
has '^scan-1000-max	exthash	4096	1	'
has '^walk	split	4096	1	'
has '^evict/insert	chained	4096	1	'
# pair: every implementation, conntab's against its two single inserts;
# both keys found and linked, both gone after the remove (exit status).
has '^pair-insert	chained	4096	1	'
has '^pair-remove	lfht	4096	1	'
has '^pair-insert/2	trie	4096	1	'
has '^pair-remove/2	exthash	4096	1	'
has '^# evict/insert  *exthash'
has '^grow-resizes	exthash	4096	1	'
has '^# elapsed [0-9.]* s$'
# Last, conntab against each peer, one line each.
has '^# conntab against each peer at n=4096, one thread'
has '^# chained vs lfht  *lookup [0-9.]*x, batch16 [0-9.]*x, batch32 [0-9.]*x, insert '
has '^# chained vs plain  *lookup '
# The rte_hash peers, when this build has DPDK (configure found libdpdk):
# every lookup workload, writes, memory, churn with readers, and the
# issue 28 targets against rte_hash-mw. They are the last peers.
last="# chained vs plai"
if $bench --tsv --impl rte_hash --n 1K --reps 1 --workload memory >/dev/null 2>&1
then
	last="# chained vs rte_"
	has '^lookup	rte_hash	4096	1	'
	has '^lookup-dep	rte_hash-mw	4096	1	'
	has '^batch32	rte_hash-mw	4096	1	'
	has '^batch64	rte_hash	4096	1	'
	has '^remove	rte_hash-mw	4096	1	'
	has '^memory	rte_hash-mw	4096	1	'
	has '^zipf-s1.00-b16	rte_hash-mw	4096	2	'
	has '^trains-s1.00	rte_hash	4096	1	'
	has '^churn	rte_hash-mw	4096	2	'
	has '^writers	rte_hash-mw	4096	2	'
	has '^# batch16/rte_hash-mw  *chained '
	has '^# memory/rte_hash-mw  *split '
	has '^# chained vs rte_hash-mw lookup [0-9.]*x, batch16 [0-9.]*x, batch32 '
	# the single-writer table is in no workload with several writers
	echo "$out" | grep -q '^churn	rte_hash	' && fail "churn of rte_hash"
fi
# The bihash peer, when this build has it (--with-vppinfra): every
# lookup workload, writes, memory, churn with readers; the last peer.
if $bench --tsv --impl bihash --n 1K --reps 1 --workload memory >/dev/null 2>&1
then
	last="# chained vs biha"
	has '^lookup	bihash	4096	1	'
	has '^lookup-miss	bihash	4096	1	'
	has '^batch32	bihash	4096	1	'
	has '^insert	bihash	4096	1	'
	has '^remove	bihash	4096	1	'
	has '^memory	bihash	4096	1	'
	has '^churn	bihash	4096	2	'
	has '^writers	bihash	4096	2	'
fi
[ "$(echo "$out" | tail -1 | cut -c1-17)" = "$last" ] ||
	fail "the last line is not conntab against the last peer"
# rte_hash on IPv6 keys (the 40-byte key), and its jhash choice.
if [ "$last" = "# chained vs rte_" ]; then
	out=$($bench --tsv --v6 --n 4K --reps 1 --threads 1 \
		--impl rte_hash,rte_hash-mw-jhash --workload lookup,batch,insert)
	has '^# hash .*rte_hash crc32, rte_hash-mw-jhash jhash'
	has '^batch16	rte_hash-mw-jhash	4096	1	'
fi
# bihash on IPv6 keys: clib_bihash_40_8.
if [ "$last" = "# chained vs biha" ]; then
	out=$($bench --tsv --v6 --n 4K --reps 1 --threads 1 --impl bihash \
		--workload lookup,lookup-miss,batch,insert,remove,memory)
	has '^# hash .*bihash [a-z0-9]*$'
	has '^batch16	bihash	4096	1	'
	has '^memory	bihash	4096	1	'
fi
# --targets after a run of bursts alone: the burst's target against
# chained (issue 38) is stated, not left out for want of a lookup row.
out=$($bench --tsv --budget 0 --n 4K --reps 1 --seed 7 --targets \
	--impl chained,exthash --workload batch)
has '^# batch16 exthash/chained  *exthash  *[0-9.][0-9.]*  *<= 1.2 '
# The time budget: a microsecond is spent by the first repetition, so
# every implementation is stopped by the second at the latest, without
# a wrong answer (exit status); the rows and a note say so. A stopped
# table is left to the exit on purpose (tearing down a crawling peer
# costs what building it did): LeakSanitizer is told not to count it.
out=$(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	$bench --tsv --n 4K --reps 2 --budget 0.000001 --workload lookup,grow \
	--impl chained,lfht)
has '^# time budget 1e-06 s per workload and implementation'
has '^# stopped: lfht on grow at n=4096 .*(--budget)'
has '^# stopped: chained on lookup at n=4096 '
has '^grow	lfht	4096	1	stopped	ns/op	'
has '^lookup	chained	4096	1	stopped	ns/op	'
! $bench --tsv --budget -1 2>/dev/null || fail "--budget -1 accepted"
# scale: readers beside 1 and 2 writers that recycle their keys; no
# present key may be missed, nor a write fail (exit status). Only when
# named; the single-writer peers are named in a note and skipped.
out=$($bench --tsv --quick --budget 0 --n 4K --reps 1 --workload scale \
	--grid 0,1x1,2 --impl chained,split,exthash,trie,lfht,plain)
has '^# scale: plain skipped (no concurrent writers)'
has '^scale-writes-r0	exthash	4096	2	[0-9]'
has '^scale-writes-r1/1	trie	4096	2	[0-9]'
has '^scale-reads-w2	split	4096	1	[0-9]'
has '^scale-misses	chained	4096	1	0	'
has '^scale-wcpu-r1	exthash	4096	2	[0-9]'
has '^scale-misses	lfht	4096	1	0	'
echo "$out" | grep -q '^scale-[a-z0-9/-]*	plain	' && fail "scale of plain"
# --grown: the resizing implementations again, grown from empty.
out=$($bench --tsv --n 4K --reps 1 --grown --impl chained,exthash,lfht \
	--workload lookup,batch,grow --threads 1)
has '^lookup	exthash-grown	4096	1	'
has '^batch16	lfht-grown	4096	1	'
has '^grow	exthash	4096	0	'
echo "$out" | grep -q '^[a-z-]*	chained-grown' && fail "chained-grown"
echo "$out" | grep -q '^grow	exthash-grown' && fail "grow of a twin"
# --pad: conntab's backends again, each call followed by N instructions.
out=$($bench --tsv --n 4K --reps 1 --pad 64 --impl chained,trie,lfht \
	--workload lookup,batch,insert,remove,memory,pair)
has '^# NAME-pad: each lookup, insert and remove followed by 64 instructions'
has '^lookup	chained-pad	4096	1	'
has '^batch16	trie-pad	4096	1	'
has '^insert	chained-pad	4096	1	'
has '^remove	trie-pad	4096	1	'
echo "$out" | grep -q '	lfht-pad	' && fail "lfht-pad"
has '^memory	trie	4096	1	'
echo "$out" | grep -q '^memory	[a-z]*-pad	' && fail "memory of a padded twin"
echo "$out" | grep -q '^pair[a-z/0-9-]*	[a-z]*-pad	' && fail "pair of a padded twin"
# --tw-share: half the entries in TIME_WAIT, looked up by state too.
out=$($bench --tsv --n 4K --reps 1 --tw-share 0.5 --workload lookup,batch,memory)
has '^lookup-tw	split	4096	1	'
has '^lookup-est	plain	4096	1	'
has '^batch16	lfht	4096	1	'
# The targets are for developers: only with --targets.
echo "$out" | grep -q '^# targets' && fail "targets without --targets"
# The trie's worst key sets, for every implementation.
out=$($bench --tsv --keys worst-depth --reps 1 --workload lookup,batch,memory)
has '^lookup	trie	288	1	'
has '^depth	trie	288	1	'
has '^lookup	lfht	288	1	'
out=$($bench --tsv --keys worst-mem --n 4K --reps 1 --workload lookup,memory)
has '^memory	trie	4096	1	'
has '^lookup	plain	4096	1	'
! $bench --tsv --keys worst-mem --n 4M 2>/dev/null || fail "worst-mem at 4M"
# --plot: both kinds of panel, when gnuplot is there.
if command -v gnuplot >/dev/null; then
	$bench --tsv --n 4K --reps 1 --threads 1 --workload lookup,zipf \
		--zipf 0.8,1.2 --plot "$tmp/p.svg" >/dev/null
	grep -q 'Zipf exponent' "$tmp/p.svg" || fail "no zipf panel"
	grep -q 'connections (N)' "$tmp/p.svg" || fail "no lookup panel"
fi
# --hash: conntab's tables and the peers on one hash, said in the header;
# flood finds its attack keys for that hash. AES only where it runs.
for h in siphash aes; do
	if ! out=$($bench --tsv --n 4K --reps 1 --hash $h --threads 1 \
		--workload lookup,batch,insert,flood,zipf 2>"$tmp/err"); then
		[ $h = aes ] && grep -q 'not on this CPU' "$tmp/err" && continue
		fail "--hash $h: $(cat "$tmp/err")"
	fi
	has "^# hash $h (--hash $h): chained $h, .*trie none, lfht $h, lfht-jhash jhash"
	has '^flood-known	lfht	4096	1	'
	has '^zipf-s1.00-b16	plain	4096	1	'
done
! $bench --tsv --hash md5 2>/dev/null || fail "--hash md5 accepted"
# Objects on huge pages: the same answers (exit status).
$bench --tsv --quick --n 4K --reps 1 --workload lookup,batch,pair \
	--objects huge >/dev/null || fail "--objects huge"
! $bench --tsv --objects tiny 2>/dev/null || fail "--objects tiny accepted"
# JSON lines are objects, one per line.
$bench --quick --n 4K --reps 1 --workload lookup,memory --json |
	grep -v '^{.*}$' && fail "a JSON line that is not an object"

# pcap: a crafted capture whose every packet has a known fate
# (bench/pcap-sample.sh), and files that are no capture.
bash "$srcdir/bench/pcap-sample.sh" >"$tmp/sample.pcap"
if ! $bench --tsv --pcap "$tmp/sample.pcap" --reps 1 >"$tmp/out" 2>"$tmp/err"; then
	grep -q 'built without libpcap' "$tmp/err" || fail "pcap: $(cat "$tmp/err")"
	echo "pcap: $(cat "$tmp/err")"
	exit 0
fi
out=$(cat "$tmp/out")
# count ROW VALUE: the capture's count.
count() {
	has "^pcap-$1	capture	5	1	$2	"
}
count flows 5
count packets 8
count skipped 9
count not-ip 1
count truncated 2
count malformed 2
count fragment 2
count not-tcp-udp 2
count endpoints 5
count from-local 2
# Every lookup hit (exit status), one thread and two readers, batched too.
has '^pcap	exthash	5	1	'
has '^pcap-b16	plain	5	2	'
# The record cut at the end of the file is reported.
grep -q 'truncated dump file' "$tmp/err" || fail "no word of the cut record"
# --local turns F2, F3 and F4 to 10.0.0.3's side (bench/pcap-sample.sh).
out=$($bench --tsv --pcap "$tmp/sample.pcap" --local 10.0.0.3 --reps 1 \
	--impl chained 2>/dev/null)
count endpoints 4
count from-local 5
# --pairs: through a NAT, both directions of each flow one pair; every
# flow's outside tuple finds its pair and every packet its half.
out=$($bench --tsv --pcap "$tmp/sample.pcap" --pairs --reps 1 2>/dev/null)
has '^pcap-nat-insert	chained	5	1	'
has '^pcap-nat-insert	plain	5	1	'
has '^pcap-nat	trie	5	1	'
has '^pcap-nat-b16	split	5	1	'
! $bench --tsv --pairs 2>/dev/null || fail "--pairs without --pcap"
out=$($bench --tsv --pcap "$tmp/sample.pcap" --local 10.0.0.0/8 --reps 1 \
	--impl chained 2>/dev/null)
count endpoints 5
# Not a capture; a capture without a TCP or UDP packet; a bad --local.
echo "not a capture" >"$tmp/text"
! $bench --tsv --pcap "$tmp/text" 2>"$tmp/err" || fail "a text file replayed"
grep -q 'not a capture' "$tmp/err" || fail "text: $(cat "$tmp/err")"
head -c 24 "$tmp/sample.pcap" >"$tmp/empty.pcap"
! $bench --tsv --pcap "$tmp/empty.pcap" 2>"$tmp/err" || fail "an empty capture"
grep -q 'no TCP or UDP packet' "$tmp/err" || fail "empty: $(cat "$tmp/err")"
! $bench --tsv --pcap "$tmp/sample.pcap" --local 10.0.0.0/33 2>/dev/null ||
	fail "--local 10.0.0.0/33 accepted"
! $bench --tsv --workload pcap 2>/dev/null || fail "pcap without --pcap"
exit 0
