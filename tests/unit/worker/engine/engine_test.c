/*
 * engine_test.c - the CPU engine against llama.cpp on the real stories260K
 * model (64 greedy tokens exactly, logits of steps 0 and 1 within
 * tolerance, for F32, Q8_0 and Q4_0), prompt lengths up to and past the
 * context, batch-composition and chunk-size independence, stop strings
 * split across tokens, F32 vs F16 KV, synthesized tiny-qwen2/tiny-phi3
 * end to end, and the sampler (the CPU kernels' SIMD/scalar twins:
 * cpu/cpu_test.c).
 */
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/rng.h"
#include "eng_util.h"
#include "engine/backend.h"
#include "engine/cpu/cpu.h"
#include "engine/engine.h"
#include "engine/kv_blocks.h"
#include "engine/model/model.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "paged_copy.h"
#include "synth.h"
#include "t.h"
#include "text/tokenizer.h"

/* Greedy 64 tokens and step-0/1 logits against llama.cpp's golden file. */
static void
golden(const char *model, const char *gold, double tol)
{
	struct eng e;
	size_t n;
	char *g = t_read_file(t_path(gold), &n);
	cJSON *root = g ? cJSON_ParseWithLength(g, n) : NULL;
	const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0);
	struct tok_ids ids = {0};
	struct out *o = calloc(1, sizeof(*o));

	free(g);
	T_TRUE(c != NULL && o != NULL && eng_open(&e, t_path(model), 1, 256, 64, false));
	T_OK(tok_encode(e.t, "Once upon a time", 16, TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, &ids));
	T_EQ(ids.n, cJSON_GetArraySize(cJSON_GetObjectItem(c, "prompt_tokens")));
	struct sched_job j = job(1, &ids, 64, o);
	T_OK(sched_submit(e.s, &j, NULL));
	run_all(&e);
	const cJSON *want = cJSON_GetObjectItem(c, "generated_tokens");
	T_EQ(o->n, cJSON_GetArraySize(want));
	for (uint32_t i = 0; i < o->n; i++) {
		int w = cJSON_GetArrayItem(want, (int)i)->valueint;
		if (o->ids[i] != w) {
			T_FAIL_("%s: token %u is %d (\"%s\"), llama.cpp has %d", model, i,
			        o->ids[i], o->text, w);
			break;
		}
	}
	double worst = 0;
	for (int step = 0; step < 2; step++) {
		const cJSON *lg = cJSON_GetObjectItem(
		        cJSON_GetArrayItem(cJSON_GetObjectItem(c, "steps"), step), "logits");
		double scale = 0, diff = 0;
		for (uint32_t i = 0; i < o->n_vocab; i++) {
			double w = cJSON_GetArrayItem(lg, (int)i)->valuedouble;
			scale = fabs(w) > scale ? fabs(w) : scale;
			diff = fabs(w - (double)o->logits[step][i]) > diff
			               ? fabs(w - (double)o->logits[step][i])
			               : diff;
		}
		worst = diff / scale > worst ? diff / scale : worst;
	}
	printf("%s: 64 tokens equal; logits max |Δ| / max |logit| = %.2e (bound %.0e)\n", model,
	       worst, tol);
	T_TRUE(worst <= tol);
	free(o);
	tok_ids_fini(&ids);
	cJSON_Delete(root);
	eng_close(&e);
}

static void
test_golden_f32(void)
{
	golden("models/stories260K.gguf", "models/golden-stories260K.json", 1e-3);
}

static void
test_golden_q8_0(void)
{
	golden("models/stories260K-Q8_0.gguf", "models/golden-stories260K-Q8_0.json", 1e-4);
}

static void
test_golden_q4_0(void)
{
	golden("models/stories260K-Q4_0.gguf", "models/golden-stories260K-Q4_0.json", 1e-4);
}

