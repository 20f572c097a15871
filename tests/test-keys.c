/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Contract of the table-independent helpers: backend and hash names, the
 * hash choice at create, the AES cipher behind CONNTAB_HASH_AES (FIPS-197
 * vectors), the key material create leaves behind, and the key builders
 * and formatter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "helpers.h"	/* the flavor first: conntab_create() takes it */
#include "../lib/hash/aes.h"
#include "../lib/key.h"

static const char *const names[] = {
	[CONNTAB_CHAINED] = "chained",
	[CONNTAB_SPLIT] = "split",
	[CONNTAB_EXTHASH] = "exthash",
	[CONNTAB_TRIE] = "trie",
};

START_TEST(backend_names)
{
	int b;

	for (b = CONNTAB_CHAINED; b <= CONNTAB_TRIE; b++) {
		ck_assert_str_eq(conntab_backend_name(b), names[b]);
		ck_assert_int_eq(conntab_backend_from_name(names[b]), b);
		ck_assert_int_eq(conntab_backend_from_name(
				 conntab_backend_name(b)), b);
	}
	ck_assert_str_eq(conntab_backend_name(0), "unknown");
	ck_assert_str_eq(conntab_backend_name(99), "unknown");
	ck_assert_str_eq(conntab_backend_name((enum conntab_backend)-1),
			 "unknown");
	ck_assert_int_eq(conntab_backend_from_name(NULL), -EINVAL);
	ck_assert_int_eq(conntab_backend_from_name(""), -EINVAL);
	ck_assert_int_eq(conntab_backend_from_name("unknown"), -EINVAL);
	ck_assert_int_eq(conntab_backend_from_name("CHAINED"), -EINVAL);
	ck_assert_int_eq(conntab_backend_from_name("chained "), -EINVAL);
}
END_TEST

START_TEST(backend_available)
{
	/* The reference backend is always built; unknown values never are. */
	ck_assert_int_eq(conntab_backend_available(CONNTAB_CHAINED), 1);
	ck_assert_int_eq(conntab_backend_available(0), 0);
	ck_assert_int_eq(conntab_backend_available(99), 0);
	ck_assert_int_eq(conntab_backend_available((enum conntab_backend)-1),
			 0);
}
END_TEST

START_TEST(hash_names)
{
	static const char *const hn[] = {
		[CONNTAB_HASH_AUTO] = "auto",
		[CONNTAB_HASH_SIPHASH] = "siphash",
		[CONNTAB_HASH_AES] = "aes",
	};
	int h;

	for (h = CONNTAB_HASH_AUTO; h <= CONNTAB_HASH_AES; h++) {
		ck_assert_str_eq(conntab_hash_name(h), hn[h]);
		ck_assert_int_eq(conntab_hash_from_name(hn[h]), h);
	}
	ck_assert_str_eq(conntab_hash_name(3), "unknown");
	ck_assert_str_eq(conntab_hash_name((enum conntab_hash)-1), "unknown");
	ck_assert_int_eq(conntab_hash_from_name(NULL), -EINVAL);
	ck_assert_int_eq(conntab_hash_from_name(""), -EINVAL);
	ck_assert_int_eq(conntab_hash_from_name("AES"), -EINVAL);
	ck_assert_int_eq(conntab_hash_from_name("sip"), -EINVAL);
	ck_assert_int_eq(conntab_hash_of(NULL), CONNTAB_HASH_AUTO);
}
END_TEST

/*
 * What each choice gives, on every backend: AUTO is AES exactly when the
 * CPU has it (asked of the CPU, not of the library), AES is refused with
 * EINVAL without it, unknown values are refused, and the choice is what
 * conntab_hash_of() reports.
 */
