#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# udp-lb against real clients and targets on loopback, for IPv4 and IPv6
# and every backend the library has (udp-lb --list-backends). Four echo
# targets (one python3 process, be1..be4) answer each datagram with
# "NAME NATPORT PAYLOAD": their own name and the balancer's source port
# they saw, which names the flow. The clients are python3 sockets, each
# connect()ed to the virtual address (its own source port, its own flow),
# each reply checked to carry that socket's own payload.
#  1. main: three targets; 240 clients: every reply reaches the client
#     that asked, the flows spread over the three (each at least half its
#     share), and stay: a second round finds each on its target and NAT
#     port. Stats: flows = pairs = entries, nodes = 2 x pairs, no half
#     pair, per-target counts = what the clients saw. "add" be4: the 240
#     keep target and port; 240 new clients spread over four (each at
#     least half its share). "del" be2: exactly its flows are dropped
#     (the others keep target and port; stats agree); its clients get new
#     flows on the other three.
#  2. flood: a cap of 32 flows (--max-flows, for IPv4; a pool of 33
#     ports, for IPv6): one client sends once and idles, one keeps a
#     stream busy (assured: --busy is long), then 200 new clients one at a
#     time, the busy stream answered on its own flow after each. Stats
#     after every 20: never more than 32 flows, never half a pair. After
#     it: 32 flows, 170 evictions (the library's counter too), 202 flows
#     created: the busy one was never evicted (its NAT port never
#     changed); the idle one was, and comes back as a new flow.
#  3. expire: --idle 500 with scans of 8 flows a tick; 100 clients once
#     each; waits (bounded, generous) for the table to empty: every flow
#     created expired, every port back in the pool; the clients are
#     answered again, on new flows.
# Each balancer is stopped with SIGTERM and must exit 0: its totals add
# up (created = evicted + expired + dropped + left).
# UDP_LB names another udp-lb to test (installcheck's own build);
# EXAMPLES_ONE_BACKEND=1 tests the first backend only.
set -u

lb=${UDP_LB:-examples/udp-lb}
if ! command -v python3 >/dev/null; then
	echo "SKIP: python3 not installed"
	exit 77
fi

tmp=$(mktemp -d)
srv=
echo_pid=
cleanup() {
	[ -n "$srv" ] && kill -KILL "$srv" 2>/dev/null
	[ -n "$echo_pid" ] && kill "$echo_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	[ -f "$tmp/out" ] && sed 's/^/  udp-lb: /' "$tmp/out"
	exit 1
}

# The targets: one process, a socket each, "NAME PORT" lines when bound.
cat >"$tmp/echo.py" <<'EOF'
import select, socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
names = {}
for name in sys.argv[2:]:
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((sys.argv[1], 0))
    names[s] = name.encode()
    print(name, s.getsockname()[1], flush=True)
while True:
    for s in select.select(list(names), [], [])[0]:
        data, peer = s.recvfrom(65536)
        s.sendto(b"%s %d %s" % (names[s], peer[1], data), peer)
EOF

# The clients and the checks: lbtest.py MODE ADDR PORT CTLPORT NAME=T...
cat >"$tmp/lbtest.py" <<'EOF'
import select, socket, sys, time

