#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# check-facts.sh [SRCDIR]: what README.md and doc/*.md say of the build is
# what the build is. Run by `make check` from the top of the build tree
# (the programs it runs are the build's); SRCDIR is the source tree, read
# only (make distcheck's).
#
#  - The soname: every libconntab.so.N, and the runtime package's name
#    libconntabN, is libtool's current - age (CONNTAB_LT_VERSION in
#    configure.ac), which is also the built library's SONAME. The header
#    and the manual pages too.
#  - The symbol versions: every CONNTAB_X.Y named is a node of
#    lib/libconntab.map, and README.md names the oldest and the newest.
#  - The release: every tarball conntab-X.Y.Z and package version
#    _X.Y.Z-N_ is the package's version (PACKAGE_VERSION).
#    A region between <!-- facts: history --> and <!-- /facts --> (the
#    release history of doc/releasing.md) is left out of these three.
#  - The commands quoted in code blocks: each `./examples/PROG ...` is a
#    program of this build, every --option it gives is one its --help
#    lists, and the servers (udp-flowd, udp-lb, tcp-conntrack) start
#    with those very options (on a free port) and stop cleanly on SIGINT;
#    a capture run of dpdk-conntrack asks for no more than the 2 CPUs of
#    the machine the README describes, and runs when the EAL can start;
#    a `$ ./examples/...` line prints exactly the lines under it,
#    examples/minimal the lines the README shows, and the servers'
#    listening, stats and totals lines it shows have the words of those
#    the servers printed. Every
#    `conntab-bench ...` gives options its --help lists; every
#    `make TARGET` is a rule of the build.
#  - The sample outputs: the demo's last lines (README's Quick start) have
#    the format scripts/demo-summary.awk prints from conntab-bench's
#    summaries, which this script makes at a small size; the backend
#    table of "Choosing a backend" has the rows and columns conntab-bench
#    prints by default.
#  - README.md says nothing twice: no sentence (or part between ; and :)
#    of 40 characters or more appears in two places.
# Prints what is wrong; exit status 1 then, 0 when all holds.
set -u

src=${1:-${srcdir:-.}}
status=0
fail() {
	echo "check-facts: $*" >&2
	status=1
}
note() {
	echo "check-facts: $*"
}

