#pragma once
/*
 * quant.h - reference (scalar, unhurried) quantizers and dequantizers for
 * the ggml block formats orch writes and reads.
 *
 * quant_row() is a plain max-abs / min-max quantizer: valid blocks in the
 * exact ggml layout, not llama.cpp's error-minimizing search. orch-synth uses
 * it to write models; tests use quant/dequant round trips. dequant_row() is
 * exact: the value each block encodes, as ggml's reference dequantizer computes it.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* quant_supported - whether quant_row()/dequant_row() handle type @type. */
bool quant_supported(uint32_t type);

/*
 * quant_row - encode @n floats at @x (n a multiple of the block size) as
 * type @type into @dst (ggml_row_bytes(type, n) bytes).
 * ORCH_EUNSUPPORTED for other types, ORCH_EINVAL for a bad @n.
 */
orch_err quant_row(uint32_t type, const float *x, void *dst, uint64_t n);

/* dequant_row - decode @n values of type @type at @src into @y. Errors as quant_row(). */
orch_err dequant_row(uint32_t type, const void *src, float *y, uint64_t n);

#ifdef __cplusplus
}
#endif
