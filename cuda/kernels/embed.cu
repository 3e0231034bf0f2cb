/*
 * embed.cu - token embedding lookup: row tok[t] of the embedding matrix,
 * of any supported type, dequantized into the activations (one thread per
 * 32-element chunk; the same values as dequant_row()).
 */
#include "../kernels.h"
#include "check.h"
#include "common.cuh"
#include "deq.cuh"

namespace
{

template <int T>
__global__ void
embed_kernel(const uint8_t *__restrict__ E, uint64_t row_bytes, uint32_t ne0, uint32_t n_vocab,
             const int32_t *__restrict__ tok, uint32_t n_tok, float *__restrict__ x)
{
	uint32_t chunks = (ne0 + 31) / 32;
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)chunks * n_tok)
		return;
	uint32_t t = (uint32_t)(i / chunks), c = (uint32_t)(i % chunks);
	int32_t id = tok[t];
	/* ids are checked on the host; a bad one here would read out of bounds */
	uint32_t row = id >= 0 && (uint32_t)id < n_vocab ? (uint32_t)id : 0;
	uint32_t valid = ne0 - 32 * c < 32 ? ne0 - 32 * c : 32;
	float w[32];
	cuk::deq32<T>(E + (uint64_t)row * row_bytes, c, valid, w);
	float *o = x + (uint64_t)t * ne0 + 32 * (uint64_t)c;
#pragma unroll
	for (uint32_t k = 0; k < 32; k++)
		if (k < valid)
			o[k] = w[k];
}

template <int T>
void
embed_launch(const struct cuk_mat *e, const int32_t *tok, uint32_t n_tok, float *x, cudaStream_t st)
{
	uint64_t n = (uint64_t)((e->ne0 + 31) / 32) * n_tok;

	embed_kernel<T><<<cuk::div_up(n, 256), 256, 0, st>>>((const uint8_t *)e->data, e->row_bytes,
	                                                     e->ne0, e->rows, tok, n_tok, x);
}

} // namespace

extern "C" cudaError_t
cuk_embed(const struct cuk_mat *emb, const int32_t *tok, uint32_t T, float *x, cudaStream_t st)
{
	if (T == 0)
		return cudaSuccess;
	CUK_TYPE_SWITCH(emb->type, embed_launch, emb, tok, T, x, st)
	return cuk::launched();
}

namespace
{

template <int T>
void
embed_fits(cudaError_t *e, char *why, size_t why_len)
{
	*e = cuk::fits(embed_kernel<T>, 256, "embed", why, why_len);
}

cudaError_t
embed_check_type(uint32_t type, char *why, size_t why_len)
{
	cudaError_t e = cudaSuccess;

	CUK_TYPE_SWITCH(type, embed_fits, &e, why, why_len)
	return e;
}

} // namespace

cudaError_t
cuk_check_embed(char *why, size_t why_len)
{
	return cuk::every_type(embed_check_type, why, why_len);
}
