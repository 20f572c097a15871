# Test programs, run by `make check` (Check framework). Every table test
# runs once per backend the library accepts (conntab_backend_available()),
# so a backend that lands later is tested with no change here.
#
#   test-keys         backend names, key builders and formatter
#   test-contract     create, insert (all errors), insert_recycle, lookup,
#                     lookup_batch, remove, timewait; writers inside a
#                     read-side critical section
#   test-walk         walk, walk_state (callbacks that remove/timewait),
#                     stats, destroy's release calls
#   test-model        seeded random operation sequences against a model
#                     (CONNTAB_TEST_SEED=n replays one)
#   test-alloc        every allocation of create failing in turn, inserts
#                     meeting failures, writers needing no memory; the
#                     trie's reshaping writers, each allocation failing
#   test-concurrency  readers, writers and a walker together; grow/shrink
#                     under readers
#   test-race         writers racing on the same keys: never a duplicate
#   test-trie-reshape trie: fast inserts and removes at the class
#                     thresholds while the parent inflates and halves
#   test-scan         conntab_scan(): codes, cursor, budgets, callbacks
#                     that change their node, passes under growth waves
#   test-evict        conntab_insert_evict(): the cap, ranks, assured
#                     nodes, readers of assured keys while it evicts,
#                     evictions racing each other and removes
#   test-pair         conntab_insert_pair() and pairs in the rest of the
#                     API (removal, timewait, walks, scans across
#                     resizes, destroy, eviction, counters); pair inserts
#                     racing single inserts of either key, evicting
#                     inserters of pairs at the cap
#   test-flavor-memb, test-flavor-mb, test-flavor-signal,
#   test-flavor-qsbr, test-flavor-bp
#                     the same library under each liburcu flavor; writers
#                     on threads the flavor does not count
#
# Every program runs its tests in its own process: a forked child would
# lose the RCU state of the parent (registered threads, call_rcu worker).
# The programs ask Check for that themselves; the environment says it too
# for anyone running them by hand with another default.
AM_TESTS_ENVIRONMENT = CK_FORK=no; export CK_FORK;

T_PROGS = \
	tests/test-keys \
	tests/test-contract \
	tests/test-walk \
	tests/test-model \
	tests/test-alloc \
	tests/test-concurrency \
	tests/test-race \
	tests/test-trie-reshape \
	tests/test-scan \
	tests/test-evict \
	tests/test-pair \
	tests/test-flavor-memb \
	tests/test-flavor-mb \
	tests/test-flavor-signal \
	tests/test-flavor-qsbr \
	tests/test-flavor-bp
check_PROGRAMS += $(T_PROGS)
TESTS += $(T_PROGS)

T_COMMON = tests/common.c tests/common.h
T_CHECK_CPPFLAGS = $(AM_CPPFLAGS) $(CHECK_CFLAGS) $(PTHREAD_CFLAGS)

# Programs built against the memb flavor (<urcu.h>).
T_MEMB_CPPFLAGS = $(T_CHECK_CPPFLAGS) $(URCU_CFLAGS)
T_MEMB_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS) $(PTHREAD_LIBS)
T_HELPERS = $(T_COMMON) tests/helpers.c tests/helpers.h

tests_test_keys_SOURCES = tests/test-keys.c $(T_HELPERS)
tests_test_keys_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_keys_LDADD = $(T_MEMB_LDADD)

tests_test_contract_SOURCES = tests/test-contract.c $(T_HELPERS)
tests_test_contract_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_contract_LDADD = $(T_MEMB_LDADD)

tests_test_walk_SOURCES = tests/test-walk.c $(T_HELPERS)
tests_test_walk_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_walk_LDADD = $(T_MEMB_LDADD)

tests_test_model_SOURCES = tests/test-model.c $(T_HELPERS)
tests_test_model_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_model_LDADD = $(T_MEMB_LDADD)

# Replaces the process's allocator: keep it in a program of its own.
tests_test_alloc_SOURCES = tests/test-alloc.c tests/failalloc.c \
	tests/failalloc.h $(T_HELPERS)
tests_test_alloc_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_alloc_LDADD = $(T_MEMB_LDADD) -ldl

T_THREADS = tests/threads.c tests/threads.h $(T_HELPERS)

