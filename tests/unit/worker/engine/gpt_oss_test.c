/*
 * gpt_oss_test.c - the gpt-oss architecture on the CPU engine against
 * llama.cpp (../shared/testdata/models/SOURCE-gpt-oss.md): the two tiny
 * models (2 layers, one sliding-window and one full, 8 experts of which 4
 * are used; experts in MXFP4 in one file and F32 in the other, the same
 * values), both golden prompts (4 tokens, and 313 tokens, past the
 * 128-token window): prompt tokens and 16 greedy tokens exact, the logits
 * of steps 0 and 1 within a bound (below), with the sliding-window layer's
 * KV cache of n_ctx cells and (MXFP4) as a ring the long prompt wraps. Then a
 * sequence's tokens do not depend on its neighbours in a batch, though the
 * experts' products group tokens of both; the ring's size does not grow
 * with the context; and a long generation over a ring gives the logits of
 * a full cache, bit for bit.
 *
 * The bounds: llama.cpp's CPU sums in other orders (AVX-512, tiled F32
 * products) and, for MXFP4 experts, quantizes the activations to Q8_0 as
 * this engine does, so a last-bit difference upstream can move a code by
 * one step of amax/127. Measured on the golden prompts (max |Δ| over max
 * |logit|): F32 experts 7.4e-4, MXFP4 3.8e-3, both at step 1; the bounds
 * are about 2.5 times that. Greedy equality is checked on every step: the
 * goldens' smallest top-1 margins are 0.015 (F32) and 0.043 (MXFP4).
 */
#include <math.h>

#include <cjson/cJSON.h>

#include "engine/backend.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/kv_blocks.h"
#include "engine/scheduler.h"
#include "gguf/model_info.h"
#include "paged_copy.h"
#include "t.h"
#include "text/tokenizer.h"

#define N_GEN 16

/* A job's outputs. */
struct out {
	int32_t ids[64];
	uint32_t n;
	float *logits[2]; /* steps 0 and 1, n_vocab each */
	uint32_t n_vocab;
	bool done;
	enum orch_finish why;
	uint32_t cached; /* the job's cached_tokens */
};

static void
on_token(void *ctx, struct sched_job *j, uint32_t index, int32_t id, const char *text, size_t n)
{
	struct out *o = ctx;

	(void)j;
	(void)index;
	(void)text;
	(void)n;
	if (id >= 0 && o->n < 64)
		o->ids[o->n++] = id;
}

static void
on_logits(void *ctx, struct sched_job *j, uint32_t index, const float *lg, uint32_t n_vocab)
{
	struct out *o = ctx;

	(void)j;
	o->n_vocab = n_vocab;
	if (index < 2 && (o->logits[index] = malloc(n_vocab * sizeof(float))) != NULL)
		memcpy(o->logits[index], lg, n_vocab * sizeof(float));
}

static void
on_end(void *ctx, struct sched_job *j, enum orch_finish why, orch_err err, const char *msg)
{
	struct out *o = ctx;

	(void)err;
	(void)msg;
	o->why = why;
	o->cached = j->cached_tokens;
	o->done = true;
}

static const struct sched_job_ops ops = {
        .on_token = on_token, .on_logits = on_logits, .on_end = on_end};

static void
out_fini(struct out *o)
{
	free(o->logits[0]);
	free(o->logits[1]);
	memset(o, 0, sizeof(*o));
}

/*
 * @model on the CPU, 2 threads; a step carries at most @chunk + @slots tokens.
 * @kv_slots: one KV slot per sequence (for tests that call forward directly,
 * without block tables); else the paged KV cache.
 */
static struct engine *
open_engine_kv(const char *model, uint32_t slots, uint32_t n_ctx, uint32_t chunk, bool kv_slots)
{
	struct orch_errinfo err = {0};
	struct engine *x = NULL;
	struct engine_config cfg = {.model_path = t_path(model),
	                            .ops = &be_cpu_ops,
	                            .slots = slots,
	                            .n_ctx = n_ctx,
	                            .chunk = chunk,
	                            .threads = 2,
	                            .kv_slots = kv_slots};

	if (engine_open(&cfg, &x, &err) != ORCH_OK)
		fprintf(stderr, "%s: %s\n", model, err.msg);
	return x;
}

