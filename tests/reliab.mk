# Reliability and security (issue "Reliability and security").
#
#   tests/test-badinput   bad input test-contract.c leaves out: malformed
#                      keys in lookups and batches, the same node twice,
#                      other tables' nodes in recycle and timewait
#   tests/test-alloc-seq  the n-th allocation failing (alone, or with all
#                      later ones) over a whole workload: create, growth,
#                      time-wait, recycle, remove, destroy; run under LSan
#                      by the sanitizer build
#   tests/stress       long stress run of every backend: readers, writers,
#                      time-wait/recycle, resizes, walks; built by
#                      `make check`, run by `make stress` and .ci/run
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
tests_stress_SOURCES = tests/stress.c $(T_THREADS)
tests_stress_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_stress_LDADD = $(T_MEMB_LDADD)

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

EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus

FUZZ_SECONDS = 60
fuzz:
	$(SHELL) $(top_srcdir)/tests/fuzz/run.sh $(FUZZ_SECONDS) fuzz-work
.PHONY: fuzz
clean-local: clean-fuzz
clean-fuzz:
	rm -rf fuzz-work
.PHONY: clean-fuzz
