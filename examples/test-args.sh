#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The examples' command lines (examples/args.h), without a client:
#  1. --help: exit status 0, the usage on stdout under the program's own
#     name, nothing on stderr; --list-backends: the same list from each
#     example that creates a table; minimal runs with each of them.
#  2. Each bad command line: exit status 2, and exactly one line on
#     stderr, the one expected, naming the program (never libtool's
#     .libs/lt-NAME) and the option: numbers that are not numbers,
#     negative or out of range, unknown options, a missing value, a value
#     for an option that takes none, a stray argument, an unknown backend,
#     an address that is not one, no --port.
#  3. A port of their own: a second tcp-conntrack or udp-flowd on the port
#     of a running one fails at once (exit status 1, one line saying why),
#     with or without --reuseport; two started with --reuseport share it,
#     and a third without it is refused. udp-lb (no --reuseport) too.
# MINIMAL, UDP_FLOWD, TCP_CONNTRACK, UDP_LB and UDP_CLIENT name other builds to
# test (installcheck's).
set -u

minimal=${MINIMAL:-examples/minimal}
flowd=${UDP_FLOWD:-examples/udp-flowd}
conntrack=${TCP_CONNTRACK:-examples/tcp-conntrack}
udplb=${UDP_LB:-examples/udp-lb}
client=${UDP_CLIENT:-examples/udp-client}