tests_test_concurrency_SOURCES = tests/test-concurrency.c $(T_THREADS)
tests_test_concurrency_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_concurrency_LDADD = $(T_MEMB_LDADD)

tests_test_race_SOURCES = tests/test-race.c $(T_THREADS)
tests_test_race_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_race_LDADD = $(T_MEMB_LDADD)

tests_test_trie_reshape_SOURCES = tests/test-trie-reshape.c $(T_THREADS)
tests_test_trie_reshape_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_trie_reshape_LDADD = $(T_MEMB_LDADD)

tests_test_scan_SOURCES = tests/test-scan.c $(T_THREADS)
tests_test_scan_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_scan_LDADD = $(T_MEMB_LDADD)

tests_test_evict_SOURCES = tests/test-evict.c $(T_THREADS)
tests_test_evict_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_evict_LDADD = $(T_MEMB_LDADD)

tests_test_pair_SOURCES = tests/test-pair.c $(T_HELPERS)
tests_test_pair_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_pair_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_pair_LDADD = $(T_MEMB_LDADD)

# The hashed operations (conntab_lookup_hashed(3)): the plain calls'
# results with the right hash, wrong hashes never finding another key's
# node nor linked, -EEXIST handing back the key's node, also to the loser
# of a race between two inserters.
check_PROGRAMS += tests/test-hashed
TESTS += tests/test-hashed
tests_test_hashed_SOURCES = tests/test-hashed.c $(T_HELPERS)
tests_test_hashed_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_hashed_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_hashed_LDADD = $(T_MEMB_LDADD)

# The same library under every flavor: one source, built per flavor,
# linking that flavor's library only.
tests_test_flavor_memb_SOURCES = tests/test-flavor.c $(T_COMMON)
tests_test_flavor_memb_CPPFLAGS = $(T_CHECK_CPPFLAGS) $(URCU_CFLAGS) \
	-DT_FLAVOR_MEMB
tests_test_flavor_memb_LDADD = lib/libconntab.la $(URCU_LIBS) \
	$(CHECK_LIBS) $(PTHREAD_LIBS)

tests_test_flavor_mb_SOURCES = tests/test-flavor.c $(T_COMMON)
tests_test_flavor_mb_CPPFLAGS = $(T_CHECK_CPPFLAGS) $(URCU_MB_CFLAGS) \
	-DT_FLAVOR_MB
tests_test_flavor_mb_LDADD = lib/libconntab.la $(URCU_MB_LIBS) \
	$(CHECK_LIBS) $(PTHREAD_LIBS)

tests_test_flavor_signal_SOURCES = tests/test-flavor.c $(T_COMMON)
tests_test_flavor_signal_CPPFLAGS = $(T_CHECK_CPPFLAGS) \
	$(URCU_SIGNAL_CFLAGS) -DT_FLAVOR_SIGNAL
tests_test_flavor_signal_LDADD = lib/libconntab.la $(URCU_SIGNAL_LIBS) \
	$(CHECK_LIBS) $(PTHREAD_LIBS)

tests_test_flavor_qsbr_SOURCES = tests/test-flavor.c $(T_COMMON)
tests_test_flavor_qsbr_CPPFLAGS = $(T_CHECK_CPPFLAGS) $(URCU_QSBR_CFLAGS) \
	-DT_FLAVOR_QSBR
tests_test_flavor_qsbr_LDADD = lib/libconntab.la $(URCU_QSBR_LIBS) \
	$(CHECK_LIBS) $(PTHREAD_LIBS)

tests_test_flavor_bp_SOURCES = tests/test-flavor.c $(T_COMMON)
tests_test_flavor_bp_CPPFLAGS = $(T_CHECK_CPPFLAGS) $(URCU_BP_CFLAGS) \
	-DT_FLAVOR_BP
tests_test_flavor_bp_LDADD = lib/libconntab.la $(URCU_BP_LIBS) \
	$(CHECK_LIBS) $(PTHREAD_LIBS)

