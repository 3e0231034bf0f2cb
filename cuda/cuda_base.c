/*
 * cuda_base.c - what every host file of the CUDA backend shares, below them
 * all (cuda_int.h): a failed CUDA call as an orch error, and the arena's bump
 * allocator. Nothing here calls another file of the backend.
 */
#include "cuda_int.h"

orch_err
cu_fail(struct be_model *b, cudaError_t ce, const char *what, struct orch_errinfo *reterr)
{
	if (ce == cudaErrorMemoryAllocation) {
		(void)cudaGetLastError();
		return orch_errf(reterr, ORCH_EVRAM, "%s: out of device memory", what);
	}
	/* a sticky error survives a clear and fails the next synchronization too */
	(void)cudaGetLastError();
	if (b != NULL && cudaDeviceSynchronize() != cudaSuccess)
		b->dead = true;
	return orch_errf(reterr, ORCH_ECUDA, "%s: %s (%s)%s", what, cudaGetErrorString(ce),
	                 cudaGetErrorName(ce),
	                 b != NULL && b->dead ? "; the CUDA context is unusable" : "");
}

void *
cu_arena_take(struct be_model *b, uint64_t bytes)
{
	uint64_t n = (bytes + CU_ALIGN - 1) / CU_ALIGN * CU_ALIGN;

	if (b->arena_used + n > b->arena_bytes)
		return NULL;
	void *p = b->arena + b->arena_used;
	b->arena_used += n;
	return p;
}
