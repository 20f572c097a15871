/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer harness: the input is a program of table operations, every
 * result checked against a reference model; any mismatch aborts.
 *
 * Input: byte 0 picks the backend among the available ones (or
 * FUZZ_BACKEND=name fixes it) and the hash (SipHash, or AES where the CPU
 * has it), byte 1 the sizing hint, byte 2 the
 * max_entries cap (0 = none for values < 128), then one operation per
 * opcode byte with its arguments in the following bytes (0 once the input
 * is used up): insert, insert_recycle, insert_evict, remove and timewait
 * (in place and to another node), on the table and on a second one
 * ("nodes from another table"), lookup, lookup_batch, walk and walk_state
 * with callbacks that stop, remove or time-wait, a scan pass spread over
 * the other operations (one call per op, callbacks as the walk's), stats,
 * a grace period, and bad input (NULL
 * arguments, unknown families and backends, IPv4 keys with dirty padding,
 * bad states, random key text and sockaddrs). Keys come from a small set
 * that differ in one field, or raw from the input.
 *
 * Single thread, memb flavor, registered once. Nodes come from a fixed
 * pool; a removed node is reused only after synchronize_rcu(). Each input
 * ends with destroy, its release calls checked.
 *
 * Built with clang -fsanitize=fuzzer (tests/fuzz/run.sh, make fuzz), or
 * with -DFUZZ_STANDALONE into a program that replays files and
 * directories of inputs (make check replays the corpus that way).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>
#include <conntab/conntab.h>

#define NPOOL		48
#define NKEYIDS		64
#define MAXBATCH	40

enum { FREE, LINKED, RETIRED };

struct fnode {
	struct conntab_node node;
	int status;
	struct conntab *tab;		/* LINKED: which table */
	enum conntab_state state;
	struct conntab_key key;		/* LINKED: its key */
	int visits, released;
	/* The scan pass in progress on t (op_scan). */
	int scan_visits;		/* in this pass, under scan_key */
	int scan_stable;		/* linked in t since the pass began */
	struct conntab_key scan_key;
	long rank;			/* op_evict's rank of this node */
	int offered;			/* rank calls in one insert_evict */
};

static struct fnode pool[NPOOL];
static struct conntab *t, *u;
static struct conntab_cursor scan_cur;
static size_t max_entries;
static enum conntab_backend backends[8];
static size_t nbackends;
/* SipHash, and AES where the library runs it (the CPU has it). */
static enum conntab_hash hashes[2];
static size_t nhashes;
static int fixed_hash = -1;
static int fixed_backend = -1;

/* --- input ---------------------------------------------------------- */

static const uint8_t *in;
static size_t in_len, in_pos;
static unsigned long opno, inputs;

static uint8_t byte(void)
{
	return in_pos < in_len ? in[in_pos++] : 0;
}

static void raw(void *p, size_t n)
{
	uint8_t *b = p;

	while (n--)
		*b++ = byte();
}

#define FAIL(...) do {							\
	fprintf(stderr, "fuzz-ops: op %lu (input byte %zu): ", opno,	\
		in_pos);						\
	fprintf(stderr, __VA_ARGS__);					\
	fputc('\n', stderr);						\
	abort();							\
} while (0)

#define EXPECT_INT(got, want, what) do {				\
	int g_ = (got), w_ = (want);					\
	if (g_ != w_)							\
		FAIL("%s: %d, want %d", what, g_, w_);			\
} while (0)

/* --- keys ----------------------------------------------------------- */

/* Key number @id of 64 that differ pairwise in few fields. */
static void key_of_id(struct conntab_key *k, unsigned int id)
{
	uint32_t l = htonl(0xc0000201), r = htonl(0xc6336407 ^ (id >> 4 & 3));
	uint16_t rport = htons((uint16_t)(40000 + (id >> 3 & 1)));
	uint8_t proto = id & 2 ? IPPROTO_UDP : IPPROTO_TCP;

	if (id & 1) {
		struct in6_addr la = { 0 }, ra = { 0 };

		/* The IPv4 key's leading bytes: only the family differs. */
		memcpy(&la, &l, 4);
		memcpy(&ra, &r, 4);
		conntab_key_v6(k, proto, &la, htons(80), &ra, rport);
	} else {
		conntab_key_v4(k, proto, l, htons(80), r, rport);
	}
	k->zone = id & 4 ? 7 : 0;
}

/* A key from the input: mostly from the small set, sometimes raw. */
static void get_key(struct conntab_key *k)
{
	uint8_t b = byte(), mode;

	if (b < 224) {
		key_of_id(k, b % NKEYIDS);
		return;
	}
	mode = b & 3;
	memset(k, 0, sizeof(*k));
	raw(&k->zone, 2);
	raw(&k->proto, 1);
	raw(&k->lport, 2);
	raw(&k->rport, 2);
	switch (mode) {
	case 0:			/* clean IPv4 */
		k->family = AF_INET;
		raw(&k->laddr.v4, 4);
		raw(&k->raddr.v4, 4);
		break;
	case 1:
		k->family = AF_INET6;
		raw(&k->laddr, 16);
		raw(&k->raddr, 16);
		break;
	case 2:			/* IPv4 with whatever padding */
		k->family = AF_INET;
		raw(&k->laddr, 16);
		raw(&k->raddr, 16);
		break;
	default:		/* any family */
		raw(&k->family, 1);
		raw(&k->laddr, 16);
		raw(&k->raddr, 16);
		break;
	}
}

