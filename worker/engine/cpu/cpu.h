#pragma once
/*
 * cpu.h - what the CPU backend's files share: the thread pool (cpu_pool.c),
 * the matrix products (cpu_matmul.c), the element-wise ops (cpu_ops.c) and
 * the forward step (cpu_forward.c). Not for use outside worker/engine/cpu.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/backend.h"

struct gguf_tensor;
struct model;
struct model_yarn;

/* ---- thread pool: a parallel for over [0, n), in contiguous chunks taken in turn ---- */

typedef void (*cpu_task_fn)(void *ctx, uint32_t thread, uint64_t begin, uint64_t end);

struct cpu_pool;

/* cpu_pool_new - @n threads in all (the caller's included; n - 1 are started). */
orch_err cpu_pool_new(uint32_t n, struct cpu_pool **ret);
void cpu_pool_free(struct cpu_pool *p);
uint32_t cpu_pool_threads(const struct cpu_pool *p);

/*
 * cpu_pool_for - run @fn over [0, @n) split among the threads, in chunks of
 * consecutive items (a thread may get several, in any order; an item is run
 * once, by one thread); returns when all are done. @cost estimates the work
 * of one item (multiply-adds): a loop of less than CPU_POOL_MIN_COST in all
 * runs on the caller alone.
 */
void cpu_pool_for(struct cpu_pool *p, uint64_t n, uint64_t cost, cpu_task_fn fn, void *ctx);

#define CPU_POOL_MIN_COST (1u << 17)

/* ---- matrix products ---- */

/*
 * cpu_matmul - y[t][r] = Σ_i W[r][i] · x[t][i] (+ bias[r]) for @T tokens:
 * W is @w (rows of w->ne[0], any supported type, dequantized a row at a
 * time), x is [T][ne0], y is [T][@y_stride] starting at column @col0 of
 * rows [@row0, @row0 + @rows). @scratch holds threads × ne0 floats; for
 * the types of cpu_qdot_supported x is first quantized into @xq (T rows of
 * cpu_act_row_bytes, at most ne0/32 × 40 bytes) and the products are
 * integer dots (cpu_qdot); with @pack (w's packed copy, or NULL) and
 * whole groups of rows, they are cpu_pack_mm's.
 * Each (row, token) dot product is computed the same way whatever T is.
 */
/* A dot product of n floats: the AVX2/FMA kernel or its scalar twin. */
typedef float (*cpu_dot_fn)(const float *a, const float *b, uint64_t n);

struct cpu_pack;
void cpu_matmul(struct cpu_pool *pool, cpu_dot_fn dot, const struct gguf_tensor *w,
                const struct cpu_pack *pack, uint64_t row0, uint64_t rows, const float *x,
                uint32_t T, float *y, uint64_t y_stride, const struct gguf_tensor *bias,
                float *scratch, uint8_t *xq);

/*
 * cpu_dequant_row - @n values of type @type at @src into @y: the AVX2 kernel
 * of Q8_0/Q4_0/Q5_0/Q4_K/Q6_K when @simd (the caller checked the CPU), else
 * the scalar reference; both give the same floats. False for unsupported types.
 */
bool cpu_dequant_row(uint32_t type, const void *src, float *y, uint64_t n, bool simd);

/*
 * cpu_qdot_act - how activations are quantized for integer dots with weights
 * of @type: GGML_TYPE_Q8_0 (Q8_0's codes and scale, as struct cpu_q8b) for
 * Q8_0/Q4_0/Q5_0/Q4_1/Q5_1/MXFP4, CPU_ACT_Q8K (struct cpu_q8k) for
 * Q2_K/Q3_K/Q4_K/Q5_K/Q6_K, 0 for types computed in float after dequantization.
 */
#define CPU_ACT_Q8K 0x10000u
uint32_t cpu_qdot_act(uint32_t type);

/*
 * How far ahead (bytes) the dot kernels prefetch the weight stream. The
 * hardware prefetcher alone left decode at 55 % of the bandwidth a plain
 * read gets; 4 KiB ahead reaches ~90 % on Q8_0 rows (bench/RESULTS.md).
 */
#define CPU_PREFETCH_AHEAD 4096

/* cpu_qdot_supported - weight types computed as integer dots (cpu_qdot_act != 0). */
bool cpu_qdot_supported(uint32_t type);

/* cpu_act_row_bytes - bytes of one quantized activation row of @n for weights of @type. */
uint64_t cpu_act_row_bytes(uint32_t type, uint64_t n);

