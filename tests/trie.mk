# SPDX-License-Identifier: LGPL-2.1-or-later
# CONNTAB_TRIE: its own tests (adversarial key sets, prefix walks for every
# backend, concurrency) and its measurement against CONNTAB_CHAINED.
check_PROGRAMS += tests/test-trie
TESTS += tests/test-trie
tests_test_trie_SOURCES = tests/test-trie.c
tests_test_trie_CFLAGS = $(AM_CFLAGS) $(URCU_CFLAGS) $(CHECK_CFLAGS) \
	$(PTHREAD_CFLAGS)
tests_test_trie_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS) \
	$(PTHREAD_LIBS)

noinst_PROGRAMS += bench/trie-vs-chained
bench_trie_vs_chained_SOURCES = bench/trie-vs-chained.c
bench_trie_vs_chained_CFLAGS = $(AM_CFLAGS) $(URCU_CFLAGS) $(PTHREAD_CFLAGS)
bench_trie_vs_chained_LDADD = lib/libconntab.la $(URCU_LIBS) $(PTHREAD_LIBS)
