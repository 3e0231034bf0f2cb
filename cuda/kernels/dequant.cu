/*
 * dequant.cu - weight rows dequantized to F16 or F32 in device memory: the
 * tile a prefill GEMM reads (one weight matrix at a time into a bounded
 * scratch, never the whole model), and what tests compare with
 * dequant_row() bit for bit. One thread per 32-element chunk.
 */
#include <cuda_fp16.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"
#include "deq.cuh"

namespace
{

template <int T>
__global__ void
dequant_kernel(const uint8_t *__restrict__ W, uint64_t row_bytes, uint32_t ne0, uint32_t rows,
               void *out, uint64_t ld, bool f16)
{
	uint32_t chunks = (ne0 + 31) / 32;
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)chunks * rows)
		return;
	uint32_t r = (uint32_t)(i / chunks), c = (uint32_t)(i % chunks);
	uint32_t valid = ne0 - 32 * c < 32 ? ne0 - 32 * c : 32;
	float w[32];
	cuk::deq32<T>(W + (uint64_t)r * row_bytes, c, valid, w);
	uint64_t o = (uint64_t)r * ld + 32 * (uint64_t)c;
#pragma unroll
	for (uint32_t k = 0; k < 32; k++) {
		if (k >= valid)
			break;
		if (f16)
			((__half *)out)[o + k] = __float2half_rn(w[k]);
		else
			((float *)out)[o + k] = w[k];
	}
}

template <int T>
void
dequant_launch(const uint8_t *w, uint64_t row_bytes, uint32_t ne0, uint32_t rows, void *out,
               uint64_t ld, bool f16, cudaStream_t st)
{
	uint64_t n = (uint64_t)((ne0 + 31) / 32) * rows;

	dequant_kernel<T>
	        <<<cuk::div_up(n, 256), 256, 0, st>>>(w, row_bytes, ne0, rows, out, ld, f16);
}

} // namespace

extern "C" cudaError_t
cuk_dequant(const struct cuk_mat *w, uint32_t row0, uint32_t rows, void *out, uint64_t ld, bool f16,
            cudaStream_t st)
{
	if (rows == 0 || row0 + rows > w->rows || ld < w->ne0)
		return cudaErrorInvalidValue;
	CUK_TYPE_SWITCH(w->type, dequant_launch,
	                (const uint8_t *)w->data + (uint64_t)row0 * w->row_bytes, w->row_bytes,
	                w->ne0, rows, out, ld, f16, st)
	return cuk::launched();
}

namespace
{

template <int T>
void
dequant_fits(cudaError_t *e, char *why, size_t why_len)
{
	*e = cuk::fits(dequant_kernel<T>, 256, "dequant", why, why_len);
}

cudaError_t
dequant_check_type(uint32_t type, char *why, size_t why_len)
{
	cudaError_t e = cudaSuccess;

	CUK_TYPE_SWITCH(type, dequant_fits, &e, why, why_len)
	return e;
}

} // namespace

cudaError_t
cuk_check_dequant(char *why, size_t why_len)
{
	return cuk::every_type(dequant_check_type, why, why_len);
}