static int pad_clean(const union conntab_addr *a)
{
	static const uint8_t zero[12];

	return !memcmp(&a->bytes[4], zero, sizeof(zero));
}

static int key_valid(const struct conntab_key *k)
{
	if (k->family == AF_INET6)
		return 1;
	return k->family == AF_INET && pad_clean(&k->laddr) &&
	       pad_clean(&k->raddr);
}

/* --- model ---------------------------------------------------------- */

static struct fnode *fnode_of(struct conntab_node *n)
{
	struct fnode *f = (struct fnode *)(void *)n;

	if (f < pool || f >= pool + NPOOL || (char *)f !=
	    (char *)&pool[f - pool])
		FAIL("node %p is not from the pool", (void *)n);
	return f;
}

static int slot_in(struct conntab *tab, const struct conntab_key *k)
{
	int i;

	for (i = 0; i < NPOOL; i++)
		if (pool[i].status == LINKED && pool[i].tab == tab &&
		    !memcmp(&pool[i].key, k, sizeof(*k)))
			return i;
	return -1;
}

static size_t count(struct conntab *tab, size_t *tw)
{
	size_t n = 0;
	int i;

	*tw = 0;
	for (i = 0; i < NPOOL; i++) {
		if (pool[i].status != LINKED || pool[i].tab != tab)
			continue;
		n++;
		*tw += pool[i].state == CONNTAB_TIMEWAIT;
	}
	return n;
}

static void check_found(struct conntab_node *got, int slot, const char *who)
{
	if (slot < 0) {
		if (got)
			FAIL("%s: found %p, want nothing", who, (void *)got);
		return;
	}
	if (got != &pool[slot].node)
		FAIL("%s: found %p, want slot %d", who, (void *)got, slot);
	if (memcmp(conntab_node_key(got), &pool[slot].key,
		   sizeof(pool[slot].key)))
		FAIL("%s: node has another key", who);
	if (conntab_node_state(got) != pool[slot].state)
		FAIL("%s: state %d, want %d", who, conntab_node_state(got),
		     pool[slot].state);
}

/*
 * What a lookup of @k in @tab must give. A malformed key is in no table;
 * for an IPv4 key with dirty padding the library may also answer with the
 * node of the clean key (it compares the 4 address bytes only).
 */
static void check_lookup(struct conntab *tab, const struct conntab_key *k,
			 struct conntab_node *got, const char *who)
{
	struct conntab_key clean;

	if (key_valid(k)) {
		check_found(got, slot_in(tab, k), who);
		return;
	}
	if (!got)
		return;
	if (k->family != AF_INET)
		FAIL("%s: key of family %u found %p", who, k->family,
		     (void *)got);
	clean = *k;
	memset(&clean.laddr.bytes[4], 0, 12);
	memset(&clean.raddr.bytes[4], 0, 12);
	check_found(got, slot_in(tab, &clean), who);
}

/* Table intact: counts, and every node of the model found. */
static void check_table(struct conntab *tab, const char *who)
{
	struct conntab_stats st;
	size_t n, tw;
	int i;

	n = count(tab, &tw);
	conntab_stats(tab, &st);
	if (st.entries != n || st.timewait != tw)
		FAIL("%s: stats %zu entries %zu timewait, model %zu %zu", who,
		     st.entries, st.timewait, n, tw);
	rcu_read_lock();
	for (i = 0; i < NPOOL; i++)
		if (pool[i].status == LINKED && pool[i].tab == tab)
			check_found(conntab_lookup(tab, &pool[i].key), i, who);
	rcu_read_unlock();
}

/*
 * A node of t leaves it: not present for the whole scan pass any more,
 * so the pass may visit it or not (but at most once).
 */
static void unlinked(int slot)
{
	pool[slot].scan_stable = 0;
}

static void linked(int slot, struct conntab *tab, const struct conntab_key *k,
		   enum conntab_state st)
{
	/* Back with another key: another node for the scan's count. */
	if (memcmp(&pool[slot].scan_key, k, sizeof(*k)))
		pool[slot].scan_visits = 0;
	pool[slot].status = LINKED;
	pool[slot].tab = tab;
	pool[slot].key = *k;
	pool[slot].state = st;
}

/* --- operations ----------------------------------------------------- */