tmp=$(mktemp -d)
srv=''
# Is the server $srv still this script's child? bash reaps a background
# job as soon as it exits, and its pid is then free for any process (on
# a busy machine, within seconds: pid_max is often 32768): a signal
# sent by pid alone could stop another test. Its parent must be us.
ours() {
	local st
	st=$(cat "/proc/$srv/stat" 2>/dev/null) || return 1
	st=${st##*) }	# past the command name, which may hold spaces
	[ "$(echo "$st" | cut -d' ' -f2)" = "$$" ]
}
# Where a server that does not stop waits: its signal masks (is the
# SIGINT pending, blocked, ignored?) and each thread's state, kernel wait
# channel and system call, so that a hang seen once says where it hung.
stuck() {
	local t st
	grep -E '^(SigQ|SigPnd|ShdPnd|SigBlk|SigIgn)' "/proc/$srv/status"
	for t in "/proc/$srv"/task/*; do
		st=$(cat "$t/stat") || continue
		st=${st##*) }	# past the thread's name, as in ours()
		echo "${t##*/} $(cat "$t/comm") ${st%% *}" \
		     "wchan=$(cat "$t/wchan") syscall=$(cut -d' ' -f1 \
		     "$t/syscall" 2>/dev/null)"
	done
}
cleanup() {
	[ -n "$srv" ] && ours && kill -KILL "$srv" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

readme=$src/README.md
docs=("$readme" "$src"/doc/*.md)
for f in "${docs[@]}"; do
	[ -f "$f" ] || { echo "check-facts: $f: no such file" >&2; exit 1; }
done

# --- what the build is ------------------------------------------------

lt=$(sed -n 's/^AC_SUBST(\[CONNTAB_LT_VERSION\], \[\([0-9]*:[0-9]*:[0-9]*\)\])$/\1/p' \
	"$src/configure.ac")
[ -n "$lt" ] || { echo "check-facts: no CONNTAB_LT_VERSION in configure.ac" >&2; exit 1; }
IFS=: read -r lt_cur lt_rev lt_age <<<"$lt"
so=$((lt_cur - lt_age))
note "soname libconntab.so.$so (-version-info $lt_cur:$lt_rev:$lt_age)"
if [ -f lib/.libs/libconntab.so ] && command -v readelf >/dev/null; then
	built=$(readelf -d lib/.libs/libconntab.so |
		sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	[ "$built" = "libconntab.so.$so" ] ||
		fail "lib/.libs/libconntab.so: SONAME $built, not libconntab.so.$so"
fi

version=''
[ -f config.h ] &&
	version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' config.h)
[ -n "$version" ] ||
	version=$(sed -n 's/^AC_INIT(\[conntab\], \[\([^]]*\)\].*/\1/p' \
		"$src/configure.ac")
[ -n "$version" ] || { echo "check-facts: no package version" >&2; exit 1; }
note "version $version"

nodes=$(sed -n 's/^\(CONNTAB_[0-9][0-9.]*\) {$/\1/p' "$src/lib/libconntab.map")
[ -n "$nodes" ] || { echo "check-facts: no node in lib/libconntab.map" >&2; exit 1; }
newest=$(printf '%s\n' "$nodes" | tail -n 1)
oldest=$(printf '%s\n' "$nodes" | head -n 1)
note "symbol versions $(echo $nodes)"

# --- names and versions in the text -----------------------------------

# FILE:LINE: TEXT of every line outside the history regions.
texts() {
	awk '/<!-- facts: history/ { h = 1 }
	     /<!-- \/facts -->/ { h = 0; next }
	     !h { print FILENAME ":" FNR ": " $0 }' "$@"
}
texts "${docs[@]}" "$src/include/conntab/conntab.h" \
	"$src"/man/man[137]/* >"$tmp/texts"
[ -f "$src/debian/control" ] && texts "$src/debian/control" >>"$tmp/texts"

# each PATTERN WANT WHAT: every match of PATTERN (ERE) is WANT.
each() {
	local where hit
	grep -oE "^[^:]+:[0-9]+:|$1" "$tmp/texts" | while read -r hit; do
		case $hit in
		*:[0-9]*:) where=${hit#"$src/"} ;;
		"$2") ;;
		*) echo "check-facts: $where $hit: $3 is $2" >&2; echo x ;;
		esac
	done | grep -q x && status=1
}
each 'libconntab\.so\.[0-9]+' "libconntab.so.$so" "the soname"
each 'libconntab[0-9]+' "libconntab$so" "the runtime package"
each 'conntab-[0-9]+\.[0-9]+\.[0-9]+' "conntab-$version" "the release"
each '_[0-9]+\.[0-9]+\.[0-9]+-' "_$version-" "the package version"
grep -oE "^[^:]+:[0-9]+:|CONNTAB_[0-9]+\.[0-9]+" "$tmp/texts" |
	while read -r hit; do
		case $hit in
		*:[0-9]*:) where=${hit#"$src/"} ;;
		*) printf '%s\n' "$nodes" | grep -qxF "$hit" ||
			echo "check-facts: $where $hit: not a node of lib/libconntab.map" ;;
		esac
	done >"$tmp/nodes"
[ -s "$tmp/nodes" ] && { cat "$tmp/nodes" >&2; status=1; }
grep -qF "\`$newest\`" "$readme" ||
	fail "README.md: does not name $newest, the newest symbol version"
grep -qF "\`$oldest\`" "$readme" ||
	fail "README.md: does not name $oldest, the oldest symbol version"

# --- README.md says nothing twice -------------------------------------

awk '/^```/ { code = !code; next }
     code || /^[|#<]/ { next }
     /^ *$/ { flush(); next }
     { sub(/^ *([-*]|[0-9]+\.) +/, " "); p = p " " $0 }
     function flush(   n, i, s) {
	n = split(p, s, /[.;:] /)
	for (i = 1; i <= n; i++) {
		gsub(/  +/, " ", s[i]); sub(/^ /, "", s[i])
		sub(/[.;:]+ *$/, "", s[i])
		if (length(s[i]) >= 40 && seen[s[i]]++)
			print "check-facts: README.md: said twice: " s[i]
	}
	p = ""
     }
     END { flush() }' "$readme" >"$tmp/twice"
[ -s "$tmp/twice" ] && { cat "$tmp/twice" >&2; status=1; }

# --- commands ---------------------------------------------------------

# The lines of code blocks, continuations joined: FILE<TAB>LINE.
blocks() {
	awk '/^ *```/ { code = !code; next }
	     code {
		line = $0
		if (cont != "") { line = cont " " line; sub(/^ */, "", $0) }
		if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
		cont = ""
		print FILENAME "\t" line
	     }' "$@"
}
blocks "${docs[@]}" >"$tmp/code"

