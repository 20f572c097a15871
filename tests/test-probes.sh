#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The USDT probes of lib/probes.h:
#  - `readelf -n` lists exactly these probes of provider conntab in
#    libconntab.so (the ones README and probes.h document);
#  - under gdb, which can break on a probe as bpftrace and perf attach to
#    it, each fires where it should and with sound arguments, driven by
#    tests/probes-drive: chain_long on overfull chains (length >= 16) and
#    never on tables filled to their sizing hint; exthash_split,
#    exthash_merge and exthash_dir_resize (doubling and halving) while an
#    extensible hash grows and shrinks; evict once per eviction, with
#    the victim and the newcomer; scan_pass once per conntab_scan() pass.
#
# Skips (77) in a build without <sys/sdt.h> (configure --disable-usdt).
# Without gdb, or where it may not trace (ptrace refused), only the
# listing is checked.
set -eu

top=${top_builddir:-.}
lib=$top/lib/.libs/libconntab.so
probes="chain_long evict exthash_dir_resize exthash_merge exthash_split scan_pass"

if ! grep -q '^#define CONNTAB_USDT 1' "$top/config.h"; then
	echo "test-probes: built without USDT probes: skipped"
	exit 77
fi
if [ ! -e "$lib" ]; then
	echo "test-probes: no shared library (static-only build?): skipped"
	exit 77
fi

fail() {
	echo "test-probes: FAIL: $*"
	exit 1
}

listed=$(readelf -n "$lib" | awk '
	$1 == "Provider:" { prov = $2 }
	$1 == "Name:" && prov == "conntab" { print $2 }' | sort -u | xargs)
echo "test-probes: readelf -n lists: $listed"
[ "$listed" = "$probes" ] || fail "expected exactly: $probes"

if ! command -v gdb >/dev/null; then
	# .ci/packages has gdb: CI fires them.
	[ "${CI:-}" != true ] || fail "gdb not found"
	echo "test-probes: gdb not found: probes listed, not fired"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	echo "set breakpoint pending on"
	for p in $probes; do
		# Three columns of arguments; scan_pass has two.
		# shellcheck disable=SC2016 # gdb's variable, not the shell's
		a2='$_probe_arg2'
		[ "$p" != scan_pass ] || a2=0
		cat <<EOF
break -probe-stap conntab:$p
commands
silent
printf "PROBE $p %lu %lu %lu\\n", \$_probe_arg0, \$_probe_arg1, $a2
continue
end
EOF
	done
	echo "run"
} >"$tmp/gdb"

# Run the driver with arguments "$@" under gdb; its probe hits, one
# "name table arg1 arg2" a line, go to $tmp/hits.
drive() {
	# LeakSanitizer cannot run under ptrace (the sanitizer build).
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	"$top/libtool" --mode=execute gdb -batch -nx -x "$tmp/gdb" \
		--args "$top/tests/probes-drive" "$@" >"$tmp/out" 2>&1 || true
	if grep -q 'ptrace: Operation not permitted' "$tmp/out"; then
		echo "test-probes: gdb may not trace here: probes listed, not fired"
		exit 0
	fi
	grep -q 'exited normally' "$tmp/out" ||
		{ cat "$tmp/out"; fail "probes-drive $* did not succeed"; }
	sed -n 's/^PROBE //p' "$tmp/out" >"$tmp/hits"
}

# hits NAME: how often NAME fired in the last drive.
hits() {
	awk -v p="$1" '$1 == p' "$tmp/hits" | wc -l
}

for b in chained split; do
	drive flood "$b"
	n=$(hits chain_long)
	echo "test-probes: flood $b: chain_long fired $n times"
	[ "$n" -gt 0 ] || fail "chain_long silent on 24 keys per chain ($b)"
	awk '$1 == "chain_long" && ($2 == 0 || $4 < 16)' "$tmp/hits" |
		grep . && fail "chain_long with a null table or a length below 16"
done

for b in chained split exthash; do
	drive fill "$b"
	echo "test-probes: fill $b to its hint: chain_long fired $(hits chain_long) times"
	[ "$(hits chain_long)" = 0 ] || fail "chain_long on a table at its hint"
done

drive grow
for p in exthash_split exthash_merge exthash_dir_resize; do
	echo "test-probes: exthash grow and shrink: $p fired $(hits "$p") times"
	[ "$(hits "$p")" -gt 0 ] || fail "$p silent"
done
awk '$1 == "exthash_split" && $3 < 1' "$tmp/hits" | grep . &&
	fail "a split into depth 0"
awk '$1 == "exthash_dir_resize" && $4 != 2 * $3 && 2 * $4 != $3' \
	"$tmp/hits" | grep . && fail "a directory resize that is not x2 or /2"
awk '$1 == "exthash_dir_resize" && $4 == 2 * $3' "$tmp/hits" | grep -q . ||
	fail "the directory never doubled"
awk '$1 == "exthash_dir_resize" && 2 * $4 == $3' "$tmp/hits" | grep -q . ||
	fail "the directory never halved"
for b in chained split exthash; do
	drive evict "$b"
	echo "test-probes: 136 evictions ($b): evict fired $(hits evict) times"
	[ "$(hits evict)" = 136 ] || fail "evict fired $(hits evict) times"
	awk '$1 == "evict" && ($2 == 0 || $3 == 0 || $3 == $4)' "$tmp/hits" |
		grep . && fail "evict without a table or victim, or of itself"
	drive scan "$b"
	echo "test-probes: 3 scan passes ($b): scan_pass fired $(hits scan_pass) times"
	[ "$(hits scan_pass)" = 3 ] || fail "scan_pass fired $(hits scan_pass) times"
done
echo "test-probes: every probe fired as expected"