START_TEST(hash_choice)
{
	enum conntab_backend bs[8];
	size_t nb = t_backends(bs, 8), i;
	int aes = t_cpu_has_aes(), h;

	for (i = 0; i < nb; i++) {
		for (h = -1; h <= CONNTAB_HASH_AES + 1; h++) {
			struct conntab_config cfg = {
				.backend = bs[i],
				.hash = (enum conntab_hash)h,
			};
			int want = h;
			struct conntab *t;

			if (h == CONNTAB_HASH_AUTO)
				want = aes ? CONNTAB_HASH_AES :
					     CONNTAB_HASH_SIPHASH;
			if (h < 0 || h > CONNTAB_HASH_AES ||
			    (h == CONNTAB_HASH_AES && !aes))
				want = -1;
			errno = 0;
			t = conntab_create(&cfg);
			if (want < 0) {
				ck_assert_ptr_null(t);
				ck_assert_int_eq(errno, EINVAL);
				continue;
			}
			ck_assert_msg(t != NULL, "%s, hash %d: %s",
				      conntab_backend_name(bs[i]), h,
				      strerror(errno));
			ck_assert_int_eq(conntab_hash_of(t), want);
			conntab_destroy(t, NULL);
		}
	}
}
END_TEST

/* FIPS-197 appendix A.1: the last word of the expanded key. */
START_TEST(aes_key_expansion)
{
	static const uint8_t key[16] = {
		0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
		0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c,
	};
	static const uint8_t w40[16] = {	/* w[40..43] */
		0xd0, 0x14, 0xf9, 0xa8, 0xc9, 0xee, 0x25, 0x89,
		0xe1, 0x3f, 0x0c, 0xc8, 0xb6, 0x63, 0x0c, 0xa6,
	};
	struct ct_aes_key ak;

	ct_aes_expand(&ak, key);
	ck_assert_mem_eq(ak.rk[0], key, 16);
	ck_assert_mem_eq(ak.rk[10], w40, 16);
}
END_TEST

#ifdef CT_HAVE_AES
static CT_AES_TARGET void aes_block(const struct ct_aes_key *ak,
				    const uint8_t *in, uint8_t *out)
{
	ct_aes_block b = ct_aes_encrypt(ak, ct_aes_load(in));

	memcpy(out, &b, 16);
}
#endif

/* FIPS-197 appendix C.1: AES-128 of 00112233... under 00010203... */
START_TEST(aes_cipher)
{
#ifdef CT_HAVE_AES
	static const uint8_t want[16] = {
		0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30,
		0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a,
	};
	uint8_t key[16], in[16], out[16];
	struct ct_aes_key ak;
	int i;

	if (!t_cpu_has_aes())
		return;
	for (i = 0; i < 16; i++) {
		key[i] = (uint8_t)i;
		in[i] = (uint8_t)(i * 0x11);
	}
	ct_aes_expand(&ak, key);
	aes_block(&ak, in, out);
	ck_assert_mem_eq(out, want, 16);
#endif
}
END_TEST

/*
 * Which of the @n 16-byte patterns @pat the stack below the caller's
 * frame still holds (bit i for pattern i): a frame at the same depth as
 * the call just made reads what that call's frames left there. Called
 * right after it, before any other call (even a ck_assert) writes there.
 */
static __attribute__((noinline)) unsigned int
stack_left(const uint8_t (*pat)[16], unsigned int n)
{
	uint8_t below[32768];
	volatile uint8_t *p = below;	/* reads what is there, unwritten */
	unsigned int found = 0, k;
	size_t i, j;

	for (k = 0; k < n; k++)
		for (i = 0; i + 16 <= sizeof(below); i++) {
			for (j = 0; j < 16 && p[i + j] == pat[k][j]; j++)
				;
			if (j == 16) {
				found |= 1u << k;
				break;
			}
		}
	return found;
}

/*
 * conntab_create() copies the secret and expands the AES round keys in
 * its own frame on their way into the table: no copy of the secret or of
 * any round key may stay in the stack it leaves (issue 27, item 11c).
 * Under ASan's fake stack the frames lie elsewhere and this finds
 * nothing either way.
 */