# Reliability and security:
#
#   tests/test-badinput   bad input test-contract.c leaves out: malformed
#                      keys in lookups and batches, the same node twice,
#                      other tables' nodes in recycle and timewait
#   tests/test-alloc-seq  the n-th allocation failing (alone, or with all
#                      later ones) over a whole workload: create, growth,
#                      time-wait, recycle, remove, destroy; run under LSan
#                      by the sanitizer build
#   tests/stress       long stress run of every backend: readers, writers,
#                      time-wait/recycle, evictions, resizes, walks,
#                      scans, prefix walks, checkpoints of the tables
#                      against their models, every key set; with delays
#                      at the library's delay points in a build
#                      configured with --enable-delay-injection; built
#                      by `make check`, run by `make stress` and .ci/run
#                      (tests/stress --help for its options)

check_PROGRAMS += tests/test-badinput tests/test-alloc-seq
TESTS += tests/test-badinput tests/test-alloc-seq
tests_test_badinput_SOURCES = tests/test-badinput.c $(T_HELPERS)
tests_test_badinput_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_badinput_LDADD = $(T_MEMB_LDADD)

# Replaces the process's allocator: a program of its own.
tests_test_alloc_seq_SOURCES = tests/test-alloc-seq.c tests/failalloc.c \
	tests/failalloc.h $(T_HELPERS)
tests_test_alloc_seq_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_alloc_seq_LDADD = $(T_MEMB_LDADD) -ldl

check_PROGRAMS += tests/stress
tests_stress_SOURCES = tests/stress.c tests/stress.h tests/stress-keys.c \
	tests/stress-read.c tests/stress-write.c tests/stress-check.c \
	tests/stress-delay.c tests/stress-delay.h $(T_THREADS)
tests_stress_CPPFLAGS = $(T_MEMB_CPPFLAGS)
if DELAY_INJECTION
# The delay points' counters are hidden in the library, which exports
# conntab_* only (scripts/check-symbols.sh): stress links the library's
# own objects instead of the shared object, to read and reset them
# (lib/delay.h). The same code, linked statically.
tests_stress_LDADD = $(lib_libconntab_la_OBJECTS) $(URCU_LIBS) \
	$(CHECK_LIBS) $(PTHREAD_LIBS)
else
tests_stress_LDADD = $(T_MEMB_LDADD)
endif

# ThreadSanitizer, in a build configured with --enable-tsan: the tests
# where threads share a table (readers, writers, walks and scans, exthash
# splitting and merging under them, split's moves, eviction, pair inserts
# racing single ones and evictions: test-pair's race cases, which
# T_PAIR_ONLY_RACES keeps to, the rest being single-threaded) and a short
# stress run, every report but those tests/tsan.supp names (the call_rcu
# frees that it cannot relate to their grace periods) failing the run;
# one hash (races do not depend on it). suppress_equal_addresses=0 and
# suppress_equal_stacks=0: with them on, every suppressed report is
# first looked up in lists of all earlier ones, linearly, and a test that
# frees a million nodes through call_rcu ran for most of an hour (CI's
# time out); off, the same runs take seconds. history_size=7: liburcu's
# frees of its own (rcu_barrier()'s completion, in the call_rcu worker)
# race a write of the main thread that only the stack of that write
# (urcu_memb_barrier, in tsan.supp) tells apart, and with the default
# history that stack was lost ("failed to restore the stack") in
# test-trie's first rcu_barrier() and now and then in test-evict: a
# report no suppression can match. test-exthash-resize is left out: it
# replaces malloc, which the sanitizer's own start-up calls before the
# program can. CONNTAB_TRIE's own threaded cases and test-slots' race run
# too, by their Check case (program:case, the program also in
# TSAN_CHECK_CASE_PROGS), and exthash's rehashes under readers
# (test-exthash-skew's xh-known-secret, 20K keys there): the rest of those
# programs is single-threaded and slow under ThreadSanitizer (test-trie:
# 170 s). .ci/run does this; `make
# check-tsan` by hand.
TSAN_CHECK_TESTS = tests/test-concurrency tests/test-race tests/test-scan \
	tests/test-evict tests/test-split-move tests/test-split-slots \
	"T_PAIR_ONLY_RACES=1 tests/test-pair"
