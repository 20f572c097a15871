# conntab-bench: every backend and the peers (lfht, ck_ht, rte_hash,
# bihash, plain) on the same keys; see doc/performance.md.
bin_PROGRAMS += bench/conntab-bench

bench_conntab_bench_SOURCES = \
	bench/main.c bench/bench.h \
	bench/report.c bench/util.c bench/keys.c \
	bench/floor.c bench/shape.c bench/workloads.c bench/workloads-mt.c bench/flood.c bench/objs.h \
	bench/stream.c bench/zipf.c bench/traffic.c bench/writers.c bench/prefix.c \
	bench/scan.c bench/evict.c bench/pair.c bench/pair.h bench/budget.c \
	bench/scale.c \
	bench/impl.h bench/impl-conntab.c bench/pad.h bench/impl-lfht.c bench/impl-plain.c \
	bench/jhash.h bench/peer-hash.h bench/peer-hash.c lib/mem.c
# lib/ for the one keyed hash (hash.h) and key compare (key.h) the peers
# share with the library, so that every table hashes alike, and its
# allocator of large arrays (mem.c) for the shape floors (bench/shape.c).
bench_conntab_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib \
	$(URCU_CFLAGS) $(URCU_CDS_CFLAGS)
bench_conntab_bench_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
bench_conntab_bench_LDADD = lib/libconntab.la $(URCU_CDS_LIBS) $(URCU_LIBS) \
	$(PTHREAD_LIBS) -lm
if HAVE_CK
bench_conntab_bench_SOURCES += bench/impl-ck.c
bench_conntab_bench_LDADD += -lck
endif
# The rte_hash peers, when configure found libdpdk: their own library,
# so that DPDK's flags (-march, -include rte_config.h) reach this one
# file and not the rest of the benchmark.
if HAVE_DPDK
noinst_LTLIBRARIES += bench/libpeer-rte.la
bench_libpeer_rte_la_SOURCES = bench/peer-rte.c
bench_libpeer_rte_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib \
	$(URCU_CFLAGS) $(DPDK_CFLAGS)
bench_libpeer_rte_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
bench_conntab_bench_LDADD += bench/libpeer-rte.la $(DPDK_LIBS)
endif
# The bihash peer, with --with-vppinfra=DIR: its own library, so that
# VPP's headers and the flags VPP builds its lookups with (BIHASH_CFLAGS:
# -O3 and -march=x86-64-v3 or v2, as this CPU allows) reach this one file.
# The user's CFLAGS come after a target's, and their -O2 would win: the
# object's own CFLAGS (GNU make) put -O3 last.
if HAVE_VPPINFRA
noinst_LTLIBRARIES += bench/libpeer-bihash.la
bench_libpeer_bihash_la_SOURCES = bench/peer-bihash.c
bench_libpeer_bihash_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib \
	$(URCU_CFLAGS) $(VPPINFRA_CFLAGS)
bench_libpeer_bihash_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
$(bench_libpeer_bihash_la_OBJECTS): CFLAGS += $(BIHASH_CFLAGS)
bench_conntab_bench_LDADD += bench/libpeer-bihash.la $(VPPINFRA_LIBS)
endif
# The pcap workload, when configure found libpcap.
bench_conntab_bench_SOURCES += bench/capture.h
if HAVE_PCAP
bench_conntab_bench_SOURCES += bench/capture.c bench/packet.c bench/replay.c
bench_conntab_bench_CPPFLAGS += $(PCAP_CFLAGS)
bench_conntab_bench_LDADD += $(PCAP_LIBS)
endif

# The default set: N = 1M and 4M, every workload.
bench: bench/conntab-bench$(EXEEXT)
	bench/conntab-bench$(EXEEXT)

# The 2007 experiment: 1M connections, one thread, every backend and peer;
# the program ends with conntab against each peer, one line each. The
# user objects are on huge pages, as a DPDK mempool's (on 4 KiB pages
# every burst is a TLB miss a key, and on a virtual machine the ratios
# swung 0.3-3 between runs: doc/performance.md), and the clock is each
# thread's CPU time, which a busy machine's preemption does not inflate.
DEMO_FLAGS = --n 1M --table --objects huge --clock cpu \
	--workload floor,lookup,lookup-dep,batch,insert,remove,memory
demo: bench/conntab-bench$(EXEEXT)
	bench/conntab-bench$(EXEEXT) $(DEMO_FLAGS)

.PHONY: bench demo

# Smoke run at a tiny size: every workload and implementation must give
# right answers (exit status); no timing is checked.
TESTS += bench/smoke.sh
EXTRA_DIST += bench/smoke.sh bench/pcap-sample.sh

# Instructions per lookup, miss, insert and remove under callgrind, of
# chained and bihash (doc/performance.md, "bihash as a peer"): a
# documented command, not a test.
EXTRA_DIST += bench/callgrind-ops.sh

# Command-line mistakes: exit status 2 and one line naming the option.
TESTS += bench/test-options.sh
EXTRA_DIST += bench/test-options.sh

# lookup3 (jhash.h, the lfht-jhash peer's hash) against its published
# test vectors.
check_PROGRAMS += bench/test-jhash
TESTS += bench/test-jhash
bench_test_jhash_SOURCES = bench/test-jhash.c bench/jhash.h
bench_test_jhash_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
bench_test_jhash_LDADD = lib/libconntab.la $(CHECK_LIBS)

# The pcap workload on a capture of loopback traffic that the test makes
# with tcpdump while curl and wrk talk to examples/tcp-conntrack; skips
# (77) without tcpdump, curl, libpcap or the permission to capture.
TESTS += bench/test-pcap.sh
EXTRA_DIST += bench/test-pcap.sh

# The time budget's "stopped" note keeps what its caller said, whose
# string may be gone by the time the note is printed (bench/stream.c's
# was on its stack); under ASan a stack-use-after-return.
check_PROGRAMS += bench/test-budget
TESTS += bench/test-budget
bench_test_budget_SOURCES = bench/test-budget.c bench/budget.c bench/bench.h \
	bench/impl.h
bench_test_budget_CPPFLAGS = $(bench_conntab_bench_CPPFLAGS)
bench_test_budget_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(PTHREAD_CFLAGS)
bench_test_budget_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS) \
	$(PTHREAD_LIBS)

# Instructions per operation of the per-packet paths, under callgrind:
# bench/ct-icount.sh bench/ct-icount [backend [n]] (doc/performance.md).
noinst_PROGRAMS += bench/ct-icount
bench_ct_icount_SOURCES = bench/ct-icount.c
bench_ct_icount_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
bench_ct_icount_LDADD = lib/libconntab.la $(URCU_LIBS) $(PTHREAD_LIBS)
# Runnable in place, not a libtool wrapper script: valgrind runs it.
bench_ct_icount_LDFLAGS = -no-install
EXTRA_DIST += bench/ct-icount.sh