START_TEST(create_leaves_no_key)
{
	static const uint8_t secret[16] = {
		0x9b, 0x31, 0xe4, 0x5c, 0x07, 0xd2, 0x68, 0xaf,
		0x13, 0xc6, 0x7e, 0x40, 0xb9, 0x25, 0xf8, 0x8a,
	};
	enum conntab_hash hs[4];
	struct ct_aes_key ak;
	struct conntab_config cfg = { .secret = secret };
	struct conntab *t;
	size_t nh = t_hashes(hs, 4), h;
	unsigned int left;
	int b;

	/* rk[0] is the secret itself. */
	ct_aes_expand(&ak, secret);
	for (b = CONNTAB_CHAINED; b <= CONNTAB_TRIE; b++) {
		for (h = 0; h < nh && conntab_backend_available(b); h++) {
			cfg.backend = b;
			cfg.hash = hs[h];
			t = conntab_create(&cfg);
			left = stack_left(ak.rk, 11);
			ck_assert_ptr_nonnull(t);
			ck_assert_msg(!left, "%s/%s: create left round keys "
				      "%#x (bit i: rk[i]) in the stack",
				      conntab_backend_name(b),
				      conntab_hash_name(hs[h]), left);
			conntab_destroy(t, NULL);
		}
	}
}
END_TEST

START_TEST(key_v4_zeroes)
{
	struct conntab_key k, want;

	memset(&k, 0xff, sizeof(k));
	conntab_key_v4(&k, IPPROTO_TCP, htonl(0xc0000201), htons(80),
		       htonl(0xc6336407), htons(40000));
	memset(&want, 0, sizeof(want));
	want.proto = IPPROTO_TCP;
	want.family = AF_INET;
	want.lport = htons(80);
	want.rport = htons(40000);
	want.laddr.v4.s_addr = htonl(0xc0000201);
	want.raddr.v4.s_addr = htonl(0xc6336407);
	ck_assert_mem_eq(&k, &want, sizeof(k));
}
END_TEST

START_TEST(key_v6_zeroes)
{
	struct conntab_key k, want;
	struct in6_addr l, r;

	inet_pton(AF_INET6, "2001:db8::1", &l);
	inet_pton(AF_INET6, "2001:db8::2", &r);
	memset(&k, 0xff, sizeof(k));
	conntab_key_v6(&k, IPPROTO_UDP, &l, htons(443), &r, htons(50000));
	memset(&want, 0, sizeof(want));
	want.proto = IPPROTO_UDP;
	want.family = AF_INET6;
	want.lport = htons(443);
	want.rport = htons(50000);
	want.laddr.v6 = l;
	want.raddr.v6 = r;
	ck_assert_mem_eq(&k, &want, sizeof(k));
}
END_TEST

/*
 * The trie's canonical string (lib/key.h) against its definition written
 * out byte by byte: zone big-endian, proto, family, local address and
 * port, remote address and port, zero to the end of the buffer. The
 * IPv4 string is built from whole words; zones and ports whose bytes
 * differ catch a byte in the wrong place.
 */
static void key_str_ref(const struct conntab_key *k, uint8_t *s)
{
	unsigned int a = k->family == AF_INET ? 4 : 16;

	memset(s, 0, CT_KEY_STR_BUF);
	s[0] = (uint8_t)(k->zone >> 8);
	s[1] = (uint8_t)(k->zone & 0xff);
	s[2] = k->proto;
	s[3] = k->family;
	memcpy(s + 4, &k->laddr, a);
	memcpy(s + 4 + a, &k->lport, 2);
	memcpy(s + 6 + a, &k->raddr, a);
	memcpy(s + 6 + 2 * a, &k->rport, 2);
}

START_TEST(key_string)
{
	uint8_t got[CT_KEY_STR_BUF], want[CT_KEY_STR_BUF];
	struct conntab_key k;
	struct in6_addr l, r;
	unsigned int i, j, len;

	srandom(13);
	for (i = 0; i < 2000; i++) {
		for (j = 0; j < 16; j++) {
			l.s6_addr[j] = (uint8_t)random();
			r.s6_addr[j] = (uint8_t)random();
		}
		if (i & 1)
			conntab_key_v6(&k, IPPROTO_UDP, &l, (uint16_t)random(),
				       &r, (uint16_t)random());
		else
			conntab_key_v4(&k, IPPROTO_TCP, (uint32_t)random(),
				       (uint16_t)random(), (uint32_t)random(),
				       (uint16_t)random());
		k.zone = (uint16_t)random();
		memset(got, 0xa5, sizeof(got));
		len = ct_key_str(&k, got);
		key_str_ref(&k, want);
		ck_assert_uint_eq(len, i & 1 ? CT_KEY_STR_MAX : 16);
		ck_assert_uint_eq(ct_key_str_bits(&k), len * 8);
		ck_assert_mem_eq(got, want, CT_KEY_STR_BUF);
	}
}
END_TEST

