#pragma once
/*
 * backend.h - the one interface both compute backends implement (CPU now,
 * CUDA later, loaded as its own shared object for cuda:N). Nothing above it
 * knows which backend runs.
 *
 * A backend holds the weights of a struct model, a KV cache allocated once
 * at load, and scratch for one forward step of up to max_batch_tokens
 * tokens. The KV cache of a full-attention layer is either slots × n_ctx
 * positions (one slot per sequence), or, on a backend with be_ops.paged
 * given kv_blocks > 0, a pool of kv_blocks × kv_block_tokens rows that
 * sequences address through block tables (kv_blocks.h, issue 19): position
 * p of a sequence is row blocks[p / kv_block_tokens] × kv_block_tokens +
 * p % kv_block_tokens. The scheduler owns the tables; the backend only reads
 * them and copies rows when told (copy_blocks). A sliding-window layer
 * (model_layer_swa) keeps, per slot, a ring of model_swa_cells(n_ctx,
 * n_swa, max_batch_tokens) cells (gguf/model_info.h): position p in cell
 * p % cells, enough for every query of a step to see its whole window; or,
 * paged with kv_swa_blocks > 0, a second pool of kv_swa_blocks blocks that
 * sequences address through their own window tables, which the scheduler
 * empties of the blocks every query has left behind.
 * A forward step takes a batch of sequences, each with its KV slot, the
 * position of its first new token and its new tokens (many for prefill,
 * one for decode); it appends their K/V to the slot and returns the logits
 * of the last token of each sequence that asked for them (or, on a backend
 * with be_ops.all_logits, of every token of a sequence that asked for all:
 * a prompt's log-probabilities).
 *
 * Results do not depend on batch composition: a sequence computed alone or
 * next to others gives bit-identical logits.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "sampler.h"

struct model;
struct be_model;

struct be_config {
	uint32_t slots;            /* sequences the KV cache holds */
	uint32_t n_ctx;            /* positions per sequence */
	bool kv_f32;               /* KV cache in F32 (default F16) */
	uint32_t threads;          /* CPU threads; 0: one per core */
	uint32_t max_batch_tokens; /* tokens one forward step may carry */
	uint32_t logit_rows;       /* logit rows one step may return (be_ops.all_logits; at most
	                              slots when smaller) */
	const char *device;        /* "cpu", "cuda:N" (NULL: "cpu") */
	const char *model_path;    /* for messages (may be NULL) */
	bool no_graphs;            /* cuda: run every step eagerly, no CUDA graphs */
	/* paged KV (be_ops.paged only; 0: one slot of n_ctx per sequence) */
	uint32_t kv_blocks;       /* blocks in the pool of each full-attention layer */
	uint32_t kv_block_tokens; /* positions per block (with kv_blocks > 0) */
	uint32_t kv_swa_blocks;   /* with kv_blocks > 0: blocks in the pool of each sliding-window
	                             layer (0: a ring per slot) */
};

struct be_seq {
	/* KV slot, < slots: the sequence's id. Paged, the layers use @blocks and
	 * @swa_blocks instead (sliding-window layers keep a ring per slot when
	 * kv_swa_blocks is 0). */
	uint32_t slot;
	/* position of tokens[0]: the sequence's positions < pos are kept (a
	 * sliding-window layer's only those its window still sees: a sequence
	 * continues where its last step ended, or starts again at 0) */
	uint32_t pos;
	const int32_t *tokens; /* [n_tokens] */
	uint32_t n_tokens;
	bool want_logits; /* logits of tokens[n_tokens - 1] */
	bool all_logits;  /* with want_logits, on a be_ops.all_logits backend: the logits of every
	                     token, n_tokens rows in order (all the step's rows: logit_rows) */
	/* paged (be_config.kv_blocks > 0): the block table, entry i holding positions
	 * i·kv_block_tokens..; at least ceil((pos + n_tokens) / kv_block_tokens) entries,
	 * each on a block < kv_blocks; first_block is 0 (full-attention layers read from
	 * position 0) */
	const uint32_t *blocks;
	uint32_t n_blocks;
	uint32_t first_block;
	/* paged sliding-window layers (be_config.kv_swa_blocks > 0): their table, as
	 * blocks, on blocks < kv_swa_blocks; entries before swa_first_block were dropped,
	 * which may hold no position the step reads (from pos + 1 - n_swa on) */
	const uint32_t *swa_blocks;
	uint32_t n_swa_blocks;
	uint32_t swa_first_block;
};

/* The most logit_bias entries (samp_params.bias) forward_sample takes for one sequence:
 * what a job may have (the API's and protocol's limit). */
#define BE_SAMPLE_MAX_BIAS ORCH_MAX_LOGIT_BIAS

/* One sequence's sampling, for forward_sample. */
struct be_sample {
	const struct samp_params *sp; /* at most BE_SAMPLE_MAX_BIAS bias entries */
	const int32_t *hist;          /* the job's prompt and generated tokens so far */
	uint32_t n_hist;
	uint64_t index; /* index of the token being generated: the Philox counter */
	/* the tokens it may take, a bit each (token i: bit i % 32 of mask[i / 32]; 1 =
	 * allowed), as grammars_mask gives them; NULL: all */
	const uint32_t *mask;
};

/* What a backend tells about its device (empty strings on the cpu). */
struct be_info {
	char device[160];        /* "NVIDIA H200, compute 9.0, 132 SMs, 140.4 GiB" */
	char cuda_version[32];   /* CUDA runtime, "13.0" */
	char driver_version[32]; /* the CUDA version the driver supports, "13.0" */
	char sm[16];             /* compute capability, "sm_90" */
	uint64_t mem_free;       /* bytes free now: the device's, the host's MemAvailable */
	uint64_t mem_total;
};

