#pragma once
/*
 * eng_util.h - a CPU engine on a test model and jobs whose outputs are
 * collected, as engine_test and sched_policy_test use them.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/finish.h"
#include "engine/engine.h"
#include "engine/scheduler.h"
#include "text/tokenizer.h"

/* An engine (engine_open) and short names for what the tests use of it. */
struct eng {
	struct engine *x;
	const struct model *m;
	struct tok *t;
	struct be_model *b;
	struct sched *s;
};

/* The KV geometry of an engine: block tokens (0: the default 16), or slots. */
struct kv_geom {
	uint32_t block_tokens;
	bool slots;
};

/*
 * eng_open_policy - @e on the cpu backend (2 threads) for the model at @path:
 * @slots sequences of @n_ctx, @chunk prompt tokens a step, the KV cache F32
 * with @kv_f32, @kv's geometry, steps filled by @policy. 0 (said on stderr)
 * when it does not open.
 */
int eng_open_policy(struct eng *e, const char *path, uint32_t slots, uint32_t n_ctx, uint32_t chunk,
                    bool kv_f32, struct kv_geom kv, enum sched_policy policy);

/* eng_open_kv - eng_open_policy with the default policy (decodes first). */
int eng_open_kv(struct eng *e, const char *path, uint32_t slots, uint32_t n_ctx, uint32_t chunk,
                bool kv_f32, struct kv_geom kv);

/* eng_open - eng_open_kv with the default geometry. */
int eng_open(struct eng *e, const char *path, uint32_t slots, uint32_t n_ctx, uint32_t chunk,
             bool kv_f32);

void eng_close(struct eng *e);

/* A job's outputs, collected by the callbacks. */
struct out {
	int32_t ids[4096];
	uint32_t n;
	char text[16384];
	size_t text_n;
	float logits[2][4096]; /* steps 0 and 1; the models here have ≤ 4096 tokens */
	bool have_logits[2];
	uint32_t n_vocab;
	enum orch_finish why;
	orch_err err;
	bool done;
};

/* job - a greedy job of prompt @p and @max_tokens whose outputs go to @o (cleared). */
struct sched_job job(uint64_t id, const struct tok_ids *p, uint32_t max_tokens, struct out *o);

/* run_all - step @e's scheduler until it is idle. */
void run_all(struct eng *e);
