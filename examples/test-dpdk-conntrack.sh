#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# dpdk-conntrack replaying captures through net_pcap: no NIC, no
# hugepages (--no-huge --no-pci, a unique --file-prefix and --no-shconf,
# so that runs side by side do not meet), with 1 and with 2 workers.
#  1. Its command line: --help and a bad option need no EAL.
#  2. bench/pcap-sample.sh's capture, whose every packet has a known fate:
#     the tracked ones and the skipped ones by reason, 3 TCP connections
#     (handshakes 1 complete, 2 answered) and 2 UDP flows, IPv6, VLAN;
#     then with every backend, uncapped and capped (--max-conns 2).
#  3. A loopback capture (as bench/test-pcap.sh makes it): curl and wrk
#     talk to examples/tcp-conntrack, socat sends UDP datagrams to a port
#     nobody serves (the ICMP errors are captured too). Every packet
#     accounted for (received = tracked + skipped by reason); one
#     connection per SYN in the capture and per connection the server
#     accepted, every one through SYN-ACK and established, closed and in
#     TIME_WAIT in the table at the end; the UDP flows the capture holds;
#     the skipped packets, the tracked ones and the flows as
#     conntab-bench's pcap replay counts them.
#  4. Expiry (every timeout 0) and eviction (--max-conns 4) on it: every
#     connection made is expired, evicted, replaced or still in the table.
# Counts, not times: the capture clock (--clock capture) and no threshold.
# Skips (77) when dpdk-conntrack is not built (no libdpdk), when the EAL
# cannot start here; step 3 when tcpdump or curl is missing or may not
# capture. DPDK_CONNTRACK names another binary to test.
set -u

prog=${DPDK_CONNTRACK:-examples/dpdk-conntrack}
server=${TCP_CONNTRACK:-examples/tcp-conntrack}
bench=${BENCH:-bench/conntab-bench}
here=$(dirname "$0")

if [ ! -x "$prog" ]; then
	echo "SKIP: $prog not built (configure found no libdpdk)"
	exit 77
fi

tmp=$(mktemp -d)
prefix=ctdpdk$$
srv='' td=''
cleanup() {
	[ -n "$td" ] && kill -KILL "$td" 2>/dev/null
	[ -n "$srv" ] && kill -KILL "$srv" 2>/dev/null
	rm -rf "$tmp"
	# The EAL's runtime directory stays behind, empty: ours only.
	for d in /var/run/dpdk "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk" \
		/tmp/dpdk; do
		rmdir "$d/$prefix" 2>/dev/null
	done
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	for f in out err srv td; do
		[ -s "$tmp/$f" ] && sed "s/^/  $f: /" "$tmp/$f"
	done
	exit 1
}

# 1. Options first, EAL untouched.
"$prog" -- --help >"$tmp/out" 2>&1 || fail "--help"
grep -q '^usage: dpdk-conntrack' "$tmp/out" || fail "--help: no usage"
"$prog" -- --scan-budget 0 >"$tmp/out" 2>&1
[ $? = 2 ] || fail "--scan-budget 0: not a usage error"
grep -q "^dpdk-conntrack: --scan-budget: '0' is not" "$tmp/out" ||
	fail "--scan-budget 0: message"

# The lcores: the main one and $1 workers, floating over the CPUs we may
# use (as many lcores as we like on a machine of two).
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)

# run PCAP WORKERS [OPTIONS]: the text report in $tmp/out; with JSON=1
# also a second run's JSON in $tmp/json, which check_json holds against it.
run() {
	local pcap=$1 nw=$2 rc jflag fmts=text
	shift 2
	[ "${JSON:-0}" = 1 ] && fmts="text json"
	rm -f "$tmp/json"
	for fmt in $fmts; do
		jflag=
		[ $fmt = json ] && jflag=--json
		"$prog" --no-huge --no-pci --no-shconf --no-telemetry -m 64 \
			--file-prefix "$prefix" --lcores "(0-$nw)@(${cpus:-0})" \
			--log-level 'lib.eal:warning' \
			--vdev "net_pcap0,rx_pcap=$pcap" -- --exit-on-eof \
			--clock capture $jflag "$@" \
			>"$tmp/$fmt" 2>"$tmp/err"
		rc=$?
		if [ $rc = 3 ]; then
			echo "SKIP: the EAL cannot start here: $(grep -v '^EAL' \
				"$tmp/err" | head -n 1)"
			exit 77
		fi
		[ $rc = 0 ] || { cp "$tmp/$fmt" "$tmp/out"; fail "exit $rc"; }
	done
	mv "$tmp/text" "$tmp/out"
}

# get ROW: the total of a counter in the text report.
get() {
	awk -v r="$1" '$1 == r { print $NF }' "$tmp/out"
}

