#pragma once
/*
 * model_info.h - what a GGUF model is and what it needs: architecture,
 * hyper-parameters, parameter count, bytes per tensor type, tokenizer facts,
 * and the memory estimate a worker (and orchd's placement) uses.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "ggml_type.h"

struct gguf_file;

struct model_type_stat {
	uint32_t tensors;
	uint64_t bytes;
};

struct model_special {
	const char *what; /* "bos", "eos", ... */
	uint32_t id;
};

struct model_info {
	char arch[32];         /* general.architecture; "" when absent */
	char name[64];         /* general.name; "" when absent */
	uint64_t n_params;     /* sum of tensor elements */
	uint64_t weight_bytes; /* sum of tensor data sizes */
	struct model_type_stat types[GGML_TYPE_ID_LIMIT];
	bool has_hparams; /* all of the shape keys below were found */
	uint32_t n_layer, n_embd, n_head, n_head_kv, n_ff, head_dim, n_ctx_train;
	/* sliding-window attention (gpt-oss only, as the worker reads it; 0: none):
	 * attention.sliding_window, attention.sliding_window_pattern (default 2) and the
	 * layers il with il % pattern < pattern - 1 that slide */
	uint32_t n_swa, swa_pattern, n_layer_swa;
	char tok_model[32]; /* tokenizer.ggml.model; "" when absent */
	char tok_pre[32];   /* tokenizer.ggml.pre */
	uint32_t n_vocab;   /* tokenizer.ggml.tokens length */
	struct model_special special[8];
	uint32_t n_special;
	uint64_t chat_template_bytes; /* 0: no tokenizer.chat_template */
	const char *missing;          /* the first shape key not found, when !has_hparams */
};

/*
 * model_info_get - fill @mi from @f. Never fails on missing keys (they are
 * reported in the struct); ORCH_ETYPE with a message naming the key when
 * one has the wrong type.
 */
orch_err model_info_get(const struct gguf_file *f, struct model_info *mi,
                        struct orch_errinfo *reterr);

/*
 * MODEL_DEFAULT_CHUNK_TOKENS - the prompt tokens of one sequence a worker feeds in one step
 * by default (orch-worker's --chunk, ENGINE_DEFAULT_CHUNK); a step carries at most
 * chunk + slots tokens, the backend's max_batch_tokens.
 */
#define MODEL_DEFAULT_CHUNK_TOKENS 512

/*
 * MODEL_PROMPT_LOGIT_ROWS - logit rows a step may return beyond one per slot: a prompt's
 * log-probabilities (echo with logprobs) take this many positions a step on a backend
 * that returns every row (be_ops.all_logits; one a step elsewhere).
 */
#define MODEL_PROMPT_LOGIT_ROWS 16

/*
 * model_swa_cells - KV cells one sequence of a sliding-window layer needs: with a window of
 * @n_swa positions and at most @max_batch_tokens tokens fed per forward call, a ring of
 * n_swa + max_batch_tokens cells (position p in cell p % cells) holds every key a query
 * of the call still sees; @n_ctx when that is not smaller or @n_swa is 0.
 */
uint32_t model_swa_cells(uint32_t n_ctx, uint32_t n_swa, uint32_t max_batch_tokens);

/*
 * model_swa_blocks - blocks of @block_tokens one sequence holds at most in a paged
 * sliding-window layer (issue 19), whose blocks the window has left are given back before
 * each step: a step of at most @max_batch_tokens tokens from position p reads and writes
 * positions p + 1 - n_swa .. p + max_batch_tokens - 1, which span at most
 * ceil((n_swa + max_batch_tokens - 2) / block_tokens) + 1 blocks; at most
 * ceil(n_ctx / block_tokens). The window pool is slots times this, so it never runs out.
 */
uint32_t model_swa_blocks(uint32_t n_ctx, uint32_t n_swa, uint32_t max_batch_tokens,
                          uint32_t block_tokens);

/*
 * MODEL_DEFAULT_KV_BLOCK_TOKENS - positions in one block of the paged KV pool (issue 19) when a
 * worker is not told otherwise; must equal KVB_DEFAULT_BLOCK_TOKENS (worker/engine/kv_blocks.h).
 * MODEL_MAX_KV_BLOCK_TOKENS - the largest block the estimate accepts.
 * MODEL_MAX_KV_POOL_TOKENS - a budget's pool holds at most this many positions (blocks ×
 * block tokens); a larger budget is cut to it, here and in the worker (engine.c).
 */
#define MODEL_DEFAULT_KV_BLOCK_TOKENS 16
#define MODEL_MAX_KV_BLOCK_TOKENS     256
#define MODEL_MAX_KV_POOL_TOKENS      (1u << 30)

/*
 * The paged KV pool a worker is configured with (issue 19): a budget of pool_bytes
 * (kv_cache_mib × 2^20), or when 0 the default of slots × ceil(n_ctx / block_tokens) blocks.
 */
struct mem_kv {
	uint64_t pool_bytes;   /* 0: the default pool */
	uint32_t block_tokens; /* tokens per block; 0: MODEL_DEFAULT_KV_BLOCK_TOKENS */
};