TSAN_CHECK_CASES = tests/test-trie:trie-concurrent \
	tests/test-trie-bound:trie-bound-races tests/test-slots:slots-race \
	tests/test-trie-evict:trie-evict-tiny-cap \
	tests/test-trie-bound:trie-bound-writers \
	tests/test-exthash-skew:xh-known-secret
TSAN_CHECK_CASE_PROGS = tests/test-trie tests/test-trie-bound \
	tests/test-slots tests/test-trie-evict tests/test-exthash-skew
TSAN_OPTIONS_CHECK = suppressions=$(abs_top_srcdir)/tests/tsan.supp \
	halt_on_error=1 second_deadlock_stack=1 history_size=7 \
	suppress_equal_addresses=0 suppress_equal_stacks=0
TSAN_CHECK_PROGS = tests/test-concurrency tests/test-race tests/test-scan \
	tests/test-evict tests/test-split-move tests/test-split-slots \
	tests/test-pair
check-tsan: $(TSAN_CHECK_PROGS) tests/stress $(TSAN_CHECK_CASE_PROGS)
if TSAN
	$(AM_V_at)set -e; export CK_FORK=no CONNTAB_TEST_HASH=siphash; \
	export TSAN_OPTIONS='$(TSAN_OPTIONS_CHECK)'; \
	for t in $(TSAN_CHECK_TESTS) "tests/stress --seconds 3"; do \
		echo "check-tsan: $$t"; s=$$(date +%s); env $$t; \
		echo "check-tsan: $$t: $$(($$(date +%s) - s)) s"; \
	done; \
	for c in $(TSAN_CHECK_CASES); do \
		t=$${c%%:*}; k=$${c#*:}; \
		echo "check-tsan: $$t ($$k)"; s=$$(date +%s); \
		CK_RUN_CASE=$$k $$t; \
		echo "check-tsan: $$t ($$k): $$(($$(date +%s) - s)) s"; \
	done
else
	@echo "check-tsan: configure with --enable-tsan first" >&2; exit 1
endif
.PHONY: check-tsan
EXTRA_DIST += tests/tsan.supp

# `make stress STRESS_SECONDS=3600` for an hour per backend.
STRESS_SECONDS = 10
stress: tests/stress
	$(AM_V_at)tests/stress --seconds $(STRESS_SECONDS)
.PHONY: stress

# Fuzzing: tests/fuzz/fuzz-ops.c decodes its input as table operations
# checked against a model. `make fuzz FUZZ_SECONDS=60` builds it with
# clang and libFuzzer (outside libtool: tests/fuzz/run.sh) and fuzzes each
# backend for that long; tests/fuzz-replay, the same harness built with a
# replay main, runs the committed corpus (tests/fuzz/corpus) and the
# inputs that once failed (tests/fuzz/regress) in `make check`.
check_PROGRAMS += tests/fuzz-replay
TESTS += tests/fuzz-replay
tests_fuzz_replay_SOURCES = tests/fuzz/fuzz-ops.c
tests_fuzz_replay_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) -DFUZZ_STANDALONE
tests_fuzz_replay_LDADD = lib/libconntab.la $(URCU_LIBS) $(PTHREAD_LIBS)

EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus tests/fuzz/regress

FUZZ_SECONDS = 60
fuzz:
	$(SHELL) $(top_srcdir)/tests/fuzz/run.sh $(FUZZ_SECONDS) fuzz-work
.PHONY: fuzz
clean-local: clean-fuzz
clean-fuzz:
	rm -rf fuzz-work
.PHONY: clean-fuzz

# The eviction sample: bounded (a flooded bucket, a table far over its
# hint), fair (candidates over the key order), and leaving the depths a
# random fill leaves.
check_PROGRAMS += tests/test-evict-sample
TESTS += tests/test-evict-sample
tests_test_evict_sample_SOURCES = tests/test-evict-sample.c $(T_COMMON)
tests_test_evict_sample_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) \
	$(CHECK_CFLAGS)
tests_test_evict_sample_LDADD = lib/libconntab.la $(URCU_LIBS) \
	$(CHECK_LIBS)

# Hash flooding: a known secret lets an attacker fill one chain; a random
# one does not.
check_PROGRAMS += tests/test-flood
TESTS += tests/test-flood
tests_test_flood_SOURCES = tests/test-flood.c $(T_COMMON)
tests_test_flood_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) $(CHECK_CFLAGS)
tests_test_flood_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS)

