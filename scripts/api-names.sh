# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The names of libconntab's API, read from the built library and from the
# public header; sourced by check-symbols.sh and check-man.sh so that both
# checks agree on what "the API" is. Each function prints one name a line,
# sorted.

# Defined dynamic symbols of shared object $1 as NAME@@VERSION (or NAME
# alone when unversioned), without the version definitions themselves
# (absolute symbols named after the version, unversioned in nm's output).
# NM may name the nm to use (libtool's "nm -B" works too).
ct_exported_versioned() {
	${NM:-nm} -D --defined-only "$1" |
		awk 'NF >= 3 && !($2 == "A" && $3 !~ /@/) { print $3 }' | sort -u
}

# The same names with @VERSION cut off.
ct_exported() {
	ct_exported_versioned "$1" | sed 's/@.*//' | sort -u
}

# "NAME NODE" for every global name of version script $1, in file order.
ct_map_names() {
	perl -0777 -pe 's{/\*.*?\*/}{}gs' "$1" | awk '
		/^[A-Za-z0-9_.]+[ \t]*\{/ { node = $1; global = 0; next }
		/^[ \t]*global:/ { global = 1; next }
		/^[ \t]*local:/ { global = 0; next }
		/^\}/ { node = ""; next }
		node != "" && global && /;/ { gsub(/[ \t;]/, ""); print $0, node }'
}

# "NODE PARENT" for every node of version script $1, in file order (the
# parent empty for the first).
ct_map_nodes() {
	perl -0777 -pe 's{/\*.*?\*/}{}gs' "$1" | awk '
		/^[A-Za-z0-9_.]+[ \t]*\{/ { node = $1 }
		/^\}/ { p = $0; gsub(/[} \t;]/, "", p); print node, p }'
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
