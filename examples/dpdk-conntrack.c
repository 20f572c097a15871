/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dpdk-conntrack: connection tracking in a DPDK pipeline, with one conntab
 * table that every worker lcore shares (doc/dpdk.md runs it).
 *
 *   dpdk-conntrack [EAL options] -- [options]
 *
 * EAL options come first, as every DPDK application takes them; ours
 * after "--", and they are read before the EAL starts, so that a wrong
 * one fails at once and --help needs no memory or devices.
 *
 * The main lcore receives from the port and hands each tracked packet to
 * a worker by a symmetric hash of its flow (both directions to the same
 * worker) over single-producer, single-consumer rte_rings; with RSS (a
 * port with a queue per worker and a symmetric Toeplitz key) the workers
 * receive for themselves and the main lcore only waits. dpdk-worker.c is
 * the workers' loop.
 *
 * Exit status: 0; 1 for a failure once running; 2 for a command-line
 * error; 3 when the EAL cannot start (no memory, no permission: the test
 * skips then).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf_dyn.h>
#include <rte_pause.h>
#include <rte_random.h>
#include <rte_ring.h>

#include "dpdk-conntrack.h"
#include "args.h"

#define EXIT_EAL	3

/* Descriptors per RX queue and slots per worker ring. */
#define RX_DESC		1024
#define RING_SIZE	1024
#define POOL_CACHE	256

bool ct_stop;
bool ct_rx_done;

static const char usage[] =
	"usage: dpdk-conntrack [EAL options] -- [options]\n"
	"Tracks the TCP and UDP connections a port receives, in one conntab\n"
	"table shared by the worker lcores (every lcore but the main one).\n"
	"EAL options as for any DPDK application: -l 0-2 (main + 2 workers),\n"
	"-a PCI, or --no-huge --no-pci --vdev net_pcap0,rx_pcap=FILE.\n"
	"Options (after --):\n"
	"  --port N           port id (default 0)\n"
	"  --backend NAME     table backend (default split; --list-backends)\n"
	"  --max-conns N      cap the table, evicting (default 0: no cap)\n"
	"  --expected N       sizing hint (default 65536)\n"
	"  --udp-timeout S    idle UDP flows expire after S seconds (30)\n"
	"  --tcp-timeout S    idle TCP connections (432000)\n"
	"  --syn-timeout S    unanswered or unfinished handshakes (120)\n"
	"  --tw-timeout S     TIME_WAIT (120)\n"
	"  --scan-budget N    nodes each loop scans for expiry (64)\n"
	"  --clock tsc|capture  expiry by the TSC, or by RX timestamps\n"
	"                     (net_pcap: the capture's times) (default tsc)\n"
	"  --dispatch auto|ring|rss  rings from the main lcore, or a queue\n"
	"                     per worker (auto: rss when the port has them)\n"
	"  --exit-on-eof      stop when the port stays empty (a capture)\n"
	"  --json             the counts as JSON\n"
	"  --list-backends    print the backends this library has\n"
	"  --help\n"
	"Counts go to stdout at the end (SIGINT, SIGTERM, or --exit-on-eof).\n"
	"Exit status: 0, 1 on failure, 2 for a bad option, 3 when the EAL\n"
	"cannot start.\n";

static void on_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&ct_stop, true, __ATOMIC_RELAXED);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", ARGS_PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define NS	1000000000ull
/* The longest timeout: ten years, far from overflowing ns in 64 bits. */
#define MAX_S	(10ull * 366 * 24 * 3600)