/* Prompts of 1, 2, 100 and exactly context-length tokens; one more is CONTEXT_LENGTH_EXCEEDED. */
static void
test_prompt_lengths(void)
{
	static const uint32_t lens[] = {1, 2, 100, 128};
	struct eng e;
	struct out *o = calloc(1, sizeof(*o));
	int32_t toks[129];
	struct orch_errinfo err = {0};

	T_TRUE(o != NULL && eng_open(&e, t_path("models/stories260K.gguf"), 1, 128, 32, false));
	toks[0] = 1;
	for (uint32_t i = 1; i < 129; i++)
		toks[i] = 300 + (int32_t)(i % 100);
	for (size_t k = 0; k < 4; k++) {
		struct tok_ids p = {toks, lens[k], lens[k]};
		struct sched_job j = job(k, &p, 8, o);
		T_OK(sched_submit(e.s, &j, NULL));
		run_all(&e);
		T_TRUE(o->done && o->why != ORCH_FINISH_ERROR);
		T_EQ(o->n, lens[k] == 128 ? 1 : 8); /* a full context leaves room for one token */
		T_EQ(o->why, ORCH_FINISH_LENGTH);
	}
	struct tok_ids p = {toks, 129, 129};
	struct sched_job j = job(9, &p, 8, o);
	T_ERR(sched_submit(e.s, &j, &err), ORCH_ECONTEXT);
	T_STREQ(orch_err_wire(err.code), "CONTEXT_LENGTH_EXCEEDED");
	free(o);
	eng_close(&e);
}

/* Three prompts alone, then together, then with tiny prefill chunks: identical tokens. */
static void
test_batch_independence(void)
{
	static const char *prompts[] = {"Once upon a time", "The little dog",
	                                "Lily and Ben went to the park"};
	struct out *alone = calloc(3, sizeof(*alone)), *together = calloc(3, sizeof(*together));
	struct tok_ids ids[3] = {{0}};
	struct eng e1, e3, ec;

	T_TRUE(alone && together);
	T_TRUE(eng_open(&e1, t_path("models/stories260K-Q8_0.gguf"), 1, 256, 64, false));
	T_TRUE(eng_open(&e3, t_path("models/stories260K-Q8_0.gguf"), 3, 256, 64, false));
	T_TRUE(eng_open(&ec, t_path("models/stories260K-Q8_0.gguf"), 3, 256, 3, false));
	for (int k = 0; k < 3; k++) {
		T_OK(tok_encode(e1.t, prompts[k], strlen(prompts[k]), TOK_ADD_SPECIAL, &ids[k]));
		struct sched_job j = job((uint64_t)k, &ids[k], 40, &alone[k]);
		T_OK(sched_submit(e1.s, &j, NULL));
		run_all(&e1);
	}
	for (int pass = 0; pass < 2; pass++) {
		struct eng *e = pass ? &ec : &e3;
		struct sched_job jobs[3];
		for (int k = 0; k < 3; k++) {
			jobs[k] = job((uint64_t)k, &ids[k], (uint32_t)(40 - 10 * k), &together[k]);
			T_OK(sched_submit(e->s, &jobs[k], NULL));
		}
		run_all(e);
		for (int k = 0; k < 3; k++) {
			T_EQ(together[k].n, 40 - 10 * k);
			if (memcmp(together[k].ids, alone[k].ids,
			           together[k].n * sizeof(int32_t)) != 0)
				T_FAIL_("prompt %d: tokens differ when batched (%s)", k,
				        pass ? "chunk 3" : "chunk 64");
		}
	}
	for (int k = 0; k < 3; k++)
		tok_ids_fini(&ids[k]);
	free(alone);
	free(together);
	eng_close(&e1);
	eng_close(&e3);
	eng_close(&ec);
}

/*
 * Paged KV against slots: three prompts batched (chunk 5, so prefill chunks
 * and decode tokens cross block boundaries at odd places) on engines with
 * one KV slot per sequence, and with blocks of 1, 7 and 16 tokens and of the
 * whole context (one block per sequence: the slot layout through a table),
 * F16 and F32 caches. Greedy tokens and the logits of steps 0 and 1 are
 * identical, bit for bit: paging changes where a row lives, not the sums.
 */
