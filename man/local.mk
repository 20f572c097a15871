# SPDX-License-Identifier: LGPL-2.1-or-later
# Manual pages, written by hand in man-pages style: one page per function
# group in section 3, a one-line link page (.so) for every other name so
# that `man conntab_lookup_batch` works, conntab(7) for the model and the
# concurrency rules, conntab-bench(1). They sit in man/manN/ as they are
# installed, so link pages resolve in the tree too:
#   MANPATH=man man conntab_scan
# Every page starts with .nr HY 0, .nh and .ad l: identifiers are never
# hyphenated, lines are not stretched around them.
#
# `make check` runs scripts/check-man.sh: every name of the API has a
# page and every page a name, groff -ww and man --warnings are silent, and
# each EXAMPLE, as man renders it, compiles with the project's warnings as
# errors against the built library, runs, and prints its page's Output;
# and conntab-bench(1) documents what the built program's --help lists.

dist_man1_MANS = man/man1/conntab-bench.1
dist_man7_MANS = man/man7/conntab.7
dist_man3_MANS = \
	man/man3/conntab_backend_name.3 \
	man/man3/conntab_backend_available.3 \
	man/man3/conntab_backend_from_name.3 \
	man/man3/conntab_hash_name.3 \
	man/man3/conntab_hash_from_name.3 \
	man/man3/conntab_hash_of.3 \
	man/man3/conntab_create.3 \
	man/man3/conntab_create_flavor.3 \
	man/man3/conntab_cursor_done.3 \
	man/man3/conntab_destroy.3 \
	man/man3/conntab_insert.3 \
	man/man3/conntab_insert_recycle.3 \
	man/man3/conntab_insert_evict.3 \
	man/man3/conntab_insert_pair.3 \
	man/man3/conntab_insert_pair_evict.3 \
	man/man3/conntab_pair_peer.3 \
	man/man3/conntab_counters.3 \
	man/man3/conntab_key_v4.3 \
	man/man3/conntab_key_v6.3 \
	man/man3/conntab_key_from_sockaddr.3 \
	man/man3/conntab_key_format.3 \
	man/man3/conntab_lookup.3 \
	man/man3/conntab_lookup_batch.3 \
	man/man3/conntab_lookup_hashed.3 \
	man/man3/conntab_hash.3 \
	man/man3/conntab_prefetch.3 \
	man/man3/conntab_insert_hashed.3 \
	man/man3/conntab_node_init.3 \
	man/man3/conntab_node_key.3 \
	man/man3/conntab_node_state.3 \
	man/man3/conntab_entry.3 \
	man/man3/conntab_remove.3 \
	man/man3/conntab_remove_key.3 \
	man/man3/conntab_scan.3 \
	man/man3/conntab_stats.3 \
	man/man3/conntab_resize_stats.3 \
	man/man3/conntab_timewait.3 \
	man/man3/conntab_walk.3 \
	man/man3/conntab_walk_state.3 \
	man/man3/conntab_walk_prefix.3

EXTRA_DIST += scripts/check-man.sh scripts/api-names.sh

# Examples build as the installed library's users would, with the
# project's warnings as errors (and the sanitizers of this build).
check-local: check-man
check-man: lib/libconntab.la bench/conntab-bench$(EXEEXT)
	$(AM_V_GEN)NM='$(NM)' CC='$(CC)' \
	MAN_BENCH='bench/conntab-bench$(EXEEXT)' \
	MAN_INSTALLED='$(dist_man1_MANS) $(dist_man3_MANS) $(dist_man7_MANS)' \
	MAN_VERSION='$(PACKAGE_VERSION)' \
	MAN_CFLAGS='-I$(abs_top_srcdir)/include $(URCU_CFLAGS) $(PTHREAD_CFLAGS) $(CFLAGS) $(SAN_CFLAGS) $(WARN_CFLAGS) -Werror' \
	MAN_LIBS='-L$(abs_top_builddir)/lib/.libs -lconntab $(URCU_LIBS) $(PTHREAD_LIBS)' \
	MAN_LIBDIR='$(abs_top_builddir)/lib/.libs' \
	bash $(top_srcdir)/scripts/check-man.sh $(top_srcdir)/man \
		lib/.libs/libconntab.so $(top_srcdir)/include/conntab/conntab.h
.PHONY: check-man