static void parse_app(int argc, char **argv, struct ct_config *cfg)
{
	enum {
		O_PORT = 1, O_BACKEND, O_MAX, O_EXPECTED, O_UDP, O_TCP,
		O_SYN, O_TW, O_BUDGET, O_CLOCK, O_DISPATCH, O_EOF, O_JSON,
		O_LIST, O_HELP,
	};
	static const struct option lopts[] = {
		{ "port", required_argument, NULL, O_PORT },
		{ "backend", required_argument, NULL, O_BACKEND },
		{ "max-conns", required_argument, NULL, O_MAX },
		{ "expected", required_argument, NULL, O_EXPECTED },
		{ "udp-timeout", required_argument, NULL, O_UDP },
		{ "tcp-timeout", required_argument, NULL, O_TCP },
		{ "syn-timeout", required_argument, NULL, O_SYN },
		{ "tw-timeout", required_argument, NULL, O_TW },
		{ "scan-budget", required_argument, NULL, O_BUDGET },
		{ "clock", required_argument, NULL, O_CLOCK },
		{ "dispatch", required_argument, NULL, O_DISPATCH },
		{ "exit-on-eof", no_argument, NULL, O_EOF },
		{ "json", no_argument, NULL, O_JSON },
		{ "list-backends", no_argument, NULL, O_LIST },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = args_next(argc, argv, lopts)) != -1) {
		switch (c) {
		case O_PORT:
			cfg->port = (uint16_t)args_num("--port", optarg, 0,
						       RTE_MAX_ETHPORTS - 1,
						       "a port id");
			break;
		case O_BACKEND:
			cfg->backend = args_backend("--backend", optarg);
			break;
		case O_MAX:
			cfg->max_conns = args_num("--max-conns", optarg, 0,
						  CONNTAB_MAX_EXPECTED,
						  "a connection count");
			break;
		case O_EXPECTED:
			cfg->expected = args_num("--expected", optarg, 1,
						 CONNTAB_MAX_EXPECTED,
						 "a connection count");
			break;
		case O_UDP:
			cfg->udp_ns = NS * args_num("--udp-timeout", optarg,
						    0, MAX_S, "seconds");
			break;
		case O_TCP:
			cfg->tcp_ns = NS * args_num("--tcp-timeout", optarg,
						    0, MAX_S, "seconds");
			break;
		case O_SYN:
			cfg->syn_ns = NS * args_num("--syn-timeout", optarg,
						    0, MAX_S, "seconds");
			break;
		case O_TW:
			cfg->tw_ns = NS * args_num("--tw-timeout", optarg,
						   0, MAX_S, "seconds");
			break;
		case O_BUDGET:
			cfg->scan_budget = (unsigned int)args_num(
				"--scan-budget", optarg, 1, 1u << 20,
				"a node count");
			break;
		case O_CLOCK:
			if (!strcmp(optarg, "tsc"))
				cfg->clock = CT_CLOCK_TSC;
			else if (!strcmp(optarg, "capture"))
				cfg->clock = CT_CLOCK_CAPTURE;
			else
				args_fail("--clock", "'%s' is not tsc or "
					  "capture", optarg);
			break;
		case O_DISPATCH:
			if (!strcmp(optarg, "auto"))
				cfg->dispatch = CT_DISPATCH_AUTO;
			else if (!strcmp(optarg, "ring"))
				cfg->dispatch = CT_DISPATCH_RING;
			else if (!strcmp(optarg, "rss"))
				cfg->dispatch = CT_DISPATCH_RSS;
			else
				args_fail("--dispatch", "'%s' is not auto, "
					  "ring or rss", optarg);
			break;
		case O_EOF:
			cfg->exit_on_eof = true;
			break;
		case O_JSON:
			cfg->json = true;
			break;
		case O_LIST:
			args_list_backends();
		case O_HELP:
			args_help(usage);
		}
	}
	args_end(argc, argv);
}

/*
 * A Toeplitz key of one repeated 16-bit word makes RSS symmetric: the
 * hash of (a, b) equals that of (b, a), so both directions of a flow
 * reach one queue, as our ownership rule needs.
 */
static uint8_t sym_rss_key[40];

