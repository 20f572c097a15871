#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# udp-flowd against real clients on loopback, once per backend that the
# library has (udp-flowd --list-backends):
#  1. udp-client opens 2000 sockets (2000 source ports, 2000 sessions) and
#     checks that each gets its own sequence 1..5 back, in order; the
#     server's totals must count exactly that many sessions, all still
#     live at exit. The reaper's scan (--scan-budget 64) must make a pass
#     that visits exactly those 2000 (each once), in at least 2000 / 64
#     calls, and no pass may ever report more (SIGUSR1 stats).
#  2. socat, one source port at a time, with --max-sessions 1 and
#     --assure 1: the first tuple gets "1 a" and is assured by it; a second
#     tuple is refused while the table holds only that session; once the
#     first is idle it shows in TIME_WAIT (SIGUSR1 stats), and its next
#     datagram starts a new session ("1 b") that recycles it; once that one
#     is in TIME_WAIT too, the second tuple evicts it ("1 y").
#  3. A flood past --max-sessions 64: udp-client sends from 600 new source
#     ports while one socat process keeps its session busy, one datagram
#     at a time, before, during and after the flood, each reply checked
#     for the session's own next number. That session is assured (more
#     than --assure 4 datagrams before the flood), so the numbers never
#     start over: it is never evicted. Every flood source gets its "1 ..."
#     reply; no SIGUSR1 stats line shows more than 64 entries; the totals
#     count the evictions; a session of one datagram (not assured), idle
#     since before the flood, starts over at 1 after it: evicted.
#  4. Short idle and time-wait timeouts, scans of 16 sessions per call:
#     200 sessions of one datagram each all expire and the table ends
#     empty.
# Every server is stopped with SIGINT (the last with SIGTERM) and must
# exit 0 with totals that add up: every session created was evicted,
# expired, recycled or is left in the table at exit.
# UDP_FLOWD and UDP_CLIENT name another udp-flowd and udp-client to test
# (installcheck's own builds, from the installed sources);
# EXAMPLES_ONE_BACKEND=1 tests the first backend only.
set -u

flowd=${UDP_FLOWD:-examples/udp-flowd}
client=${UDP_CLIENT:-examples/udp-client}
for tool in socat python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool not installed"
		exit 77
	fi
done

tmp=$(mktemp -d)
srv=
BUSY_PID=
cleanup() {
	[ -n "$srv" ] && kill -KILL "$srv" 2>/dev/null
	[ -n "$BUSY_PID" ] && kill "$BUSY_PID" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	[ -f "$tmp/out" ] && sed 's/^/  server: /' "$tmp/out"
	exit 1
}

# Start udp-flowd on a free port (--port 0); sets $srv and $port.
start() {
	: >"$tmp/out"
	"$flowd" --port 0 "$@" >"$tmp/out" 2>&1 &
	srv=$!
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's/.*listening on .* port \([0-9]*\),.*/\1/p' \
			"$tmp/out")
		[ -n "$port" ] && return
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.05
	done
	fail "udp-flowd $* did not start"
}

# SIGINT (or signal $1), wait (bounded) for a clean exit and the totals,
# check that they add up.
stop() {
	kill "-${1:-INT}" "$srv"
	for _ in $(seq 100); do
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.05
	done
	wait "$srv"
	rc=$?
	srv=
	[ "$rc" = 0 ] || fail "udp-flowd exited with $rc"
	totals=$(grep 'totals:' "$tmp/out") || fail "no totals"
	echo "  $totals"
	[ $(($(total sessions) - $(total evicted) - $(total expired) - \
		$(total recycled) - $(total left))) = 0 ] ||
		fail "sessions != evicted + expired + recycled + left"
}

# The value of a field in the totals line.
total() {
	echo "$totals" | sed -n "s/.* $1 \([0-9]*\).*/\1/p"
}

# Ask for stats (SIGUSR1) until a new stats line matches $1, at most $2
# times (100); the line is left in $stats.
wait_stats() {
	local seen
	for _ in $(seq "${2:-100}"); do
		seen=$(grep -c 'stats:' "$tmp/out")
		kill -USR1 "$srv"
		sleep 0.05
		stats=$(grep 'stats:' "$tmp/out" | tail -n +$((seen + 1)) |
			grep "$1" | head -n 1)
		[ -n "$stats" ] && return
	done
	fail "stats never showed '$1'"
}

# The largest value of field $1 over every stats line so far.
stats_max() {
	sed -n "s/.*stats:.*[ (]$1 \([0-9]*\).*/\1/p" "$tmp/out" | sort -n |
		tail -n 1
}

# Two distinct free UDP source ports for socat.
free_ports() {
	python3 -c 'import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in (1, 2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))'
}

# Two free UDP ports below the kernel's ephemeral range: no udp-client
# socket can be given one of them, even while socat is not holding it.
quiet_ports() {
	python3 -c 'import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
found = []
for p in random.sample(range(1024, low), low - 1024):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", p))
        found.append(p)
    except OSError:
        pass
    s.close()
    if len(found) == 2:
        break
print(" ".join(map(str, found)))'
}

# One datagram from source port $1 with payload $2; the reply must be $3.
# readbytes makes socat stop as soon as that many bytes came back; -t
# bounds the wait for a reply that does not come.
expect_reply() {
	local r
	r=$(echo -n "$2" | socat -t "${4:-5}" - \
		"UDP:127.0.0.1:$port,sourceport=$1${3:+,readbytes=${#3}}")
	[ "$r" = "$3" ] || fail "from port $1: got '$r', want '$3'"
}