# help PROG: its --help (dpdk-conntrack's after the EAL's --).
help() {
	case $1 in
	*dpdk-conntrack) "$1" -- --help 2>&1 ;;
	*) "$1" --help 2>&1 ;;
	esac
}

# opts_ok FILE PROG ARGS...: every --option is in PROG's --help.
opts_ok() {
	local file=$1 prog=$2 a h=''
	shift 2
	# dpdk-conntrack: the EAL's options come before --, ours after.
	case $prog in
	*dpdk-conntrack) ;;
	*) h=$(help "$prog") ;;
	esac
	for a in "$@"; do
		case $a in
		--) h=$(help "$prog") ;;
		--help) ;;
		--?*)
			[ -n "$h" ] || continue
			a=${a%%=*}
			printf '%s\n' "$h" | grep -qE -- "(^|[ ,])$a([ =,]|$)" ||
				fail "${file#"$src/"}: $prog: $a is not an option of its --help"
			;;
		esac
	done
}

# Largest CPU number an EAL lcore list (-l 0-1, -l 0,2) names.
max_lcore() {
	tr ',-' '\n\n' <<<"$1" | sort -n | tail -n 1
}

: >"$tmp/printed"
ran=0
while IFS=$'\t' read -r file line; do
	line=${line%%#*}
	read -r -a w <<<"$line"
	[ ${#w[@]} -gt 0 ] || continue
	prompt=0
	if [ "${w[0]}" = '$' ]; then
		prompt=1
		w=("${w[@]:1}")
	fi
	case ${w[0]} in
	./examples/* | examples/*) ;;
	conntab-bench | bench/conntab-bench | */conntab-bench)
		opts_ok "$file" bench/conntab-bench "${w[@]:1}"
		continue ;;
	make)
		t=all
		for a in "${w[@]:1}"; do
			case $a in
			-*) ;;
			*=* | '&&' | ';' | '|') break ;;
			*) t=$a; break ;;
			esac
		done
		case " all check install installcheck dist distcheck clean " in
		*" $t "*) ;;
		*) cat "$src/Makefile.am" "$src"/*/local.mk |
			grep -q "^$t:" ||
			fail "${file#"$src/"}: 'make $t': no such rule" ;;
		esac
		continue ;;
	*) continue ;;
	esac
	prog=examples/${w[0]##*/}
	name=${prog#examples/}
	# A capture run asks for no more CPUs than the README's machine has,
	# built here or not.
	if [ "$name" = dpdk-conntrack ] && [[ " ${w[*]} " == *rx_pcap=* ]]; then
		for i in "${!w[@]}"; do
			[ "${w[$i]}" = -l ] || continue
			[ "$(max_lcore "${w[$((i + 1))]}")" -le 1 ] ||
				fail "${file#"$src/"}: $name -l ${w[$((i + 1))]}: more lcores than the 2 CPUs the README's machine has"
		done
	fi
	if [ ! -x "$prog" ]; then
		case $name in
		dpdk-conntrack) note "$name not built: its commands not run"
			continue ;;
		esac
		fail "${file#"$src/"}: ${w[0]}: no such program in the build"
		continue
	fi
	opts_ok "$file" "$prog" "${w[@]:1}"
	[ "$prompt" = 1 ] && continue	# compared below, with its output
	args=()
	i=1
	while [ $i -lt ${#w[@]} ]; do
		a=${w[$i]}
		case $a in
		--port) args+=(--port 0); i=$((i + 2)); continue ;;
		--control) args+=(--control 127.0.0.1:0); i=$((i + 2)); continue ;;
		esac
		args+=("$a")
		i=$((i + 1))
	done
	case $name in
	udp-flowd | udp-lb | tcp-conntrack)
		"$prog" "${args[@]}" >"$tmp/srv.out" 2>&1 &
		srv=$!
		# Up once it says so (slow under the sanitizers and a loaded
		# machine: up to 5 minutes), then stopped with SIGINT. Never
		# before it says so: a script's background job starts with
		# SIGINT ignored, so a SIGINT that comes before the server
		# blocks it for its signalfd is lost, and the server runs on.
		up=0
		for _ in $(seq 1500); do
			grep -q ': listening on ' "$tmp/srv.out" && { up=1; break; }
			ours || break
			sleep 0.2
		done
		if [ $up = 0 ] && ours; then
			kill -KILL "$srv"
			wait "$srv"
			rc="never said it listens"
		elif ours && kill -INT "$srv" 2>/dev/null; then
			# and a server that ignores it fails, not hangs
			for _ in $(seq 600); do
				ours || break
				sleep 0.2
			done
			if ours; then
				echo "check-facts: $name still runs" \
				     "120 s after SIGINT:" >&2
				stuck 2>/dev/null | sed 's/^/  /' >&2
				kill -KILL "$srv" 2>/dev/null
			fi
			wait "$srv"
			rc=$?
		else
			wait "$srv"
			rc="exited early ($?)"
		fi
		srv=''
		[ "$rc" = 0 ] || {
			fail "${file#"$src/"}: '$line' (port 0): $rc:"
			sed 's/^/  /' "$tmp/srv.out" >&2
		}
		note "ran (port 0): ${file#"$src/"}: $line"
		cat "$tmp/srv.out" >>"$tmp/printed"
		ran=$((ran + 1)) ;;
	dpdk-conntrack)
		case " ${args[*]} " in
		*rx_pcap=*) ;;
		*) continue ;;	# a real port: nothing to run here
		esac
		bash "$src/bench/pcap-sample.sh" >"$tmp/sample.pcap" || continue
		args=("${args[@]/rx_pcap=*.pcap/rx_pcap=$tmp/sample.pcap}")
		if timeout 60 "$prog" --file-prefix "facts$$" "${args[@]}" \
			>"$tmp/dpdk.out" 2>&1; then
			note "ran (a sample capture): ${file#"$src/"}: $line"
			ran=$((ran + 1))
		elif grep -q 'lcore .* unavailable\|invalid core list' "$tmp/dpdk.out"; then
			fail "${file#"$src/"}: '$line': its lcores:"
			grep -E '^(EAL|dpdk-conntrack):' "$tmp/dpdk.out" |
				sed 's/^/  /' >&2
		else
			note "$name: the EAL cannot start here: not run"
		fi
		rmdir "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/facts$$" \
			"/var/run/dpdk/facts$$" 2>/dev/null ;;
	esac
