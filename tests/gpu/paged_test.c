/*
 * paged_test.c - the CUDA backend's paged KV cache end to end on cuda:0
 * (issue 19), through the scheduler, against the backend's own slot layout:
 * - stories260K Q8_0, three prompts batched in chunks of 5 (prefill chunks
 *   and decode tokens cross block boundaries at odd places): blocks of 1, 7,
 *   16 and 200 give the slots' greedy tokens and logits of steps 0 and 1 bit
 *   for bit, sampled on the host and on the device, with and without graphs;
 * - gpt-oss (MXFP4 experts), 250 greedy tokens, past its 128-token window,
 *   one slot: the sliding-window pool (13 blocks of 16 or 29 of 7, fewer than
 *   the sequence spans, so it runs only if blocks the window left are given
 *   back) gives the slots' tokens (on the simulated device orch-synth's
 *   tiny-gpt-oss, with the same window and MXFP4 experts);
 * - copy_blocks: paged_copy_check, the check the CPU tests make, on both;
 * - the prefix cache: a 60-token prompt twice and then beside another, 48
 *   tokens from the cache each time; in chunks of 5 (every product a
 *   mat-vec) tokens and logits equal the cache-less engine's bit for bit; in
 *   chunks of 64 the rest of the prompt is one cuBLAS product of another
 *   height, so logits are within 1e-3 and tokens equal up to the first step
 *   whose top-1 margin is within twice that (then either may win);
 * - preemption: a pool of 5 blocks of 16 for two jobs that need 4 each
 *   (greedy, and sampled at temperature 0.8): the younger is preempted,
 *   recomputed and decodes on; both jobs' tokens equal each one's alone.
 * - 16 sequences decoding at once (above the mat-vecs' 8 a launch) equal
 *   each one alone: F32 through the bucket-16 graph, Q8_0 eagerly.
 * The helpers are model_util.c's. Exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "engine/kv_blocks.h"
#include "engine/sampler.h"
#include "model_util.h"
#include "t.h"
#include "unit/worker/engine/paged_copy.h"

#define STORIES  "models/stories260K.gguf"
#define STORIES8 "models/stories260K-Q8_0.gguf"
#define OSS      "models/gpt-oss-tiny-mxfp4.gguf"

/* Prompt @k of three (23, 17, 9 tokens) in stories260K's vocabulary. */
static uint32_t
prompt(int k, int32_t *p)
{
	static const uint32_t len[3] = {23, 17, 9};

	p[0] = 1;
	for (uint32_t i = 1; i < len[k]; i++)
		p[i] = 300 + (int32_t)((i * 7 + (uint32_t)k * 13) % 150);
	return len[k];
}

/* The three prompts at once on @e (40 tokens each): logits of 2 steps into lg[k] if @logits. */
static void
three(struct eng *e, bool logits, float *lg[3], struct out *o)
{
	int32_t p[3][32];
	struct sched_job j[3];

	for (int k = 0; k < 3; k++) {
		uint32_t n = prompt(k, p[k]);
		j[k] = mt_job((uint64_t)k + 1, p[k], n, GPU_SIM ? 12 : 40, logits ? lg[k] : NULL, 2,
		              &o[k]);
		T_OK(sched_submit(e->s, &j[k], NULL));
	}
	run_all(e->s);
}

static void
test_geometries(void)
{
	/* 0: slots; the simulated device leaves out 16, which the other tests use */
	static const uint32_t all_bts[] = {0, 1, 7, 16, 200}, sim_bts[] = {0, 1, 7, 200};
	const uint32_t *bts = GPU_SIM ? sim_bts : all_bts;
	const size_t n_bts = GPU_SIM ? 4 : 5;
	uint32_t V = 512;
	struct out *ref = calloc(6, sizeof(*ref)), *o = calloc(6, sizeof(*o));
	float *lr[3], *lo[3];
	struct orch_errinfo err = {0};

	T_TRUE(ref && o);
	for (int k = 0; k < 3; k++) {
		lr[k] = calloc(2ull * V, sizeof(float));
		lo[k] = calloc(2ull * V, sizeof(float));
		T_TRUE(lr[k] && lo[k]);
	}
	for (int graphs = 1; graphs >= 0; graphs--)
		for (size_t g = 0; g < n_bts; g++) {
			struct eng_opts eo = {.n_ctx = 200,
			                      .chunk = 5,
			                      .block_tokens = bts[g],
			                      .kv_slots = !bts[g]};
			struct eng e;
			bool first = graphs && g == 0;
			T_OK(eng_open_opts(&e, &be_cuda_ops, t_path(STORIES8), 3, graphs, &eo,
			                   &err));
			T_EQ(e.x->kv_block_tokens, bts[g]);
			T_EQ(e.m->hp.n_vocab, V);
			struct out *w = first ? ref : o;
			three(&e, true, first ? lr : lo, w);
			three(&e, false, NULL, w + 3);
			for (int k = 0; k < 6 && !first; k++) {
				T_EQ(o[k].err, ORCH_OK);
				T_EQ(o[k].n, ref[k].n);
				if (memcmp(o[k].ids, ref[k].ids, ref[k].n * 4) != 0 ||
				    (k < 3 && memcmp(lo[k], lr[k], 2ull * V * 4) != 0))
					T_FAIL_("%s %u, graphs %s: job %d differs from slots",
					        bts[g] ? "blocks of" : "slots", bts[g],
					        graphs ? "on" : "off", k);
			}
			eng_close(&e);
		}
	printf("stories260K Q8_0: blocks of 1, 7, %s200 give the slots' tokens and logits, "
	       "host and device sampling, graphs on and off\n",
	       GPU_SIM ? "" : "16, ");
	for (int k = 0; k < 3; k++)
		free(lr[k]), free(lo[k]);
	free(ref);
	free(o);
}

