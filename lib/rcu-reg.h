/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writers on threads the flavor does not count (conntab.h, "Threads").
 *
 * The exthash and trie writers descend the table under the flavor's read
 * lock and retire memory through its call_rcu. Both protect only a thread
 * the flavor counts: under memb, mb and signal an unregistered thread's
 * read lock is a counter that no grace period looks at, so a segment or
 * node it stands on can be freed under it; under QSBR the same holds for
 * an offline or unregistered thread. So every call that reaches such a
 * writer first asks ct_writer_counted() (inline: the fast path) and, if
 * it says no, goes through ct_writer_enter(), which registers the thread
 * (or, under QSBR, brings a registered one online) for the call's
 * duration when it finds it uncounted, and ct_writer_exit(), which undoes
 * that.
 *
 * Finding out costs what the fast path can afford: the flavor's reader
 * state is a thread-local struct of liburcu (struct urcu_reader, struct
 * urcu_qsbr_reader: public, since _LGPL_SOURCE code inlines the read
 * lock), whose address this thread caches in its own TLS the first time
 * it writes to a table of that flavor. After that, a writer on a counted
 * thread pays a load of t->reg, a compare with this thread's cache, and
 * two loads from it and liburcu's TLS, all on lines this thread owns.
 *
 * The registration bit itself is read on every call, not cached: the
 * application may register or unregister the thread between two calls,
 * and registering a thread that is registered already corrupts liburcu's
 * registry. Only the address is cached, which a thread keeps for life.
 *
 * Flavors the library cannot identify (liburcu linked statically, a
 * struct whose register_thread is not liburcu's) get t->reg NULL and the
 * application's word that the thread is registered; debug builds check
 * what the flavor's read_ongoing() can tell (QSBR: online).
 */
#ifndef CT_RCU_REG_H
#define CT_RCU_REG_H

#ifdef HAVE_CONFIG_H
# include "config.h"	/* CT_URCU_INLINE_READ_LOCK */
#endif

#include <stdint.h>
#include <time.h>

#include <urcu/static/urcu-common.h>	/* struct urcu_reader */
#include <urcu/static/urcu-qsbr.h>	/* struct urcu_qsbr_reader */

#include "conntab-int.h"

enum ct_reg_kind {
	CT_REG_COMMON = 1,	/* memb, mb, signal: struct urcu_reader */
	CT_REG_QSBR,		/* struct urcu_qsbr_reader */
};

/*
 * What the inline read lock (ct_writer_read_lock(), ct_writer_lock() and
 * their unlocks) needs of a family's liburcu, resolved by name once by
 * ct_reg_identify(): gp NULL where it was not found (or the inline lock
 * is not built), and the writers call the flavor.
 */
struct ct_reg_sync {
	struct urcu_gp *gp;		/* urcu_<flavor>_gp */
	/*
	 * smp_mb_slave(): a compiler barrier where *barrier_ok, else a
	 * fence. memb: its urcu_memb_has_sys_membarrier (set once, at
	 * liburcu's init, and never cleared); mb: a 0; signal: a 1.
	 */
	const int *barrier_ok;
	/* liburcu's futex fallback, where the kernel has none (ENOSYS) */
	int (*compat_futex)(int32_t *uaddr, int op, int32_t val,
			    const struct timespec *timeout, int32_t *uaddr2,
			    int32_t val3);
};

/* A liburcu flavor the library knows how to ask about a thread. */
struct ct_reg_family {
	const char *flavor;		/* its struct rcu_flavor_struct */
	const char *register_thread;	/* its register function */
	const char *reader;		/* its per-thread reader state (TLS) */
	enum ct_reg_kind kind;
	const char *gp;			/* its grace-period state */
	/* memb: its membarrier flag; else NULL, and barrier_ok this: */
	const char *sys_membarrier;
	int barrier_ok;
	struct ct_reg_sync sync;	/* the names above, resolved */
};

/*
 * The family of @f (by the names of @f and of @f->register_thread in the
 * dynamic symbol tables, checked against what those names resolve to), or
 * NULL: the bp flavor (it registers threads itself, in its read lock) or
 * one the library cannot identify.
 */
const struct ct_reg_family *ct_reg_identify(const struct rcu_flavor_struct *f);

/*
 * This thread's reader state in the family it last wrote under, and that
 * family's kind (here, so that the fast path reads only this thread's
 * line and liburcu's).
 */
struct ct_reg_cache {
	const struct ct_reg_family *family;
	const void *reader;
	enum ct_reg_kind kind;
	/*
	 * The inline read lock's (ct_writer_read_lock(), ct_writer_lock()):
	 * the family's barrier_ok as it was when cached (memb's flag is set
	 * once and never cleared: a stale 0 costs a fence, never a missed
	 * one), and its gp, NULL where the writers call the flavor.
	 */
	int barrier_ok;
	struct urcu_gp *gp;
	/*
	 * ct_writer_lock()'s one test: family | 1 where the inline lock
	 * applies to the family as cached (memb, mb or signal, gp
	 * resolved), else 0; never equal to a NULL family's 1.
	 */
	uintptr_t inl;
};

extern CT_TLS struct ct_reg_cache ct_reg_cache;

/* What ct_writer_enter() did, for ct_writer_exit() to undo. */
enum ct_reg_held {
	CT_REG_NONE = 0,	/* the thread was counted already */
	CT_REG_REGISTERED,	/* registered for the call */
	CT_REG_ONLINE,		/* QSBR: registered, brought online */
};

/* Is this thread counted by @fam, as far as its cached state tells? */
static inline bool ct_family_counted(const struct ct_reg_family *fam)
{
	const struct ct_reg_cache *c = &ct_reg_cache;

	if (c->family != fam)
		return false;
	/* Online under QSBR: counted, and registered a fortiori. */
	if (c->kind == CT_REG_COMMON)
		return ((const struct urcu_reader *)c->reader)->registered;
	return ((const struct urcu_qsbr_reader *)c->reader)->ctr != 0;
}

/*
 * The fast path: may the calling thread run a writer of @t as it is?
 * True where t->wreg is NULL (chained and split, whose writers read
 * nothing unlocked; the bp flavor, whose read lock registers the thread;
 * a flavor the library could not identify, on the application's word),
 * and for a thread the flavor counts whose reader state this thread has
 * cached; false sends the caller to ct_writer_enter(). Debug builds send
 * exthash and trie writers under an unidentified flavor there too, for
 * what the flavor's read_ongoing() can tell.
 */
static inline bool ct_writer_counted(const struct conntab *t)
{
	if (!t->wreg) {
#ifdef CT_DEBUG
		return !t->ops->registered_writers;
#else
		return true;
#endif
	}
	return ct_family_counted(t->wreg);
}

/*
 * The same for a call that reads under the read lock on its caller's
 * behalf, whatever the backend (conntab_remove_key()): its lookup stands
 * on nodes that a grace period must wait for, which it does only for a
 * counted thread, on every backend.
 */
static inline bool ct_reader_counted(const struct conntab *t)
{
	if (!t->reg) {
#ifdef CT_DEBUG
		return false;	/* ct_thread_enter() checks what it can */
#else
		return true;
#endif
	}
	return ct_family_counted(t->reg);
}

/*
 * The writers' read lock, inline.
 *
 * The exthash and trie writers take the flavor's read lock around each
 * insert and remove. Through t->flavor that is two calls into liburcu,
 * each reaching its TLS reader state through __tls_get_addr (liburcu is a
 * shared library: general-dynamic TLS), some 78 instructions of an insert
 * of 350. This thread has the address of that state cached already
 * (ct_reg_cache), so for a thread that the flavor counts the lock can do
 * here what liburcu's own static inline read lock does (urcu/static/
 * urcu-memb.h, urcu-mb.h, urcu-signal.h, urcu-qsbr.h: what an
 * application built with _LGPL_SOURCE runs):
 *
 *   memb, mb, signal: the outermost lock copies the family's grace-period
 *   counter (urcu_<flavor>_gp.ctr: its phase bit and a nesting count of
 *   one) into reader->ctr, then orders that store before the critical
 *   section (smp_mb_slave: memb a compiler barrier where liburcu found
 *   membarrier, else a fence; mb a fence; signal a compiler barrier, the
 *   grace period's signal supplies the fence); a nested one adds one to
 *   the nesting count. The outermost unlock orders the section before
 *   the store that drops the count to zero, orders that store before
 *   reading gp->futex, and where a grace period went to sleep waiting
 *   for readers (futex -1) sets it 0 and wakes it (FUTEX_WAKE), as
 *   urcu_common_wake_up_gp() does.
 *
 *   QSBR: the read lock is nothing at all (an assertion, in a liburcu
 *   built with debugging): an online thread is counted by the grace
 *   period until it goes offline or through a quiescent state, neither
 *   of which a writer does.
 *
 * Why mirroring is sound: the grace period (urcu_<flavor>_synchronize_rcu
 * in the shared library) reads reader->ctr and gp->ctr exactly as these
 * inline read locks write them, and sleeps on gp->futex exactly as their
 * unlock wakes it; the inline code is compiled into every _LGPL_SOURCE
 * application, so it is part of liburcu's ABI and a liburcu.so of the
 * same soname must accept it from any thread, mixed with its own calls
 * on the same thread (this lock nests inside the application's, and the
 * other way round). It is written here against liburcu 0.13's headers,
 * with liburcu's own barrier and access macros; configure defines
 * CT_URCU_INLINE_READ_LOCK only where the liburcu headers it builds
 * against are a version whose protocol was checked to be this one
 * (configure.ac), and elsewhere the writers call the flavor.
 *
 * Where the inline lock does not apply, the writers call t->flavor as
 * before: the bp flavor (its read lock registers the thread), a flavor
 * not identified (t->reg NULL), a family whose symbols were not found
 * (its sync.gp NULL, and so the cache's), and a thread the flavor does
 * not count or whose cache is of another family (ct_writer_counted()
 * and ct_thread_enter() had their say before the backend was called;
 * an unregistered thread's read lock is liburcu's business, which
 * asserts there in a debugging build).
 *
 * ct_writer_read_lock() and ct_writer_read_unlock() decide each on its
 * own, on the same test, and need not agree (ct_writer_lock() and
 * ct_writer_unlock(), below, agree by a token): the inline code and the
 * flavor's call run the same protocol on the same reader state (the
 * thread's urcu_<flavor>_reader), so a lock taken inline may be released
 * by the call and the other way round, as an _LGPL_SOURCE application's
 * may. Between the two the thread's cache may move to another family
 * (an eviction's rank callback may write to a table of another flavor:
 * the unlock then calls), its registration cannot change (liburcu
 * forbids that inside a read-side critical section), and the reader
 * state's address is the thread's for life.
 */
#ifdef CT_URCU_INLINE_READ_LOCK
void ct_rl_wake(const struct ct_reg_family *fam);

/*
 * Where the inline lock applies to @t on this thread: the family
 * identified, resolved (gp) and cached, the thread counted by it. Its
 * reader state, or NULL: call the flavor. Everything the lock needs is in
 * this thread's cache line, read before its barriers (after one, the
 * compiler must load anything in memory again).
 */
static inline void *ct_rl_reader(const struct conntab *t)
{
	const struct ct_reg_family *fam = t->reg;
	const struct ct_reg_cache *c = &ct_reg_cache;

	if (!fam || c->family != fam || !c->gp)
		return NULL;
	if (c->kind == CT_REG_QSBR)
		return ((const struct urcu_qsbr_reader *)c->reader)->ctr ?
		       (void *)c->reader : NULL;
	return ((const struct urcu_reader *)c->reader)->registered ?
	       (void *)c->reader : NULL;
}

/* smp_mb_slave(), with the family's barrier_ok read before. */
static inline void ct_rl_slave(int barrier_ok)
{
	if (caa_likely(barrier_ok))
		cmm_barrier();
	else
		cmm_smp_mb();
}
#endif

#ifdef CT_URCU_INLINE_READ_LOCK
/* _urcu_memb_read_lock() and its like, 0.13, on reader state @r. */
static inline void ct_rl_lock(struct urcu_reader *r, const struct urcu_gp *gp,
			      int barrier_ok)
{
	unsigned long tmp;

	cmm_barrier();
	tmp = r->ctr;
	if (caa_likely(!(tmp & URCU_GP_CTR_NEST_MASK))) {
		_CMM_STORE_SHARED(r->ctr, _CMM_LOAD_SHARED(gp->ctr));
		ct_rl_slave(barrier_ok);
	} else {
		_CMM_STORE_SHARED(r->ctr, tmp + URCU_GP_COUNT);
	}
}

/* _urcu_memb_read_unlock() and its like, 0.13, on reader state @r. */
static inline void ct_rl_unlock(struct urcu_reader *r, struct urcu_gp *gp,
				int barrier_ok,
				const struct ct_reg_family *fam)
{
	unsigned long tmp = r->ctr;

	if (caa_likely((tmp & URCU_GP_CTR_NEST_MASK) == URCU_GP_COUNT)) {
		ct_rl_slave(barrier_ok);
		_CMM_STORE_SHARED(r->ctr, tmp - URCU_GP_COUNT);
		ct_rl_slave(barrier_ok);
		/*
		 * urcu_common_wake_up_gp(): a sleeping grace period. Its
		 * uatomic_read() is a volatile load; relaxed here, the same
		 * load, and one ThreadSanitizer sees as atomic where two
		 * writers race to wake.
		 */
		if (caa_unlikely(__atomic_load_n(&gp->futex,
						 __ATOMIC_RELAXED) == -1))
			ct_rl_wake(fam);
	} else {
		_CMM_STORE_SHARED(r->ctr, tmp - URCU_GP_COUNT);
	}
	cmm_barrier();
}
#endif

static inline void ct_writer_read_lock(const struct conntab *t)
{
#ifdef CT_URCU_INLINE_READ_LOCK
	struct urcu_reader *r = ct_rl_reader(t);

	if (r) {
		if (ct_reg_cache.kind == CT_REG_QSBR)
			return;		/* online: counted, and that is all */
		ct_rl_lock(r, ct_reg_cache.gp, ct_reg_cache.barrier_ok);
		return;
	}
#endif
	t->flavor->read_lock();
}

static inline void ct_writer_read_unlock(const struct conntab *t)
{
#ifdef CT_URCU_INLINE_READ_LOCK
	struct urcu_reader *r = ct_rl_reader(t);

	if (r) {
		if (ct_reg_cache.kind == CT_REG_QSBR)
			return;
		ct_rl_unlock(r, ct_reg_cache.gp, ct_reg_cache.barrier_ok,
			     t->reg);
		return;
	}
#endif
	t->flavor->read_unlock();
}

/*
 * A writer's entry and exit in one step each: ct_writer_counted() and
 * ct_writer_read_lock() from one read of this thread's cache, and an
 * unlock told what the lock did.
 *
 * ct_writer_counted(), then the lock, then the unlock each asked the
 * cache again: some 20 of the ~46 instructions the read lock cost each
 * exthash and trie write. ct_writer_lock() asks once and returns a
 * token for ct_writer_unlock():
 *
 *   CT_WL_UNCOUNTED (0): the thread is not counted, as
 *	ct_writer_counted() says false; nothing is held, and the caller
 *	takes the front end's path (ct_thread_enter());
 *   CT_WL_FLAVOR: t->flavor->read_lock() was called (the flavor is not
 *	identified, its symbols were not resolved, the inline lock is not
 *	built, or ct_writer_lock_counted() was told CT_WL_UNCOUNTED); the
 *	unlock calls the flavor's;
 *   CT_WL_NOTHING: QSBR, the thread online: its read lock is nothing;
 *   else the address of the thread's struct urcu_reader, whose counter
 *	the lock set inline; the unlock drops it inline.
 *
 * Why the unlock may trust the token rather than ask the cache again, as
 * ct_writer_read_unlock() does: everything the token stands for holds
 * until the unlock, whatever the thread does in between. The reader
 * state's address is the thread's for life; the thread's registration
 * (QSBR: its being online) cannot change inside a read-side critical
 * section, which liburcu forbids; the family's gp is resolved once and
 * never changes. Only the thread's cache may move, to another family (an
 * eviction's rank callback writing to a table of another flavor), which
 * is why the unlock reads gp and the barrier flag from the family
 * (t->wreg->sync), not from the cache: under memb the flag read there is
 * the one liburcu's own inline unlock reads (where liburcu exports it;
 * else, and under mb and signal, the family's constant: a fence, or
 * signal's compiler barrier, what their unlock does), and memb's is set
 * once, at liburcu's init, and never cleared (a 0 read at the lock and a
 * 1 at the unlock is a fence and a compiler barrier, each right for its
 * moment).
 *
 * The token goes from the lock to its unlock only down one call chain
 * (xh_remove_inline(), ct_t_insert_wl() and ct_t_remove_wl() take it from
 * their callers, and drop the lock); where the unlock is out of its
 * reach (exthash's insert into a segment that is not plain,
 * xh_insert_locked_slow()), ct_writer_read_unlock() drops it, which may
 * release a lock taken inline and the other way round, as above.
 * tests/test-flavor.c sees ct_writer_unlock() wake a grace period that
 * sleeps waiting for the writer (writer_unlock_wakes), and the lock
 * dropped where an insert or a remove fails (writer_lock_errors).
 */
#define CT_WL_UNCOUNTED	((uintptr_t)0)
#define CT_WL_FLAVOR	((uintptr_t)1)
#define CT_WL_NOTHING	((uintptr_t)2)

static inline uintptr_t ct_writer_lock(const struct conntab *t)
{
	const struct ct_reg_family *fam = t->wreg;
	const struct ct_reg_cache *c = &ct_reg_cache;
	struct urcu_reader *r;

#ifdef CT_URCU_INLINE_READ_LOCK
	/* Nearly every write: memb, mb or signal, inline. */
	if (caa_likely(c->inl == ((uintptr_t)fam | 1))) {
		r = (struct urcu_reader *)c->reader;
		if (caa_unlikely(!r->registered))
			return CT_WL_UNCOUNTED;
		ct_rl_lock(r, c->gp, c->barrier_ok);
		return (uintptr_t)r;
	}
#endif
	if (!fam) {
#ifdef CT_DEBUG
		if (t->ops->registered_writers)
			return CT_WL_UNCOUNTED;	/* ct_thread_enter() checks */
#endif
		t->flavor->read_lock();
		return CT_WL_FLAVOR;
	}
	if (c->family != fam)
		return CT_WL_UNCOUNTED;
	if (c->kind == CT_REG_QSBR) {
		if (!((const struct urcu_qsbr_reader *)c->reader)->ctr)
			return CT_WL_UNCOUNTED;
#ifdef CT_URCU_INLINE_READ_LOCK
		if (c->gp)
			return CT_WL_NOTHING;	/* online: counted */
#endif
		t->flavor->read_lock();
		return CT_WL_FLAVOR;
	}
	r = (struct urcu_reader *)c->reader;
	if (!r->registered)
		return CT_WL_UNCOUNTED;
#ifdef CT_URCU_INLINE_READ_LOCK
	if (c->gp) {
		ct_rl_lock(r, c->gp, c->barrier_ok);
		return (uintptr_t)r;
	}
#endif
	t->flavor->read_lock();
	return CT_WL_FLAVOR;
}

/*
 * ct_writer_lock() for a call whose thread is counted already (the front
 * end's path, after ct_thread_enter()): never CT_WL_UNCOUNTED. Where
 * ct_writer_lock() says uncounted all the same, the flavor's lock: a
 * debug build's unidentified flavor, or a cache moved to another family
 * since the front end's check (an eviction's rank callback that wrote to
 * a table of another flavor, before the trie's eviction inserts and
 * removes).
 */
static inline uintptr_t ct_writer_lock_counted(const struct conntab *t)
{
	uintptr_t wl = ct_writer_lock(t);

	if (wl == CT_WL_UNCOUNTED) {
		t->flavor->read_lock();
		wl = CT_WL_FLAVOR;
	}
	return wl;
}

static inline void ct_writer_unlock(const struct conntab *t, uintptr_t wl)
{
#ifdef CT_URCU_INLINE_READ_LOCK
	const struct ct_reg_sync *sync;

	if (caa_likely(wl > CT_WL_NOTHING)) {
		sync = &t->wreg->sync;
		ct_rl_unlock((struct urcu_reader *)wl, sync->gp,
			     *sync->barrier_ok, t->wreg);
		return;
	}
#endif
	if (wl == CT_WL_FLAVOR)
		t->flavor->read_unlock();
}

/*
 * Before a call of @t's backend that needs the thread counted by the
 * flavor (@what names it in a debug build's message): make sure it is,
 * registering it (or, under QSBR, bringing it online) if it is not.
 * @reads: the call reads under the read lock itself, so it needs the
 * thread counted on every backend; else only where the backend's
 * writers do (ops->registered_writers). Returns what ct_writer_exit()
 * must undo once the backend has returned; the thread stays counted in
 * between, so that every grace period that starts while the call holds
 * the read lock waits for it: what it reads there stays valid until it
 * is done.
 */
int ct_thread_enter(const struct conntab *t, const char *what, bool reads);

static inline int ct_writer_enter(const struct conntab *t, const char *what)
{
	return ct_thread_enter(t, what, false);
}

/* After the backend's call: undo @held under flavor @f. */
void ct_writer_exit(const struct rcu_flavor_struct *f, int held);

#ifdef CT_DEBUG
void ct_writer_check_debug(const struct conntab *t, const char *what);
/*
 * A reader's call (@what) on @t: abort with a message that names the
 * call and the thread unless the thread is inside a read-side critical
 * section of the table's flavor and, where the library can tell,
 * registered with it. Release builds check nothing: see CT_READER_CHECK.
 */
void ct_reader_check_debug(const struct conntab *t, const char *what);
#define CT_READER_CHECK(t, what)	ct_reader_check_debug(t, what)
#else
#define CT_READER_CHECK(t, what)	do { } while (0)
#endif

#endif /* CT_RCU_REG_H */