done <"$tmp/code"

# `$ ./examples/PROG ARGS` and the lines under it, up to the block's end.
awk '/^```/ { if (code && cmd != "") print "END"; code = !code; cmd = ""; next }
     code && /^\$ \.\/examples\// { cmd = substr($0, 3); print "CMD " cmd; next }
     code && cmd != "" { print "OUT " $0 }' "$readme" >"$tmp/prompts"
want='' cmd=''
while IFS= read -r l; do
	case $l in
	CMD*) cmd=${l#CMD } want='' ;;
	OUT*) want=$want${l#OUT }$'\n' ;;
	END)
		read -r -a w <<<"$cmd"
		got=$("examples/${w[0]##*/}" "${w[@]:1}" 2>&1)$'\n'
		[ "$got" = "$want" ] ||
			fail "README.md: '\$ $cmd' prints '${got%$'\n'}', not '${want%$'\n'}'"
		note "ran: README.md: \$ $cmd"
		ran=$((ran + 1)) ;;
	esac
done <"$tmp/prompts"

# The servers' lines the README shows (their listening, stats and totals
# lines: "udp-flowd: stats: ...", udp-lb's "flows N pairs N ..."): the
# words of each as the server printed them above, the figures aside.
figs() {
	sed -E 's/[0-9]+(\.[0-9]+)*/N/g'
}
awk '/^```/ { code = !code; sh = /^```sh/; next }
     code && !sh && /^(udp-flowd|udp-lb|tcp-conntrack): [a-z]+[:]? / { print }
     code && !sh && /^flows [0-9]+ pairs [0-9]+ / { print }' "$readme" |
	sort -u >"$tmp/shown"