static void op_insert(struct conntab *tab, int recycle)
{
	int slot = byte() % NPOOL, h, want, null_rec = 0;
	struct conntab_node *rec = (struct conntab_node *)&rec;
	struct conntab_key k;
	size_t tw;

	get_key(&k);
	if (recycle)
		null_rec = byte() % 16 == 0;
	if (pool[slot].status == RETIRED)
		return;		/* not before a grace period */
	h = -1;
	if (null_rec || !key_valid(&k))
		want = -EINVAL;
	else if (pool[slot].status == LINKED)
		want = -EBUSY;
	else if ((h = slot_in(tab, &k)) >= 0)
		want = recycle && pool[h].state == CONNTAB_TIMEWAIT ?
		       0 : -EEXIST;
	else if (tab == t && max_entries && count(tab, &tw) >= max_entries)
		want = -ENOSPC;
	else
		want = 0;
	if (recycle)
		EXPECT_INT(conntab_insert_recycle(tab, &pool[slot].node, &k,
						  null_rec ? NULL : &rec),
			   want, "insert_recycle");
	else
		EXPECT_INT(conntab_insert(tab, &pool[slot].node, &k), want,
			   "insert");
	/* *recycled is NULL unless a TIME_WAIT node was replaced. */
	if (recycle && !null_rec) {
		if (!want && h >= 0) {
			if (rec != &pool[h].node)
				FAIL("recycled %p, want slot %d", (void *)rec,
				     h);
			pool[h].status = RETIRED;
			unlinked(h);
		} else if (rec) {
			FAIL("recycled %p, want NULL", (void *)rec);
		}
	}
	if (!want) {
		linked(slot, tab, &k, CONNTAB_ESTABLISHED);
		rcu_read_lock();
		check_found(conntab_lookup(tab, &k), slot,
			    "lookup after insert");
		rcu_read_unlock();
	}
}

static void op_remove(struct conntab *tab)
{
	int slot = byte() % NPOOL;
	int want = pool[slot].status == LINKED && pool[slot].tab == tab ?
		   0 : -ENOENT;

	EXPECT_INT(conntab_remove(tab, &pool[slot].node), want, "remove");
	if (!want) {
		pool[slot].status = RETIRED;
		unlinked(slot);
	}
}

static void op_timewait(struct conntab *tab, int in_place)
{
	int est = byte() % NPOOL, tw = in_place ? est : byte() % NPOOL, want;

	if (tw != est && pool[tw].status == RETIRED)
		return;		/* not before a grace period */
	if (pool[est].status != LINKED || pool[est].tab != tab)
		want = -ENOENT;
	else if (tw != est && pool[tw].status == LINKED)
		want = -EBUSY;
	else if (pool[est].state != CONNTAB_ESTABLISHED)
		want = -EINVAL;
	else
		want = 0;
	EXPECT_INT(conntab_timewait(tab, &pool[est].node, &pool[tw].node),
		   want, "timewait");
	if (want)
		return;
	if (tw == est) {
		pool[est].state = CONNTAB_TIMEWAIT;
	} else {
		linked(tw, tab, &pool[est].key, CONNTAB_TIMEWAIT);
		pool[est].status = RETIRED;
		unlinked(est);
	}
	rcu_read_lock();
	check_found(conntab_lookup(tab, &pool[tw].key), tw,
		    "lookup after timewait");
	rcu_read_unlock();
}

static void op_lookup(void)
{
	struct conntab_key k;

	get_key(&k);
	rcu_read_lock();
	check_lookup(t, &k, conntab_lookup(t, &k), "lookup");
	check_lookup(u, &k, conntab_lookup(u, &k), "lookup in other table");
	rcu_read_unlock();
}

static void op_lookup_batch(void)
{
	struct conntab_key keys[MAXBATCH];
	struct conntab_node *out[MAXBATCH + 1];
	size_t n = byte() % (MAXBATCH + 1), i, found, want = 0;

	for (i = 0; i < n; i++)
		get_key(&keys[i]);
	out[n] = (struct conntab_node *)&out;	/* must stay */
	rcu_read_lock();
	found = conntab_lookup_batch(t, keys, out, n);
	for (i = 0; i < n; i++) {
		check_lookup(t, &keys[i], out[i], "lookup_batch");
		want += out[i] != NULL;
	}
	rcu_read_unlock();
	if (found != want)
		FAIL("lookup_batch returned %zu, found %zu", found, want);
	if (out[n] != (struct conntab_node *)&out)
		FAIL("lookup_batch wrote beyond its %zu results", n);
}

struct walk {
	int state;		/* -1: every state */
	uint8_t mode;
	unsigned long visits;
};

static int walk_fn(struct conntab_node *n, void *arg)
{
	struct walk *w = arg;
	struct fnode *f = fnode_of(n);
	int slot = (int)(f - pool), act = w->mode & 3, k = w->mode >> 2;

	if (f->status != LINKED || f->tab != t)
		FAIL("walk: slot %d is not in the table (status %d)", slot,
		     f->status);
	if (f->visits++)
		FAIL("walk: slot %d visited twice", slot);
	if (w->state >= 0 && (int)f->state != w->state)
		FAIL("walk_state(%d): slot %d in state %d", w->state, slot,
		     f->state);
	check_found(n, slot_in(t, &f->key), "walk");
	w->visits++;
	switch (act) {
	case 1:			/* stop after k + 1 nodes */
		if (w->visits == (unsigned long)(k % 8) + 1)
			return 7;
		break;
	case 2:			/* remove some */
		if ((w->visits + (unsigned long)k) % 3 == 0) {
			EXPECT_INT(conntab_remove(t, n), 0, "remove in walk");
			f->status = RETIRED;
			unlinked(slot);
		}
		break;
	case 3:			/* time-wait some, in place */
		if ((w->visits + (unsigned long)k) % 2 == 0) {
			EXPECT_INT(conntab_timewait(t, n, n),
				   f->state == CONNTAB_ESTABLISHED ?
				   0 : -EINVAL, "timewait in walk");
			f->state = CONNTAB_TIMEWAIT;
		}
		break;
	}
	return 0;
}

