# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/minimal: the smallest complete embedding. Built by `make`, run
# by `make check`, its source installed with the docs, and rebuilt by
# `make installcheck` against the installed library with nothing but
# `pkg-config --cflags --libs conntab liburcu` (what README promises).

noinst_PROGRAMS += examples/minimal
examples_minimal_SOURCES = examples/minimal.c examples/args.h
examples_minimal_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
examples_minimal_LDADD = lib/libconntab.la $(URCU_LIBS)
TESTS += examples/minimal

# The servers: built by `make` (not installed as programs: they are
# sources to start from), their sources installed with the docs like
# minimal.c, and driven by real clients in `make check`.
noinst_PROGRAMS += examples/udp-flowd
examples_udp_flowd_SOURCES = examples/udp-flowd.c examples/args.h
examples_udp_flowd_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
examples_udp_flowd_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
examples_udp_flowd_LDADD = lib/libconntab.la $(URCU_LIBS) $(PTHREAD_LIBS)

# The UDP load balancer: Maglev, a port pool, and each flow's two
# directions as one conntab pair. maglev.h, like args.h, goes beside it.
noinst_PROGRAMS += examples/udp-lb
examples_udp_lb_SOURCES = examples/udp-lb.c examples/maglev.h \
	examples/args.h
examples_udp_lb_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
examples_udp_lb_LDADD = lib/libconntab.la $(URCU_LIBS)

# The test client needs no conntab: plain sockets, as a user's would be.
noinst_PROGRAMS += examples/udp-client
examples_udp_client_SOURCES = examples/udp-client.c examples/args.h

noinst_PROGRAMS += examples/tcp-conntrack
examples_tcp_conntrack_SOURCES = examples/tcp-conntrack.c examples/args.h
examples_tcp_conntrack_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_CFLAGS)
examples_tcp_conntrack_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
examples_tcp_conntrack_LDADD = lib/libconntab.la $(URCU_LIBS) $(PTHREAD_LIBS)

# Real clients: udp-client and socat, curl + jq + python3 and wrk. Each
# script skips (77) when one is missing; .ci/run installs them all.
TESTS += examples/test-udp-flowd.sh examples/test-tcp-conntrack.sh \
	examples/test-udp-lb.sh
EXTRA_DIST += examples/test-udp-flowd.sh examples/test-tcp-conntrack.sh \
	examples/test-udp-lb.sh

# The command lines (examples/args.h): --help, every kind of bad option,
# and a port of their own unless --reuseport. No client needed.
TESTS += examples/test-args.sh
EXTRA_DIST += examples/test-args.sh

# args.h, the option parsing they share, goes beside them: each builds
# from its one command line in that directory. udp-client.c too: the
# README's UDP walkthrough drives udp-flowd with it. The DPDK pipeline's
# sources too, built or not here: the README links them.
examplesdir = $(docdir)/examples
dist_examples_DATA = examples/minimal.c examples/udp-flowd.c \
	examples/udp-client.c examples/tcp-conntrack.c examples/udp-lb.c \
	examples/args.h examples/maglev.h \
	examples/dpdk-conntrack.c examples/dpdk-conntrack.h \
	examples/dpdk-parse.c examples/dpdk-worker.c examples/dpdk-stats.c

# DESTDIR installs keep the prefix inside the .pc file; pkg-config's
# sysroot prepends DESTDIR to the -I and -L paths it prints. Each installed
# example source is built as examples/NAME-installed; minimal runs, the
# servers go through their own tests (the scripts take the binaries to
# drive from the environment, udp-client included), with one backend: make
# check covers them all; test-args.sh checks every example's command line.
INSTALLCHECK_EXAMPLES = minimal udp-flowd udp-client tcp-conntrack udp-lb
installcheck_ld = $(DESTDIR)$(libdir)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}
installcheck_env = EXAMPLES_ONE_BACKEND=1 LD_LIBRARY_PATH="$(installcheck_ld)"
installcheck-local: installcheck-examples
installcheck-examples:
	$(AM_V_at)$(MKDIR_P) examples
	$(AM_V_CC)dest='$(DESTDIR)'; \
	pcpath='$(DESTDIR)$(libdir)/pkgconfig'; \
	pcpath=$$pcpath$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}; \
	flags=`env PKG_CONFIG_PATH="$$pcpath" \
		$${dest:+PKG_CONFIG_SYSROOT_DIR="$$dest"} \
		$(PKG_CONFIG) --cflags --libs conntab liburcu` && \
	for ex in $(INSTALLCHECK_EXAMPLES); do \
		echo "  installcheck: cc $$ex.c $$flags" && \
		$(CC) $(CFLAGS) $(SAN_CFLAGS) $(WARN_CFLAGS) -Werror \
			-o examples/$$ex-installed \
			"$(DESTDIR)$(examplesdir)/$$ex.c" $$flags || exit 1; \
	done
	$(AM_V_at)$(installcheck_env) ./examples/minimal-installed
	$(AM_V_at)$(installcheck_env) MINIMAL=examples/minimal-installed \
		UDP_FLOWD=examples/udp-flowd-installed \
		TCP_CONNTRACK=examples/tcp-conntrack-installed \
		UDP_CLIENT=examples/udp-client-installed \
		UDP_LB=examples/udp-lb-installed \
		$(SHELL) $(srcdir)/examples/test-args.sh
	$(AM_V_at)$(installcheck_env) UDP_FLOWD=examples/udp-flowd-installed \
		UDP_CLIENT=examples/udp-client-installed \
		$(SHELL) $(srcdir)/examples/test-udp-flowd.sh || test $$? = 77
	$(AM_V_at)$(installcheck_env) \
		TCP_CONNTRACK=examples/tcp-conntrack-installed \
		$(SHELL) $(srcdir)/examples/test-tcp-conntrack.sh || test $$? = 77
	$(AM_V_at)$(installcheck_env) UDP_LB=examples/udp-lb-installed \
		$(SHELL) $(srcdir)/examples/test-udp-lb.sh || test $$? = 77
.PHONY: installcheck-examples
CLEANFILES += $(INSTALLCHECK_EXAMPLES:%=examples/%-installed)

# The DPDK pipeline, when configure found libdpdk: an RX lcore, worker
# lcores and one QSBR table. Its test replays captures through net_pcap
# (no NIC, no hugepages) and skips (77) when the EAL cannot start here.
if HAVE_DPDK
noinst_PROGRAMS += examples/dpdk-conntrack
examples_dpdk_conntrack_SOURCES = examples/dpdk-conntrack.c \
	examples/dpdk-conntrack.h examples/dpdk-parse.c \
	examples/dpdk-worker.c examples/dpdk-stats.c examples/args.h
examples_dpdk_conntrack_CPPFLAGS = $(AM_CPPFLAGS) $(URCU_QSBR_CFLAGS) \
	$(DPDK_CFLAGS)
examples_dpdk_conntrack_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
examples_dpdk_conntrack_LDADD = lib/libconntab.la $(URCU_QSBR_LIBS) \
	$(DPDK_LIBS) $(PTHREAD_LIBS)
endif
# Not built (no libdpdk), or no EAL here: the test says so and skips.
TESTS += examples/test-dpdk-conntrack.sh
EXTRA_DIST += examples/test-dpdk-conntrack.sh
