/*
 * cpu_matmul.c - matrix products over weights in their file format.
 *
 * Tensors packed at load (cpu_pack.c: every supported type, rows in whole
 * groups of eight) run the tiled kernels of cpu_pack_mm / cpu_pack_mmf. Of
 * the rest, for the integer-dot types (cpu_qdot_supported) the batch's
 * activations are quantized once per product and each weight row is dotted
 * with every token straight from the file's blocks; any other type has each
 * row dequantized once into a per-thread scratch row (in L1) and dotted in
 * float. Either way prefill reads the weights once for all its tokens and
 * decode once per step. Threads split the output rows. Kernels are
 * AVX2/FMA/F16C when the CPU has them (chosen at run time), else scalar;
 * both are tested.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

#include "cpu.h"
#include "cpu_avx2.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"

float
cpu_dot_scalar(const float *a, const float *b, uint64_t n)
{
	float acc[8] = {0};
	uint64_t i = 0;

	for (; i + 8 <= n; i += 8)
		for (unsigned k = 0; k < 8; k++)
			acc[k] += a[i + k] * b[i + k];
	float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
	for (; i < n; i++)
		s += a[i] * b[i];
	return s;
}

__attribute__((target("avx2,fma,f16c"))) static float
dot_avx2(const float *a, const float *b, uint64_t n)
{
	__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
	uint64_t i = 0;

	for (; i + 16 <= n; i += 16) {
		acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
		acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8),
		                       acc1);
	}
	for (; i + 8 <= n; i += 8)
		acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
	float s = cpu_avx2_hsum(_mm256_add_ps(acc0, acc1));
	for (; i < n; i++)
		s += a[i] * b[i];
	return s;
}

bool
cpu_has_avx2(void)
{
	unsigned a, b, c, d;

	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
		return false;
	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

cpu_dot_fn
cpu_dot_select(bool allow_simd)
{
	return allow_simd && cpu_has_avx2() ? dot_avx2 : cpu_dot_scalar;
}

struct mm_job {
	const struct gguf_tensor *w, *bias;
	uint64_t row0, row_bytes;
	const float *x;
	uint32_t T;
	float *y, *scratch;
	uint64_t y_stride;
	cpu_dot_fn dot;
	bool simd;
	const uint8_t *xq; /* x quantized for integer dots (cpu_quant_act), or NULL */
	uint8_t *xq_out;   /* the same bytes, as quant_rows writes them */
	uint64_t xq_row;   /* bytes per quantized x row */
	enum cpu_isa isa;  /* the integer dots' kernels, chosen once per product */
	const uint8_t *pk; /* the packed groups of rows [row0, row0 + rows), or NULL */
};

/* Weight bytes a block of rows takes in prefill: with a token group's activations, in L1. */
#define MM_BLOCK_BYTES (16u << 10)

/*
 * Rows [@begin, @end) with integer dots: blocks of rows that fit in L1
 * each meet every group of CPU_QDOT_N tokens, so a group's activations are
 * read from memory once per block and each weight block is decoded once
 * per group.
 */
static void
mm_rows_q(const struct mm_job *j, uint64_t begin, uint64_t end)
{
	uint64_t ne0 = j->w->ne[0], rb = MM_BLOCK_BYTES / j->row_bytes;
	const uint8_t *w = (const uint8_t *)j->w->data + j->row0 * j->row_bytes;

	rb = rb ? rb : 1;
	for (uint64_t r0 = begin; r0 < end; r0 += rb) {
		uint64_t r1 = end - r0 < rb ? end : r0 + rb;
		for (uint32_t t = 0; t < j->T; t += CPU_QDOT_N) {
			uint32_t nt = j->T - t < CPU_QDOT_N ? j->T - t : CPU_QDOT_N;
			for (uint64_t r = r0; r < r1; r++) {
				float out[CPU_QDOT_N], b = 0.0f;
				cpu_qdot_n(j->isa, j->w->type, w + r * j->row_bytes,
				           j->xq + t * j->xq_row, j->xq_row, ne0, nt, out);
				if (j->bias != NULL)
					memcpy(&b, (const float *)j->bias->data + j->row0 + r,
					       sizeof(b));
				for (uint32_t k = 0; k < nt; k++)
					j->y[(t + k) * j->y_stride + r] = out[k] + b;
			}
		}
	}
}

/* Packed groups' weight bytes per block of groups: read from L2 once per token tile. */
#define MM_PACK_BLOCK_BYTES (64u << 10)

/*
 * The fewest groups in a block of the float kernel (cpu_pack_mmf), which
 * tiles a decode step four or eight groups at a time: a 64 KiB block holds
 * only four groups of 896 F16 elements, and one of 4,864.
 */
#define MM_PACK_F_GROUPS 8

/* Tokens per call of the packed kernel. */
#define MM_PACK_TOKENS 8

/*
 * Groups [@begin, @end) of packed rows: blocks of groups that fit in L2
 * each meet every tile of tokens; within a block, a tile's activations
 * stay in L1 from one group to the next.
 */