cmp=0
while IFS= read -r l; do
	read -r w1 w2 _ <<<"$l"
	got=$(grep -F -- "$w1 $w2 " "$tmp/printed" | head -n 1)
	case $w1 in flows) got=$(grep '^flows [0-9]* pairs ' "$tmp/printed" | head -n 1) ;; esac
	[ -n "$got" ] || continue	# not printed by a bare start and stop
	[ "$(figs <<<"$l")" = "$(figs <<<"$got")" ] ||
		fail "README.md: shows '$l'; the program prints '$got'"
	cmp=$((cmp + 1))
done <"$tmp/shown"
note "$cmp server output lines compared"

# examples/minimal's lines, as the README shows them.
examples/minimal >"$tmp/minimal" 2>&1 || fail "examples/minimal failed"
while IFS= read -r l; do
	grep -qxF -- "$l" "$readme" ||
		fail "README.md: examples/minimal prints '$l', which it does not show"
done <"$tmp/minimal"
note "$ran quoted commands run"

# --- sample outputs ---------------------------------------------------

# The demo's last lines: the summary of two small runs, as scripts/demo.sh
# makes it from its two, beside the README's sample.
bench=bench/conntab-bench
$bench --n 4K --reps 1 --table --workload floor,lookup,lookup-dep,batch,insert,remove,memory \
	>"$tmp/demo.out" 2>/dev/null || fail "conntab-bench (demo's) failed"
$bench --n 4K --reps 1 --tsv --workload floor,zipf,trains --zipf 1.0 \
	--threads 1 >"$tmp/traffic.out" 2>/dev/null ||
	fail "conntab-bench (traffic) failed"
awk -f "$src/scripts/demo-summary.awk" "$tmp/demo.out" "$tmp/traffic.out" \
	>"$tmp/summary"
