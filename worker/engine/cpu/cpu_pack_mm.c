/*
 * cpu_pack_mm.c - the SIMD kernels of cpu_pack_mm: a group of eight packed
 * rows (cpu.h) times a tile of tokens, each token's activation word
 * broadcast against a vector of eight rows' codes. Built twice, each build
 * naming its entry CPU_PACK_MM_FN: for AVX2/FMA/F16C, and for AVX-512 VNNI
 * (vpdpbusd of the unsigned codes and the signed activations).
 * Q8_0 / Q4_0 / Q5_0 / MXFP4: every block's sum is an exact int32, then one
 * fma per block. Q4_K / Q5_K / Q6_K: each sub-block's exact sum times its scale in
 * int32, the mins against the activations' group sums, then the float steps
 * of cpu_qdot_k_scalar per super-block. Either way both builds and the
 * scalar twins (cpu_pack.c, cpu_pack_k.c) give the same bits. Called only
 * after the CPU was checked (cpu_isa_best).
 */
#include <immintrin.h>
#include <string.h>

#include "cpu.h"
#include "cpu_qdot_int.h"
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
 * How far ahead (bytes) the K-quants' weight stream is prefetched, and into
 * L2: a group's block is read faster than a file row's, and prefetches into
 * L1 (CPU_PREFETCH_AHEAD's) left decode at ~11 GB/s where a plain read gets ~25
 * here (L1's miss buffers fill). 16 KiB, not 8: Q5_K read 21 GB/s from DRAM
 * at one thread with 8, 27-29 with 16 (Q4_K, Q6_K about the same either way).
 * The Q8_0-style groups, one forward stream with no jump (cpu.h's chunks),
 * are read faster by the hardware prefetcher alone: 27-31 GB/s from DRAM at
 * one thread, where these prefetches made it 15-20 (RESULTS).
 */
#define PREFETCH_AHEAD 16384

/* The four bytes at @p in every lane. */
__attribute__((always_inline)) static inline __m256i
bcast(const void *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/* Token @t's four activation bytes of elements 4j..4j+3 of its block, in every lane. */
__attribute__((always_inline)) static inline __m256i
act_word(const struct cpu_q8b *x, uint32_t j)
{
	return bcast(x->q + 4 * j);
}

/* @acc + Σ over each lane's four bytes of unsigned @c (≤ 63) × signed @x (no saturation). */
__attribute__((always_inline)) static inline __m256i
dot_u8s8(__m256i acc, __m256i c, __m256i x)
{
#ifdef __AVX512VNNI__
	return _mm256_dpbusd_epi32(acc, c, x);
#else
	/* codes ≤ 63 here: the pairs' sums (≤ 2·63·128) fit int16 */
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

/*
 * Q4_0 / Q5_0 / Q4_1 / Q5_1 / MXFP4: the block's codes 0..15 (0..31; MXFP4's
 * shuffled to their doubled E2M1 values + 12, 0..24) times x into @ia[t].
 */
__attribute__((always_inline)) static inline void
block_q4(uint32_t type, const uint8_t *c, const struct cpu_q8b *x, uint64_t xs, const uint32_t nt,
         __m256i *ia)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m5 = _mm256_set1_epi8(0x10);
	const __m256i lut = _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4,
	                                     0, 12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6,
	                                     4, 0); /* cpu_mxfp4_x2 + 12, in both lanes */
	const bool five = type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1;
	__m256i hb = _mm256_setzero_si256();

	if (five)
		hb = _mm256_loadu_si256((const __m256i *)(const void *)(c + 128));
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		__m256i *a0 = ia + TILE * ((2u * (uint32_t)p) % CHAINS(nt)),
		        *a1 = ia + TILE * ((2u * (uint32_t)p + 1) % CHAINS(nt));
		__m256i raw = _mm256_loadu_si256((const __m256i *)(const void *)(c + 32 * p));
		__m256i lo = _mm256_and_si256(raw, m4);
		__m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
		if (five) { /* bit p to bit 4, and bit 4 + p */
			lo = _mm256_or_si256(lo,
			                     _mm256_and_si256(_mm256_slli_epi16(hb, 4 - p), m5));
			hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(hb, p), m5));
		}
		if (type == GGML_TYPE_MXFP4) {
			lo = _mm256_shuffle_epi8(lut, lo);
			hi = _mm256_shuffle_epi8(lut, hi);
		}
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++) {
			a0[t] = dot_u8s8(a0[t], lo, act_word(x + t * xs, (uint32_t)p));
			a1[t] = dot_u8s8(a1[t], hi, act_word(x + t * xs, 4 + (uint32_t)p));
		}
	}
}

