/*
 * cpu_pack.c - weights packed for the matrix products: Q8_0, Q4_0, Q5_0,
 * Q4_1, Q5_1, MXFP4 and the K-quants' rows regrouped eight at a time (cpu.h
 * says the layout), so that one vector of codes serves eight rows and one
 * broadcast activation word, and each block's sum stays an exact integer;
 * F32, F16 and BF16 rows too, one element at a time (cpu_pack_f.c). The
 * packed copy has the bytes of the rows it replaces (Q3_K, Q4_K and Q5_K
 * 2-4 % more: their scales unpacked); the file's pages of a packed tensor are
 * given back to the kernel once copied. Here: the Q8_0-style packer and
 * scalar twin of the kernels (cpu_pack_mm.c; the K-quants' are in
 * cpu_pack_k.c, the float types' in cpu_pack_f.c), the dispatch, the
 * lookup, and the packing of a model at load.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/alloc.h"
#include "cpu_backend.h"
#include "cpu_qdot_int.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"

/* Whether @type is one of the K-quants cpu_pack_k.c packs. */
static bool
pack_k(uint32_t type)
{
	return type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K || type == GGML_TYPE_Q4_K ||
	       type == GGML_TYPE_Q5_K || type == GGML_TYPE_Q6_K;
}

bool
cpu_pack_supported(uint32_t type)
{
	return type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0 || type == GGML_TYPE_Q5_0 ||
	       type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1 || type == GGML_TYPE_MXFP4 ||
	       pack_k(type) || cpu_pack_float(type);
}

uint64_t
cpu_pack_block_elems(uint32_t type)
{
	return pack_k(type) ? 256 : cpu_pack_float(type) ? 1 : 32;
}

uint64_t
cpu_pack_block_bytes(uint32_t type)
{
	switch (type) {
	case GGML_TYPE_Q2_K:
		return 672;
	case GGML_TYPE_Q3_K:
		return 912;
	case GGML_TYPE_Q4_K:
		return 1184;
	case GGML_TYPE_Q5_K:
		return 1440;
	case GGML_TYPE_Q6_K:
		return 1680;
	case GGML_TYPE_F32:
		return 4 * CPU_PACK_ROWS;
	case GGML_TYPE_F16:
	case GGML_TYPE_BF16:
		return 2 * CPU_PACK_ROWS;
	default:
		break;
	}
	return cpu_pack_scale_bytes(type) + cpu_pack_code_bytes(type);
}

uint64_t
cpu_pack_scale_bytes(uint32_t type)
{
	return type == GGML_TYPE_MXFP4 ? 8 : cpu_affine(type) ? 32 : 16;
}

uint64_t
cpu_pack_code_bytes(uint32_t type)
{
	return type == GGML_TYPE_Q8_0                             ? 256
	       : type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1 ? 160
	                                                          : 128;
}

/* Where the 4-bit codes start in a file block of @type (Q5_0/Q5_1: qh just before). */
static uint64_t
qs_at(uint32_t type)
{
	switch (type) {
	case GGML_TYPE_Q5_0:
		return 6;
	case GGML_TYPE_Q5_1:
		return 8;
	case GGML_TYPE_Q4_1:
		return 4;
	case GGML_TYPE_MXFP4:
		return 1;
	default:
		return 2;
	}
}

/* Whether @type's codes have a fifth bit (Q5_0, Q5_1). */
static bool
five_bit(uint32_t type)
{
	return type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1;
}

/* Row @r's block at @blk into the codes @c of its packed block. */
static void
pack_block(uint32_t type, const uint8_t *blk, uint32_t r, uint8_t *c)
{
	if (type == GGML_TYPE_Q8_0) {
		for (uint32_t e = 0; e < 32; e++)
			c[32 * (e / 4) + 4 * r + e % 4] = blk[2 + e] ^ 0x80;
		return;
	}
	const uint8_t *qs = blk + qs_at(type);
	for (uint32_t k = 0; k < 16; k++)
		c[32 * (k / 4) + 4 * r + k % 4] = qs[k];
	if (!five_bit(type))
		return;
	uint32_t qh = (uint32_t)qs[-4] | (uint32_t)qs[-3] << 8 | (uint32_t)qs[-2] << 16 |
	              (uint32_t)qs[-1] << 24;
	for (uint32_t i = 0; i < 4; i++) {
		uint8_t v = 0;
		for (uint32_t p = 0; p < 4; p++)
			v |= (uint8_t)(((qh >> (4 * p + i)) & 1) << p |
			               ((qh >> (16 + 4 * p + i)) & 1) << (4 + p));
		c[128 + 4 * r + i] = v;
	}
}

