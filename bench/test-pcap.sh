#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# conntab-bench's pcap workload on a real capture: tcpdump records the
# loopback while curl (and wrk, when installed) talk to
# examples/tcp-conntrack, then the capture is replayed. Checks:
#  - every packet tcpdump wrote is looked up or counted as skipped, and
#    none is skipped (TCP over IPv4 only);
#  - the flows are the connections the server accepted (its /stats,
#    asked after the capture; exact when tcpdump dropped nothing), so the
#    two directions of a connection made one key;
#  - all flows have one local endpoint, the server's, with --local
#    127.0.0.1 (both ends are local: the SYN decides) and without it;
#  - every lookup hit (the exit status), one thread and two readers.
# Skips (77) when conntab-bench has no pcap workload, when tcpdump or curl
# is missing, or when tcpdump may not capture (no permission).
set -u

bench=${BENCH:-bench/conntab-bench}
server=${TCP_CONNTRACK:-examples/tcp-conntrack}
for tool in tcpdump curl; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool not installed"
		exit 77
	fi
done
if "$bench" --pcap /dev/null 2>&1 | grep -q 'built without libpcap'; then
	echo "SKIP: conntab-bench was built without libpcap"
	exit 77
fi

tmp=$(mktemp -d)
srv='' td=''
cleanup() {
	[ -n "$td" ] && kill -KILL "$td" 2>/dev/null
	[ -n "$srv" ] && kill -KILL "$srv" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	for f in srv td; do
		[ -s "$tmp/$f.out" ] && sed "s/^/  $f: /" "$tmp/$f.out"
	done
	exit 1
}

"$server" --port 0 >"$tmp/srv.out" 2>&1 &
srv=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on .* port \([0-9]*\),.*/\1/p' \
		"$tmp/srv.out")
	[ -n "$port" ] && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.05
done
[ -n "$port" ] || fail "tcp-conntrack did not start"
url=http://127.0.0.1:$port

# Headers only (-s 128) and a large buffer (-B, KiB): wrk sends fast.
# As root, tcpdump would write as its own user: it keeps root's here.
zflag=
[ "$(id -u)" = 0 ] && zflag="-Z root"
# shellcheck disable=SC2086 # zflag: none or two words
tcpdump -i lo -n -U -s 128 -B 32768 $zflag -w "$tmp/lo.pcap" \
	"tcp port $port" >"$tmp/td.out" 2>&1 &
td=$!
for _ in $(seq 100); do
	grep -q 'listening on' "$tmp/td.out" && break
	kill -0 "$td" 2>/dev/null || break
	sleep 0.05
done
if ! grep -q 'listening on' "$tmp/td.out"; then
	if grep -qiE 'permission|not permitted|capabilit' "$tmp/td.out"; then
		echo "SKIP: tcpdump may not capture on lo here:" \
			"$(head -n 1 "$tmp/td.out")"
		exit 77
	fi
	fail "tcpdump did not start"
fi

conns=5
for _ in $(seq $conns); do
	curl -sf "$url/" >/dev/null || fail "curl"
done
if command -v wrk >/dev/null; then
	wrk -t 2 -c 20 -d 1s "$url/" >"$tmp/wrk" 2>&1 || fail "wrk"
	sed -n 's/^ *\([0-9]* requests in .*\)/  wrk: \1/p' "$tmp/wrk"
else
	echo "  (wrk not installed: curl only)"
fi
# Let the last FINs through, then stop: tcpdump prints its counts.
sleep 0.5
kill -INT "$td"
wait "$td"
td=
captured=$(sed -n 's/^\([0-9]*\) packets\? captured.*/\1/p' "$tmp/td.out")
dropped=$(sed -n 's/^\([0-9]*\) packets\? dropped by kernel.*/\1/p' \
	"$tmp/td.out")
echo "  tcpdump: ${captured:-?} packets captured, ${dropped:-?} dropped"
if [ -z "$captured" ] || [ -z "$dropped" ]; then
	fail "tcpdump's counts"
fi
# The connections the server accepted, the one asking included.
accepted=$(curl -sf "$url/stats" | sed -n 's/.*"accepted": *\([0-9]*\).*/\1/p')
[ -n "$accepted" ] || fail "/stats"
accepted=$((accepted - 1))
kill -INT "$srv"
wait "$srv"
srv=

# row NAME: the capture's count NAME from $out.
row() {
	echo "$out" | awk -F '\t' -v w="pcap-$1" \
		'$1 == w && $2 == "capture" { print $5 }'
}
for local in "--local 127.0.0.1" ""; do
	# shellcheck disable=SC2086 # local: none or two words
	out=$("$bench" --tsv --pcap "$tmp/lo.pcap" $local --reps 1 --threads 2 \
		2>"$tmp/err") || fail "conntab-bench $local: $(cat "$tmp/err")"
	flows=$(row flows) packets=$(row packets) skipped=$(row skipped)
	echo "  replay ${local:-(no --local)}: $flows flows, $packets packets," \
		"$skipped skipped, $(row endpoints) local endpoints"
	[ $((packets + skipped)) = "$captured" ] ||
		fail "$packets + $skipped packets, tcpdump wrote $captured"
	[ "$skipped" = 0 ] || fail "$skipped packets skipped: $out"
	if [ "$dropped" = 0 ]; then
		[ "$flows" = "$accepted" ] ||
			fail "$flows flows, the server accepted $accepted"
		[ "$(row endpoints)" = 1 ] || fail "local endpoints: $out"
	else
		# A dropped packet may be a connection's SYN (then the
		# lower port decides) or all of a short one's packets.
		if [ "$flows" -gt "$accepted" ] || [ "$flows" -lt $conns ]; then
			fail "$flows flows, the server accepted $accepted"
		fi
	fi
	for impl in chained lfht plain; do
		for wl in "pcap	$impl	$flows	1" "pcap-b16	$impl	$flows	2"; do
			echo "$out" | grep -q "^$wl	" || fail "no row $wl"
		done
	done
done
echo "PASS"
