#pragma once
/*
 * exec.h - a block's execution on the CPU (exec.cc), as the access checks
 * (check.cc) see it. Internal to cuda/sim.
 */
#include <stddef.h>
#include <stdint.h>

#include "sim.h"

namespace cusim
{

constexpr unsigned MAX_THREADS = 1024;
constexpr unsigned MAX_WARPS = MAX_THREADS / 32;
constexpr size_t SMEM_CAP = 232448; /* 227 KiB, the opt-in maximum of sm_90 */
constexpr size_t SMEM_STATIC_MAX = 48 * 1024;
constexpr size_t SMEM_GAP = 32; /* between shared variables: an overrun lands here */
constexpr unsigned MAX_SVARS = 64;

enum thread_state { TH_FRESH, TH_RUNNABLE, TH_BARRIER, TH_COLLECTIVE, TH_EXITED };

struct sim_thread {
	void *sp; /* saved stack pointer while switched out */
	uint8_t *stack_lo, *stack_hi;
	void *fake_stack; /* AddressSanitizer's, across a switch */
	uint3 tid;
	uint32_t linear, warp, lane;
	thread_state st;
	/* at a collective */
	coll_kind ckind;
	uint32_t cmask;
	unsigned csize;
	int carg, cwidth;
	uint64_t cval, cres;
	const char *file;
	int line;
	int bop, bpred; /* at a barrier: __syncthreads_count/and/or */
	int bres;
};

/* A warp collective some lanes wait at: its lanes, those there, and what it is. */
struct coll_group {
	coll_kind kind;
	int width;
	uint32_t mask, arrived;
};

struct warp_state {
	uint32_t exited, waiting, barrier; /* lane masks */
	uint32_t wanted;                   /* the lanes the pending collectives name */
	uint32_t gen;                      /* completed full-warp __syncwarp()s */
	unsigned n_groups;
	coll_group groups[32]; /* pending collectives (masks may overlap) */
};

struct svar {
	const void *tag;
	const char *name;
	uint32_t off, size;
};

struct exec {
	const kernel_base *k;
	dim3 grid, block;
	uint3 bidx;
	uint32_t n_threads, n_warps, n_exited, n_barrier;
	/* barrier intervals: one epoch per block start and per __syncthreads, counted by
	 * the executor (its shadow's clock); block_epoch0 is the block's first */
	uint32_t epoch, block_epoch0;
	bool checks;    /* ORCH_CUDA_SIM_CHECKS */
	bool cost;      /* ORCH_CUDA_SIM_COST: global accesses counted (cost.cc) */
	sim_thread *th; /* [MAX_THREADS] */
	sim_thread *cur;
	warp_state warps[MAX_WARPS];
	void *host_sp;
	void *host_fake_stack;
	const void *host_stack_bottom;
	size_t host_stack_size;
	/* shared memory: static variables from 0, the dynamic area last */
	uint8_t *smem;
	size_t smem_static, dyn_bytes, dyn_off;
	bool dyn_placed;
	svar svars[MAX_SVARS];
	unsigned n_svars;
	/* the launch's argument bytes (the kernel's closure) */
	uintptr_t param_lo, param_hi;
	/* shared-memory shadow (check.cc), per byte of smem */
	struct shadow *shadow;
	unsigned svar_last; /* the variable the last shared access was in */
	/* device allocations recently accessed (check.cc), valid for acache_gen */
	struct {
		uintptr_t lo, hi;
	} acache[4];
	unsigned acache_next;
	uint64_t acache_gen;
};

/* next_epoch - a new barrier interval of @e's shadow clock. */
void next_epoch(exec *e);
/* the allocation table's generation (memory.cc): bumped by every allocation and free */
extern uint64_t alloc_gen;

/* the executor of the calling host thread while it runs a block's threads, else NULL */
extern __thread exec *tls_exec __attribute__((tls_model("initial-exec")));

/* shared_access - a shared-memory access at offset @off (check.cc). */
void shared_access(exec *e, size_t off, size_t n, int flags);
/* shadow_new - the per-executor shadow of SMEM_CAP bytes (check.cc). */
struct shadow *shadow_new(void);

/* cost counters of a launch (cost.cc): its start, each block's, a global access (not
 * shared memory, the stack or the arguments) of the current thread, its end */
void cost_launch_begin(const exec *e, size_t smem);
void cost_block_begin(void);
void cost_access(uintptr_t a, size_t n, int flags);
void cost_launch_end(const exec *e);

} // namespace cusim
