#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# conntab_create() and the order of the includes (include/conntab/conntab.h),
# checked at compile time with the compiler and flags of this build
# (CT_CC, CT_CFLAGS; the project's warnings as errors):
#  - compiles: the flavor's header before conntab.h or after it (C, and
#    C++ when a C++ compiler is there), <urcu-qsbr.h> after it;
#    conntab_create_flavor() and (conntab_create)() with no urcu header;
#  - does not compile, with a message that names the fix: a call with no
#    urcu header before it (none at all, one only after the call, or
#    <urcu/urcu-memb.h>, which maps no rcu_flavor).
# tests/test-include-order (the program) checks that the reversed order
# also runs.
set -u

cc=${CT_CC:-cc}
cflags=${CT_CFLAGS:-}
cxx=${CT_CXX:-c++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# The message of the header's declaration, with a compiler that has the
# attribute (GCC 12, clang); the others say that rcu_flavor is undeclared.
printf '#if !__has_attribute(unavailable)\n#error\n#endif\n' >"$tmp/attr.c"
if $cc -E "$tmp/attr.c" >/dev/null 2>&1; then
	want='conntab_create_flavor(cfg, &urcu_memb_flavor)'
else
	want=rcu_flavor
fi

# Write a translation unit: the lines "$@" (the includes), then a call.
unit() {
	file=$tmp/$1
	shift
	{
		printf '%s\n' "$@"
		cat <<'EOC'
struct conntab *make(void);
struct conntab *make(void)
{
	struct conntab_config cfg = { .backend = CONNTAB_CHAINED };

	return CALL;
}
EOC
	} >"$file"
}

# compiles NAME COMPILER CALL: NAME must compile without a diagnostic.
compiles() {
	if $2 $flags -Werror -DCALL="$3" -fsyntax-only "$tmp/$1" \
		>"$tmp/out" 2>&1; then
		echo "ok: $1 ($3) compiles"
	else
		echo "FAIL: $1 ($3) does not compile:"
		sed 's/^/  /' "$tmp/out"
		status=1
	fi
}

# refused NAME COMPILER CALL: NAME must fail to compile, saying $want.
refused() {
	if $2 $flags -DCALL="$3" -fsyntax-only "$tmp/$1" \
		>"$tmp/out" 2>&1; then
		echo "FAIL: $1 ($3) compiles"
		status=1
	elif ! grep -qF "$want" "$tmp/out"; then
		echo "FAIL: $1 ($3) fails without naming the fix ($want):"
		sed 's/^/  /' "$tmp/out"
		status=1
	else
		echo "ok: $1 ($3) refused: $(grep -m 1 -F "$want" "$tmp/out" |
			sed 's/^[^ ]*: //')"
	fi
}

create='conntab_create(&cfg)'
flags=$cflags
unit urcu-first.c '#include <urcu.h>' '#include <conntab/conntab.h>'
compiles urcu-first.c "$cc" "$create"
unit urcu-after.c '#include <conntab/conntab.h>' '#include <urcu.h>'
compiles urcu-after.c "$cc" "$create"
unit qsbr-after.c '#include <conntab/conntab.h>' '#include <urcu-qsbr.h>'
compiles qsbr-after.c "$cc" "$create"

unit no-urcu.c '#include <conntab/conntab.h>'
refused no-urcu.c "$cc" "$create"
# Explicit flavors need no header (cfg.flavor set at run time).
compiles no-urcu.c "$cc" 'conntab_create_flavor(&cfg, NULL)'
compiles no-urcu.c "$cc" '(conntab_create)(&cfg)'

# The flavor must be known where the call is, not at the end of the file.
unit urcu-too-late.c '#include <conntab/conntab.h>' \
	'struct conntab *early(void);' \
	'struct conntab *early(void) { return conntab_create(NULL); }' \
	'#include <urcu.h>'
refused urcu-too-late.c "$cc" "$create"

# liburcu's flavor-specific header undefines its rcu_flavor mapping.
unit memb-only.c '#include <urcu/urcu-memb.h>' '#include <conntab/conntab.h>'
refused memb-only.c "$cc" "$create"
compiles memb-only.c "$cc" 'conntab_create_flavor(&cfg, &urcu_memb_flavor)'

if command -v "$cxx" >/dev/null; then
	# No designated initialisers before C++20: a zeroed config.
	for f in urcu-after no-urcu; do
		sed 's/{ \.backend = CONNTAB_CHAINED }/{}/' "$tmp/$f.c" \
			>"$tmp/$f.cc"
	done
	# Not the project's C-only warnings, nor -Wshadow: in C++, the
	# functions conntab_stats() and conntab_resize_stats() hide the
	# implicit constructors of the structs of the same names.
	flags=$(printf '%s\n' $cflags | grep -v -x -e -Wstrict-prototypes \
		-e -Wmissing-prototypes -e -Wshadow | tr '\n' ' ')
	compiles urcu-after.cc "$cxx" "$create"
	refused no-urcu.cc "$cxx" "$create"
else
	echo "skip: no C++ compiler ($cxx)"
fi
exit $status