# CONNTAB_CHAINED's tagged slots against one full bucket of one tag
# (a known secret, as test-flood), and its readers against churn.
check_PROGRAMS += tests/test-slots
TESTS += tests/test-slots
tests_test_slots_SOURCES = tests/test-slots.c $(T_COMMON)
tests_test_slots_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) $(CHECK_CFLAGS)
tests_test_slots_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_slots_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS) \
	$(PTHREAD_LIBS)

# Targeted tests of the split backend (the suites above cover every
# backend).
SPLIT_TEST_LDADD = lib/libconntab.la $(URCU_LIBS) $(PTHREAD_LIBS)
# The writers, readers and walker of the two stress tests of moves.
SPLIT_TEST_COMMON = tests/split-common.c tests/split-common.h

check_PROGRAMS += tests/test-split-contract
tests_test_split_contract_SOURCES = tests/test-split-contract.c
tests_test_split_contract_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
tests_test_split_contract_LDADD = $(SPLIT_TEST_LDADD)

TESTS += tests/test-split-contract

check_PROGRAMS += tests/test-split-move
tests_test_split_move_SOURCES = tests/test-split-move.c \
	$(SPLIT_TEST_COMMON)
tests_test_split_move_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
tests_test_split_move_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_split_move_LDADD = $(SPLIT_TEST_LDADD)

TESTS += tests/test-split-move

# The race windows of split's bucket line: slots emptied and refilled
# around stable keys, shared tags, overflow, moves to time-wait.
check_PROGRAMS += tests/test-split-slots
tests_test_split_slots_SOURCES = tests/test-split-slots.c \
	$(SPLIT_TEST_COMMON)
tests_test_split_slots_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
tests_test_split_slots_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_split_slots_LDADD = $(SPLIT_TEST_LDADD)

TESTS += tests/test-split-slots

# CONNTAB_EXTHASH with hashes that share their top bits (a known secret):
# growth that never stalls, short chains, the directory within its bound;
# case xh-known-secret: keys aimed at the chain index as well, readers
# under the rehashes they cause.
check_PROGRAMS += tests/test-exthash-skew
TESTS += tests/test-exthash-skew
tests_test_exthash_skew_SOURCES = tests/test-exthash-skew.c $(T_COMMON)
tests_test_exthash_skew_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) \
	$(CHECK_CFLAGS)
tests_test_exthash_skew_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_exthash_skew_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS) \
	$(PTHREAD_LIBS)

# Memory follows the table: filled to 1M, churned, emptied to 1%, each
# hash backend holds what a fresh table of that 1% holds (exthash within a
# factor of 2; chained and split their fixed array), stats and heap.
check_PROGRAMS += tests/test-memory
TESTS += tests/test-memory
tests_test_memory_SOURCES = tests/test-memory.c $(T_COMMON)
tests_test_memory_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) $(CHECK_CFLAGS)
tests_test_memory_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS)

# CONNTAB_EXTHASH under online resizing: growth and shrinking
# with readers asserting zero misses, exactly-once walks under splits and
# merges, allocation failure during growth. The contract suite covers the
# rest of the API for every backend.
check_PROGRAMS += tests/test-exthash-resize
TESTS += tests/test-exthash-resize
tests_test_exthash_resize_SOURCES = tests/test-exthash-resize.c
tests_test_exthash_resize_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
tests_test_exthash_resize_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_exthash_resize_LDADD = lib/libconntab.la $(URCU_LIBS) \
	$(PTHREAD_LIBS)

# CONNTAB_EXTHASH's merges keep stats.entries and stats.timewait (a
# table shrunk around its TIME_WAIT nodes), and buddies that index apart
# (one rehashed by keys aimed with a known secret) merge into the chains
# of their keys' hashes.
check_PROGRAMS += tests/test-exthash-merge
TESTS += tests/test-exthash-merge
tests_test_exthash_merge_SOURCES = tests/test-exthash-merge.c $(T_HELPERS)
tests_test_exthash_merge_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_exthash_merge_LDADD = $(T_MEMB_LDADD)

