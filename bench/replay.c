/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pcap: a real capture replayed (--pcap FILE, read by capture.c before the
 * first size runs, so that a bad file fails at once). Every implementation
 * gets a table of the capture's flows (expected = flows); then every
 * packet's lookup in capture order, one at a time, and in batches of 16
 * consecutive packets: what a receive queue hands the stack in one burst.
 * Every packet's flow is in the table, so every lookup must hit.
 *
 * Rows at n = flows: pcap and pcap-b16 (ns per packet), the floor at that
 * size, and the capture's counts (impl "capture"): pcap-flows,
 * pcap-packets (looked up), pcap-skipped and one row per reason,
 * pcap-endpoints (distinct local address and port: how the --local and
 * SYN rules oriented the flows).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "capture.h"
#include "impl.h"
#include "objs.h"

static struct b_capture cap;

int b_pcap_load(void)
{
	return b_capture_read(&cap, b_opts.pcap, &b_opts.local);
}

static void count_row(const char *wl, double v, const char *unit)
{
	struct bench_result r = {
		.impl = "capture", .n = cap.nflows, .threads = 1,
		.value = v, .min = v, .max = v, .unit = unit,
		.ratio_kind = R_NONE,
	};

	snprintf(r.workload, sizeof(r.workload), "%s", wl);
	b_record(&r);
}

void b_run_pcap(const struct bench_impl **im, size_t ni)
{
	struct bench_table tb[B_MAX_IMPLS];
	struct conntab_key *stream;
	struct bench_keys k;
	char name[24];
	size_t i, n = cap.nflows;
	int v;

	if (!cap.nflows)
		return;
	count_row("pcap-flows", (double)n, "flows");
	count_row("pcap-packets", (double)cap.npkts, "packets");
	count_row("pcap-skipped", (double)cap.nskipped, "packets");
	for (v = PKT_OK + 1; v < PKT_VERDICTS; v++) {
		snprintf(name, sizeof(name), "pcap-%s",
			 b_pkt_verdict_names[v]);
		count_row(name, (double)cap.skipped[v], "packets");
	}
	count_row("pcap-endpoints", (double)cap.endpoints, "endpoints");
	b_floor(n);
	b_keys_adopt(&k, cap.flows, n, b_opts.seed);
	cap.flows = NULL;	/* k owns them now */
	stream = b_alloc(cap.npkts * sizeof(*stream));
	for (i = 0; i < cap.npkts; i++)
		stream[i] = k.keys[cap.pkt_flow[i]];
	for (i = 0; i < ni; i++) {
		b_progress("pcap %s: build", im[i]->name);
		b_objs_init(&tb[i].o, im[i], n);
		tb[i].im = im[i];
		tb[i].t = NULL;
		if (!b_budget_enter(B_W(W_PCAP), im[i], n,
				    "building its table"))
			continue;
		tb[i].t = b_build(im[i], &k, &tb[i].o, n);
		b_budget_leave();
	}
	b_stream_measure(tb, ni, W_PCAP, "pcap", stream, cap.npkts, n);
	for (i = 0; i < ni; i++)
		b_table_drop(&tb[i], B_W(W_PCAP), n);
	free(stream);
	b_keys_free(&k);
	b_capture_free(&cap);
}