static void op_walk(int filtered)
{
	struct walk w = { -1, 0, 0 };
	int before[NPOOL], ret, i, want;
	uint8_t sb = filtered ? byte() : 0;
	unsigned long expect = 0;

	w.mode = byte();
	if (filtered) {
		/* Mostly valid states, sometimes not. */
		w.state = sb < 240 ? sb & 1 : (int)(int8_t)sb;
		if (w.state != CONNTAB_ESTABLISHED &&
		    w.state != CONNTAB_TIMEWAIT) {
			rcu_read_lock();
			EXPECT_INT(conntab_walk_state(t, w.state, walk_fn, &w),
				   -EINVAL, "walk_state of a bad state");
			rcu_read_unlock();
			return;
		}
	}
	for (i = 0; i < NPOOL; i++) {
		pool[i].visits = 0;
		before[i] = pool[i].status == LINKED && pool[i].tab == t &&
			    (w.state < 0 || (int)pool[i].state == w.state);
		expect += before[i];
	}
	rcu_read_lock();
	ret = filtered ? conntab_walk_state(t, w.state, walk_fn, &w) :
			 conntab_walk(t, walk_fn, &w);
	rcu_read_unlock();
	want = (w.mode & 3) == 1 && expect > (unsigned long)((w.mode >> 2) % 8)
	       ? 7 : 0;
	EXPECT_INT(ret, want, "walk");
	if (want)
		return;
	/* Untouched nodes were present throughout: each seen once. */
	for (i = 0; i < NPOOL; i++)
		if (before[i] && pool[i].visits != 1)
			FAIL("walk: slot %d visited %d times", i,
			     pool[i].visits);
	if (w.visits != expect)
		FAIL("walk visited %lu nodes, want %lu", w.visits, expect);
}

/*
 * conntab_scan() on t, one call: the pass runs across the operations
 * between its calls. A visited node must be in t, visited at most once
 * per pass (per key, if its slot came back with another); at the end of
 * the pass every node linked in t since the pass began was visited once.
 */
struct scan {
	uint8_t mode;
	unsigned long calls;
	size_t budget;
	int stopped;		/* the callback's nonzero value, or 0 */
};

static int scan_fn(struct conntab_node *n, void *arg)
{
	struct scan *sc = arg;
	struct fnode *f = fnode_of(n);
	int slot = (int)(f - pool), act = sc->mode & 3;

	if (f->status != LINKED || f->tab != t)
		FAIL("scan: slot %d is not in the table (status %d)", slot,
		     f->status);
	check_found(n, slot_in(t, &f->key), "scan");
	if (f->scan_visits++)
		FAIL("scan: slot %d visited twice in one pass", slot);
	f->scan_key = f->key;
	if (++sc->calls > sc->budget)
		FAIL("scan: %lu callbacks, budget %zu", sc->calls, sc->budget);
	switch (act) {
	case 1:			/* stop at the k-th, with 1 or -ENOENT */
		if (sc->calls == (unsigned long)(sc->mode >> 2) % 5 + 1) {
			sc->stopped = sc->mode & 0x80 ? 1 : -ENOENT;
			return sc->stopped;
		}
		break;
	case 2:			/* remove some */
		if ((sc->calls + (sc->mode >> 2)) % 3 == 0) {
			EXPECT_INT(conntab_remove(t, n), 0, "remove in scan");
			f->status = RETIRED;
			unlinked(slot);
		}
		break;
	case 3:			/* time-wait some, in place */
		if ((sc->calls + (sc->mode >> 2)) % 2 == 0) {
			EXPECT_INT(conntab_timewait(t, n, n),
				   f->state == CONNTAB_ESTABLISHED ?
				   0 : -EINVAL, "timewait in scan");
			f->state = CONNTAB_TIMEWAIT;
		}
		break;
	}
	return 0;
}

static void scan_begin(void)
{
	int i;

	for (i = 0; i < NPOOL; i++) {
		pool[i].scan_visits = 0;
		pool[i].scan_stable = pool[i].status == LINKED &&
				      pool[i].tab == t;
		memset(&pool[i].scan_key, 0, sizeof(pool[i].scan_key));
	}
}