# The README's: from the line after the demo's last step to the block end.
awk '/^  ==== conntab against each peer$/ { on = 1; next }
     on && /^  ```/ { exit } on { sub(/^  /, ""); print }' "$readme" \
	>"$tmp/summary.readme"
# shape LINE: its words without the figures; memory may be missing at a
# small size (the heap's growth reads 0).
shape() {
	sed -E 's/[0-9]+(\.[0-9]+)?/N/g; s/, memory Nx//; s/ +/ /g'
}
[ -s "$tmp/summary.readme" ] ||
	fail "README.md: no sample of the demo's last lines"
if [ "$(head -n 1 "$tmp/summary" | shape)" != \
	"$(head -n 1 "$tmp/summary.readme" | shape)" ]; then
	fail "README.md: the demo's summary head is not what it prints:"
	head -n 1 "$tmp/summary" | sed 's/^/  prints: /' >&2
fi
cmp=0
while IFS= read -r l; do
	read -r a vs b _ <<<"$l"
	peer="$a $vs ${b%:}"
	got=$(grep -F -- "$peer" "$tmp/summary" | head -n 1)
	[ -n "$got" ] || continue	# a peer this build has not
	if [ "$(shape <<<"$l")" != "$(shape <<<"$got")" ]; then
		fail "README.md: the demo prints '$got', not the format of '$l'"
	fi
	cmp=$((cmp + 1))
done < <(tail -n +2 "$tmp/summary.readme")
[ "$cmp" -gt 0 ] || fail "README.md: no demo summary line to compare"

# "Choosing a backend": the command it quotes, run small, prints the
# table it shows: the same head lines, columns and per-backend lines, a
# row for each implementation both have, as many cells in each.
cmdline=$(awk '/^## Choosing a backend$/ { on = 1 }
	on && /^## / && !/^## Choosing/ { exit }
	on && /^\$ bench\/conntab-bench / { print substr($0, 3); exit }' "$readme")
if [ -z "$cmdline" ]; then
	fail "README.md: no '\$ bench/conntab-bench' command under '## Choosing a backend'"
else
	read -r -a w <<<"$cmdline"
	opts_ok "$readme" "$bench" "${w[@]:1}"
	args=()
	i=1
	while [ $i -lt ${#w[@]} ]; do
		case ${w[$i]} in
		--n | --reps) i=$((i + 2)); continue ;;
		esac
		args+=("${w[$i]}")
		i=$((i + 1))
	done
	$bench "${args[@]}" --n 4K --reps 1 --quick >"$tmp/choose" 2>/dev/null ||
		fail "README.md: '$cmdline' (at --n 4K): exit status $?"
	awk '/^## Choosing a backend$/ { on = 1 }
	     on && /^# backends and peers at / { out = 1 }
	     out && /^```/ { exit } out' "$readme" >"$tmp/choose.readme"
	sed -n '/^# backends and peers at /,/^$/{/^$/d;p;}' "$tmp/choose" \
		>"$tmp/choose.got"
	[ -s "$tmp/choose.readme" ] ||
		fail "README.md: no '# backends and peers' table under '## Choosing a backend'"
	# Comment lines: the same words; the rows: name and cell count.
	row_shape() {
		awk '/^#/ { gsub(/[0-9]+(\.[0-9]+)?/, "N"); gsub(/ +/, " ")
			    gsub(/\([a-z0-9_-]+\)/, "(PEER)"); print; next }
		     { print $1, NF }'
	}
	row_shape <"$tmp/choose.readme" | sort >"$tmp/choose.rs"
	row_shape <"$tmp/choose.got" | sort >"$tmp/choose.gs"
	# Rows of peers one build has and the other not aside.
	# differ A B WHO: lines of A not in B, but rows B has no name of.
	differ() {
		local l
		while IFS= read -r l; do
			grep -qxF -- "$l" "$2" && continue
			case $l in
			'#'*) ;;
			*) grep -q "^${l%% *} " "$2" || continue ;;
			esac
			echo "$3: $l"
		done <"$1"
	}
	{
		differ "$tmp/choose.rs" "$tmp/choose.gs" "README.md shows"
		differ "$tmp/choose.gs" "$tmp/choose.rs" "conntab-bench prints"
	} >"$tmp/choose.diff"
	if [ -s "$tmp/choose.diff" ]; then
		fail "README.md: the table of '## Choosing a backend' is not what '$cmdline' prints:"
		sed 's/^/  /' "$tmp/choose.diff" >&2
	fi
fi

exit $status
