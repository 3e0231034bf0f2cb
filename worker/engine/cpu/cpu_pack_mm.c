/*
 * cpu_pack_mm.c - the SIMD kernels of cpu_pack_mm: a group of eight packed
 * Q8_0 / Q4_0 / Q5_0 rows (cpu.h) times a tile of tokens, each token's
 * activation word broadcast against a vector of eight rows' codes. Built
 * twice, each build naming its entry CPU_PACK_MM_FN: for AVX2/FMA/F16C,
 * and for AVX-512 VNNI (vpdpbusd of the unsigned codes and the signed
 * activations). Every block's sum is an exact int32 on both builds and in
 * the scalar twin, then one fma per block, so all three give the same bits.
 * Called only after the CPU was checked (cpu_isa_best).
 */
#include <immintrin.h>
#include <string.h>

#include "cpu.h"
#include "gguf/ggml_type.h"

#ifndef CPU_PACK_MM_FN
#error "CPU_PACK_MM_FN names the entry of this build"
#endif

/* Tokens per tile: what the registers hold (VNNI has thirty-two of them). */
#ifdef __AVX512VNNI__
#define TILE 8
#else
#define TILE 4
#endif

/*
 * How far ahead (bytes) the weight stream is prefetched, and into L2: a
 * group's block is read faster than a file row's, and prefetches into L1
 * (CPU_PREFETCH_AHEAD's) left decode at ~11 GB/s where a plain read gets
 * ~25 here (L1's miss buffers fill); into L2 from 8 KiB ahead, ~17.
 */
#define PREFETCH_AHEAD 8192

/* Token @t's four activation bytes of elements 4j..4j+3 of its block, in every lane. */
__attribute__((always_inline)) static inline __m256i
act_word(const struct cpu_q8b *x, uint32_t j)
{
	int32_t v;

	memcpy(&v, x->q + 4 * j, 4);
	return _mm256_set1_epi32(v);
}

/* @acc + Σ over each lane's four bytes of unsigned @c × signed @x (no saturation). */
__attribute__((always_inline)) static inline __m256i
dot_u8s8(__m256i acc, __m256i c, __m256i x)
{
#ifdef __AVX512VNNI__
	return _mm256_dpbusd_epi32(acc, c, x);
#else
	/* codes ≤ 31 here: the pairs' sums fit int16 */
	__m256i p = _mm256_maddubs_epi16(c, x);
	return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

/*
 * Independent integer sums per token, so that few tokens do not wait on one
 * chain of dependent vpdpbusd: token t's chains are ia[t + TILE·c], c < CHAINS(nt).
 */
#define CHAINS(nt) ((nt) == 1 ? 4u : (nt) <= 3 ? 2u : 1u)

/* Q8_0: the block's eight vectors into @ia, Σ (code + 128)·x on VNNI, Σ code·x on AVX2. */
__attribute__((always_inline)) static inline void
block_q8(const uint8_t *c, const struct cpu_q8b *x, uint64_t xs, const uint32_t nt, __m256i *ia)
{
#pragma GCC unroll 8
	for (uint32_t j = 0; j < 8; j++) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(c + 32 * j));
		__m256i *a = ia + TILE * (j % CHAINS(nt));
#ifdef __AVX512VNNI__
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++)
			a[t] = _mm256_dpbusd_epi32(a[t], w, act_word(x + t * xs, j));
#else
		__m256i ws = _mm256_xor_si256(w, _mm256_set1_epi8(-128)); /* the signed codes */
		__m256i wa = _mm256_abs_epi8(ws);
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++) {
			__m256i p = _mm256_maddubs_epi16(
			        wa, _mm256_sign_epi8(act_word(x + t * xs, j), ws));
			a[t] = _mm256_add_epi32(a[t], _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
		}
#endif
	}
}

/* Q4_0 / Q5_0: the block's codes 0..15 (0..31) times x into @ia[t]. */
__attribute__((always_inline)) static inline void
block_q4(uint32_t type, const uint8_t *c, const struct cpu_q8b *x, uint64_t xs, const uint32_t nt,
         __m256i *ia)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m5 = _mm256_set1_epi8(0x10);
	__m256i hb = _mm256_setzero_si256();

	if (type == GGML_TYPE_Q5_0)
		hb = _mm256_loadu_si256((const __m256i *)(const void *)(c + 128));
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i *a0 = ia + TILE * ((2u * (uint32_t)p) % CHAINS(nt)),
		        *a1 = ia + TILE * ((2u * (uint32_t)p + 1) % CHAINS(nt));
		__m256i raw = _mm256_loadu_si256((const __m256i *)(const void *)(c + 32 * p));
		__m256i lo = _mm256_and_si256(raw, m4);
		__m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
		if (type == GGML_TYPE_Q5_0) { /* bit p to bit 4, and bit 4 + p */
			lo = _mm256_or_si256(lo,
			                     _mm256_and_si256(_mm256_slli_epi16(hb, 4 - p), m5));
			hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(hb, p), m5));
		}
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++) {
			a0[t] = dot_u8s8(a0[t], lo, act_word(x + t * xs, (uint32_t)p));
			a1[t] = dot_u8s8(a1[t], hi, act_word(x + t * xs, 4 + (uint32_t)p));
		}
	}
}

