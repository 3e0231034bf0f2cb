/*
 * check.cc - every load and store of a kernel, checked: the __tsan_* entry
 * points that GCC's -fsanitize=thread instrumentation calls, implemented
 * here instead of ThreadSanitizer's runtime (which is not linked).
 *
 * Design notes
 * - The simulated build compiles the kernel files (and only them) with that
 *   instrumentation, so each memory access of device code calls one of
 *   these with its address and size. Outside a kernel (the launchers, host
 *   code in the same files) they return at once.
 * - An address is the thread's own stack (local memory), the launch's
 *   arguments, the block's shared memory, a live device allocation, pinned
 *   host memory, or a static of the loaded images (a __constant__ table).
 *   Anything else - past an allocation's end, in a freed one, pageable host
 *   memory, a misaligned vector access - is a fault naming the kernel, the
 *   block, the thread and the nearest allocation.
 * - Shared memory has a shadow byte for byte: the last writer, and who read
 *   since, with the barrier generation (unique per __syncthreads and per
 *   block) and the warp's __syncwarp generation at the time. Two threads
 *   touching a byte in one barrier interval, at least one writing, with no
 *   full-warp __syncwarp between them when they share a warp, is a race;
 *   atomics race only with plain accesses. A read of a byte no thread of the
 *   block has written is a fault too (what initcheck reports on a GPU).
 * - The AddressSanitizer build does not use this instrumentation (the two
 *   cannot be combined); there ASan checks the kernels' accesses and these
 *   checks cover atomics only.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "exec.h"

namespace cusim
{

/*
 * One byte of shared memory: its last write (epoch, thread, the warp's
 * __syncwarp generation then, atomic or not) and its reads in the newest
 * epoch that has any: one reader, several lanes of one warp at one
 * __syncwarp generation, or several warps. Epochs older than the block's
 * first are stale: the byte is unwritten in this block.
 */
struct shadow_entry {
	uint32_t w_epoch;
	uint16_t w_tid;
	uint8_t w_wgen, w_atomic;
	uint32_t r_epoch;
	uint16_t r_tid;
	uint8_t r_wgen, r_many; /* 0: r_tid alone; 1: lanes of r_tid's warp; 2: warps */
};

struct shadow {
	shadow_entry e[SMEM_CAP];
};

shadow *
shadow_new(void)
{
	void *p = mmap(NULL, sizeof(shadow), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "cusim: out of memory for the shared-memory shadow\n");
		abort();
	}
	return (shadow *)p;
}

void
next_epoch(exec *e)
{
	if (e->epoch >= 0xfff00000u) { /* the clock wraps: every entry becomes stale */
		memset(e->shadow, 0, sizeof(*e->shadow));
		e->epoch = 0;
	}
	e->epoch++;
}

namespace
{

/* The variable holding shared offset @off, its index (n_svars: the dynamic area), or -1. */
int
svar_at(exec *e, size_t off)
{
	const svar *v = &e->svars[e->svar_last];

	if (e->svar_last < e->n_svars && off - v->off < v->size)
		return (int)e->svar_last;
	for (unsigned i = 0; i < e->n_svars; i++)
		if (off - e->svars[i].off < e->svars[i].size) {
			e->svar_last = i;
			return (int)i;
		}
	if (e->dyn_placed && off - e->dyn_off < e->dyn_bytes)
		return (int)e->n_svars;
	return -1;
}

const char *
svar_name(exec *e, size_t off, size_t *ret_at)
{
	int i = svar_at(e, off);

	if (i < 0)
		return "?";
	if ((unsigned)i == e->n_svars) {
		*ret_at = off - e->dyn_off;
		return "extern __shared__";
	}
	*ret_at = off - e->svars[i].off;
	return e->svars[i].name;
}

void
race(exec *e, size_t off, const char *what, uint32_t other, const char *other_did)
{
	size_t at = 0;
	const char *v = svar_name(e, off, &at);
	const sim_thread *o = &e->th[other < e->n_threads ? other : 0];

	fault(cudaErrorLaunchFailure,
	      "shared-memory race: this thread %s byte %zu of __shared__ %s, which thread "
	      "(%u,%u,%u) %s since the last __syncthreads%s",
	      what, at, v, o->tid.x, o->tid.y, o->tid.z, other_did,
	      o->warp == e->cur->warp ? " or full-warp __syncwarp" : "");
}

/* Whether an access by (@tid, @epoch, @wgen) happens before the current thread's now. */
inline bool
ordered(const exec *e, uint32_t tid, uint32_t epoch, uint8_t wgen)
{
	const sim_thread *t = e->cur;

	return epoch != e->epoch || tid == t->linear ||
	       (tid / 32 == t->warp && wgen != (uint8_t)e->warps[t->warp].gen);
}

} // namespace