/*
 * cpu_quant_act - quantize activation row @x of @n for dots with weights of
 * @type: the AVX2 quantizers when @simd (the caller checked the CPU), which
 * give the scalar ones' bytes.
 */
void cpu_quant_act(uint32_t type, const float *x, void *xq, uint64_t n, bool simd);

/*
 * cpu_qdot - Σ over @n elements of weight row @w times activation row @xq
 * quantized by cpu_quant_act for @type: AVX2 when @simd, else scalar.
 */
float cpu_qdot(uint32_t type, const void *w, const void *xq, uint64_t n, bool simd);
float cpu_qdot_scalar(uint32_t type, const void *w, const void *xq, uint64_t n);

/* The integer-dot kernels a CPU may run: each gives the bits the others give. */
enum cpu_isa {
	CPU_ISA_SCALAR, /* cpu_qdot_scalar */
	CPU_ISA_AVX2,   /* AVX2/FMA/F16C */
	CPU_ISA_VNNI,   /* AVX2 plus AVX-512 VNNI (and VL) for the Q8_0-style blocks */
};

/* cpu_isa_best - the fastest kernels this CPU runs (CPUID read once). */
enum cpu_isa cpu_isa_best(void);

/*
 * cpu_qdot_n - cpu_qdot of weight row @w with @nt activation rows
 * (CPU_QDOT_N at a time), @xq_row bytes apart (cpu_act_row_bytes, or any
 * multiple of an activation block), into @out[t], on @isa's kernels (one
 * this CPU runs): each weight block is decoded once for all of them, and
 * each result is the bits cpu_qdot gives, whatever @isa.
 */
#define CPU_QDOT_N 4
void cpu_qdot_n(enum cpu_isa isa, uint32_t type, const void *w, const void *xq, uint64_t xq_row,
                uint64_t n, uint32_t nt, float *out);

/*
 * The SIMD kernels of cpu_qdot_n for the Q8_0-style weight types, @xs
 * activation blocks between rows: cpu_qdot_q8.c built for AVX2 and for
 * AVX-512 VNNI.
 */
void cpu_qdot_q8_avx2(uint32_t type, const void *w, const void *xq, uint64_t xs, uint64_t n,
                      uint32_t nt, float *out);
void cpu_qdot_q8_vnni(uint32_t type, const void *w, const void *xq, uint64_t xs, uint64_t n,
                      uint32_t nt, float *out);

/* An activation block for Q8_0/Q4_0/Q5_0 dots: x ≈ d·q (d is Q8_0's F16 scale), s = Σ q. */
struct cpu_q8b {
	float d;
	int32_t s;
	int8_t q[32];
};

void cpu_quant_q8b(const float *x, struct cpu_q8b *y, uint64_t n);
void cpu_quant_q8b_avx2(const float *x, void *y, uint64_t n);

/* An activation super-block for K-quant dots: x ≈ d·q; bsums[g] = Σ q[16g..16g+15]. */
struct cpu_q8k {
	float d;
	int16_t bsums[16];
	int8_t q[256];
};

void cpu_quant_q8k(const float *x, struct cpu_q8k *y, uint64_t n);
void cpu_quant_q8k_avx2(const float *x, void *y, uint64_t n);
float cpu_qdot_k(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t n, bool simd);

/* cpu_qdot_k_n - cpu_qdot_n's AVX2 kernels for the K-quants: @xs super-blocks between rows. */
void cpu_qdot_k_n(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t xs, uint64_t n,
                  uint32_t nt, float *out);
float cpu_qdot_k_scalar(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t n);

/* cpu_qdot_k_scalar and cpu_qdot_k_n for Q2_K and Q3_K (cpu_qdot_k23.c). */
float cpu_qdot_k23_scalar(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t n);
void cpu_qdot_k23_n(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t xs, uint64_t n,
                    uint32_t nt, float *out);

/* cpu_q3k_scales - the sixteen 6-bit scales of Q3_K super-block @b, less 32, into @sc. */
void cpu_q3k_scales(const uint8_t *b, int8_t *sc);

/* cpu_k23_code - element @e's code in Q2_K super-block @b (0..3), or Q3_K's (q + 4: 0..7). */
int cpu_k23_code(uint32_t type, const uint8_t *b, uint32_t e);

