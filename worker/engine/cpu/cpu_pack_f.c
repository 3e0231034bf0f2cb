/*
 * cpu_pack_f.c - F32, F16 and BF16 weights packed for the matrix products:
 * a group's eight rows interleaved one element at a time (element k of row r
 * at 8k + r, in the file's type), so one vector load gives element k of the
 * eight rows, which meets token t's activation x_t[k] broadcast in one fma.
 * A (row, token) output is one chain of fmas in element order,
 *     acc = fma(w[r][k], x_t[k], acc)   for k = 0 .. n - 1,
 * on every kernel, for any number of tokens or groups per call: batch
 * independence and the scalar twin's bits come from that order alone. The
 * AVX2 kernel keeps up to eight such vectors of eight rows in registers
 * (a tile of tokens × groups), so a step of k costs one weight load and
 * conversion per group and one broadcast per token.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"

bool
cpu_pack_float(uint32_t type)
{
	return type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16;
}

/* The bytes of one element of float type @type. */
static uint32_t
elem_bytes(uint32_t type)
{
	return type == GGML_TYPE_F32 ? 4 : 2;
}

void
cpu_pack_group_f(uint32_t type, const uint8_t *src, uint64_t row_bytes, uint64_t n, uint8_t *dst)
{
	if (elem_bytes(type) == 4) { /* constant sizes: plain loads and stores */
		for (uint64_t k = 0; k < n; k++)
			for (uint32_t r = 0; r < CPU_PACK_ROWS; r++)
				memcpy(dst + 4 * (CPU_PACK_ROWS * k + r),
				       src + r * row_bytes + 4 * k, 4);
		return;
	}
	for (uint64_t k = 0; k < n; k++)
		for (uint32_t r = 0; r < CPU_PACK_ROWS; r++)
			memcpy(dst + 2 * (CPU_PACK_ROWS * k + r), src + r * row_bytes + 2 * k, 2);
}

/* Element @i of a packed float group @g of @type, as a float (exact). */
static float
packed_elem(uint32_t type, const uint8_t *g, uint64_t i)
{
	float f;

	switch (type) {
	case GGML_TYPE_F32:
		memcpy(&f, g + 4 * i, 4);
		return f;
	case GGML_TYPE_F16:
		return fp16_load(g + 2 * i);
	default: {
		uint32_t u = (uint32_t)(g[2 * i] | g[2 * i + 1] << 8) << 16;
		memcpy(&f, &u, 4);
		return f;
	}
	}
}

void
cpu_pack_row_f(uint32_t type, const uint8_t *g, uint64_t n, uint32_t r, float *y)
{
	for (uint64_t k = 0; k < n; k++)
		y[k] = packed_elem(type, g, CPU_PACK_ROWS * k + r);
}

void
cpu_pack_mmf_scalar(uint32_t type, const uint8_t *g, uint64_t ng, uint64_t n, const float *x,
                    uint64_t xs, uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	uint64_t gb = CPU_PACK_ROWS * n * elem_bytes(type);

	for (uint64_t gi = 0; gi < ng; gi++)
		for (uint32_t t = 0; t < nt; t++)
			for (uint32_t r = 0; r < CPU_PACK_ROWS; r++) {
				float acc = 0.0f;
				for (uint64_t k = 0; k < n; k++)
					acc = fmaf(packed_elem(type, g + gi * gb,
					                       CPU_PACK_ROWS * k + r),
					           x[t * xs + k], acc);
				uint64_t o = CPU_PACK_ROWS * gi + r;
				y[t * ys + o] = bias != NULL ? acc + bias[o] : acc;
			}
}

/*
 * Prefetch distance (bytes) of each group's stream, into L2 as the quantized
 * kernels' (cpu_pack_mm.c), where L1 prefetches starved decode; 16 KiB, not
 * their 8: F16 0.5B decode 20 tok/s against 18 (1 thread; 32 KiB the same).
 */
#define PREFETCH_AHEAD 16384

/* Element k's eight rows of a packed group at @p (the k-th vector), as floats. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256
load_w(uint32_t type, const uint8_t *p)
{
	switch (type) {
	case GGML_TYPE_F32:
		return _mm256_loadu_ps((const float *)(const void *)p);
	case GGML_TYPE_F16:
		return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
	default: /* BF16: the upper half of an F32 */
		return _mm256_castsi256_ps(_mm256_slli_epi32(
		        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)),
		        16));
	}
}

/*
 * @NG groups × @NT tokens, NG·NT ≤ 8: the accumulators stay in registers
 * for the whole row. Both counts are constants where this is inlined.
 */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
