# Hash flooding: a known secret lets an attacker fill one chain; a random
# one does not (issue "Reliability and security", item 5).
check_PROGRAMS += tests/test-flood
TESTS += tests/test-flood
tests_test_flood_SOURCES = tests/test-flood.c
tests_test_flood_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS) $(CHECK_CFLAGS)
tests_test_flood_LDADD = lib/libconntab.la $(URCU_LIBS) $(CHECK_LIBS)