void
shared_access(exec *e, size_t off, size_t n, int flags)
{
	const sim_thread *t = e->cur;
	const svar *last = &e->svars[e->svar_last];

	/* the hot path: a read of bytes every warp has read since they were written, in the
	 * variable the last access was in */
	if (e->svar_last < e->n_svars && off - last->off < last->size &&
	    off + n - 1 - last->off < last->size && !(flags & ACC_WRITE)) {
		shadow_entry *s = &e->shadow->e[off];
		size_t b = 0;
		while (b < n && s[b].r_epoch == e->epoch && s[b].r_many == 2 &&
		       s[b].w_epoch != e->epoch && s[b].w_epoch >= e->block_epoch0)
			b++;
		if (b == n)
			return;
	}
	int v = svar_at(e, off);
	if (v < 0 || svar_at(e, off + n - 1) != v) {
		fault(cudaErrorIllegalAddress,
		      "%s of %zu bytes at shared-memory offset %zu: outside the block's __shared__ "
		      "variables (past the end of one, or between two)",
		      flags & ACC_WRITE ? "write" : "read", n, off);
		return;
	}
	if (!e->checks)
		return;
	uint8_t wgen = (uint8_t)e->warps[t->warp].gen;
	uint16_t me = (uint16_t)t->linear;
	bool atomic = flags & ACC_ATOMIC;
	for (size_t b = off; b < off + n; b++) {
		shadow_entry *s = &e->shadow->e[b];
		bool written = s->w_epoch >= e->block_epoch0;
		if (!(flags & ACC_WRITE)) {
			if (!written) {
				size_t at = 0;
				const char *name = svar_name(e, b, &at);
				fault(cudaErrorLaunchFailure,
				      "read of byte %zu of __shared__ %s, which no thread of this block "
				      "has written (uninitialized)",
				      at, name);
				return;
			}
			if (!ordered(e, s->w_tid, s->w_epoch, s->w_wgen)) {
				race(e, b, "reads", s->w_tid, "wrote");
				return;
			}
			if (s->r_epoch != e->epoch || (s->r_many == 0 && s->r_tid == me) ||
			    (s->r_many < 2 && s->r_tid / 32 == t->warp && s->r_wgen != wgen)) {
				s->r_epoch =
				        e->epoch; /* the first read since the reads were ordered */
				s->r_tid = me;
				s->r_wgen = wgen;
				s->r_many = 0;
			} else if (s->r_many < 2) {
				s->r_many = s->r_tid / 32 == t->warp ? 1 : 2;
			}
			continue;
		}
		if (written && !(atomic && s->w_atomic) &&
		    !ordered(e, s->w_tid, s->w_epoch, s->w_wgen)) {
			race(e, b, "writes", s->w_tid, "wrote");
			return;
		}
		if (s->r_epoch == e->epoch) {
			bool other;
			if (s->r_many == 2)
				other = true;
			else if (s->r_many == 1)
				other = s->r_tid / 32 != t->warp || s->r_wgen == wgen;
			else
				other = !ordered(e, s->r_tid, s->r_epoch, s->r_wgen);
			if (other) {
				race(e, b, "writes", s->r_tid,
				     s->r_many ? "(and other threads) read" : "read");
				return;
			}
		}
		s->w_epoch = e->epoch;
		s->w_tid = me;
		s->w_wgen = wgen;
		s->w_atomic = atomic;
	}
}

