/*
 * rope.cu - rotary position embedding of Q and K in place, normal (pairs
 * 2i, 2i + 1) and NEOX (pairs i, i + n_rot/2), with optional frequency
 * factors. theta advances by repeated multiplication in float, as
 * cpu_rope does, so the angles are the CPU's bit for bit; only sin/cos
 * may differ in the last place. One thread per (token, head, pair).
 */
#include "../kernels.h"
#include "check.h"
#include "common.cuh"

namespace
{

__global__ void
rope_kernel(float *qkv, uint64_t ld, uint32_t T, const uint32_t *pos, uint32_t n_heads,
            uint32_t head_dim, uint32_t n_rot, float theta_scale, const float *factors, bool neox)
{
	uint32_t half = n_rot / 2;
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)T * n_heads * half)
		return;
	uint32_t k = (uint32_t)(i % half), h = (uint32_t)((i / half) % n_heads);
	uint32_t t = (uint32_t)(i / ((uint64_t)half * n_heads));
	float theta = (float)pos[t];
	for (uint32_t j = 0; j < k; j++)
		theta = __fmul_rn(theta, theta_scale);
	if (factors)
		theta = __fdiv_rn(theta, factors[k]);
	/* sin/cos of θ through sincospi(θ/π) in double: its argument reduction
	 * is exact (no Payne-Hanek stack frame), and the float results are
	 * those of sinf/cosf but in the rarest cases */
	double sd, cd;
	sincospi((double)theta * (1.0 / 3.14159265358979323846), &sd, &cd);
	float c = (float)cd, s = (float)sd;
	/* Q heads first, then K heads, contiguous in the row */
	float *v = qkv + (uint64_t)t * ld + (uint64_t)h * head_dim;
	uint32_t a = neox ? k : 2 * k, b = neox ? k + half : 2 * k + 1;
	float x0 = v[a], x1 = v[b];
	v[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
	v[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
}

} // namespace

extern "C" cudaError_t
cuk_rope(float *qkv, uint64_t ld, uint32_t T, const uint32_t *pos, uint32_t n_head,
         uint32_t n_head_kv, uint32_t head_dim, uint32_t n_rot, float theta_scale,
         const float *factors, bool neox, cudaStream_t st)
{
	uint64_t n = (uint64_t)T * (n_head + n_head_kv) * (n_rot / 2);

	if (n_rot > head_dim || n_rot % 2 != 0)
		return cudaErrorInvalidValue;
	if (n == 0)
		return cudaSuccess;
	rope_kernel<<<cuk::div_up(n, 256), 256, 0, st>>>(
	        qkv, ld, T, pos, n_head + n_head_kv, head_dim, n_rot, theta_scale, factors, neox);
	return cuk::launched();
}

cudaError_t
cuk_check_rope(char *why, size_t why_len)
{
	return cuk::fits(rope_kernel, 256, "rope", why, why_len);
}