/*
 * Where block @b of a group of @nb blocks of @type keeps its codes (returned)
 * and its scales (*@sc), as offsets into the group (cpu.h: in chunks).
 */
static uint64_t
block_at(uint32_t type, uint64_t nb, uint64_t b, uint64_t *sc)
{
	uint64_t sb = cpu_pack_scale_bytes(type), cb = cpu_pack_code_bytes(type);
	uint64_t kc = CPU_PACK_CHUNK / sb, b0 = b - b % kc; /* the chunk's first block */
	uint64_t n = nb - b0 < kc ? nb - b0 : kc;           /* and its blocks */

	*sc = b0 * (sb + cb) + sb * (b - b0);
	return b0 * (sb + cb) + sb * n + cb * (b - b0);
}

void
cpu_pack_group(uint32_t type, const uint8_t *src, uint64_t row_bytes, uint64_t nb, uint8_t *dst)
{
	uint64_t bb = ggml_type_get(type)->block_bytes;
	uint64_t sr = cpu_pack_scale_bytes(type) / CPU_PACK_ROWS; /* a row's scale */

	if (pack_k(type)) {
		cpu_pack_group_k(type, src, row_bytes, nb, dst);
		return;
	}
	if (cpu_pack_float(type)) {
		cpu_pack_group_f(type, src, row_bytes, nb, dst);
		return;
	}
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t sc, c = block_at(type, nb, b, &sc);
		for (uint32_t r = 0; r < CPU_PACK_ROWS; r++) {
			const uint8_t *blk = src + r * row_bytes + b * bb;
			if (cpu_affine(type)) { /* the scales, then the mins */
				memcpy(dst + sc + 2 * r, blk, 2);
				memcpy(dst + sc + 16 + 2 * r, blk + 2, 2);
			} else {
				memcpy(dst + sc + sr * r, blk, sr);
			}
			pack_block(type, blk, r, dst + c);
		}
	}
}

/* Row @r's unsigned code of element @e in packed block @c (MXFP4: its value + 12). */
static int32_t
packed_code(uint32_t type, const uint8_t *c, uint32_t r, uint32_t e)
{
	if (type == GGML_TYPE_Q8_0)
		return c[32 * (e / 4) + 4 * r + e % 4];
	uint32_t k = e % 16, hi = e / 16;
	int32_t v = (c[32 * (k / 4) + 4 * r + k % 4] >> (4 * hi)) & 15;
	if (type == GGML_TYPE_MXFP4)
		return cpu_mxfp4_x2[v] + 12;
	if (five_bit(type))
		v |= ((c[128 + 4 * r + k % 4] >> (4 * hi + k / 4)) & 1) << 4;
	return v;
}

/* Row @r's scale of a block whose scales are at @sc. */
static float
packed_scale(uint32_t type, const uint8_t *sc, uint32_t r)
{
	if (type == GGML_TYPE_MXFP4)
		return cpu_e8m0_half(sc[r]);
	return fp16_load(sc + 2 * r);
}

void
cpu_pack_mm_scalar(uint32_t type, const uint8_t *g, uint64_t nb, const void *xq, uint64_t xs,
                   uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	const struct cpu_q8b *x = xq;
	int32_t off = type == GGML_TYPE_Q8_0    ? 128
	              : type == GGML_TYPE_Q4_0  ? 8
	              : type == GGML_TYPE_Q5_0  ? 16
	              : type == GGML_TYPE_MXFP4 ? 12
	                                        : 0; /* Q4_1, Q5_1 */

	for (uint32_t t = 0; t < nt; t++)
		for (uint32_t r = 0; r < CPU_PACK_ROWS; r++) {
			float acc = 0.0f, accm = 0.0f; /* Q4_1/Q5_1's mins in accm */
			for (uint64_t b = 0; b < nb; b++) {
				const struct cpu_q8b *xb = x + t * xs + b;
				uint64_t sc, c = block_at(type, nb, b, &sc);
				int32_t s = 0;
				for (uint32_t e = 0; e < 32; e++)
					s += packed_code(type, g + c, r, e) * xb->q[e];
				acc = fmaf((float)(s - off * xb->s),
				           packed_scale(type, g + sc, r) * xb->d, acc);
				if (cpu_affine(type))
					accm = fmaf((float)xb->s,
					            fp16_load(g + sc + 16 + 2 * r) * xb->d, accm);
			}
			if (cpu_affine(type))
				acc += accm;
			y[t * ys + r] = bias != NULL ? acc + bias[r] : acc;
		}
}