/* Eight E8M0 bytes at @p as cpu_e8m0_half's floats, 2^(e - 128). */
__attribute__((always_inline)) static inline __m256
load8_e8m0_half(const uint8_t *p)
{
	__m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
	const __m256i one = _mm256_set1_epi32(1);
	__m256i big = _mm256_slli_epi32(_mm256_sub_epi32(e, one), 23);       /* e ≥ 2 */
	__m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e); /* e < 2: subnormal */

	return _mm256_castsi256_ps(_mm256_blendv_epi8(small, big, _mm256_cmpgt_epi32(e, one)));
}

/*
 * A Q8_0-style group's rows times @nt (a constant once inlined, ≤ TILE)
 * tokens: per block, the exact integer sums less offset · Σ x, then one
 * fma with the two scales' product.
 */
__attribute__((always_inline)) static inline void
tile_q8(uint32_t type, const uint8_t *g, uint64_t nb, const struct cpu_q8b *x, uint64_t xs,
        const uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	const bool aff = cpu_affine(type); /* Q4_1, Q5_1: + Σ_b m·dx·s */
	const uint64_t cb = type == GGML_TYPE_Q8_0                             ? 256
	                    : type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1 ? 160
	                                                                       : 128;
	const uint64_t sb = type == GGML_TYPE_MXFP4 ? 8 : aff ? 32 : 16; /* cpu_pack_scale_bytes */
	const uint64_t kc = CPU_PACK_CHUNK / sb;                         /* blocks a chunk */
#ifdef __AVX512VNNI__
	const int32_t off8 = 128; /* Q8_0's codes + 128 */
#else
	const int32_t off8 = 0; /* Q8_0's signed codes: no offset */
#endif
	const int32_t off = type == GGML_TYPE_Q8_0    ? off8
	                    : type == GGML_TYPE_Q4_0  ? 8
	                    : type == GGML_TYPE_Q5_0  ? 16
	                    : type == GGML_TYPE_MXFP4 ? 12
	                                              : 0;
	__m256 acc[TILE], accm[TILE];

#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++)
		acc[t] = accm[t] = _mm256_setzero_ps();
	for (uint64_t b0 = 0; b0 < nb; b0 += kc) { /* a chunk: its scales, then its blocks */
		const uint64_t n = nb - b0 < kc ? nb - b0 : kc;
		const uint8_t *sc = g;
		g += sb * n;
		for (uint64_t b = 0; b < n; b++, g += cb, x++) {
			__m256i ia[4 * TILE];
			for (uint32_t c = 0; c < CHAINS(nt); c++)
#pragma GCC unroll 8
				for (uint32_t t = 0; t < nt; t++)
					ia[t + TILE * c] = _mm256_setzero_si256();
			if (type == GGML_TYPE_Q8_0)
				block_q8(g, x, xs, nt, ia);
			else
				block_q4(type, g, x, xs, nt, ia);
			__m256 dw = type == GGML_TYPE_MXFP4
			                    ? load8_e8m0_half(sc + 8 * b)
			                    : _mm256_cvtph_ps(_mm_loadu_si128((
			                              const __m128i *)(const void *)(sc + sb * b)));
			__m256 mw = aff ? _mm256_cvtph_ps(_mm_loadu_si128((
			                          const __m128i *)(const void *)(sc + sb * b + 16)))
			                : _mm256_setzero_ps();
#pragma GCC unroll 8
			for (uint32_t t = 0; t < nt; t++) {
				const struct cpu_q8b *xt = x + t * xs;
				for (uint32_t c = 1; c < CHAINS(nt); c++) /* exact: the same sum */
					ia[t] = _mm256_add_epi32(ia[t], ia[t + TILE * c]);
				if (off != 0) /* less offset · Σ x, exactly */
					ia[t] = _mm256_sub_epi32(ia[t],
					                         _mm256_set1_epi32(xt->s * off));
				acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[t]),
				                         _mm256_mul_ps(dw, _mm256_set1_ps(xt->d)),
				                         acc[t]);
				if (aff)
					accm[t] = _mm256_fmadd_ps(
					        _mm256_set1_ps((float)xt->s),
					        _mm256_mul_ps(mw, _mm256_set1_ps(xt->d)), accm[t]);
			}
		}
	}