namespace
{

void
bad_global(uintptr_t a, size_t n, int flags)
{
	const allocation *al = find_device_alloc(a, true);
	char near[160] = "no device allocation below it";

	if (al != NULL) {
		if (a >= al->base && a < al->base + al->size)
			snprintf(near, sizeof(near),
			         "%s the %zu-byte allocation at 0x%lx, at offset %lu%s",
			         al->freed ? "inside the FREED" : "running past the end of",
			         al->size, (unsigned long)al->base, (unsigned long)(a - al->base),
			         al->freed ? " (use after cudaFree)" : "");
		else
			snprintf(near, sizeof(near),
			         "%lu bytes past the end of the %s%zu-byte allocation at 0x%lx",
			         (unsigned long)(a - (al->base + al->size)),
			         al->freed ? "freed " : "", al->size, (unsigned long)al->base);
	}
	fault(cudaErrorIllegalAddress, "%s of %zu bytes at 0x%lx: not device memory (%s)",
	      flags & ACC_ATOMIC  ? "atomic"
	      : flags & ACC_WRITE ? "write"
	                          : "read",
	      n, (unsigned long)a, near);
}

/* A device (or pinned, or static) access the cache did not know. */
__attribute__((noinline)) void
global_slow(exec *e, uintptr_t a, size_t n, int flags)
{
	const allocation *al = find_device_alloc(a, false);

	if (al != NULL && !al->freed && a + n <= al->base + al->size) {
		e->acache[e->acache_next] = {al->base, al->base + al->size};
		e->acache_next = (e->acache_next + 1) % 4;
		return;
	}
	if (al == NULL && (is_pinned(a, n) || in_module_image(a, n)))
		return;
	bad_global(a, n, flags);
}

} // namespace

/* The check of one access by the current kernel thread of @e. */
static inline void
check_one(exec *e, uintptr_t a, size_t n, int flags)
{
	uintptr_t off = a - (uintptr_t)e->smem;

	if (off < SMEM_CAP) {
		shared_access(e, off, n, flags);
		return;
	}
	const sim_thread *t = e->cur;
	if (a - (uintptr_t)t->stack_lo < (uintptr_t)(t->stack_hi - t->stack_lo) ||
	    a - e->param_lo < e->param_hi - e->param_lo)
		return;
	if (__builtin_expect(e->cost, 0))
		cost_access(a, n, flags);
	if (e->acache_gen != alloc_gen) {
		memset(e->acache, 0, sizeof(e->acache));
		e->acache_gen = alloc_gen;
	}
	for (int i = 0; i < 4; i++)
		if (a - e->acache[i].lo < e->acache[i].hi - e->acache[i].lo &&
		    e->acache[i].hi - a >= n)
			return;
	global_slow(e, a, n, flags);
}

void
check_access(const void *p, size_t n, int flags)
{
	exec *e = tls_exec;

	if (e != NULL && n > 0)
		check_one(e, (uintptr_t)p, n, flags);
}

} // namespace cusim

/* ---- the instrumentation's entry points ---- */
namespace
{

inline void
acc(const void *p, size_t n, int flags, size_t align)
{
	cusim::exec *e = cusim::tls_exec;

	if (e == NULL)
		return;
	if (align > 1 && ((uintptr_t)p & (align - 1)) != 0) {
		cusim::fault(cudaErrorMisalignedAddress, "misaligned %zu-byte %s at %p", n,
		             flags & cusim::ACC_WRITE ? "store" : "load", p);
		return;
	}
	cusim::check_one(e, (uintptr_t)p, n, flags);
}

} // namespace