static void
mm_groups(void *ctx, uint32_t thread, uint64_t begin, uint64_t end)
{
	const struct mm_job *j = ctx;
	uint64_t nb = j->w->ne[0] / cpu_pack_block_elems(j->w->type);
	uint64_t gbytes = nb * cpu_pack_block_bytes(j->w->type), gb = MM_PACK_BLOCK_BYTES / gbytes;
	uint64_t xs =
	        j->xq_row / (cpu_qdot_act(j->w->type) == CPU_ACT_Q8K ? sizeof(struct cpu_q8k)
	                                                             : sizeof(struct cpu_q8b));
	const float *bias = j->bias != NULL ? (const float *)j->bias->data + j->row0 : NULL;

	(void)thread;
	gb = gb ? gb : 1;
	if (j->xq == NULL && gb < MM_PACK_F_GROUPS) /* long rows: blocks of whole tiles */
		gb = MM_PACK_F_GROUPS;
	for (uint64_t g0 = begin; g0 < end; g0 += gb) {
		uint64_t g1 = end - g0 < gb ? end : g0 + gb;
		if (j->xq == NULL) { /* F32, F16, BF16: float activations, a block at once */
			for (uint32_t t = 0; t < j->T; t += CPU_PACK_F_TOKENS) {
				uint32_t nt =
				        j->T - t < CPU_PACK_F_TOKENS ? j->T - t : CPU_PACK_F_TOKENS;
				cpu_pack_mmf(j->simd, j->w->type, j->pk + g0 * gbytes, g1 - g0, nb,
				             j->x + t * nb, nb, nt,
				             j->y + t * j->y_stride + g0 * CPU_PACK_ROWS,
				             j->y_stride,
				             bias != NULL ? bias + g0 * CPU_PACK_ROWS : NULL);
			}
			continue;
		}
		for (uint32_t t = 0; t < j->T; t += MM_PACK_TOKENS) {
			uint32_t nt = j->T - t < MM_PACK_TOKENS ? j->T - t : MM_PACK_TOKENS;
			for (uint64_t g = g0; g < g1; g++)
				cpu_pack_mm(j->isa, j->w->type, j->pk + g * gbytes, nb,
				            j->xq + t * j->xq_row, xs, nt,
				            j->y + t * j->y_stride + g * CPU_PACK_ROWS, j->y_stride,
				            bias != NULL ? bias + g * CPU_PACK_ROWS : NULL);
		}
	}
}

static void
mm_rows(void *ctx, uint32_t thread, uint64_t begin, uint64_t end)
{
	const struct mm_job *j = ctx;
	uint64_t ne0 = j->w->ne[0];
	float *row = j->scratch + (uint64_t)thread * ne0;

	if (j->xq != NULL) {
		mm_rows_q(j, begin, end);
		return;
	}
	for (uint64_t r = begin; r < end; r++) {
		const uint8_t *src = (const uint8_t *)j->w->data + (j->row0 + r) * j->row_bytes;
		const float *wr = (const float *)(const void *)src;
		if (j->w->type != GGML_TYPE_F32) {
			cpu_dequant_row(j->w->type, src, row, ne0, j->simd);
			wr = row;
		}
		float b = 0.0f;
		if (j->bias != NULL)
			memcpy(&b, (const float *)j->bias->data + j->row0 + r, sizeof(b));
		for (uint32_t t = 0; t < j->T; t++)
			j->y[t * j->y_stride + r] = j->dot(wr, j->x + t * ne0, ne0) + b;
	}
}

/* Activation rows [@begin, @end) quantized for the integer dots (each row's bytes alike). */
static void
quant_rows(void *ctx, uint32_t thread, uint64_t begin, uint64_t end)
{
	const struct mm_job *j = ctx;
	uint64_t ne0 = j->w->ne[0];

	(void)thread;
	for (uint64_t t = begin; t < end; t++)
		cpu_quant_act(j->w->type, j->x + t * ne0, j->xq_out + t * j->xq_row, ne0, j->simd);
}

void
cpu_matmul(struct cpu_pool *pool, cpu_dot_fn dot, const struct gguf_tensor *w,
           const struct cpu_pack *pack, uint64_t row0, uint64_t rows, const float *x, uint32_t T,
           float *y, uint64_t y_stride, const struct gguf_tensor *bias, float *scratch, uint8_t *xq)
{
	struct mm_job j = {.w = w,
	                   .bias = bias,
	                   .row0 = row0,
	                   .x = x,
	                   .T = T,
	                   .y = y,
	                   .scratch = scratch,
	                   .y_stride = y_stride,
	                   .dot = dot,
	                   .simd = dot != cpu_dot_scalar,
	                   .isa = CPU_ISA_SCALAR};

	ggml_row_bytes(w->type, w->ne[0], &j.row_bytes);
	if (cpu_qdot_supported(w->type)) {
		j.xq_row = cpu_act_row_bytes(w->type, w->ne[0]);
		j.xq = j.xq_out = xq;
		cpu_pool_for(pool, T, 4 * w->ne[0], quant_rows, &j);
		j.isa = j.simd ? cpu_isa_best() : CPU_ISA_SCALAR;
	}
	if (pack != NULL && row0 % CPU_PACK_ROWS == 0 && rows % CPU_PACK_ROWS == 0) {
		j.pk = pack->data + row0 / CPU_PACK_ROWS *
		                            (w->ne[0] / cpu_pack_block_elems(w->type)) *
		                            cpu_pack_block_bytes(w->type);
		cpu_pool_for(pool, rows / CPU_PACK_ROWS, CPU_PACK_ROWS * w->ne[0] * (T ? T : 1),
		             mm_groups, &j);
		return;
	}
	cpu_pool_for(pool, rows, w->ne[0] * (T ? T : 1), mm_rows, &j);
}