static void
test_paged_geometries(void)
{
	static const char *prompts[] = {"Once upon a time", "The little dog",
	                                "Lily and Ben went to the park"};
	static const struct kv_geom geoms[] = {
	        {0, true}, {1, false}, {7, false}, {16, false}, {200, false}};
	struct out *ref = calloc(3, sizeof(*ref)), *o = calloc(3, sizeof(*o));
	struct tok_ids ids[3] = {{0}};

	T_TRUE(ref && o);
	for (int f32 = 0; f32 < 2; f32++) {
		for (size_t g = 0; g < sizeof(geoms) / sizeof(geoms[0]); g++) {
			struct eng e;
			struct out *w = g == 0 ? ref : o;
			struct sched_job jobs[3];
			T_TRUE(eng_open_kv(&e, t_path("models/stories260K-Q8_0.gguf"), 3, 200, 5,
			                   f32, geoms[g]));
			T_EQ(e.x->kv_block_tokens, geoms[g].slots ? 0 : geoms[g].block_tokens);
			T_EQ(e.x->kv_blocks, geoms[g].slots
			                             ? 0
			                             : 3 * ((200 + geoms[g].block_tokens - 1) /
			                                    geoms[g].block_tokens));
			for (int k = 0; k < 3; k++) {
				if (ids[k].n == 0)
					T_OK(tok_encode(e.t, prompts[k], strlen(prompts[k]),
					                TOK_ADD_SPECIAL, &ids[k]));
				jobs[k] = job((uint64_t)k, &ids[k], (uint32_t)(60 - 10 * k), &w[k]);
				T_OK(sched_submit(e.s, &jobs[k], NULL));
			}
			run_all(&e);
			for (int k = 0; g > 0 && k < 3; k++) {
				T_EQ(o[k].n, ref[k].n);
				if (memcmp(o[k].ids, ref[k].ids, o[k].n * sizeof(int32_t)) != 0 ||
				    memcmp(o[k].logits, ref[k].logits, sizeof(o[k].logits)) != 0)
					T_FAIL_("prompt %d, blocks of %u, %s: differs from slots",
					        k, geoms[g].block_tokens, f32 ? "F32" : "F16");
			}
			eng_close(&e);
		}
		printf("%s KV: blocks of 1, 7, 16, 200 tokens give the slots' tokens and logits\n",
		       f32 ? "F32" : "F16");
	}
	for (int k = 0; k < 3; k++)
		tok_ids_fini(&ids[k]);
	free(ref);
	free(o);
}

/* copy_blocks on the CPU backend (paged_copy.c; gpu_model_test runs the same check). */
static void
test_paged_copy(void)
{
	struct eng e;

	T_TRUE(eng_open_kv(&e, t_path("models/stories260K.gguf"), 1, 64, 16, false,
	                   (struct kv_geom){16, false}));
	T_TRUE(paged_copy_check(e.x));
	eng_close(&e);
}

/*
 * A pool smaller than the slots' contexts (a scheduler of 3 blocks of 16 made
 * beside the engine's, over the same backend): a 60-token prompt can never
 * fit and fails with VRAM_OOM; a 40-token one runs until its sequence needs a
 * fourth block (position 48: 9 tokens out) and then fails alone with
 * VRAM_OOM; its blocks come back, so the same job runs the same way again.
 */
static void
test_paged_pool_full(void)
{
	struct eng e;
	struct sched *s = NULL;
	struct out *o = calloc(3, sizeof(*o));
	int32_t toks[60];
	struct orch_errinfo err = {0};

	T_TRUE(o && eng_open_kv(&e, t_path("models/stories260K.gguf"), 2, 64, 16, false,
	                        (struct kv_geom){16, false}));
	struct sched_config sc = {
	        .slots = 2, .n_ctx = 64, .chunk = 16, .kv_blocks = 3, .kv_block_tokens = 16};
	T_OK(sched_new(e.x->ops, e.b, e.t, e.m->hp.n_vocab, &sc, &s, &err));
	toks[0] = 1;
	for (uint32_t i = 1; i < 60; i++)
		toks[i] = 300 + (int32_t)(i % 100);
	struct tok_ids big = {toks, 60, 60}, small = {toks, 40, 40};
	struct sched_job jobs[3] = {job(1, &big, 4, &o[0]), job(2, &small, 30, &o[1]),
	                            job(3, &small, 30, &o[2])};
	for (int k = 0; k < 3; k++) {
		T_OK(sched_submit(s, &jobs[k], NULL));
		while (!sched_idle(s))
			sched_step(s);
		T_EQ(o[k].why, ORCH_FINISH_ERROR);
		T_STREQ(orch_err_wire(o[k].err), "VRAM_OOM");
		T_EQ(o[k].n, k == 0 ? 0 : 9);
	}
	T_TRUE(memcmp(o[1].ids, o[2].ids, 9 * sizeof(int32_t)) == 0);
	sched_free(s);
	free(o);
	eng_close(&e);
}

