#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# udp-flowd against real clients on loopback, once per backend that the
# library has (udp-flowd --list-backends):
#  1. udp-client opens 2000 sockets (2000 source ports, 2000 sessions) and
#     checks that each gets its own sequence 1..5 back, in order; the
#     server's totals must count exactly that many sessions, all still
#     live at exit.
#  2. socat, one source port at a time, with --max-sessions 1: the first
#     tuple gets "1 a"; a second tuple is refused while the table is full;
#     once the first is idle it shows in TIME_WAIT (SIGUSR1 stats), and its
#     next datagram starts a new session ("1 b") that recycles it.
#  3. Short idle and time-wait timeouts: 200 sessions of one datagram
#     each all expire and the table ends empty.
# Every server is stopped with SIGINT (the last with SIGTERM) and must
# exit 0 with its totals.
# UDP_FLOWD names another udp-flowd to test (installcheck's own build);
# EXAMPLES_ONE_BACKEND=1 tests the first backend only.
set -u

flowd=${UDP_FLOWD:-examples/udp-flowd}
client=examples/udp-client
for tool in socat python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool not installed"
		exit 77
	fi
done

tmp=$(mktemp -d)
srv=
cleanup() {
	[ -n "$srv" ] && kill -KILL "$srv" 2>/dev/null
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

# SIGINT (or signal $1), wait (bounded) for a clean exit and the totals.
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
}

# The value of a field in the totals line.
total() {
	echo "$totals" | sed -n "s/.* $1 \([0-9]*\).*/\1/p"
}

# Ask for stats (SIGUSR1) until a new stats line matches $1.
wait_stats() {
	local seen
	for _ in $(seq 100); do
		seen=$(grep -c 'stats:' "$tmp/out")
		kill -USR1 "$srv"
		sleep 0.05
		grep 'stats:' "$tmp/out" | tail -n +$((seen + 1)) |
			grep -q "$1" && return
	done
	fail "stats never showed '$1'"
}

# Two distinct free UDP source ports for socat.
free_ports() {
	python3 -c 'import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in (1, 2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))'
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

	start --backend "$b" --threads 4 --idle 60000
	"$client" --port "$port" --sessions "$sessions" --count 5 ||
		fail "udp-client"
	stop
	[ "$(total sessions)" = "$sessions" ] || fail "sessions != $sessions"
	[ "$(total left)" = "$sessions" ] || fail "left != $sessions"
	[ "$(total datagrams)" = $((sessions * 5)) ] || fail "datagrams"
	[ "$(total refused)" = 0 ] || fail "refused"

	start --backend "$b" --max-sessions 1 --idle 100 --time-wait 60000
	read -r sp1 sp2 <<<"$(free_ports)"
	expect_reply "$sp1" a "1 a"
	# Beyond --max-sessions: no answer (a short wait; the totals below
	# confirm the refusal).
	expect_reply "$sp2" x "" 0.3
	wait_stats "entries 1 timewait 1"
	expect_reply "$sp1" b "1 b"
	stop
	[ "$(total recycled)" = 1 ] || fail "recycled != 1"
	[ "$(total refused)" = 1 ] || fail "refused != 1"

	# One datagram each, so that no session can idle out half way.
	start --backend "$b" --threads 2 --idle 50 --time-wait 50
	"$client" --port "$port" --sessions 200 --count 1 ||
		fail "udp-client"
	wait_stats "entries 0 timewait 0"
	stop TERM
	[ "$(total expired)" = 200 ] || fail "expired != 200"
	[ "$(total left)" = 0 ] || fail "left != 0"
done
echo "PASS"