static struct engine *
open_engine_ctx(const char *model, uint32_t slots, uint32_t n_ctx, uint32_t chunk)
{
	return open_engine_kv(model, slots, n_ctx, chunk, false);
}

static struct engine *
open_engine(const char *model, uint32_t slots)
{
	return open_engine_ctx(model, slots, 512, 512);
}

/* Greedy @max tokens of @p (one job, or one beside @other's when not NULL) into @o. */
static void
greedy(struct engine *x, const struct tok_ids *p, uint32_t max, struct out *o,
       const struct tok_ids *other, struct out *o2)
{
	struct sched_job j = {.id = 1,
	                      .prompt = p->v,
	                      .n_prompt = (uint32_t)p->n,
	                      .max_tokens = max,
	                      .ops = &ops,
	                      .ctx = o};
	struct sched_job j2 = j;

	j.sp = samp_defaults();
	j.sp.temperature = 0.0f;
	T_OK(sched_submit(x->s, &j, NULL));
	if (other != NULL) {
		j2 = j;
		j2.id = 2;
		j2.prompt = other->v;
		j2.n_prompt = (uint32_t)other->n;
		j2.ctx = o2;
		T_OK(sched_submit(x->s, &j2, NULL));
	}
	while (!sched_idle(x->s))
		sched_step(x->s);
	T_TRUE(o->done && o->why == ORCH_FINISH_LENGTH);
}

/* Max |a - b| over max |b|. */
static double
rel_diff(const float *a, const cJSON *b, uint32_t n)
{
	double scale = 0, diff = 0;
	const cJSON *it = b->child; /* walked, not indexed: 201,088 entries */

	for (uint32_t i = 0; i < n && it != NULL; i++, it = it->next) {
		double w = it->valuedouble;
		scale = fabs(w) > scale ? fabs(w) : scale;
		diff = fabs(w - (double)a[i]) > diff ? fabs(w - (double)a[i]) : diff;
	}
	return diff / scale;
}

/*
 * Both golden cases of @model on an engine whose prefill chunk is @chunk:
 * 512 gives the sliding-window layer n_ctx cells (128 + 513 >= 512), 32 a
 * ring of 128 + 33 cells that the 313-token prompt wraps twice.
 */
static void
golden(const char *model, const char *gold, double bound, uint32_t chunk)
{
	size_t n;
	char *g = t_read_file(t_path(gold), &n);
	cJSON *root = g ? cJSON_ParseWithLength(g, n) : NULL;
	struct engine *x = open_engine_ctx(model, 1, 512, chunk);
	const cJSON *c;
	int ci = 0;

	free(g);
	T_TRUE(root != NULL && x != NULL);
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases"))
	{
		const char *prompt = cJSON_GetObjectItem(c, "prompt")->valuestring;
		const cJSON *want_p = cJSON_GetObjectItem(c, "prompt_tokens");
		const cJSON *want = cJSON_GetObjectItem(c, "generated_tokens");
		struct tok_ids ids = {0};
		struct out o = {0};
		T_OK(tok_encode(x->mt.tok, prompt, strlen(prompt),
		                TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, &ids));
		T_EQ(ids.n, cJSON_GetArraySize(want_p));
		for (size_t i = 0; i < ids.n; i++)
			T_EQ(ids.v[i], cJSON_GetArrayItem(want_p, (int)i)->valueint);
		greedy(x, &ids, N_GEN, &o, NULL, NULL);
		T_EQ(o.n, cJSON_GetArraySize(want));
		for (uint32_t i = 0; i < o.n; i++)
			if (o.ids[i] != cJSON_GetArrayItem(want, (int)i)->valueint) {
				T_FAIL_("%s case %d: token %u is %d, llama.cpp has %d", model, ci,
				        i, o.ids[i], cJSON_GetArrayItem(want, (int)i)->valueint);
				break;
			}
		double worst = 0;
		for (int s = 0; s < 2; s++) {
			const cJSON *lg = cJSON_GetObjectItem(
			        cJSON_GetArrayItem(cJSON_GetObjectItem(c, "steps"), s), "logits");
			T_TRUE(o.logits[s] != NULL &&
			       o.n_vocab == (uint32_t)cJSON_GetArraySize(lg));
			double r = rel_diff(o.logits[s], lg, o.n_vocab);
			worst = r > worst ? r : worst;
		}
		printf("%s chunk %u case %d (%zu prompt tokens): %d tokens equal; logits max |Δ| / "
		       "max |logit| = %.2e (bound %.0e)\n",
		       model, chunk, ci, ids.n, N_GEN, worst, bound);
		T_TRUE(worst <= bound);
		out_fini(&o);
		tok_ids_fini(&ids);
		ci++;
	}
	T_EQ(ci, 2);
	cJSON_Delete(root);
	engine_close(x);
}

