# The library. lib/ holds the front end (conntab.c: argument and key
# checks, the node claim, pairs, counters) and what every backend shares
# (keys, lock words, memory, RCU glue, eviction's sample, delay points,
# probes); lib/hash/ the keyed hash; lib/hashtab/ the three hash backends
# and the parts they share (slot buckets, chains, lock stripes, batch,
# walk); lib/trie/ the multi-bit trie. Each folder lists its own files.
lib_LTLIBRARIES = lib/libconntab.la
conntabincludedir = $(includedir)/conntab
conntabinclude_HEADERS = include/conntab/conntab.h

lib_libconntab_la_SOURCES = \
	lib/conntab.c lib/conntab-int.h lib/cursor.c lib/cursor.h \
	lib/key.c lib/key.h \
	lib/lock.c lib/lock.h \
	lib/mem.c lib/mem.h \
	lib/wipe.h \
	lib/evict.c lib/evict.h \
	lib/shard.c lib/shard.h \
	lib/rcu.h lib/rcu-reg.c lib/rcu-reg.h \
	lib/probes.h lib/delay.c lib/delay.h
include $(srcdir)/lib/hash/local.mk
include $(srcdir)/lib/hashtab/local.mk
include $(srcdir)/lib/trie/local.mk
lib_libconntab_la_CPPFLAGS = $(AM_CPPFLAGS) -DCONNTAB_BUILDING $(URCU_CFLAGS)
lib_libconntab_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
# Symbol versions: lib/libconntab.map (doc/releasing.md).
lib_libconntab_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(CONNTAB_LT_VERSION) \
	-no-undefined -Wl,--version-script=$(srcdir)/lib/libconntab.map
EXTRA_lib_libconntab_la_DEPENDENCIES = lib/libconntab.map
EXTRA_DIST += lib/libconntab.map

# The library again with white-box test knobs, not installed:
# - the exthash directory copied one slot every 64 writer calls
#   (CT_XH_COPY_STEP, CT_XH_COPY_EVERY), so that resizes stay pending
#   across most splits and merges, which keep updating the filled part of
#   the pending directory: tests/test-exthash-copystep;
# - a table's first three multipliers for rehashed exthash segments fixed
#   (CT_XH_TEST_MULT, CT_XH_TEST_MULT_DRAWS), so that a test can aim keys
#   at one chain and see each rehash and redraw: tests/test-exthash-redraw.
CT_XH_TEST_MULT = 0x9e3779b1u
check_LTLIBRARIES = lib/libconntab-test.la
lib_libconntab_test_la_SOURCES = $(lib_libconntab_la_SOURCES)
lib_libconntab_test_la_CPPFLAGS = $(lib_libconntab_la_CPPFLAGS) \
	-DCT_XH_COPY_STEP=1 -DCT_XH_COPY_EVERY=64 \
	-DCT_XH_TEST_MULT=$(CT_XH_TEST_MULT) -DCT_XH_TEST_MULT_DRAWS=3
lib_libconntab_test_la_CFLAGS = $(lib_libconntab_la_CFLAGS)