/*
 * Preemption: a pool of 5 blocks of 16 tokens for two jobs that need 4
 * each (30 + 30 greedy, 20 + 34 sampled at temperature 0.8). The younger
 * is preempted when the older needs its blocks, fed its tokens again once
 * they are free, and decodes on: both jobs' tokens and text equal a run of
 * each alone in a pool that never runs out, with the prefix cache on and
 * off (on: the refeed finds its own blocks still cached). With a watermark
 * of 0.6 (3 blocks kept free at admission while a job runs) the second job
 * waits instead, and nothing is preempted.
 */
static void
test_paged_preemption(void)
{
	struct eng e;
	struct out *ref = calloc(2, sizeof(*ref)), *o = calloc(2, sizeof(*o));
	int32_t toks[30];
	struct orch_errinfo err = {0};

	T_TRUE(ref && o &&
	       eng_open_kv(&e, t_path("models/stories260K.gguf"), 2, 64, 16, false,
	                   (struct kv_geom){16, false}));
	toks[0] = 1;
	for (uint32_t i = 1; i < 30; i++)
		toks[i] = 300 + (int32_t)(i * 7 % 100);
	struct tok_ids pa = {toks, 30, 30}, pb = {toks + 10, 20, 20};
	struct sched_job jobs[2];
	for (int k = 0; k < 2; k++) { /* each alone, in the engine's own pool */
		jobs[k] = k == 0 ? job(1, &pa, 30, &ref[0]) : job(2, &pb, 34, &ref[1]);
		jobs[k].sp.temperature = k == 0 ? 0.0f : 0.8f;
		jobs[k].sp.seed = 7;
		T_OK(sched_submit(e.s, &jobs[k], NULL));
		run_all(&e);
		T_EQ(ref[k].why, ORCH_FINISH_LENGTH);
	}
	for (int mode = 0; mode < 3; mode++) { /* cache off, on, off with a watermark */
		struct sched *s = NULL;
		bool cache = mode == 1;
		struct sched_config sc = {.slots = 2,
		                          .n_ctx = 64,
		                          .chunk = 16,
		                          .kv_blocks = 5,
		                          .kv_block_tokens = 16,
		                          .prefix_cache = cache,
		                          .kv_watermark = mode == 2 ? 0.6 : 0};
		T_OK(sched_new(e.x->ops, e.b, e.t, e.m->hp.n_vocab, &sc, &s, &err));
		jobs[0] = job(1, &pa, 30, &o[0]);
		jobs[1] = job(2, &pb, 34, &o[1]);
		jobs[1].sp.temperature = 0.8f;
		jobs[0].sp.seed = jobs[1].sp.seed = 7;
		T_OK(sched_submit(s, &jobs[0], NULL));
		T_OK(sched_submit(s, &jobs[1], NULL));
		while (!sched_idle(s))
			sched_step(s);
		printf("preemption (prefix cache %s, watermark %.1f): %llu preempted\n",
		       cache ? "on" : "off", sc.kv_watermark,
		       (unsigned long long)sched_preemptions(s));
		/* 3 of the 5 blocks held back: the second job waits for the first to end */
		T_TRUE(mode == 2 ? sched_preemptions(s) == 0 : sched_preemptions(s) >= 1);
		for (int k = 0; k < 2; k++) {
			T_EQ(o[k].why, ORCH_FINISH_LENGTH);
			T_EQ(o[k].n, ref[k].n);
			T_TRUE(memcmp(o[k].ids, ref[k].ids, ref[k].n * sizeof(int32_t)) == 0);
			T_STREQ(o[k].text, ref[k].text);
		}
		sched_free(s);
	}
	free(ref);
	free(o);
	eng_close(&e);
}

/*
 * The prefix cache (blocks of 7): a 60-token prompt, then the same prompt
 * (its first 56 tokens come from the cache), then its first 40 tokens and
 * another ending (35 cached), each alone; then the 60 again beside a
 * different prompt. Tokens and logits equal an engine without the cache,
 * bit for bit; the pool counts the hits. (gpt-oss, with its sliding
 * window: gpt_oss_test.)
 */
