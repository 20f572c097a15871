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
#                     meeting failures, writers needing no memory
#   test-concurrency  readers, writers and a walker together; grow/shrink
#                     under readers
#   test-race         writers racing on the same keys: never a duplicate
#   test-flavor-qsbr, test-flavor-bp
#                     the same library under the qsbr and bp flavors
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

# The same library under the other flavors: one source, built per flavor,
# linking that flavor's library only.
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
