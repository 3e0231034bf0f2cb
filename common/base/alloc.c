#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#ifdef ORCH_FAULT_INJECTION
/* Test-only state (SQLite's memdebug): not thread-safe, never set in production. */
static long fail_countdown = -1; /* allocations left before failing; -1: off */
static long fail_repeat;         /* failures left; < 0: forever */
static long faults_hit;

static int
fault_now(void)
{
	if (fail_countdown < 0)
		return 0;
	if (fail_countdown > 0) {
		fail_countdown--;
		return 0;
	}
	if (fail_repeat == 0) {
		fail_countdown = -1;
		return 0;
	}
	if (fail_repeat > 0)
		fail_repeat--;
	faults_hit++;
	return 1;
}

void
alloc_fail_after(long n, long repeat)
{
	fail_countdown = n;
	fail_repeat = repeat;
	faults_hit = 0;
}

long
alloc_faults_hit(void)
{
	return faults_hit;
}
#else
static int
fault_now(void)
{
	return 0;
}

void
alloc_fail_after(long n, long repeat)
{
	(void)n;
	(void)repeat;
}

long
alloc_faults_hit(void)
{
	return 0;
}
#endif

void *
orch_malloc(size_t n)
{
	if (fault_now())
		return NULL;
	return malloc(n ? n : 1);
}

void *
orch_calloc(size_t nmemb, size_t size)
{
	if (fault_now())
		return NULL;
	if (nmemb == 0 || size == 0)
		return calloc(1, 1);
	return calloc(nmemb, size);
}

void *
orch_reallocarray(void *p, size_t nmemb, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(nmemb, size, &n))
		return NULL;
	if (fault_now())
		return NULL;
	return realloc(p, n ? n : 1);
}

char *
orch_strndup(const char *s, size_t n)
{
	char *d;

	if (n == (size_t)-1)
		return NULL;
	d = orch_malloc(n + 1);
	if (d == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

void
orch_free(void *p)
{
	free(p);
}
