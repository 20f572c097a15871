/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writers on threads the flavor does not count: identifying the flavor,
 * and the slow path that registers the thread for one call (rcu-reg.h
 * says why).
 */
#define _GNU_SOURCE	/* dladdr(), RTLD_DEFAULT */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rcu-reg.h"

CT_TLS struct ct_reg_cache ct_reg_cache;

/*
 * liburcu's flavors whose registration a thread can read. bp is not
 * here: its read lock registers the thread, so there is nothing to do.
 * Not const: ct_reg_resolve() fills in each one's sync.
 */
static struct ct_reg_family ct_reg_families[] = {
	{ "urcu_memb_flavor", "urcu_memb_register_thread",
	  "urcu_memb_reader", CT_REG_COMMON,
	  "urcu_memb_gp", "urcu_memb_has_sys_membarrier", 0, { 0 } },
	{ "urcu_mb_flavor", "urcu_mb_register_thread",
	  "urcu_mb_reader", CT_REG_COMMON, "urcu_mb_gp", NULL, 0, { 0 } },
	{ "urcu_signal_flavor", "urcu_signal_register_thread",
	  "urcu_signal_reader", CT_REG_COMMON, "urcu_signal_gp", NULL, 1,
	  { 0 } },
	{ "urcu_qsbr_flavor", "urcu_qsbr_register_thread",
	  "urcu_qsbr_reader", CT_REG_QSBR, "urcu_qsbr_gp", NULL, 1, { 0 } },
};

#define CT_NFAMILIES	(sizeof(ct_reg_families) / sizeof(ct_reg_families[0]))

/* The name of the exported symbol that starts exactly at @addr, or NULL. */
static const char *ct_reg_symbol_at(const void *addr)
{
	Dl_info info;

	if (!addr || !dladdr(addr, &info) || info.dli_saddr != addr)
		return NULL;
	return info.dli_sname;
}

#ifdef CT_URCU_INLINE_READ_LOCK
static pthread_mutex_t ct_reg_sync_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * What ct_writer_read_lock() needs of @fam, found by name the way the
 * family itself was (the first definition in lookup order: the one that
 * @fam's functions use, an executable's copy included), once. Under the
 * lock, and before the table that needs it is returned to anyone: every
 * thread that reads fam->sync through a table reads it after this.
 * Where a name is missing, gp stays NULL and the writers call the
 * flavor. Without memb's membarrier flag (a liburcu built to require
 * membarrier has none, and then liburcu's own inline lock takes a
 * barrier only), barrier_ok is memb's 0: a fence, which is never wrong.
 * The futex fallback is liburcu's (ENOSYS: a kernel without futexes),
 * which its grace period then sleeps on too.
 */
static void ct_reg_resolve(struct ct_reg_family *fam)
{
	struct ct_reg_sync *sync = &fam->sync;
	const int *barrier_ok = &fam->barrier_ok;
	void *gp, *compat, *flag = NULL;

	pthread_mutex_lock(&ct_reg_sync_lock);
	if (__atomic_load_n(&sync->gp, __ATOMIC_RELAXED))
		goto out;
	gp = dlsym(RTLD_DEFAULT, fam->gp);
	compat = dlsym(RTLD_DEFAULT, "compat_futex_async");
	if (fam->sys_membarrier)
		flag = dlsym(RTLD_DEFAULT, fam->sys_membarrier);
	if (!gp || !compat)
		goto out;
	sync->barrier_ok = flag ? flag : barrier_ok;
	*(void **)&sync->compat_futex = compat;
	/* Last: ct_writer_read_lock() reads the rest once it sees gp. */
	__atomic_store_n(&sync->gp, (struct urcu_gp *)gp, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&ct_reg_sync_lock);
}

/*
 * urcu_common_wake_up_gp(), for the writers' inline unlock
 * (ct_writer_read_unlock(), ct_writer_unlock()): a grace period
 * that found this thread in its read-side critical section went to sleep
 * on gp->futex (-1); this thread has left it, so wake it. The futex
 * call is futex_async()'s (urcu/futex.h), without its link to liburcu.
 */
