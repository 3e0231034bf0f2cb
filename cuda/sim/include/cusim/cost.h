#pragma once
/*
 * cost.h (simulated device) - what each operation the simulated device ran
 * would cost a GPU: launches, memory traffic, arithmetic. C and C++.
 *
 * ORCH_CUDA_SIM_COST=1 turns the counting on (off otherwise: a flag tested per
 * global access); ORCH_CUDA_SIM_COST=FILE also appends one tab-separated
 * line a record to FILE. cuda/sim/README.md "Cost counters" says what each
 * number means and what it cannot see.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cusim_cost_kind {
	CUSIM_COST_KERNEL,  /* a kernel of the .cu files */
	CUSIM_COST_LIBRARY, /* cuBLAS or CUB: bytes and arithmetic from its arguments */
	CUSIM_COST_MEMCPY,
	CUSIM_COST_MEMSET,
	CUSIM_COST_GRAPH, /* a cudaGraphLaunch: its nodes follow as records of their own */
};

/*
 * One operation as a GPU would see it. Sectors are 32 bytes of global memory:
 *   dram_*: distinct sectors the whole operation touched (read, written): its DRAM
 *           traffic if the L2 held nothing before it and everything during it;
 *   l2_*:   distinct sectors each block touched, summed over blocks: what reaches
 *           the L2 if each block's L1 held its own working set (a lower bound of
 *           Nsight's l1tex-to-L2 traffic; re-reads across blocks show here);
 *   req_*:  bytes the threads asked for, access by access (the load/store work).
 * A copy counts its bytes as DRAM sectors, a library call the bytes of its operands.
 */
struct cusim_cost_rec {
	char name[96];
	int kind; /* enum cusim_cost_kind */
	int in_graph;
	uint32_t grid[3], block[3];
	uint32_t smem; /* per block: dynamic + static */
	uint64_t blocks, threads;
	uint64_t dram_rd, dram_wr; /* sectors */
	uint64_t l2_rd, l2_wr;     /* sectors */
	uint64_t req_rd, req_wr;   /* bytes */
	uint64_t host_rd,
	        host_wr;       /* bytes of host memory (over the bus): kernels' pinned, copies' */
	uint64_t const_rd;     /* bytes of __constant__ tables */
	uint64_t atomics;      /* global atomic operations */
	uint64_t collectives;  /* warp collectives (shuffles, votes, __syncwarp), per warp */
	uint64_t barriers;     /* __syncthreads, per block */
	uint64_t fma32;        /* FP32 fused multiply-adds (fmaf): 2 FLOPs each */
	uint64_t dp4a;         /* __dp4a: 8 integer operations each */
	uint64_t tensor_flops; /* FP16/BF16 tensor-core FLOPs (cuBLAS GEMMs) */
	uint64_t fp32_flops;   /* FP32 FLOPs of library calls on FP32 operands */
};

/* cusim_cost_enabled - whether ORCH_CUDA_SIM_COST counts (it is read once). Thread: any. */
int cusim_cost_enabled(void);

/*
 * cusim_cost_take - the records of the operations run since the last call, oldest first,
 * in a malloc'd array the caller frees; their number (0 and NULL if none or counting is
 * off). Work still queued is not run by this: synchronize first. Thread: any (takes the
 * API lock).
 */
size_t cusim_cost_take(struct cusim_cost_rec **out);

/*
 * cusim_cost_skip - while @on, kernels, cuBLAS and CUB calls enqueued are not run when
 * their turn comes (copies are): for a tool that sets up a context whose warm-up it need
 * not pay for. What those kernels would have written stays as it was. Returns the
 * previous setting. Thread: any (takes the API lock, runs the work queued before).
 */
int cusim_cost_skip(int on);

#ifdef __cplusplus
}
#endif
