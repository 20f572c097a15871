# SPDX-License-Identifier: LGPL-2.1-or-later
# The ABI baseline: abi/libconntab.abi, libabigail's description (abidw)
# of the library of the last release, built as configure builds it by
# default (-g -O2). scripts/check-abi.sh compares the built library with
# it: a change to anything the baseline has fails unless the soname moved,
# additions are reported. Not part of make check (the baseline is of one
# architecture, and needs abigail-tools); .ci/run runs it.
#
#   make abi-check       compare lib/.libs/libconntab.so with the baseline
#   make abi-baseline    rewrite the baseline, at a release only
#                        (doc/releasing.md)

EXTRA_DIST += abi/libconntab.abi scripts/check-abi.sh

abi_args = $(top_srcdir)/abi/libconntab.abi lib/.libs/libconntab.so \
	$(top_srcdir)/include/conntab

abi-check: lib/libconntab.la
	$(AM_V_GEN)bash $(top_srcdir)/scripts/check-abi.sh check $(abi_args)

abi-baseline: lib/libconntab.la
	$(AM_V_GEN)bash $(top_srcdir)/scripts/check-abi.sh write $(abi_args)

.PHONY: abi-check abi-baseline
