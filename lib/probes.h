/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * USDT probes: static tracepoints of provider "conntab" that bpftrace,
 * perf probe, systemtap or gdb can attach to in a running process
 * (README, "Tracing").
 *
 * With <sys/sdt.h> (configure finds it; --disable-usdt turns it off) a
 * probe compiles to one nop at its site plus an ELF note
 * (.note.stapsdt, `readelf -n`) that names it and says where its
 * arguments live; the arguments are values the code already holds, so an
 * untraced probe costs the nop. A tracer that attaches turns the nop into
 * a breakpoint. Without <sys/sdt.h> CT_PROBE() is empty and its arguments
 * are not evaluated. No semaphores: nothing is computed only for a tracer.
 *
 * The probes and their arguments (tests/test-probes.sh fires each one):
 *
 *   chain_long(table, hash, length)
 *	an insert found the chain of its key at least CT_PROBE_CHAIN_LONG
 *	nodes long, counting the new node: a flood in progress, or a
 *	fixed-size table far beyond its sizing hint. length is the nodes a
 *	lookup of that bucket may pass (split: both of its chains).
 *   exthash_split(table, depth, segments)
 *	a segment finished splitting into two of local depth depth;
 *	segments live now.
 *   exthash_merge(table, depth, segments)
 *	two buddy segments were merged into one of local depth depth.
 *   exthash_dir_resize(table, old_slots, new_slots)
 *	a directory doubling or halving was published.
 *   evict(table, victim, node)
 *	conntab_insert_evict() unlinked victim to make room for node.
 *   scan_pass(table, cursor)
 *	a conntab_scan() call ended a pass (the cursor is zeroed again).
 */
#ifndef CT_PROBES_H
#define CT_PROBES_H

#ifdef HAVE_CONFIG_H
# include "config.h"	/* CONNTAB_USDT; a build without it has no probes */
#endif

#ifdef CONNTAB_USDT
# define SDT_USE_VARIADIC
# include <sys/sdt.h>
# define CT_PROBE(name, ...)	STAP_PROBEV(conntab, name, __VA_ARGS__)
#else
# define CT_PROBE(name, ...)	do { } while (0)
#endif

/*
 * An insert's chain length that fires chain_long. Random keys under the
 * table's secret give Poisson chains of mean about 1 (chained and split
 * at their sizing hint) to 1.5 (where exthash splits a segment): a chain
 * of 16 or more has probability 2e-14 at mean 1 and 8e-12 at mean 1.5,
 * so a table of 2^24 chains at mean 1.5 shows one about once in 7800
 * fillings, while a flood gets there with 16 keys. CONNTAB_CHAINED's
 * nodes go to a slot (length 1) or to their bucket's overflow chain, which
 * reaches 16 when the bucket holds 22, probability 3e-10 at 4 a bucket.
 * tests/test-probes.sh fills a table to its hint and checks that it
 * stays silent.
 */
#define CT_PROBE_CHAIN_LONG	16

/* Writer, after linking a node: the chain it went into has @len nodes. */
static inline void ct_probe_chain(const void *t, uint32_t hash, size_t len)
{
	if (len >= CT_PROBE_CHAIN_LONG)
		CT_PROBE(chain_long, t, hash, len);
}

#endif /* CT_PROBES_H */