/* gpt-oss past its window: the sliding-window pool against the slots' rings. */
static void
test_window(void)
{
	static const int32_t real_p0[4] = {12194, 7045, 261, 1058},
	                     synth_p0[4] = {1, 301, 302, 303};
	/* the simulated device: slots and blocks of 7 (which do not divide the window), and
	 * chunks of 8, so that 160 tokens outgrow the window pool (21 blocks) */
	static const uint32_t bts[] = {0, 16, 7}, sim_bts[] = {0, 7};
	const uint32_t N = GPU_SIM ? 160 : 250, n_g = GPU_SIM ? 2 : 3;
	const int32_t *p0 = real_p0;
	const char *path = GPU_SIM ? NULL : t_path_opt(OSS); /* the simulated device synthesizes */
	char synth[256] = "";
	struct out *o = calloc(3, sizeof(*o));
	struct orch_errinfo err = {0};

	/* the simulated device: orch-synth's tiny-gpt-oss (the same 128-token window and
	 * MXFP4 experts, a 512-token vocabulary) instead of the real file, whose
	 * 201,088-row output matrix costs a second a token there */
	if (GPU_SIM) {
		T_OK(synth_tmp("tiny-gpt-oss", "F32", 0, "oss-window", synth, sizeof(synth)));
		path = synth;
		p0 = synth_p0;
	} else if (path == NULL) { /* a clone alone: t_path_opt said what is left out */
		free(o);
		return;
	} else if (getenv("ORCH_GPU_SUBSET") != NULL && access(path, R_OK) != 0) {
		printf("%s: not carried in this run (ORCH_GPU_SUBSET), not checked\n", OSS);
		free(o);
		return;
	}
	T_TRUE(o != NULL);
	for (uint32_t g = 0; g < n_g; g++) {
		uint32_t bt = GPU_SIM ? sim_bts[g] : bts[g];
		struct eng_opts eo = {
		        .chunk = GPU_SIM ? 8 : 0, .block_tokens = bt, .kv_slots = !bt};
		struct eng e;
		T_OK(eng_open_opts(&e, &be_cuda_ops, path, 1, true, &eo, &err));
		/* without drops the sequence would need more window blocks than the pool has */
		T_TRUE(bt == 0 ||
		       (e.x->kv_swa_blocks > 0 && e.x->kv_swa_blocks < (4 + N + bt - 1) / bt));
		T_OK(generate(&e, p0, 4, N, NULL, 0, &o[g]));
		T_EQ(o[g].err, ORCH_OK);
		T_EQ(o[g].n, N);
		if (g > 0 && memcmp(o[g].ids, o[0].ids, N * 4) != 0)
			T_FAIL_("gpt-oss, blocks of %u: tokens differ from the slots' rings", bt);
		if (g == 1)
			T_TRUE(paged_copy_check(e.x));
		eng_close(&e);
	}
	printf("%s: %u tokens past the window, paged (blocks of %s) as slots\n",
	       GPU_SIM ? "tiny-gpt-oss (synthesized)" : "gpt-oss", N, GPU_SIM ? "7" : "16, 7");
	free(o);
	if (synth[0])
		unlink(synth);
}

static void
test_copy(void)
{
	struct eng_opts eo = {.n_ctx = 64, .chunk = 16};
	struct eng e;
	struct orch_errinfo err = {0};

	T_OK(eng_open_opts(&e, &be_cuda_ops, t_path(STORIES), 1, true, &eo, &err));
	T_TRUE(paged_copy_check(e.x));
	/* closed with copies still queued on its stream (copy_blocks does not wait): the
	 * backend's free waits for them before it frees the pool they read. CUDA's cudaFree
	 * only "may" synchronize; the simulated device's does not, and reports a copy that
	 * runs after the free. */
	T_OK(e.ops->copy_blocks(e.b, false, 0, 1, 16, &err));
	eng_close(&e);
}