tmp=$(mktemp -d)
pids=
cleanup() {
	for pid in $pids; do
		kill -KILL "$pid" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
status=0

fail() {
	echo "FAIL: $*"
	status=1
}

# run PROG ARGS...: $rc, $tmp/out and $tmp/err, at most 10 s.
run() {
	timeout 10 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
}

# usage NAME PROG: --help prints the usage of NAME on stdout, exit 0.
usage() {
	run "$2" --help
	if [ "$rc" != 0 ] || [ -s "$tmp/err" ] ||
	   ! head -n 1 "$tmp/out" | grep -q "^usage: $1 "; then
		fail "$1 --help: exit $rc: $(cat "$tmp/out" "$tmp/err")"
	else
		echo "ok: $1 --help"
	fi
}

# bad PROG MESSAGE ARGS...: exit status 2 and MESSAGE, the only line on
# stderr, nothing on stdout.
bad() {
	local prog=$1 want=$2
	shift 2
	run "$prog" "$@"
	if [ "$rc" = 2 ] && [ ! -s "$tmp/out" ] &&
	   [ "$(cat "$tmp/err")" = "$want" ]; then
		echo "ok: $want"
	else
		fail "$(basename "$prog") $*: exit $rc," \
			"stderr '$(cat "$tmp/err")', want '$want'," \
			"stdout '$(head -c 200 "$tmp/out")'"
	fi
}

# 1. --help, --list-backends
usage minimal "$minimal"
usage udp-flowd "$flowd"
usage tcp-conntrack "$conntrack"
usage udp-client "$client"
usage udp-lb "$udplb"

run "$minimal" --list-backends
backends=$(cat "$tmp/out")
[ "$rc" = 0 ] && [ -n "$backends" ] || fail "minimal --list-backends"
for prog in "$flowd" "$conntrack" "$udplb"; do
	run "$prog" --list-backends
	[ "$rc" = 0 ] && [ "$(cat "$tmp/out")" = "$backends" ] ||
		fail "$prog --list-backends: $(cat "$tmp/out" "$tmp/err")"
done
for b in $backends; do
	run "$minimal" --backend "$b"
	[ "$rc" = 0 ] && grep -q '^removed:' "$tmp/out" ||
		fail "minimal --backend $b: exit $rc: $(cat "$tmp/err")"
done
echo "ok: --list-backends: $(echo $backends); minimal runs with each"
have=$(echo $backends | sed 's/ /, /g')

# 2. bad command lines
h='(--help lists the options)'
nb="is not a backend of this library ($have)"
for prog in "$conntrack" "$flowd"; do
	p=$(basename "$prog")
	p=${p%-installed}
	unit="an entry"
	[ "$p" = udp-flowd ] && unit="a session"
	bad "$prog" "$p: --port: 'abc' is not a port (0-65535)" --port abc
	bad "$prog" "$p: --port: '65536' is not a port (0-65535)" --port 65536
	bad "$prog" "$p: --port: '-1' is not a port (0-65535)" --port -1
	bad "$prog" "$p: --port: ' 80' is not a port (0-65535)" --port ' 80'
	bad "$prog" "$p: --port: '80x' is not a port (0-65535)" --port 80x
	bad "$prog" "$p: --port: '' is not a port (0-65535)" --port=
	bad "$prog" "$p: --port: missing (0 picks a free port)" --threads 2
	bad "$prog" "$p: --port: needs a value $h" \
		--port
	bad "$prog" "$p: --threads: '0' is not a thread count (1-256)" \
		--port 0 --threads 0
	bad "$prog" "$p: --threads: '257' is not a thread count (1-256)" \
		--port 0 --threads 257
	bad "$prog" "$p: --time-wait: '-5' is not a time in ms (1-604800000)" \
		--port 0 --time-wait -5
	bad "$prog" "$p: --scan-budget: '0' is not $unit count (1-1048576)" \
		--port 0 --scan-budget 0
	bad "$prog" "$p: --backend: 'nope' $nb" --port 0 --backend nope
	bad "$prog" "$p: --bind: '1.2.3.4.5' is not an IPv4 or IPv6 address" \
		--port 0 --bind 1.2.3.4.5
	bad "$prog" "$p: --nope: unknown option $h" \
		--port 0 --nope
	bad "$prog" "$p: -x: unknown option $h" -x
	bad "$prog" "$p: --list-backends: takes no value" --list-backends=1
	bad "$prog" "$p: 'extra': unexpected argument $h" \
		--port 0 extra
done
bad "$flowd" "udp-flowd: --max-sessions: '-1' is not a session count "\
"(0-16777216)" --port 0 --max-sessions -1
bad "$flowd" "udp-flowd: --idle: '-5' is not a time in ms (1-604800000)" \
	--port 0 --idle -5
bad "$flowd" "udp-flowd: --idle: '0' is not a time in ms (1-604800000)" \
	--port 0 --idle 0
bad "$flowd" "udp-flowd: --assure: '1e3' is not a datagram count "\
"(0-1000000)" --port 0 --assure 1e3
for n in 18446744073709551615 99999999999999999999; do
	bad "$conntrack" "tcp-conntrack: --max-conns: '$n' is not a "\
"connection count (0-16777216)" --port 0 --max-conns "$n"
done
bad "$minimal" "minimal: --backend: 'nope' $nb" --backend nope
bad "$minimal" "minimal: --backend: needs a value $h" \
	--backend
bad "$minimal" "minimal: 'x': unexpected argument $h" x
bad "$client" "udp-client: --port: '0' is not a port (1-65535)" --port 0
bad "$client" "udp-client: --port: missing" --count 1
bad "$client" "udp-client: --sessions: '-2' is not a session count (1-60000)" \
	--port 9 --sessions -2
bad "$client" "udp-client: --host: 'localhost' is not an IPv4 or IPv6 address" \
	--port 9 --host localhost
l=udp-lb
bad "$udplb" "$l: --port: missing (0 picks a free port)" --target 127.0.0.1:9
bad "$udplb" "$l: --port: 'x' is not a port (0-65535)" --port x
bad "$udplb" "$l: --ports: '1' is not a port count (2-60000)" --port 0 \
	--ports 1
bad "$udplb" "$l: --maglev-size: '65536' is not a prime" --port 0 \
	--maglev-size 65536
bad "$udplb" "$l: --maglev-size: '2' is not a size (3-1000003)" --port 0 \
	--maglev-size 2
bad "$udplb" "$l: --busy: '0' is not a time in ms (1-604800000)" --port 0 \
	--busy 0
bad "$udplb" "$l: --backend: 'nope' $nb" --port 0 --backend nope
bad "$udplb" "$l: --listen: 'x' is not an IPv4 or IPv6 address" --port 0 \
	--listen x
bad "$udplb" "$l: --target: '127.0.0.1': not HOST:PORT ([ADDR]:PORT for "\
"IPv6)" --port 0 --target 127.0.0.1
bad "$udplb" "$l: --target: '127.0.0.1:0': not HOST:PORT ([ADDR]:PORT for "\
"IPv6)" --port 0 --target 127.0.0.1:0
bad "$udplb" "$l: --target: 'localhost:53': not a numeric IPv4 or IPv6 "\
"address" --port 0 --target localhost:53
bad "$udplb" "$l: --target: '[::1]:53': not of the family of the pool's "\
"ports (--source)" --port 0 --ports 2 --target [::1]:53
bad "$udplb" "$l: --control: 'x:1' is not a numeric IPv4 or IPv6 address" \
	--port 0 --control x:1
bad "$udplb" "$l: 'extra': unexpected argument $h" --port 0 extra

# 3. a port of their own. start PROG ARGS...: runs it, sets $port.
start() {
	"$@" --port "${port:-0}" >"$tmp/srv$n" 2>&1 &
	pids="$pids $!"
	last=$!
	for _ in $(seq 100); do
		if grep -q 'listening on' "$tmp/srv$n"; then
			port=$(sed -n 's/.* port \([0-9]*\),.*/\1/p' \
				"$tmp/srv$n")
			return 0
		fi
		kill -0 "$last" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# stop: SIGINT every server started, each must exit 0.
stop() {
	for pid in $pids; do
		kill -INT "$pid" 2>/dev/null
		wait "$pid" || fail "a server exited with $?"
	done
	pids=
}

n=0
for prog in "$conntrack" "$flowd"; do
	p=$(basename "$prog")
	p=${p%-installed}
	port=
	n=$((n + 1))
	start "$prog" || fail "$p did not start: $(cat "$tmp/srv$n")"
	taken="^$p: port $port on 127.0.0.1: .*in use (another server has it"
	run "$prog" --port "$port"
	if [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
	   grep -q "$taken; --reuseport" "$tmp/err"; then
		echo "ok: a second $p on port $port: $(head -n 1 "$tmp/err")"
	else
		fail "a second $p on port $port: exit $rc:" \
			"$(cat "$tmp/out" "$tmp/err")"
	fi
	run "$prog" --port "$port" --reuseport
	[ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
		grep -q "in use (and not shared" "$tmp/err" ||
		fail "$p --reuseport on a port not shared: exit $rc:" \
			"$(cat "$tmp/err")"
	stop

	port=
	n=$((n + 1))
	start "$prog" --reuseport ||
		fail "$p --reuseport did not start: $(cat "$tmp/srv$n")"
	n=$((n + 1))
	if start "$prog" --reuseport; then
		echo "ok: two $p --reuseport share port $port"
	else
		fail "a second $p --reuseport: $(cat "$tmp/srv$n")"
	fi
	run "$prog" --port "$port"
	[ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] ||
		fail "$p without --reuseport on a shared port: exit $rc:" \
			"$(cat "$tmp/err")"
	stop
done

# udp-lb has no --reuseport: a balancer's flows live in its own table.
port=
n=$((n + 1))
start "$udplb" || fail "udp-lb did not start: $(cat "$tmp/srv$n")"
run "$udplb" --port "$port"
if [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
   grep -q "^udp-lb: port $port on 127.0.0.1: .*in use" "$tmp/err"; then
	echo "ok: a second udp-lb on port $port: $(cat "$tmp/err")"
else
	fail "a second udp-lb on port $port: exit $rc: $(cat "$tmp/err")"
fi
stop
exit $status
