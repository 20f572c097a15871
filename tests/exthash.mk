# CONNTAB_EXTHASH under online resizing (issue 4): growth and shrinking
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
