/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The time budget (--budget S; --quick sets 2 s): the most wall-clock
 * time one implementation may spend on one workload at one size, all its
 * repetitions and the building of the tables that workload uses together.
 * An implementation that runs out is stopped there: the loop it is in
 * ends early, its remaining repetitions are skipped, its rows say
 * "stopped" and a note line names it, the workload and the time it had.
 * A peer that crawls (lfht grown from empty on a busy 2-core machine ran
 * at 180 inserts/s for a quarter of an hour) then costs the run seconds,
 * not the run.
 *
 * A watchdog thread sleeps until the running section's deadline and then
 * raises b_budget_over; the workloads' loops poll it every few dozen
 * operations (a load of a line that stays in cache, no clock read), so
 * the figures of implementations within their budget are not disturbed.
 * Without a budget no thread is started and the flag never rises.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "impl.h"

volatile int b_budget_over;

/* Time spent by one implementation on one workload at one size. */
struct spent {
	enum b_workload w;
	const struct bench_impl *im;
	size_t n;
	uint64_t ns;
	bool stopped, noted;
	/*
	 * What it was doing when stopped, copied: the note is printed after
	 * the size's workloads, when the caller's string may be gone (it
	 * was a buffer on bench/stream.c's stack, printed as garbage).
	 */
	char during[64];
};

static struct spent *sp;
static size_t nsp, capsp;

static pthread_t dog;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static uint64_t deadline;	/* 0: no section running */
static bool dog_up;

/*
 * The running section: its workloads, implementation and start; @cur_what
 * is the caller's, valid until b_budget_leave() (copied there if needed).
 */
static unsigned long cur_mask;
static const struct bench_impl *cur_im;
static size_t cur_n;
static uint64_t cur_t0;
static const char *cur_what;

static struct spent *find(enum b_workload w, const struct bench_impl *im,
			  size_t n, bool add)
{
	size_t i;

	for (i = 0; i < nsp; i++)
		if (sp[i].w == w && sp[i].im == im && sp[i].n == n)
			return &sp[i];
	if (!add)
		return NULL;
	if (nsp == capsp) {
		capsp = capsp ? 2 * capsp : 64;
		sp = realloc(sp, capsp * sizeof(*sp));
		if (!sp) {
			perror("conntab-bench");
			exit(1);
		}
	}
	sp[nsp] = (struct spent){ .w = w, .im = im, .n = n };
	return &sp[nsp++];
}

static void *dog_fn(void *arg)
{
	struct timespec ts;

	pthread_mutex_lock(&lock);
	for (;;) {
		if (!deadline) {
			pthread_cond_wait(&wake, &lock);
			continue;
		}
		ts.tv_sec = (time_t)(deadline / 1000000000u);
		ts.tv_nsec = (long)(deadline % 1000000000u);
		if (pthread_cond_timedwait(&wake, &lock, &ts) == ETIMEDOUT &&
		    deadline && b_now_ns() >= deadline) {
			__atomic_store_n(&b_budget_over, 1, __ATOMIC_RELAXED);
			deadline = 0;
		}
	}
	return NULL;
}

/*
 * The watchdog waits on CLOCK_MONOTONIC, the clock of b_now_ns(). Started
 * before main() pins itself, so that it is not tied to the measuring CPU;
 * it sleeps but for one wake-up per section that runs out.
 */
void b_budget_init(void)
{
	pthread_condattr_t ca;

	if (b_opts.budget_ns == 0 || dog_up)
		return;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&dog, NULL, dog_fn, NULL)) {
		fprintf(stderr, "conntab-bench: no watchdog thread\n");
		exit(1);
	}
	pthread_detach(dog);
	dog_up = true;
}

bool b_budget_stopped(unsigned long wmask, const struct bench_impl *im,
		      size_t n)
{
	size_t i;

	for (i = 0; i < nsp; i++)
		if ((wmask & B_W(sp[i].w)) && sp[i].im == im &&
		    sp[i].n == n && sp[i].stopped)
			return true;
	return false;
}

