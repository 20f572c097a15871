# Test programs, run by `make check` (Check framework).
#
# Every program runs its tests in its own process: a forked child would
# lose the RCU state of the parent (registered threads, call_rcu worker).
# The programs ask Check for that themselves; the environment says it too
# for anyone running them by hand with another default.
AM_TESTS_ENVIRONMENT = CK_FORK=no; export CK_FORK;

check_PROGRAMS += \
	tests/test-keys \
	tests/test-contract \
	tests/test-model \
	tests/test-alloc \
	tests/test-concurrency
TESTS += \
	tests/test-keys \
	tests/test-contract \
	tests/test-model \
	tests/test-alloc \
	tests/test-concurrency

# Programs built against the memb flavor (<urcu.h>) share these.
T_MEMB_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) $(CHECK_CFLAGS) \
	$(PTHREAD_CFLAGS)
T_MEMB_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS) $(PTHREAD_LIBS)
T_HELPERS = tests/helpers.c tests/helpers.h

tests_test_keys_SOURCES = tests/test-keys.c $(T_HELPERS)
tests_test_keys_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_keys_LDADD = $(T_MEMB_LDADD)

tests_test_contract_SOURCES = tests/test-contract.c $(T_HELPERS)
tests_test_contract_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_contract_LDADD = $(T_MEMB_LDADD)

tests_test_model_SOURCES = tests/test-model.c $(T_HELPERS)
tests_test_model_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_model_LDADD = $(T_MEMB_LDADD)

# Replaces the process's allocator: keep it in a program of its own.
tests_test_alloc_SOURCES = tests/test-alloc.c tests/failalloc.c \
	tests/failalloc.h $(T_HELPERS)
tests_test_alloc_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_alloc_LDADD = $(T_MEMB_LDADD) -ldl

tests_test_concurrency_SOURCES = tests/test-concurrency.c $(T_HELPERS)
tests_test_concurrency_CPPFLAGS = $(T_MEMB_CPPFLAGS)
tests_test_concurrency_LDADD = $(T_MEMB_LDADD)