tile(uint32_t type, const uint8_t *g, uint64_t gb, uint32_t NG, uint64_t n, const float *x,
     uint64_t xs, uint32_t NT, float *y, uint64_t ys, const float *bias)
{
	const uint32_t es = elem_bytes(type), vb = CPU_PACK_ROWS * es; /* a vector's bytes */
	__m256 acc[8];

#pragma GCC unroll 8
	for (uint32_t i = 0; i < NG * NT; i++)
		acc[i] = _mm256_setzero_ps();
	const uint32_t U = 64 / vb; /* elements a cache line of a group holds */
	uint64_t k = 0;
	for (; k + U <= n; k += U) { /* a line of each group, prefetched ahead */
#pragma GCC unroll 8
		for (uint32_t gi = 0; gi < NG; gi++)
			_mm_prefetch((const char *)g + gi * gb + k * vb + PREFETCH_AHEAD,
			             _MM_HINT_T1);
#pragma GCC unroll 4
		for (uint32_t u = 0; u < U; u++)
#pragma GCC unroll 8
			for (uint32_t gi = 0; gi < NG; gi++) {
				__m256 w = load_w(type, g + gi * gb + (k + u) * vb);
#pragma GCC unroll 8
				for (uint32_t t = 0; t < NT; t++)
					acc[gi * NT + t] = _mm256_fmadd_ps(
					        w, _mm256_broadcast_ss(x + t * xs + k + u),
					        acc[gi * NT + t]);
			}
	}
	for (; k < n; k++)
#pragma GCC unroll 8
		for (uint32_t gi = 0; gi < NG; gi++) {
			__m256 w = load_w(type, g + gi * gb + k * vb);
#pragma GCC unroll 8
			for (uint32_t t = 0; t < NT; t++)
				acc[gi * NT + t] = _mm256_fmadd_ps(
				        w, _mm256_broadcast_ss(x + t * xs + k), acc[gi * NT + t]);
		}
#pragma GCC unroll 8
	for (uint32_t gi = 0; gi < NG; gi++)
#pragma GCC unroll 8
		for (uint32_t t = 0; t < NT; t++) {
			__m256 v = acc[gi * NT + t];
			if (bias != NULL)
				v = _mm256_add_ps(v, _mm256_loadu_ps(bias + CPU_PACK_ROWS * gi));
			_mm256_storeu_ps(y + t * ys + CPU_PACK_ROWS * gi, v);
		}
}

/* Groups [0, @ng) × @nt (1..8) tokens of @type: tiles as wide in groups as the tokens allow. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
tiles(uint32_t type, const uint8_t *g, uint64_t ng, uint64_t n, const float *x, uint64_t xs,
      uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	const uint64_t gb = CPU_PACK_ROWS * n * elem_bytes(type);
	uint64_t gi = 0;

#define TILE(NG, NT)                                                              \
	tile(type, g + gi * gb, gb, NG, n, x, xs, NT, y + CPU_PACK_ROWS * gi, ys, \
	     bias != NULL ? bias + CPU_PACK_ROWS * gi : NULL)
	switch (nt) {
	case 1: /* decode: several streams in flight, never one chain alone */
		for (; gi + 8 <= ng; gi += 8)
			TILE(8, 1);
		if (gi + 4 <= ng) {
			TILE(4, 1);
			gi += 4;
		}
		if (gi + 2 <= ng) {
			TILE(2, 1);
			gi += 2;
		}
		if (gi < ng)
			TILE(1, 1);
		break;
	case 2:
		for (; gi + 4 <= ng; gi += 4)
			TILE(4, 2);
		if (gi + 2 <= ng) {
			TILE(2, 2);
			gi += 2;
		}
		if (gi < ng)
			TILE(1, 2);
		break;
	case 3:
		for (; gi + 2 <= ng; gi += 2)
			TILE(2, 3);
		for (; gi < ng; gi++)
			TILE(1, 3);
		break;
	case 4:
		for (; gi + 2 <= ng; gi += 2)
			TILE(2, 4);
		for (; gi < ng; gi++)
			TILE(1, 4);
		break;
	case 5:
		for (; gi < ng; gi++)
			TILE(1, 5);
		break;
	case 6:
		for (; gi < ng; gi++)
			TILE(1, 6);
		break;
	case 7:
		for (; gi < ng; gi++)
			TILE(1, 7);
		break;
	default:
		for (; gi < ng; gi++)
			TILE(1, 8);
		break;
	}
#undef TILE
}

__attribute__((target("avx2,fma,f16c"))) static void
mmf_avx2(uint32_t type, const uint8_t *g, uint64_t ng, uint64_t n, const float *x, uint64_t xs,
         uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	for (uint32_t t = 0; t < nt; t += CPU_PACK_F_TOKENS) {
		uint32_t m = nt - t < CPU_PACK_F_TOKENS ? nt - t : CPU_PACK_F_TOKENS;
		switch (type) { /* each type's loops of their own */
		case GGML_TYPE_F32:
			tiles(GGML_TYPE_F32, g, ng, n, x + t * xs, xs, m, y + t * ys, ys, bias);
			break;
		case GGML_TYPE_F16:
			tiles(GGML_TYPE_F16, g, ng, n, x + t * xs, xs, m, y + t * ys, ys, bias);
			break;
		default:
			tiles(GGML_TYPE_BF16, g, ng, n, x + t * xs, xs, m, y + t * ys, ys, bias);
			break;
		}
	}
}

void
cpu_pack_mmf(bool simd, uint32_t type, const uint8_t *g, uint64_t ng, uint64_t n, const float *x,
             uint64_t xs, uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	if (simd)
		mmf_avx2(type, g, ng, n, x, xs, nt, y, ys, bias);
	else
		cpu_pack_mmf_scalar(type, g, ng, n, x, xs, nt, y, ys, bias);
}
