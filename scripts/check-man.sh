#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Check the manual pages in MANDIR (man1/, man3/, man7/, laid out as
# installed):
#
#  - every function the library exports (nm -D) and every inline function
#    or macro of the header has a page of its name in man3/, and every
#    man3 page is the name of one of them, so `man NAME` works for the
#    whole API and for nothing else;
#  - a link page (.so) points to a page whose NAME line lists it, and a
#    page's NAME line names only pages that exist; every cross-reference
#    conntab...(N) names an existing page;
#  - groff -ww and man --warnings (when man-db is installed) are silent,
#    and lexgrog parses the NAME line (what apropos and whatis show);
#  - examples escape - ' ` ^ ~ (as \- \(aq ...), which some groff versions
#    would typeset as characters that do not compile when pasted;
#  - the EXAMPLE's code, as `man` renders it, is plain ASCII, fits in
#    80 columns, compiles without warnings against the built library,
#    runs, and prints exactly the page's "Output" block when it has one.
#
# usage: check-man.sh MANDIR LIBCONNTAB.so conntab.h
# MAN_VERSION: the package version every page's .TH must name.
# Examples are built with $CC $MAN_CFLAGS PROG.c $MAN_LIBS and run with
# MAN_LIBDIR prepended to LD_LIBRARY_PATH; NM as for check-symbols.sh.
set -euo pipefail

mandir=${1:?usage: check-man.sh MANDIR LIB.so HEADER}
lib=${2:?usage: check-man.sh MANDIR LIB.so HEADER}
header=${3:?usage: check-man.sh MANDIR LIB.so HEADER}
# Absolute: the checks run inside MANDIR, where .so requests resolve.
lib=$(realpath -m "$lib")
header=$(realpath "$header")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=scripts/api-names.sh
. "$(dirname "$0")/api-names.sh"

status=0
fail() {
	echo "check-man: $*"
	status=1
}

cd "$mandir"
ls man1/*.1 man3/*.3 man7/*.7 >"$tmp/pages" 2>/dev/null || true

# What `make install` installs (MAN_INSTALLED, the Makefile's lists) is
# what is here: a page added to man/ but not to man/local.mk would pass
# every check below and still be missing after installation.
if [ -n "${MAN_INSTALLED:-}" ]; then
	# shellcheck disable=SC2086 # a list of words
	printf '%s\n' $MAN_INSTALLED | sed 's,^.*/\(man[1-8]/\),\1,' |
		sort >"$tmp/installed"
	while read -r page; do
		fail "$page is not in man/local.mk"
	done < <(sort "$tmp/pages" | comm -23 - "$tmp/installed")
fi

formatting=yes
if ! command -v groff >/dev/null || ! command -v col >/dev/null; then
	# Debian: groff-base, bsdextrautils (.ci/packages has both).
	[ "${CI:-}" != true ] || fail "groff and col are needed in CI"
	echo "check-man: groff or col missing: formatting and examples unchecked"
	formatting=
fi

# -- Names ------------------------------------------------------------------

if [ -e "$lib" ]; then
	ct_exported "$lib" >"$tmp/exported"
else
	echo "check-man: $lib not built (static-only build?): header only"
	: >"$tmp/exported"
fi
{ ct_declared "$header"; ct_header_only "$header"; cat "$tmp/exported"; } |
	sort -u >"$tmp/api"
sed -n 's,^man3/\(.*\)\.3$,\1,p' "$tmp/pages" | sort >"$tmp/man3"

for name in $(comm -23 "$tmp/api" "$tmp/man3"); do
	fail "$name has no page man3/$name.3"
done
for name in $(comm -13 "$tmp/api" "$tmp/man3"); do
	fail "man3/$name.3 documents no function of the library or header"
done

# The names before " \- " on the NAME line of page $1.
names_of() {
	sed -n '/^\.SH NAME/{n;p;q}' "$1" | sed 's/ \\- .*//; s/,/ /g'
}

