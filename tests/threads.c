/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers of the threaded tests; see threads.h.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "threads.h"

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
	pthread_mutex_lock(&q_lock);
	old = quarantine[q_head];
	quarantine[q_head] = c;
	q_head = (q_head + 1) % QUARANTINE;
	pthread_mutex_unlock(&q_lock);
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