static void
test_prefix_cache(void)
{
	static const uint32_t hits[] = {0, 56, 35, 56};
	struct eng on, off;
	struct out *o = calloc(2, sizeof(*o));
	int32_t toks[60], other[40];
	struct kvb_stats st;

	T_TRUE(o && eng_open_kv(&off, t_path("models/stories260K.gguf"), 2, 200, 5, false,
	                        (struct kv_geom){7, false}));
	struct engine_config cfg = {.model_path = t_path("models/stories260K.gguf"),
	                            .ops = &be_cpu_ops,
	                            .slots = 2,
	                            .n_ctx = 200,
	                            .chunk = 5,
	                            .threads = 2,
	                            .kv_block_tokens = 7,
	                            .kv_prefix_cache = true};
	T_OK(engine_open(&cfg, &on.x, NULL));
	on = (struct eng){on.x, &on.x->m, on.x->mt.tok, on.x->b, on.x->s};
	T_TRUE(on.x->kv_prefix_cache);
	toks[0] = other[0] = 1;
	for (uint32_t i = 1; i < 60; i++)
		toks[i] = 300 + (int32_t)(i * 7 % 100);
	for (uint32_t i = 1; i < 40; i++)
		other[i] = 450 + (int32_t)i;
	struct tok_ids p[4] = {{toks, 60, 60}, {toks, 60, 60}, {toks, 40, 40}, {toks, 60, 60}};
	int32_t mixed[48];
	memcpy(mixed, toks, 40 * sizeof(int32_t));
	for (uint32_t i = 40; i < 48; i++)
		mixed[i] = 200 + (int32_t)i;
	p[2] = (struct tok_ids){mixed, 48, 48};
	uint64_t hit0 = 0;
	for (int k = 0; k < 4; k++) {
		struct tok_ids q = {other, 40, 40};
		struct sched_job a = job(1, &p[k], 20, &o[0]), b = job(2, &q, 10, &o[1]);
		T_OK(sched_submit(off.s, &a, NULL));
		run_all(&off);
		struct out ref = o[0];
		a = job(1, &p[k], 20, &o[0]);
		T_OK(sched_submit(on.s, &a, NULL));
		if (k == 3)
			T_OK(sched_submit(on.s, &b, NULL));
		run_all(&on);
		T_TRUE(sched_kv_stats(on.s, &st));
		T_EQ(st.hit_tokens - hit0, hits[k] + 0u);
		hit0 = st.hit_tokens;
		T_EQ(o[0].n, ref.n);
		if (memcmp(o[0].ids, ref.ids, ref.n * sizeof(int32_t)) != 0 ||
		    memcmp(o[0].logits, ref.logits, sizeof(ref.logits)) != 0)
			T_FAIL_("prompt %d: the prefix cache changed the result", k);
	}
	printf("prefix cache: %llu of %llu prompt tokens from the cache, results unchanged\n",
	       (unsigned long long)st.hit_tokens, (unsigned long long)st.query_tokens);
	free(o);
	eng_close(&on);
	eng_close(&off);
}

/* The CPU backend, but its forward fails while forward_fails is set. */
static bool forward_fails;

static orch_err
failing_forward(struct be_model *b, const struct be_seq *seqs, uint32_t n, const float **ret_logits,
                struct orch_errinfo *reterr)
{
	if (forward_fails)
		return orch_errf(reterr, ORCH_ECUDA, "injected forward failure");
	return be_cpu_ops.forward(b, seqs, n, ret_logits, reterr);
}

/*
 * A failed step leaves nothing in the prefix cache: appending its tokens
 * keyed the block they fill before the forward that was to compute it ran.
 * The prompt again (40 tokens, blocks of 16) computes everything and gives
 * what it would have; once computed, its two full blocks are cached.
 */
