#pragma once
/*
 * kv.cuh - where a token's position lives in the KV cache (struct cuk_kv):
 * a cell of its slot's allocation, or, paged, a row of its block in the
 * layer's pool. The one place kv_append.cu and attention.cu compute it.
 */
#include <stdint.h>

#include "../kernels.h"

namespace cuk
{

/*
 * The row (of kv_dim elements, from kv_base) that holds token @t's position
 * @p. The kernels are instantiated for each layout (@PAGED: kv.blocks is
 * set), so neither pays for the other's branch or registers.
 */
template <bool PAGED>
__device__ __forceinline__ uint64_t
kv_row(const cuk_kv &kv, uint32_t t, uint32_t p)
{
	if constexpr (PAGED)
		return kv.layer_off + (uint64_t)kv.blocks[kv.tbl[t] + p / kv.bt] * kv.bt +
		       p % kv.bt;
	else
		return kv.layer_off + p % kv.cells;
}

/* The allocation token @t's rows are counted from: the pool, or its slot's (K, or V with @v). */
template <bool PAGED>
__device__ __forceinline__ void *
kv_base(const cuk_kv &kv, const uint32_t *slot, uint32_t t, bool v)
{
	if constexpr (PAGED)
		return v ? kv.v_pool : kv.k_pool;
	else
		return v ? kv.v_base[slot[t]] : kv.k_base[slot[t]];
}

/* Whether @kv describes a cache the kernels can address. */
static inline bool
kv_valid(const cuk_kv *kv)
{
	if (kv->blocks != nullptr)
		return kv->bt > 0 && kv->tbl != nullptr && kv->k_pool != nullptr &&
		       kv->v_pool != nullptr;
	return kv->cells > 0 && kv->k_base != nullptr && kv->v_base != nullptr;
}

} // namespace cuk
