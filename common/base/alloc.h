#pragma once
/*
 * alloc.h - the host allocator every orch module uses.
 *
 * Thin wrappers over malloc and friends, so the out-of-memory policy lives in
 * one place and tests can make allocations fail on purpose (SQLite's
 * test_malloc.c). Callers treat NULL as ORCH_ENOMEM and never abort.
 */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* orch_malloc - malloc(@n); NULL when out of memory or when a fault is injected. */
void *orch_malloc(size_t n);

/* orch_calloc - zeroed array of @nmemb × @size; NULL on overflow, OOM or fault. */
void *orch_calloc(size_t nmemb, size_t size);

/* orch_reallocarray - resize @p to @nmemb × @size; on failure @p is untouched and NULL returned. */
void *orch_reallocarray(void *p, size_t nmemb, size_t size);

/* orch_strndup - copy of the first @n bytes of @s plus a NUL; NULL on OOM or fault. */
char *orch_strndup(const char *s, size_t n);

/* orch_free - free(@p); NULL is fine. */
void orch_free(void *p);

/*
 * alloc_fail_after - make allocations fail, for tests (builds with
 * ORCH_FAULT_INJECTION only). After @n more successful allocations, the
 * next @repeat allocations fail (repeat < 0: all of them). alloc_fail_after(-1, 0)
 * switches injection off. alloc_faults_hit() tells how many were failed,
 * so an OOM loop knows when a run succeeded without a fault.
 * Thread: tests only; not thread-safe.
 */
void alloc_fail_after(long n, long repeat);
long alloc_faults_hit(void);

#ifdef __cplusplus
}
#endif
