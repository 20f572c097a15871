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

#include <urcu/static/urcu-common.h>	/* struct urcu_reader */
#include <urcu/static/urcu-qsbr.h>	/* struct urcu_qsbr_reader */

#include "conntab-int.h"

enum ct_reg_kind {
	CT_REG_COMMON = 1,	/* memb, mb, signal: struct urcu_reader */
	CT_REG_QSBR,		/* struct urcu_qsbr_reader */
};

/* A liburcu flavor the library knows how to ask about a thread. */
struct ct_reg_family {
	const char *flavor;		/* its struct rcu_flavor_struct */
	const char *register_thread;	/* its register function */
	const char *reader;		/* its per-thread reader state (TLS) */
	enum ct_reg_kind kind;
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
