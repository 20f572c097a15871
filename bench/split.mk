# Standalone lookup comparison of the split and chained backends (not
# installed; the full benchmark is conntab-bench).
noinst_PROGRAMS += bench/split-vs-chained
bench_split_vs_chained_SOURCES = bench/split-vs-chained.c
bench_split_vs_chained_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
bench_split_vs_chained_LDADD = lib/libconntab.la $(URCU_LIBS)