bool b_budget_enter(unsigned long wmask, const struct bench_impl *im,
		    size_t n, const char *what)
{
	uint64_t left = UINT64_MAX;
	bool any = false;
	int w;

	if (cur_im) {
		fprintf(stderr, "conntab-bench: budget sections nest\n");
		abort();
	}
	for (w = 0; w < W_COUNT; w++) {
		struct spent *s;

		if (!(wmask & (1ul << w)))
			continue;
		s = find((enum b_workload)w, im, n, true);
		/* Spent by earlier sections that ended just in time. */
		if (b_opts.budget_ns && s->ns >= b_opts.budget_ns &&
		    !s->stopped) {
			s->stopped = true;
			snprintf(s->during, sizeof(s->during), "%s",
				 "its time spent by its repetitions");
		}
		if (s->stopped)
			continue;
		any = true;
		if (b_opts.budget_ns && b_opts.budget_ns - s->ns < left)
			left = b_opts.budget_ns - s->ns;
	}
	if (!any)
		return false;
	cur_mask = wmask;
	cur_im = im;
	cur_n = n;
	cur_what = what;
	__atomic_store_n(&b_budget_over, 0, __ATOMIC_RELAXED);
	cur_t0 = b_now_ns();
	if (b_opts.budget_ns) {
		pthread_mutex_lock(&lock);
		deadline = cur_t0 + left;
		pthread_cond_signal(&wake);
		pthread_mutex_unlock(&lock);
	}
	return true;
}

bool b_budget_leave(void)
{
	uint64_t dt = b_now_ns() - cur_t0;
	bool over;
	int w;

	if (b_opts.budget_ns) {
		pthread_mutex_lock(&lock);
		deadline = 0;
		pthread_mutex_unlock(&lock);
	}
	over = __atomic_load_n(&b_budget_over, __ATOMIC_RELAXED);
	for (w = 0; w < W_COUNT; w++) {
		struct spent *s;

		if (!(cur_mask & (1ul << w)))
			continue;
		s = find((enum b_workload)w, cur_im, cur_n, true);
		s->ns += dt;
		if (over && !s->stopped) {
			s->stopped = true;
			snprintf(s->during, sizeof(s->during), "%s",
				 cur_what ? cur_what : "");
		}
	}
	__atomic_store_n(&b_budget_over, 0, __ATOMIC_RELAXED);
	cur_im = NULL;
	return !over;
}

/*
 * One line per implementation stopped since the last call, before the
 * size's rows: which workload, at which size, after how long, doing what.
 */
void b_budget_notes(void)
{
	const char *during;
	size_t i;

	for (i = 0; i < nsp; i++) {
		struct spent *s = &sp[i];

		if (!s->stopped || s->noted)
			continue;
		s->noted = true;
		/* "during lookup" on the lookup workload says nothing. */
		during = s->during[0] && strcmp(s->during,
						b_workload_names[s->w]) ?
			 s->during : NULL;
		if (b_opts.json) {
			printf("{\"stopped\":\"%s\",\"impl\":\"%s\",\"n\":%zu,"
			       "\"after_s\":%.3g,\"budget_s\":%.3g}\n",
			       b_workload_names[s->w], s->im->name, s->n,
			       (double)s->ns / 1e9,
			       (double)b_opts.budget_ns / 1e9);
			continue;
		}
		printf("# stopped: %s on %s at n=%zu%s%s%s after %.3g s, over "
		       "the time budget of %.3g s per workload and "
		       "implementation (%s); its rows say \"stopped\"\n",
		       s->im->name, b_workload_names[s->w], s->n,
		       during ? " (" : "", during ? during : "",
		       during ? ")" : "", (double)s->ns / 1e9,
		       (double)b_opts.budget_ns / 1e9,
		       b_opts.budget_set ? "--budget" : "--quick");
	}
}
