/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The time budget's "stopped" note (bench/budget.c) names what the
 * stopped implementation was doing in the words its caller gave to
 * b_budget_enter(), printed by b_budget_notes() after the size's
 * workloads, when the caller's frame is long gone. bench/stream.c gives
 * a buffer on its stack ("zipf-s1.00-b16"): the note printed garbage
 * while budget.c kept the pointer. Here the section runs in a frame that
 * returns, whose stack is then overwritten, before the note is printed.
 * Under ASan the old code's read is a stack-use-after-return (this
 * program turns that detection on); in any build the note must say what
 * the caller said.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "impl.h"

/* What budget.c takes from the rest of the benchmark. */
struct bench_opts b_opts;
const char *const b_workload_names[W_COUNT] = {
	[W_ZIPF] = "zipf", [W_LOOKUP] = "lookup",
};

/* ASan finds a read of a returned frame only when asked. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_stack_use_after_return=1";
}

static const struct bench_impl im = { .name = "chained" };

/* One budget section that runs out, as b_stream_measure() runs it. */
static __attribute__((noinline)) void section(const char *name)
{
	char wl[24];

	snprintf(wl, sizeof(wl), "%s-b16", name);
	ck_assert(b_budget_enter(B_W(W_ZIPF), &im, 4096, wl));
	/* What the watchdog does at the deadline. */
	__atomic_store_n(&b_budget_over, 1, __ATOMIC_RELAXED);
	ck_assert(!b_budget_leave());
}

/* Overwrite the stack that section()'s frame used. */
static __attribute__((noinline)) void clobber(void)
{
	volatile char junk[4096];
	size_t i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = '#';
}

/* b_budget_notes()'s output. */
static char *notes(void)
{
	static char buf[4096];
	FILE *f = tmpfile();
	int saved;
	size_t got;

	ck_assert_ptr_nonnull(f);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fileno(f), STDOUT_FILENO), 0);
	b_budget_notes();
	fflush(stdout);
	ck_assert_int_ge(dup2(saved, STDOUT_FILENO), 0);
	close(saved);
	rewind(f);
	got = fread(buf, 1, sizeof(buf) - 1, f);
	buf[got] = '\0';
	fclose(f);
	return buf;
}

START_TEST(note_outlives_the_callers_string)
{
	const char *want = "# stopped: chained on zipf at n=4096 "
			   "(zipf-s1.00-b16) after ";
	char *out;

	b_opts.budget_ns = 1000000000u;
	b_opts.budget_set = true;
	b_budget_init();
	section("zipf-s1.00");
	clobber();
	out = notes();
	ck_assert_msg(!strncmp(out, want, strlen(want)),
		      "note: '%s', want it to start '%s'", out, want);
	ck_assert_msg(strstr(out, "over the time budget of 1 s"),
		      "note: '%s'", out);
	/* Printed once. */
	ck_assert_str_eq(notes(), "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("budget");
	TCase *tc = tcase_create("notes");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, note_outlives_the_callers_string);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