# The same, against lib/libconntab-test.la (one directory slot copied
# per writer call): the filled part of a pending directory kept up to
# date thousands of times (lib/local.mk).
check_PROGRAMS += tests/test-exthash-copystep
TESTS += tests/test-exthash-copystep
tests_test_exthash_copystep_SOURCES = tests/test-exthash-resize.c
tests_test_exthash_copystep_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) \
	-DT_COPY_STEP
tests_test_exthash_copystep_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_exthash_copystep_LDADD = lib/libconntab-test.la $(URCU_LIBS) \
	$(PTHREAD_LIBS)

# Against lib/libconntab-test.la too (its first multipliers known): keys
# aimed at one chain of a rehashed segment, each rehash and redraw seen.
check_PROGRAMS += tests/test-exthash-redraw
TESTS += tests/test-exthash-redraw
tests_test_exthash_redraw_SOURCES = tests/test-exthash-redraw.c $(T_COMMON)
tests_test_exthash_redraw_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) \
	$(CHECK_CFLAGS) -DT_MULT=$(CT_XH_TEST_MULT)
tests_test_exthash_redraw_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_exthash_redraw_LDADD = lib/libconntab-test.la $(URCU_LIBS) \
	$(CHECK_LIBS) $(PTHREAD_LIBS)

# CONNTAB_TRIE: its own tests (adversarial key sets, prefix walks for every
# backend, concurrency).
check_PROGRAMS += tests/test-trie
TESTS += tests/test-trie
tests_test_trie_SOURCES = tests/test-trie.c
tests_test_trie_CFLAGS = $(AM_CFLAGS) $(URCU_CFLAGS) $(CHECK_CFLAGS) \
	$(PTHREAD_CFLAGS)
tests_test_trie_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS) \
	$(PTHREAD_LIBS)

# CONNTAB_TRIE: the memory bound of lib/trie/trie.c under adversarial churn
# and under evictions racing removes, and conntab_stats() beside writers.
check_PROGRAMS += tests/test-trie-bound
TESTS += tests/test-trie-bound
tests_test_trie_bound_SOURCES = tests/test-trie-bound.c $(T_COMMON)
tests_test_trie_bound_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_trie_bound_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_trie_bound_LDADD = $(T_MEMB_LDADD)

# CONNTAB_TRIE eviction: a fair sample, its work bounded on constructed
# worst cases, no refusal at a tiny cap that another writer's step causes.
check_PROGRAMS += tests/test-trie-evict
TESTS += tests/test-trie-evict
tests_test_trie_evict_SOURCES = tests/test-trie-evict.c $(T_COMMON)
tests_test_trie_evict_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_trie_evict_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_trie_evict_LDADD = $(T_MEMB_LDADD)

# USDT probes (lib/probes.h): readelf -n lists them; under gdb,
# tests/probes-drive makes each one fire (skipped without <sys/sdt.h>).
check_PROGRAMS += tests/probes-drive
tests_probes_drive_SOURCES = tests/probes-drive.c
tests_probes_drive_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
tests_probes_drive_LDADD = lib/libconntab.la $(URCU_LIBS)
TESTS += tests/test-probes.sh
EXTRA_DIST += tests/test-probes.sh

# conntab_create() and the order of the includes: conntab.h before
# <urcu.h> runs (the program); what compiles and what does not, and with
# which message (the script, with this build's compiler and warnings).
check_PROGRAMS += tests/test-include-order
TESTS += tests/test-include-order tests/test-include-order.sh
EXTRA_DIST += tests/test-include-order.sh
tests_test_include_order_SOURCES = tests/test-include-order.c
tests_test_include_order_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
tests_test_include_order_LDADD = lib/libconntab.la $(URCU_LIBS)
AM_TESTS_ENVIRONMENT += CT_CC='$(CC)' \
	CT_CFLAGS='-I$(abs_top_srcdir)/include $(URCU_CFLAGS) \
	$(URCU_QSBR_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(WARN_CFLAGS)'; \
	export CT_CC CT_CFLAGS;

# test-hashed under ThreadSanitizer too (make check-tsan, above): its
# inserters racing on the same keys, with and without a remover.
TSAN_CHECK_TESTS += tests/test-hashed
TSAN_CHECK_PROGS += tests/test-hashed
