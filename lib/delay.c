/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Delay injection: the settings, the per-thread random stream, the
 * counters (lib/delay.h says what and why). Built only with configure
 * --enable-delay-injection; nothing of it is exported.
 */
#include "delay.h"

#ifdef CONNTAB_DELAY_INJECTION

#include <errno.h>
#include <fnmatch.h>
#include <sched.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lock.h"	/* ct_cpu_relax(), CT_CACHELINE */

static const char *const ct_delay_names[CT_DP_COUNT] = {
#define CT_DP_NAME(id, name, what)	[CT_DP_##id] = name,
	CT_DELAY_POINTS(CT_DP_NAME)
#undef CT_DP_NAME
};

enum ct_delay_action { CT_DA_SPIN, CT_DA_SLEEP, CT_DA_YIELD };

/*
 * A point's setting: delay when the thread's next 64-bit draw is below
 * @thresh (0: never), for up to @amount pauses or nanoseconds. Written
 * only while no other thread passes points (load, ct_delay_configure()),
 * read with relaxed loads so that ThreadSanitizer has nothing to say.
 */
struct ct_delay_rule {
	uint64_t thresh;
	uint32_t action;
	uint32_t amount;
};

static struct ct_delay_rule ct_delay_rules[CT_DP_COUNT];

/*
 * Counters, in shards that threads draw once, so that the writers
 * passing a hot point do not all bounce one line: a shard is a few
 * lines of its own. Relaxed: only totals are read, after the threads.
 */
#define CT_DELAY_SHARDS	16

static struct ct_delay_shard {
	uint64_t passed[CT_DP_COUNT];
	uint64_t delayed[CT_DP_COUNT];
} __attribute__((aligned(CT_CACHELINE))) ct_delay_shard[CT_DELAY_SHARDS];

/*
 * Per-thread state: a xorshift64* stream, seeded on the thread's first
 * pass from a global sequence, the clock and the state's own address.
 * Plain __thread, not the initial-exec CT_TLS of the library's hot
 * state: a test build need not use the static TLS surplus.
 */
static __thread uint64_t ct_delay_rng;
static __thread unsigned int ct_delay_mine;
static __thread int ct_delay_muted;
static uint64_t ct_delay_seq;

static uint64_t ct_delay_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t ct_delay_rnd(void)
{
	uint64_t s = ct_delay_rng;

	if (__builtin_expect(!s, 0)) {
		struct timespec ts;
		uint64_t n = __atomic_add_fetch(&ct_delay_seq, 1,
						__ATOMIC_RELAXED);

		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = ct_delay_mix(n * 0x9e3779b97f4a7c15ull ^
				 (uint64_t)ts.tv_nsec ^
				 (uint64_t)(uintptr_t)&ct_delay_rng) | 1;
		ct_delay_mine = (unsigned int)(n % CT_DELAY_SHARDS);
	}
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	ct_delay_rng = s;
	return s * 0x2545f4914f6cdd1dull;
}

static void ct_delay_wait(const struct ct_delay_rule *r)
{
	uint32_t n = r->amount ? 1 + (uint32_t)(ct_delay_rnd() % r->amount) :
				 0;
	struct timespec ts;

	switch (r->action) {
	case CT_DA_SPIN:
		while (n--)
			ct_cpu_relax();
		break;
	case CT_DA_SLEEP:
		ts.tv_sec = n / 1000000000u;
		ts.tv_nsec = n % 1000000000u;
		nanosleep(&ts, NULL);
		break;
	case CT_DA_YIELD:
		sched_yield();
		break;
	}
}

void ct_delay_hit(enum ct_delay_point p)
{
	uint64_t thresh = __atomic_load_n(&ct_delay_rules[p].thresh,
					  __ATOMIC_RELAXED);
	struct ct_delay_shard *sh;
	struct ct_delay_rule r;
	bool delay;

	if (ct_delay_muted)
		return;
	/* The thread's first draw also gives it its shard. */
	delay = ct_delay_rnd() < thresh;
	sh = &ct_delay_shard[ct_delay_mine];
	__atomic_fetch_add(&sh->passed[p], 1, __ATOMIC_RELAXED);
	if (!delay)
		return;
	__atomic_fetch_add(&sh->delayed[p], 1, __ATOMIC_RELAXED);
	r.action = __atomic_load_n(&ct_delay_rules[p].action,
				   __ATOMIC_RELAXED);
	r.amount = __atomic_load_n(&ct_delay_rules[p].amount,
				   __ATOMIC_RELAXED);
	ct_delay_wait(&r);
}

void ct_delay_counts(uint64_t *passed, uint64_t *delayed)
{
	unsigned int s, p;

	for (p = 0; p < CT_DP_COUNT; p++) {
		passed[p] = delayed[p] = 0;
		for (s = 0; s < CT_DELAY_SHARDS; s++) {
			passed[p] += __atomic_load_n(
				&ct_delay_shard[s].passed[p], __ATOMIC_RELAXED);
			delayed[p] += __atomic_load_n(
				&ct_delay_shard[s].delayed[p], __ATOMIC_RELAXED);
		}
	}
}

void ct_delay_mute(int mute)
{
	ct_delay_muted = mute;
}

void ct_delay_reset(void)
{
	unsigned int s, p;

	for (s = 0; s < CT_DELAY_SHARDS; s++)
		for (p = 0; p < CT_DP_COUNT; p++) {
			__atomic_store_n(&ct_delay_shard[s].passed[p], 0,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&ct_delay_shard[s].delayed[p], 0,
					 __ATOMIC_RELAXED);
		}
}

