# The library: one front file, shared helpers, one file per backend.
lib_LTLIBRARIES = lib/libconntab.la
conntabincludedir = $(includedir)/conntab
conntabinclude_HEADERS = include/conntab/conntab.h

lib_libconntab_la_SOURCES = \
	lib/conntab.c lib/conntab-int.h \
	lib/key.c lib/key.h \
	lib/lock.c lib/lock.h \
	lib/mem.c lib/mem.h \
	lib/aes.c lib/aes.h lib/hash.h lib/hash-ops.h \
	lib/evict.c lib/evict.h \
	lib/chain.h lib/chain-ops.h lib/rcu.h lib/batch.h lib/walk.h \
	lib/heads.c lib/heads.h \
	lib/chained.c \
	lib/split.c \
	lib/exthash.c \
	lib/trie.c
lib_libconntab_la_CPPFLAGS = $(AM_CPPFLAGS) -DCONNTAB_BUILDING $(URCU_CFLAGS)
lib_libconntab_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
lib_libconntab_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(CONNTAB_LT_VERSION) \
	-no-undefined