/* Configure and start @cfg->port with @nq RX queues from @pool. */
static void port_start(struct ct_config *cfg, uint16_t nq,
		       struct rte_mempool *pool,
		       const struct rte_eth_dev_info *info)
{
	struct rte_eth_conf conf;
	uint16_t q, nrx = RX_DESC, ntx = 0;
	int ret;

	memset(&conf, 0, sizeof(conf));
	if (cfg->dispatch == CT_DISPATCH_RSS) {
		for (q = 0; q < sizeof(sym_rss_key); q += 2) {
			sym_rss_key[q] = 0x6d;
			sym_rss_key[q + 1] = 0x5a;
		}
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_key = sym_rss_key;
		conf.rx_adv_conf.rss_conf.rss_key_len = sizeof(sym_rss_key);
		conf.rx_adv_conf.rss_conf.rss_hf = info->flow_type_rss_offloads &
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
	}
	/* Receive only: no TX queue (a forwarding pipeline would add them). */
	ret = rte_eth_dev_configure(cfg->port, nq, 0, &conf);
	if (ret)
		die("port %u: configure: %s", cfg->port, rte_strerror(-ret));
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(cfg->port, &nrx, &ntx);
	if (ret)
		die("port %u: descriptors: %s", cfg->port, rte_strerror(-ret));
	for (q = 0; q < nq; q++) {
		ret = rte_eth_rx_queue_setup(cfg->port, q, nrx,
					     rte_eth_dev_socket_id(cfg->port),
					     NULL, pool);
		if (ret)
			die("port %u: RX queue %u: %s", cfg->port, q,
			    rte_strerror(-ret));
	}
	ret = rte_eth_dev_start(cfg->port);
	if (ret)
		die("port %u: start: %s", cfg->port, rte_strerror(-ret));
	/* A tap on a real port sees others' traffic too; pcap ignores it. */
	rte_eth_promiscuous_enable(cfg->port);
}

/*
 * All @n of @p into @r, waiting for room: a full ring holds the port
 * back. Returns the TSC cycles spent waiting, which are not work.
 */
static uint64_t enqueue_all(struct rte_ring *r, struct rte_mbuf **p,
			    unsigned int n, struct ct_stats *st)
{
	unsigned int sent = 0;
	uint64_t t0 = 0;

	for (;;) {
		sent += rte_ring_enqueue_burst(r, (void **)p + sent, n - sent,
					       NULL);
		if (sent == n)
			return t0 ? rte_rdtsc() - t0 : 0;
		if (!t0)
			t0 = rte_rdtsc();
		st->ring_full++;
		rte_pause();
	}
}

/*
 * The main lcore with rings: receive, parse, spread. A worker whose ring
 * is full makes it wait rather than drop: on a real port its RX queue
 * then fills and the port counts the loss (imissed, in the report); on a
 * capture nothing is lost, and every packet is counted once.
 */
static void rx_loop(const struct ct_config *cfg, struct ct_worker *w,
		    struct ct_stats *st)
{
	static struct rte_mbuf *out[CT_MAX_WORKERS][CT_BURST];
	struct rte_mbuf *pkts[CT_BURST];
	unsigned int cnt[CT_MAX_WORKERS] = { 0 }, i, k, n;
	uint64_t idle = 0, t0, waited;
	enum ct_verdict v;

