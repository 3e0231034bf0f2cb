#pragma once
/*
 * t.h - the test harness (STYLE.md rule 15). Each check prints file:line,
 * the expression and both values (error codes by name) when it fails, and
 * counts; the test returns from the current function on the first failure.
 * T_RUN() runs one test function; t_done() prints "N passed, N failed" and
 * gives main's exit code. A test that cannot run here exits 77 via T_SKIP().
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"

static int t_failed_checks;
static int t_passed, t_failed;
static const char *t_current;

#define T_FAIL_(...)                                                                             \
	do {                                                                                     \
		fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, t_current ? t_current : "?"); \
		fprintf(stderr, __VA_ARGS__);                                                    \
		fputc('\n', stderr);                                                             \
		t_failed_checks++;                                                               \
	} while (0)

#define T_TRUE(e)                                           \
	do {                                                \
		if (!(e)) {                                 \
			T_FAIL_("T_TRUE(%s) is false", #e); \
			return;                             \
		}                                           \
	} while (0)

#define T_ERR(e, code)                                                        \
	do {                                                                  \
		orch_err t_rv_ = (e), t_want_ = (code);                       \
		if (t_rv_ != t_want_) {                                       \
			T_FAIL_("%s = %s, want %s", #e, orch_err_name(t_rv_), \
			        orch_err_name(t_want_));                      \
			return;                                               \
		}                                                             \
	} while (0)

#define T_OK(e) T_ERR(e, ORCH_OK)

#define T_EQ(a, b)                                                           \
	do {                                                                 \
		intmax_t t_a_ = (intmax_t)(a), t_b_ = (intmax_t)(b);         \
		if (t_a_ != t_b_) {                                          \
			T_FAIL_("%s == %s: %jd != %jd", #a, #b, t_a_, t_b_); \
			return;                                              \
		}                                                            \
	} while (0)

#define T_STREQ(a, b)                                                                         \
	do {                                                                                  \
		const char *t_a_ = (a), *t_b_ = (b);                                          \
		if (t_a_ == NULL || t_b_ == NULL || strcmp(t_a_, t_b_) != 0) {                \
			T_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, t_a_ ? t_a_ : "(null)", \
			        t_b_ ? t_b_ : "(null)");                                      \
			return;                                                               \
		}                                                                             \
	} while (0)

#define T_NEAR(a, b, tol)                                                                          \
	do {                                                                                       \
		double t_a_ = (double)(a), t_b_ = (double)(b), t_t_ = (double)(tol);               \
		if (!(fabs(t_a_ - t_b_) <= t_t_)) {                                                \
			T_FAIL_("%s ≈ %s: %.9g vs %.9g (tolerance %g)", #a, #b, t_a_, t_b_, t_t_); \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define T_SKIP(...)                  \
	do {                         \
		printf("SKIP: ");    \
		printf(__VA_ARGS__); \
		printf("\n");        \
		exit(77);            \
	} while (0)

/* T_ONLY=NAME in the environment runs only the tests whose names contain NAME. */
#define T_RUN(fn)                                          \
	do {                                               \
		const char *t_only_ = getenv("T_ONLY");    \
		if (t_only_ && !strstr(#fn, t_only_))      \
			break;                             \
		int t_before_ = t_failed_checks;           \
		t_current = #fn;                           \
		fn();                                      \
		if (t_failed_checks == t_before_) {        \
			t_passed++;                        \
		} else {                                   \
			t_failed++;                        \
			fprintf(stderr, "FAIL %s\n", #fn); \
		}                                          \
	} while (0)

static inline int
t_done(void)
{
	printf("%d passed, %d failed\n", t_passed, t_failed);
	return t_failed ? 1 : 0;
}

/*
 * t_path - @rel of the test data: "$ORCH_TESTDATA/@rel" (../shared/testdata) when
 * that directory is there; else, as in a clone with nothing beside it, the same
 * path in the repository's "$ORCH_SRC/tests/data" (tests/data/SOURCE.md: what it
 * carries, what make deps fetches) when the file is there; else the run is
 * skipped (exit 77) with a line naming the file. In a static buffer (4 in turn);
 * fails the run when ORCH_TESTDATA is unset. A missing file under the shared
 * directory is the test's to fail.
 */
static inline const char *
t_path(const char *rel)
{
	static char buf[4][1024];
	static int k;
	const char *root = getenv("ORCH_TESTDATA"), *src = getenv("ORCH_SRC");

	if (root == NULL) {
		fprintf(stderr, "ORCH_TESTDATA is not set (ctest sets it to ../shared/testdata)\n");
		exit(1);
	}
	k = (k + 1) % 4;
	if (access(root, F_OK) == 0) {
		snprintf(buf[k], sizeof(buf[k]), "%s/%s", root, rel);
		return buf[k];
	}
	snprintf(buf[k], sizeof(buf[k]), "%s/tests/data/%s", src ? src : ".", rel);
	if (src != NULL && access(buf[k], F_OK) == 0)
		return buf[k];
	printf("skipped: needs %s of the shared test data: %s is missing, and tests/data (what a "
	       "clone carries and make deps fetches, tests/data/SOURCE.md) does not have it\n",
	       rel, root);
	exit(77);
}

/*
 * t_repo - @rel of the repository's own test data, "$ORCH_SRC/tests/data/@rel": files
 * the shared data does not have (tests/data/SOURCE.md), read with or without it. In
 * a static buffer (2 in turn); fails the run when ORCH_SRC is unset.
 */
static inline const char *
t_repo(const char *rel)
{
	static char buf[2][1024];
	static int k;
	const char *src = getenv("ORCH_SRC");

	if (src == NULL) {
		fprintf(stderr, "ORCH_SRC is not set (ctest sets it to the source tree)\n");
		exit(1);
	}
	k = (k + 1) % 2;
	snprintf(buf[k], sizeof(buf[k]), "%s/tests/data/%s", src, rel);
	return buf[k];
}

/* t_shared - whether the shared test data ($ORCH_TESTDATA) is here (else tests/data serves). */
static inline bool
t_shared(void)
{
	const char *root = getenv("ORCH_TESTDATA");

	return root != NULL && access(root, F_OK) == 0;
}

/*
 * t_path_opt - t_path for a file a test can do without (one case of several): NULL,
 * with a line saying what is left out, where neither the shared data nor tests/data
 * has it.
 */
static inline const char *
t_path_opt(const char *rel)
{
	static char buf[1024];
	const char *src = getenv("ORCH_SRC");

	if (t_shared())
		return t_path(rel);
	snprintf(buf, sizeof(buf), "%s/tests/data/%s", src ? src : ".", rel);
	if (src != NULL && access(buf, F_OK) == 0)
		return buf;
	printf("note: %s is the shared test data's only (tests/data/SOURCE.md): its case is left out\n",
	       rel);
	return NULL;
}

/* t_read_file - whole file into a malloc'd buffer; NULL on failure. */
static inline void *
t_read_file(const char *path, size_t *ret_size)
{
	FILE *fp = fopen(path, "rb");
	void *p = NULL;
	long n;

	if (fp == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0) {
		p = malloc(n ? (size_t)n : 1);
		if (p != NULL && fread(p, 1, (size_t)n, fp) != (size_t)n) {
			free(p);
			p = NULL;
		}
		*ret_size = (size_t)n;
	}
	fclose(fp);
	return p;
}

/*
 * t_oom_loop - SQLite's malloc sweep: run @fn(@ctx) with allocation n failing,
 * for n = 0, 1, ... until a run meets no fault. Every faulted run must return
 * ORCH_ENOMEM (and, under ASan, leak nothing); the clean run must return
 * ORCH_OK. Returns the number of faulted runs, or -1 after printing the first
 * wrong result. @fn frees whatever it built.
 */
static inline long
t_oom_loop(orch_err (*fn)(void *ctx), void *ctx, long max_steps)
{
	for (long step = 0; step < max_steps; step++) {
		alloc_fail_after(step, 1);
		orch_err rv = fn(ctx);
		long hit = alloc_faults_hit();
		alloc_fail_after(-1, 0);
		if (hit == 0 && rv == ORCH_OK)
			return step;
		if (hit == 0 || rv != ORCH_ENOMEM) {
			fprintf(stderr, "t_oom_loop: step %ld: %s (fault %s)\n", step,
			        orch_err_name(rv), hit ? "hit" : "not hit");
			return -1;
		}
	}
	fprintf(stderr, "t_oom_loop: no clean run in %ld steps\n", max_steps);
	return -1;
}