/*
 * What a loaded model holds (bytes): @used = @weights + @kv + @scratch, and
 * @needed, all it will hold (the estimate the load was checked against).
 */
struct be_memory {
	uint64_t needed, used;
	uint64_t weights; /* the quantized weights (mapped from the file on the cpu) and their
	                     repacked copies */
	uint64_t kv;      /* the KV cache: keys and values, every layer */
	uint64_t scratch; /* activations, logits, the sampler's and attention's buffers */
};

/* be_progress_fn - load progress: @done of @total bytes of weights are in place. */
typedef void (*be_progress_fn)(void *ctx, uint64_t done, uint64_t total);

struct be_ops {
	const char *name; /* "cpu", "cuda" */
	bool paged;       /* takes kv_blocks > 0 and block tables (else slots only); the
	                     cuda backend only with kv_swa_blocks > 0 for a model with
	                     sliding-window layers (engine_open always gives it) */
	bool all_logits;  /* takes be_seq.all_logits and be_config.logit_rows */

	/*
	 * load - prepare @m (whose GGUF stays mapped) for computing with @cfg.
	 * ORCH_ENOMEM (host) or ORCH_EINSUFFICIENT_VRAM (device), with what was
	 * needed in the message; ORCH_EINVAL for a bad config.
	 */
	orch_err (*load)(const struct model *m, const struct be_config *cfg,
	                 be_progress_fn progress, void *ctx, struct be_model **ret,
	                 struct orch_errinfo *reterr);

	/* memory - bytes the backend needs for weights + KV + scratch, and holds now. */
	void (*memory)(const struct be_model *b, struct be_memory *ret);

	/*
	 * forward - one step over @n sequences. *@ret_logits points to one
	 * n_vocab row per sequence with want_logits (n_tokens rows for one with
	 * all_logits), in order, valid until the next call. ORCH_ECONTEXT when a sequence would
	 * pass n_ctx, ORCH_EINVAL for more than max_batch_tokens tokens or a bad slot or token,
	 * ORCH_ECUDA for a device error (then check() tells whether the context
	 * survived).
	 * Thread: one caller at a time.
	 */
	orch_err (*forward)(struct be_model *b, const struct be_seq *seqs, uint32_t n,
	                    const float **ret_logits, struct orch_errinfo *reterr);

	/* free - release everything; NULL is fine. */
	void (*free)(struct be_model *b);

	/* ---- optional (NULL when the backend lacks them) ---- */

	/*
	 * forward_sample - forward, then sample on the device: @samp[i] is used
	 * for each sequence with want_logits, and *@ret_ids gets one token per
	 * such sequence, in order — the same token samp_sample() picks from the
	 * same logits with those @samp[i].mask leaves out at -inf (logit bias,
	 * every penalty and filter included). Only the ids come back to the host.
	 */
	orch_err (*forward_sample)(struct be_model *b, const struct be_seq *seqs, uint32_t n,
	                           const struct be_sample *samp, int32_t *ret_ids,
	                           struct orch_errinfo *reterr);

	/*
	 * reserve - make @slot's KV cache ready before a job uses it (called at
	 * each job's admission: state a backend keeps per slot, such as a device
	 * sampler's copy of the history, starts over). ORCH_EVRAM when device
	 * memory is short: that job fails, the worker keeps serving.
	 */
	orch_err (*reserve)(struct be_model *b, uint32_t slot, struct orch_errinfo *reterr);

	/*
	 * copy_blocks - paged only (be_ops.paged): copy rows [0, @n_tokens) of
	 * block @src into block @dst in every full-attention layer, or with @swa
	 * in every sliding-window layer's pool, K and V (a kvb_copy: copy-on-write
	 * before a shared partial block is written). ORCH_EINVAL for a block out
	 * of range or a pool that does not exist. Thread: as forward.
	 */
	orch_err (*copy_blocks)(struct be_model *b, bool swa, uint32_t src, uint32_t dst,
	                        uint32_t n_tokens, struct orch_errinfo *reterr);

	/* info - @device's description, runtime and driver; needs no loaded model. */
	void (*info)(const char *device, struct be_info *ret);

	/*
	 * check - residency: every allocation is still device memory and the
	 * device answers. ORCH_EVRAM when something is no longer resident,
	 * ORCH_ECUDA when the context is unusable (the worker must exit).
	 */
	orch_err (*check)(struct be_model *b, struct orch_errinfo *reterr);
};

extern const struct be_ops be_cpu_ops;

/*
 * be_check_batch - what every forward checks first: slots in range and
 * distinct, tokens in the vocabulary, positions inside n_ctx (ORCH_ECONTEXT),
 * at most max_batch_tokens in all and logit rows within be_logit_rows
 * (ORCH_EINVAL); paged, block tables that
 * cover the positions the step reads and writes with blocks in their pools
 * (ORCH_EINVAL): a window of @n_swa positions for the sliding-window table.
 * *@ret_T: the tokens.
 */
/* be_logit_rows - the logit rows a step of @cfg may return: logit_rows, at least slots. */
uint32_t be_logit_rows(const struct be_config *cfg);

orch_err be_check_batch(const struct be_config *cfg, uint32_t n_vocab, uint32_t n_swa,
                        const struct be_seq *seqs, uint32_t n, uint32_t *ret_T,
                        struct orch_errinfo *reterr);

/*
 * be_for_device - the backend of @device: "cpu", or "cuda:N". A CUDA device
 * in a build or on a machine without CUDA is ORCH_EUNSUPPORTED with a clear
 * message: a worker never falls back to the CPU silently.
 */
orch_err be_for_device(const char *device, const struct be_ops **ret, struct orch_errinfo *reterr);
