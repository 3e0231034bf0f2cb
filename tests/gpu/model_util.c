/*
 * model_util.c - the end-to-end GPU tests' helpers (model_util.h).
 */
#include "model_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/sampler.h"
#include "synth.h"

orch_err
eng_open_opts(struct eng *e, const struct be_ops *ops, const char *path, uint32_t slots,
              bool graphs, const struct eng_opts *o, struct orch_errinfo *err)
{
	struct engine_config cfg = {.model_path = path,
	                            .device = ops == &be_cuda_ops ? "cuda:0" : "cpu",
	                            .ops = ops,
	                            .slots = slots,
	                            .n_ctx = o->n_ctx ? o->n_ctx : 512,
	                            .chunk = o->chunk ? o->chunk : 64,
	                            .threads = 4,
	                            .no_graphs = !graphs,
	                            .kv_block_tokens = o->block_tokens,
	                            .kv_slots = o->kv_slots,
	                            .kv_prefix_cache = o->prefix_cache};
	orch_err rv;

	memset(e, 0, sizeof(*e));
	if ((rv = engine_open(&cfg, &e->x, err)) != ORCH_OK) {
		printf("engine_open %s on %s: %s: %s\n", path, cfg.device, orch_err_name(rv),
		       err->msg);
		return rv;
	}
	*e = (struct eng){e->x, ops, &e->x->m, e->x->mt.tok, e->x->b, e->x->s};
	return ORCH_OK;
}

orch_err
eng_open(struct eng *e, const struct be_ops *ops, const char *path, uint32_t slots, bool graphs,
         struct orch_errinfo *err)
{
	struct eng_opts o = {0};

	return eng_open_opts(e, ops, path, slots, graphs, &o, err);
}

void
eng_close(struct eng *e)
{
	engine_close(e->x);
	e->x = NULL;
}

static void
on_token(void *ctx, struct sched_job *j, uint32_t index, int32_t id, const char *text, size_t n)
{
	struct out *o = ctx;

	(void)j, (void)index, (void)text, (void)n;
	if (id >= 0 && o->n < 256)
		o->ids[o->n++] = id;
}

static void
on_logits(void *ctx, struct sched_job *j, uint32_t index, const float *lg, uint32_t n_vocab)
{
	struct out *o = ctx;

	(void)j;
	if (index < o->n_logits)
		memcpy(o->logits + (uint64_t)index * n_vocab, lg, n_vocab * 4ull);
	o->n_vocab = n_vocab;
}

static void
on_end(void *ctx, struct sched_job *j, enum orch_finish why, orch_err err, const char *msg)
{
	struct out *o = ctx;

	(void)j, (void)why, (void)msg;
	o->err = err;
	o->done = true;
}

const struct sched_job_ops mt_with_logits = {
        .on_token = on_token, .on_logits = on_logits, .on_end = on_end};
const struct sched_job_ops mt_ids_only = {
        .on_token = on_token, .on_logits = NULL, .on_end = on_end}; /* device sampling */

struct sched_job
mt_job(uint64_t id, const int32_t *prompt, uint32_t n_prompt, uint32_t max, float *logits,
       uint32_t n_logits, struct out *o)
{
	memset(o, 0, sizeof(*o));
	o->logits = logits;
	o->n_logits = n_logits;
	struct sched_job j = {.id = id,
	                      .prompt = prompt,
	                      .n_prompt = n_prompt,
	                      .max_tokens = max,
	                      .ops = logits ? &mt_with_logits : &mt_ids_only,
	                      .ctx = o};
	j.sp = samp_defaults();
	j.sp.temperature = 0;
	return j;
}

void
run_all(struct sched *s)
{
	while (!sched_idle(s))
		sched_step(s);
}

orch_err
generate(struct eng *e, const int32_t *prompt, uint32_t n_prompt, uint32_t max, float *logits,
         uint32_t n_logits, struct out *o)
{
	struct sched_job j = mt_job(1, prompt, n_prompt, max, logits, n_logits, o);
	orch_err rv = sched_submit(e->s, &j, NULL);

	if (rv == ORCH_OK)
		run_all(e->s);
	return rv;
}

double
top_margin(const float *l, uint32_t n, uint32_t *ret_top)
{
	double t1 = -INFINITY, t2 = -INFINITY, scale = 0;
	uint32_t top = 0;

	for (uint32_t i = 0; i < n; i++) {
		double v = l[i];
		scale = fabs(v) > scale ? fabs(v) : scale;
		if (v > t1) {
			t2 = t1;
			t1 = v;
			top = i;
		} else if (v > t2) {
			t2 = v;
		}
	}
	if (ret_top != NULL)
		*ret_top = top;
	return scale > 0 ? (t1 - t2) / scale : 0;
}

double
max_rel(const float *a, const float *b, uint64_t n)
{
	double scale = 0, diff = 0;

	for (uint64_t i = 0; i < n; i++) {
		if (!isfinite(a[i]))
			return INFINITY;
		scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
		diff = fabs(a[i] - b[i]) > diff ? fabs(a[i] - b[i]) : diff;
	}
	return diff / scale;
}

orch_err
synth_tmp(const char *preset, const char *quant, uint32_t layers, const char *tag, char *path,
          size_t len)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct synth_opts so = {
	        .preset = preset, .quant = quant, .layers = layers, .seed = 7, .out = path};

	snprintf(path, len, "%s/orch-gpu-%s-%d.gguf", dir, tag, (int)getpid());
	return synth_write(&so, NULL);
}
