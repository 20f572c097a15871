/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Arrays of chain heads: their teardown; the dummy node the batch
 * pipeline reads for an empty chain.
 */
#include <stdint.h>

#include "batch.h"
#include "chain.h"
#include "../conntab-int.h"
#include "heads.h"

/* Zero key (no valid key has family 0), its chain ends at once. */
const struct conntab_node ct_batch_dummy = {
	.ct_next = (struct conntab_node *)1,	/* ct_nulls(0) */
};

void ct_heads_release(struct conntab_node **heads, size_t n,
		      void (*release)(struct conntab_node *))
{
	struct conntab_node *node, *next;
	size_t i;

	for (i = 0; i < n; i++) {
		for (node = heads[i]; !ct_is_nulls(node); node = next) {
			next = node->ct_next;	/* release may free node */
			ct_node_release(node);
			if (release)
				release(node);
		}
	}
}