void
cpu_pack_mm(enum cpu_isa isa, uint32_t type, const uint8_t *g, uint64_t nb, const void *xq,
            uint64_t xs, uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	switch (isa) {
	case CPU_ISA_VNNI:
		cpu_pack_mm_vnni(type, g, nb, xq, xs, nt, y, ys, bias);
		break;
	case CPU_ISA_AVX2:
		cpu_pack_mm_avx2(type, g, nb, xq, xs, nt, y, ys, bias);
		break;
	default:
		if (pack_k(type))
			cpu_pack_mm_k_scalar(type, g, nb, xq, xs, nt, y, ys, bias);
		else
			cpu_pack_mm_scalar(type, g, nb, xq, xs, nt, y, ys, bias);
		break;
	}
}

static int
pack_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct cpu_pack *)a)->t,
	          y = (uintptr_t)((const struct cpu_pack *)b)->t;

	return x < y ? -1 : x > y;
}

const struct cpu_pack *
cpu_pack_find(const struct cpu_pack *packs, uint32_t n, const struct gguf_tensor *t)
{
	struct cpu_pack key = {.t = t};

	return n == 0 ? NULL : bsearch(&key, packs, n, sizeof(*packs), pack_cmp);
}

/* Whether @t is a bias (F32 "*.bias", 2-D for gpt-oss's experts): added, never a product's. */
static bool
is_bias(const struct gguf_tensor *t)
{
	size_t n = strlen(t->name);

	return n >= 5 && strcmp(t->name + n - 5, ".bias") == 0;
}

/*
 * Whether @t of @m packs: a packable type, a matrix (not a bias), not the
 * embedding looked up by row (unless of a float type, whose rows
 * cpu_pack_row_f reads back: a model whose output head is its embedding
 * then has its head packed), and every product over it in whole groups:
 * the rows of each matrix (an expert's, of a 3-D tensor) and, fused gate
 * and up, of each half.
 */
static bool
packable(const struct model *m, const struct gguf_tensor *t)
{
	uint64_t row_bytes;

	if (!cpu_pack_supported(t->type) || is_bias(t) ||
	    (t == m->tok_embd && !cpu_pack_float(t->type)) || t->ne[1] % CPU_PACK_ROWS != 0 ||
	    ggml_row_bytes(t->type, t->ne[0], &row_bytes) != ORCH_OK || row_bytes == 0)
		return false;
	for (uint32_t il = 0; il < m->hp.n_layer; il++)
		if (t == m->layers[il].w_gate_up && m->hp.n_ff % CPU_PACK_ROWS != 0)
			return false;
	return t->nbytes % (CPU_PACK_ROWS * row_bytes) == 0 && t->nbytes > 0;
}

/* The bytes of @t packed (@row_bytes a row): its groups, nb blocks of eight rows each. */
static uint64_t
packed_bytes(const struct gguf_tensor *t, uint64_t row_bytes)
{
	uint64_t groups = t->nbytes / (CPU_PACK_ROWS * row_bytes);

	return groups * (t->ne[0] / cpu_pack_block_elems(t->type)) * cpu_pack_block_bytes(t->type);
}

struct pack_list {
	const struct model *m;
	struct cpu_pack *packs; /* NULL while counting */
	uint32_t n;
	uint64_t bytes; /* so far, each tensor's start rounded up to 64 */
};

static void
list_tensor(const struct gguf_tensor *t, void *ctx)
{
	struct pack_list *pl = ctx;
	uint64_t row_bytes;

	if (!packable(pl->m, t))
		return;
	ggml_row_bytes(t->type, t->ne[0], &row_bytes);
	if (pl->packs != NULL)
		pl->packs[pl->n] =
		        (struct cpu_pack){.t = t, .data = (uint8_t *)(uintptr_t)pl->bytes};
	pl->n++;
	pl->bytes += (packed_bytes(t, row_bytes) + 63) & ~(uint64_t)63;
}

struct pack_job {
	const struct gguf_tensor *t;
	uint8_t *dst;
	uint64_t row_bytes;
	uint64_t g0; /* the first group of this chunk */
};