/*
 * The group's rows times @nt (a constant once inlined, ≤ TILE) tokens:
 * per block, the exact integer sums less offset · Σ x, then one fma with
 * the two scales' product.
 */
__attribute__((always_inline)) static inline void
tile(uint32_t type, const uint8_t *g, uint64_t nb, const struct cpu_q8b *x, uint64_t xs,
     const uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	const uint64_t cb = type == GGML_TYPE_Q8_0 ? 256 : type == GGML_TYPE_Q4_0 ? 128 : 160;
#ifdef __AVX512VNNI__
	const int off = type == GGML_TYPE_Q8_0 ? 7 : type == GGML_TYPE_Q4_0 ? 3 : 4; /* log2 */
#else
	const int off = type == GGML_TYPE_Q8_0 ? -1 : type == GGML_TYPE_Q4_0 ? 3 : 4;
#endif
	const uint8_t *sc = g;
	__m256 acc[TILE];

#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++)
		acc[t] = _mm256_setzero_ps();
	g += 16 * nb;
	for (uint64_t b = 0; b < nb; b++, g += cb, x++) {
		__m256i ia[4 * TILE];
		for (uint64_t o = 0; o < cb; o += 64)
			_mm_prefetch((const char *)g + PREFETCH_AHEAD + o, _MM_HINT_T1);
		for (uint32_t c = 0; c < CHAINS(nt); c++)
#pragma GCC unroll 8
			for (uint32_t t = 0; t < nt; t++)
				ia[t + TILE * c] = _mm256_setzero_si256();
		if (type == GGML_TYPE_Q8_0)
			block_q8(g, x, xs, nt, ia);
		else
			block_q4(type, g, x, xs, nt, ia);
		__m256 dw = _mm256_cvtph_ps(
		        _mm_loadu_si128((const __m128i *)(const void *)(sc + 16 * b)));
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++) {
			const struct cpu_q8b *xt = x + t * xs;
			for (uint32_t c = 1; c < CHAINS(nt); c++) /* exact: the same sum */
				ia[t] = _mm256_add_epi32(ia[t], ia[t + TILE * c]);
			if (off >= 0) /* less offset · Σ x, exactly */
				ia[t] = _mm256_sub_epi32(ia[t],
				                         _mm256_set1_epi32(xt->s * (1 << off)));
			acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[t]),
			                         _mm256_mul_ps(dw, _mm256_set1_ps(xt->d)), acc[t]);
		}
	}
#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++) {
		if (bias != NULL)
			acc[t] = _mm256_add_ps(acc[t], _mm256_loadu_ps(bias));
		_mm256_storeu_ps(y + t * ys, acc[t]);
	}
}

/* tile for each token count up to TILE, each a loop of its own. */
__attribute__((always_inline)) static inline void
tile_nt(uint32_t type, const uint8_t *g, uint64_t nb, const struct cpu_q8b *x, uint64_t xs,
        uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	switch (nt) {
#if TILE == 8
	case 8:
		tile(type, g, nb, x, xs, 8, y, ys, bias);
		break;
	case 7:
		tile(type, g, nb, x, xs, 7, y, ys, bias);
		break;
	case 6:
		tile(type, g, nb, x, xs, 6, y, ys, bias);
		break;
	case 5:
		tile(type, g, nb, x, xs, 5, y, ys, bias);
		break;
#endif
	case 4:
		tile(type, g, nb, x, xs, 4, y, ys, bias);
		break;
	case 3:
		tile(type, g, nb, x, xs, 3, y, ys, bias);
		break;
	case 2:
		tile(type, g, nb, x, xs, 2, y, ys, bias);
		break;
	default:
		tile(type, g, nb, x, xs, 1, y, ys, bias);
		break;
	}
}

void
CPU_PACK_MM_FN(uint32_t type, const uint8_t *g, uint64_t nb, const void *xq, uint64_t xs,
               uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	const struct cpu_q8b *x = xq;

	for (uint32_t t = 0; t < nt; t += TILE) {
		uint32_t n = nt - t < TILE ? nt - t : TILE;
		switch (type) {
		case GGML_TYPE_Q8_0:
			tile_nt(GGML_TYPE_Q8_0, g, nb, x + t * xs, xs, n, y + t * ys, ys, bias);
			break;
		case GGML_TYPE_Q4_0:
			tile_nt(GGML_TYPE_Q4_0, g, nb, x + t * xs, xs, n, y + t * ys, ys, bias);
			break;
		default:
			tile_nt(GGML_TYPE_Q5_0, g, nb, x + t * xs, xs, n, y + t * ys, ys, bias);
			break;
		}
	}
}
