# The library: one front file, shared helpers, one file per backend.
lib_LTLIBRARIES = lib/libconntab.la
conntabincludedir = $(includedir)/conntab
conntabinclude_HEADERS = include/conntab/conntab.h

lib_libconntab_la_SOURCES = \
	lib/conntab.c lib/conntab-int.h \
	lib/key.c lib/key.h \
	lib/lock.c lib/lock.h \
	lib/mem.c lib/mem.h \
	lib/hash.h lib/chain.h lib/chain-ops.h lib/rcu.h lib/batch.h lib/walk.h \
	lib/heads.c lib/heads.h \
	lib/chained.c \
	lib/split.c \
	lib/exthash.c \
	lib/trie.c lib/trie.h lib/trie-mem.c lib/trie-read.c \
	lib/trie-build.c lib/trie-build.h lib/trie-path.h lib/trie-write.c \
	lib/trie-resize.c
lib_libconntab_la_CPPFLAGS = $(AM_CPPFLAGS) -DCONNTAB_BUILDING $(URCU_CFLAGS)
lib_libconntab_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
lib_libconntab_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(CONNTAB_LT_VERSION) \
	-no-undefined
