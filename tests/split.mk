# Targeted tests of the split backend (the parametrized contract suite in
# tests/local.mk covers every backend).
SPLIT_TEST_LDADD = lib/libconntab.la $(URCU_LIBS) $(PTHREAD_LIBS)

check_PROGRAMS += tests/test-split-contract
tests_test_split_contract_SOURCES = tests/test-split-contract.c
tests_test_split_contract_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
tests_test_split_contract_LDADD = $(SPLIT_TEST_LDADD)

TESTS += tests/test-split-contract

check_PROGRAMS += tests/test-split-move
tests_test_split_move_SOURCES = tests/test-split-move.c
tests_test_split_move_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
tests_test_split_move_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
tests_test_split_move_LDADD = $(SPLIT_TEST_LDADD)

TESTS += tests/test-split-move
