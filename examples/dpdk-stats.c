/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The counts at the end of a run: one column per lcore (rx, then each
 * worker) and their total, as text or as JSON. One table of counters
 * serves both, so the two never disagree on a name.
 *
 * Accounting, which the test checks: total.packets (the port's packets,
 * counted where they were received) = the unparsed ones by reason +
 * total.lookups (one per tracked packet); lookups = hits + tcp_new +
 * udp_new + tcp_stray + insert_fail (a SYN that replaced a TIME_WAIT
 * node is a new connection, not a hit); tcp_new + udp_new = expired_* +
 * evicted + tcp_reuse (replaced) + the table's entries at the end.
 */
#include <stddef.h>
#include <string.h>

#include "dpdk-conntrack.h"

static const struct {
	const char *name;
	size_t off;
} counters[] = {
#define C(f) { #f, offsetof(struct ct_stats, f) }
	C(packets), C(bursts), C(lookups), C(hits),
	C(tcp_new), C(tcp_pickup), C(tcp_reuse),
	C(syn), C(synack), C(established), C(fin_client), C(fin_server),
	C(rst), C(timewait), C(tcp_stray), C(udp_new),
	C(expired_tcp), C(expired_udp), C(expired_tw), C(evicted),
	C(insert_fail), C(ring_full),
#undef C
};

#define NCOUNTERS	(sizeof(counters) / sizeof(counters[0]))

static uint64_t get(const struct ct_stats *st, size_t off)
{
	return *(const uint64_t *)(const void *)((const char *)st + off);
}

/* The column set: rx (with rings), the workers, the total. */
struct cols {
	const struct ct_stats *st[CT_MAX_WORKERS + 1];
	char name[CT_MAX_WORKERS + 1][24];
	double rate[CT_MAX_WORKERS + 2];	/* lookups per busy second */
	double prate[CT_MAX_WORKERS + 2];	/* packets per busy second */
	unsigned int n;
	struct ct_stats total;
};

static double per_s(uint64_t v, uint64_t cycles, uint64_t hz)
{
	return cycles ? (double)v * (double)hz / (double)cycles : 0;
}

static void collect(const struct ct_report *r, struct cols *c)
{
	unsigned int i, k;
	uint64_t *t = (uint64_t *)(void *)&c->total;

	memset(c, 0, sizeof(*c));
	if (r->rx) {
		c->st[c->n] = r->rx;
		snprintf(c->name[c->n++], sizeof(c->name[0]), "rx");
	}
	for (i = 0; i < r->cfg->workers; i++) {
		c->st[c->n] = &r->w[i].st;
		snprintf(c->name[c->n++], sizeof(c->name[0]), "worker%u", i);
	}
	for (i = 0; i < c->n; i++) {
		for (k = 0; k < sizeof(struct ct_stats) / sizeof(uint64_t);
		     k++)
			t[k] += ((const uint64_t *)(const void *)c->st[i])[k];
		c->rate[i] = per_s(c->st[i]->lookups, c->st[i]->busy_cycles,
				   r->tsc_hz);
		c->prate[i] = per_s(c->st[i]->packets, c->st[i]->busy_cycles,
				    r->tsc_hz);
		/* Workers run side by side: their rates add up. */
		if (c->st[i] != r->rx) {
			c->rate[c->n] += c->rate[i];
			c->prate[c->n] += c->prate[i];
		}
	}
	/*
	 * With rings each packet passes the rx lcore and a worker: the
	 * port's packets and bursts are the rx lcore's.
	 */
	if (r->rx) {
		c->total.packets = r->rx->packets;
		c->total.bursts = r->rx->bursts;
		c->prate[c->n] = c->prate[0];
	}
}

static const char *const dispatch_names[] = {
	[CT_DISPATCH_AUTO] = "auto",
	[CT_DISPATCH_RING] = "ring",
	[CT_DISPATCH_RSS] = "rss",
};

