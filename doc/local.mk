# SPDX-License-Identifier: LGPL-2.1-or-later
# API reference: `make doc` runs Doxygen over the public header with
# doc/design.md as the main page, into $(builddir)/doc/html.
#
# Warnings are errors when asked: make doc DOXYGEN_WARN_AS_ERROR=YES
# (stop at the first) or =FAIL_ON_WARNINGS (report all, then fail);
# CI uses the latter.

EXTRA_DIST += doc/Doxyfile.in scripts/check-doc-links.sh

# The README's Quick start: its commands exist, the success lines it
# quotes are the ones they print last (scripts/check-readme.sh).
TESTS += scripts/check-readme.sh
EXTRA_DIST += scripts/check-readme.sh

# Every version, soname, file name, command and sample output README.md
# and doc/*.md quote, against this build (scripts/check-facts.sh): the
# soname from CONNTAB_LT_VERSION, the symbol versions from the map, the
# tarball from AC_INIT, each example command run, each sample's format
# against what the programs print. scripts/demo.sh's last step is the awk
# program it runs too.
TESTS += scripts/check-facts.sh
EXTRA_DIST += scripts/check-facts.sh scripts/demo-summary.awk

# Installed as plain text for readers without the HTML reference, in the
# layout of the source tree: $(docdir)/README.md, $(docdir)/doc/*.md and
# the figures they show, $(docdir)/examples/ (examples/local.mk), so that
# every relative link of the README (and of the pages it links) works
# where it is installed too. `make check` follows them in the source
# tree, `make installcheck` in $(DESTDIR)$(docdir): a link to a file that
# is not installed fails.
dist_doc_DATA = README.md LICENSE
nobase_dist_doc_DATA = doc/design.md doc/exthash.md doc/performance.md \
	doc/releasing.md doc/dpdk.md doc/lookup-vs-n.svg doc/real-traffic.svg

check-local: check-doc-links
check-doc-links:
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/scripts/check-doc-links.sh \
		$(top_srcdir)/README.md >/dev/null
installcheck-local: installcheck-doc-links
installcheck-doc-links:
	$(AM_V_at)$(SHELL) $(top_srcdir)/scripts/check-doc-links.sh \
		'$(DESTDIR)$(docdir)/README.md'
.PHONY: check-doc-links installcheck-doc-links

DOXYGEN_WARN_AS_ERROR = NO

# Always rerun (it takes a second), so that a second `make doc` with
# warnings as errors still checks.
.PHONY: doc
if HAVE_DOXYGEN
doc: doc/Doxyfile
	$(AM_V_GEN)rm -rf doc/html && \
	DOXYGEN_WARN_AS_ERROR=$(DOXYGEN_WARN_AS_ERROR) $(DOXYGEN) doc/Doxyfile
else
doc:
	@echo "doxygen was not found by configure: install it and rerun configure" >&2
	@exit 1
endif

clean-local: clean-doc
clean-doc:
	-rm -rf doc/html
.PHONY: clean-doc