/* The prefix cache in chunks of @chunk: hits, and results against the cache off (@bound 0:
 * bit for bit). */
static void
prefix_run(uint32_t chunk, double bound)
{
	static const uint32_t hits[] = {0, 48, 48};
	struct eng on, off;
	struct eng_opts eo = {.n_ctx = 200, .chunk = chunk, .prefix_cache = true};
	struct orch_errinfo err = {0};
	struct out *o = calloc(3, sizeof(*o));
	float *lr = calloc(20 * 512, sizeof(float)), *lo = calloc(20 * 512, sizeof(float));
	int32_t toks[60], other[40];
	struct kvb_stats st;
	uint64_t hit0 = 0;
	double worst = 0;

	T_TRUE(o && lr && lo);
	T_OK(eng_open_opts(&on, &be_cuda_ops, t_path(STORIES), 2, true, &eo, &err));
	eo.prefix_cache = false;
	T_OK(eng_open_opts(&off, &be_cuda_ops, t_path(STORIES), 2, true, &eo, &err));
	T_TRUE(on.x->kv_prefix_cache && !off.x->kv_prefix_cache);
	toks[0] = other[0] = 1;
	for (uint32_t i = 1; i < 60; i++)
		toks[i] = 300 + (int32_t)(i * 7 % 100);
	for (uint32_t i = 1; i < 40; i++)
		other[i] = 450 + (int32_t)i;
	T_OK(generate(&off, toks, 60, 20, lr, 20, &o[0]));
	uint32_t upto = o[0].n; /* tokens compared: up to the first near-tie */
	for (uint32_t step = 0; step < o[0].n && bound > 0; step++)
		if (top_margin(lr + step * 512, 512, NULL) <= 2 * bound) {
			upto = step;
			break;
		}
	for (int k = 0; k < 3; k++) {
		struct sched_job a = mt_job(1, toks, 60, 20, lo, 20, &o[1]);
		struct sched_job b = mt_job(2, other, 40, 10, NULL, 0, &o[2]);
		T_OK(sched_submit(on.s, &a, NULL));
		if (k == 2)
			T_OK(sched_submit(on.s, &b, NULL));
		run_all(on.s);
		T_TRUE(sched_kv_stats(on.s, &st));
		T_EQ(st.hit_tokens - hit0, hits[k] + 0u);
		hit0 = st.hit_tokens;
		T_TRUE(bound > 0 || o[1].n == o[0].n);
		if (memcmp(o[1].ids, o[0].ids, upto * 4) != 0)
			T_FAIL_("chunks of %u, run %d: the prefix cache changed the tokens", chunk,
			        k);
		/* the first step's logits; with tokens equal, every step's */
		bool same = o[1].n == o[0].n && memcmp(o[1].ids, o[0].ids, o[0].n * 4) == 0;
		double d = max_rel(lo, lr, (uint64_t)(same ? o[0].n : 1) * 512);
		worst = d > worst ? d : worst;
	}
	printf("prefix cache, chunks of %u: %llu of %llu prompt tokens from the cache, %u tokens "
	       "compared and equal, logits max rel %.2e (bound %.0e)\n",
	       chunk, (unsigned long long)st.hit_tokens, (unsigned long long)st.query_tokens, upto,
	       worst, bound);
	T_TRUE(worst <= bound);
	eng_close(&on);
	eng_close(&off);
	free(o), free(lr), free(lo);
}

static void
test_prefix_cache(void)
{
	prefix_run(5, 0);
	prefix_run(64, 1e-3);
}

/*
 * Decode batches above the mat-vecs' 8 (cuk_mmv* take 8 tokens a launch): 16
 * sequences decoding together, through the bucket-16 graph and eagerly, give
 * each one's tokens and step-0/1 logits alone bit for bit, on F32 (float
 * mat-vecs, the bucket-16 graph) and Q8_0 (integer dots, eager) weights.
 */
