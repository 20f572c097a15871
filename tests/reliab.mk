# Reliability and security (issue "Reliability and security").
#
#   tests/stress       long stress run of every backend: readers, writers,
#                      time-wait/recycle, resizes, walks; built by
#                      `make check`, run by `make stress` and .ci/run
#                      (tests/stress --help for its options)

T_STRESS_SECONDS = 10

check_PROGRAMS += tests/stress
tests_stress_SOURCES = tests/stress.c $(T_THREADS)
tests_stress_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_stress_LDADD = $(T_MEMB_LDADD)

# `make stress STRESS_SECONDS=3600` for an hour per backend.
STRESS_SECONDS = $(T_STRESS_SECONDS)
stress: tests/stress
	$(AM_V_at)tests/stress --seconds $(STRESS_SECONDS)
.PHONY: stress