START_TEST(key_from_sockaddr)
{
	struct sockaddr_in l4 = { .sin_family = AF_INET }, r4 = l4;
	struct sockaddr_in6 l6 = { .sin6_family = AF_INET6 }, r6 = l6;
	struct sockaddr_un u = { .sun_family = AF_UNIX };
	struct conntab_key k, want;

	l4.sin_addr.s_addr = htonl(0xc0000201);
	l4.sin_port = htons(80);
	r4.sin_addr.s_addr = htonl(0xc6336407);
	r4.sin_port = htons(40000);
	memset(&k, 0xff, sizeof(k));
	ck_assert_int_eq(conntab_key_from_sockaddr(&k, IPPROTO_TCP,
			 (struct sockaddr *)&l4, (struct sockaddr *)&r4), 0);
	conntab_key_v4(&want, IPPROTO_TCP, l4.sin_addr.s_addr, l4.sin_port,
		       r4.sin_addr.s_addr, r4.sin_port);
	ck_assert_mem_eq(&k, &want, sizeof(k));

	inet_pton(AF_INET6, "2001:db8::1", &l6.sin6_addr);
	inet_pton(AF_INET6, "2001:db8::2", &r6.sin6_addr);
	l6.sin6_port = htons(443);
	r6.sin6_port = htons(50000);
	l6.sin6_flowinfo = 0x12345;	/* not part of the key */
	l6.sin6_scope_id = 3;
	memset(&k, 0xff, sizeof(k));
	ck_assert_int_eq(conntab_key_from_sockaddr(&k, IPPROTO_UDP,
			 (struct sockaddr *)&l6, (struct sockaddr *)&r6), 0);
	conntab_key_v6(&want, IPPROTO_UDP, &l6.sin6_addr, l6.sin6_port,
		       &r6.sin6_addr, r6.sin6_port);
	ck_assert_mem_eq(&k, &want, sizeof(k));

	/* Mixed, unknown, NULL. */
	ck_assert_int_eq(conntab_key_from_sockaddr(&k, IPPROTO_TCP,
			 (struct sockaddr *)&l4, (struct sockaddr *)&r6),
			 -EINVAL);
	ck_assert_int_eq(conntab_key_from_sockaddr(&k, IPPROTO_TCP,
			 (struct sockaddr *)&l6, (struct sockaddr *)&r4),
			 -EINVAL);
	ck_assert_int_eq(conntab_key_from_sockaddr(&k, IPPROTO_TCP,
			 (struct sockaddr *)&u, (struct sockaddr *)&u),
			 -EINVAL);
	ck_assert_int_eq(conntab_key_from_sockaddr(NULL, IPPROTO_TCP,
			 (struct sockaddr *)&l4, (struct sockaddr *)&r4),
			 -EINVAL);
	ck_assert_int_eq(conntab_key_from_sockaddr(&k, IPPROTO_TCP, NULL,
			 (struct sockaddr *)&r4), -EINVAL);
	ck_assert_int_eq(conntab_key_from_sockaddr(&k, IPPROTO_TCP,
			 (struct sockaddr *)&l4, NULL), -EINVAL);
}
END_TEST

/* Format @k into a roomy buffer, check text and return value. */
static void expect_format(const struct conntab_key *k, const char *want)
{
	char buf[256];
	int n;

	memset(buf, 'x', sizeof(buf));
	n = conntab_key_format(k, buf, sizeof(buf));
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(n, (int)strlen(want));
	/* Measuring only. */
	ck_assert_int_eq(conntab_key_format(k, NULL, 0), (int)strlen(want));
}