#define CUSIM_HOOKS(N)                                              \
	extern "C" void __tsan_read##N(void *p)                     \
	{                                                           \
		acc(p, N, cusim::ACC_READ, N);                      \
	}                                                           \
	extern "C" void __tsan_write##N(void *p)                    \
	{                                                           \
		acc(p, N, cusim::ACC_WRITE, N);                     \
	}                                                           \
	extern "C" void __tsan_volatile_read##N(void *p)            \
	{                                                           \
		acc(p, N, cusim::ACC_READ, N);                      \
	}                                                           \
	extern "C" void __tsan_volatile_write##N(void *p)           \
	{                                                           \
		acc(p, N, cusim::ACC_WRITE, N);                     \
	}                                                           \
	extern "C" void __tsan_unaligned_read##N(void *p)           \
	{                                                           \
		acc(p, N, cusim::ACC_READ, 1);                      \
	}                                                           \
	extern "C" void __tsan_unaligned_write##N(void *p)          \
	{                                                           \
		acc(p, N, cusim::ACC_WRITE, 1);                     \
	}                                                           \
	extern "C" void __tsan_unaligned_volatile_read##N(void *p)  \
	{                                                           \
		acc(p, N, cusim::ACC_READ, 1);                      \
	}                                                           \
	extern "C" void __tsan_unaligned_volatile_write##N(void *p) \
	{                                                           \
		acc(p, N, cusim::ACC_WRITE, 1);                     \
	}
CUSIM_HOOKS(1)
CUSIM_HOOKS(2)
CUSIM_HOOKS(4)
CUSIM_HOOKS(8)
CUSIM_HOOKS(16)
#undef CUSIM_HOOKS

extern "C" void
__tsan_read_range(void *p, unsigned long n)
{
	acc(p, n, cusim::ACC_READ, 1);
}

extern "C" void
__tsan_write_range(void *p, unsigned long n)
{
	acc(p, n, cusim::ACC_WRITE, 1);
}

extern "C" void
__tsan_init(void)
{
}

extern "C" void
__tsan_func_entry(void *)
{
}

extern "C" void
__tsan_func_exit(void)
{
}

extern "C" void
__tsan_vptr_update(void **, void *)
{
}

extern "C" void
__tsan_vptr_read(void **)
{
}

extern "C" void
__tsan_atomic_thread_fence(int)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

extern "C" void
__tsan_atomic_signal_fence(int)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* C++ and __atomic builtins in instrumented code: checked as atomic accesses, then done. */
#define CUSIM_TSAN_ATOMICS(N, T)                                                                  \
	extern "C" T __tsan_atomic##N##_load(const volatile T *a, int)                            \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_READ | cusim::ACC_ATOMIC, 1);          \
		return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                      \
	}                                                                                         \
	extern "C" void __tsan_atomic##N##_store(volatile T *a, T v, int)                         \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		__atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                         \
	}                                                                                         \
	extern "C" T __tsan_atomic##N##_exchange(volatile T *a, T v, int)                         \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                               \
	}                                                                                         \
	extern "C" T __tsan_atomic##N##_fetch_add(volatile T *a, T v, int)                        \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                \
	}                                                                                         \
	extern "C" T __tsan_atomic##N##_fetch_sub(volatile T *a, T v, int)                        \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                \
	}                                                                                         \
	extern "C" T __tsan_atomic##N##_fetch_and(volatile T *a, T v, int)                        \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                \
	}                                                                                         \
	extern "C" T __tsan_atomic##N##_fetch_or(volatile T *a, T v, int)                         \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                 \
	}                                                                                         \
	extern "C" T __tsan_atomic##N##_fetch_xor(volatile T *a, T v, int)                        \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                \
	}                                                                                         \
	extern "C" T __tsan_atomic##N##_fetch_nand(volatile T *a, T v, int)                       \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                               \
	}                                                                                         \
	extern "C" int __tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, int,  \
	                                                          int)                            \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST,              \
		                                   __ATOMIC_SEQ_CST);                             \
	}                                                                                         \
	extern "C" int __tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, int,    \
	                                                        int)                              \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST,               \
		                                   __ATOMIC_SEQ_CST);                             \
	}                                                                                         \
	extern "C" T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, int, int)   \
	{                                                                                         \
		acc((const void *)a, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC, 1);         \
		__atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
		return c;                                                                         \
	}
CUSIM_TSAN_ATOMICS(8, unsigned char)
CUSIM_TSAN_ATOMICS(16, unsigned short)
CUSIM_TSAN_ATOMICS(32, unsigned int)
CUSIM_TSAN_ATOMICS(64, unsigned long long)
#undef CUSIM_TSAN_ATOMICS