# One long-lived socat from source port $1: one session, kept busy by
# busy_send. Lockstep (the next line only after the reply to the last),
# so that every line socat reads is one datagram.
busy_start() {
	coproc BUSY { exec socat -t 60 - "UDP:127.0.0.1:$port,sourceport=$1"; }
	busy=0
}

# The busy session's next datagram: the reply must carry its next number.
busy_send() {
	local r
	busy=$((busy + 1))
	echo "b$busy" >&"${BUSY[1]}" || fail "busy socat gone"
	read -t 10 -r r <&"${BUSY[0]}" ||
		fail "busy session: no reply to b$busy"
	[ "$r" = "$busy b$busy" ] ||
		fail "busy session: got '$r', want '$busy b$busy'"
}

busy_stop() {
	kill "$BUSY_PID" 2>/dev/null
	wait "$BUSY_PID" 2>/dev/null
	BUSY_PID=
}

# One descriptor per session in udp-client: stay under the hard limit.
sessions=2000
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt $((sessions + 100)) ]; then
	sessions=$((hard - 100))
fi

backends=$("$flowd" --list-backends) || fail "--list-backends"
[ -n "$backends" ] || fail "no backend available"
if [ -n "${EXAMPLES_ONE_BACKEND:-}" ]; then
	backends=$(echo "$backends" | head -n 1)
fi
for b in $backends; do
	echo "backend $b"

	# 1. many sessions; a scan pass over all of them
	start --backend "$b" --threads 4 --idle 60000 --time-wait 1000 \
		--scan-budget 64
	"$client" --port "$port" --sessions "$sessions" --count 5 ||
		fail "udp-client"
	wait_stats "(last: $sessions sessions in " 200
	calls=$(echo "$stats" | sed -n 's/.* in \([0-9]*\) calls.*/\1/p')
	echo "  scan pass: $sessions sessions in $calls calls"
	[ "$calls" -ge $(((sessions + 63) / 64)) ] ||
		fail "a pass of $sessions in $calls calls of 64"
	[ "$(stats_max 'last:')" = "$sessions" ] ||
		fail "a pass visited more than $sessions"
	stop
	[ "$(total sessions)" = "$sessions" ] || fail "sessions != $sessions"
	[ "$(total left)" = "$sessions" ] || fail "left != $sessions"
	[ "$(total datagrams)" = $((sessions * 5)) ] || fail "datagrams"
	[ "$(total refused)" = 0 ] || fail "refused"
	[ "$(total evicted)" = 0 ] || fail "evicted without a cap"

	# 2. one session at most: refusal (assured), recycling, eviction
	# --idle 1000: the refusal below must come while the first session
	# is still live; with 100 ms a loaded machine (CI beside other
	# builds) took longer than that to start socat, the session had
	# idled into TIME_WAIT and the second tuple evicted it.
	start --backend "$b" --max-sessions 1 --assure 1 --idle 1000 \
		--time-wait 60000
	read -r sp1 sp2 <<<"$(free_ports)"
	expect_reply "$sp1" a "1 a"
	# Beyond --max-sessions, with only an assured session to evict: no
	# answer (a short wait; the totals below confirm the refusal).
	expect_reply "$sp2" x "" 0.3
	wait_stats "entries 1 timewait 1"
	expect_reply "$sp1" b "1 b"
	wait_stats "entries 1 timewait 1"
	expect_reply "$sp2" y "1 y"
	stop
	[ "$(total recycled)" = 1 ] || fail "recycled != 1"
	[ "$(total refused)" = 1 ] || fail "refused != 1"
	[ "$(total evicted)" = 1 ] || fail "evicted != 1"

	# 3. a flood past the cap; one busy session survives it
	start --backend "$b" --threads 2 --max-sessions 64 --assure 4
	read -r busy_port idle_port <<<"$(quiet_ports)"
	expect_reply "$idle_port" i "1 i"
	busy_start "$busy_port"
	for _ in 1 2 3 4 5; do
		busy_send
	done
	"$client" --port "$port" --sessions 600 --count 1 >"$tmp/flood" 2>&1 &
	flood=$!
	during=0
	while kill -0 "$flood" 2>/dev/null && [ "$during" -lt 5000 ]; do
		busy_send
		kill -USR1 "$srv"
		during=$((during + 1))
	done
	wait "$flood" || fail "udp-client flood: $(cat "$tmp/flood")"
	cat "$tmp/flood"
	busy_send
	busy_stop
	echo "  busy session: $busy datagrams in order," \
		"$during during the flood"
	# Not assured and idlest: sampled by one of the 538 evictions (each
	# samples >= 8 of 64), it is the one to go.
	expect_reply "$idle_port" j "1 j"
	wait_stats "entries 64 timewait 0"
	[ "$(stats_max entries)" -le 64 ] || fail "more than 64 entries"
	stop
	# busy + idle (twice) + 600 flood sessions, 64 left: all the others
	# were evicted (stop checked the sum).
	[ "$(total sessions)" = 603 ] || fail "sessions != 603"
	[ "$(total left)" = 64 ] || fail "left != 64"
	[ "$(total evicted)" = 539 ] || fail "evicted != 539"

	# 4. expiry, one datagram each so that no session can idle out half
	# way, in scans of 16
	start --backend "$b" --threads 2 --idle 50 --time-wait 50 \
		--scan-budget 16
	"$client" --port "$port" --sessions 200 --count 1 ||
		fail "udp-client"
	wait_stats "entries 0 timewait 0"
	stop TERM
	[ "$(total expired)" = 200 ] || fail "expired != 200"
	[ "$(total left)" = 0 ] || fail "left != 0"
done
echo "PASS"