/*
 * ---- packed weights (cpu_pack.c): the integer-dot types, groups of 8 rows ----
 *
 * Packed, a tensor's rows 8g..8g+7 are group g, of the same bytes as the
 * eight rows: nb = ne0/32 blocks in chunks of CPU_PACK_CHUNK / scale bytes
 * blocks (Q8_0, Q4_0, Q5_0 4; Q4_1, Q5_1 2; MXFP4 8), a group's last chunk
 * holding what remains. A chunk is its blocks' scales, eight a block (row
 * r's at 2r, MXFP4's E8M0 bytes at r; Q4_1/Q5_1: eight F16 scales, then
 * their eight F16 mins), one cache line when the chunk is full, then its
 * blocks' codes (cpu_pack_code_bytes each): a group is one stream read
 * forward without a jump (all of a group's scales first made the code
 * stream skip ahead, which stalled the hardware prefetcher: RESULTS). A
 * block's codes are 32-byte vectors whose four-byte lane r is row r's:
 *   Q8_0: vector j (0..7) holds elements 4j..4j+3, each code + 128 (unsigned);
 *   Q4_0: vector p (0..3) holds the bytes qs[4p..4p+3]: low nibbles elements
 *         4p..4p+3, high nibbles 16+4p..16+4p+3 (codes 0..15, offset 8);
 *   Q5_0: as Q4_0, then one vector whose byte i of lane r has bit p = the
 *         fifth bit of element 4p+i and bit 4+p that of 16+4p+i (offset 16);
 *   MXFP4: as Q4_0 (the file's qs); a kernel maps each code to its doubled
 *         E2M1 value + 12 (0..24, a byte shuffle), so the offset is 12, and
 *         the scale is the E8M0 byte's 2^(e - 128) (cpu_e8m0_half);
 *   Q4_1, Q5_1: as Q4_0, Q5_0 with no offset; the mins m add a second
 *         sum, Σ_b fma(s_b, m·dx, acc') with s_b the block's code sum.
 * So one vector of codes meets one broadcast four bytes of a token's Q8_0
 * activations in one vpdpbusd (or vpmaddubsw) for eight rows at once, and a
 * block's sum is an exact int32 per (row, token): Σ_b fma(isum_b, dw·dx, acc),
 * the same bits on every kernel and for any number of tokens.
 *
 * The K-quants (cpu_pack_k.c) pack each super-block of the eight rows in
 * place, one after the other (cpu_pack_block_bytes each), and meet Q8_K
 * activations (struct cpu_q8k):
 *   Q4_K (1184 bytes): d and dmin (eight F16 each), the eight sub-blocks'
 *         6-bit scales then mins unpacked to bytes (sub-block j, row r at
 *         8j + r), then 32 vectors of codes: vector 8c + p holds bytes
 *         qs[32c + 4p..32c + 4p + 3], whose low nibbles are elements
 *         64c + 4p.. of sub-block 2c and high nibbles 64c + 32 + 4p.. of 2c + 1;
 *   Q5_K (1440 bytes): Q4_K's with 8 vectors of fifth bits between the
 *         mins and the codes (the kernel reads them all first): vector p's
 *         byte i holds qh[4p + i], whose bit j is element 32j + 4p + i's;
 *   Q6_K (1680 bytes, the file's): d (eight F16), the sixteen int8 scales
 *         in pairs (group 2k + h, row r at 16k + 2r + h), then with unit u
 *         the elements 4u..4u+3: 32 vectors of low nibbles, vector u < 32
 *         holding unit u's (low) and unit u + 32's (high), and 16 vectors of
 *         high bits, vector v holding in bits 2k, 2k + 1 of byte i those of
 *         element i of units 2v, 2v + 32, 2v + 1, 2v + 33 (k = 0..3); in
 *         the order the kernel reads them, one stream: low vectors 4q..4q+3
 *         then high vectors 2q, 2q + 1, for q = 0..7 (CPU_PACK_Q6K_LO/HI).
 *   Q2_K (672 bytes, the file's): d and dmin (eight F16 each), the file's
 *         scale bytes (sub-block g, row r at 8g + r: scale low nibble, min
 *         high), then with unit u the elements 4u..4u+3, 16 vectors of
 *         codes, vector v holding in bits 2k, 2k + 1 of byte i those of
 *         element i of unit v + 16k (k = 0..3);
 *   Q3_K (912 bytes): d (eight F16), the sixteen 6-bit scales less 32 as
 *         int8 in Q6_K's pairs, 16 vectors of the codes' two low bits as
 *         Q2_K's, then 8 vectors of high bits, vector w holding in bit k of
 *         byte i that of element i of unit w + 8k (k = 0..7); a code is
 *         q + 4 (0..7), its offset of 4 taken out with the group sums.
 * Each (row, token) is then the bits cpu_qdot_k_scalar gives for the row:
 * exact integer sums per super-block, the same float steps in the same order.
 */