#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++) {
		if (aff)
			acc[t] = _mm256_add_ps(acc[t], accm[t]);
		if (bias != NULL)
			acc[t] = _mm256_add_ps(acc[t], _mm256_loadu_ps(bias));
		_mm256_storeu_ps(y + t * ys, acc[t]);
	}
}

/* @acc + Σ over each lane's two int16 of @a × @b. */
__attribute__((always_inline)) static inline __m256i
dot2(__m256i acc, __m256i a, __m256i b)
{
#ifdef __AVX512VNNI__
	return _mm256_dpwssd_epi32(acc, a, b);
#else
	return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

__attribute__((always_inline)) static inline __m256i
load(const uint8_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* Eight bytes at @p as eight int32 lanes, unsigned. */
__attribute__((always_inline)) static inline __m256i
load8_u(const uint8_t *p)
{
	return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

/* Eight F16 at @p. */
__attribute__((always_inline)) static inline __m256
load8_h(const uint8_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* Bit @j of each byte of @h at bit 4 (the epi16 shifts' spill is masked off). */
__attribute__((always_inline)) static inline __m256i
bit_to_4(__m256i h, const uint32_t j)
{
	h = j <= 4 ? _mm256_slli_epi16(h, (int)(4 - j)) : _mm256_srli_epi16(h, (int)(j - 4));
	return _mm256_and_si256(h, _mm256_set1_epi8(0x10));
}

/*
 * One packed Q4_K (Q5_K when @five) super-block @p times @nt tokens'
 * super-blocks (@x, @xs apart) into @acc: per sub-block, exact sums times
 * the 6-bit scale; the mins against the activations' sums; then
 * d·Σ - dmin·Σm, times dx.
 */
__attribute__((always_inline)) static inline void
sb_q45k(const uint8_t *p, const bool five, const struct cpu_q8k *x, uint64_t xs, const uint32_t nt,
        __m256 *acc)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	__m256i sumi[TILE], summ[TILE];

#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++)
		sumi[t] = summ[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
	for (uint32_t j = 0; j < 8; j++) { /* sub-block j: chunk c's nibbles h */
		const uint8_t *c = p + CPU_PACK_Q45K_CODES(five) + 256 * (j / 2);
		__m256i ia[TILE];
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++)
			ia[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
		for (uint32_t q = 0; q < 8; q++) {
			__m256i v = load(c + 32 * q);
			v = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(v, 4) : v, m4);
			if (five)
				v = _mm256_or_si256(
				        v, bit_to_4(load(p + CPU_PACK_Q5K_HIGH + 32 * q), j));
#pragma GCC unroll 8
			for (uint32_t t = 0; t < nt; t++)
				ia[t] = dot_u8s8(ia[t], v, bcast(x[t * xs].q + 32 * j + 4 * q));
		}
		__m256i sc = load8_u(p + CPU_PACK_Q4K_SC + 8 * j);
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++)
			sumi[t] = _mm256_add_epi32(sumi[t], _mm256_mullo_epi32(ia[t], sc));
	}
#pragma GCC unroll 8
	for (uint32_t j = 0; j < 8; j++) {
		__m256i m = load8_u(p + CPU_PACK_Q4K_MIN + 8 * j);
		m = _mm256_or_si256(m, _mm256_slli_epi32(m, 16)); /* (m, m): both halves' sums */
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++)
			summ[t] = dot2(summ[t], m, bcast(x[t * xs].bsums + 2 * j));
	}
	__m256 d = load8_h(p), dm = load8_h(p + CPU_PACK_Q4K_DMIN);
#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++) {
		__m256 v = _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(sumi[t])),
		                         _mm256_mul_ps(dm, _mm256_cvtepi32_ps(summ[t])));
		acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_set1_ps(x[t * xs].d), v));
	}
}

