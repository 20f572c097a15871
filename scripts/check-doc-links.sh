#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# check-doc-links.sh FILE.md...: every relative link of the given
# Markdown files, [text](target), leads to a file or directory that
# exists beside them, and the Markdown files they link are checked the
# same way in turn. Absolute URLs (scheme:...) and links within the page
# (#anchor) are not followed; a target's own #anchor is dropped. Links in
# fenced code blocks and in `code spans` are not links.
#
# `make check` runs it on the source tree's README.md, `make installcheck`
# on the installed one ($(docdir)/README.md): whatever the README links
# must be installed where the link says. Prints each missing target with
# the file that links it; exit status 1 if any.
set -u

if [ $# = 0 ]; then
	echo "usage: $0 FILE.md..." >&2
	exit 2
fi

# The relative targets of one Markdown file, one per line.
links() {
	awk '
	/^[ \t]*(```|~~~)/ { fence = !fence; next }
	fence { next }
	{
		line = $0
		gsub(/`[^`]*`/, "", line)
		while (match(line, /\]\([^) \t]+([ \t]+"[^"]*")?\)/)) {
			t = substr(line, RSTART + 2, RLENGTH - 3)
			line = substr(line, RSTART + RLENGTH)
			sub(/[ \t].*/, "", t)
			sub(/^</, "", t); sub(/>$/, "", t)
			if (t ~ /^[A-Za-z][A-Za-z0-9+.-]*:/ || t ~ /^#/)
				continue
			sub(/#.*/, "", t)
			if (t != "")
				print t
		}
	}' "$1"
}

# An absolute name, so that a page reached twice is read once.
absolute() {
	if [ -d "$(dirname "$1")" ]; then
		echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
	else
		echo "$1"
	fi
}

set -f
status=0
todo=
for f; do
	todo="$todo
$(absolute "$f")"
done
done_list=
while [ -n "$todo" ]; do
	file=$(printf '%s\n' "$todo" | sed -n 1p)
	todo=$(printf '%s\n' "$todo" | sed 1d)
	[ -n "$file" ] || continue
	case "
$done_list
" in *"
$file
"*) continue ;; esac
	done_list="$done_list
$file"
	if [ ! -f "$file" ]; then
		echo "check-doc-links: $file: no such file" >&2
		status=1
		continue
	fi
	dir=$(dirname "$file")
	n=0
	for t in $(links "$file"); do
		n=$((n + 1))
		case $t in
		/*) target=$t ;;
		*) target=$dir/$t ;;
		esac
		if [ ! -e "$target" ]; then
			echo "check-doc-links: $file links $t: $target does not exist" >&2
			status=1
		elif [ -f "$target" ]; then
			case $target in
			*.md) todo="$todo
$(absolute "$target")" ;;
			esac
		fi
	done
	echo "check-doc-links: $file: $n relative links"
done
exit $status
