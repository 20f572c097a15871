#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# From a fresh Debian 12 checkout to the main demo in one command (as root,
# or with sudo): install the build packages, build out of tree in build/,
# then run `make demo` (the 2007 netdev experiment: 1M connections, every
# backend against its peers) when this tree has it, else examples/minimal.
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

if grep -qE '^([^#=]*[[:space:]])?demo[[:space:]]*:([^=]|$)' Makefile; then
	step "make demo"
	make demo
else
	step "examples/minimal (this tree has no 'make demo' yet)"
	./examples/minimal
fi
