/*
 * cuda_check.c - KV slots made ready on demand (slots only: paged pools
 * are allocated at load), and the residency check.
 *
 * The check asks the runtime about every allocation (cudaPointerGetAttributes:
 * device memory on this device, no host mapping) and the device about its
 * memory (cudaMemGetInfo, which also fails once the context is lost). It
 * synchronizes nothing and may run between steps.
 */
#include "cuda_int.h"

orch_err
cu_reserve(struct be_model *b, uint32_t slot, struct orch_errinfo *reterr)
{
	void *k = NULL, *v = NULL;
	cudaError_t ce;

	if (slot > b->cfg.slots)
		return orch_errf(reterr, ORCH_EINVAL, "slot %u out of range", slot);
	/* a new job: the device sampler's history of the slot starts over (with the prefix
	 * cache a job's first step need not start at position 0) */
	b->hist_dev[slot] = 0;
	if (b->paged || b->k_slot[slot] != NULL) /* paged: the pools were allocated at load */
		return ORCH_OK;
	if (b->dead)
		return orch_errf(reterr, ORCH_ECUDA, "the CUDA context is unusable");
	if ((ce = cudaSetDevice(b->dev)) != cudaSuccess)
		return cu_fail(b, ce, "selecting the device", reterr);
	if ((ce = cudaMalloc(&k, b->kv_slot_bytes)) != cudaSuccess ||
	    (ce = cudaMalloc(&v, b->kv_slot_bytes)) != cudaSuccess) {
		cudaFree(k);
		(void)cudaGetLastError();
		if (ce == cudaErrorMemoryAllocation)
			return orch_errf(reterr, ORCH_EVRAM,
			                 "out of device memory for the KV cache of slot %u "
			                 "(%llu MiB)",
			                 slot, (unsigned long long)(2 * b->kv_slot_bytes >> 20));
		return cu_fail(b, ce, "allocating a KV slot", reterr);
	}
	/* the kernels find a slot's cache through these device tables */
	if ((ce = cudaMemcpyAsync(b->d_k_base + slot, &k, sizeof(k), cudaMemcpyHostToDevice,
	                          b->st)) != cudaSuccess ||
	    (ce = cudaMemcpyAsync(b->d_v_base + slot, &v, sizeof(v), cudaMemcpyHostToDevice,
	                          b->st)) != cudaSuccess ||
	    (ce = cudaStreamSynchronize(b->st)) != cudaSuccess) {
		cudaFree(k);
		cudaFree(v);
		return cu_fail(b, ce, "publishing a KV slot", reterr);
	}
	b->k_slot[slot] = k;
	b->v_slot[slot] = v;
	return ORCH_OK;
}

static orch_err
resident(struct be_model *b, const void *p, const char *what, struct orch_errinfo *reterr)
{
	struct cudaPointerAttributes a;
	cudaError_t ce = cudaPointerGetAttributes(&a, p);

	if (ce != cudaSuccess)
		return cu_fail(b, ce, "cudaPointerGetAttributes", reterr);
	if (a.type != cudaMemoryTypeDevice || a.device != b->dev || a.hostPointer != NULL)
		return orch_errf(reterr, ORCH_EVRAM,
		                 "%s is not resident device memory (type %d, device %d, host "
		                 "mapping %s)",
		                 what, (int)a.type, a.device, a.hostPointer ? "yes" : "no");
	return ORCH_OK;
}

orch_err
cu_check(struct be_model *b, struct orch_errinfo *reterr)
{
	size_t free_b, total_b;
	cudaError_t ce;
	orch_err rv;

	if (b->dead)
		return orch_errf(reterr, ORCH_ECUDA, "the CUDA context is unusable");
	if ((ce = cudaSetDevice(b->dev)) != cudaSuccess ||
	    (ce = cudaMemGetInfo(&free_b, &total_b)) != cudaSuccess)
		return cu_fail(b, ce, "cudaMemGetInfo", reterr);
	if ((rv = resident(b, b->arena, "the arena (weights and scratch)", reterr)) != ORCH_OK)
		return rv;
	if (b->paged && ((rv = resident(b, b->k_pool, "the KV pool", reterr)) != ORCH_OK ||
	                 (rv = resident(b, b->v_pool, "the KV pool", reterr)) != ORCH_OK))
		return rv;
	for (uint32_t s = 0; s <= b->cfg.slots; s++) {
		if (b->k_slot[s] == NULL)
			continue;
		if ((rv = resident(b, b->k_slot[s], "a KV cache slot", reterr)) != ORCH_OK ||
		    (rv = resident(b, b->v_slot[s], "a KV cache slot", reterr)) != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}