#define TINY_F32   "models/gpt-oss-tiny-f32.gguf"
#define TINY_MXFP4 "models/gpt-oss-tiny-mxfp4.gguf"

static void
test_golden_f32(void)
{
	golden(TINY_F32, "models/golden-gpt-oss-tiny-f32.json", 2e-3, 512);
}

static void
test_golden_mxfp4(void)
{
	golden(TINY_MXFP4, "models/golden-gpt-oss-tiny-mxfp4.json", 1e-2, 512);
	golden(TINY_MXFP4, "models/golden-gpt-oss-tiny-mxfp4.json", 1e-2, 32);
}

/* Two prompts alone, then in one batch (their tokens share the experts' products). */
static void
test_batch_independence(void)
{
	static const char *prompts[] = {"Once upon a time", "The lighthouse keeper climbed"};
	struct engine *x1 = open_engine(TINY_MXFP4, 1);
	struct engine *x2 = open_engine(TINY_MXFP4, 2);
	struct tok_ids ids[2] = {{0}};
	struct out alone[2], both[2];

	memset(alone, 0, sizeof(alone));
	memset(both, 0, sizeof(both));

	T_TRUE(x1 != NULL && x2 != NULL);
	for (int i = 0; i < 2; i++) {
		T_OK(tok_encode(x1->mt.tok, prompts[i], strlen(prompts[i]), 0, &ids[i]));
		greedy(x1, &ids[i], N_GEN, &alone[i], NULL, NULL);
	}
	greedy(x2, &ids[0], N_GEN, &both[0], &ids[1], &both[1]);
	for (int i = 0; i < 2; i++) {
		T_EQ(both[i].n, alone[i].n);
		T_TRUE(memcmp(both[i].ids, alone[i].ids, alone[i].n * sizeof(int32_t)) == 0);
		T_TRUE(memcmp(both[i].logits[0], alone[i].logits[0],
		              alone[i].n_vocab * sizeof(float)) == 0);
		out_fini(&alone[i]);
		out_fini(&both[i]);
		tok_ids_fini(&ids[i]);
	}
	engine_close(x1);
	engine_close(x2);
}

/*
 * The sliding-window layer's cache does not grow with the context: doubling
 * n_ctx from 1024 to 2048 (2 slots, chunk 6: a step of at most 8 tokens, a
 * ring of 128 + 8 cells) adds only the full layer's K and V (2 × 1024 cells ×
 * 2 slots × kv_dim 128 × 2 bytes) and the attention scores (2 threads ×
 * 1024 floats). With n_ctx cells for both layers it would add twice the KV.
 */
static void
test_ring_memory(void)
{
	struct engine *x[2] = {open_engine_ctx(TINY_MXFP4, 2, 1024, 6),
	                       open_engine_ctx(TINY_MXFP4, 2, 2048, 6)};
	uint64_t need[2], used[2];
	uint64_t kv_full = 2ull * 1024 * 2 * 128 * 2, scores;

	T_TRUE(x[0] != NULL && x[1] != NULL);
	/* attention's scratch, two threads: blocked, each query's scores; else one head's */
	const struct model_hparams *hp = &x[0]->m.hp;
	uint32_t qmax = cpu_attn_tile_tokens(hp, 1024) * (hp->n_head / hp->n_head_kv);
	T_EQ(qmax, cpu_attn_tile_tokens(hp, 2048) * (hp->n_head / hp->n_head_kv));
	scores = 2ull * 1024 * sizeof(float) * (cpu_has_avx2() ? qmax : 1);
	T_EQ(x[0]->m.hp.n_swa, 128);
	T_TRUE(model_layer_swa(&x[0]->m.hp, 0) && !model_layer_swa(&x[0]->m.hp, 1));
	for (int i = 0; i < 2; i++) {
		struct be_memory mem;
		x[i]->ops->memory(x[i]->b, &mem);
		need[i] = mem.needed;
		used[i] = mem.used;
		T_EQ(mem.weights + mem.kv + mem.scratch, mem.used);
	}
	printf("memory needed at context 1024: %llu, at 2048: %llu bytes (+%llu: full layer KV "
	       "%llu, scores %llu)\n",
	       (unsigned long long)need[0], (unsigned long long)need[1],
	       (unsigned long long)(need[1] - need[0]), (unsigned long long)kv_full,
	       (unsigned long long)scores);
	T_EQ(need[1] - need[0], kv_full + scores);
	T_EQ(used[1] - used[0], kv_full + scores);
	engine_close(x[0]);
	engine_close(x[1]);
}