void ct_rl_wake(const struct ct_reg_family *fam)
{
	const struct ct_reg_sync *sync = &fam->sync;
	int32_t *f = &sync->gp->futex;

	/* uatomic_read() and uatomic_set(): relaxed, as in the lock */
	if (__atomic_load_n(f, __ATOMIC_RELAXED) != -1)
		return;
	__atomic_store_n(f, 0, __ATOMIC_RELAXED);
	if (syscall(SYS_futex, f, FUTEX_WAKE, 1, NULL, NULL, 0) < 0 &&
	    errno == ENOSYS)
		(void)sync->compat_futex(f, FUTEX_WAKE, 1, NULL, NULL, 0);
}
#else
static void ct_reg_resolve(struct ct_reg_family *fam)
{
}
#endif

/*
 * Two ways to recognise a family: @f is its flavor struct (the one
 * rcu_flavor names, or the executable's copy of it), or a struct of the
 * application's whose register_thread is the family's (a copy of
 * rcu_flavor with some calls wrapped). Either name must also be what the
 * name resolves to from here, so that the reader state found through it
 * below belongs to the library that @f's functions work on (several
 * copies of liburcu in one process: the first in lookup order wins, for
 * them as for us).
 */
const struct ct_reg_family *ct_reg_identify(const struct rcu_flavor_struct *f)
{
	const void *reg = (const void *)f->register_thread;
	const char *fname = ct_reg_symbol_at(f);
	const char *rname = ct_reg_symbol_at(reg);
	struct ct_reg_family *fam;
	size_t i;

	for (i = 0; i < CT_NFAMILIES; i++) {
		fam = &ct_reg_families[i];
		if (!(fname && !strcmp(fname, fam->flavor) &&
		      dlsym(RTLD_DEFAULT, fam->flavor) == (const void *)f) &&
		    !(rname && !strcmp(rname, fam->register_thread) &&
		      dlsym(RTLD_DEFAULT, fam->register_thread) == reg))
			continue;
		/* Its reader state must be there too (a TLS symbol). */
		if (!dlsym(RTLD_DEFAULT, fam->reader))
			return NULL;
		ct_reg_resolve(fam);
		return fam;
	}
	return NULL;
}

#ifdef CT_DEBUG
/*
 * A flavor that could not be identified: check what its read_ongoing()
 * tells. Under QSBR it is true exactly on an online registered thread
 * (read_lock is a no-op there); under the other flavors it is true
 * inside any read_lock, so they pass: memb cannot tell an unregistered
 * thread, and bp registers threads itself.
 */
void ct_writer_check_debug(const struct conntab *t, const char *what)
{
	int ok;

	t->flavor->read_lock();
	ok = t->flavor->read_ongoing();
	t->flavor->read_unlock();
	if (ok)
		return;
	fprintf(stderr, "conntab: %s (%s table) on a thread that the RCU "
		"flavor does not count (unregistered, or offline under QSBR), "
		"with a flavor the library cannot identify (liburcu linked "
		"statically, or the application's own functions): such a "
		"thread must be registered; see conntab.h, \"Threads\"\n",
		what, conntab_backend_name(t->backend));
	abort();
}
#endif

/*
 * This thread's reader state in @fam, cached (rcu-reg.h); NULL if it
 * cannot be found.
 */
static const void *ct_reg_reader(const struct ct_reg_family *fam)
{
	struct ct_reg_cache *c = &ct_reg_cache;
	const void *reader;

	if (c->family == fam)
		return c->reader;
	/*
	 * dlsym() of a TLS symbol gives the calling thread's copy;
	 * ct_reg_identify() found the symbol, so it is there.
	 */
	reader = dlsym(RTLD_DEFAULT, fam->reader);
	if (!reader)
		return NULL;
	c->family = fam;
	c->reader = reader;
	c->kind = fam->kind;
#ifdef CT_URCU_INLINE_READ_LOCK
	/* The lock's barrier_ok, then gp (ct_reg_resolve(): release). */
	c->gp = __atomic_load_n(&fam->sync.gp, __ATOMIC_ACQUIRE);
	if (c->gp)
		c->barrier_ok = *fam->sync.barrier_ok;
	c->inl = c->kind == CT_REG_COMMON && c->gp ? (uintptr_t)fam | 1 : 0;
#endif
	return reader;
}

