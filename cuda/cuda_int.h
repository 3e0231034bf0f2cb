#pragma once
/*
 * cuda_int.h - the CUDA backend's model state, shared by its files
 * (cuda_backend.c, cuda_base.c, cuda_load.c, cuda_matmul.c, cuda_forward.c,
 * cuda_moe.c, cuda_sample.c, cuda_paged.c, cuda_check.c). Not for use outside
 * cuda/. They call downward only: cuda_backend.c (the ops) over
 * cuda_sample.c over cuda_forward.c over the rest, and cuda_base.c under all.
 */
#include <stdbool.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "engine/backend.h"
#include "engine/model/model.h"
#include "kernels.h"

/* Decode graph buckets: batch sizes 1, 2, 4, ... up to the first ≥ slots. */
#define CU_MAX_BUCKETS 10
/* Rows of a weight matrix dequantized to F16 at a time for a prefill GEMM. */
#define CU_GEMM_TILE_ROWS 4096u
/* A sequence with more new tokens than this goes through the GEMM path. */
#define CU_MMV_MAX_TOKENS CUK_MMV_MAX_B
/*
 * Tokens one attention launch takes at most (more go in several launches, each
 * token's attention being its own): the split-softmax scratch (be_model.part)
 * holds that many tokens' parts, not the longest batch's × the context.
 */
#define CU_ATTN_TOKENS 64u
/* cuBLAS workspace, and what graphs and the runtime may take beyond the arena. */
#define CU_BLAS_WS_BYTES       (32ull << 20)
#define CU_GRAPH_RESERVE_BYTES (64ull << 20)
/* Every arena allocation is aligned to this. */
#define CU_ALIGN 256u

struct cu_layer {
	const float *attn_norm, *ffn_norm;
	struct cuk_mat wq, wk, wv, wqkv, wo, w_gate, w_up, w_gate_up, w_down;
	const float *bq, *bk, *bv, *bo; /* [width] or NULL */
	const float *q_norm, *k_norm;   /* [head_dim] or NULL: each head's RMSNorm (qwen3) */
	/* [n_embd] or NULL: RMSNorms of the attention's and the FFN's outputs (gemma3) */
	const float *attn_post_norm, *ffn_post_norm;
	/* RoPE: base^(-2/n_rot) of the layer's base (gemma3's local layers have their own);
	 * rope_lin: its positions scaled linearly (b->rope_lin; gemma3's global layers) */
	float theta_scale;
	bool rope_lin;
	bool fused_qkv, fused_gate_up;
	/* gpt-oss */
	const float *sinks;    /* [n_head] or NULL */
	struct cuk_mat router; /* [n_expert] rows of n_embd, F32 */
	const float *router_b; /* [n_expert] */
	/* the experts stacked by rows: expert e's from row e·n_ff_exp (down: e·n_embd) */
	struct cuk_mat gate_exps, up_exps, down_exps;
	const float *gate_exps_b, *up_exps_b, *down_exps_b; /* [n_expert][rows of one expert] */
	/* its KV cache: cells positions a slot (a ring when fewer than n_ctx), from cell
	 * kv_cell0 of the slot's allocation (kv_dim elements a cell); paged, (blocks + 1) ·
	 * bt rows of the pool from row kv_cell0; window: the positions a query sees (0: all) */
	uint64_t kv_cell0;
	uint32_t kv_cells, window;
	bool swa; /* paged: its rows are in the sliding-window pool (read through swa tables) */
};

/* A step's per-token inputs, as uploaded (pinned host copy and device copy share the layout). */
struct cu_step {
	int32_t *tok;   /* [B] token ids */
	uint32_t *pos;  /* [B] positions */
	uint32_t *slot; /* [B] KV slots */
	/* [B] paged: the entry of the block tables (d_tab) where the token's full-attention
	 * and sliding-window tables start */
	uint32_t *tbl, *swa_tbl;
	uint32_t *rows; /* [slots_pad] token row whose logits each output takes */
};

/* One contiguous group of a step's tokens computed by one kind of matmul. */
struct cu_run {
	uint32_t tok0, n; /* tokens [tok0, tok0 + n) */
	bool gemm;        /* one sequence with more than CU_MMV_MAX_TOKENS tokens */
};

struct be_model {
	const struct model *m;
	struct be_config cfg;
	int dev;
	struct be_info info;
	cudaStream_t st;
	cudaEvent_t uploaded; /* after the last upload of h_step: h_step is free again */
	cublasHandle_t blas;
	bool dead; /* a sticky error: the context is unusable */

	/* the arena: one cudaMalloc of the exact footprint */
	uint8_t *arena;
	uint64_t arena_bytes, arena_used;

	/* weights */
	struct cuk_mat tok_embd, output;
	const float *output_norm, *rope_freqs;
	struct cu_layer *layers; /* host array [n_layer] of device pointers */
	uint64_t weight_bytes;

