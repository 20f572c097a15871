# CONNTAB_TRIE: the multi-bit trie over the key's own bits, RCU
# copy-on-write. trie.c (the design, its invariants and bounds; the ops
# table), trie.h (node layouts, child words), trie-mem.c (node memory,
# counters, retirement), trie-read.c (lookup, batch, walks), trie-build.[ch]
# (subtries and sparse nodes), trie-path.h and trie-write.c (writers'
# paths and locks; insert, remove, timewait), trie-resize.c (dense nodes
# that change width), trie-scan.c (scans), trie-evict.c and trie-sample.h
# (eviction and its sample).
lib_libconntab_la_SOURCES += \
	lib/trie/trie.c lib/trie/trie.h lib/trie/trie-mem.c \
	lib/trie/trie-read.c lib/trie/trie-build.c lib/trie/trie-build.h \
	lib/trie/trie-path.h lib/trie/trie-write.c lib/trie/trie-resize.c \
	lib/trie/trie-scan.c lib/trie/trie-evict.c lib/trie/trie-sample.h
