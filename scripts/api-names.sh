# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The names of libconntab's API, read from the built library and from the
# public header; sourced by check-symbols.sh and check-man.sh so that both
# checks agree on what "the API" is. Each function prints one name a line,
# sorted.

# Defined dynamic symbols of shared object $1, with @VERSION cut off.
# NM may name the nm to use (libtool's "nm -B" works too).
ct_exported() {
	${NM:-nm} -D --defined-only "$1" | awk 'NF >= 3 { print $3 }' |
		sed 's/@.*//' | sort -u
}

# The header $1 without comments and preprocessor lines, cut into
# declarations at ';' and '{' (declarations span lines).
ct_header_decls() {
	perl -0777 -pe 's{/\*.*?\*/}{}gs' "$1" | grep -v '^[[:space:]]*#' |
		tr '\n' ' ' | sed 's/[;{]/\n/g'
}

# Functions the header $1 declares CONNTAB_API: what the library exports.
ct_declared() {
	ct_header_decls "$1" | grep -oE 'CONNTAB_API[^(]*\(' |
		grep -oE '[A-Za-z_][A-Za-z0-9_]* *\($' | tr -d ' (' | sort -u
}

# What the header $1 gives without exporting it: its static inline
# conntab_* functions and its function-like conntab_* macros other than
# those standing for an exported function of the same name.
ct_header_only() {
	{
		ct_header_decls "$1" | grep -oE 'static inline[^(]*\(' |
			grep -oE 'conntab_[A-Za-z0-9_]* *\($' | tr -d ' ('
		grep -oE '^[[:space:]]*#[[:space:]]*define[[:space:]]+conntab_[A-Za-z0-9_]*\(' \
			"$1" | grep -oE 'conntab_[A-Za-z0-9_]*'
	} | sort -u | comm -23 - <(ct_declared "$1")
}
