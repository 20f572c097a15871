# The library: one front file, shared helpers, one file per backend.
lib_LTLIBRARIES = lib/libconntab.la
conntabincludedir = $(includedir)/conntab
conntabinclude_HEADERS = include/conntab/conntab.h

lib_libconntab_la_SOURCES = \
	lib/conntab.c lib/conntab-int.h lib/cursor.c lib/cursor.h \
	lib/key.c lib/key.h \
	lib/lock.c lib/lock.h \
	lib/mem.c lib/mem.h \
	lib/aes.c lib/aes.h lib/hash.h lib/hash-ops.h lib/wipe.h \
	lib/evict.c lib/evict.h \
	lib/chain.h lib/chain-ops.h lib/rcu.h lib/batch.h lib/walk.h \
	lib/rcu-reg.c lib/rcu-reg.h \
	lib/probes.h lib/delay.c lib/delay.h \
	lib/heads.c lib/heads.h lib/slots.h \
	lib/chained.c \
	lib/split.c \
	lib/exthash.c \
	lib/trie.c lib/trie.h lib/trie-mem.c lib/trie-read.c \
	lib/trie-build.c lib/trie-build.h lib/trie-path.h lib/trie-write.c \
	lib/trie-resize.c lib/trie-scan.c lib/trie-evict.c lib/trie-sample.h
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
