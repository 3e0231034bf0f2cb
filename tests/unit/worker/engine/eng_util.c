/*
 * eng_util.c - a CPU engine on a test model and jobs whose outputs are
 * collected (eng_util.h).
 */
#include "eng_util.h"

#include <stdio.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/cpu/cpu.h"
#include "engine/sampler.h"

int
eng_open_policy(struct eng *e, const char *path, uint32_t slots, uint32_t n_ctx, uint32_t chunk,
                bool kv_f32, struct kv_geom kv, enum sched_policy policy)
{
	struct orch_errinfo err = {0};
	struct engine_config cfg = {.model_path = path,
	                            .ops = &be_cpu_ops,
	                            .slots = slots,
	                            .n_ctx = n_ctx,
	                            .chunk = chunk,
	                            .policy = policy,
	                            .threads = 2,
	                            .kv_f32 = kv_f32,
	                            .kv_block_tokens = kv.block_tokens,
	                            .kv_slots = kv.slots};

	memset(e, 0, sizeof(*e));
	if (engine_open(&cfg, &e->x, &err) != ORCH_OK) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		return 0;
	}
	*e = (struct eng){e->x, &e->x->m, e->x->mt.tok, e->x->b, e->x->s};
	return 1;
}

int
eng_open_kv(struct eng *e, const char *path, uint32_t slots, uint32_t n_ctx, uint32_t chunk,
            bool kv_f32, struct kv_geom kv)
{
	return eng_open_policy(e, path, slots, n_ctx, chunk, kv_f32, kv, SCHED_DECODE_FIRST);
}

int
eng_open(struct eng *e, const char *path, uint32_t slots, uint32_t n_ctx, uint32_t chunk,
         bool kv_f32)
{
	return eng_open_kv(e, path, slots, n_ctx, chunk, kv_f32, (struct kv_geom){0});
}

void
eng_close(struct eng *e)
{
	engine_close(e->x);
}

static void
on_token(void *ctx, struct sched_job *j, uint32_t index, int32_t id, const char *text, size_t n)
{
	struct out *o = ctx;

	(void)j;
	(void)index;
	if (id >= 0 && o->n < 4096)
		o->ids[o->n++] = id;
	if (o->text_n + n < sizeof(o->text)) {
		memcpy(o->text + o->text_n, text, n);
		o->text_n += n;
		o->text[o->text_n] = '\0';
	}
}

static void
on_logits(void *ctx, struct sched_job *j, uint32_t index, const float *lg, uint32_t n_vocab)
{
	struct out *o = ctx;

	(void)j;
	if (index < 2 && n_vocab <= 4096) {
		memcpy(o->logits[index], lg, n_vocab * sizeof(float));
		o->have_logits[index] = true;
	}
	o->n_vocab = n_vocab;
}

static void
on_end(void *ctx, struct sched_job *j, enum orch_finish why, orch_err err, const char *msg)
{
	struct out *o = ctx;

	(void)j;
	(void)msg;
	o->why = why;
	o->err = err;
	o->done = true;
}

static const struct sched_job_ops ops = {
        .on_token = on_token, .on_logits = on_logits, .on_end = on_end};

struct sched_job
job(uint64_t id, const struct tok_ids *p, uint32_t max_tokens, struct out *o)
{
	struct sched_job j = {.id = id,
	                      .prompt = p->v,
	                      .n_prompt = (uint32_t)p->n,
	                      .max_tokens = max_tokens,
	                      .ops = &ops,
	                      .ctx = o};

	j.sp = samp_defaults();
	j.sp.temperature = 0.0f;
	memset(o, 0, sizeof(*o));
	return j;
}

void
run_all(struct eng *e)
{
	while (!sched_idle(e->s))
		sched_step(e->s);
}