#define CPU_PACK_ROWS 8

/* Where the parts of a packed K-quant super-block start (bytes). */
#define CPU_PACK_Q4K_DMIN         16
#define CPU_PACK_Q4K_SC           32
#define CPU_PACK_Q4K_MIN          96
#define CPU_PACK_Q5K_HIGH         160                        /* Q5_K's fifth bits, then codes */
#define CPU_PACK_Q45K_CODES(five) ((five) ? 160 + 256 : 160) /* Q5_K (five), Q4_K */
#define CPU_PACK_Q6K_SC           16
#define CPU_PACK_Q6K_CODES        144 /* then 8 × (4 low-nibble vectors, 2 high-bit vectors) */
#define CPU_PACK_Q6K_LO(u)        (CPU_PACK_Q6K_CODES + 192 * ((u) / 4) + 32 * ((u) % 4)) /* u < 32 */
#define CPU_PACK_Q6K_HI(v)        (CPU_PACK_Q6K_CODES + 192 * ((v) / 2) + 128 + 32 * ((v) % 2))
#define CPU_PACK_Q2K_DMIN         16
#define CPU_PACK_Q2K_SC           32
#define CPU_PACK_Q2K_CODES        160
#define CPU_PACK_Q3K_SC           16
#define CPU_PACK_Q3K_LO           144
#define CPU_PACK_Q3K_HI           (144 + 512)

/* The bytes of a full chunk's scales in a packed Q8_0-style group: one cache line. */
#define CPU_PACK_CHUNK 64

/* cpu_pack_supported - whether weights of @type pack. */
bool cpu_pack_supported(uint32_t type);

/* cpu_pack_code_bytes - the bytes of one packed block's codes (Q8_0 256, Q5_0/Q5_1 160, else
 * 128), and cpu_pack_scale_bytes its eight rows' scales' (16; MXFP4 8; Q4_1/Q5_1 32). */
uint64_t cpu_pack_code_bytes(uint32_t type);
uint64_t cpu_pack_scale_bytes(uint32_t type);

/* cpu_pack_block_elems - the elements of one row's block of @type: 32, or 256 (K-quants). */
uint64_t cpu_pack_block_elems(uint32_t type);

/* cpu_pack_block_bytes - the packed bytes of one block of eight rows (a group is nb of them). */
uint64_t cpu_pack_block_bytes(uint32_t type);

/* cpu_pack_group - rows @src (eight, @row_bytes apart, @nb blocks each) into group @dst. */
void cpu_pack_group(uint32_t type, const uint8_t *src, uint64_t row_bytes, uint64_t nb,
                    uint8_t *dst);
void cpu_pack_group_k(uint32_t type, const uint8_t *src, uint64_t row_bytes, uint64_t nb,
                      uint8_t *dst);

/*
 * cpu_pack_mm - the eight rows of group @g (@nb blocks) times @nt activation
 * rows @xq (struct cpu_q8b, or struct cpu_q8k for the K-quants, @xs blocks
 * apart): y[t·ys + r] = the dot of row r and token t (+ bias[r] when
 * @bias), on @isa's kernel (one this CPU runs).
 */
void cpu_pack_mm(enum cpu_isa isa, uint32_t type, const uint8_t *g, uint64_t nb, const void *xq,
                 uint64_t xs, uint32_t nt, float *y, uint64_t ys, const float *bias);
void cpu_pack_mm_scalar(uint32_t type, const uint8_t *g, uint64_t nb, const void *xq, uint64_t xs,
                        uint32_t nt, float *y, uint64_t ys, const float *bias);
/* cpu_pack_mm's SIMD kernels, every packed type: cpu_pack_mm.c built for AVX2 and for VNNI. */
void cpu_pack_mm_avx2(uint32_t type, const uint8_t *g, uint64_t nb, const void *xq, uint64_t xs,
                      uint32_t nt, float *y, uint64_t ys, const float *bias);
void cpu_pack_mm_vnni(uint32_t type, const uint8_t *g, uint64_t nb, const void *xq, uint64_t xs,
                      uint32_t nt, float *y, uint64_t ys, const float *bias);
/* The scalar twin for Q4_K / Q5_K / Q6_K (cpu_pack_k.c); the SIMD builds take every type. */
void cpu_pack_mm_k_scalar(uint32_t type, const uint8_t *g, uint64_t nb, const void *xq, uint64_t xs,
                          uint32_t nt, float *y, uint64_t ys, const float *bias);

