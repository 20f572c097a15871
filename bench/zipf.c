/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Random variates for the traffic workloads: Zipf ranks and geometric
 * train lengths.
 *
 * Zipf(s) over ranks 1..N (P(k) proportional to k^-s) by rejection-
 * inversion (W. Hörmann and G. Derflinger, "Rejection-inversion to
 * generate variates from monotone discrete distributions", ACM TOMACS 6(3),
 * 1996): invert the integral H of the hat h(x) = x^-s, round to the nearest
 * rank, and accept unless the point fell in the part of the rank's interval
 * [k - 1/2, k + 1/2] that lies above h(k). O(1) per draw and no table, so
 * 16M flows cost nothing to set up, and exact for every s >= 0 (s = 0 is
 * uniform, s = 1 the harmonic case, both through the same formulas).
 */
#include "config.h"

#include <math.h>

#include "bench.h"

/* log1p(x) / x, continuous at 0. */
static double log1p_over(double x)
{
	if (fabs(x) > 1e-8)
		return log1p(x) / x;
	return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

/* expm1(x) / x, continuous at 0. */
static double expm1_over(double x)
{
	if (fabs(x) > 1e-8)
		return expm1(x) / x;
	return 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

/* H(x) = (x^(1-s) - 1) / (1 - s), or log x for s = 1: h's integral. */
static double zipf_H(const struct b_zipf *z, double x)
{
	double lx = log(x);

	return expm1_over((1 - z->s) * lx) * lx;
}

static double zipf_H_inv(const struct b_zipf *z, double y)
{
	return exp(log1p_over((1 - z->s) * y) * y);
}

static double zipf_h(const struct b_zipf *z, double x)
{
	return exp(-z->s * log(x));
}

void b_zipf_init(struct b_zipf *z, size_t n, double s)
{
	z->s = s;
	z->n = (double)n;
	z->h_x1 = zipf_H(z, 1.5) - 1;	/* h(1) = 1 */
	z->h_n = zipf_H(z, z->n + 0.5);
	z->squeeze = 2 - zipf_H_inv(z, zipf_H(z, 2.5) - zipf_h(z, 2));
}

/* A uniform double in (0, 1]: 53 random bits. */
double b_uniform(uint64_t *rng)
{
	return (double)((b_rand(rng) >> 11) + 1) * 0x1p-53;
}

size_t b_zipf_draw(const struct b_zipf *z, uint64_t *rng)
{
	for (;;) {
		double u = z->h_n + b_uniform(rng) * (z->h_x1 - z->h_n);
		double x = zipf_H_inv(z, u), k = floor(x + 0.5);

		if (k < 1)
			k = 1;
		else if (k > z->n)
			k = z->n;
		/* The squeeze accepts most draws without evaluating H. */
		if (k - x <= z->squeeze ||
		    u >= zipf_H(z, k + 0.5) - zipf_h(z, k))
			return (size_t)k - 1;
	}
}

/* P(rank 1) = 1 / sum_k k^-s: what the draws are checked against. */
double b_zipf_p1(size_t n, double s)
{
	double sum = 0;
	size_t k;

	/* Smallest terms first, for the sum's accuracy. */
	for (k = n; k >= 1; k--)
		sum += exp(-s * log((double)k));
	return 1 / sum;
}

/* Geometric on 1, 2, ... with the given mean (>= 1): P(j) = (1-p)^(j-1) p. */
size_t b_geometric(double mean, uint64_t *rng)
{
	double p = 1 / mean;

	if (p >= 1)
		return 1;
	return 1 + (size_t)floor(log(b_uniform(rng)) / log1p(-p));
}
