# SPDX-License-Identifier: LGPL-2.1-or-later
# API reference: `make doc` runs Doxygen over the public header with
# doc/design.md as the main page, into $(builddir)/doc/html.
#
# Warnings are errors when asked: make doc DOXYGEN_WARN_AS_ERROR=YES
# (stop at the first) or =FAIL_ON_WARNINGS (report all, then fail);
# CI uses the latter.

EXTRA_DIST += doc/Doxyfile.in doc/releasing.md doc/dpdk.md
# Installed as plain text beside examples/minimal.c, for readers without
# the HTML reference.
dist_doc_DATA = README.md doc/design.md doc/exthash.md
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
