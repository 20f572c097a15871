/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers of the threaded tests; see threads.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "threads.h"

/*
 * Under AddressSanitizer a retired node is also poisoned for ASan while it
 * waits in the quarantine: a reader that still dereferences it after its
 * grace period stops with a use-after-poison report instead of reading
 * the scribbled bytes. The rcu_head stays readable (liburcu is done with
 * it once the callback runs, but this keeps us independent of that).
 */
#if defined(__SANITIZE_ADDRESS__)
# define TH_ASAN 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define TH_ASAN 1
# endif
#endif
#ifdef TH_ASAN
# include <sanitizer/asan_interface.h>
static void th_poison(struct tconn *c, int on)
{
	size_t head = offsetof(struct tconn, rh);
	size_t tail = offsetof(struct tconn, magic);

	if (on) {
		ASAN_POISON_MEMORY_REGION(c, head);
		ASAN_POISON_MEMORY_REGION((char *)c + tail, sizeof(*c) - tail);
	} else {
		ASAN_UNPOISON_MEMORY_REGION(c, sizeof(*c));
	}
}
#else
static void th_poison(struct tconn *c, int on)
{
}
#endif

static unsigned long errors;
static char first_error[256];

void th_report(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&errors, 1, __ATOMIC_SEQ_CST) == 0) {
		va_start(ap, fmt);
		vsnprintf(first_error, sizeof(first_error), fmt, ap);
		va_end(ap);
	}
}

unsigned long th_errors(void)
{
	return __atomic_load_n(&errors, __ATOMIC_SEQ_CST);
}

const char *th_first_error(void)
{
	return first_error;
}

void th_reset(void)
{
	__atomic_store_n(&errors, 0, __ATOMIC_SEQ_CST);
	first_error[0] = '\0';
}

#define QUARANTINE	8192
static struct tconn *quarantine[QUARANTINE];
static size_t q_head;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;

static void poison_cb(struct rcu_head *rh)
{
	struct tconn *c = caa_container_of(rh, struct tconn, rh), *old;

	c->magic = T_MAGIC_DEAD;
	memset(&c->node.ct_key, 0xa5, sizeof(c->node.ct_key));
	th_poison(c, 1);
	pthread_mutex_lock(&q_lock);
	old = quarantine[q_head];
	quarantine[q_head] = c;
	q_head = (q_head + 1) % QUARANTINE;
	pthread_mutex_unlock(&q_lock);
	if (old)
		th_poison(old, 0);
	free(old);
}

void th_retire(struct tconn *c)
{
	call_rcu(&c->rh, poison_cb);
}

void th_quarantine_flush(void)
{
	size_t i;

	pthread_mutex_lock(&q_lock);
	for (i = 0; i < QUARANTINE; i++) {
		if (quarantine[i])
			th_poison(quarantine[i], 0);
		free(quarantine[i]);
		quarantine[i] = NULL;
	}
	pthread_mutex_unlock(&q_lock);
}

int th_check_node(const struct conntab_node *n, const struct conntab_key *k,
		  uint32_t id, const char *who)
{
	const struct tconn *c = conntab_entry(n, struct tconn, node);
	enum conntab_state st = conntab_node_state(n);

	if (__atomic_load_n(&c->magic, __ATOMIC_RELAXED) != T_MAGIC_LIVE) {
		th_report("%s: key %u: node %p freed (magic %#x)", who, id,
			  (void *)n, c->magic);
		return -1;
	}
	if (!t_key_same(conntab_node_key(n), k)) {
		th_report("%s: key %u: node %p has another key", who, id,
			  (void *)n);
		return -1;
	}
	if (st != CONNTAB_ESTABLISHED && st != CONNTAB_TIMEWAIT) {
		th_report("%s: key %u: state %d", who, id, st);
		return -1;
	}
	return 0;
}

void th_run_for(unsigned int ms, unsigned long *const *ctrs, size_t n,
		unsigned long min)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	struct timespec tick = { 0, 10 * 1000000L };
	size_t i;

	nanosleep(&ts, NULL);
	for (i = 0; i < n; i++)
		while (__atomic_load_n(ctrs[i], __ATOMIC_RELAXED) < min)
			nanosleep(&tick, NULL);
}

/* --- writers on a model --------------------------------------------- */

static void th_key(const struct th_model *m, struct conntab_key *k,
		   uint32_t id)
{
	if (m->key)
		m->key(k, id);
	else
		t_key(k, id);
}

