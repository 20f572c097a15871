/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RCU glue shared by every backend.
 *
 * The library links no liburcu flavor: the publication primitives are
 * compiler atomics (the same orderings rcu_assign_pointer() and
 * rcu_dereference() give, visible to ThreadSanitizer), and everything that
 * must wait for a grace period goes through the application's
 * struct rcu_flavor_struct.
 */
#ifndef CT_RCU_H
#define CT_RCU_H

#include <urcu/call-rcu.h>
#include <urcu/flavor.h>

/*
 * Publish a pointer: every store that initialised the object pointed to
 * happens before a reader that loads the pointer with ct_rcu_deref() can
 * see it (release; pairs with the consume/acquire in ct_rcu_deref()).
 */
#define ct_rcu_assign(p, v)	__atomic_store_n(&(p), (v), __ATOMIC_RELEASE)

/*
 * Load a pointer published with ct_rcu_assign() (dependency ordered).
 * ThreadSanitizer does not model consume ordering; under it the load is an
 * acquire, so that publication is seen as the happens-before edge it is.
 */
#if defined(__SANITIZE_THREAD__)
# define ct_rcu_deref(p)	__atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#else
# define ct_rcu_deref(p)	__atomic_load_n(&(p), __ATOMIC_CONSUME)
#endif

/*
 * Make the ct_rcu_deref() loads before it acquires: a release store that
 * one of them read (a link a writer moved or unlinked) happens before
 * every access after it, not only those that depend on the pointer
 * loaded. A reader that found a key gone from one chain needs that to
 * find it on the next (split.c, exthash.c). Under ThreadSanitizer those
 * loads are acquires already, which is all the fence adds; and
 * ThreadSanitizer does not model fences (GCC's -Wtsan warns of each), so
 * it gets none and checks exactly the edges the fence gives.
 */
#if defined(__SANITIZE_THREAD__)
# define ct_rcu_deref_fence()	do { } while (0)
#else
# define ct_rcu_deref_fence()	__atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

/*
 * Store a pointer to an object that is already published (unlinking a
 * node: the successor it points to was published before): readers need
 * only an untorn value, no ordering.
 */
#define ct_rcu_store(p, v)	__atomic_store_n(&(p), (v), __ATOMIC_RELAXED)

#endif /* CT_RCU_H */