/* A sequence of the ring test: its tokens (prompt, then what greedy chose), how many are fed. */
struct ring_seq {
	int32_t toks[1024];
	uint32_t n_prompt, fed, chunk;
};

/* A prompt of @n pseudo-random ids of the vocabulary's ordinary range (LCG from @seed). */
static void
ring_prompt(struct ring_seq *q, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		q->toks[i] = (int32_t)(seed >> 8) % 199000;
	}
	q->n_prompt = n;
	q->fed = 0;
}

/*
 * One step of @q[0..1] on @x and on @ref, at most RING_T tokens in all, as
 * the scheduler shares its budget: each sequence in turn feeds a prompt
 * chunk of up to its chunk tokens, or the last token chosen, or sits the
 * step out when the budget is spent. Every logits row of @x must equal
 * @ref's bit for bit; its argmax becomes the sequence's next token.
 */
#define RING_T 8 /* chunk 6 + 2 slots: a ring of 128 + 8 cells */

static bool
ring_step(struct engine *x, struct engine *ref, struct ring_seq *q)
{
	struct orch_errinfo err = {0};
	struct be_seq s[2];
	const float *a, *b;
	uint32_t V = x->m.hp.n_vocab, n = 0, budget = RING_T;

	for (uint32_t k = 0; k < 2; k++) {
		uint32_t left = q[k].n_prompt - q[k].fed, want = 1;
		if (q[k].fed < q[k].n_prompt)
			want = left < q[k].chunk ? left : q[k].chunk;
		want = want < budget ? want : budget;
		if (want == 0)
			continue;
		s[n++] = (struct be_seq){.slot = k,
		                         .pos = q[k].fed,
		                         .tokens = q[k].toks + q[k].fed,
		                         .n_tokens = want,
		                         .want_logits = true};
		budget -= want;
	}
	if (x->ops->forward(x->b, s, n, &a, &err) != ORCH_OK ||
	    ref->ops->forward(ref->b, s, n, &b, &err) != ORCH_OK) {
		fprintf(stderr, "forward: %s\n", err.msg);
		return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct ring_seq *r = &q[s[i].slot];
		const float *lg = a + (uint64_t)i * V;
		uint32_t best = 0;
		if (memcmp(lg, b + (uint64_t)i * V, V * sizeof(float)) != 0) {
			fprintf(stderr,
			        "slot %u, positions %u..%u: the ring's logits differ from the full "
			        "cache's\n",
			        s[i].slot, s[i].pos, s[i].pos + s[i].n_tokens - 1);
			return false;
		}
		for (uint32_t v = 1; v < V; v++)
			best = lg[v] > lg[best] ? v : best;
		r->fed += s[i].n_tokens;
		if (r->fed >= r->n_prompt)
			r->toks[r->fed] = (int32_t)best;
	}
	return true;
}

/*
 * A generation far past the ring: two slots, chunked prefill (5 and 3
 * tokens a step) next to decoding, slot 0 running to position 449 (its
 * 136 cells wrapped 3 times), then restarting with a new prompt over the
 * old cells in chunks of 8 (RING_T, the most a step may carry: slot 1
 * waits), slot 1 to position 422 (3 wraps). Every step's logits equal
 * those of an engine whose sliding-window layer has n_ctx cells (chunk
 * 1022: 128 + 1024 >= n_ctx), bit for bit.
 */
