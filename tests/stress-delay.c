/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/stress and the delay points (lib/delay.h): the list, the setting
 * (CONNTAB_DELAY, or --delay), and how often each point was passed and
 * delayed. The list comes from the library's header, so any build can
 * print it; the counters exist in a build configured with
 * --enable-delay-injection, whose stress links the library's objects to
 * read them (tests/local.mk).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/delay.h"
#include "stress-delay.h"

static const struct {
	const char *name, *what;
} points[CT_DP_COUNT] = {
#define SD_POINT(id, name, what)	[CT_DP_##id] = { name, what },
	CT_DELAY_POINTS(SD_POINT)
#undef SD_POINT
};

void sd_list_points(FILE *f)
{
	unsigned int p;

	for (p = 0; p < CT_DP_COUNT; p++)
		fprintf(f, "%-20s %s\n", points[p].name, points[p].what);
#ifndef CONNTAB_DELAY_INJECTION
	fprintf(f, "(this build has no delay points: configure "
		"--enable-delay-injection)\n");
#endif
}

#ifdef CONNTAB_DELAY_INJECTION

static const char *setting;
static uint64_t total[CT_DP_COUNT];

int sd_setup(const char *spec)
{
	char err[160];

	if (!spec) {
		/* The library read it at load; a bad one stopped us there. */
		setting = getenv("CONNTAB_DELAY");
		return 0;
	}
	if (ct_delay_configure(spec, err, sizeof(err))) {
		fprintf(stderr, "stress: --delay %s: %s\n", spec, err);
		return -1;
	}
	setting = spec;
	return 0;
}

const char *sd_setting(void)
{
	return setting && *setting ? setting : "none (counting passes only)";
}

void sd_mute(int mute)
{
	ct_delay_mute(mute);
}

void sd_reset(void)
{
	ct_delay_reset();
}

/* Points passed since sd_reset(), three a line: name passes/delays. */
void sd_report(const char *what)
{
	uint64_t passed[CT_DP_COUNT], delayed[CT_DP_COUNT];
	unsigned int p, reached = 0, col = 0;

	ct_delay_counts(passed, delayed);
	for (p = 0; p < CT_DP_COUNT; p++) {
		total[p] += passed[p];
		reached += passed[p] != 0;
	}
	printf("  delay points of %s: %u of %u passed (passes/delays):\n",
	       what, reached, CT_DP_COUNT);
	for (p = 0; p < CT_DP_COUNT; p++) {
		if (!passed[p])
			continue;
		printf("%s%-19s %9llu/%-7llu", col ? " " : "    ",
		       points[p].name, (unsigned long long)passed[p],
		       (unsigned long long)delayed[p]);
		if (++col == 3) {
			printf("\n");
			col = 0;
		}
	}
	if (col)
		printf("\n");
}

/* Over the whole run: the points no backend passed. */
void sd_report_total(void)
{
	unsigned int p, missed = 0;

	for (p = 0; p < CT_DP_COUNT; p++)
		missed += !total[p];
	printf("stress: delay points passed in this run: %u of %u%s",
	       CT_DP_COUNT - missed, CT_DP_COUNT, missed ? "; never:" : "\n");
	for (p = 0; missed && p < CT_DP_COUNT; p++)
		if (!total[p])
			printf(" %s", points[p].name);
	if (missed)
		printf("\n");
}

#else /* !CONNTAB_DELAY_INJECTION */

int sd_setup(const char *spec)
{
	if (spec || getenv("CONNTAB_DELAY")) {
		fprintf(stderr, "stress: delays asked for, but this build has "
			"no delay points (configure --enable-delay-injection)\n");
		return -1;
	}
	return 0;
}

const char *sd_setting(void)
{
	return NULL;
}

void sd_mute(int mute)
{
}

void sd_reset(void)
{
}

void sd_report(const char *what)
{
}

void sd_report_total(void)
{
}

#endif
