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
 * t_path - "$ORCH_TESTDATA/@rel" in a static buffer; fails the run when the
 * variable is unset, and skips it (exit 77) when the directory is missing, as
 * in a clone with nothing beside it. A missing file under it is the test's to fail.
 */
static inline const char *
t_path(const char *rel)
{
	static char buf[4][1024];
	static int k;
	const char *root = getenv("ORCH_TESTDATA");

	if (root == NULL) {
		fprintf(stderr, "ORCH_TESTDATA is not set (ctest sets it to ../shared/testdata)\n");
		exit(1);
	}
	if (access(root, F_OK) != 0) {
		printf("skipped: needs the shared test data, and %s is missing\n", root);
		exit(77);
	}
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", root, rel);
	return buf[k];
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
