# Growth under readers, against cds_lfht with CDS_LFHT_AUTO_RESIZE, and
# lookup cost against the chained backend (issue 4). Not run by make check:
#   bench/exthash-grow [--n N] [--lookup-n M] [--readers R] [--rounds K]
#                      [--clock wall|cpu] [--no-lfht]
noinst_PROGRAMS += bench/exthash-grow
bench_exthash_grow_SOURCES = bench/exthash-grow.c
bench_exthash_grow_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) $(URCU_CDS_CFLAGS)
bench_exthash_grow_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
bench_exthash_grow_LDADD = lib/libconntab.la $(URCU_CDS_LIBS) $(URCU_LIBS) \
	$(PTHREAD_LIBS)