/*
 * Memory a worker needs for @n_ctx tokens in each of @slots sequences:
 *   weights  = tensor data as stored (quantized stays quantized)
 *   kv       = kv_full + kv_swa, where per layer 2 (K, V) × cells × slots × n_head_kv ×
 *              head_dim × kv element bytes, and cells = n_ctx for a full-attention layer,
 *              model_swa_cells(n_ctx, n_swa, MODEL_DEFAULT_CHUNK_TOKENS + slots) for a
 *              sliding-window one
 *   overhead = runtime (256 MiB: CUDA context, cuBLAS workspace, graphs)
 *            + logits (n_vocab × 4 B × (slots + MODEL_PROMPT_LOGIT_ROWS))
 *            + activations of a 512-token batch (MODEL_DEFAULT_CHUNK_TOKENS ×
 *              (4·n_embd + 2·max(n_ff, q+k+v width)) × 4 B)
 * With a paged pool (model_mem_estimate_kv) the full-attention layers hold instead
 * kv_blocks blocks of kv_block_tokens positions shared by all slots:
 * kv_full = kv_pool_tokens × kv_token_bytes; and the sliding-window layers a pool of
 * slots × model_swa_blocks(n_ctx, n_swa, MODEL_DEFAULT_CHUNK_TOKENS + slots, block tokens)
 * blocks (swa_cells = model_swa_blocks × block tokens).
 */
struct mem_estimate {
	uint64_t weights, kv, overhead, total;
	uint64_t kv_full, kv_swa; /* kv's full-attention and sliding-window layers */
	uint32_t n_ctx, slots, kv_elem_bytes;
	uint32_t swa_cells;       /* cells per sequence of a sliding layer (n_layer_swa > 0) */
	uint64_t kv_token_bytes;  /* K and V of one position over the full-attention layers */
	uint32_t kv_blocks;       /* blocks in the pool; 0: not paged, or no full-attention layer */
	uint32_t kv_block_tokens; /* positions per block; 0: not paged (model_mem_estimate) */
	uint64_t kv_pool_tokens;  /* kv_blocks × kv_block_tokens */
	bool kv_pool_capped;      /* a budget larger than MODEL_MAX_KV_POOL_TOKENS positions */
};

#define MODEL_RUNTIME_OVERHEAD_BYTES (256ull << 20)

/* A worker's context when none is configured: the trained one, at most this (engine.h) */
#define MODEL_DEFAULT_CTX 4096

/* model_default_ctx - the context a worker gives @mi when none is configured. */
uint32_t model_default_ctx(const struct model_info *mi);

/*
 * model_mem_estimate - the estimate with every slot holding @n_ctx cells of each
 * full-attention layer (no pool: kv_blocks, kv_block_tokens and kv_pool_tokens 0).
 * ORCH_ENOTFOUND when @mi lacks hyper-parameters, ORCH_ERANGE on overflow; *@ret is
 * written only on success.
 */
orch_err model_mem_estimate(const struct model_info *mi, uint32_t n_ctx, uint32_t slots,
                            uint32_t kv_elem_bytes, struct mem_estimate *ret);

/*
 * model_kv_block_bytes - K and V of one block of @block_tokens positions over all
 * full-attention layers: 2 × (n_layer − n_layer_swa) × n_head_kv × head_dim ×
 * @kv_elem_bytes × @block_tokens; 0 when @mi lacks hyper-parameters or there are no
 * full-attention layers or on overflow.
 */
uint64_t model_kv_block_bytes(const struct model_info *mi, uint32_t block_tokens,
                              uint32_t kv_elem_bytes);

/*
 * model_mem_estimate_kv - as model_mem_estimate, with the full-attention layers' KV in a
 * pool of blocks (@kv; NULL: all defaults): kv_full = kv_blocks × model_kv_block_bytes,
 * where kv_blocks = floor(pool_bytes / block bytes) when pool_bytes > 0, else
 * slots × ceil(n_ctx / block_tokens). Sliding-window layers have a pool of their own,
 * sized for their windows (model_swa_blocks), outside the budget. A model with no full-attention
 * layer (all sliding) has blocks of 0 bytes: kv_blocks 0, kv_full 0; so does a budget below one
 * block. A budget's pool is cut at MODEL_MAX_KV_POOL_TOKENS positions (kv_pool_capped says so).
 * ORCH_ENOTFOUND without hyper-parameters; ORCH_ERANGE on overflow, for block_tokens over
 * MODEL_MAX_KV_BLOCK_TOKENS, or when the default pool's positions do not fit in 32 bits (the
 * worker's cell index); *@ret is written only on success.
 */
orch_err model_mem_estimate_kv(const struct model_info *mi, uint32_t n_ctx, uint32_t slots,
                               uint32_t kv_elem_bytes, const struct mem_kv *kv,
                               struct mem_estimate *ret);

/*
 * model_kv_fraction_pool - the bytes of a kv_cache_fraction pool: @fraction of
 * @mem_total (the device's memory) less what the rest of the estimate (weights,
 * sliding-window rings, overhead) takes, into *@ret. The worker sizes its pool
 * so and orchd counts it so. ORCH_ERANGE when the rest alone does not fit in
 * @mem_total; model_mem_estimate_kv's errors.
 */
orch_err model_kv_fraction_pool(const struct model_info *mi, uint32_t n_ctx, uint32_t slots,
                                uint32_t kv_elem_bytes, uint32_t block_tokens, double fraction,
                                uint64_t mem_total, uint64_t *ret);