while read -r page; do
	first=$(head -n 1 "$page")
	case $first in
	.so\ *)
		target=${first#.so }
		name=$(basename "$page" .3)
		if [ ! -f "$target" ]; then
			fail "$page: .so target $target missing"
		elif ! names_of "$target" | tr ' ' '\n' | grep -qx "$name"; then
			fail "$page: $target does not list $name in NAME"
		fi
		[ "$(wc -l <"$page")" = 1 ] || fail "$page: a link page has one line"
		continue
		;;
	esac
	base=$(basename "$page")
	sect=${base##*.}
	read -r _ th_name th_sect _ <<<"$(grep -m 1 '^\.TH ' "$page")"
	if [ "$th_name" != "${base%.*}" ] || [ "$th_sect" != "$sect" ]; then
		fail "$page: .TH says $th_name($th_sect)"
	fi
	if [ -n "${MAN_VERSION:-}" ] &&
	    ! grep -q "^\.TH .* \"conntab $MAN_VERSION\" " "$page"; then
		fail "$page: .TH does not say \"conntab $MAN_VERSION\" (doc/releasing.md)"
	fi
	for name in $(names_of "$page"); do
		[ -f "man$sect/$name.$sect" ] ||
			fail "$page: NAME lists $name, but man$sect/$name.$sect is missing"
	done
	# Cross-references to this project's pages must resolve.
	while read -r ref rsect; do
		[ -f "man$rsect/$ref.$rsect" ] ||
			fail "$page: refers to $ref($rsect), which has no page"
	done < <(sed 's/\\-/-/g; s/\\%//g' "$page" |
		 grep -oE '^\.BR conntab[A-Za-z0-9_-]* \([1-8]\)' |
		 sed 's/^\.BR //; s/ (\(.\))/ \1/' | sort -u)
done <"$tmp/pages"

if [ -z "$formatting" ]; then
	exit "$status"
fi

# -- Formatting -------------------------------------------------------------

# groff's options for the preprocessors page $1 asks for on its first
# line ('\" t: tbl), as man(1) reads them.
preproc() {
	sed -n "1s/^'\\\\\" \([a-z]*\).*/\1/p" "$1" | sed 's/\(.\)/-\1 /g'
}

while read -r page; do
	# shellcheck disable=SC2046 # one option per word
	if ! groff $(preproc "$page") -ww -man -z "$page" >"$tmp/groff" 2>&1 ||
	    [ -s "$tmp/groff" ]; then
		fail "$page: groff -ww:"
		sed 's/^/  /' "$tmp/groff"
	fi
	# apropos and whatis read the NAME line through lexgrog (man-db).
	if command -v lexgrog >/dev/null && ! lexgrog "$page" >/dev/null; then
		fail "$page: lexgrog cannot parse its NAME line"
	fi
	if command -v man >/dev/null; then
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" \
			>/dev/null 2>"$tmp/man" || true
		if [ -s "$tmp/man" ]; then
			fail "$page: man --warnings:"
			sed 's/^/  /' "$tmp/man"
		fi
	fi
done <"$tmp/pages"

# -- Examples ---------------------------------------------------------------

# Page $1 rendered as a terminal shows it (headings at columns 0 and 3,
# text at 7), without bold or underline.
render() {
	# shellcheck disable=SC2046 # one option per word
	groff $(preproc "$1") -man -Tutf8 -rcR=1 -rLL=80n "$1" 2>/dev/null |
		col -bx
}

# The body of subsection $2 (e.g. "Program source") of rendered page $1,
# at its own indentation, without trailing blank lines.
subsection() {
	awk -v want="   $2" '
		$0 == want { on = 1; next }
		on && /^ ? ? ?[^ ]/ { exit }
		on { lines[++n] = substr($0, 8) }
		END { while (n > 0 && lines[n] == "") n--
		      for (i = 1; i <= n; i++) print lines[i] }' "$1"
}

# Characters that some groff versions typeset in .EX blocks instead of
# printing them as typed: write \- \(aq \(ga \(ha \(ti for - ' ` ^ ~.
while read -r page; do
	awk '/^\.EX/ { ex = 1; next } /^\.EE/ { ex = 0; next }
	     ex && !/^\./ {
		s = $0
		gsub(/\\\(../, "", s); gsub(/\\\[[^]]*\]/, "", s)
		gsub(/\\./, "", s)
		if (s ~ /[-\047`^~]/) print FILENAME ":" FNR ": " $0
	     }' "$page" >"$tmp/raw"
	if [ -s "$tmp/raw" ]; then
		fail "$page: unescaped - ' \` ^ ~ in an example:"
		sed 's/^/  /' "$tmp/raw"
	fi
done <"$tmp/pages"

examples=0
while read -r page; do
	grep -q '^\.SS Program source' "$page" || continue
	ex=$tmp/$(basename "$page" | tr . -)
	render "$page" >"$ex.txt"
	subsection "$ex.txt" "Program source" >"$ex.c"
	subsection "$ex.txt" "Output" >"$ex.expected"
	if LC_ALL=C grep -n '[^ -~]' "$ex.c" >"$tmp/nonascii"; then
		fail "$page: example not plain ASCII as rendered" \
		     "(escape - as \\-, ' as \\(aq):"
		sed 's/^/  /' "$tmp/nonascii"
		continue
	fi
	if awk 'length > 73 { print FNR ": " $0; bad = 1 } END { exit !bad }' \
	    "$ex.c" >"$tmp/long"; then
		fail "$page: example lines wider than 80 columns on screen:"
		sed 's/^/  /' "$tmp/long"
	fi
	need=$(grep -oE '\bconntab_[a-z0-9_]+\(' "$ex.c" | tr -d '(' |
		sort -u | comm -23 - "$tmp/api" | paste -sd ' ')
	if [ -n "$need" ]; then
		fail "$page: example calls what the API does not have: $need"
		continue
	fi
	if [ ! -e "$lib" ]; then
		continue
	fi
	# shellcheck disable=SC2086 # flags are lists of words
	if ! ${CC:-cc} ${MAN_CFLAGS:-} -o "$ex" "$ex.c" ${MAN_LIBS:-} \
	    >"$tmp/cc" 2>&1; then
		fail "$page: example does not compile:"
		sed 's/^/  /' "$tmp/cc"
		continue
	fi
	if ! (cd "$tmp" && LD_LIBRARY_PATH=${MAN_LIBDIR:+$MAN_LIBDIR:}${LD_LIBRARY_PATH:-} \
	      "$ex") >"$ex.out" 2>"$tmp/run"; then
		fail "$page: example failed:"
		sed 's/^/  /' "$tmp/run"
		continue
	fi
	if [ -s "$ex.expected" ] && ! diff -u "$ex.expected" "$ex.out" >"$tmp/diff"; then
		fail "$page: example output differs from the page's (- page, + run):"
		sed 's/^/  /' "$tmp/diff"
		continue
	fi
	examples=$((examples + 1))
done <"$tmp/pages"

if [ "$status" = 0 ]; then
	echo "check-man: $(wc -l <"$tmp/pages") pages, groff clean," \
	     "every API name has one, $examples examples built and run"
fi
exit "$status"
