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

# The library again, with the exthash directory copied one slot every 64
# writer calls (CT_XH_COPY_STEP, CT_XH_COPY_EVERY), so that resizes stay
# pending across most splits and merges, which keep updating the filled
# part of the pending directory: tests/test-exthash-copystep. Not
# installed.
check_LTLIBRARIES = lib/libconntab-copystep.la
lib_libconntab_copystep_la_SOURCES = $(lib_libconntab_la_SOURCES)
lib_libconntab_copystep_la_CPPFLAGS = $(lib_libconntab_la_CPPFLAGS) \
	-DCT_XH_COPY_STEP=1 -DCT_XH_COPY_EVERY=64
lib_libconntab_copystep_la_CFLAGS = $(lib_libconntab_la_CFLAGS)