static void op_scan(void)
{
	static const struct conntab_cursor zero;
	struct scan sc = { 0 };
	uint8_t b = byte();
	int ret, i;

	sc.mode = byte();
	sc.budget = b < 200 ? (size_t)b % 24 : (size_t)1 << (b % 40);
	if (!memcmp(&scan_cur, &zero, sizeof(zero)))
		scan_begin();
	rcu_read_lock();
	ret = conntab_scan(t, &scan_cur, sc.budget, scan_fn, &sc);
	rcu_read_unlock();
	if (!sc.budget) {
		EXPECT_INT(ret, -EINVAL, "scan with budget 0");
		return;
	}
	if (sc.stopped) {
		/* fn's value, 1 included: the pass goes on. */
		EXPECT_INT(ret, sc.stopped, "scan stopped by fn");
		if (conntab_cursor_done(&scan_cur))
			FAIL("scan: cursor zeroed by a callback's stop");
		return;
	}
	if (ret != 0 && ret != 1)
		FAIL("scan returned %d", ret);
	if (ret == 0 && sc.calls > sc.budget)
		FAIL("scan: %lu callbacks for budget %zu", sc.calls,
		     sc.budget);
	if (ret == 0)
		return;
	if (memcmp(&scan_cur, &zero, sizeof(zero)))
		FAIL("scan: cursor not zeroed at the end of the pass");
	for (i = 0; i < NPOOL; i++)
		if (pool[i].scan_stable && pool[i].scan_visits != 1)
			FAIL("scan: slot %d present for the whole pass, "
			     "visited %d times", i, pool[i].scan_visits);
}

/*
 * conntab_insert_evict(): as op_insert, and at the cap the victim must be
 * a node of t of the largest non-negative rank offered, out of at least
 * min(8, entries) offered; -ENOSPC only when every one offered refused.
 */
struct evict {
	int offered;
	long top;
};

static long rank_fn(struct conntab_node *n, void *arg)
{
	struct evict *e = arg;
	struct fnode *f = fnode_of(n);

	if (f->status != LINKED || f->tab != t)
		FAIL("rank: slot %ld is not in the table",
		     (long)(f - pool));
	if (f->offered++)
		FAIL("rank: slot %ld offered twice", (long)(f - pool));
	e->offered++;
	if (f->rank > e->top)
		e->top = f->rank;
	return f->rank;
}

static void op_evict(struct conntab *tab)
{
	int slot = byte() % NPOOL, i, want, full = 0;
	struct conntab_node *ev = (struct conntab_node *)&ev;
	uint8_t salt = byte();
	struct evict e = { 0, -1 };
	struct conntab_key k;
	size_t n = 0, tw;

	get_key(&k);
	if (pool[slot].status == RETIRED)
		return;		/* not before a grace period */
	for (i = 0; i < NPOOL; i++) {
		/* Some refuse (negative), the others rank by slot. */
		pool[i].rank = (long)(int8_t)(uint8_t)(i * 37 + salt);
		pool[i].offered = 0;
	}
	if (!key_valid(&k)) {
		want = -EINVAL;
	} else if (pool[slot].status == LINKED) {
		want = -EBUSY;
	} else if (slot_in(tab, &k) >= 0) {
		want = -EEXIST;
	} else if (tab == t && max_entries &&
		   (n = count(tab, &tw)) >= max_entries) {
		full = 1;
		want = 0;	/* or -ENOSPC: see below */
	} else {
		want = 0;
	}
	i = conntab_insert_evict(tab, &pool[slot].node, &k, rank_fn, &e, &ev);
	if (ev == (struct conntab_node *)&ev)
		FAIL("insert_evict left *evicted unset");
	if (!full) {
		EXPECT_INT(i, want, "insert_evict");
		if (ev)
			FAIL("insert_evict evicted %p below the cap",
			     (void *)ev);
		if (e.offered)
			FAIL("insert_evict ranked below the cap");
	} else {
		if ((size_t)e.offered < (n < 8 ? n : 8))
			FAIL("insert_evict offered %d of %zu", e.offered, n);
		EXPECT_INT(i, e.top < 0 ? -ENOSPC : 0, "insert_evict at cap");
	}
	if (i)
		return;
	if (full) {
		struct fnode *v = fnode_of(ev);

		if (v->rank != e.top)
			FAIL("evicted rank %ld, top offered %ld", v->rank,
			     e.top);
		v->status = RETIRED;
		unlinked((int)(v - pool));
		rcu_read_lock();
		check_found(conntab_lookup(t, &v->key), -1,
			    "lookup of the evicted");
		rcu_read_unlock();
	}
	linked(slot, tab, &k, CONNTAB_ESTABLISHED);
	rcu_read_lock();
	check_found(conntab_lookup(tab, &k), slot, "lookup after evict");
	rcu_read_unlock();
}

static void op_grace(void)
{
	int i;

	synchronize_rcu();
	for (i = 0; i < NPOOL; i++) {
		if (pool[i].status != RETIRED)
			continue;
		conntab_node_init(&pool[i].node);
		pool[i].status = FREE;
	}
}

static int dummy_fn(struct conntab_node *n, void *arg)
{
	return 0;
}

