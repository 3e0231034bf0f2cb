/*
 * limits.cu - what the kernels support, and the load-time check that the
 * device runs every kernel at the block size its launcher uses.
 */
#include <stdio.h>

#include "../kernels.h"
#include "check.h"
#include "gguf/ggml_type.h"

extern "C" bool
cuk_type_supported(uint32_t type)
{
	switch (type) {
	case GGML_TYPE_F32:
	case GGML_TYPE_F16:
	case GGML_TYPE_BF16:
	case GGML_TYPE_Q4_0:
	case GGML_TYPE_Q4_1:
	case GGML_TYPE_Q5_0:
	case GGML_TYPE_Q5_1:
	case GGML_TYPE_Q8_0:
	case GGML_TYPE_MXFP4:
	case GGML_TYPE_Q2_K:
	case GGML_TYPE_Q3_K:
	case GGML_TYPE_Q4_K:
	case GGML_TYPE_Q5_K:
	case GGML_TYPE_Q6_K:
		return true;
	default:
		return false;
	}
}

extern "C" cudaError_t
cuk_limits_check(int dev, char *why, size_t why_len)
{
	cudaError_t (*const checks[])(char *, size_t) = {
	        cuk_check_mmv,         cuk_check_mmvq,    cuk_check_dequant,  cuk_check_embed,
	        cuk_check_elementwise, cuk_check_rmsnorm, cuk_check_rope,     cuk_check_kv_append,
	        cuk_check_attention,   cuk_check_sample,  cuk_check_quant_q8, cuk_check_moe};
	cudaDeviceProp p;
	cudaError_t e;

	if ((e = cudaSetDevice(dev)) != cudaSuccess ||
	    (e = cudaGetDeviceProperties(&p, dev)) != cudaSuccess) {
		snprintf(why, why_len, "device %d: %s", dev, cudaGetErrorString(e));
		return e;
	}
	if (p.maxThreadsPerBlock < 256 || p.sharedMemPerBlock < 16384 || p.warpSize != 32) {
		snprintf(why, why_len,
		         "device %d: %d threads a block, %zu bytes of shared memory, warp %d: "
		         "the kernels need 256, 16 KiB and 32",
		         dev, p.maxThreadsPerBlock, p.sharedMemPerBlock, p.warpSize);
		return cudaErrorInvalidConfiguration;
	}
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if ((e = checks[i](why, why_len)) != cudaSuccess)
			return e;
	return cudaSuccess;
}