	while (!__atomic_load_n(&ct_stop, __ATOMIC_RELAXED)) {
		n = rte_eth_rx_burst(cfg->port, 0, pkts, CT_BURST);
		if (!n) {
			if (cfg->exit_on_eof && ++idle >= CT_EOF_POLLS)
				break;
			rte_pause();
			continue;
		}
		idle = 0;
		waited = 0;
		t0 = rte_rdtsc();
		st->packets += n;
		st->bursts++;
		for (i = 0; i < n; i++) {
			v = ct_prepare(cfg, pkts[i]);
			if (v != CT_OK) {
				st->unparsed[v]++;
				rte_pktmbuf_free(pkts[i]);
				continue;
			}
			k = (unsigned int)(((uint64_t)ct_meta(pkts[i])->hash *
					    cfg->workers) >> 32);
			out[k][cnt[k]++] = pkts[i];
		}
		for (k = 0; k < cfg->workers; k++) {
			if (!cnt[k])
				continue;
			waited += enqueue_all(w[k].ring, out[k], cnt[k], st);
			cnt[k] = 0;
		}
		st->busy_cycles += rte_rdtsc() - t0 - waited;
	}
	__atomic_store_n(&ct_rx_done, true, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
	struct ct_config cfg = {
		.backend = CONNTAB_SPLIT, .expected = 65536,
		.udp_ns = 30 * NS, .tcp_ns = 432000 * NS, .syn_ns = 120 * NS,
		.tw_ns = 120 * NS, .scan_budget = 64, .ts_offset = -1,
	};
	static struct ct_worker w[CT_MAX_WORKERS];
	struct conntab_config tc = { 0 };
	struct rte_eth_dev_info info;
	struct rte_eth_stats ps;
	struct ct_report rep = { 0 };
	struct ct_stats rx = { 0 };
	struct rte_mempool *pool;
	char name[RTE_ETH_NAME_MAX_LEN] = "";
	unsigned int lcore, i, nmbufs;
	int eal_argc = argc, ret;
	uint16_t nq;

	/* Ours after "--", read first; the EAL's before it. */
	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--")) {
			eal_argc = (int)i;
			argv[i] = argv[0];
			parse_app(argc - (int)i, argv + i, &cfg);
			break;
		}
	}
	optind = 0;	/* the EAL's getopt starts afresh */
	ret = rte_eal_init(eal_argc, argv);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot initialise the EAL: %s\n",
			ARGS_PROG, rte_strerror(rte_errno));
		return EXIT_EAL;
	}
	if (ret + 1 < eal_argc)
		die("'%s': not an EAL option (ours go after --)",
		    argv[ret + 1]);

	cfg.workers = rte_lcore_count() - 1;
	if (!cfg.workers)
		die("no worker lcore: give the main lcore and one or more "
		    "workers (-l 0-1)");
	if (cfg.workers > CT_MAX_WORKERS)
		die("%u workers: at most %u", cfg.workers, CT_MAX_WORKERS);
	if (!rte_eth_dev_is_valid_port(cfg.port))
		die("no port %u (a device: -a PCI, or --vdev)", cfg.port);
	ret = rte_eth_dev_info_get(cfg.port, &info);
	if (ret)
		die("port %u: %s", cfg.port, rte_strerror(-ret));
	rte_eth_dev_get_name_by_port(cfg.port, name);

	/* RSS only with a queue per worker, and more than one worker. */
	if (cfg.dispatch == CT_DISPATCH_AUTO)
		cfg.dispatch = cfg.workers > 1 &&
			       info.max_rx_queues >= cfg.workers &&
			       (info.flow_type_rss_offloads & RTE_ETH_RSS_IP) ?
			       CT_DISPATCH_RSS : CT_DISPATCH_RING;
	if (cfg.dispatch == CT_DISPATCH_RSS &&
	    (info.max_rx_queues < cfg.workers ||
	     !(info.flow_type_rss_offloads & RTE_ETH_RSS_IP)))
		die("port %u (%s): no RSS over %u queues: --dispatch ring",
		    cfg.port, name, cfg.workers);
	/*
	 * net_pcap stamps every mbuf with its record's time, in
	 * microseconds, through the RX timestamp dynfield it registers
	 * (without announcing the offload). Other devices' stamps count in
	 * their own clock's units: the capture clock is net_pcap's only.
	 */
	if (cfg.clock == CT_CLOCK_CAPTURE) {
		int bit = rte_mbuf_dynflag_lookup(
			RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, NULL);

		cfg.ts_offset = rte_mbuf_dynfield_lookup(
			RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, NULL);
		if (strcmp(info.driver_name, "net_pcap") || bit < 0 ||
		    cfg.ts_offset < 0)
			die("port %u (%s): --clock capture needs net_pcap's "
			    "timestamps: --clock tsc", cfg.port, name);
		cfg.ts_flag = 1ull << bit;
	}
	cfg.seed = (uint32_t)rte_rand();
	nq = cfg.dispatch == CT_DISPATCH_RSS ? (uint16_t)cfg.workers : 1;

	/*
	 * Enough mbufs that the port never runs dry while the rings are
	 * full: every RX descriptor, every ring slot, and per lcore a cache
	 * and a burst in hand.
	 */
	nmbufs = nq * RX_DESC + RING_SIZE * cfg.workers +
		 rte_lcore_count() * (POOL_CACHE * 3 / 2 + CT_BURST);
	nmbufs = rte_align32pow2(nmbufs) - 1;
	pool = rte_pktmbuf_pool_create("ct_mbufs", nmbufs, POOL_CACHE,
				       RTE_ALIGN(sizeof(struct ct_meta),
						 RTE_MBUF_PRIV_ALIGN),
				       RTE_MBUF_DEFAULT_BUF_SIZE,
				       rte_socket_id());
	if (!pool)
		die("%u mbufs: %s (more memory: -m)", nmbufs,
		    rte_strerror(rte_errno));
	port_start(&cfg, nq, pool, &info);

	tc.backend = cfg.backend;
	tc.expected = cfg.expected;
	tc.max_entries = cfg.max_conns;
	cfg.table = conntab_create(&tc);
	if (!cfg.table)
		die("conntab_create: %s", strerror(errno));

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	i = 0;
	RTE_LCORE_FOREACH_WORKER(lcore) {
		w[i].id = i;
		w[i].lcore = lcore;
		w[i].cfg = &cfg;
		if (cfg.dispatch == CT_DISPATCH_RING) {
			char rn[RTE_RING_NAMESIZE];

			snprintf(rn, sizeof(rn), "ct_ring%u", i);
			w[i].ring = rte_ring_create(rn, RING_SIZE,
						    rte_socket_id(),
						    RING_F_SP_ENQ |
						    RING_F_SC_DEQ);
			if (!w[i].ring)
				die("ring %s: %s", rn,
				    rte_strerror(rte_errno));
		}
		i++;
	}
	i = 0;
	RTE_LCORE_FOREACH_WORKER(lcore) {
		ret = rte_eal_remote_launch(ct_worker_main, &w[i++], lcore);
		if (ret)
			die("lcore %u: launch: %s", lcore, rte_strerror(-ret));
	}
	if (cfg.dispatch == CT_DISPATCH_RING)
		rx_loop(&cfg, w, &rx);
	rte_eal_mp_wait_lcore();

	rep.cfg = &cfg;
	rep.port_name = name;
	rep.rx = cfg.dispatch == CT_DISPATCH_RING ? &rx : NULL;
	rep.w = w;
	rep.tsc_hz = rte_get_tsc_hz();
	conntab_stats(cfg.table, &rep.table);
	if (!rte_eth_stats_get(cfg.port, &ps)) {
		rep.port_ipackets = ps.ipackets;
		rep.port_imissed = ps.imissed;
		rep.port_nombuf = ps.rx_nombuf;
	}
	ct_report_print(stdout, &rep);
	fflush(stdout);

	/*
	 * No lcore uses the table now. rcu_barrier() runs the frees the
	 * workers queued (this thread is not a QSBR reader: it cannot hold
	 * the grace periods up), then the table goes with what it holds.
	 */
	rcu_barrier();
	conntab_destroy(cfg.table, ct_conn_release);
	rte_eth_dev_stop(cfg.port);
	rte_eth_dev_close(cfg.port);
	for (i = 0; i < cfg.workers; i++)
		rte_ring_free(w[i].ring);
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return 0;
}