/* Bad arguments: a clear errno, nothing changes. */
static void op_bad(void)
{
	uint8_t sub = byte();
	int slot = byte() % NPOOL;
	struct conntab_node *n = &pool[slot].node, *rec, *out[2];
	struct conntab_config cfg = { 0 };
	struct conntab_stats st;
	struct conntab_key k;
	char buf[80];
	int r, len;

	get_key(&k);
	switch (sub % 12) {
	case 0:
		EXPECT_INT(conntab_insert(NULL, n, &k), -EINVAL,
			   "insert(NULL)");
		EXPECT_INT(conntab_insert(t, NULL, &k), -EINVAL,
			   "insert(node NULL)");
		EXPECT_INT(conntab_insert(t, n, NULL), -EINVAL,
			   "insert(key NULL)");
		break;
	case 1:
		EXPECT_INT(conntab_insert_recycle(NULL, n, &k, &rec), -EINVAL,
			   "insert_recycle(NULL)");
		EXPECT_INT(conntab_insert_recycle(t, NULL, &k, &rec), -EINVAL,
			   "insert_recycle(node NULL)");
		EXPECT_INT(conntab_insert_recycle(t, n, NULL, &rec), -EINVAL,
			   "insert_recycle(key NULL)");
		break;
	case 2:
		EXPECT_INT(conntab_remove(NULL, n), -EINVAL, "remove(NULL)");
		EXPECT_INT(conntab_remove(t, NULL), -EINVAL,
			   "remove(node NULL)");
		break;
	case 3:
		EXPECT_INT(conntab_timewait(NULL, n, n), -EINVAL,
			   "timewait(NULL)");
		EXPECT_INT(conntab_timewait(t, NULL, n), -EINVAL,
			   "timewait(est NULL)");
		EXPECT_INT(conntab_timewait(t, n, NULL), -EINVAL,
			   "timewait(tw NULL)");
		break;
	case 4:
		rcu_read_lock();
		if (conntab_lookup(NULL, &k) || conntab_lookup(t, NULL))
			FAIL("lookup with NULL found something");
		if (conntab_lookup_batch(NULL, &k, out, 1) ||
		    conntab_lookup_batch(t, NULL, out, 1) ||
		    conntab_lookup_batch(t, &k, NULL, 1) ||
		    conntab_lookup_batch(t, &k, out, 0))
			FAIL("lookup_batch with NULL or 0 found something");
		rcu_read_unlock();
		break;
	case 5:
		rcu_read_lock();
		EXPECT_INT(conntab_walk(NULL, dummy_fn, NULL), -EINVAL,
			   "walk(NULL)");
		EXPECT_INT(conntab_walk(t, NULL, NULL), -EINVAL,
			   "walk(fn NULL)");
		EXPECT_INT(conntab_walk_state(NULL, CONNTAB_TIMEWAIT, dummy_fn,
					      NULL), -EINVAL,
			   "walk_state(NULL)");
		EXPECT_INT(conntab_walk_state(t, CONNTAB_TIMEWAIT, NULL, NULL),
			   -EINVAL, "walk_state(fn NULL)");
		rcu_read_unlock();
		break;
	case 6:
		memset(&st, 0xff, sizeof(st));
		conntab_stats(NULL, &st);
		if (st.entries || st.timewait || st.buckets || st.memory ||
		    st.max_depth || st.resizes)
			FAIL("stats(NULL) not zeroed");
		conntab_stats(t, NULL);
		conntab_destroy(NULL, NULL);
		break;
	case 7:
		errno = 0;
		if (conntab_create_flavor(NULL, &rcu_flavor) || errno != EINVAL)
			FAIL("create(NULL): errno %d", errno);
		raw(&r, sizeof(r));
		cfg.backend = (enum conntab_backend)r;
		cfg.flavor = &rcu_flavor;
		/* backend 0 is a zeroed config's default (CONNTAB_CHAINED):
		 * create takes it though conntab_backend_available() says
		 * no backend 0 exists */
		if (r != 0 && !conntab_backend_available(cfg.backend)) {
			errno = 0;
			if (conntab_create_flavor(&cfg, NULL) ||
			    errno != EINVAL)
				FAIL("create(backend %d): errno %d", r, errno);
		} else if (r == 0) {
			struct conntab *z = conntab_create_flavor(&cfg, NULL);

			if (!z)
				FAIL("create(backend 0): errno %d", errno);
			conntab_destroy(z, NULL);
		}
		cfg.backend = CONNTAB_CHAINED;
		cfg.flavor = NULL;
		errno = 0;
		if (conntab_create_flavor(&cfg, NULL) || errno != EINVAL)
			FAIL("create without a flavor: errno %d", errno);
		if (!conntab_backend_name((enum conntab_backend)r))
			FAIL("backend_name(%d) is NULL", r);
		break;
	case 8:
		len = byte() % (int)sizeof(buf);
		memset(buf, 'x', sizeof(buf));
		r = conntab_key_format(&k, buf, (size_t)len);
		if (k.family != AF_INET && k.family != AF_INET6) {
			EXPECT_INT(r, -EINVAL, "key_format(bad family)");
			break;
		}
		if (r < 0)
			FAIL("key_format: %d", r);
		if (len && (int)strnlen(buf, (size_t)len) !=
		    (r < len ? r : len - 1))
			FAIL("key_format: not terminated as snprintf");
		if (buf[len] != 'x' && len < (int)sizeof(buf))
			FAIL("key_format wrote beyond %d bytes", len);
		EXPECT_INT(conntab_key_format(&k, NULL, 0), r,
			   "key_format(NULL, 0)");
		EXPECT_INT(conntab_key_format(NULL, buf, sizeof(buf)), -EINVAL,
			   "key_format(NULL)");
		break;
	case 9: {
		struct sockaddr_in6 l, rm;
		uint8_t f1 = byte(), f2 = byte();

		memset(&l, 0, sizeof(l));
		memset(&rm, 0, sizeof(rm));
		raw(&l, sizeof(l));
		raw(&rm, sizeof(rm));
		/* Mostly real families, sometimes anything. */
		l.sin6_family = f1 < 128 ? AF_INET : f1 < 224 ? AF_INET6 : f1;
		rm.sin6_family = f2 < 128 ? AF_INET : f2 < 224 ? AF_INET6 : f2;
		r = conntab_key_from_sockaddr(&k, IPPROTO_TCP,
					      (struct sockaddr *)&l,
					      (struct sockaddr *)&rm);
		if (l.sin6_family == rm.sin6_family &&
		    (l.sin6_family == AF_INET || l.sin6_family == AF_INET6)) {
			EXPECT_INT(r, 0, "key_from_sockaddr");
			if (!key_valid(&k))
				FAIL("key_from_sockaddr made a bad key");
		} else {
			EXPECT_INT(r, -EINVAL, "key_from_sockaddr(families)");
		}
		EXPECT_INT(conntab_key_from_sockaddr(NULL, 6,
						     (struct sockaddr *)&l,
						     (struct sockaddr *)&rm),
			   -EINVAL, "key_from_sockaddr(NULL)");
		break;
	}
	case 10: {
		char name[9];

		raw(name, 8);
		name[8] = '\0';
		r = conntab_backend_from_name(name);
		if (r != -EINVAL && strcmp(conntab_backend_name(r), name))
			FAIL("backend_from_name(%s) = %d", name, r);
		break;
	}
	default:
		/* A malformed key: refused, the node stays unclaimed. */
		k.family = byte() & 1 ? (uint8_t)(AF_INET6 + 1) : AF_INET;
		k.laddr.bytes[4 + byte() % 12] |= 1;
		EXPECT_INT(conntab_insert(t, n, &k), -EINVAL,
			   "insert of a malformed key");
		EXPECT_INT(conntab_insert_recycle(t, n, &k, &rec), -EINVAL,
			   "insert_recycle of a malformed key");
		if (rec)
			FAIL("insert_recycle of a malformed key recycled %p",
			     (void *)rec);
		break;
	}
	check_table(t, "after bad input");
	check_table(u, "after bad input (other table)");
}