/* Group @g's scales (int8 pairs, cpu.h) as int32 lanes: @g even, the pair's low half. */
__attribute__((always_inline)) static inline __m256i
q6k_scale(const uint8_t *p, uint32_t g)
{
	__m256i s = _mm256_cvtepi8_epi16(_mm_loadu_si128(
	        (const __m128i *)(const void *)(p + CPU_PACK_Q6K_SC + 16 * (g / 2))));

	return _mm256_srai_epi32(g % 2 ? s : _mm256_slli_epi32(s, 16), 16);
}

/*
 * Group @g (units 4g..4g+3; @hi: the units 32 later) of Q6_K super-block @p
 * times @nt tokens into @sumi: its four 6-bit code vectors, from two
 * low-nibble vectors and two high-bit vectors, then the scale.
 */
__attribute__((always_inline)) static inline void
q6k_group(const uint8_t *p, uint32_t g, uint32_t hi, const struct cpu_q8k *x, uint64_t xs,
          const uint32_t nt, __m256i *sumi)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
	__m256i ia[TILE];

#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++)
		ia[t] = _mm256_setzero_si256();
	const uint8_t *c = p + CPU_PACK_Q6K_CODES + 192 * g; /* cpu.h: 4 low, 2 high vectors */
#pragma GCC unroll 2
	for (uint32_t k = 0; k < 2; k++) { /* units 2v, 2v + 1 (+ 32) */
		const uint32_t v = 2 * g + k;
		__m256i h = load(c + 128 + 32 * k);
		__m256i n0 = load(c + 64 * k), n1 = load(c + 64 * k + 32);
		__m256i c0, c1;
		if (hi == 0) {
			c0 = _mm256_or_si256(_mm256_and_si256(n0, m4),
			                     _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
			c1 = _mm256_or_si256(_mm256_and_si256(n1, m4), _mm256_and_si256(h, m30));
		} else {
			c0 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n0, 4), m4),
			                     _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
			c1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n1, 4), m4),
			                     _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
		}
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++) {
			const int8_t *q = x[t * xs].q + 128 * hi + 8 * v;
			ia[t] = dot_u8s8(ia[t], c0, bcast(q));
			ia[t] = dot_u8s8(ia[t], c1, bcast(q + 4));
		}
	}
	__m256i sc = q6k_scale(p, g + 8 * hi);
#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++)
		sumi[t] = _mm256_add_epi32(sumi[t], _mm256_mullo_epi32(ia[t], sc));
}

/* One packed Q6_K super-block @p times @nt tokens into @acc: Σ sc·(Σ q·x - 32·Σ x), times d·dx. */
__attribute__((always_inline)) static inline void
sb_q6k(const uint8_t *p, const struct cpu_q8k *x, uint64_t xs, const uint32_t nt, __m256 *acc)
{
	__m256i sumi[TILE], off[TILE];

#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++)
		sumi[t] = off[t] = _mm256_setzero_si256();
	for (uint32_t g = 0; g < 8; g++) {
		q6k_group(p, g, 0, x, xs, nt, sumi);
		q6k_group(p, g, 1, x, xs, nt, sumi);
	}
#pragma GCC unroll 8
	for (uint32_t k = 0; k < 8; k++) {
		__m256i s = _mm256_cvtepi8_epi16(_mm_loadu_si128(
		        (const __m128i *)(const void *)(p + CPU_PACK_Q6K_SC + 16 * k)));
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++)
			off[t] = dot2(off[t], s, bcast(x[t * xs].bsums + 2 * k));
	}
	__m256 d = load8_h(p);
#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++) {
		__m256i s = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(off[t], 5));
		acc[t] = _mm256_add_ps(acc[t],
		                       _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(x[t * xs].d), d),
		                                     _mm256_cvtepi32_ps(s)));
	}
}

/* Bit @k of each byte of @h at bit 2 (the epi16 shifts' spill is masked off). */
__attribute__((always_inline)) static inline __m256i
bit_to_2(__m256i h, const uint32_t k)
{
	h = k <= 2 ? _mm256_slli_epi16(h, (int)(2 - k)) : _mm256_srli_epi16(h, (int)(k - 2));
	return _mm256_and_si256(h, _mm256_set1_epi8(4));
}

