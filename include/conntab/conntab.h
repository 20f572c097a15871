/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * @file conntab.h
 * @brief Concurrent connection tables: 4-tuple -> connection, RCU readers.
 *
 * A table maps a connection key (zone, protocol, family, local and remote
 * address and port) to a user object that embeds a struct conntab_node.
 * Lookups are lock-free and run inside a read-side critical section of the
 * application's liburcu flavor; writers take locks inside the library and
 * never wait for a grace period.
 *
 * The library links no liburcu flavor: conntab_create() is a macro that
 * hands it the flavor of the urcu header (<urcu.h>, <urcu-qsbr.h>,
 * <urcu-bp.h>, ...) included where the call is compiled, so that header
 * may come before or after this one, as long as it comes before the call:
 * @code
 * #include <urcu.h>
 * #include <conntab/conntab.h>
 * @endcode
 * A call with no such header before it does not compile (the error names
 * the fix) rather than fail at run time; conntab_create_flavor() takes
 * the flavor explicitly (&urcu_memb_flavor with <urcu/urcu-memb.h>, which
 * maps no rcu_flavor). minimal.c is a complete program; doc/design.md
 * (the main page) states the concurrency rules.
 *
 * Threads: readers (lookups, walks, scans) run under the flavor's read
 * lock, in threads registered with the flavor (online, for QSBR), as
 * liburcu requires. Writers (the insert calls, remove, timewait),
 * conntab_stats() and conntab_destroy() may be called from any thread,
 * registered with the flavor or not (online or offline, for QSBR): where
 * the call needs it (the writers of CONNTAB_EXTHASH and CONNTAB_TRIE,
 * which read under the flavor's read lock and free through its
 * call_rcu(); conntab_remove_key() on every backend, whose lookup runs
 * under the read lock), the library registers the thread, or brings it
 * online, for the call's duration, which costs an unregistered thread's
 * call a registration and an unregistration (liburcu's registry mutex,
 * twice): register the threads that write often. Two exceptions. A thread that holds the read
 * lock is a reader and must be registered: a writer called there from an
 * unregistered thread is not protected, and debug builds (--enable-debug)
 * abort. And with a flavor the library cannot identify (liburcu linked
 * statically, or a struct rcu_flavor_struct whose register_thread is not
 * liburcu's), call the writers, conntab_stats() and conntab_destroy() of
 * CONNTAB_EXTHASH and CONNTAB_TRIE, and conntab_remove_key(), from
 * registered threads (online, for QSBR). Debug builds also check every
 * reader call (lookups, walks, scans): one outside the read lock, or on a
 * thread the flavor does not count, stops with a message that names the
 * call and the thread.
 */

/**
 * @example minimal.c
 * The smallest complete embedding: register the thread, create a table,
 * insert a connection, look it up under the RCU read lock, swap in a
 * TIME_WAIT node, remove it, free both through call_rcu(), destroy.
 */
#ifndef CONNTAB_CONNTAB_H
#define CONNTAB_CONNTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @def CONNTAB_API
 * Marks the functions libconntab exports. Empty for applications; while the
 * library itself is built (-fvisibility=hidden) it gives them default
 * visibility, so that only the conntab_* API leaves the shared object.
 */
#if defined(__GNUC__) && defined(CONNTAB_BUILDING)
# define CONNTAB_API __attribute__((visibility("default")))
#else
# define CONNTAB_API
#endif

struct rcu_flavor_struct;

/**
 * Table implementations; choose one in conntab_config::backend. 0, a
 * zero-initialised config's, is no backend of its own: conntab_create()
 * takes it for CONNTAB_CHAINED, the default (conntab_backend_name() and
 * conntab_backend_available() know no backend 0).
 */
enum conntab_backend {
	CONNTAB_CHAINED = 1,	/**< fixed-size chained hash, per-bucket locks */
	CONNTAB_SPLIT,		/**< established slots + time-wait chain per bucket, one cache line */
	CONNTAB_EXTHASH,	/**< dynamic extensible hash: grows and shrinks online */
	CONNTAB_TRIE,		/**< multi-bit trie over the key bits */
};

/**
 * The keyed hash of a table's hash backends; choose one in
 * conntab_config::hash. Every choice is a pseudo-random function of the key
 * under the table's 128-bit secret: whoever does not know the secret cannot
 * compute which keys share a chain. CONNTAB_TRIE indexes by the key's own
 * bits and computes no hash.
 */
enum conntab_hash {
	CONNTAB_HASH_AUTO = 0,	/**< the fastest keyed PRF this CPU runs */
	CONNTAB_HASH_SIPHASH,	/**< SipHash-1-3 keyed with the table's secret */
	CONNTAB_HASH_AES,	/**< AES-128 keyed with the table's secret */
};

/** Connection state of a node in the table. */
enum conntab_state {
	CONNTAB_ESTABLISHED = 0,	/**< live connection */
	CONNTAB_TIMEWAIT = 1,		/**< closed, still to be found */
};

/** An IPv4 or IPv6 address; for AF_INET only @c v4 is used, the rest is 0. */
union conntab_addr {
	struct in_addr  v4;	/**< IPv4 address, network byte order */
	struct in6_addr v6;	/**< IPv6 address */
	uint8_t         bytes[16];	/**< raw bytes */
};

/**
 * The identity of a connection. At most one node per key is in a table.
 *
 * A packet arriving at this host maps as source -> remote, destination ->
 * local. Unused address bytes of an AF_INET key must be zero: build keys
 * with conntab_key_v4(), conntab_key_v6() or conntab_key_from_sockaddr(),
 * which zero the whole key first.
 */
struct conntab_key {
	uint16_t zone;		/**< isolation domain (netns, VRF, tenant); 0 if unused */
	uint8_t  proto;		/**< IPPROTO_TCP, IPPROTO_UDP, ... */
	uint8_t  family;	/**< AF_INET or AF_INET6 */
	uint16_t lport;		/**< local port, network byte order */
	uint16_t rport;		/**< remote port, network byte order */
	union conntab_addr laddr;	/**< local address */
	union conntab_addr raddr;	/**< remote address */
};

/**
 * The link a connection object embeds to be put in a table (intrusive, like
 * the kernel's hlist_node). The chain pointer, the full hash and the key
 * share the first 64 bytes, one cache line, so a chain walk touches one
 * line per node; the pair link (conntab_insert_pair()) follows on the next
 * line, where only pair operations and walks read it: 72 bytes since 0.4
 * (libconntab.so.3), when the first line had no room left for it.
 *
 * A hit reads the node's first 56 bytes only. An object aligned to 64
 * bytes that puts up to 8 bytes of its hottest fields before the node
 * gets them on the line the hit already read (doc/performance.md, "The
 * node and the user's line").
 *
 * All fields are private; read them with conntab_node_key() and
 * conntab_node_state(), initialise with conntab_node_init().
 */
struct conntab_node {
	struct conntab_node *ct_next;	/**< @private chain link (RCU) */
	uint32_t ct_hash;		/**< @private full keyed hash of ct_key */
	uint8_t ct_state;		/**< @private enum conntab_state */
	uint8_t ct_flags;		/**< @private backend use */
	uint16_t ct_aux;		/**< @private backend use */
	struct conntab_key ct_key;	/**< @private the key, copied at insert */
	void *ct_owner;			/**< @private table the node is linked in */
	struct conntab_node *ct_peer;	/**< @private other half of a pair, or NULL */
};

/**
 * @def CONNTAB_MAX_EXPECTED
 * The largest conntab_config::expected that conntab_create() accepts:
 * 2^32 connections (2^26 where size_t has 32 bits: about as many nodes
 * as the address space holds). A larger hint is refused with EINVAL, not
 * honoured: it is a bug such as (size_t)-1, and sizing for it allocated
 * gigabytes. Up to the maximum each backend sizes for the hint as far as
 * it goes (CONNTAB_CHAINED its fixed array to 2^24 buckets of six slots,
 * CONNTAB_SPLIT to as many of five, CONNTAB_EXTHASH its first segments to
 * 2^28 chains, CONNTAB_TRIE its root's first wide node to 2^20 slots) and
 * past that grows online or loads its chains more.
 */
#if SIZE_MAX > 0xffffffffu
# define CONNTAB_MAX_EXPECTED	((size_t)1 << 32)
#else
# define CONNTAB_MAX_EXPECTED	((size_t)1 << 26)
#endif

/** Table parameters for conntab_create(). Zero-initialise, then set. */
struct conntab_config {
	enum conntab_backend backend;	/**< implementation; 0 = CONNTAB_CHAINED */
	size_t expected;	/**< sizing hint: expected number of nodes (0 = small,
				     at most #CONNTAB_MAX_EXPECTED); the hash backends
				     size their arrays from it, the trie the first wide
				     node of its root. A pair (conntab_insert_pair())
				     is two nodes: count 2 per pair, or the hash
				     backends' chains are twice as long */
	size_t max_entries;	/**< hard cap, 0 = none; beyond it insert fails -ENOSPC */
	const uint8_t *secret;	/**< 16-byte hash secret; NULL = random per table */
	const struct rcu_flavor_struct *flavor;	/**< NULL = the flavor of the urcu
						     header the application included */
	/**
	 * Keyed hash; 0 = CONNTAB_HASH_AUTO: AES where the CPU has it (x86-64
	 * AES-NI, arm64 crypto extensions), else SipHash. CONNTAB_HASH_AES on
	 * a CPU without AES instructions: conntab_create() fails with EINVAL.
	 */
	enum conntab_hash hash;
};

/** A snapshot of a table's counters, filled by conntab_stats(). */
struct conntab_stats {
	size_t entries;		/**< connections in the table (a pair once) */
	size_t timewait;	/**< of which in CONNTAB_TIMEWAIT */
	size_t buckets;		/**< buckets (chained: lines of six slots;
				     split: lines of five and two chains), or
				     trie internal nodes for CONNTAB_TRIE */
	size_t memory;		/**< bytes the library itself holds for this table */
	size_t max_depth;	/**< longest chain (chained: most nodes in a
				     bucket; split: on one side of one), or
				     deepest trie path */
	size_t resizes;		/**< completed online resizes */
};

/**
 * The online resizes of a table, broken down; filled by
 * conntab_resize_stats(). Backends that do not resize (chained, split)
 * report zeros.
 */
struct conntab_resize_stats {
	size_t splits;		/**< completed splits (exthash: segments split in two;
				     trie: dense nodes made twice as wide) */
	size_t merges;		/**< completed merges (exthash: buddy segments joined;
				     trie: dense nodes halved) */
	size_t dir_slots;	/**< directory size in slots now (0 without a directory;
				     trie: slots of a dense root node) */
	size_t dir_resizes;	/**< completed directory doublings and halvings */
	size_t in_progress;	/**< splits started and not yet finished */
};

/**
 * Event counters of a table, filled by conntab_counters(): what eviction
 * pressure and expiry sweeps look like from outside. Each is a running
 * total since conntab_create() (pairs: the number now), read without
 * stopping writers. Set @c size to sizeof(struct conntab_counters) before
 * the call: later releases append fields, and fill only the @c size bytes
 * a caller built against an older header has.
 */
struct conntab_counters {
	size_t size;		/**< in: sizeof(struct conntab_counters) */
	uint64_t evictions;	/**< nodes or pairs that eviction unlinked */
	uint64_t evict_refused;	/**< evicting inserts that failed -ENOSPC */
	uint64_t scan_passes;	/**< conntab_scan() passes completed */
	uint64_t pairs;		/**< pairs in the table now */
};

/** Opaque table handle. */
struct conntab;

/**
 * Where a conntab_scan() pass stands. Zero-initialise it to start a pass;
 * then leave it to the library, which zeroes it again at the end of the
 * pass, and only then: while a pass is under way the cursor is never all
 * zero (conntab_cursor_done()). It belongs to one table. 48 bytes: the
 * position (a trie's is the key string of the last node visited, 40 bytes
 * for IPv6), encrypted and authenticated under a random key of the table
 * (SIV with SipHash-2-4), so that it may be handed out as a token: it
 * shows nothing of the table, its addresses, hashes or keys (only whether
 * two cursors of one table stand at the same place), and conntab_scan()
 * refuses one of another table, a changed one or made-up bytes.
 */
struct conntab_cursor {
	uint64_t opaque[6];	/**< @private the pass's position */
};

/**
 * Whether no conntab_scan() pass is under way on a cursor: true for a
 * zeroed cursor (a new one, or one whose pass the last call ended), false
 * while a pass is under way, also after a callback stopped a call on the
 * last node of the pass.
 *
 * So after conntab_scan() returned 1, it tells the end of the pass (true)
 * from a callback that returned 1 to stop the call (false: the next call
 * goes on after that node). Callbacks that never return 1 need not ask.
 * @param cur a cursor of conntab_scan()
 * @return 1 if @p cur is zeroed or NULL (no pass can be under way on no
 *         cursor: a loop on it ends), else 0
 */
static inline int conntab_cursor_done(const struct conntab_cursor *cur)
{
	if (!cur)
		return 1;
	return !(cur->opaque[0] | cur->opaque[1] | cur->opaque[2] |
		 cur->opaque[3] | cur->opaque[4] | cur->opaque[5]);
}

/**
 * Recover the object that embeds a node.
 * @param ptr    pointer to the struct conntab_node member
 * @param type   type of the containing object
 * @param member name of the node member in @p type
 */
#define conntab_entry(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/**
 * Prepare a node for its first insert (or for reuse after a grace period).
 * @param n node to initialise; NULL does nothing (the insert that follows
 *          refuses the NULL node with -EINVAL)
 */
static inline void conntab_node_init(struct conntab_node *n)
{
	if (n)
		memset(n, 0, sizeof(*n));
}

/**
 * The key of a node: valid while the node is in a table, or after a
 * lookup for as long as the caller holds the RCU read lock.
 * @param n a node returned by a lookup or walk
 * @return the node's key (never NULL for a non-NULL @p n)
 */
static inline const struct conntab_key *
conntab_node_key(const struct conntab_node *n)
{
	return &n->ct_key;
}

/**
 * The state of a node.
 * @param n a node returned by a lookup or walk
 * @return CONNTAB_ESTABLISHED or CONNTAB_TIMEWAIT
 */
static inline enum conntab_state
conntab_node_state(const struct conntab_node *n)
{
	return (enum conntab_state)__atomic_load_n(&n->ct_state,
						   __ATOMIC_RELAXED);
}

/**
 * Create a table with an explicit RCU flavor.
 *
 * This is what conntab_create() calls. @p flavor is used when
 * conntab_config::flavor is NULL.
 * @param cfg    parameters (not kept after the call)
 * @param flavor liburcu flavor of the application (e.g. &rcu_flavor)
 * @return the table, or NULL with errno set: EINVAL for a bad config (an
 *         unknown or unavailable backend or hash, conntab_config::expected
 *         above #CONNTAB_MAX_EXPECTED), or no flavor; ENOMEM.
 */
CONNTAB_API struct conntab *
conntab_create_flavor(const struct conntab_config *cfg,
		      const struct rcu_flavor_struct *flavor);

/**
 * Create a table.
 *
 * conntab_create() is a macro that passes @c rcu_flavor, the flavor of the
 * urcu header included before the call (<urcu.h>, <urcu-qsbr.h>, ...;
 * before or after this header), to conntab_create_flavor(). With no such
 * header before the call, the call does not compile. The function of the
 * same name (reached as (conntab_create)(cfg), or through dlsym) needs
 * conntab_config::flavor set.
 * @param cfg parameters (not kept after the call)
 * @return the table, or NULL with errno set (EINVAL, ENOMEM)
 */
CONNTAB_API struct conntab *conntab_create(const struct conntab_config *cfg);

/** @cond CONNTAB_MACRO (documented as the function above) */
#ifndef CONNTAB_BUILDING
/*
 * rcu_flavor is expanded where the macro is used, not here: a urcu header
 * included after this one still maps it to its flavor (urcu_memb_flavor,
 * ...) in time. Without one it stays this declaration, which the compiler
 * refuses to use, with the message below: the mistake shows when the call
 * is compiled, not as EINVAL when it runs. (A compiler without the
 * attribute says that rcu_flavor is undeclared.)
 */
# if !defined(rcu_flavor) && defined(__has_attribute)
#  if __has_attribute(unavailable)
extern const struct rcu_flavor_struct rcu_flavor
	__attribute__((unavailable("conntab_create() takes the RCU flavor of "
		"the urcu header included before the call: #include <urcu.h> "
		"(or <urcu-qsbr.h>, <urcu-bp.h>, ...) first, or call "
		"conntab_create_flavor(cfg, &urcu_memb_flavor)")));
#  endif
# endif
# define conntab_create(cfg) conntab_create_flavor((cfg), &rcu_flavor)
#endif
/** @endcond */

/**
 * Destroy a table. No reader or writer may use @p t any more.
 * @param t       table (NULL is ignored)
 * @param release called once for every connection still in the table: for
 *                a pair once, with its @c a (may be NULL)
 */
CONNTAB_API void conntab_destroy(struct conntab *t,
				 void (*release)(struct conntab_node *n));

/**
 * Insert a connection in state CONNTAB_ESTABLISHED.
 * @param t   table
 * @param n   node, initialised with conntab_node_init(), in no table
 * @param key copied into @p n
 * @return 0; -EEXIST if the key is present (either state); -ENOSPC at
 *         max_entries; -ENOMEM (table unchanged); -EBUSY if @p n is in a
 *         table; -EINVAL for NULL arguments or a malformed key.
 */
CONNTAB_API int conntab_insert(struct conntab *t, struct conntab_node *n,
			       const struct conntab_key *key);

/**
 * Insert, replacing a TIME_WAIT node of the same key in one step.
 *
 * A concurrent reader finds the old node or @p n, never neither.
 * @param t        table
 * @param n        new node
 * @param key      copied into @p n
 * @param recycled set to the replaced TIME_WAIT node (free it after a grace
 *                 period), or NULL if the key was absent
 * @return as conntab_insert(); -EEXIST if an ESTABLISHED node holds the key.
 */
CONNTAB_API int conntab_insert_recycle(struct conntab *t,
				       struct conntab_node *n,
				       const struct conntab_key *key,
				       struct conntab_node **recycled);

/**
 * Find a connection. The caller holds the RCU read lock and keeps holding
 * it while it uses the result. A node present during the whole call is
 * always found, also while the table resizes or other keys change.
 * @param t   table
 * @param key key to find
 * @return the node, or NULL if absent (or on NULL arguments)
 */
CONNTAB_API struct conntab_node *conntab_lookup(struct conntab *t,
						const struct conntab_key *key);

/**
 * Find @p n keys at once, overlapping their memory accesses.
 * Same semantics as conntab_lookup() for each key.
 * @param t    table
 * @param keys array of @p n keys
 * @param out  array of @p n results (NULL where absent)
 * @param n    number of keys
 * @return the number of keys found
 */
CONNTAB_API size_t conntab_lookup_batch(struct conntab *t,
					const struct conntab_key *keys,
					struct conntab_node **out, size_t n);

/**
 * The table's keyed hash of a key, for the hashed calls below: a caller
 * that handles a burst in stages hashes each key once, prefetches with
 * conntab_prefetch(), looks up with conntab_lookup_hashed() and inserts a
 * miss with conntab_insert_hashed(). The value is valid for @p t only:
 * never stable across tables, processes or restarts. Any thread; no lock.
 * @param t   table
 * @param key key
 * @return the hash; 0 for CONNTAB_TRIE, which computes none (and ignores
 *         the hash in the calls below); 0 with errno EINVAL for NULL
 *         arguments or a malformed key (a valid hash may be 0 too: clear
 *         errno first to tell)
 */
CONNTAB_API uint64_t conntab_hash(const struct conntab *t,
				  const struct conntab_key *key);

/**
 * Prefetch what a lookup of @p hash reads first (its bucket), so that the
 * miss overlaps other work, as conntab_lookup_batch() overlaps its keys'.
 * A hint: no effect on any result, cheap for any value of @p hash, nothing
 * for CONNTAB_TRIE. Call it inside the read-side critical section of the
 * lookup it prepares, as a reader (debug builds check).
 * @param t    table (NULL is ignored)
 * @param hash conntab_hash() of the key to be looked up
 */
CONNTAB_API void conntab_prefetch(const struct conntab *t, uint64_t hash);

/**
 * conntab_lookup() of @p key with its hash computed beforehand: the same
 * result and rules (the caller holds the RCU read lock while it uses the
 * result) when @p hash is conntab_hash(@p t, @p key). A wrong @p hash may
 * miss a present key; it never returns a node of another key.
 * @param t    table
 * @param key  key to find
 * @param hash conntab_hash() of @p key (ignored by CONNTAB_TRIE)
 * @return the node, or NULL if absent (or on NULL arguments)
 */
CONNTAB_API struct conntab_node *conntab_lookup_hashed(struct conntab *t,
						       const struct conntab_key *key,
						       uint64_t hash);

/**
 * conntab_insert() with the key's hash computed beforehand, handing back
 * the node that holds the key when it is present: a miss of
 * conntab_lookup_hashed() that another thread has filled meanwhile is
 * resolved in the same call. A wrong @p hash is refused, the table and
 * @p n unchanged (CONNTAB_TRIE takes any).
 * @param t        table
 * @param n        node, initialised with conntab_node_init(), in no table
 * @param key      copied into @p n
 * @param hash     conntab_hash(@p t, @p key)
 * @param existing (may be NULL) set on -EEXIST to the node that held
 *                 @p key (either state) at a moment during the call, else
 *                 to NULL. It is a lookup's result: the caller holds the
 *                 RCU read lock across the call and while it uses it.
 * @return as conntab_insert(); -EINVAL also for a wrong @p hash
 */
CONNTAB_API int conntab_insert_hashed(struct conntab *t, struct conntab_node *n,
				      const struct conntab_key *key,
				      uint64_t hash,
				      struct conntab_node **existing);

/**
 * Unlink a node. Free or reuse it only after a grace period. For half of
 * a pair (conntab_insert_pair()) both halves are unlinked, in one writer
 * step; the caller frees the object that embeds them once.
 * @param t table
 * @param n node
 * @return 0; -ENOENT if @p n is not in @p t; -EINVAL for NULL arguments
 */
CONNTAB_API int conntab_remove(struct conntab *t, struct conntab_node *n);

/**
 * Unlink the node that holds @p key (ESTABLISHED or TIME_WAIT), for a
 * caller that has the key and not the node. One writer step: the node
 * returned held @p key and was unlinked by this call; a concurrent
 * remove, timewait or recycle of it is retried against whatever node
 * then holds the key. The call takes the RCU read lock itself (it may
 * also be made inside one) and, like the other writers, may come from a
 * thread the flavor does not count: the library counts it for the call
 * (see "Threads" above). Free or reuse the node only after a grace period.
 * @param t   table
 * @param key the connection's key
 * For half of a pair both halves go, as with conntab_remove(), and the
 * half that held @p key is returned.
 * @return the unlinked node; NULL with errno ENOENT if no node holds
 *         @p key, EINVAL for a NULL argument or a malformed key
 */
CONNTAB_API struct conntab_node *conntab_remove_key(struct conntab *t,
						   const struct conntab_key *key);

/**
 * Replace the ESTABLISHED node @p est with @p tw in state CONNTAB_TIMEWAIT,
 * same key, in one step: a concurrent lookup finds @p est or @p tw, never
 * neither. @p tw may equal @p est to flip the state in place; otherwise
 * @p est is unlinked (free it after a grace period).
 * @param t   table
 * @param est the established node
 * @param tw  the time-wait node (in no table), or @p est
 * @return 0; -ENOENT if @p est is not in @p t; -EINVAL if it is already
 *         TIME_WAIT, is half of a pair (conntab_insert_pair()) or for NULL
 *         arguments; -EBUSY if @p tw is in a table.
 */
CONNTAB_API int conntab_timewait(struct conntab *t, struct conntab_node *est,
				 struct conntab_node *tw);

/**
 * Call @p fn for the nodes of the table. The caller holds the RCU read lock.
 * Every node present during the whole walk is visited exactly once, also
 * across a concurrent resize; nodes inserted or removed meanwhile may or
 * may not be visited. @p fn may call conntab_remove() or conntab_timewait()
 * on the node it is given.
 *
 * A pair (conntab_insert_pair()) is visited once, through its @c a;
 * @p fn may remove it (both halves go).
 *
 * Order: CONNTAB_TRIE visits the nodes in key order (the order of
 * conntab_walk_prefix(): zone, protocol, family, local address and port,
 * remote address and port, each big-endian); the hash backends in no
 * particular order.
 * @param t   table
 * @param fn  callback; a nonzero return stops the walk
 * @param arg passed to @p fn
 * @return 0, or the first nonzero value of @p fn; -EINVAL for NULL
 *         arguments. A walk allocates no memory.
 */
CONNTAB_API int conntab_walk(struct conntab *t,
			     int (*fn)(struct conntab_node *n, void *arg),
			     void *arg);

/**
 * As conntab_walk(), visiting only the nodes in @p state.
 *
 * Backends that keep the states apart (CONNTAB_SPLIT) walk only the nodes
 * of that state, so a time-wait sweep does not scan established entries.
 * @param t     table
 * @param state CONNTAB_ESTABLISHED or CONNTAB_TIMEWAIT
 * @param fn    callback; a nonzero return stops the walk
 * @param arg   passed to @p fn
 * @return as conntab_walk(); -EINVAL for an unknown state
 */
CONNTAB_API int conntab_walk_state(struct conntab *t, enum conntab_state state,
				   int (*fn)(struct conntab_node *n, void *arg),
				   void *arg);

/**
 * Visit the next nodes of a pass over the whole table, in bounded calls.
 *
 * A pass starts from a zeroed cursor and ends with the call that returns
 * 1 and zeroes the cursor; each call visits at most @p budget nodes in the
 * backend's order and records in @p cur where it stopped. A callback's
 * nonzero value stops a call but never ends the pass, so a callback that
 * may return 1 tells the two apart with conntab_cursor_done(). A whole
 * pass, one call per tick, until it ends or fails:
 * @code
 * do {
 *         rcu_read_lock();
 *         ret = conntab_scan(t, &cur, 64, fn, arg);
 *         rcu_read_unlock();
 * } while (ret >= 0 && !conntab_cursor_done(&cur));
 * @endcode The caller holds the RCU read lock
 * during each call, not between calls, so a long pass never holds up a
 * grace period: this is what expiry (idle timeouts) and statistics sweeps
 * are built on, a little work per tick.
 *
 * Over one pass, whatever inserts, removes, time-waits and online resizes
 * happen between and during the calls: every node present for the whole
 * pass is visited exactly once; any other node at most once (a node
 * removed and inserted again with the same key counts as one). No call
 * rescans what the pass already covered, and none allocates.
 *
 * A pair (conntab_insert_pair()) is one node of the pass, visited
 * through its @c a.
 *
 * Order: the hash backends visit their nodes in an order fixed by the
 * keyed hash and the node's address (CONNTAB_EXTHASH: hash, then address,
 * which no split or merge changes); CONNTAB_TRIE in key order, as
 * conntab_walk().
 *
 * Cost: O(@p budget) plus one resume (one bucket or segment, or one trie
 * descent). The budget also bounds the work on empty slots: a call on a
 * sparse fixed-size table (CONNTAB_CHAINED, CONNTAB_SPLIT holding far
 * fewer nodes than buckets) stops after 16 x @p budget empty buckets and
 * returns 0 having visited fewer than @p budget nodes; CONNTAB_TRIE counts
 * the internal nodes and empty slots it passes against the same 16 x
 * @p budget.
 *
 * @p fn may call conntab_remove() or conntab_timewait() on the node it is
 * given.
 * @param t      table
 * @param cur    the pass's cursor (zeroed to start a pass)
 * @param budget most calls of @p fn in this call (>= 1)
 * @param fn     callback; a nonzero return ends this call
 * @param arg    passed to @p fn
 * @return 1 when this call reached the end of the pass (@p cur is zeroed:
 *         the next call starts a new pass); 0 when the budget ran out first;
 *         @p fn's value when it is nonzero, 1 included (@p cur stays just
 *         after that node, never zeroed, even after the last node of the
 *         pass: the next call goes on from there); -EINVAL for NULL
 *         arguments, a zero @p budget, or a cursor that is neither zeroed
 *         nor left by a call on @p t (another table's, changed, made up:
 *         @p cur is left as it was).
 */
CONNTAB_API int conntab_scan(struct conntab *t, struct conntab_cursor *cur,
			     size_t budget,
			     int (*fn)(struct conntab_node *n, void *arg),
			     void *arg);

/**
 * Insert, making room at max_entries by evicting a sampled node.
 *
 * As conntab_insert(), except when the table holds max_entries: then the
 * library offers @p rank a sample of at least 8 nodes (all of them when
 * the table holds fewer), chosen without regard to their keys' values,
 * each node about equally likely to be in it, at a cost of O(sample)
 * cache misses whatever the keys (8 rank calls a sample, and a bounded
 * walk, also in a bucket that a known secret flooded),
 * and no scan of the table (but for the empty buckets between its few
 * nodes where a cap is far below the sizing hint). Ties among the best
 * ranks go to a uniform choice.
 * Parts of the table whose lock another writer holds for longer than a
 * short spin are left out of the sample rather than waited for (two
 * evictions could wait for each other), and so is a pair in another
 * writer's step (being inserted or removed); an insert whose sample
 * found no victim but met such a step, or finds that a remove made room
 * meanwhile, tries again, pausing (CONNTAB_TRIE, whose sample takes no
 * lock, samples again until that step ends), so that a table at a tiny
 * cap does not refuse a newcomer while another writer's eviction is
 * making room: -ENOSPC means that the nodes sampled all ranked negative
 * (or, in the hash backends, that 1000 tries in a row were each crossed
 * by another writer's step, which takes a livelock no scheduler keeps
 * up). @p rank says
 * how willing the application is to lose a node: negative means never (an
 * assured connection), otherwise larger means sooner (idle time, TIME_WAIT
 * first, ...). The node with the largest non-negative rank is unlinked and
 * @p n inserted in the same writer step, so the entry count never exceeds
 * max_entries; the victim is returned in @p evicted, to be freed after a
 * grace period (a reader that found it may still hold it). This is the
 * kernel conntrack's "early drop" and Redis's sampled eviction, made a
 * table operation; doc/design.md says how each backend samples.
 *
 * Below max_entries, or with max_entries 0, it is conntab_insert().
 * @p rank runs under the library's writer lock (CONNTAB_TRIE: under its RCU
 * read lock; the trie claims the victim, links @p n, then unlinks the
 * victim, and a writer that meets a claimed victim waits for the call to
 * end): it must be short, must not block, and must not call conntab
 * functions on @p t. On CONNTAB_TRIE, holding no writer lock, it may be
 * offered a node that another thread has just removed (its memory stays
 * valid until a grace period, as for a lookup; that node is never the
 * victim): it reads, and decides nothing from the node being in the
 * table. Whatever the backend, an error return never comes
 * with a victim: @p evicted is NULL and the table is as it was.
 * @param t       table
 * @param n       node, initialised, in no table
 * @param key     copied into @p n
 * @param rank    how willing the application is to lose @p victim
 * @param arg     passed to @p rank
 * @param evicted set to the unlinked victim, or NULL
 * @return 0 (@p evicted says whether a node made room); -ENOSPC when the
 *         table is full and every sampled node ranked negative (nothing
 *         changed); -EEXIST if the key is present (nothing evicted);
 *         -EBUSY, -ENOMEM and -EINVAL as conntab_insert(), and -EINVAL
 *         for a NULL @p rank or @p evicted.
 */
CONNTAB_API int conntab_insert_evict(struct conntab *t, struct conntab_node *n,
				     const struct conntab_key *key,
				     long (*rank)(struct conntab_node *victim,
						  void *arg),
				     void *arg, struct conntab_node **evicted);

/**
 * Insert the two directions of one connection as a pair, both or neither.
 *
 * A pair is one connection found by two keys (the original and the reply
 * direction of a NAT or conntrack entry); @p a and @p b are usually
 * embedded in the same object. It is one writer step: a conntab_insert()
 * of @p ka or @p kb racing with it either fails with -EEXIST or makes this
 * call fail with -EEXIST, and no writer ever sees half a pair. A reader
 * may find one half an instant before the other; once the call returns
 * both are found. The pair counts as one entry against max_entries and in
 * conntab_stats(). Readers may have seen the halves of a failed call:
 * wait a grace period before freeing or reusing them.
 *
 * conntab_remove() or conntab_remove_key() of either half removes both;
 * conntab_timewait() refuses either; walks and scans visit the pair once,
 * through @p a (conntab_walk_prefix() visits each half whose key
 * matches); conntab_destroy() releases it once, with @p a.
 * @param t  table
 * @param a  first half, initialised, in no table
 * @param ka key of @p a, copied into it
 * @param b  second half, initialised, in no table
 * @param kb key of @p b, copied into it
 * @return 0; -EINVAL for NULL arguments, @p a == @p b, equal keys or a
 *         malformed key; then -EBUSY if @p a or @p b is in a table; then
 *         -EEXIST if either key is present (nothing inserted); then
 *         -ENOSPC at max_entries; -ENOMEM (table unchanged).
 */
CONNTAB_API int conntab_insert_pair(struct conntab *t,
				    struct conntab_node *a,
				    const struct conntab_key *ka,
				    struct conntab_node *b,
				    const struct conntab_key *kb);

/**
 * Insert a pair, making room at max_entries by evicting a sampled node or
 * pair: conntab_insert_evict()'s contract for a pair newcomer, which needs
 * one connection's room, as a single node does. A sampled pair is one
 * candidate, offered to @p rank through its @c a; if it is chosen both
 * halves are unlinked and @p evicted is its @c a. Errors as
 * conntab_insert_pair(), -EEXIST at the cap evicting nothing, and -EINVAL
 * for a NULL @p rank or @p evicted.
 * @param t       table
 * @param a       first half, initialised, in no table
 * @param ka      key of @p a
 * @param b       second half, initialised, in no table
 * @param kb      key of @p b
 * @param rank    how willing the application is to lose @p victim
 * @param arg     passed to @p rank
 * @param evicted set to the unlinked victim (a pair's @c a), or NULL
 * @return as conntab_insert_pair(); -ENOSPC when the table is full and
 *         every sampled candidate ranked negative (nothing changed)
 */
CONNTAB_API int conntab_insert_pair_evict(struct conntab *t,
					  struct conntab_node *a,
					  const struct conntab_key *ka,
					  struct conntab_node *b,
					  const struct conntab_key *kb,
					  long (*rank)(struct conntab_node *victim,
						       void *arg),
					  void *arg,
					  struct conntab_node **evicted);

/**
 * The other half of @p n's pair. Under the RCU read lock, as a lookup:
 * for a node a lookup returned it is the half of the other direction, or,
 * in the instant of a pair's insert or removal, that half while it is not
 * yet or no longer findable.
 * @param n a node (NULL is allowed)
 * @return the other half, or NULL for a node that is not paired
 */
CONNTAB_API struct conntab_node *conntab_pair_peer(const struct conntab_node *n);

/**
 * Read a table's event counters (struct conntab_counters): O(1), no lock
 * taken, callable at any time from any thread while writers run. Each
 * counter is exact in itself; they are not one instant's snapshot.
 * @param t table
 * @param c filled in up to @c c->size bytes (which the caller sets)
 * @return 0; -EINVAL for NULL arguments or a @c size smaller than the
 *         first release of the struct
 */
CONNTAB_API int conntab_counters(struct conntab *t, struct conntab_counters *c);

/**
 * Call @p fn for every connection whose key agrees with @p key in its first
 * @p bits bits, counted in this key order: zone (16 bits, most significant
 * first), protocol (8), family (8), local address (32 or 128), local port
 * (16), remote address (32 or 128), remote port (16); addresses and ports
 * in network byte order. An IPv4 key has 128 such bits, an IPv6 key 320.
 *
 * So bits = 16 selects one zone, 32 one zone, protocol and family, 64 one
 * local IPv4 address, 80 one local IPv4 endpoint (address and port), 176
 * one local IPv6 endpoint; the fields of @p key past @p bits are ignored.
 * bits = 0 visits every connection.
 *
 * CONNTAB_TRIE finds the matching subtree directly, in time proportional
 * to the answer plus the trie depth, and visits the nodes in key order.
 * The hash backends walk the whole table and filter (time proportional to
 * the table), in no particular order. The caller holds the RCU read lock;
 * concurrency and callback rules are those of conntab_walk().
 * @param t    table
 * @param key  a valid key (conntab_key_v4(), conntab_key_v6(), ...)
 * @param bits prefix length in bits, at most 128 (IPv4) or 320 (IPv6)
 * @param fn   callback; a nonzero return stops the walk
 * @param arg  passed to @p fn
 * @return 0, or the first nonzero value of @p fn; -EINVAL for NULL
 *         arguments, a malformed key or @p bits beyond its key length
 */
CONNTAB_API int conntab_walk_prefix(struct conntab *t,
				    const struct conntab_key *key,
				    unsigned int bits,
				    int (*fn)(struct conntab_node *n, void *arg),
				    void *arg);

/**
 * Read the table's counters. Computes max_depth by scanning the table
 * (O(size)); it takes the writer locks briefly and needs no RCU read lock.
 * Under concurrent writers the counts are a sum over the table's parts,
 * each exact when read, not one instant's; entries is never above
 * conntab_config::max_entries, nor timewait above entries.
 * @param t  table
 * @param st filled in (zeroed for a NULL @p t)
 */
CONNTAB_API void conntab_stats(struct conntab *t, struct conntab_stats *st);

/**
 * Read the table's resize counters (conntab_stats() reports only their
 * sum, splits + merges, as resizes). O(1): no scan, no writer waits on it.
 * Callable from any thread, registered with the flavor or not.
 * @param t  table
 * @param rs filled in
 * @return 0; -EINVAL for NULL arguments
 */
CONNTAB_API int conntab_resize_stats(struct conntab *t,
				     struct conntab_resize_stats *rs);

/**
 * The hash a table uses: what CONNTAB_HASH_AUTO chose at create
 * (CONNTAB_HASH_SIPHASH or CONNTAB_HASH_AES, never AUTO for a table).
 * CONNTAB_TRIE reports the choice too, although it computes no hash.
 * @param t table
 * @return the hash, or CONNTAB_HASH_AUTO for a NULL @p t
 */
CONNTAB_API enum conntab_hash conntab_hash_of(const struct conntab *t);

/**
 * Name of a hash choice.
 * @param h hash
 * @return "auto", "siphash", "aes", or "unknown"
 */
CONNTAB_API const char *conntab_hash_name(enum conntab_hash h);

/**
 * Hash choice from its name (as conntab_hash_name() prints it).
 * @param name hash name
 * @return the enum value, or -EINVAL for an unknown name or NULL
 */
CONNTAB_API int conntab_hash_from_name(const char *name);

/**
 * Name of a backend.
 * @param b backend
 * @return "chained", "split", "exthash", "trie", or "unknown"
 */
CONNTAB_API const char *conntab_backend_name(enum conntab_backend b);

/**
 * Backend from its name (as conntab_backend_name() prints it).
 * @param name backend name
 * @return the enum value, or -EINVAL for an unknown name or NULL
 */
CONNTAB_API int conntab_backend_from_name(const char *name);

/**
 * Whether this build of the library implements a backend.
 * @param b backend
 * @return 1 if conntab_create() accepts it, else 0
 */
CONNTAB_API int conntab_backend_available(enum conntab_backend b);

/**
 * Build an IPv4 key (zeroes the whole key first).
 * @param k     key to fill
 * @param proto IPPROTO_TCP, IPPROTO_UDP, ...
 * @param laddr local address, network byte order
 * @param lport local port, network byte order
 * @param raddr remote address, network byte order
 * @param rport remote port, network byte order
 */
CONNTAB_API void conntab_key_v4(struct conntab_key *k, uint8_t proto,
				uint32_t laddr, uint16_t lport,
				uint32_t raddr, uint16_t rport);

/**
 * Build an IPv6 key (zeroes the whole key first).
 * @param k     key to fill
 * @param proto IPPROTO_TCP, IPPROTO_UDP, ...
 * @param laddr local address
 * @param lport local port, network byte order
 * @param raddr remote address
 * @param rport remote port, network byte order
 */
CONNTAB_API void conntab_key_v6(struct conntab_key *k, uint8_t proto,
				const struct in6_addr *laddr, uint16_t lport,
				const struct in6_addr *raddr, uint16_t rport);

/**
 * Build a key from socket addresses (as from getsockname/getpeername).
 * Zeroes the whole key first.
 * @param k      key to fill
 * @param proto  IPPROTO_TCP, IPPROTO_UDP, ...
 * @param local  local address (AF_INET or AF_INET6)
 * @param remote remote address, same family
 * @return 0, or -EINVAL on NULL, mixed or unknown families
 */
CONNTAB_API int conntab_key_from_sockaddr(struct conntab_key *k, uint8_t proto,
					  const struct sockaddr *local,
					  const struct sockaddr *remote);

/**
 * Format a key as text, snprintf-like:
 * "tcp 192.0.2.1:80 <- 198.51.100.7:40000", IPv6 addresses in brackets,
 * " zone N" appended for a nonzero zone.
 * @param k   key
 * @param buf output buffer (may be NULL when @p len is 0)
 * @param len size of @p buf
 * @return the length the full text needs (excluding the NUL), or -EINVAL
 */
CONNTAB_API int conntab_key_format(const struct conntab_key *k, char *buf,
				   size_t len);

#ifdef __cplusplus
}
#endif

#endif /* CONNTAB_CONNTAB_H */
