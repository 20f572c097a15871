/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Flavor-independent test helpers; see common.h.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__aarch64__)
# include <sys/auxv.h>
# ifndef HWCAP_AES
#  define HWCAP_AES	(1 << 3)
# endif
#endif

#include "common.h"

struct tconn *t_conn_new(uint32_t id)
{
	struct tconn *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	conntab_node_init(&c->node);
	c->magic = T_MAGIC_LIVE;
	c->id = id;
	return c;
}

void t_conn_free_now(struct tconn *c)
{
	/* Scribble over the key too: a reader that still sees it must fail. */
	c->magic = T_MAGIC_DEAD;
	memset(&c->node.ct_key, 0xa5, sizeof(c->node.ct_key));
	free(c);
}

size_t t_backends(enum conntab_backend *out, size_t max)
{
	size_t n = 0;
	int b;

	for (b = CONNTAB_CHAINED; b <= CONNTAB_TRIE && n < max; b++)
		if (conntab_backend_available((enum conntab_backend)b))
			out[n++] = (enum conntab_backend)b;
	return n;
}

enum conntab_hash t_hash = CONNTAB_HASH_AUTO;

int t_cpu_has_aes(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("aes") &&
	       __builtin_cpu_supports("sse4.1");
#elif defined(__aarch64__)
	return (getauxval(AT_HWCAP) & HWCAP_AES) != 0;
#else
	return 0;
#endif
}

size_t t_hashes(enum conntab_hash *out, size_t max)
{
	const char *only = getenv("CONNTAB_TEST_HASH");
	size_t n = 0;

	if (n < max && (!only || !strcmp(only, "siphash")))
		out[n++] = CONNTAB_HASH_SIPHASH;
	if (n < max && t_cpu_has_aes() && (!only || !strcmp(only, "aes")))
		out[n++] = CONNTAB_HASH_AES;
	return n;
}

void t_key(struct conntab_key *k, uint32_t i)
{
	if (i % 4 == 3) {
		struct in6_addr l = { { { 0x20, 0x01, 0x0d, 0xb8 } } };
		struct in6_addr r = { { { 0x20, 0x01, 0x0d, 0xb8, 0xff } } };

		l.s6_addr[15] = 1;
		r.s6_addr[13] = (uint8_t)(i >> 16);
		r.s6_addr[14] = (uint8_t)(i >> 8);
		r.s6_addr[15] = (uint8_t)i;
		conntab_key_v6(k, IPPROTO_TCP, &l, htons(443), &r,
			       htons((uint16_t)(1024 + i % 60000)));
	} else {
		conntab_key_v4(k, i % 8 == 1 ? IPPROTO_UDP : IPPROTO_TCP,
			       htonl(0xc0000201), htons(80),
			       htonl(0x0a000000 | (i >> 4)),
			       htons((uint16_t)(1024 + (i & 15))));
	}
}

void t_key_small(struct conntab_key *k, uint32_t i)
{
	uint32_t laddr = htonl(0xc0000201), raddr = htonl(0xc6336407);
	uint16_t rport = htons((uint16_t)(40000 + ((i >> 4) & 3)));
	uint8_t proto = (i & 2) ? IPPROTO_UDP : IPPROTO_TCP;

	if (i & 1) {
		struct in6_addr l = { 0 }, r = { 0 };

		/* Same leading bytes as the IPv4 key: only family differs. */
		memcpy(&l, &laddr, 4);
		memcpy(&r, &raddr, 4);
		if (i & 8)
			r.s6_addr[15] = 1;
		conntab_key_v6(k, proto, &l, htons(80), &r, rport);
	} else {
		if (i & 8)
			raddr ^= htonl(1);
		conntab_key_v4(k, proto, laddr, htons(80), raddr, rport);
	}
	k->zone = (i & 4) ? 7 : 0;
}

int t_key_same(const struct conntab_key *a, const struct conntab_key *b)
{
	return !memcmp(a, b, sizeof(*a));
}

int t_run(Suite *s, unsigned int watchdog_s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	/* Default action of SIGALRM ends the program: a hang is a failure. */
#if defined(__SANITIZE_THREAD__)
	watchdog_s *= 10;	/* ThreadSanitizer: 5-15 times slower */
#endif
	alarm(watchdog_s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	alarm(0);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Checked fixtures: run before each test of their TCase. */
static void t_use_auto(void)
{
	t_hash = CONNTAB_HASH_AUTO;
}

static void t_use_siphash(void)
{
	t_hash = CONNTAB_HASH_SIPHASH;
}

static void t_use_aes(void)
{
	t_hash = CONNTAB_HASH_AES;
}

static void t_add_case(Suite *s, enum conntab_backend b, enum conntab_hash h,
		       const TTest *const *fns, size_t nfns, double timeout)
{
	static const SFun use[] = {
		[CONNTAB_HASH_AUTO] = t_use_auto,
		[CONNTAB_HASH_SIPHASH] = t_use_siphash,
		[CONNTAB_HASH_AES] = t_use_aes,
	};
	/* Check keeps the name pointer: names that live on, one per case. */
	static char names[32][32];
	static size_t nnames;
	char *name = names[nnames++ % 32];
	TCase *tc;
	size_t j;

	if (h == CONNTAB_HASH_AUTO)
		snprintf(name, sizeof(names[0]), "%s", conntab_backend_name(b));
	else
		snprintf(name, sizeof(names[0]), "%s/%s",
			 conntab_backend_name(b), conntab_hash_name(h));
	tc = tcase_create(name);
	tcase_set_timeout(tc, timeout);
	tcase_add_checked_fixture(tc, use[h], NULL);
	for (j = 0; j < nfns; j++)
		tcase_add_loop_test(tc, fns[j], (int)b, (int)b + 1);
	suite_add_tcase(s, tc);
}

void t_add_backend_cases(Suite *s, const TTest *const *fns, size_t nfns,
			 double timeout)
{
	enum conntab_backend bs[8];
	enum conntab_hash hs[4];
	size_t nb = t_backends(bs, 8), nh = t_hashes(hs, 4), i, k;

	for (i = 0; i < nb; i++) {
		if (bs[i] == CONNTAB_TRIE) {
			t_add_case(s, bs[i], CONNTAB_HASH_AUTO, fns, nfns,
				   timeout);
			continue;
		}
		for (k = 0; k < nh; k++)
			t_add_case(s, bs[i], hs[k], fns, nfns, timeout);
	}
}
