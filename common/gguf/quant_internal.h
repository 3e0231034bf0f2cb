#pragma once
/* quant_internal.h - block codecs shared by quant.c and quant_k.c. */
#include <stdint.h>

/* One block each: @x/@y hold the block's elements, @b its bytes. */
void quant_q2_k(const float *x, uint8_t *b);
void quant_q3_k(const float *x, uint8_t *b);
void quant_q4_k(const float *x, uint8_t *b);
void quant_q5_k(const float *x, uint8_t *b);
void quant_q6_k(const float *x, uint8_t *b);
void dequant_q2_k(const uint8_t *b, float *y);
void dequant_q3_k(const uint8_t *b, float *y);
void dequant_q4_k(const uint8_t *b, float *y);
void dequant_q5_k(const uint8_t *b, float *y);
void dequant_q6_k(const uint8_t *b, float *y);

/* Shared helpers. */
float quant_f16_round(float x); /* x rounded through fp16 */
void quant_put_f16(uint8_t *b, float x);
float quant_get_f16(const uint8_t *b);
int quant_nearest(float x);