static void
test_ring_matches_full_cache(void)
{
	struct engine *x = open_engine_kv(TINY_MXFP4, 2, 1024, RING_T - 2, true);
	struct engine *ref = open_engine_kv(TINY_MXFP4, 2, 1024, 1022, true);
	struct ring_seq *q = calloc(2, sizeof(*q));

	T_TRUE(x != NULL && ref != NULL && q != NULL);
	ring_prompt(&q[0], 300, 1);
	ring_prompt(&q[1], 211, 2);
	q[0].chunk = 5;
	q[1].chunk = 3;
	for (int step = 0; step < 300; step++) {
		if (step == 210) {
			T_EQ(q[0].fed, 450);
			ring_prompt(&q[0], 140, 3);
			q[0].chunk = RING_T;
		}
		T_TRUE(ring_step(x, ref, q));
	}
	printf("300 steps, slot 0 at position %u, slot 1 at %u: logits equal\n", q[0].fed - 1,
	       q[1].fed - 1);
	T_EQ(q[1].fed, 423);
	free(q);
	engine_close(x);
	engine_close(ref);
}

/*
 * Paged KV with a sliding window: both layers page, the window layer in a
 * pool of its own (chunk 6: model_swa_blocks per slot), giving back the
 * blocks its window leaves. Two jobs of 150 and 90 random prompt tokens,
 * batched, greedy past the window, on slots (a ring of 128 + 8 cells) and
 * on blocks of 1, 7 and 16 with the prefix cache on: equal tokens and
 * logits, and the window pool holds nothing at the end.
 */
static void
test_paged_window(void)
{
	static const uint32_t bts[] = {0, 1, 7, 16};
	struct ring_seq *q = calloc(2, sizeof(*q));
	struct out ref[2] = {0}, o[2] = {0};

	T_TRUE(q != NULL);
	ring_prompt(&q[0], 150, 5);
	ring_prompt(&q[1], 90, 6);
	struct tok_ids p0 = {q[0].toks, 150, 150}, p1 = {q[1].toks, 90, 90};
	for (size_t g = 0; g < sizeof(bts) / sizeof(bts[0]); g++) {
		struct orch_errinfo err = {0};
		struct engine *x = NULL;
		struct engine_config cfg = {.model_path = t_path(TINY_MXFP4),
		                            .ops = &be_cpu_ops,
		                            .slots = 2,
		                            .n_ctx = 512,
		                            .chunk = 6,
		                            .threads = 2,
		                            .kv_block_tokens = bts[g],
		                            .kv_prefix_cache = true,
		                            .kv_slots = bts[g] == 0};
		struct out *w = g == 0 ? ref : o;
		if (engine_open(&cfg, &x, &err) != ORCH_OK)
			T_FAIL_("%s", err.msg);
		T_TRUE(x != NULL && (bts[g] == 0 || x->kv_blocks > 0));
		T_EQ(x->kv_prefix_cache, bts[g] > 0);
		T_EQ(x->kv_swa_blocks, bts[g] ? 2 * model_swa_blocks(512, 128, 8, bts[g]) : 0);
		greedy(x, &p0, 40, &w[0], &p1, &w[1]);
		struct kvb_stats st;
		T_EQ(sched_kv_swa_stats(x->s, &st), bts[g] > 0);
		T_EQ(st.used, 0);
		for (int k = 0; g > 0 && k < 2; k++) {
			T_EQ(o[k].n, ref[k].n);
			if (memcmp(o[k].ids, ref[k].ids, o[k].n * sizeof(int32_t)) != 0 ||
			    memcmp(o[k].logits[0], ref[k].logits[0],
			           o[k].n_vocab * sizeof(float)) ||
			    memcmp(o[k].logits[1], ref[k].logits[1], o[k].n_vocab * sizeof(float)))
				T_FAIL_("job %d, blocks of %u: differs from slots", k, bts[g]);
			out_fini(&o[k]);
		}
		engine_close(x);
	}
	printf("gpt-oss tiny, paged full and window layers: blocks of 1, 7, 16 equal slots\n");
	out_fini(&ref[0]);
	out_fini(&ref[1]);
	free(q);
}

