#pragma once
/*
 * model_util.h - what the end-to-end GPU tests (model_test.c, paged_test.c)
 * share: an engine on a backend with short names for its parts, greedy jobs
 * run to the end with their tokens and logits collected, a relative error.
 * Nothing here counts T_ checks (t.h's counters are per file): functions
 * return what the caller checks.
 */
#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "base/err.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/scheduler.h"

extern const struct be_ops be_cuda_ops;

/*
 * GPU_SIM: built for the simulated device (ORCH_CUDA=SIM, cuda/sim/README.md),
 * where a GPU's millisecond takes about a second: the end-to-end tests run
 * fewer steps and layers there, and a synthesized tiny model where a real
 * file's 201,088-row vocabulary adds time and nothing else (each test says).
 */
#ifdef CUSIM
#define GPU_SIM 1
#else
#define GPU_SIM 0
#endif

/* An engine (engine_open) on @ops and short names for what the tests use of it. */
struct eng {
	struct engine *x;
	const struct be_ops *ops;
	const struct model *m;
	struct tok *t;
	struct be_model *b;
	struct sched *s;
};

/* The engine's shape: context 512, chunk 64 and a paged KV cache of blocks of 16 unless set. */
struct eng_opts {
	uint32_t n_ctx, chunk;
	uint32_t block_tokens; /* 0: the default (16) */
	bool kv_slots;         /* one KV slot per sequence instead of blocks */
	bool prefix_cache;
};

/* eng_open - @path on @ops ("cuda:0" for be_cuda_ops), 4 CPU threads; prints why it failed. */
orch_err eng_open(struct eng *e, const struct be_ops *ops, const char *path, uint32_t slots,
                  bool graphs, struct orch_errinfo *err);
orch_err eng_open_opts(struct eng *e, const struct be_ops *ops, const char *path, uint32_t slots,
                       bool graphs, const struct eng_opts *o, struct orch_errinfo *err);
void eng_close(struct eng *e);

/* What one job produced. */
struct out {
	int32_t ids[256];
	uint32_t n;
	float *logits; /* [steps][n_vocab] when logits are wanted */
	uint32_t n_logits, n_vocab;
	orch_err err;
	bool done;
};

/* Job callbacks: every token and logit row (host sampling), or ids only (device sampling). */
extern const struct sched_job_ops mt_with_logits, mt_ids_only;

/* mt_job - a greedy job of @max tokens of @prompt into @o (cleared): logits when @logits. */
struct sched_job mt_job(uint64_t id, const int32_t *prompt, uint32_t n_prompt, uint32_t max,
                        float *logits, uint32_t n_logits, struct out *o);

/*
 * generate - greedy @max tokens of @prompt alone on @e, the logits of the
 * first @n_logits steps into @logits when not NULL (else sampled on the
 * device); sched_submit's result.
 */
orch_err generate(struct eng *e, const int32_t *prompt, uint32_t n_prompt, uint32_t max,
                  float *logits, uint32_t n_logits, struct out *o);

/*
 * synth_tmp - orch-synth's @preset with @quant weights (@layers: 0 for the
 * preset's) written to a file in $TMPDIR (or /tmp) named after @tag and the
 * process; its path in @path (@len bytes), which the caller unlinks.
 */
orch_err synth_tmp(const char *preset, const char *quant, uint32_t layers, const char *tag,
                   char *path, size_t len);

/* run_all - step @s until idle. */
void run_all(struct sched *s);

/*
 * top_margin - (first - second) / max |l| of @n logits; the first's index into
 * *@ret_top when not NULL.
 */
double top_margin(const float *l, uint32_t n, uint32_t *ret_top);

/* max_rel - max |a - b| / max |b| over @n; INFINITY when @a has a non-finite value. */
double max_rel(const float *a, const float *b, uint64_t n);