	/* shapes */
	uint32_t q_dim, kv_dim, qkv_dim, max_ne0, n_split, slots_pad;
	struct cuk_yarn yarn, rope_lin; /* rope_lin: linear scaling as YaRN without its ramp */
	bool has_yarn;

	/* KV cache: one allocation per slot, made by reserve (slot `slots`: padding) */
	void **k_slot, **v_slot;     /* host [slots + 1] */
	void **d_k_base, **d_v_base; /* device [slots + 1] */
	uint64_t kv_slot_bytes;      /* K (or V) bytes of one slot */

	/*
	 * Paged KV (cfg.kv_blocks > 0; cuda_paged.c): one K and one V pool for all
	 * layers, allocated at load; layer l's (blocks + 1) · bt rows from row
	 * kv_cell0, the last block of each pool being the padding sequence's. The
	 * block tables (d_tab, host staging h_tab and mirror mir_tab, tab_cap
	 * entries): entries [0, nb_max) the padding sequence's full-attention table,
	 * [nb_max, 2 nb_max) its window table, then the step's tables up to tab_n.
	 */
	bool paged;
	void *k_pool, *v_pool;
	uint64_t kv_pool_bytes; /* K (or V) bytes of the pool */
	uint32_t nb_max;        /* table entries of a sequence of n_ctx: ceil(n_ctx / bt) */
	uint32_t *d_tab, *h_tab, *mir_tab;
	uint32_t tab_cap, tab_n, mir_tab_n;

	/* activations for B = max_batch_tokens tokens */
	float *x, *xn, *tmp, *qkv, *att, *gu, *last, *logits;
	float *part;               /* the attention's parts for attn_tokens tokens */
	float *gelu;               /* [65536] model_gelu_table (ffn_gelu: gemma3), else NULL */
	uint32_t attn_tokens;      /* max(slots_pad, CU_ATTN_TOKENS), at most the batch */
	uint16_t *gemm_w, *gemm_x; /* F16 weight tile, F16 activations */
	void *blas_ws;
	/* mixture of experts (K = n_expert_used): router logits [B][n_expert], the chosen
	 * experts and weights [B][K], expert outputs [B·K][n_embd] (gate and up go to gu) */
	float *moe_lg, *moe_w, *moe_out;
	int32_t *moe_sel;
	/*
	 * Activations quantized for integer dots (cuk_quant_act), when the model
	 * has weights that take them: Q8 rows (MXFP4, Q4_0 ... Q8_0) in xq, Q8K
	 * rows (K-quants) in xqk. xq_act[fmt] is the cu_act whose first
	 * xq_rows[fmt] rows of xq_ne0[fmt] elements they hold (0: none).
	 * int_dots: cuk_mmvq for the types it takes (ORCH_CUDA_INT_DOTS=0: cuk_mmv).
	 */
	void *xq, *xqk;
	uint64_t xq_bytes, xqk_bytes;
	uint64_t act_seq, xq_act[3];
	uint32_t xq_rows[3], xq_ne0[3];
	bool int_dots;

	/* step inputs: device, pinned host staging, and what the device holds now */
	struct cu_step d, h, mir;
	uint8_t *d_step, *h_step, *mir_step;
	uint64_t step_bytes;
	uint32_t mir_T; /* tokens the mirror describes; 0: unknown */

	/* sampling */
	struct cuk_samp *d_samp, *h_samp, *mir_samp;
	uint32_t mir_samp_n;
	int32_t *d_hist;    /* [slots + 1][hist_cap] */
	uint32_t *hist_dev; /* host [slots + 1]: tokens of the slot's history on the device */
	uint32_t hist_cap;
	float *d_keys, *d_probs;
	int32_t *d_vals, *d_ids, *h_ids;
	uint32_t *d_seg;
	void *sort_tmp;
	size_t sort_tmp_bytes;
	float *h_logits; /* pinned [slots_pad][n_vocab] */
	/* the step's logit_bias entries (every row's, one after the other; device, pinned
	 * staging, mirror of what the device holds) and the rows' masks (device, pinned) */
	struct cuk_bias *d_bias, *h_bias, *mir_bias;
	uint32_t n_bias, mir_n_bias; /* entries staged, held by the device */
	uint32_t *d_mask, *h_mask;   /* [slots_pad][mask_words] */
	uint32_t mask_words;

	/* decode graphs */
	uint32_t n_buckets, bucket[CU_MAX_BUCKETS];
	cudaGraphExec_t graph[CU_MAX_BUCKETS];

	/* the step being built */
	struct cu_run *runs;
	uint32_t n_runs;

	uint64_t bytes_needed, bytes_used;
	uint64_t steps, graph_steps;
	bool trace; /* ORCH_CUDA_TRACE set: each step's sequences on stderr */
};

/*
 * An activation matrix a step's products read: @x, @ld floats a row. Its id
 * tells cu_matmul whether b->xq / b->xqk hold it quantized already, so that
 * the products of one input (Q, K and V; gate and up) quantize it once.
 * Make a new one (cu_act_new) after each kernel that writes the input.
 */