/* --- one input ------------------------------------------------------ */

static void release_fn(struct conntab_node *n)
{
	struct fnode *f = fnode_of(n);

	if (f->status != LINKED || f->released++)
		FAIL("destroy released slot %ld (status %d) twice or wrongly",
		     (long)(f - pool), f->status);
}

static void destroy_checked(struct conntab *tab)
{
	int i;

	for (i = 0; i < NPOOL; i++)
		pool[i].released = 0;
	conntab_destroy(tab, release_fn);
	for (i = 0; i < NPOOL; i++) {
		if (pool[i].status != LINKED || pool[i].tab != tab)
			continue;
		if (pool[i].released != 1)
			FAIL("destroy released slot %d %d times", i,
			     pool[i].released);
		pool[i].status = RETIRED;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conntab_config cfg = { 0 };
	uint8_t m;
	int i;

	in = data;
	in_len = size;
	in_pos = 0;
	opno = 0;
	i = byte();
	cfg.backend = fixed_backend > 0 ? (enum conntab_backend)fixed_backend :
		      backends[i % nbackends];
	cfg.hash = fixed_hash >= 0 ? (enum conntab_hash)fixed_hash :
		   hashes[(i / nbackends) % nhashes];
	/* Sizing hint: mostly small; up to 16k (bigger only costs time). */
	m = byte();
	cfg.expected = m < 240 ? m : (size_t)(m - 239) << 10;
	m = byte();
	cfg.max_entries = max_entries = m < 128 ? 0 : m - 127;
	/* Half the tables get the flavor in cfg, half as the argument. */
	cfg.flavor = m & 1 ? &rcu_flavor : NULL;
	for (i = 0; i < NPOOL; i++) {
		memset(&pool[i], 0, sizeof(pool[i]));
		conntab_node_init(&pool[i].node);
	}
	memset(&scan_cur, 0, sizeof(scan_cur));
	t = conntab_create_flavor(&cfg, &rcu_flavor);
	cfg.max_entries = 0;
	cfg.expected = 0;
	u = conntab_create_flavor(&cfg, &rcu_flavor);
	if (!t || !u)
		FAIL("create(%s, expected %zu): errno %d",
		     conntab_backend_name(cfg.backend), cfg.expected, errno);
	while (in_pos < in_len) {
		opno++;
		switch (byte() % 18) {
		case 0:
		case 1:
			op_insert(t, 0);
			break;
		case 2:
			op_insert(t, 1);
			break;
		case 3:
			op_remove(t);
			break;
		case 4:
			op_timewait(t, 1);
			break;
		case 5:
			op_timewait(t, 0);
			break;
		case 6:
			op_lookup();
			break;
		case 7:
			op_lookup_batch();
			break;
		case 8:
			op_walk(0);
			break;
		case 9:
			op_walk(1);
			break;
		case 10:
			check_table(t, "stats");
			break;
		case 11:
			op_grace();
			break;
		case 12:
			op_insert(u, byte() & 1);
			break;
		case 13:
			op_bad();
			break;
		case 14:
			op_remove(u);
			break;
		case 15:
			op_timewait(u, byte() & 1);
			break;
		case 16:
			op_scan();
			break;
		default:
			op_evict(byte() & 7 ? t : u);
			break;
		}
	}
	check_table(t, "end");
	check_table(u, "end (other table)");
	destroy_checked(t);
	destroy_checked(u);
	/*
	 * The library's deferred frees: wait for them now and then only
	 * (rcu_barrier() costs the call_rcu worker's sleep, milliseconds),
	 * to bound the backlog. tests/fuzz/run.sh says how leaks are found.
	 */
	if (++inputs % 64 == 0)
		rcu_barrier();
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *fb = getenv("FUZZ_BACKEND");
	int b;

	struct conntab_config aes = {
		.backend = CONNTAB_CHAINED, .hash = CONNTAB_HASH_AES,
	};
	struct conntab *probe;

	rcu_register_thread();
	for (b = CONNTAB_CHAINED; b <= CONNTAB_TRIE; b++)
		if (conntab_backend_available((enum conntab_backend)b))
			backends[nbackends++] = (enum conntab_backend)b;
	hashes[nhashes++] = CONNTAB_HASH_SIPHASH;
	probe = conntab_create(&aes);
	if (probe)
		hashes[nhashes++] = CONNTAB_HASH_AES;
	conntab_destroy(probe, NULL);
	if (getenv("FUZZ_LIST_BACKENDS")) {
		for (b = 0; b < (int)nbackends; b++)
			printf("%s\n", conntab_backend_name(backends[b]));
		exit(0);
	}
	if (fb && *fb) {
		fixed_backend = conntab_backend_from_name(fb);
		if (fixed_backend < 0 ||
		    !conntab_backend_available(fixed_backend)) {
			fprintf(stderr, "FUZZ_BACKEND=%s: not available\n", fb);
			exit(2);
		}
	}
	return 0;
}

#ifdef FUZZ_STANDALONE
/*
 * Replay: every file named, every file in every directory named, or with
 * no argument the inputs under $srcdir/tests/fuzz/{corpus,regress}.
 */
#include <dirent.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
	static uint8_t buf[1 << 16];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

static int replay(const char *path, unsigned long *runs)
{
	struct dirent *de;
	struct stat sb;
	char sub[4096];
	DIR *d;
	int err = 0;

	if (stat(path, &sb))
		return 0;	/* an absent directory holds no input */
	if (!S_ISDIR(sb.st_mode)) {
		++*runs;
		return replay_file(path);
	}
	d = opendir(path);
	if (!d) {
		perror(path);
		return 1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		err |= replay(sub, runs);
	}
	closedir(d);
	return err;
}

int main(int argc, char **argv)
{
	const char *srcdir = getenv("srcdir");
	unsigned long runs = 0;
	char path[4096];
	int i, err = 0, b;
	size_t k;

	LLVMFuzzerInitialize(&argc, &argv);
	/* Every input once per backend and hash (the first byte picks). */
	for (k = 0; k < nbackends * nhashes; k++) {
		b = (int)backends[k / nhashes];
		fixed_backend = b;
		fixed_hash = (int)hashes[k % nhashes];
		if (argc > 1) {
			for (i = 1; i < argc; i++)
				err |= replay(argv[i], &runs);
			continue;
		}
		snprintf(path, sizeof(path), "%s/tests/fuzz/corpus",
			 srcdir ? srcdir : ".");
		err |= replay(path, &runs);
		snprintf(path, sizeof(path), "%s/tests/fuzz/regress",
			 srcdir ? srcdir : ".");
		err |= replay(path, &runs);
	}
	rcu_barrier();
	printf("fuzz-replay: %lu inputs replayed over %zu backends and %zu "
	       "hashes, all results as the model says\n", runs, nbackends,
	       nhashes);
	if (!runs && !err) {
		fprintf(stderr, "fuzz-replay: no input found\n");
		err = 1;
	}
	rcu_unregister_thread();
	return err;
}
#endif