static void
test_prefix_cache_failed_step(void)
{
	struct eng e;
	struct sched *s = NULL;
	struct be_ops failing = be_cpu_ops;
	struct out *o = calloc(2, sizeof(*o));
	int32_t toks[40];

	failing.forward = failing_forward;
	T_TRUE(o && eng_open_kv(&e, t_path("models/stories260K.gguf"), 1, 64, 16, false,
	                        (struct kv_geom){16, false}));
	struct sched_config sc = {.slots = 1,
	                          .n_ctx = 64,
	                          .chunk = 16,
	                          .kv_blocks = 4,
	                          .kv_block_tokens = 16,
	                          .prefix_cache = true};
	T_OK(sched_new(&failing, e.b, e.t, e.m->hp.n_vocab, &sc, &s, NULL));
	toks[0] = 1;
	for (uint32_t i = 1; i < 40; i++)
		toks[i] = 300 + (int32_t)(i * 11 % 100);
	struct tok_ids p = {toks, 40, 40};
	struct sched_job a = job(1, &p, 8, &o[0]);
	forward_fails = true;
	T_OK(sched_submit(s, &a, NULL));
	while (!sched_idle(s))
		sched_step(s);
	T_EQ(o[0].why, ORCH_FINISH_ERROR);
	forward_fails = false;
	for (int k = 0; k < 2; k++) {
		a = job(2 + (uint64_t)k, &p, 8, &o[k]);
		T_OK(sched_submit(s, &a, NULL));
		while (!sched_idle(s))
			sched_step(s);
		T_EQ(o[k].why, ORCH_FINISH_LENGTH);
		T_EQ(a.cached_tokens, k == 0 ? 0u : 32u);
	}
	T_TRUE(o[0].n == 8 && memcmp(o[0].ids, o[1].ids, 8 * sizeof(int32_t)) == 0);
	sched_free(s);
	free(o);
	eng_close(&e);
}

/* A stop string spanning two tokens ends the text before it; it is never emitted. */
static void
test_stop_strings(void)
{
	struct eng e;
	struct tok_ids ids = {0};
	struct out *o = calloc(1, sizeof(*o));
	static const char *const stops[] = {"girl na", "zzz"};

	T_TRUE(o && eng_open(&e, t_path("models/stories260K.gguf"), 1, 256, 64, false));
	T_OK(tok_encode(e.t, "Once upon a time", 16, TOK_ADD_SPECIAL, &ids));
	struct sched_job j = job(1, &ids, 64, o);
	j.stops = stops;
	j.n_stops = 2;
	T_OK(sched_submit(e.s, &j, NULL));
	run_all(&e);
	T_EQ(o->why, ORCH_FINISH_STOP);
	T_STREQ(o->text, ", there was a little ");
	tok_ids_fini(&ids);
	free(o);
	eng_close(&e);
}

static void
test_kv_f32(void)
{
	struct eng a, b;
	struct tok_ids ids = {0};
	struct out *oa = calloc(1, sizeof(*oa)), *ob = calloc(1, sizeof(*ob));

	T_TRUE(oa && ob && eng_open(&a, t_path("models/stories260K.gguf"), 1, 256, 64, false) &&
	       eng_open(&b, t_path("models/stories260K.gguf"), 1, 256, 64, true));
	T_OK(tok_encode(a.t, "Once upon a time", 16, TOK_ADD_SPECIAL, &ids));
	struct sched_job ja = job(1, &ids, 64, oa), jb = job(1, &ids, 64, ob);
	T_OK(sched_submit(a.s, &ja, NULL));
	T_OK(sched_submit(b.s, &jb, NULL));
	run_all(&a);
	run_all(&b);
	T_EQ(oa->n, ob->n);
	T_TRUE(memcmp(oa->ids, ob->ids, oa->n * sizeof(int32_t)) == 0);
	struct be_memory mem;
	be_cpu_ops.memory(b.b, &mem);
	T_TRUE(mem.used >= mem.needed / 2 && mem.needed > 0);
	T_EQ(mem.weights + mem.kv + mem.scratch, mem.used);
	T_TRUE(mem.weights > 0 && mem.kv > 0 && mem.scratch > 0);
	tok_ids_fini(&ids);
	free(oa);
	free(ob);
	eng_close(&a);
	eng_close(&b);
}

