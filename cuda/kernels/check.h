#pragma once
/*
 * check.h - each kernel file's launch-shape check (internal to cuda/kernels):
 * every kernel it launches exists for the current device and fits its block
 * size. cuk_limits_check() calls them all at load.
 */
#include <stddef.h>

#include <cuda_runtime_api.h>

cudaError_t cuk_check_mmv(char *why, size_t why_len);
cudaError_t cuk_check_mmvq(char *why, size_t why_len);
cudaError_t cuk_check_dequant(char *why, size_t why_len);
cudaError_t cuk_check_embed(char *why, size_t why_len);
cudaError_t cuk_check_elementwise(char *why, size_t why_len);
cudaError_t cuk_check_rmsnorm(char *why, size_t why_len);
cudaError_t cuk_check_rope(char *why, size_t why_len);
cudaError_t cuk_check_kv_append(char *why, size_t why_len);
cudaError_t cuk_check_attention(char *why, size_t why_len);
cudaError_t cuk_check_sample(char *why, size_t why_len);
cudaError_t cuk_check_quant_q8(char *why, size_t why_len);
cudaError_t cuk_check_moe(char *why, size_t why_len);