/*
 * One packed Q2_K (Q3_K when @three) super-block @p times @nt tokens into
 * @acc. Per sub-block of 16 (units v + 16k, v = 4gg..4gg + 3, of group
 * g = 4k + gg), the exact sums of codes (0..3; Q3_K 0..7) times x, less
 * than 2^15, meet their 8 rows' scales as int16 in one dot2; Q2_K's mins,
 * Q3_K's offset of 4 against the activations' sums; then the float steps
 * of cpu_qdot_k23_scalar.
 */
__attribute__((always_inline)) static inline void
sb_q23k(const uint8_t *p, const bool three, const struct cpu_q8k *x, uint64_t xs, const uint32_t nt,
        __m256 *acc)
{
	const __m256i m2 = _mm256_set1_epi8(3), lo16 = _mm256_set1_epi32(0xffff);
	const uint8_t *codes = p + (three ? CPU_PACK_Q3K_LO : CPU_PACK_Q2K_CODES);
	__m256i sumi[TILE], side[TILE];

#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++)
		sumi[t] = side[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
	for (uint32_t gg = 0; gg < 4; gg++)
#pragma GCC unroll 4
		for (uint32_t k = 0; k < 4; k++) {
			const uint32_t g = 4 * k + gg;
			__m256i ia[TILE];
#pragma GCC unroll 8
			for (uint32_t t = 0; t < nt; t++)
				ia[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
			for (uint32_t v = 4 * gg; v < 4 * gg + 4; v++) {
				__m256i c = _mm256_and_si256(
				        _mm256_srli_epi16(load(codes + 32 * v), (int)(2 * k)), m2);
				if (three)
					c = _mm256_or_si256(c, bit_to_2(load(p + CPU_PACK_Q3K_HI +
					                                     32 * (v % 8)),
					                                v / 8 + 2 * k));
#pragma GCC unroll 8
				for (uint32_t t = 0; t < nt; t++)
					ia[t] = dot_u8s8(ia[t], c,
					                 bcast(x[t * xs].q + 4 * (v + 16 * k)));
			}
			__m256i sc;
			if (three) { /* Q6_K's pairs: the low or high int16, the other half 0 */
				__m256i s = _mm256_cvtepi8_epi16(_mm_loadu_si128(
				        (const __m128i *)(const void *)(p + CPU_PACK_Q3K_SC +
				                                        16 * (g / 2))));
				sc = g % 2 ? _mm256_srli_epi32(s, 16) : _mm256_and_si256(s, lo16);
			} else {
				sc = _mm256_and_si256(load8_u(p + CPU_PACK_Q2K_SC + 8 * g),
				                      _mm256_set1_epi32(15));
			}
#pragma GCC unroll 8
			for (uint32_t t = 0; t < nt; t++) /* |ia| < 2^15: its low int16 is it */
				sumi[t] = dot2(sumi[t], ia[t], sc);
		}
#pragma GCC unroll 8
	for (uint32_t j = 0; j < 8; j++) { /* groups 2j, 2j + 1 against the sums */
		__m256i m;
		if (three) {
			m = _mm256_cvtepi8_epi16(_mm_loadu_si128(
			        (const __m128i *)(const void *)(p + CPU_PACK_Q3K_SC + 16 * j)));
		} else {
			m = _mm256_srli_epi32(load8_u(p + CPU_PACK_Q2K_SC + 16 * j), 4);
			m = _mm256_or_si256(
			        m, _mm256_slli_epi32(
			                   _mm256_srli_epi32(
			                           load8_u(p + CPU_PACK_Q2K_SC + 16 * j + 8), 4),
			                   16));
		}
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++)
			side[t] = dot2(side[t], m, bcast(x[t * xs].bsums + 2 * j));
	}
	__m256 d = load8_h(p);
	if (three) {
#pragma GCC unroll 8
		for (uint32_t t = 0; t < nt; t++) {
			__m256i v = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(side[t], 2));
			acc[t] = _mm256_add_ps(
			        acc[t], _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(x[t * xs].d), d),
			                              _mm256_cvtepi32_ps(v)));
		}
		return;
	}
	__m256 dm = load8_h(p + CPU_PACK_Q2K_DMIN);