mode, addr, port, ctlport = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4])
targets = dict(a.split("=", 1) for a in sys.argv[5:])  # name -> HOST:PORT
byaddr = {v: k for k, v in targets.items()}
fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
WAIT = 120          # seconds: generous bounds, never a threshold


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def ctl(cmd):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    for _ in range(WAIT // 5):
        s.sendto(cmd.encode(), ("127.0.0.1", ctlport))
        try:
            reply = s.recv(65536).decode()
            s.close()
            return reply
        except socket.timeout:
            pass
    fail("no answer to control command %r" % cmd)


def stats():
    lines = ctl("stats").splitlines()
    words = lines[0].split()
    st = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
    per = {}
    for line in lines[1:]:
        w = line.split()        # target HOST:PORT flows N
        per[byaddr.get(w[1], w[1])] = int(w[3])
    return st, per


def check_pairs(st, cap=None):
    if not (st["flows"] == st["pairs"] == st["entries"]):
        fail("flows, pairs, entries differ: %r" % st)
    if st["nodes"] != 2 * st["pairs"] or st["half_pairs"]:
        fail("half a pair in the table: %r" % st)
    if cap is not None and st["flows"] > cap:
        fail("more than %d flows: %r" % (cap, st))


def clients(n):
    socks = []
    for _ in range(n):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.connect((addr, port))     # our own source port: our own flow
        socks.append(s)
    return socks


def exchange(socks, tag):
    """One datagram per socket ("c<i> <tag>"), at most 32 in flight; a
    reply must come back to the socket that sent it with its own payload.
    One missing for 2 s is sent again. Returns (target, natport) each."""
    res = [None] * len(socks)
    todo = list(range(len(socks)))
    out = {}
    byfd = {s.fileno(): i for i, s in enumerate(socks)}
    deadline = time.time() + WAIT
    while todo or out:
        if time.time() > deadline:
            fail("%s: no reply for %d clients" % (tag, len(todo) + len(out)))
        while todo and len(out) < 32:
            i = todo.pop()
            socks[i].send(b"c%d %s" % (i, tag.encode()))
            out[i] = time.time()
        ready = select.select([socks[i] for i in out], [], [], 0.5)[0]
        for s in ready:
            i = byfd[s.fileno()]
            name, nat, payload = s.recv(65536).decode().split(" ", 2)
            if not payload.startswith("c%d " % i):
                fail("client %d got another's reply: %r" % (i, payload))
            if payload != "c%d %s" % (i, tag) or i not in out:
                continue        # an earlier round's, or a resent one's
            res[i] = (name, int(nat))
            del out[i]
        now = time.time()
        for i, t in list(out.items()):
            if now - t > 2:
                socks[i].send(b"c%d %s" % (i, tag.encode()))
                out[i] = now
    return res


def spread(res, names, tag):
    count = {n: 0 for n in names}
    for name, _ in res:
        if name not in count:
            fail("%s: a flow on %s, not one of %s" % (tag, name, names))
        count[name] += 1
    fair = len(res) / len(names)
    for n in names:
        # Maglev spreads within a few percent; half the fair share leaves
        # room for the hash's chance over a few hundred flows.
        if count[n] < fair / 2:
            fail("%s: %s has %d of %d flows" % (tag, n, count[n], len(res)))
    print("  %s: %s" % (tag, " ".join("%s %d" % kv for kv in
                                       sorted(count.items()))), flush=True)
    return count


def same(old, new, what):
    for i, (o, n) in enumerate(zip(old, new)):
        if o != n:
            fail("%s: client %d moved from %s to %s" % (what, i, o, n))


def main():
    three = ["be1", "be2", "be3"]
    a = clients(240)
    r1 = exchange(a, "r1")
    count = spread(r1, three, "240 flows over 3")
    st, per = stats()
    check_pairs(st)
    if st["flows"] != 240 or per != count:
        fail("stats %r %r, clients saw %r" % (st, per, count))
    same(r1, exchange(a, "r2"), "second round")

    if ctl("add " + targets["be4"]).strip() != "ok":
        fail("add be4")
    same(r1, exchange(a, "r3"), "after add")
    b = clients(240)
    rb = exchange(b, "b1")
    spread(rb, three + ["be4"], "240 new flows over 4")
    st, per = stats()
    check_pairs(st)
    if st["flows"] != 480:
        fail("480 flows: %r" % st)

    gone = per["be2"]
    if ctl("del " + targets["be2"]).strip() != "ok":
        fail("del be2")
    st, per2 = stats()
    check_pairs(st)
    del per["be2"]
    if st["flows"] != 480 - gone or st["dropped"] != gone or per2 != per:
        fail("del be2 (%d flows): %r %r" % (gone, st, per2))
    old = r1 + rb
    new = exchange(a + b, "r4")
    for i, (o, n) in enumerate(zip(old, new)):
        if o[0] == "be2":
            if n[0] == "be2":
                fail("client %d still on be2" % i)
        elif o != n:
            fail("del be2: client %d moved from %s to %s" % (i, o, n))
    st, _ = stats()
    check_pairs(st)
    if st["flows"] != 480 or st["created"] != 480 + gone:
        fail("after del: %r" % st)
    print("  del be2: %d flows dropped, the other %d kept" %
          (gone, 480 - gone), flush=True)


def flood():
    cap = 32
    idle, busy = clients(2)
    (i1,) = exchange([idle], "i1")
    (b0,) = exchange([busy], "b0")
    for k in range(1, 10):
        same([b0], exchange([busy], "b%d" % k), "busy stream")
    keep = []
    for j in range(200):
        f = clients(1)
        keep += f
        exchange(f, "f%d" % j)
        same([b0], exchange([busy], "bf%d" % j), "busy during the flood")
        if j % 20 == 19:
            st, _ = stats()
            check_pairs(st, cap)
    st, _ = stats()
    check_pairs(st, cap)
    if (st["flows"] != cap or st["created"] != 202 or
            st["evicted"] != 202 - cap or
            st["table_evictions"] != 202 - cap or
            st["ports_free"] + cap != st["ports"]):
        fail("after the flood: %r" % st)
    # Idle since before the flood, not assured: sampled by one of the 170
    # evictions (each samples >= 8 of 32) it was the idlest there.
    exchange([idle], "i2")
    st, _ = stats()
    if st["created"] != 203:
        fail("the idle flow was not evicted: %r" % st)
    print("  flood: 200 new flows past %d, %d evicted, the busy stream "
          "kept its flow" % (cap, st["evicted"]), flush=True)


def expire():
    socks = clients(100)
    exchange(socks, "e1")
    deadline = time.time() + WAIT
    while True:
        st, _ = stats()
        check_pairs(st)
        if st["flows"] == 0:
            break
        if time.time() > deadline:
            fail("flows never expired: %r" % st)
        time.sleep(0.1)
    if (st["created"] < 100 or st["expired"] != st["created"] or
            st["ports_free"] != st["ports"] or not st["scan_passes"]):
        fail("after expiry: %r" % st)
    exchange(socks, "e2")
    print("  expire: %d flows created, %d expired" %
          (st["created"], st["expired"]), flush=True)


{"main": main, "flood": flood, "expire": expire}[mode]()
EOF

# Start udp-lb (a free port, a free control port); sets $srv, $port,
# $ctl.
start() {
	: >"$tmp/out"
	"$lb" --listen "$addr" --port 0 "$@" >"$tmp/out" 2>&1 &
	srv=$!
	for _ in $(seq 200); do
		read -r port ctl <<<"$(sed -n \
			's/.* port \([0-9]*\), control port \([0-9]*\),.*/\1 \2/p' \
			"$tmp/out")"
		[ -n "$port" ] && return
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.05
	done
	fail "udp-lb $* did not start"
}

# SIGTERM, a clean exit (its totals add up, or the status says so).
stop() {
	kill -TERM "$srv"
	wait "$srv"
	rc=$?
	srv=
	[ "$rc" = 0 ] || fail "udp-lb exited with $rc"
	grep 'totals:' "$tmp/out" | sed 's/^/  /'
}

# lbtest.py MODE: the clients against the running balancer.
drive() {
	python3 "$tmp/lbtest.py" "$1" "$addr" "$port" "$ctl" $names ||
		fail "$1"
}

backends=$("$lb" --list-backends) || fail "--list-backends"
[ -n "$backends" ] || fail "no backend available"
if [ -n "${EXAMPLES_ONE_BACKEND:-}" ]; then
	backends=$(echo "$backends" | head -n 1)
fi
for addr in 127.0.0.1 ::1; do
	if ! python3 -c "import socket, sys
s = socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else
		  socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 0))" "$addr" 2>/dev/null; then
		echo "no $addr on this machine: skipped"
		continue
	fi
	t=$addr
	[ "$addr" = ::1 ] && t="[::1]"
	python3 "$tmp/echo.py" "$addr" be1 be2 be3 be4 >"$tmp/echo" &
	echo_pid=$!
	for _ in $(seq 200); do
		[ "$(wc -l <"$tmp/echo")" = 4 ] && break
		sleep 0.05
	done
	[ "$(wc -l <"$tmp/echo")" = 4 ] || fail "echo targets did not start"
	names=$(while read -r n p; do echo "$n=$t:$p"; done <"$tmp/echo")
	three=$(echo "$names" | head -n 3 | sed 's/^[^=]*=/--target /')

	for b in $backends; do
		echo "$addr, backend $b"
		# shellcheck disable=SC2086 # options, a word each
		# 480 flows at most, in 500 ports: 520 descriptors in all,
		# under the usual limit of 1024 with the clients' 480.
		start --backend "$b" $three --idle 600000 --ports 500
		drive main
		stop
		if [ "$addr" = ::1 ]; then
			cap="--ports 33"
		else
			cap="--max-flows 32 --ports 64"
		fi
		# shellcheck disable=SC2086
		start --backend "$b" $three $cap --idle 600000 --busy 600000
		drive flood
		stop
		# shellcheck disable=SC2086
		start --backend "$b" $three --idle 500 --scan-budget 8
		drive expire
		stop
	done
	kill "$echo_pid"
	wait "$echo_pid" 2>/dev/null
	echo_pid=
done
echo "PASS"