struct cu_act {
	const float *x;
	uint64_t ld;
	uint64_t id;
};

static inline struct cu_act
cu_act_new(struct be_model *b, const float *x, uint64_t ld)
{
	return (struct cu_act){x, ld, ++b->act_seq};
}

/* ---- cuda_base.c ---- */

/* cu_fail - turn CUDA error @ce from @what into ORCH_ECUDA (ORCH_EVRAM for an allocation). */
orch_err cu_fail(struct be_model *b, cudaError_t ce, const char *what, struct orch_errinfo *reterr);

/* cu_arena_take - @bytes of the arena (aligned); NULL when the footprint was miscounted. */
void *cu_arena_take(struct be_model *b, uint64_t bytes);

/* ---- cuda_load.c ---- */

/* cu_upload - every weight tensor of b->m into the arena, through pinned double buffers. */
orch_err cu_upload(struct be_model *b, be_progress_fn progress, void *ctx,
                   struct orch_errinfo *reterr);

/* cu_weight_bytes - the arena bytes all weight tensors take (aligned). */
uint64_t cu_weight_bytes(const struct model *m);

/* ---- cuda_matmul.c ---- */

/*
 * cu_matmul - y[t][r] = W[row0 + r] · x[t] (+ bias) for r < @rows and every
 * token of the step (b->runs): mat-vec kernels for runs of small sequences,
 * dequantized F16 tiles and cuBLAS for a long one.
 */
cudaError_t cu_matmul(struct be_model *b, const struct cuk_mat *w, uint32_t row0, uint32_t rows,
                      const struct cu_act *x, float *y, uint64_t y_ld, const float *bias);

/* cu_matmul_rows - the same over @n rows of x all taken as one run of mat-vecs. */
cudaError_t cu_matmul_rows(struct be_model *b, const struct cuk_mat *w, const struct cu_act *x,
                           uint32_t n, float *y, uint64_t y_ld);

/* ---- cuda_moe.c ---- */

/*
 * cu_moe_block - a mixture-of-experts FFN over the step's @T tokens: the
 * residual add and norm, router, top-k, the chosen experts' products and
 * their weighted sum into b->tmp (the next norm adds it to x).
 */
cudaError_t cu_moe_block(struct be_model *b, uint32_t l, uint32_t T);

/*
 * cu_moe_act - the activation format the experts of @w take: Q8 for MXFP4, the
 * type's own where integer dots are on and cuk_mmvq_ok, else CUK_ACT_FLOAT.
 */
enum cuk_act cu_moe_act(const struct be_model *b, const struct cuk_mat *w);

/* ---- cuda_forward.c ---- */

/* cu_forward - the backend's forward op: logits come back to the host. */
orch_err cu_forward(struct be_model *b, const struct be_seq *seqs, uint32_t n,
                    const float **ret_logits, struct orch_errinfo *reterr);

/*
 * cu_step - check the batch, upload its inputs (unless the device holds them
 * already) and compute the logits of the @ret_n_out sequences that want
 * them into b->logits, replaying a decode graph where one fits.
 */
orch_err cu_step(struct be_model *b, const struct be_seq *seqs, uint32_t n, uint32_t *ret_n_out,
                 struct orch_errinfo *reterr);

/* cu_graphs_build - warm up and capture one decode graph per bucket (load). */
orch_err cu_graphs_build(struct be_model *b, struct orch_errinfo *reterr);

/* ---- cuda_sample.c ---- */

orch_err cu_forward_sample(struct be_model *b, const struct be_seq *seqs, uint32_t n,
                           const struct be_sample *samp, int32_t *ret_ids,
                           struct orch_errinfo *reterr);

/* ---- cuda_paged.c ---- */

/* cu_tab_entries - the table entries paged mode needs: padding tables and every slot's two. */
uint64_t cu_tab_entries(const struct be_config *cfg);

/*
 * cu_stage_tables - paged: sequence @s's block tables into h_tab (from
 * tab_n on) and its tokens' table starts into b->h.tbl and b->h.swa_tbl
 * from token @t0. The caller checked the batch (be_check_batch).
 */
void cu_stage_tables(struct be_model *b, const struct be_seq *s, uint32_t t0);

/* cu_tables_init - the padding sequence's tables staged and uploaded (load). */
cudaError_t cu_tables_init(struct be_model *b);

/* cu_upload_tables - the staged tables to the device unless it holds them. */
cudaError_t cu_upload_tables(struct be_model *b, bool *ret_uploaded);

/* cu_copy_blocks - the backend's copy_blocks (backend.h). */
orch_err cu_copy_blocks(struct be_model *b, bool swa, uint32_t src, uint32_t dst, uint32_t n_tokens,
                        struct orch_errinfo *reterr);

/* ---- cuda_check.c ---- */

orch_err cu_check(struct be_model *b, struct orch_errinfo *reterr);
orch_err cu_reserve(struct be_model *b, uint32_t slot, struct orch_errinfo *reterr);