# table WHAT: "entries" or "timewait" of the table line.
table() {
	sed -n 's/^table: \([0-9]*\) entries, \([0-9]*\) in TIME_WAIT$/\1 \2/p' \
		"$tmp/out" | cut -d ' ' -f "$([ "$1" = entries ] && echo 1 ||
			echo 2)"
}

# The JSON is JSON, and its totals are the text's, but for those that
# depend on timing (bursts, ring_full, the rates): two runs.
check_json() {
	if [ -f "$tmp/json" ] && command -v python3 >/dev/null; then
		python3 - "$tmp/json" "$tmp/out" <<'EOF' 2>"$tmp/err" || fail "JSON"
import json, sys
j = json.load(open(sys.argv[1]))
text = {l.split()[0]: l.split()[-1] for l in open(sys.argv[2])
	if l.split() and l.split()[-1].isdigit()}
t = j["total"]
for k, v in t.items():
	if k in text and k not in ("bursts", "ring_full", "packets_per_s",
				   "lookups_per_s") and str(v) != text[k]:
		sys.exit("total %s: JSON %s, text %s" % (k, v, text[k]))
for k, v in t["unparsed"].items():
	if str(v) != text["unparsed_" + k]:
		sys.exit("unparsed %s: JSON %s, text %s" % (k, v, text["unparsed_" + k]))
EOF
	fi
}

# Checks every run passes: each packet counted once, each lookup's
# outcome counted once, every connection made accounted for.
check_sums() {
	local skipped=0 v
	for v in not-ip truncated malformed fragment not-tcp-udp; do
		skipped=$((skipped + $(get "unparsed_$v")))
	done
	[ $(($(get lookups) + skipped)) = "$(get packets)" ] ||
		fail "$(get lookups) tracked + $skipped skipped !=" \
			"$(get packets) received"
	[ "$(get lookups)" = $(($(get hits) + $(get tcp_new) + \
		$(get udp_new) + $(get tcp_stray) + $(get insert_fail))) ] ||
		fail "lookups do not add up"
	[ $(($(get tcp_new) + $(get udp_new))) = $(($(get expired_tcp) + \
		$(get expired_udp) + $(get expired_tw) + $(get evicted) + \
		$(get tcp_reuse) + $(table entries))) ] ||
		fail "connections made != expired + evicted + replaced + left"
	check_json
}