/* Synthesized tiny-qwen2 and tiny-phi3: finite logits, identical across two runs. */
static void
test_tiny_models(void)
{
	static const char *presets[] = {"tiny-qwen2", "tiny-phi3", "tiny-llama"};
	char path[64];

	snprintf(path, sizeof(path), "/tmp/orch-engine-test-%d.gguf", (int)getpid());
	for (int k = 0; k < 3; k++) {
		struct synth_opts so = {.preset = presets[k],
		                        .quant = "Q4_K_M",
		                        .vocab_path = NULL,
		                        .layers = 0,
		                        .seed = 7,
		                        .out = path};
		struct out *o[2] = {calloc(1, sizeof(struct out)), calloc(1, sizeof(struct out))};
		int32_t prompt[6] = {1, 300, 301, 302, 303, 304};
		struct tok_ids p = {prompt, 6, 6};
		T_OK(synth_write(&so, NULL));
		for (int run = 0; run < 2; run++) {
			struct eng e;
			T_TRUE(o[run] && eng_open(&e, path, 1, 64, 16, false));
			struct sched_job j = job(1, &p, 16, o[run]);
			j.sp = samp_defaults(); /* sampled, with a fixed seed */
			j.sp.seed = 11;
			T_OK(sched_submit(e.s, &j, NULL));
			run_all(&e);
			T_TRUE(o[run]->why == ORCH_FINISH_LENGTH || o[run]->why == ORCH_FINISH_EOS);
			for (int s = 0; s < 2; s++)
				for (uint32_t i = 0; o[run]->have_logits[s] && i < o[run]->n_vocab;
				     i++)
					if (!isfinite(o[run]->logits[s][i]))
						T_FAIL_("%s: non-finite logit", presets[k]);
			eng_close(&e);
		}
		T_EQ(o[0]->n, o[1]->n);
		T_TRUE(memcmp(o[0]->ids, o[1]->ids, o[0]->n * sizeof(int32_t)) == 0);
		T_TRUE(memcmp(o[0]->logits[0], o[1]->logits[0], o[0]->n_vocab * sizeof(float)) ==
		       0);
		for (int run = 0; run < 2; run++) {
			free(o[run]);
		}
	}
	unlink(path);
}

static void
test_philox_and_sampler(void)
{
	static const uint32_t zero[4] = {0}, zkey[2] = {0}, ones[4] = {~0u, ~0u, ~0u, ~0u},
	                      okey[2] = {~0u, ~0u};
	uint32_t out[4];
	struct samp_cand work[8];
	float lg[8] = {1, 5, 3, 5, -2, 0, 2, 4};
	struct samp_params p = samp_defaults();

	samp_philox(zero, zkey, out); /* Random123 known answers */
	T_EQ(out[0], 0x6627e8d5u);
	T_EQ(out[3], 0x9b00dbd8u);
	samp_philox(ones, okey, out);
	T_EQ(out[0], 0x408f276du);
	T_EQ(out[3], 0x6d5451fdu);
	p.temperature = 0;
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 0, work), 1); /* first maximum */
	p.temperature = 1;
	p.top_k = 1;
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 0, work), 1); /* top-k 1 = greedy, ties by id */
	int32_t hist[1] = {1};
	p.repeat_penalty = 2.0f;
	T_EQ(samp_sample(&p, lg, 8, hist, 1, 0, work), 3); /* 5 / 2 < 5 */
	p = samp_defaults();
	p.min_p = 0.5f;
	int counts[8] = {0};
	for (uint64_t i = 0; i < 4000; i++)
		counts[samp_sample(&p, lg, 8, NULL, 0, i, work)]++;
	T_TRUE(counts[0] == 0 && counts[2] == 0 && counts[7] == 0); /* below min-p */
	T_TRUE(counts[1] > 1700 && counts[3] > 1700); /* two equal logits, ~half each */
	p.seed = 99;
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 17, work), samp_sample(&p, lg, 8, NULL, 0, 17, work));
}

int
main(void)
{
	T_RUN(test_golden_f32);
	T_RUN(test_golden_q8_0);
	T_RUN(test_golden_q4_0);
	T_RUN(test_prompt_lengths);
	T_RUN(test_batch_independence);
	T_RUN(test_paged_geometries);
	T_RUN(test_paged_copy);
	T_RUN(test_paged_pool_full);
	T_RUN(test_paged_preemption);
	T_RUN(test_prefix_cache);
	T_RUN(test_prefix_cache_failed_step);
	T_RUN(test_stop_strings);
	T_RUN(test_kv_f32);
	T_RUN(test_tiny_models);
	T_RUN(test_philox_and_sampler);
	return t_done();
}