static void
pack_groups(void *ctx, uint32_t thread, uint64_t begin, uint64_t end)
{
	const struct pack_job *j = ctx;
	uint64_t gb = CPU_PACK_ROWS * j->row_bytes,
	         nb = j->t->ne[0] / cpu_pack_block_elems(j->t->type);
	uint64_t pb = nb * cpu_pack_block_bytes(j->t->type);

	(void)thread;
	for (uint64_t g = j->g0 + begin; g < j->g0 + end; g++)
		cpu_pack_group(j->t->type, (const uint8_t *)j->t->data + g * gb, j->row_bytes, nb,
		               j->dst + g * pb);
}

/*
 * Give back the file's pages under [@p, @p + @n), packed: their copy is read
 * instead. Data-safe on any memory: clean file pages are dropped, and a
 * neighbour's page at either end is read back if it is used again.
 */
static void
drop_pages(const uint8_t *p, uint64_t n)
{
#ifdef MADV_PAGEOUT
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)p & ~(page - 1), hi = ((uintptr_t)p + n + page - 1) & ~(page - 1);

	(void)madvise((void *)lo, hi - lo, MADV_PAGEOUT);
#else
	(void)p;
	(void)n;
#endif
}

/* Source bytes packed between two page drops: the load's peak above the packed model. */
#define PACK_CHUNK_BYTES (8u << 20)

/* Pack @p (its tensor's rows at @row_bytes) on @pool, chunk by chunk. */
static void
pack_tensor(struct cpu_pool *pool, const struct cpu_pack *p, uint64_t row_bytes, struct cpu_load *l)
{
	uint64_t gb = CPU_PACK_ROWS * row_bytes, groups = p->t->nbytes / gb;
	uint64_t chunk = PACK_CHUNK_BYTES / gb ? PACK_CHUNK_BYTES / gb : 1;
	struct pack_job j = {.t = p->t, .dst = p->data, .row_bytes = row_bytes};

	for (j.g0 = 0; j.g0 < groups; j.g0 += chunk) {
		uint64_t n = groups - j.g0 < chunk ? groups - j.g0 : chunk;
		cpu_pool_for(pool, n, gb, pack_groups, &j);
		drop_pages((const uint8_t *)p->t->data + j.g0 * gb, n * gb);
		cpu_load_advance(l, n * gb);
	}
}

orch_err
cpu_pack_model(struct be_model *b, struct cpu_load *l, struct orch_errinfo *reterr)
{
	struct pack_list pl = {.m = b->m};
	void *region;

	model_for_each_tensor(b->m, list_tensor, &pl);
	if (pl.n == 0)
		return ORCH_OK;
	if ((pl.packs = orch_calloc(pl.n, sizeof(*pl.packs))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "cpu backend: out of memory");
	region = mmap(NULL, pl.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED) {
		orch_free(pl.packs);
		return orch_errf(reterr, ORCH_ENOMEM,
		                 "cpu backend: out of memory for %llu bytes of packed weights",
		                 (unsigned long long)pl.bytes);
	}
#ifdef MADV_HUGEPAGE
	(void)madvise(region, pl.bytes, MADV_HUGEPAGE);
#endif
	b->packs = pl.packs;
	b->pack_region = region;
	b->pack_bytes = pl.bytes;
	pl.n = 0;
	pl.bytes = 0;
	model_for_each_tensor(b->m, list_tensor, &pl);
	b->n_packs = pl.n;
	uint64_t file = 0;
	for (uint32_t i = 0; i < pl.n; i++) {
		struct cpu_pack *p = &pl.packs[i];
		uint64_t row_bytes;
		ggml_row_bytes(p->t->type, p->t->ne[0], &row_bytes);
		p->data = (uint8_t *)region + (uintptr_t)p->data;
		pack_tensor(b->pool, p, row_bytes, l);
		file += p->t->nbytes;
	}
	qsort(pl.packs, pl.n, sizeof(*pl.packs), pack_cmp);
	if (pl.bytes > file) { /* the K-quants' unpacked scales, the tensors' alignment */
		b->bytes_needed += pl.bytes - file;
		b->bytes_used += pl.bytes - file;
		b->pack_extra_bytes = pl.bytes - file;
	}
	return ORCH_OK;
}

void
cpu_pack_free(struct be_model *b)
{
	if (b->pack_region != NULL)
		munmap(b->pack_region, b->pack_bytes);
	orch_free(b->packs);
	b->pack_region = NULL;
	b->packs = NULL;
	b->n_packs = 0;
}
