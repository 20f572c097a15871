/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/jhash.h against lookup3's published test vectors. The vectors are
 * of the byte-string form (hashlittle), so the test carries that driver
 * too, built on jhash.h's mix and final: if they give the published
 * values, so does hashword() on the same rounds, which the last test
 * checks against the byte form on little-endian words.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "jhash.h"

/* lookup3's hashlittle(): @len bytes, read one by one, seed @seed. */
static uint32_t hash_bytes(const uint8_t *k, size_t len, uint32_t seed)
{
	uint32_t a, b, c, w[3];
	size_t i;

	a = b = c = 0xdeadbeef + (uint32_t)len + seed;
	for (; len > 12; len -= 12, k += 12) {
		for (i = 0; i < 3; i++)
			w[i] = (uint32_t)k[4 * i] |
			       (uint32_t)k[4 * i + 1] << 8 |
			       (uint32_t)k[4 * i + 2] << 16 |
			       (uint32_t)k[4 * i + 3] << 24;
		a += w[0];
		b += w[1];
		c += w[2];
		b_jmix(&a, &b, &c);
	}
	if (!len)
		return c;
	w[0] = w[1] = w[2] = 0;
	for (i = 0; i < len; i++)
		w[i / 4] |= (uint32_t)k[i] << (8 * (i % 4));
	a += w[0];
	b += w[1];
	c += w[2];
	b_jfinal(&a, &b, &c);
	return c;
}

static const char four[] = "Four score and seven years ago";

START_TEST(published_vectors)
{
	ck_assert_uint_eq(hash_bytes((const uint8_t *)"", 0, 0), 0xdeadbeef);
	ck_assert_uint_eq(hash_bytes((const uint8_t *)four, 30, 0),
			  0x17770551);
	ck_assert_uint_eq(hash_bytes((const uint8_t *)four, 30, 1),
			  0xcd628161);
}
END_TEST

START_TEST(words_are_bytes)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint32_t w[10];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t n, i;

	for (n = 0; n <= 10; n++) {
		for (i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			w[i] = (uint32_t)(x >> 32);
		}
		ck_assert_uint_eq(b_jhash_words(w, n, (uint32_t)x),
				  hash_bytes((const uint8_t *)w, 4 * n,
					     (uint32_t)x));
	}
#endif
}
END_TEST

START_TEST(key_fields_count)
{
	struct conntab_key a, b;

	conntab_key_v4(&a, IPPROTO_TCP, 0x0100000a, 0x5000, 0x0200000a,
		       0x409c);
	b = a;
	ck_assert_uint_eq(b_jhash_key(&a, 7), b_jhash_key(&b, 7));
	ck_assert_uint_ne(b_jhash_key(&a, 7), b_jhash_key(&a, 8));
	b.rport ^= 1;
	ck_assert_uint_ne(b_jhash_key(&a, 7), b_jhash_key(&b, 7));
	b = a;
	b.proto = IPPROTO_UDP;
	ck_assert_uint_ne(b_jhash_key(&a, 7), b_jhash_key(&b, 7));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jhash");
	TCase *tc = tcase_create("lookup3");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, published_vectors);
	tcase_add_test(tc, words_are_bytes);
	tcase_add_test(tc, key_fields_count);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
