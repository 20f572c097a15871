# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/minimal: the smallest complete embedding. Built by `make`, run
# by `make check`, its source installed with the docs, and rebuilt by
# `make installcheck` against the installed library with nothing but
# `pkg-config --cflags --libs conntab liburcu` (what README promises).

noinst_PROGRAMS += examples/minimal
examples_minimal_SOURCES = examples/minimal.c
examples_minimal_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
examples_minimal_LDADD = lib/libconntab.la $(URCU_LIBS)
TESTS += examples/minimal

examplesdir = $(docdir)/examples
dist_examples_DATA = examples/minimal.c

# DESTDIR installs keep the prefix inside the .pc file; pkg-config's
# sysroot prepends DESTDIR to the -I and -L paths it prints.
installcheck-local: installcheck-examples
installcheck-examples:
	$(AM_V_at)$(MKDIR_P) examples
	$(AM_V_CC)dest='$(DESTDIR)'; \
	pcpath='$(DESTDIR)$(libdir)/pkgconfig'$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}; \
	flags=`env PKG_CONFIG_PATH="$$pcpath" \
		$${dest:+PKG_CONFIG_SYSROOT_DIR="$$dest"} \
		$(PKG_CONFIG) --cflags --libs conntab liburcu` && \
	echo "  installcheck: cc minimal.c $$flags" && \
	$(CC) $(CFLAGS) $(SAN_CFLAGS) $(WARN_CFLAGS) -Werror \
		-o examples/minimal-installed \
		'$(DESTDIR)$(examplesdir)/minimal.c' $$flags
	$(AM_V_at)ldpath='$(DESTDIR)$(libdir)'$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}; \
		LD_LIBRARY_PATH="$$ldpath" ./examples/minimal-installed
.PHONY: installcheck-examples
CLEANFILES += examples/minimal-installed