static void print_text(FILE *f, const struct ct_report *r,
		       const struct cols *c)
{
	const struct ct_stats *all[CT_MAX_WORKERS + 2];
	unsigned int i, k, v;

	for (i = 0; i < c->n; i++)
		all[i] = c->st[i];
	all[c->n] = &c->total;
	fprintf(f, "dpdk-conntrack: port %u (%s), %u worker%s, dispatch %s, "
		"backend %s, clock %s\n", r->cfg->port, r->port_name,
		r->cfg->workers, r->cfg->workers == 1 ? "" : "s",
		dispatch_names[r->cfg->dispatch],
		conntab_backend_name(r->cfg->backend),
		r->cfg->clock == CT_CLOCK_TSC ? "tsc" : "capture");
	fprintf(f, "%-22s", "counter");
	for (i = 0; i < c->n; i++)
		fprintf(f, " %12s", c->name[i]);
	fprintf(f, " %12s\n", "total");
	for (k = 0; k < NCOUNTERS; k++) {
		fprintf(f, "%-22s", counters[k].name);
		for (i = 0; i <= c->n; i++)
			fprintf(f, " %12llu", (unsigned long long)
				get(all[i], counters[k].off));
		fputc('\n', f);
	}
	for (v = CT_OK + 1; v < CT_VERDICTS; v++) {
		fprintf(f, "unparsed_%-13s", ct_verdict_names[v]);
		for (i = 0; i <= c->n; i++)
			fprintf(f, " %12llu",
				(unsigned long long)all[i]->unparsed[v]);
		fputc('\n', f);
	}
	fprintf(f, "%-22s", "packets_per_s");
	for (i = 0; i <= c->n; i++)
		fprintf(f, " %12.0f", c->prate[i]);
	fprintf(f, "\n%-22s", "lookups_per_s");
	for (i = 0; i <= c->n; i++)
		fprintf(f, " %12.0f", c->rate[i]);
	fprintf(f, "\ntable: %zu entries, %zu in TIME_WAIT\n",
		r->table.entries, r->table.timewait);
	fprintf(f, "port: %llu received, %llu missed, %llu without mbuf\n",
		(unsigned long long)r->port_ipackets,
		(unsigned long long)r->port_imissed,
		(unsigned long long)r->port_nombuf);
}

static void json_lcore(FILE *f, const char *name, const struct ct_stats *st,
		       double prate, double rate, const char *end)
{
	unsigned int k, v;

	/* The lcores inside "lcores", the total beside it. */
	fprintf(f, "%s\"%s\": {", strcmp(name, "total") ? "    " : "  ",
		name);
	for (k = 0; k < NCOUNTERS; k++)
		fprintf(f, "\"%s\": %llu, ", counters[k].name,
			(unsigned long long)get(st, counters[k].off));
	fprintf(f, "\"unparsed\": {");
	for (v = CT_OK + 1; v < CT_VERDICTS; v++)
		fprintf(f, "\"%s\": %llu%s", ct_verdict_names[v],
			(unsigned long long)st->unparsed[v],
			v + 1 < CT_VERDICTS ? ", " : "");
	fprintf(f, "}, \"packets_per_s\": %.0f, \"lookups_per_s\": %.0f}%s\n",
		prate, rate, end);
}

static void print_json(FILE *f, const struct ct_report *r,
		       const struct cols *c)
{
	unsigned int i;

	fprintf(f, "{\n  \"port\": %u, \"device\": \"%s\", \"workers\": %u, "
		"\"dispatch\": \"%s\", \"backend\": \"%s\", \"clock\": "
		"\"%s\",\n", r->cfg->port, r->port_name, r->cfg->workers,
		dispatch_names[r->cfg->dispatch],
		conntab_backend_name(r->cfg->backend),
		r->cfg->clock == CT_CLOCK_TSC ? "tsc" : "capture");
	fprintf(f, "  \"lcores\": {\n");
	for (i = 0; i < c->n; i++)
		json_lcore(f, c->name[i], c->st[i], c->prate[i], c->rate[i],
			   i + 1 < c->n ? "," : "");
	fprintf(f, "  },\n");
	json_lcore(f, "total", &c->total, c->prate[c->n], c->rate[c->n], ",");
	fprintf(f, "  \"table\": {\"entries\": %zu, \"timewait\": %zu},\n",
		r->table.entries, r->table.timewait);
	fprintf(f, "  \"port_stats\": {\"ipackets\": %llu, \"imissed\": %llu, "
		"\"rx_nombuf\": %llu}\n}\n",
		(unsigned long long)r->port_ipackets,
		(unsigned long long)r->port_imissed,
		(unsigned long long)r->port_nombuf);
}

void ct_report_print(FILE *f, const struct ct_report *r)
{
	static struct cols c;

	collect(r, &c);
	if (r->cfg->json)
		print_json(f, r, &c);
	else
		print_text(f, r, &c);
}