#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++) {
		__m256 v = _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(sumi[t])),
		                         _mm256_mul_ps(dm, _mm256_cvtepi32_ps(side[t])));
		acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_set1_ps(x[t * xs].d), v));
	}
}

/* A K-quant group's rows times @nt (a constant once inlined, ≤ TILE) tokens. */
__attribute__((always_inline)) static inline void
tile_k(uint32_t type, const uint8_t *g, uint64_t nb, const struct cpu_q8k *x, uint64_t xs,
       const uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	const uint64_t pb = cpu_pack_block_bytes(type);
	__m256 acc[TILE];

#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++)
		acc[t] = _mm256_setzero_ps();
	for (uint64_t b = 0; b < nb; b++, g += pb, x++) {
		for (uint64_t o = 0; o < pb; o += 64)
			_mm_prefetch((const char *)g + PREFETCH_AHEAD + o, _MM_HINT_T1);
		if (type == GGML_TYPE_Q6_K)
			sb_q6k(g, x, xs, nt, acc);
		else if (type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K)
			sb_q23k(g, type == GGML_TYPE_Q3_K, x, xs, nt, acc);
		else
			sb_q45k(g, type == GGML_TYPE_Q5_K, x, xs, nt, acc);
	}
#pragma GCC unroll 8
	for (uint32_t t = 0; t < nt; t++) {
		if (bias != NULL)
			acc[t] = _mm256_add_ps(acc[t], _mm256_loadu_ps(bias));
		_mm256_storeu_ps(y + t * ys, acc[t]);
	}
}

/* Whether @type is a K-quant (Q8_K activations, super-blocks of 256). */
static inline bool
is_k(uint32_t type)
{
	return type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K || type == GGML_TYPE_Q4_K ||
	       type == GGML_TYPE_Q5_K || type == GGML_TYPE_Q6_K;
}

/* The group's rows times @nt tokens, by the kind of @type (a constant once inlined). */
__attribute__((always_inline)) static inline void
tile(uint32_t type, const uint8_t *g, uint64_t nb, const void *x, uint64_t xs, const uint32_t nt,
     float *y, uint64_t ys, const float *bias)
{
	if (is_k(type))
		tile_k(type, g, nb, x, xs, nt, y, ys, bias);
	else
		tile_q8(type, g, nb, x, xs, nt, y, ys, bias);
}

/* tile for each token count up to TILE, each a loop of its own. */
__attribute__((always_inline)) static inline void
tile_nt(uint32_t type, const uint8_t *g, uint64_t nb, const void *x, uint64_t xs, uint32_t nt,
        float *y, uint64_t ys, const float *bias)
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
	for (uint32_t t = 0; t < nt; t += TILE) {
		uint32_t n = nt - t < TILE ? nt - t : TILE;
		const void *x = is_k(type) ? (const void *)((const struct cpu_q8k *)xq + t * xs)
		                           : (const void *)((const struct cpu_q8b *)xq + t * xs);
#define TYPE_CASE(T)                                               \
	case T:                                                    \
		tile_nt(T, g, nb, x, xs, n, y + t * ys, ys, bias); \
		break
		switch (type) { /* each type's tiles a loop of their own */
			TYPE_CASE(GGML_TYPE_Q8_0);
			TYPE_CASE(GGML_TYPE_Q4_0);
			TYPE_CASE(GGML_TYPE_Q5_0);
			TYPE_CASE(GGML_TYPE_Q4_1);
			TYPE_CASE(GGML_TYPE_Q5_1);
			TYPE_CASE(GGML_TYPE_MXFP4);
			TYPE_CASE(GGML_TYPE_Q2_K);
			TYPE_CASE(GGML_TYPE_Q3_K);
			TYPE_CASE(GGML_TYPE_Q4_K);
			TYPE_CASE(GGML_TYPE_Q5_K);
		default:
			tile_nt(GGML_TYPE_Q6_K, g, nb, x, xs, n, y + t * ys, ys, bias);
			break;
		}
#undef TYPE_CASE
	}
}
