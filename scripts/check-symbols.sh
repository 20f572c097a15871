#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Check the ABI surface of libconntab.so: it must export exactly the
# functions the public header marks CONNTAB_API, all named conntab_*.
# Anything else (a ct_* helper missing from -fvisibility=hidden, a stray
# global) would become ABI that applications can bind to.
#
# usage: check-symbols.sh LIBCONNTAB.so conntab.h
# NM may name the nm to use (libtool's "nm -B" works too).
set -euo pipefail

lib=${1:?usage: check-symbols.sh LIB.so HEADER}
header=${2:?usage: check-symbols.sh LIB.so HEADER}

if [ ! -e "$lib" ]; then
	echo "check-symbols: $lib not built (static-only build?), skipped"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=scripts/api-names.sh
. "$(dirname "$0")/api-names.sh"
ct_exported "$lib" >"$tmp/exported"
ct_declared "$header" >"$tmp/declared"

status=0
if grep -v '^conntab_' "$tmp/exported" >"$tmp/foreign"; then
	echo "check-symbols: exported symbols outside the conntab_ prefix:"
	sed 's/^/  /' "$tmp/foreign"
	status=1
fi
if ! diff -u "$tmp/declared" "$tmp/exported" >"$tmp/diff"; then
	echo "check-symbols: exports differ from the CONNTAB_API declarations"
	echo "  (- declared but not exported, + exported but not declared):"
	sed 's/^/  /' "$tmp/diff"
	status=1
fi
if [ "$status" = 0 ]; then
	echo "check-symbols: $(wc -l <"$tmp/exported") symbols, all conntab_*," \
	     "matching conntab.h"
fi
exit "$status"
