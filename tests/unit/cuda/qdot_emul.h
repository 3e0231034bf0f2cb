#pragma once
/*
 * qdot_emul.h - the integer-dot kernels (cuk_mmvq, cuk_quant_act) computed
 * on the host by their own qdot.cuh code (qdot_emul.cu). No GPU needed.
 */
#include <stdbool.h>
#include <stdint.h>

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * qdot_emul_row - what cuk_mmvq writes for one weight row @w (type @type,
 * @n elements) against @B (1 or 8) activation rows of @xq, @xq_ld apart,
 * into out[0..B): the 32 lanes' sums added in the warp's order.
 */
bool qdot_emul_row(uint32_t type, const uint8_t *w, uint32_t n, const uint8_t *xq, uint64_t xq_ld,
                   uint32_t B, float *out);

/* qdot_emul_quant - cuk_quant_act of one row of @n floats into @row (cuk_act_row_bytes bytes). */
bool qdot_emul_quant(enum cuk_act fmt, const float *x, uint32_t n, uint8_t *row);

#ifdef __cplusplus
}
#endif