/* One greedy job of @n tokens of @toks on @x (its salt NULL), @max tokens, into @o. */
static void
run_one(struct engine *x, const int32_t *toks, uint32_t n, uint32_t max, struct out *o)
{
	struct tok_ids p = {(int32_t *)toks, n, n};

	greedy(x, &p, max, o, NULL, NULL);
}

/* Whether @a and @b have the same tokens and step 0 and 1 logits, bit for bit. */
static bool
same_out(const struct out *a, const struct out *b)
{
	return a->n == b->n && memcmp(a->ids, b->ids, a->n * sizeof(int32_t)) == 0 &&
	       memcmp(a->logits[0], b->logits[0], a->n_vocab * sizeof(float)) == 0 &&
	       memcmp(a->logits[1], b->logits[1], a->n_vocab * sizeof(float)) == 0;
}

/*
 * The prefix cache of a model with a sliding window (gpt-oss tiny, one slot,
 * chunk 16, blocks of 16). The window pool is model_swa_blocks = 10 blocks,
 * yet a 300-token prompt and 20 tokens run through 20 blocks: the window's
 * left-behind blocks are given back (and evicted oldest first). The same
 * prompt again resumes after 288 tokens — the full layer's 18 blocks and
 * the window's blocks 10..17, still cached — and gives the first run's
 * tokens and logits, bit for bit. A prompt sharing only its first 200
 * tokens with it resumes at 0: every length the full layer offers needs
 * window blocks that were evicted. It matches an engine without the cache.
 */
static void
test_window_prefix_cache(void)
{
	struct engine_config cfg = {.model_path = t_path(TINY_MXFP4),
	                            .ops = &be_cpu_ops,
	                            .slots = 1,
	                            .n_ctx = 512,
	                            .chunk = 16,
	                            .threads = 2,
	                            .kv_block_tokens = 16,
	                            .kv_prefix_cache = true};
	struct engine *x = NULL, *plain = NULL;
	struct ring_seq *q = calloc(2, sizeof(*q));
	struct out a = {0}, c = {0}, b = {0}, b0 = {0};

	T_TRUE(q != NULL);
	T_OK(engine_open(&cfg, &x, NULL));
	cfg.kv_prefix_cache = false;
	T_OK(engine_open(&cfg, &plain, NULL));
	T_EQ(x->kv_swa_blocks, 10);
	ring_prompt(&q[0], 300, 11);
	ring_prompt(&q[1], 260, 12);
	memcpy(q[1].toks, q[0].toks, 200 * sizeof(int32_t));
	run_one(x, q[0].toks, 300, 20, &a);
	T_EQ(a.cached, 0);
	run_one(x, q[0].toks, 300, 20, &c);
	T_EQ(c.cached, 288);
	T_TRUE(same_out(&a, &c));
	run_one(x, q[1].toks, 260, 20, &b);
	T_EQ(b.cached, 0);
	run_one(plain, q[1].toks, 260, 20, &b0);
	T_TRUE(same_out(&b, &b0));
	struct kvb_stats st;
	T_TRUE(sched_kv_swa_stats(x->s, &st));
	T_TRUE(st.used == 0 && st.cached > 0 && st.total == 10);
	printf("gpt-oss tiny: 300-token prompt again resumed after %u tokens, same output; "
	       "a 200-token shared prefix after %u\n",
	       c.cached, b.cached);
	out_fini(&a);
	out_fini(&c);
	out_fini(&b);
	out_fini(&b0);
	free(q);
	engine_close(x);
	engine_close(plain);
}

/* copy_blocks in both pools of the CPU backend (paged_copy.c; also gpu_model_test's). */
static void
test_paged_copy(void)
{
	struct engine *x = open_engine_ctx(TINY_MXFP4, 1, 512, 64);

	T_TRUE(x != NULL && x->kv_swa_blocks >= 3);
	T_TRUE(paged_copy_check(x));
	engine_close(x);
}

int
main(void)
{
	T_RUN(test_golden_f32);
	T_RUN(test_golden_mxfp4);
	T_RUN(test_batch_independence);
	T_RUN(test_ring_memory);
	T_RUN(test_ring_matches_full_cache);
	T_RUN(test_paged_window);
	T_RUN(test_window_prefix_cache);
	T_RUN(test_paged_copy);
	return t_done();
}