/*
 * F32, F16 and BF16 pack too (cpu_pack_f.c): a group's eight rows
 * interleaved one element at a time (row r's element k at 8k + r, in the
 * file's type; cpu_pack_block_elems 1), and meet float activations: each
 * (row, token) is one chain of fmas in element order on every kernel.
 */
#define CPU_PACK_F_TOKENS 8

/* cpu_pack_float - whether @type is a float type that packs (F32, F16, BF16). */
bool cpu_pack_float(uint32_t type);

/* cpu_pack_group_f - cpu_pack_group for the float types: @n elements a row. */
void cpu_pack_group_f(uint32_t type, const uint8_t *src, uint64_t row_bytes, uint64_t n,
                      uint8_t *dst);

/* cpu_pack_row_f - row @r (0..7) of the packed float group at @g (@n elements a row), as floats. */
void cpu_pack_row_f(uint32_t type, const uint8_t *g, uint64_t n, uint32_t r, float *y);

/*
 * cpu_pack_mmf - the @ng consecutive packed float groups at @g (@n elements
 * a row) times @nt tokens @x (@xs floats apart): y[t·ys + 8·gi + r] = the
 * dot of group gi's row r and token t (+ its bias when @bias), AVX2/FMA/F16C
 * when @simd (the caller checked the CPU), else the scalar twin: the same bits.
 */
void cpu_pack_mmf(bool simd, uint32_t type, const uint8_t *g, uint64_t ng, uint64_t n,
                  const float *x, uint64_t xs, uint32_t nt, float *y, uint64_t ys,
                  const float *bias);
void cpu_pack_mmf_scalar(uint32_t type, const uint8_t *g, uint64_t ng, uint64_t n, const float *x,
                         uint64_t xs, uint32_t nt, float *y, uint64_t ys, const float *bias);

/* A tensor's packed copy; its rows are used from here, not from the file. */
struct cpu_pack {
	const struct gguf_tensor *t;
	uint8_t *data; /* the groups, nb · cpu_pack_block_bytes each */
};

/* cpu_pack_find - @t's packed copy in @packs (@n, sorted by tensor), or NULL. */
const struct cpu_pack *cpu_pack_find(const struct cpu_pack *packs, uint32_t n,
                                     const struct gguf_tensor *t);

/* ---- attention ---- */

#define CPU_ATTN_MAX_D 512

/*
 * One KV head of one slot: the i-th position read is cell c = first + i, or
 * (first + i) % cells when @cells is not 0 (a ring), or with a block table
 * @blocks, c = blocks[l / block_tokens]·block_tokens + l % block_tokens for
 * l = first + i (paged); its key is at k + c·stride elements (F16 or F32),
 * its value at v + c·stride.
 */
struct cpu_attn {
	const void *k, *v;
	uint64_t stride;        /* elements from one cell to the next */
	uint32_t cells;         /* cells of the ring; 0: the positions read are contiguous */
	uint32_t first;         /* the cell of the first position read (< cells when a ring);
	                           paged: the first position read */
	const uint32_t *blocks; /* paged: the block table (NULL: not paged; then cells is 0) */
	uint32_t block_tokens;  /* paged: positions per block */
	uint32_t d;             /* head dimension, ≤ CPU_ATTN_MAX_D */
	bool f16;               /* cache elements are F16, else F32 */
	bool simd;              /* AVX2/F16C kernels (the caller checked the CPU) */
	bool has_sink; /* @sink joins the softmax's denominator (gpt-oss), as ggml's sinks */
	float sink;
	float scale; /* multiplies each q·k; 0: 1/√d (gemma3 scales its queries instead: 1) */
};

/*
 * cpu_attn_head - softmax(q·K / √d)·V over @n_pos positions (cells as struct
 * cpu_attn says, in order) for query head @q (d floats) into @out (d
 * floats); @sc is n_pos floats of scratch. A ring gives the same result, bit
 * for bit, as the same positions stored contiguously.
 * With a sink s, the softmax is exp(x_p - m) / (Σ exp(x_p - m) + exp(s - m)),
 * m the maximum of the scores and s.
 */
void cpu_attn_head(const struct cpu_attn *a, const float *q, uint32_t n_pos, float *sc, float *out);

/* ---- blocked attention (cpu_attn_tile.c) ---- */

