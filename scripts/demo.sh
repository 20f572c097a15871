#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# From a fresh Debian 12 checkout to the main demo in one command (as root,
# or with sudo): install the build packages, build out of tree in build/,
# run `make demo` (the 2007 netdev experiment: 1M connections, uniform
# random keys, every backend against its peers), then the same tables on
# real traffic: one line per backend for flows of Zipf(1.0) popularity,
# looked up one at a time and in batches of 16, alone and in trains; and
# last, conntab against each peer, one line each, from both runs.
#
# DEMO_SKIP_APT=1 skips the package step (packages already installed).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
jobs=$(nproc 2>/dev/null || echo 2)

step() { printf '\n==== %s\n' "$*"; }

if [ "${DEMO_SKIP_APT:-0}" != 1 ]; then
	if [ "$(id -u)" = 0 ]; then
		sudo=
	elif command -v sudo >/dev/null; then
		sudo=sudo
	else
		echo "demo: not root and no sudo: cannot install packages" >&2
		exit 1
	fi
	step "installing packages"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -q
	# shellcheck disable=SC2046 # one package per word
	$sudo apt-get install -y -q --no-install-recommends \
		$(grep -v '^#' "$src/.ci/packages")
fi

step "building in $build"
cd "$src"
autoreconf -fi
mkdir -p "$build"
cd "$build"
"$src/configure" -q
make -j"$jobs"

step "make demo"
make demo | tee "$build/demo.out"

step "real traffic: 1M connections, Zipf(1.0) flows, one thread"
# One line per backend: ns per lookup one at a time and in batches of 16,
# on zipf and trains, and zipf one at a time against the faster of the
# peers lfht and ck_ht (below 1: faster).
bench/conntab-bench --tsv --n 1M --workload floor,zipf,trains --zipf 1.0 \
	--threads 1 | tee "$build/demo-traffic.out" | awk -F '\t' '
$1 == "floor" && $2 == "dependent" { floor = $5 }
$1 ~ /^(zipf|trains)-s1.00(-b16)?$/ && $4 == 1 {
	v[$1, $2] = $5
	if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
}
END {
	z = "zipf-s1.00"; t = "trains-s1.00"
	peer = v[z, "lfht"]
	if ((z, "ck_ht") in v && v[z, "ck_ht"] + 0 < peer + 0)
		peer = v[z, "ck_ht"]
	printf "%-10s %10s %10s %10s %10s %10s\n", "ns/lookup", "zipf",
	       "batch16", "trains", "batch16", "zipf/peer"
	for (i = 1; i <= n; i++) {
		b = order[i]
		if (b ~ /^(lfht|lfht-jhash|ck_ht|plain)$/)
			continue
		printf "%-10s %10.1f %10.1f %10.1f %10.1f %10.2f\n", b,
		       v[z, b], v[z "-b16", b], v[t, b], v[t "-b16", b],
		       v[z, b] / peer
	}
	np = split("lfht lfht-jhash ck_ht plain", peers, " ")
	line = ""
	for (i = 1; i <= np; i++)
		if ((z, peers[i]) in v)
			line = line sprintf("%s%s %s", line == "" ? "" : ", ",
					    peers[i], v[z, peers[i]])
	printf "peers, zipf one at a time: %s ns; DRAM floor %s ns per " \
	       "dependent load\n", line, floor
}'

step "conntab against each peer"
# The last lines of both runs, joined: one line per peer.
awk -f "$src/scripts/demo-summary.awk" "$build/demo.out" "$build/demo-traffic.out"
