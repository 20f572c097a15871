/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/stress and the delay points of lib/delay.h (stress-delay.c).
 */
#ifndef T_STRESS_DELAY_H
#define T_STRESS_DELAY_H

#include <stdio.h>

/* Every point's name and what it delays, one a line. */
void sd_list_points(FILE *f);
/*
 * The delays of this run: @spec (--delay), or NULL for CONNTAB_DELAY as
 * the library read it. -1 with a message if it is wrong, or if delays
 * are asked of a build without delay points.
 */
int sd_setup(const char *spec);
/* The setting in words; NULL in a build without delay points. */
const char *sd_setting(void);
/* The calling thread's points off (lib/delay.h: ct_delay_mute()). */
void sd_mute(int mute);
/* Count anew; print what was passed and delayed since, for @what. */
void sd_reset(void);
void sd_report(const char *what);
/* At the end: how many points the whole run passed, and which not. */
void sd_report_total(void);

#endif /* T_STRESS_DELAY_H */