/*
 * Where ct_writer_counted() or ct_reader_counted() said no (the first
 * call of a thread on a table of this family, or a thread the
 * application did not register), and for the calls off the fast path
 * (stats, destroy), which come here directly.
 */
int ct_thread_enter(const struct conntab *t, const char *what, bool reads)
{
	const struct ct_reg_family *fam = t->reg;
	const struct rcu_flavor_struct *f = t->flavor;
	const struct urcu_qsbr_reader *q;
	const struct urcu_reader *r;

	if (!reads && !t->ops->registered_writers)
		return CT_REG_NONE;	/* chained, split: nothing to protect */
	if (!fam) {
#ifdef CT_DEBUG
		ct_writer_check_debug(t, what);
#endif
		return CT_REG_NONE;
	}
	if (fam->kind == CT_REG_QSBR) {
		q = ct_reg_reader(fam);
		if (!q || q->ctr)
			return CT_REG_NONE;	/* online */
		if (q->registered) {
			f->thread_online();
			return CT_REG_ONLINE;
		}
		f->register_thread();	/* registers it online */
		return CT_REG_REGISTERED;
	}
	r = ct_reg_reader(fam);
	if (!r || r->registered)
		return CT_REG_NONE;
	/*
	 * Inside a read-side critical section of an unregistered thread:
	 * liburcu refuses to register a thread there (it asserts), and the
	 * caller's own reads were never protected. That breaks the readers'
	 * rule, not the writers': nothing here can repair it.
	 */
	if (f->read_ongoing()) {
#ifdef CT_DEBUG
		fprintf(stderr, "conntab: %s (%s table) inside an RCU "
			"read-side critical section of a thread that is not "
			"registered with the flavor: a thread that takes the "
			"read lock must be registered; see conntab.h, "
			"\"Threads\"\n", what,
			conntab_backend_name(t->backend));
		abort();
#endif
		return CT_REG_NONE;
	}
	f->register_thread();
	return CT_REG_REGISTERED;
}

#ifdef CT_DEBUG
/*
 * Readers must be registered and inside the read lock; nothing on their
 * fast path can afford to ask (a lookup is tens of instructions), so
 * debug builds ask here. read_ongoing() tells the read lock (under QSBR:
 * online, which implies registered); the flavor's reader state tells
 * registration under memb, mb and signal, whose read lock an
 * unregistered thread can take without any grace period seeing it.
 */
void ct_reader_check_debug(const struct conntab *t, const char *what)
{
	const struct ct_reg_family *fam = t->reg;
	const struct urcu_reader *r;
	const char *why = NULL;
	char name[32] = "?";

	if (!t->flavor->read_ongoing())
		why = "outside a read-side critical section (or, under QSBR, "
		      "on a thread that is offline or not registered)";
	else if (fam && fam->kind == CT_REG_COMMON &&
		 (r = ct_reg_reader(fam)) && !r->registered)
		why = "on a thread that is not registered with the RCU flavor";
	if (!why)
		return;
	pthread_getname_np(pthread_self(), name, sizeof(name));
	fprintf(stderr, "conntab: %s (%s table) %s: thread %ld (\"%s\"); "
		"readers run under the flavor's read lock on registered "
		"threads, see conntab.h, \"Threads\"\n", what,
		conntab_backend_name(t->backend), why, (long)gettid(), name);
	abort();
}
#endif

void ct_writer_exit(const struct rcu_flavor_struct *f, int held)
{
	if (held == CT_REG_NONE)
		return;
	if (held == CT_REG_ONLINE)
		f->thread_offline();
	else
		f->unregister_thread();
}
