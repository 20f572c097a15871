#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# check-readme.sh [SRCDIR]: README.md's "Quick start" says what is so.
#  - It is the first section, before the long ones.
#  - Each command of its sh block exists: `./PATH` an executable file,
#    `bash PATH` a file, both in the source tree (and the release tarball:
#    make distcheck runs this from there).
#  - Each `make TARGET` it names is a rule of the build.
#  - The success lines it quotes are the ones the commands print last:
#    `==== NAME` for the last step of scripts/demo.sh and of .ci/run
#    (their `step "NAME"` lines; .ci/run's carries `[seconds] `), and the
#    head line of the demo's summary is the one conntab-bench prints.
# Run by `make check`; prints what is wrong, exit status 1.
set -u

src=${1:-${srcdir:-.}}
readme=$src/README.md
status=0
fail() {
	echo "check-readme: $*" >&2
	status=1
}

[ -f "$readme" ] || { echo "check-readme: $readme: no such file" >&2; exit 1; }

# The section, from its heading to the next one.
quick=$(awk '/^## / { n++ } n == 1 && /^## Quick start$/ { on = 1 }
	on && /^## / && !/^## Quick start$/ { exit } on' "$readme")
[ -n "$quick" ] || fail "README.md: the first section is not '## Quick start'"

# Its sh block's commands: the words before any comment.
cmds=$(printf '%s\n' "$quick" | awk '/^```sh$/ { on = 1; next }
	on && /^```/ { exit } on { sub(/[ \t]*#.*/, ""); if ($0 != "") print }')
[ -n "$cmds" ] || fail "README.md: the Quick start has no sh block"
printf '%s\n' "$cmds" | { while read -r first second rest; do
	case $first in
	bash | sh)
		[ -f "$src/$second" ] ||
			fail "README.md: '$first $second': $second does not exist" ;;
	./*)
		[ -f "$src/$first" ] && [ -x "$src/$first" ] ||
			fail "README.md: '$first': not an executable file" ;;
	*)
		fail "README.md: '$first $second $rest': a command this script does not know" ;;
	esac
	[ -z "$rest" ] ||
		fail "README.md: '$first $second $rest': more than one argument"
done; exit $status; } || status=1

# Each `make TARGET`: one of automake's or a rule in Makefile.am or a
# local.mk.
for target in $(printf '%s\n' "$quick" |
	sed -n 's/.*`make \([a-z][a-z-]*\)`.*/\1/p'); do
	case " all check install installcheck dist distcheck clean " in
	*" $target "*) continue ;;
	esac
	cat "$src/Makefile.am" "$src"/*/local.mk |
		grep -q "^$target:" ||
		fail "README.md: 'make $target': no such rule"
done

# The last step of each script, as the Quick start quotes it.
last_step() {
	sed -n 's/^step "\([^"$]*\)"$/\1/p' "$1" | tail -n 1
}
demo=$(last_step "$src/scripts/demo.sh")
ci=$(last_step "$src/.ci/run")
[ -n "$demo" ] || fail "scripts/demo.sh: no last step line"
[ -n "$ci" ] || fail ".ci/run: no last step line"
printf '%s\n' "$quick" | grep -qx "  ==== $demo" ||
	fail "README.md: the demo's last step '==== $demo' is not quoted"
printf '%s\n' "$quick" | grep -qx "  ==== \[ *[0-9]*s\] $ci" ||
	fail "README.md: .ci/run's last step '==== [Ns] $ci' is not quoted"

# The demo's summary head, as conntab-bench words it (bench/report.c).
head=$(printf '%s\n' "$quick" | grep -A1 -x "  ==== $demo" | sed -n '2s/^  //p')
case $head in
"conntab against each peer at n="*", one thread: "*) ;;
*) fail "README.md: the line after '==== $demo' is not conntab-bench's summary head" ;;
esac
grep -q 'conntab against each peer at n=%zu, one "' "$src/bench/report.c" ||
	fail "bench/report.c: the summary head changed: update README.md's Quick start"

exit $status
