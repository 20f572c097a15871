/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CONNTAB_TRIE builder (lib/trie/trie-build.c): a subtrie for a set of
 * disjoint subtrees, each given with the bits its keys share.
 */
#ifndef CT_TRIE_BUILD_H
#define CT_TRIE_BUILD_H

#include "trie.h"

/* One subtree to place: a leaf or a node, and bits [0, lim) of its keys. */
struct ct_bitem {
	uintptr_t kid;
	unsigned int lim;
	uint32_t v;			/* scratch: its value in a window */
	uint8_t s[CT_KEY_STR_BUF];
};

/*
 * One build (or several, for a node's many slots): every node allocated
 * is kept on @made (linked through its unused rcu_head) until the caller
 * publishes the result or ct_build_abort() frees them all. Zero it first.
 */
struct ct_build {
	struct ct_trie *tr;
	unsigned int L;			/* bits of the keys' strings */
	struct ct_tnode *made;
	/*
	 * In: the width the top node, if anchored dense, is built to at
	 * least (the sizing hint); set to 0 once it was.
	 */
	unsigned int minw;
};

void ct_bitem_leaf(struct ct_build *b, struct ct_bitem *it, uintptr_t kid);
unsigned int ct_bitems_open(struct ct_tnode *x, const uint8_t *base,
			    struct ct_bitem *it);
/*
 * Build into *out the subtrie of the @n items (n >= 1, pairwise disjoint,
 * agreeing on bits [0, q)) for a slot behind a window that ends at @q
 * (@adj: of an anchored dense node). 0, or -ENOMEM with everything on
 * b->made freed. Unpublished: the caller stores *out.
 */
int ct_build(struct ct_build *b, struct ct_bitem *it, unsigned int n,
	     unsigned int q, bool adj, uintptr_t *out);
void ct_build_abort(struct ct_build *b);
int ct_build_pair(struct ct_trie *tr, unsigned int L, unsigned int q,
		  unsigned int d, const uint8_t *sa, uintptr_t ka,
		  const uint8_t *sb, uintptr_t kb, uintptr_t *out);
void ct_build_keep(struct ct_build *b, struct ct_tnode *x);
int ct_k_piece(struct ct_build *b, struct ct_tnode *x, unsigned int ov,
	       uint32_t want, uintptr_t *out);
struct ct_tnode *ct_k_make(struct ct_trie *tr, unsigned int pos,
			   unsigned int w, const uint16_t *val,
			   const uintptr_t *kid, unsigned int n,
			   unsigned int slack);

#endif /* CT_TRIE_BUILD_H */