# expect ROW VALUE...
expect() {
	while [ $# -ge 2 ]; do
		[ "$(get "$1")" = "$2" ] || fail "$1: $(get "$1"), expected $2"
		shift 2
	done
}

# 2. The sample. net_pcap stops at its last record, which the file cuts
# short (libpcap reports an error there): 16 of its 17 records arrive,
# where conntab-bench counts that one as truncated too.
bash "$here/../bench/pcap-sample.sh" >"$tmp/sample.pcap" ||
	fail "bench/pcap-sample.sh"
for nw in 1 2; do
	JSON=$((nw == 1)) run "$tmp/sample.pcap" $nw
	check_sums
	expect packets 16 lookups 8 unparsed_not-ip 1 unparsed_truncated 1 \
		unparsed_malformed 2 unparsed_fragment 2 \
		unparsed_not-tcp-udp 2 tcp_new 3 syn 3 synack 2 \
		established 1 udp_new 2 hits 3 timewait 0
	[ "$(table entries) $(table timewait)" = "5 0" ] ||
		fail "table: $(table entries) entries, $(table timewait) TW"
	echo "  sample, $nw worker(s): 16 packets, 3 TCP, 2 UDP, 8 skipped"
done
# Every backend the library has, with the QSBR flavor (the default is
# split): the same counts. Capped at 2 of its 5 flows: nothing expires
# (its times are all 0) and an eviction replaces one entry with another,
# so the table ends full, and at least the 3 flows beyond the cap made
# room (more when a flow's later packet finds its entry evicted): the
# rank is never negative, and an evicting insert whose sample the other
# worker's step crossed tries again (conntab_insert_evict(3)), so no new
# flow is refused (at ccd6cc6 one run in a few hundred was: insert_fail 1).
for be in $("$prog" -- --list-backends); do
	run "$tmp/sample.pcap" 2 --backend "$be"
	check_sums
	expect lookups 8 tcp_new 3 synack 2 established 1 udp_new 2 hits 3
	[ "$(table entries)" = 5 ] || fail "$be: $(table entries) entries"
	run "$tmp/sample.pcap" 2 --backend "$be" --max-conns 2
	check_sums
	[ "$(table entries)" = 2 ] || fail "$be: $(table entries) entries, cap 2"
	[ "$(get evicted)" -ge 3 ] || fail "$be: $(get evicted) evicted, cap 2"
	[ "$(get insert_fail)" = 0 ] ||
		fail "$be: $(get insert_fail) inserts refused, cap 2"
done
echo "  sample, every backend: the same counts; capped at 2, evicting"

# 3. A loopback capture.
for tool in tcpdump curl; do
	if ! command -v "$tool" >/dev/null; then
		echo "  (no $tool: no loopback capture)"
		echo "PASS"
		exit 0
	fi
done
[ -x "$server" ] || fail "$server not built"
"$server" --port 0 >"$tmp/srv" 2>&1 &
srv=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on .* port \([0-9]*\),.*/\1/p' "$tmp/srv")
	[ -n "$port" ] && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.05
done
[ -n "$port" ] || fail "tcp-conntrack did not start"
url=http://127.0.0.1:$port
# Datagrams to a port next to the server's: nobody reads them there (if
# someone does, the capture still says what happened).
uport=$((port == 65535 ? port - 1 : port + 1))

zflag=
[ "$(id -u)" = 0 ] && zflag="-Z root"
# shellcheck disable=SC2086 # zflag: none or two words
tcpdump -i lo -n -U -s 128 -B 32768 $zflag -w "$tmp/lo.pcap" \
	"tcp port $port or udp port $uport or icmp" >"$tmp/td" 2>&1 &
td=$!
for _ in $(seq 100); do
	grep -q 'listening on' "$tmp/td" && break
	kill -0 "$td" 2>/dev/null || break
	sleep 0.05
done
if ! grep -q 'listening on' "$tmp/td"; then
	if grep -qiE 'permission|not permitted|capabilit' "$tmp/td"; then
		echo "  (tcpdump may not capture on lo: no loopback capture)"
		echo "PASS"
		exit 0
	fi
	fail "tcpdump did not start"
fi
for _ in 1 2 3 4 5; do
	curl -sf "$url/" >/dev/null || fail "curl"
done
if command -v wrk >/dev/null; then
	wrk -t 2 -c 20 -d 1s "$url/" >"$tmp/wrk" 2>&1 || fail "wrk"
else
	echo "  (wrk not installed: curl only)"
fi
# A client's close may trail its exit: its FIN waits behind requests
# the server, slow under the sanitizers, has not read yet, and would
# then come after the datagrams below, which end the capture. Wait
# until every connection is closed in the file: a FIN each way, or a
# reset (wrk resets those it leaves with a response unread, and they
# send no FIN: a wait for two FINs a connection ran its full 30 s then).
for _ in $(seq 300); do
	nsyn=$(tcpdump -r "$tmp/lo.pcap" -n \
		'tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn' 2>/dev/null |
		wc -l)
	nclosed=$(tcpdump -r "$tmp/lo.pcap" -n \
		'tcp[tcpflags] & (tcp-fin|tcp-rst) != 0' 2>/dev/null | awk '{
		a = $3; b = $5; sub(/:$/, "", b); c = a < b ? a " " b : b " " a
		if ($7 ~ /R/) rst[c] = 1; else fin[c, a] = 1
		if (rst[c] || (fin[c, a] && fin[c, b])) done[c] = 1 }
		END { n = 0; for (c in done) n++; print n }')
	[ "$nclosed" -ge "$nsyn" ] && break
	sleep 0.1
done
udp=0
if command -v socat >/dev/null; then
	for _ in 1 2 3; do
		echo datagram | socat -u - "UDP4-SENDTO:127.0.0.1:$uport" ||
			fail "socat"
	done
	udp=1
else
	echo "  (socat not installed: no UDP)"
fi
# tcpdump may lag behind wrk, and what its buffer holds at SIGINT is
# neither written nor counted as dropped: wait until the datagrams sent
# last are in the file (then so is everything before them).
if [ $udp = 1 ]; then
	for _ in $(seq 600); do
		[ "$(tcpdump -r "$tmp/lo.pcap" -n "udp port $uport" \
			2>/dev/null | wc -l)" -ge 3 ] && break
		sleep 0.1
	done
else
	sleep 2
fi
sleep 0.2	# the ICMP errors that answer them
kill -INT "$td"
wait "$td"
td=
captured=$(sed -n 's/^\([0-9]*\) packets\? captured.*/\1/p' "$tmp/td")
dropped=$(sed -n 's/^\([0-9]*\) packets\? dropped by kernel.*/\1/p' "$tmp/td")
[ -n "$captured" ] && [ -n "$dropped" ] || fail "tcpdump's counts"
accepted=$(curl -sf "$url/stats" |
	sed -n 's/.*"accepted": *\([0-9]*\).*/\1/p')
[ -n "$accepted" ] || fail "/stats"
accepted=$((accepted - 1))	# the /stats request
kill -INT "$srv"
wait "$srv"
srv=

# What the capture holds, counted by tcpdump: SYNs (one a connection on
# loopback, where nothing is lost to retransmit), UDP flows (unordered
# address pairs), packets neither TCP nor UDP (the ICMP errors).
syns=$(tcpdump -r "$tmp/lo.pcap" -n \
	'tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn' 2>/dev/null | wc -l)
uflows=$(tcpdump -r "$tmp/lo.pcap" -n udp 2>/dev/null | awk '{
	a = $3; b = $5; sub(/:$/, "", b)
	print (a < b ? a " " b : b " " a) }' | sort -u | wc -l)
icmp=$(tcpdump -r "$tmp/lo.pcap" -n 'not tcp and not udp' 2>/dev/null |
	wc -l)
echo "  capture: $captured packets ($dropped dropped), $syns SYNs," \
	"$uflows UDP flows, $icmp other; server accepted $accepted"
[ "$udp" = 0 ] || [ "$uflows" -ge 1 ] || fail "no UDP in the capture"

# conntab-bench's pcap replay of the same file, when it has libpcap.
# (Its values are printed to 4 significant digits: 3113.0, 119028.)
brow() { awk -F '\t' -v w="pcap-$1" '$1 == w && $2 == "capture" {
	printf "%d\n", $5 }' "$tmp/bench"; }
havebench=0
if [ -x "$bench" ] && "$bench" --tsv --pcap "$tmp/lo.pcap" --reps 1 --quick \
	--impl chained >"$tmp/bench" 2>/dev/null; then
	havebench=1
fi

# Every connection the capture made is in the table at its end only if
# none expires during the replay: the capture's times span the waits
# above (tens of seconds under the sanitizers on a loaded machine). In
# CI a UDP flow once expired so (29 entries for 26 TCP + 4 UDP flows,
# expired_udp 1): a datagram to or from $uport early in the capture,
# most likely another test's. So no timeout here.
long="--udp-timeout 86400 --syn-timeout 86400 --tw-timeout 86400"
for nw in 1 2; do
	# shellcheck disable=SC2086 # $long: options, one word each
	JSON=$((nw == 1)) run "$tmp/lo.pcap" $nw $long
	check_sums
	expect packets "$captured" tcp_new "$syns" syn "$syns" \
		tcp_pickup 0 udp_new "$uflows" unparsed_not-tcp-udp "$icmp"
	if [ "$dropped" = 0 ]; then
		# Nothing lost: every handshake and every close is there.
		expect tcp_new "$accepted" synack "$syns" established "$syns" \
			timewait "$syns"
		[ "$(table timewait)" = "$syns" ] ||
			fail "$(table timewait) in TIME_WAIT, $syns connections"
		[ "$(table entries)" = $((syns + uflows)) ] ||
			fail "$(table entries) entries, $syns TCP + $uflows UDP"
	fi
	if [ $havebench = 1 ]; then
		expect lookups "$(brow packets)"
		for v in not-ip truncated malformed fragment not-tcp-udp; do
			expect "unparsed_$v" "$(brow $v)"
		done
		[ $(($(get tcp_new) - $(get tcp_reuse) + $(get udp_new))) = \
			"$(brow flows)" ] ||
			fail "flows: conntab-bench counts $(brow flows)"
	fi
	echo "  loopback, $nw worker(s): $(get packets) packets," \
		"$(get tcp_new) TCP all in TIME_WAIT, $(get udp_new) UDP," \
		"$(get unparsed_not-tcp-udp) not TCP or UDP"
done

# 4. Expiry: every timeout 0, so each connection may be expired between
# its packets and picked up again; the sums hold whatever the timing,
# and the last pass at the end of the capture leaves nothing.
run "$tmp/lo.pcap" 2 --udp-timeout 0 --tcp-timeout 0 --syn-timeout 0 \
	--tw-timeout 0
check_sums
# Which of them expired as what depends on when the scans ran (a
# connection expired between its FINs is picked up again, and may expire
# as TCP instead of in TIME_WAIT); that all of them did, does not.
[ "$(table entries)" = 0 ] || fail "$(table entries) left after expiry"
[ "$(get evicted)" = 0 ] || fail "$(get evicted) evicted without a cap"
echo "  expiry: $(get expired_tcp) TCP, $(get expired_udp) UDP," \
	"$(get expired_tw) TIME_WAIT expired"
# Eviction (two workers evicting each other's connections): the table
# never holds more than 4, and every flow beyond them made room.
# shellcheck disable=SC2086 # as above
run "$tmp/lo.pcap" 2 --max-conns 4 $long
check_sums
[ "$(table entries)" -le 4 ] || fail "$(table entries) entries, cap 4"
[ "$(get evicted)" -ge $((syns + uflows - 4 - $(get tcp_reuse))) ] ||
	fail "$(get evicted) evicted of $((syns + uflows)) flows, cap 4"
echo "  eviction: $(get evicted) evicted, $(table entries) left"
echo "PASS"