static void
test_batch16(void)
{
	static const char *const models[] = {STORIES, STORIES8};
	enum { N = 16, GEN = 5 };
	struct eng_opts eo = {.n_ctx = 64, .chunk = 4}; /* prompts of 5-12: chunks of 4 */
	struct out *alone = calloc(N, sizeof(*alone)), *o = calloc(N, sizeof(*o));
	float *la = calloc((size_t)N * 2 * 512, sizeof(float));
	float *lo = calloc((size_t)N * 2 * 512, sizeof(float));
	struct orch_errinfo err = {0};
	int32_t p[N][12];

	T_TRUE(alone && o && la && lo);
	for (int k = 0; k < N; k++) {
		p[k][0] = 1;
		for (int i = 1; i < 12; i++)
			p[k][i] = 300 + (int32_t)((i * 11 + k * 17) % 180);
	}
	for (size_t m = 0; m < 2; m++) {
		int graphs = m == 0; /* F32 through the bucket-16 graph, Q8_0 eagerly */
		struct eng e;
		struct sched_job j[N];
		T_OK(eng_open_opts(&e, &be_cuda_ops, t_path(models[m]), N, graphs, &eo, &err));
		for (int k = 0; k < N; k++) { /* each alone */
			j[k] = mt_job((uint64_t)k + 1, p[k], 5 + (uint32_t)k % 8, GEN,
			              la + (size_t)k * 2 * 512, 2, &alone[k]);
			T_OK(sched_submit(e.s, &j[k], NULL));
			run_all(e.s);
		}
		for (int k = 0; k < N; k++) { /* all at once */
			j[k] = mt_job((uint64_t)k + 1, p[k], 5 + (uint32_t)k % 8, GEN,
			              lo + (size_t)k * 2 * 512, 2, &o[k]);
			T_OK(sched_submit(e.s, &j[k], NULL));
		}
		run_all(e.s);
		for (int k = 0; k < N; k++) {
			T_EQ(o[k].err, ORCH_OK);
			T_EQ(o[k].n, alone[k].n);
			if (memcmp(o[k].ids, alone[k].ids, alone[k].n * 4) != 0 ||
			    memcmp(lo + (size_t)k * 1024, la + (size_t)k * 1024, 1024 * 4) != 0)
				T_FAIL_("%s, graphs %s: sequence %d of 16 differs from alone",
				        models[m], graphs ? "on" : "off", k);
		}
		eng_close(&e);
	}
	printf("16 sequences decoding at once (F32 with graphs, Q8_0 without): each one's "
	       "tokens and logits alone, bit for bit\n");
	free(alone), free(o), free(la), free(lo);
}

/* Preemption in a pool of 5 blocks made beside the engine's (as engine_test's, on the device). */
static void
test_preemption(void)
{
	struct eng_opts eo = {.n_ctx = 64, .chunk = 8}; /* every product a mat-vec */
	struct eng e;
	struct out *ref = calloc(2, sizeof(*ref)), *o = calloc(2, sizeof(*o));
	struct orch_errinfo err = {0};
	int32_t toks[30];
	struct sched_job jobs[2];

	T_TRUE(ref && o);
	T_OK(eng_open_opts(&e, &be_cuda_ops, t_path(STORIES), 2, true, &eo, &err));
	toks[0] = 1;
	for (uint32_t i = 1; i < 30; i++)
		toks[i] = 300 + (int32_t)(i * 7 % 100);
	for (int pass = 0; pass < 2; pass++) {
		struct sched *s = e.s;
		struct out *w = pass == 0 ? ref : o;
		if (pass == 1) {
			struct sched_config sc = {.slots = 2,
			                          .n_ctx = 64,
			                          .chunk = 8,
			                          .kv_blocks = 5,
			                          .kv_block_tokens = 16};
			T_OK(sched_new(e.ops, e.b, e.t, e.m->hp.n_vocab, &sc, &s, &err));
		}
		jobs[0] = mt_job(1, toks, 30, 30, NULL, 0, &w[0]);
		jobs[1] = mt_job(2, toks + 10, 20, 34, NULL, 0, &w[1]);
		jobs[1].sp.temperature = 0.8f;
		jobs[0].sp.seed = jobs[1].sp.seed = 7;
		for (int k = 0; k < 2; k++) {
			T_OK(sched_submit(s, &jobs[k], NULL));
			if (pass == 0) /* each alone */
				run_all(s);
		}
		run_all(s);
		if (pass == 1) {
			printf("preemption on cuda:0: %llu preempted\n",
			       (unsigned long long)sched_preemptions(s));
			T_TRUE(sched_preemptions(s) >= 1);
			sched_free(s);
		}
	}
	for (int k = 0; k < 2; k++) {
		T_EQ(o[k].err, ORCH_OK);
		T_EQ(o[k].n, ref[k].n);
		if (memcmp(o[k].ids, ref[k].ids, ref[k].n * 4) != 0)
			T_FAIL_("job %d: preempted and recomputed, its tokens differ from alone",
			        k);
	}
	eng_close(&e);
	free(ref);
	free(o);
}

int
main(void)
{
	int count = 0;

	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
		T_SKIP("no CUDA device");
	T_RUN(test_geometries);
	T_RUN(test_window);
	T_RUN(test_copy);
	T_RUN(test_prefix_cache);
	T_RUN(test_preemption);
	T_RUN(test_batch16);
	return t_done();
}
