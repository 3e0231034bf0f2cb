#pragma once
/*
 * engine.h - a model ready to generate: the one chain
 *
 *   GGUF file -> model (engine/model) -> tokenizer and chat template
 *   (text/model_text) -> backend for the device (engine/backend) ->
 *   scheduler (engine/scheduler)
 *
 * and the one rule for the default context. `orch-worker serve` and `run`,
 * the engine and GPU model tests and the benchmarks open a model through
 * here and nowhere else.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/backend.h"
#include "engine/model/model.h"
#include "engine/scheduler.h"
#include "text/model_text.h"

struct gguf_file;
struct grammars;
struct sched;

#define ENGINE_DEFAULT_CTX \
	4096 /* the default context stops here (llama.cpp's server: the trained one) */
#define ENGINE_DEFAULT_CHUNK 512 /* prefill tokens of one sequence in one step */
/*
 * The share of the paged pool a worker keeps free when it admits a job beside
 * running ones (vLLM's watermark): kv_bench's mixed lengths at 0, 0.02, 0.05 and
 * 0.1 recomputed 3,418, 2,151, 80 and 0 prompt tokens after 27, 18, 16 and 8
 * preemptions, and ran 8.86, 8.59, 9.07 and 8.42 sequences on average
 * (bench/RESULTS.md).
 */
#define ENGINE_DEFAULT_KV_WATERMARK 0.05

struct engine_config {
	const char *model_path;     /* the GGUF file */
	const char *device;         /* "cpu", "cuda:N"; NULL: "cpu" */
	const struct be_ops *ops;   /* NULL: be_for_device(device); tests and benchmarks name one */
	enum text_source tokenizer; /* TEXT_GGUF (0) or TEXT_HF_JSON */
	uint32_t slots;             /* sequences at once; 0: 1 */
	uint32_t n_ctx;             /* positions per sequence; 0: engine_default_ctx() */
	uint32_t chunk; /* prefill tokens per sequence per step; 0: ENGINE_DEFAULT_CHUNK */
	enum sched_policy policy; /* how a step is filled (scheduler.h); 0: decodes first */
	uint32_t threads;         /* CPU threads; 0: one per core */
	bool kv_f32;              /* KV cache in F32 (default F16) */
	bool no_graphs;           /* cuda: no CUDA graphs */
	/* paged KV (a backend with be_ops.paged): tokens per block; 0: KVB_DEFAULT_BLOCK_TOKENS */
	uint32_t kv_block_tokens;
	/* the pool: a budget in bytes, or this share (0, 1] of the device's total
	 * memory less the weights and working memory; both 0: slots × ceil(n_ctx /
	 * block) blocks. It must hold one sequence of n_ctx (else ORCH_EINVAL, saying
	 * what fits); a budget past MODEL_MAX_KV_POOL_TOKENS positions is cut there. */
	uint64_t kv_cache_bytes;
	double kv_cache_fraction;
	bool kv_prefix_cache; /* paged: reuse cached prompt prefixes */
	double kv_watermark;  /* paged: sched_config.kv_watermark (the worker:
	                         ENGINE_DEFAULT_KV_WATERMARK) */
	bool kv_slots;        /* one slot of n_ctx per sequence even on a paged backend (callers of
	                         forward that pass no block tables: benchmarks, tests) */
	be_progress_fn progress; /* load progress; may be NULL */
	void *progress_ctx;
};

struct engine {
	struct gguf_file *f;  /* mapped for as long as the engine lives */
	struct model m;       /* hyper-parameters and tensors (views into @f) */
	struct model_text mt; /* tokenizer and chat template */
	const struct be_ops *ops;
	struct be_model *b;        /* weights, KV cache, scratch on the device */
	struct sched *s;           /* continuous batching over @b */
	struct grammars *grammars; /* constrained decoding's (grammars.h), over @mt's vocabulary */
	uint32_t slots, n_ctx, chunk;
	uint32_t kv_blocks, kv_block_tokens; /* the paged KV pool; zeros: slots */
	uint32_t kv_swa_blocks;              /* paged: the sliding-window layers' pool (0: none) */
	bool kv_prefix_cache;                /* prompt prefixes are reused */
	bool kv_pool_capped;                 /* the budget was larger than a pool addresses: cut */
};

/*
 * engine_default_ctx - the context a model gets when none is asked for:
 * its trained context, at most ENGINE_DEFAULT_CTX.
 */
uint32_t engine_default_ctx(const struct model *m);

/*
 * engine_open - open @cfg->model_path and make it ready to generate on
 * @cfg->device: *@ret owns everything. Errors are the first failing step's:
 * gguf_open's, model_load's, model_text_load's, be_for_device's, the
 * backend's load (ORCH_EINSUFFICIENT_VRAM, ORCH_ENOMEM...); on failure
 * nothing is left open. Blocks for the whole load.
 * Thread: any; the engine is then used by one thread at a time.
 */
orch_err engine_open(const struct engine_config *cfg, struct engine **ret,
                     struct orch_errinfo *reterr);

/* engine_close - free all of @e, in the reverse order; NULL is fine. */
void engine_close(struct engine *e);