/* Positions per block: aligned on multiples of it, its K then V converted once per tile. */
#define CPU_ATTN_BLOCK 32

/* One query of a tile: its vector, its output, the positions it reads, its sink. */
struct cpu_attn_query {
	const float *q;  /* d floats */
	float *out;      /* d floats */
	uint32_t lo, hi; /* positions [lo, hi), hi > lo */
	bool has_sink;
	float sink;
};

/*
 * cpu_attn_tile_floats - the scratch (floats) cpu_attn_tile takes for @nq
 * queries of @d reading at most @max_pos positions each.
 */
uint64_t cpu_attn_tile_floats(uint32_t nq, uint32_t d, uint32_t max_pos);

/*
 * cpu_attn_tile - cpu_attn_head for @nq queries of one KV head (@a;
 * position p is at cell p % a->cells, or through a->blocks; a->first,
 * a->has_sink and a->sink are not read), each reading at most @max_pos
 * positions: the union of their positions in blocks of CPU_ATTN_BLOCK,
 * each block's K (then V) converted to float once for all of them. Each
 * query's output is the bits cpu_attn_head's AVX2 kernels give it, in any
 * tile. AVX2/FMA/F16C only (the caller checked the CPU); a->d a multiple
 * of 8.
 */
void cpu_attn_tile(const struct cpu_attn *a, const struct cpu_attn_query *qs, uint32_t nq,
                   uint32_t max_pos, float *scratch);

/*
 * cpu_attn_softmax - @sc[0..n) (scores) become the attention's weights:
 * with m the maximum of the scores (and of @sink when @has_sink), each
 * e^(s - m) by a polynomial of IEEE steps (within 3 ulp of e^x; e^-87 below
 * -87; a NaN score stays NaN), summed in double in eight partial sums (position p in sum p % 8,
 * joined ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7))), plus e^(sink - m),
 * then each times (float)(1 / sum), rounded to F16 when @f16. @simd: the
 * AVX2 kernels (the caller checked the CPU), the same bits.
 */
void cpu_attn_softmax(float *sc, uint32_t n, bool has_sink, float sink, bool f16, bool simd);

/* cpu_dot_select - the AVX2/FMA dot when @allow_simd and the CPU has it, else the scalar one. */
cpu_dot_fn cpu_dot_select(bool allow_simd);

/* cpu_dot_scalar - the portable dot product (8 partial sums, as the SIMD one keeps). */
float cpu_dot_scalar(const float *a, const float *b, uint64_t n);

/* cpu_has_avx2 - whether the AVX2/FMA/F16C kernels run on this CPU. */
bool cpu_has_avx2(void);

/* ---- element-wise and attention ops ---- */

/* cpu_rmsnorm - out = x / sqrt(mean(x²) + eps) · w, as ggml computes it (sum in double). */
void cpu_rmsnorm(const float *x, const float *w, uint32_t n, float eps, float *out);

/*
 * cpu_rope - rotate the first @n_rot dims of each of @n_heads heads of
 * @head_dim in @x for position @pos; @neox pairs (i, i + n_rot/2) instead
 * of (2i, 2i + 1); @factors (n_rot/2, may be NULL) divide the frequencies.
 */
void cpu_rope(float *x, uint32_t n_heads, uint32_t head_dim, uint32_t n_rot, uint32_t pos,
              float base, bool neox, const float *factors);

/*
 * cpu_geglu - g[i] = gelu(g[i]) · u[i] as ggml's CPU geglu: 0 at or below -10, g at or
 * above 10, between them @tab (model_gelu_table) at g rounded to F16.
 */
void cpu_geglu(float *g, const float *u, uint32_t n, const float *tab);

/* cpu_swiglu - g[i] = silu(g[i]) · u[i]. */
void cpu_swiglu(float *g, const float *u, uint32_t n);

/*
 * cpu_swiglu_oai - gpt-oss's clamped SwiGLU, as ggml_swiglu_oai: with
 * x = min(g[i], limit) and y = clamp(u[i], -limit, limit),
 * g[i] = x / (1 + e^(-alpha·x)) · (y + 1).
 */
void cpu_swiglu_oai(float *g, const float *u, uint32_t n, float alpha, float limit);

/* cpu_rope_yarn - cpu_rope with YaRN's interpolation ramp and magnitude scale (@y:
 * model_yarn_params). */
void cpu_rope_yarn(float *x, uint32_t n_heads, uint32_t head_dim, uint32_t n_rot, uint32_t pos,
                   float base, bool neox, const struct model_yarn *y);