START_TEST(key_format)
{
	struct conntab_key k;
	struct in6_addr l, r;

	conntab_key_v4(&k, IPPROTO_TCP, htonl(0xc0000201), htons(80),
		       htonl(0xc6336407), htons(40000));
	expect_format(&k, "tcp 192.0.2.1:80 <- 198.51.100.7:40000");
	k.zone = 7;
	expect_format(&k, "tcp 192.0.2.1:80 <- 198.51.100.7:40000 zone 7");
	k.zone = 65535;
	expect_format(&k,
		      "tcp 192.0.2.1:80 <- 198.51.100.7:40000 zone 65535");

	conntab_key_v4(&k, IPPROTO_UDP, htonl(0x0a000001), htons(53),
		       htonl(0xffffffff), htons(0));
	expect_format(&k, "udp 10.0.0.1:53 <- 255.255.255.255:0");
	k.proto = IPPROTO_SCTP;
	expect_format(&k, "sctp 10.0.0.1:53 <- 255.255.255.255:0");
	k.proto = 200;
	expect_format(&k, "proto200 10.0.0.1:53 <- 255.255.255.255:0");

	inet_pton(AF_INET6, "2001:db8::1", &l);
	inet_pton(AF_INET6, "2001:db8::2", &r);
	conntab_key_v6(&k, IPPROTO_TCP, &l, htons(443), &r, htons(65535));
	expect_format(&k, "tcp [2001:db8::1]:443 <- [2001:db8::2]:65535");
	k.zone = 1;
	expect_format(&k,
		      "tcp [2001:db8::1]:443 <- [2001:db8::2]:65535 zone 1");
	inet_pton(AF_INET6, "::ffff:192.0.2.1", &l);
	conntab_key_v6(&k, IPPROTO_UDP, &l, htons(1), &in6addr_any, htons(2));
	expect_format(&k, "udp [::ffff:192.0.2.1]:1 <- [::]:2");
}
END_TEST

START_TEST(key_format_truncates)
{
	const char *full = "tcp 192.0.2.1:80 <- 198.51.100.7:40000";
	struct conntab_key k;
	char buf[64];
	size_t len;

	conntab_key_v4(&k, IPPROTO_TCP, htonl(0xc0000201), htons(80),
		       htonl(0xc6336407), htons(40000));
	for (len = 1; len <= strlen(full) + 1; len++) {
		memset(buf, 'x', sizeof(buf));
		ck_assert_int_eq(conntab_key_format(&k, buf, len),
				 (int)strlen(full));
		/* Like snprintf: len - 1 characters and a NUL, no more. */
		ck_assert_uint_eq(strlen(buf), len - 1);
		ck_assert_int_eq(strncmp(buf, full, len - 1), 0);
		ck_assert_int_eq(buf[len], 'x');
	}
}
END_TEST

START_TEST(key_format_bad)
{
	struct conntab_key k;
	char buf[64];

	conntab_key_v4(&k, IPPROTO_TCP, htonl(0xc0000201), htons(80),
		       htonl(0xc6336407), htons(40000));
	ck_assert_int_eq(conntab_key_format(NULL, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(conntab_key_format(&k, NULL, 10), -EINVAL);
	k.family = 0;
	ck_assert_int_eq(conntab_key_format(&k, buf, sizeof(buf)), -EINVAL);
	k.family = 99;
	ck_assert_int_eq(conntab_key_format(&k, buf, sizeof(buf)), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("keys");
	TCase *tc = tcase_create("helpers");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, backend_names);
	tcase_add_test(tc, backend_available);
	tcase_add_test(tc, hash_names);
	tcase_add_test(tc, hash_choice);
	tcase_add_test(tc, aes_key_expansion);
	tcase_add_test(tc, aes_cipher);
	tcase_add_test(tc, create_leaves_no_key);
	tcase_add_test(tc, key_v4_zeroes);
	tcase_add_test(tc, key_v6_zeroes);
	tcase_add_test(tc, key_string);
	tcase_add_test(tc, key_from_sockaddr);
	tcase_add_test(tc, key_format);
	tcase_add_test(tc, key_format_truncates);
	tcase_add_test(tc, key_format_bad);
	suite_add_tcase(s, tc);
	return t_run(s, 120);
}