static void expect(int got, int want, const char *op, uint32_t id)
{
	if (got != want)
		th_report("writer: %s key %u: %d, want %d", op, id, got, want);
}

unsigned int th_flip(struct th_model *m, uint32_t id, uint64_t *rng)
{
	struct tconn *c = m->holder[id], *n;
	struct conntab_node *rec = NULL;
	struct conntab_key k;
	uint64_t r = th_rnd(rng);

	th_key(m, &k, id);
	if (m->state[id] == CONNTAB_ESTABLISHED) {
		if (r % 3 == 0) {
			expect(conntab_timewait(m->t, &c->node, &c->node), 0,
			       "timewait in place", id);
		} else {
			n = t_conn_new(id);
			expect(conntab_timewait(m->t, &c->node, &n->node), 0,
			       "timewait", id);
			m->holder[id] = n;
			th_retire(c);
		}
		m->state[id] = CONNTAB_TIMEWAIT;
		return 1;
	}
	n = t_conn_new(id);
	expect(conntab_insert(m->t, &n->node, &k), -EEXIST,
	       "insert over timewait", id);
	expect(conntab_insert_recycle(m->t, &n->node, &k, &rec), 0,
	       "recycle", id);
	if (rec != &c->node)
		th_report("recycle key %u returned %p, want %p", id,
			  (void *)rec, (void *)&c->node);
	m->holder[id] = n;
	m->state[id] = CONNTAB_ESTABLISHED;
	th_retire(c);
	return 2;
}

unsigned int th_churn(struct th_model *m, uint32_t id, uint64_t *rng)
{
	struct tconn *c = m->holder[id], *n;
	struct conntab_node *rec = NULL;
	struct conntab_key k;
	uint64_t r = th_rnd(rng) % 6;

	th_key(m, &k, id);
	if (!c) {
		n = t_conn_new(id);
		if (m->gen)
			th_gen_step(&m->gen[id]);	/* odd: coming in */
		if (r < 3) {
			expect(conntab_insert(m->t, &n->node, &k), 0,
			       "insert", id);
		} else {
			rec = &n->node;
			expect(conntab_insert_recycle(m->t, &n->node, &k,
						      &rec), 0,
			       "recycle absent", id);
			if (rec)
				th_report("recycle of absent key %u returned "
					  "%p", id, (void *)rec);
		}
		m->holder[id] = n;
		m->state[id] = CONNTAB_ESTABLISHED;
		return 1;
	}
	if (r < 2) {
		expect(conntab_remove(m->t, &c->node), 0, "remove", id);
		expect(conntab_remove(m->t, &c->node), -ENOENT,
		       "second remove", id);
		if (m->gen)
			th_gen_step(&m->gen[id]);	/* even: out */
		m->holder[id] = NULL;
		th_retire(c);
		return 2;
	}
	if (m->state[id] == CONNTAB_ESTABLISHED) {
		if (r < 4) {
			expect(conntab_timewait(m->t, &c->node, &c->node), 0,
			       "timewait in place", id);
		} else {
			n = t_conn_new(id);
			expect(conntab_timewait(m->t, &c->node, &n->node), 0,
			       "timewait", id);
			m->holder[id] = n;
			th_retire(c);
		}
		m->state[id] = CONNTAB_TIMEWAIT;
		return 1;
	}
	n = t_conn_new(id);
	expect(conntab_timewait(m->t, &c->node, &n->node), -EINVAL,
	       "timewait of timewait", id);
	expect(conntab_insert_recycle(m->t, &n->node, &k, &rec), 0,
	       "recycle", id);
	if (rec != &c->node)
		th_report("recycle key %u returned %p, want %p", id,
			  (void *)rec, (void *)&c->node);
	m->holder[id] = n;
	m->state[id] = CONNTAB_ESTABLISHED;
	th_retire(c);
	return 2;
}

void th_self_check(struct th_model *m, uint32_t id)
{
	struct conntab_node *n, *want;
	struct conntab_key k;

	th_key(m, &k, id);
	want = m->holder[id] ? &m->holder[id]->node : NULL;
	rcu_read_lock();
	n = conntab_lookup(m->t, &k);
	if (n != want)
		th_report("writer: lookup of own key %u: %p, want %p", id,
			  (void *)n, (void *)want);
	else if (n && conntab_node_state(n) != m->state[id])
		th_report("writer: own key %u in state %d, want %d", id,
			  conntab_node_state(n), m->state[id]);
	rcu_read_unlock();
}