/* --- CONNTAB_DELAY ------------------------------------------------- */

static int ct_delay_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int ct_delay_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A whole unsigned number in [1, max] from @s; false if it is not. */
static bool ct_delay_num(const char *s, char **end, uint64_t max,
			 uint64_t *v)
{
	unsigned long long x;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoull(s, end, 10);
	if (errno || !x || x > max)
		return false;
	*v = x;
	return true;
}

/* ACTION of a rule (NUL-terminated) into @r. */
static int ct_delay_action(const char *a, struct ct_delay_rule *r,
			   char *err, size_t len)
{
	uint64_t v, unit = 1000;
	char *end;

	if (!strcmp(a, "yield")) {
		r->action = CT_DA_YIELD;
		r->amount = 0;
		return 0;
	}
	if (!strncmp(a, "spin=", 5)) {
		if (!ct_delay_num(a + 5, &end, 1000000000u, &v) || *end)
			return ct_delay_err(err, len, "bad spin count in "
					    "'%s' (1 to 10^9 pauses)", a);
		r->action = CT_DA_SPIN;
		r->amount = (uint32_t)v;
		return 0;
	}
	if (!strncmp(a, "sleep=", 6)) {
		if (!ct_delay_num(a + 6, &end, 1000000000u, &v))
			return ct_delay_err(err, len, "bad sleep in '%s'", a);
		if (!strcmp(end, "ns"))
			unit = 1;
		else if (!strcmp(end, "ms"))
			unit = 1000000;
		else if (*end && strcmp(end, "us"))
			return ct_delay_err(err, len, "bad unit in '%s' (ns, "
					    "us or ms)", a);
		if (v * unit > 1000000000u)
			return ct_delay_err(err, len, "sleep in '%s' over a "
					    "second", a);
		r->action = CT_DA_SLEEP;
		r->amount = (uint32_t)(v * unit);
		return 0;
	}
	return ct_delay_err(err, len, "unknown action '%s' (spin=N, "
			    "sleep=N[ns|us|ms] or yield)", a);
}

/* One RULE (NUL-terminated, modified) applied to @rules. */
static int ct_delay_rule(char *rule, struct ct_delay_rule *rules,
			 char *err, size_t len)
{
	const char *pat = rule;
	char *prob, *act, *end;
	struct ct_delay_rule r = { 0, CT_DA_SPIN, 1000 };
	unsigned int p, matched = 0;
	double pr;
	int ret;

	prob = strchr(rule, ':');
	if (!prob)
		return ct_delay_err(err, len, "rule '%s' is not "
				    "PATTERN:PROB[:ACTION]", rule);
	*prob++ = '\0';
	act = strchr(prob, ':');
	if (act)
		*act++ = '\0';
	errno = 0;
	pr = strtod(prob, &end);
	if (errno || end == prob || *end || !(pr >= 0 && pr <= 1))
		return ct_delay_err(err, len, "probability '%s' of %s is not "
				    "a number from 0 to 1", prob, pat);
	if (act) {
		ret = ct_delay_action(act, &r, err, len);
		if (ret)
			return ret;
	}
	/* 2^64 * pr, all ones for 1: a draw below it delays. */
	r.thresh = pr >= 1 ? UINT64_MAX :
		   (uint64_t)(pr * 18446744073709551616.0);
	if (!strcmp(pat, "all"))
		pat = "*";
	for (p = 0; p < CT_DP_COUNT; p++) {
		if (fnmatch(pat, ct_delay_names[p], 0))
			continue;
		rules[p] = r;
		matched++;
	}
	if (!matched)
		return ct_delay_err(err, len, "'%s' names no point "
				    "(tests/stress --list-points)", pat);
	return 0;
}

int ct_delay_configure(const char *spec, char *err, size_t len)
{
	struct ct_delay_rule rules[CT_DP_COUNT];
	char *buf, *rule, *save = NULL;
	unsigned int p;
	int ret = 0;

	memset(rules, 0, sizeof(rules));
	if (spec && *spec) {
		buf = strdup(spec);
		if (!buf)
			return ct_delay_err(err, len, "out of memory");
		for (rule = strtok_r(buf, ",", &save); rule && !ret;
		     rule = strtok_r(NULL, ",", &save))
			ret = ct_delay_rule(rule, rules, err, len);
		free(buf);
		if (ret)
			return ret;
	}
	for (p = 0; p < CT_DP_COUNT; p++) {
		__atomic_store_n(&ct_delay_rules[p].thresh, rules[p].thresh,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ct_delay_rules[p].action, rules[p].action,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&ct_delay_rules[p].amount, rules[p].amount,
				 __ATOMIC_RELAXED);
	}
	return 0;
}

/*
 * At load, before the application starts threads: CONNTAB_DELAY. A bad
 * setting stops the process, since running without the delays asked
 * for would pass for a run with them.
 */
static void __attribute__((constructor)) ct_delay_init(void)
{
	const char *spec = getenv("CONNTAB_DELAY");
	char err[160];

	if (ct_delay_configure(spec, err, sizeof(err))) {
		fprintf(stderr, "conntab: CONNTAB_DELAY=%s: %s\n", spec, err);
		abort();
	}
}

#endif /* CONNTAB_DELAY_INJECTION */
