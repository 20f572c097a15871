# The hash backends, one file each (chained.c, split.c, exthash.c), and
# what they share: tagged-slot buckets (slots.h), RCU nulls chains (chain.h,
# chain-ops.h), bucket heads and lock stripes (heads.[ch]), the per-table
# hash (hash-ops.h), batched lookups (batch.h) and resumable walks (walk.h).
lib_libconntab_la_SOURCES += \
	lib/hashtab/hash-ops.h lib/hashtab/chain.h lib/hashtab/chain-ops.h \
	lib/hashtab/batch.h lib/hashtab/walk.h \
	lib/hashtab/heads.c lib/hashtab/heads.h lib/hashtab/slots.h \
	lib/hashtab/chained.c \
	lib/hashtab/split.c \
	lib/hashtab/exthash.c
