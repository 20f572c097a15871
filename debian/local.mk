# SPDX-License-Identifier: LGPL-2.1-or-later
# Debian packaging (debhelper, compat 13): libconntab3, libconntab-dev,
# conntab-bench. Shipped in the release tarball, so that a tarball builds
# .debs as a checkout does:
#   tar xf conntab-X.Y.Z.tar.gz && cd conntab-X.Y.Z && dpkg-buildpackage -us -uc -b
# .ci/run does exactly that, then runs lintian, installs the packages and
# builds examples/minimal.c against them with pkg-config.
EXTRA_DIST += debian/changelog debian/control debian/copyright \
	debian/rules debian/source/format debian/local.mk \
	debian/libconntab3.install debian/libconntab3.symbols \
	debian/libconntab-dev.install debian/conntab-bench.install \
	debian/not-installed
