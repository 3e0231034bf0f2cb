#pragma once
/* cpu_backend.h - the CPU backend's model state, shared by cpu_backend.c and cpu_forward.c. */
#include "cpu.h"
#include "engine/model/model.h"

struct be_model {
	const struct model *m;
	struct be_config cfg;
	struct cpu_pool *pool;
	cpu_dot_fn dot;
	uint32_t q_dim, kv_dim, qkv_dim, max_ne0;
	/*
	 * KV cache, F16 bits or F32: per layer, per slot, kv_cells[il] cells of kv_dim;
	 * layer il's cells of slot s start at cell kv_base[il] + s · kv_cells[il], and
	 * position p lives in cell p % kv_cells[il]: n_ctx cells for a full-attention layer,
	 * a ring of model_swa_cells() for a sliding-window one. A paged layer
	 * (cpu_layer_paged) has instead kv_cells[il] = kv_blocks · kv_block_tokens cells
	 * (kv_swa_blocks for a sliding-window layer) shared by all slots, from
	 * kv_base[il]: position p of a sequence is cell t[p / kv_block_tokens] ·
	 * kv_block_tokens + p % kv_block_tokens of its table t (cpu_layer_table).
	 */
	void *k_cache, *v_cache;
	uint32_t *kv_cells; /* [n_layer] */
	uint64_t *kv_base;  /* [n_layer] */
	float *f16;         /* [65536] F16 bits → float */
	float *gelu;        /* [65536] F16 bits → GELU, ggml's table (ffn_gelu; else NULL) */
	/* scratch for max_batch_tokens (B) tokens */
	float *x, *xn, *tmp; /* [B][n_embd] */
	float *qkv;          /* [B][q + 2 kv] */
	float *att;          /* [B][q] */
	float *gate, *up;    /* [B][max(n_ff, n_ff_exp)] */
	/* mixture of experts (n_expert > 0) */
	float *router;          /* [B][n_expert] the router's logits */
	uint32_t *sel;          /* [B][n_expert_used] experts chosen, best first */
	float *sel_w;           /* [B][n_expert_used] their weights */
	uint32_t *route;        /* [B · n_expert_used] (token · k + j) of one expert's rows */
	float *moe_x, *moe_out; /* [B][n_embd]; [B][n_expert_used][n_embd] */
	struct model_yarn yarn; /* yarn_factor > 0 */
	float *last;            /* [slots][n_embd] */
	float *logits;          /* [slots][n_vocab] */
	float *mm_scratch;      /* [threads][max_ne0] */
	uint8_t *xq;   /* [max(B, slots)][max_ne0 / 32 · 40]: x quantized (cpu_q8b or cpu_q8k) */
	float *scores; /* [threads][n_ctx] */
	/* blocked attention (cpu_attn_tile, AVX2 only; else NULL): per thread, its queries
	   and scratch; tile0[B + 1], the first token of each tile */
	struct cpu_attn_query *attn_q;
	float *attn_scratch;
	uint32_t *tile0;
	uint32_t *tok_seq, *tok_pos; /* [B] */
	uint64_t weight_bytes, bytes_needed, bytes_used;
	uint64_t kv_bytes;         /* keys and values, in bytes_used */
	uint64_t pack_extra_bytes; /* repacked weights past their file bytes (cpu_pack.c) */
	/* weights packed for the products (cpu_pack.c), sorted by tensor */
	struct cpu_pack *packs;
	uint32_t n_packs;
	void *pack_region; /* one anonymous mapping of pack_bytes holds them all */
	uint64_t pack_bytes;
};

/*
 * cpu_layer_paged - layer @il's K/V is in a block pool: paged, and full attention or
 * a sliding window with a pool of its own (kv_swa_blocks).
 */
static inline bool
cpu_layer_paged(const struct be_model *b, uint32_t il)
{
	return b->cfg.kv_blocks > 0 &&
	       (b->cfg.kv_swa_blocks > 0 || !model_layer_swa(&b->m->hp, il));
}

/* cpu_layer_table - the block table of @q that paged layer @il reads. */
static inline const uint32_t *
cpu_layer_table(const struct be_model *b, uint32_t il, const struct be_seq *q)
{
	return model_layer_swa(&b->m->hp, il) ? q->swa_blocks : q->blocks;
}

/*
 * cpu_attn_tile_tokens - tokens per tile of blocked attention: consecutive
 * tokens of one sequence, at most 64 queries (tokens × the query heads of
 * a KV head) and their scores over @n_ctx positions at most 4 MiB, at
 * least one token.
 */
static inline uint32_t
cpu_attn_tile_tokens(const struct model_hparams *hp, uint32_t n_ctx)
{
	uint32_t group = hp->n_head / hp->n_head_kv, q = (1u << 20) / (n_ctx ? n_ctx : 1);

	q = q < 64 ? q : 64;
	return group < q ? q / group : 1;
}

/* cpu_forward - the backend's forward op (cpu_forward.c). */
orch_err cpu_forward(struct be_model *b, const struct be_seq *seqs, uint32_t n,
                     const float **ret_logits, struct orch_errinfo *reterr);

/* A load's progress: @done of @total weight bytes are in place, reported each percent. */
struct cpu_load {
	uint64_t done, total, next_report;
	be_progress_fn progress; /* may be NULL */
	void *ctx;
};

/* cpu_load_advance - @bytes more of @l's weights are in place. */
void cpu_load_advance(struct cpu_load *l, uint64_t bytes);

/*
 * cpu_pack_model - pack @b's packable weights (cpu_pack.c) into one anonymous
 * mapping, eight rows at a time on the pool, giving the file's pages back
 * every few MiB packed (so the load's peak memory is the packed model plus
 * one chunk), and advance @l by each tensor's bytes; what the packed copy
 * takes beyond the file's bytes (unpacked scales, alignment) joins @b's
 * memory needed and used. cpu_pack_free undoes it.
 */
orch_err cpu_pack_model(struct be_model *b, struct cpu_load *l, struct orch_errinfo *reterr);
void cpu_pack_free(struct be_model *b);
