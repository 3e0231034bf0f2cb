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
 * model_swa_cells - KV cells one sequence of a sliding-window layer needs: with a window of
 * @n_swa positions and at most @max_batch_tokens tokens fed per forward call, a ring of
 * n_swa + max_batch_tokens cells (position p in cell p % cells) holds every key a query
 * of the call still sees; @n_ctx when that is not smaller or @n_swa is 0.
 */
uint32_t model_swa_cells(uint32_t n_ctx, uint32_t n_swa, uint32_t max_batch_tokens);

/*
 * Memory a worker needs for @n_ctx tokens in each of @slots sequences:
 *   weights  = tensor data as stored (quantized stays quantized)
 *   kv       = kv_full + kv_swa, where per layer 2 (K, V) × cells × slots × n_head_kv ×
 *              head_dim × kv element bytes, and cells = n_ctx for a full-attention layer,
 *              model_swa_cells(n_ctx, n_swa, MODEL_DEFAULT_CHUNK_TOKENS + slots) for a
 *              sliding-window one
 *   overhead = runtime (256 MiB: CUDA context, cuBLAS workspace, graphs)
 *            + logits (n_vocab × 4 B × slots)
 *            + activations of a 512-token batch (MODEL_DEFAULT_CHUNK_TOKENS ×
 *              (4·n_embd + 2·max(n_ff, q+k+v width)) × 4 B)
 */
struct mem_estimate {
	uint64_t weights, kv, overhead, total;
	uint64_t kv_full, kv_swa; /* kv's full-attention and sliding-window layers */
	uint32_t n_ctx, slots, kv_elem_bytes;
	uint32_t swa_cells; /* cells per sequence of a sliding layer (n_layer_swa > 0) */
};

#define MODEL_RUNTIME_OVERHEAD_BYTES (256ull << 20)

/* model_mem_estimate - ORCH_ENOTFOUND when @mi lacks hyper-parameters, ORCH_ERANGE on overflow. */
orch_err model_mem_estimate(const struct model_info *mi, uint32_t n_ctx, uint32_t slots,
                            uint32_t kv_elem_bytes, struct mem_estimate *ret);
