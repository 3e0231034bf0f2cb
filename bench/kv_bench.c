/*
 * kv_bench - the paged KV cache, the prefix cache and preemption (issue 19)
 * at the engine level: each benchmark side by side in one run, greedy, the
 * prompts token ids from a fixed LCG (no text).
 *
 *   kv_bench MODEL.gguf [THREADS] [--scale X] [--dist uniform|log] [--only 1|2|3]
 *            [--watermark F]
 *
 * 1. Shared system prompt: a 1,000-token prefix and 32 different 32-token
 *    user turns, one request after the other (8 tokens each), prefix cache
 *    off and on: TTFT (submit -> first on_token, monotonic clock), prompt
 *    tokens computed (n_prompt - cached_tokens), and the tokens generated,
 *    which must be identical.
 * 2. Mixed lengths at the same KV memory: 48 requests, prompts 16-2,000 and
 *    outputs 16-512 tokens (times --scale; uniform, or log-uniform with
 *    --dist log), all submitted at once. A: 4 slots of the longest request;
 *    B: paged, a pool of the same bytes, up to 16 running, prefix cache off
 *    (this one is about paging, not sharing: the prompts share nothing);
 *    C: B with the prefix cache, which keeps a preempted job's full blocks.
 *    B and C keep --watermark F of the pool free at admission while jobs
 *    run (default: the worker's, ENGINE_DEFAULT_KV_WATERMARK; 0: none).
 *    Running sequences are sampled after every step.
 * 3. Multi-turn chat: 8 turns, each request the whole history (earlier
 *    prompts and answers) plus a new 40-token user turn, 64 tokens out,
 *    prefix cache off and on; the answers must be identical.
 *
 * Exit status 1 when the tokens with the prefix cache differ from those
 * without (benchmarks 1 and 3) or a job fails; the speed goals are printed,
 * never enforced.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/parse.h"
#include "engine/engine.h"
#include "engine/scheduler.h"
#include "gguf/model_info.h"

#define SYS_TOKENS   1000 /* benchmark 1 */
#define TURN_TOKENS  32
#define SHARED_REQS  32
#define SHARED_OUT   8
#define MIX_REQS     48 /* benchmark 2 */
#define MIX_SLOTS    4  /* A's slots; B runs up to MIX_PAGED × as many */
#define MIX_PAGED    4
#define MIX_CONFIGS  3
#define CHAT_TURNS   8 /* benchmark 3 */
#define CHAT_USER    40
#define CHAT_OUT     64
#define CHAT_TOKENS  (CHAT_TURNS * (CHAT_USER + CHAT_OUT))
#define BLOCK_TOKENS 16

struct args {
	const char *path;
	uint32_t threads;
	double scale;
	bool dist_log;
	uint32_t only;    /* 0: all */
	double watermark; /* engine_config.kv_watermark of the paged configurations */
};

/* One request: its prompt, what it generated and when. */
struct req {
	struct sched_job j;
	int32_t *prompt; /* owned */
	uint32_t n_prompt, max_tokens;
	int32_t *out; /* [max_tokens], owned */
	uint32_t n_out;
	uint64_t t_submit_ns, t_first_ns, t_end_ns;
	uint32_t cached; /* j.cached_tokens at on_end */
	enum orch_finish why;
	orch_err err;
	bool ended;
};

static void
req_token(void *ctx, struct sched_job *j, uint32_t index, int32_t id, const char *text, size_t n)
{
	struct req *r = ctx;

	(void)j;
	(void)index;
	(void)text;
	(void)n;
	if (r->t_first_ns == 0)
		r->t_first_ns = orch_mono_ns();
	if (id >= 0 && r->n_out < r->max_tokens)
		r->out[r->n_out++] = id;
}

static void
req_end(void *ctx, struct sched_job *j, enum orch_finish why, orch_err err, const char *msg)
{
	struct req *r = ctx;

	r->t_end_ns = orch_mono_ns();
	if (r->t_first_ns == 0) /* no token (an end-of-generation token first) */
		r->t_first_ns = r->t_end_ns;
	r->cached = j->cached_tokens;
	r->why = why;
	r->err = err;
	r->ended = true;
	if (why == ORCH_FINISH_ERROR)
		fprintf(stderr, "kv_bench: job %llu failed: %s\n", (unsigned long long)j->id,
		        msg ? msg : "?");
}

static const struct sched_job_ops req_ops = {
        .on_token = req_token, .on_logits = NULL, .on_end = req_end};

static uint32_t
lcg(uint64_t *st)
{
	*st = *st * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*st >> 33);
}

/* @n token ids from stream @seed, away from both ends of the vocabulary (special tokens). */
static void
fill_tokens(int32_t *dst, uint32_t n, uint64_t seed, uint32_t n_vocab)
{
	uint32_t lo = n_vocab / 64, span = n_vocab - n_vocab / 10 - lo;
	uint64_t st = seed * 0x9e3779b97f4a7c15ull + 1;

	for (uint32_t i = 0; i < n; i++)
		dst[i] = (int32_t)(lo + lcg(&st) % span);
}

/* @r asks for @prompt (taken over) and @max_tokens; false when out of memory. */
static bool
req_init(struct req *r, int32_t *prompt, uint32_t n_prompt, uint32_t max_tokens)
{
	*r = (struct req){.prompt = prompt, .n_prompt = n_prompt, .max_tokens = max_tokens};
	r->out = calloc(max_tokens, sizeof(*r->out));
	return prompt != NULL && r->out != NULL;
}

static void
req_fini(struct req *r)
{
	free(r->prompt);
	free(r->out);
	r->prompt = r->out = NULL;
}

static orch_err
req_submit(struct engine *e, struct req *r, uint64_t id)
{
	struct orch_errinfo err = {0};
	orch_err rv;

	r->j = (struct sched_job){.id = id,
	                          .prompt = r->prompt,
	                          .n_prompt = r->n_prompt,
	                          .max_tokens = r->max_tokens,
	                          .ops = &req_ops,
	                          .ctx = r};
	r->j.sp = samp_defaults();
	r->j.sp.temperature = 0.0f;
	r->t_submit_ns = orch_mono_ns();
	if ((rv = sched_submit(e->s, &r->j, &err)) != ORCH_OK)
		fprintf(stderr, "kv_bench: submit: %s\n", err.msg);
	return rv;
}

/* Run @r alone on @e to its end; false when it failed. */
static bool
req_run_alone(struct engine *e, struct req *r, uint64_t id)
{
	if (req_submit(e, r, id) != ORCH_OK)
		return false;
	while (!sched_idle(e->s))
		sched_step(e->s);
	return r->ended && r->why != ORCH_FINISH_ERROR;
}

static double
ttft_ms(const struct req *r)
{
	return (double)(r->t_first_ns - r->t_submit_ns) / 1e6;
}

static bool
same_tokens(const struct req *a, const struct req *b)
{
	return a->n_out == b->n_out && memcmp(a->out, b->out, a->n_out * sizeof(*a->out)) == 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * An engine on @a->path: @slots running at most, @n_ctx positions each;
 * @pool_bytes > 0: a paged pool of that budget; @slot_kv: the slot design.
 */
static struct engine *
open_engine(const struct args *a, uint32_t slots, uint32_t n_ctx, bool slot_kv, bool cache,
            uint64_t pool_bytes)
{
	struct engine_config cfg = {.model_path = a->path,
	                            .ops = &be_cpu_ops,
	                            .slots = slots,
	                            .n_ctx = n_ctx,
	                            .threads = a->threads,
	                            .kv_block_tokens = BLOCK_TOKENS,
	                            .kv_cache_bytes = pool_bytes,
	                            .kv_prefix_cache = cache,
	                            .kv_watermark = a->watermark,
	                            .kv_slots = slot_kv};
	struct orch_errinfo err = {0};
	struct engine *e = NULL;

	if (engine_open(&cfg, &e, &err) != ORCH_OK) {
		fprintf(stderr, "kv_bench: %s: %s\n", a->path, err.msg);
		return NULL;
	}
	if (!slot_kv && e->kv_blocks == 0) {
		fprintf(stderr, "kv_bench: the backend does not page\n");
		engine_close(e);
		return NULL;
	}
	return e;
}

/* ---- 1. shared system prompt ---- */

/* The 32 requests, one after the other, on an engine with the prefix cache @cache. */
static bool
shared_run(const struct args *a, bool cache, struct req *r)
{
	struct engine *e = open_engine(a, 4, 2048, false, cache, 0);
	uint32_t n = SYS_TOKENS + TURN_TOKENS;
	bool ok = e != NULL;

	for (uint32_t i = 0; i < SHARED_REQS && ok; i++) {
		int32_t *p = malloc(n * sizeof(*p));
		ok = req_init(&r[i], p, n, SHARED_OUT);
		if (!ok)
			break;
		fill_tokens(p, SYS_TOKENS, 1, e->m.hp.n_vocab);
		fill_tokens(p + SYS_TOKENS, TURN_TOKENS, 100 + i, e->m.hp.n_vocab);
		ok = req_run_alone(e, &r[i], i + 1);
	}
	engine_close(e);
	return ok;
}

static void
shared_report(struct req r[2][SHARED_REQS], bool same)
{
	double med[2], t1[2], v[SHARED_REQS];
	uint64_t computed[2] = {0, 0}, cached[2] = {0, 0};

	for (int c = 0; c < 2; c++) {
		for (uint32_t i = 0; i < SHARED_REQS; i++) {
			v[i] = ttft_ms(&r[c][i]);
			computed[c] += r[c][i].n_prompt - r[c][i].cached;
			cached[c] += r[c][i].cached;
		}
		t1[c] = v[0];
		med[c] = median(v + 1, SHARED_REQS - 1);
	}
	printf("\n### 1. Shared system prompt (%u + %u tokens, %u requests, %u out)\n\n",
	       SYS_TOKENS, TURN_TOKENS, SHARED_REQS, SHARED_OUT);
	printf("| | cache off | cache on | off / on |\n|---|---:|---:|---:|\n");
	printf("| TTFT, request 1 (ms) | %.1f | %.1f | %.2f× |\n", t1[0], t1[1], t1[0] / t1[1]);
	printf("| TTFT, median of 2..%u (ms) | %.1f | %.1f | **%.1f×** |\n", SHARED_REQS, med[0],
	       med[1], med[0] / med[1]);
	printf("| prompt tokens computed (all) | %llu | %llu | %.1f× |\n",
	       (unsigned long long)computed[0], (unsigned long long)computed[1],
	       (double)computed[0] / (double)computed[1]);
	printf("| prompt tokens cached (all) | %llu | %llu | |\n\n", (unsigned long long)cached[0],
	       (unsigned long long)cached[1]);
	printf("Goal: median TTFT of 2..%u at least 5× lower with the cache: %s (%.1f×). "
	       "Computed with the cache: %llu, ideal %u + %u × %u = %u.\n",
	       SHARED_REQS, med[0] >= 5 * med[1] ? "met" : "NOT met", med[0] / med[1],
	       (unsigned long long)computed[1], SYS_TOKENS, SHARED_REQS, TURN_TOKENS,
	       SYS_TOKENS + SHARED_REQS * TURN_TOKENS);
	printf("Generated tokens with and without the cache: %s\n",
	       same ? "identical (all 32 requests)" : "DIFFERENT");
}

static int
bench_shared(const struct args *a)
{
	static struct req r[2][SHARED_REQS];
	bool ok = true, same = true;

	for (int c = 0; c < 2 && ok; c++)
		ok = shared_run(a, c == 1, r[c]);
	for (uint32_t i = 0; i < SHARED_REQS && ok; i++) {
		if (same_tokens(&r[0][i], &r[1][i]))
			continue;
		if (same)
			fprintf(stderr, "kv_bench: request %u: tokens differ with the cache\n",
			        i + 1);
		same = false;
	}
	if (ok)
		shared_report(r, same);
	for (int c = 0; c < 2; c++)
		for (uint32_t i = 0; i < SHARED_REQS; i++)
			req_fini(&r[c][i]);
	return ok && same ? 0 : 1;
}

/* ---- 2. mixed lengths at the same KV memory ---- */

struct mix_stats {
	uint32_t peak;
	double mean;        /* running sequences, weighted by each step's time */
	double mean_queued; /* the same over the steps after which a request still waited */
	uint64_t gen;       /* tokens generated */
	uint64_t fed;       /* prompt tokens fed, recomputation after preemption included */
	double wall_s;      /* first submission to idle */
	uint64_t preempt;   /* sched_preemptions */
	uint32_t steps, failed;
};

/* A length in [@lo, @hi] from @st: uniform, or uniform in log(length). */
static uint32_t
draw_len(uint64_t *st, uint32_t lo, uint32_t hi, bool log_dist)
{
	double u = (double)lcg(st) / 2147483648.0; /* [0, 1) */

	if (hi <= lo)
		return lo;
	if (!log_dist)
		return lo + (uint32_t)(u * (hi - lo + 1));
	return (uint32_t)((double)lo * exp(u * log((double)(hi + 1) / lo)));
}

/* The scaled maxima: the longest prompt and output. */
static void
mix_max(const struct args *a, uint32_t *ret_prompt, uint32_t *ret_out)
{
	*ret_prompt = (uint32_t)(2000 * a->scale);
	*ret_out = (uint32_t)(512 * a->scale);
	*ret_prompt = *ret_prompt < 16 ? 16 : *ret_prompt;
	*ret_out = *ret_out < 16 ? 16 : *ret_out;
}

/* The workload, the same for every configuration; false when out of memory. */
static bool
mix_workload(const struct args *a, uint32_t n_vocab, struct req *r)
{
	uint32_t max_p, max_o;
	uint64_t st = 42;

	mix_max(a, &max_p, &max_o);
	for (uint32_t i = 0; i < MIX_REQS; i++) {
		uint32_t np = draw_len(&st, 16, max_p, a->dist_log);
		uint32_t no = draw_len(&st, 16, max_o, a->dist_log);
		int32_t *p = malloc(np * sizeof(*p));
		if (!req_init(&r[i], p, np, no))
			return false;
		fill_tokens(p, np, 1000 + i, n_vocab);
	}
	return true;
}

/* Requests of the workload not ended yet (queued or running). */
static uint32_t
mix_open(const struct req *r)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < MIX_REQS; i++)
		n += !r[i].ended;
	return n;
}

/* Submit all of @r at once on @e and step until idle, sampling the running sequences. */
static bool
mix_drive(struct engine *e, struct req *r, struct mix_stats *st)
{
	struct sched_step_info info;
	uint64_t t0 = orch_mono_ns(), t = t0, kv_cells;
	double busy_s = 0, queued_s = 0, queued_busy_s = 0;
	uint32_t busy;

	for (uint32_t i = 0; i < MIX_REQS; i++)
		if (req_submit(e, &r[i], i + 1) != ORCH_OK)
			return false;
	while (!sched_idle(e->s)) {
		sched_step(e->s);
		uint64_t now = orch_mono_ns();
		double dt = (double)(now - t) / 1e9;
		sched_last_step(e->s, &info);
		sched_usage(e->s, &busy, &kv_cells);
		st->peak = busy > st->peak ? busy : st->peak;
		busy_s += busy * dt;
		if (mix_open(r) > busy) { /* some request is still queued */
			queued_s += dt;
			queued_busy_s += busy * dt;
		}
		st->fed += info.prefill_tokens;
		st->steps++;
		t = now;
	}
	st->wall_s = (double)(t - t0) / 1e9;
	st->mean = busy_s / st->wall_s;
	st->mean_queued = queued_s > 0 ? queued_busy_s / queued_s : 0;
	st->preempt = sched_preemptions(e->s);
	for (uint32_t i = 0; i < MIX_REQS; i++) {
		st->gen += r[i].n_out;
		st->failed += r[i].why == ORCH_FINISH_ERROR;
	}
	return st->failed == 0;
}

/* K/V bytes of @tokens positions in blocks of BLOCK_TOKENS (F16), as the engine sizes a pool. */
static uint64_t
kv_bytes(const struct engine *e, uint64_t tokens)
{
	struct model_info mi;

	if (model_info_get(e->f, &mi, NULL) != ORCH_OK)
		return 0;
	return (tokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS *
	       model_kv_block_bytes(&mi, BLOCK_TOKENS, 2);
}

/* The configurations: A the slot design, B paged at A's KV bytes, C = B + the prefix cache. */
static const struct mix_config {
	const char *name;
	bool paged, cache;
} mix_cfg[MIX_CONFIGS] = {{"A: slots of n_ctx", false, false},
                          {"B: paged, same bytes", true, false},
                          {"C: B + prefix cache", true, true}};

static void
mix_row(uint32_t c, uint64_t pool_tokens, const struct mix_stats *s)
{
	printf("| %s | %u | %llu | %u | %.2f | %.2f | %llu | %llu | %.1f | %.1f | %llu |\n",
	       mix_cfg[c].name, mix_cfg[c].paged ? MIX_SLOTS * MIX_PAGED : MIX_SLOTS,
	       (unsigned long long)pool_tokens, s->peak, s->mean, s->mean_queued,
	       (unsigned long long)s->gen, (unsigned long long)s->fed, s->wall_s,
	       (double)s->gen / s->wall_s, (unsigned long long)s->preempt);
}

/* The goal lines for configuration @c against A. */
static void
mix_goals(uint32_t c, const struct mix_stats st[MIX_CONFIGS], uint32_t same)
{
	double conc = st[c].mean / st[0].mean, queued = st[c].mean_queued / st[0].mean_queued;
	double tps = (double)st[c].gen / st[c].wall_s / ((double)st[0].gen / st[0].wall_s);

	printf("%c vs A: mean concurrency %.2f× (while requests waited %.2f×, peak %.2f×; goal "
	       "3×: %s), aggregate tok/s %.2f× (goal not lower: %s), requests with A's tokens %u "
	       "of %u.\n",
	       mix_cfg[c].name[0], conc, queued, (double)st[c].peak / st[0].peak,
	       conc >= 3 ? "met" : "NOT met", tps, tps >= 1 ? "met" : "NOT met", same, MIX_REQS);
}

static void
mix_report(const struct args *a, uint32_t n_ctx, const struct mix_stats st[MIX_CONFIGS],
           const uint32_t same[MIX_CONFIGS])
{
	uint32_t max_p, max_o;

	mix_max(a, &max_p, &max_o);
	printf("\n### 2. Mixed lengths at the same KV memory (scale %.2f: prompts 16-%u, outputs "
	       "16-%u, %s; %u requests)\n\n",
	       a->scale, max_p, max_o, a->dist_log ? "log-uniform" : "uniform", MIX_REQS);
	printf("| config | max running | KV tokens | peak running | mean running | mean while "
	       "queued | generated | prompt fed | wall s | gen tok/s | preemptions |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (uint32_t c = 0; c < MIX_CONFIGS; c++)
		mix_row(c, (uint64_t)MIX_SLOTS * n_ctx, &st[c]);
	printf("\nn_ctx %u (the longest prompt + output, in %u-token blocks). Mean running: "
	       "sampled after every step, weighted by its time; while queued: over the steps "
	       "after which a request still waited. Prompt fed: prompt chunks run, recomputation "
	       "after preemption included.\n",
	       n_ctx, BLOCK_TOKENS);
	for (uint32_t c = 1; c < MIX_CONFIGS; c++)
		mix_goals(c, st, same[c]);
}

/*
 * The workload's mean prompt and output, and how many sequences @pool_tokens
 * hold on average: each holds its prompt and, on average, half its output.
 */
static void
mix_shape(const struct req *r, uint64_t pool_tokens)
{
	double p = 0, o = 0;

	for (uint32_t i = 0; i < MIX_REQS; i++) {
		p += r[i].n_prompt;
		o += r[i].n_out;
	}
	p /= MIX_REQS;
	o /= MIX_REQS;
	printf("Mean prompt %.0f tokens, mean output %.0f: a sequence holds about %.0f tokens on "
	       "average, so %llu tokens of KV hold about %.1f of them.\n",
	       p, o, p + o / 2, (unsigned long long)pool_tokens, (double)pool_tokens / (p + o / 2));
}

/* Run the workload on configuration @c; a paged pool holds A's KV bytes. */
static bool
mix_run(const struct args *a, uint32_t c, uint32_t n_ctx, struct req *r, struct mix_stats *st)
{
	struct engine *e = open_engine(a, MIX_SLOTS, n_ctx, true, false, 0);
	uint64_t pool = 0;
	bool ok = false;

	if (e != NULL && mix_cfg[c].paged) {
		pool = kv_bytes(e, (uint64_t)MIX_SLOTS * n_ctx);
		engine_close(e);
		e = pool ? open_engine(a, MIX_SLOTS * MIX_PAGED, n_ctx, false, mix_cfg[c].cache,
		                       pool)
		         : NULL;
	}
	if (e == NULL)
		return false;
	if (mix_cfg[c].paged &&
	    (uint64_t)e->kv_blocks * e->kv_block_tokens != (uint64_t)MIX_SLOTS * n_ctx)
		fprintf(stderr, "kv_bench: the pool holds %u blocks, not A's %u tokens\n",
		        e->kv_blocks, MIX_SLOTS * n_ctx);
	if (mix_workload(a, e->m.hp.n_vocab, r))
		ok = mix_drive(e, r, st);
	engine_close(e);
	return ok;
}

static int
bench_mixed(const struct args *a)
{
	static struct req r[MIX_CONFIGS][MIX_REQS];
	struct mix_stats st[MIX_CONFIGS];
	uint32_t max_p, max_o, n_ctx, same[MIX_CONFIGS] = {0};
	bool ok = true;

	memset(st, 0, sizeof(st));
	mix_max(a, &max_p, &max_o);
	n_ctx = (max_p + max_o + BLOCK_TOKENS - 1) / BLOCK_TOKENS * BLOCK_TOKENS;
	for (uint32_t c = 0; c < MIX_CONFIGS && ok; c++)
		ok = mix_run(a, c, n_ctx, r[c], &st[c]);
	for (uint32_t c = 1; c < MIX_CONFIGS && ok; c++)
		for (uint32_t i = 0; i < MIX_REQS; i++)
			same[c] += same_tokens(&r[0][i], &r[c][i]);
	if (ok) {
		mix_report(a, n_ctx, st, same);
		mix_shape(r[0], (uint64_t)MIX_SLOTS * n_ctx);
	}
	for (uint32_t c = 0; c < MIX_CONFIGS; c++)
		for (uint32_t i = 0; i < MIX_REQS; i++)
			req_fini(&r[c][i]);
	return ok ? 0 : 1;
}

/* ---- 3. multi-turn chat ---- */

/* The conversation on an engine with the prefix cache @cache: each turn's request in r[t]. */
static bool
chat_run(const struct args *a, bool cache, struct req *r)
{
	struct engine *e = open_engine(a, 4, CHAT_TOKENS, false, cache, 0);
	int32_t hist[CHAT_TOKENS];
	uint32_t n = 0;
	bool ok = e != NULL;

	for (uint32_t t = 0; t < CHAT_TURNS && ok; t++) {
		fill_tokens(hist + n, CHAT_USER, 500 + t, e->m.hp.n_vocab);
		n += CHAT_USER;
		int32_t *p = malloc(n * sizeof(*p));
		if (p != NULL)
			memcpy(p, hist, n * sizeof(*p));
		ok = req_init(&r[t], p, n, CHAT_OUT) && req_run_alone(e, &r[t], t + 1);
		if (!ok)
			break;
		memcpy(hist + n, r[t].out, r[t].n_out * sizeof(*hist));
		n += r[t].n_out;
	}
	engine_close(e);
	return ok;
}

static void
chat_report(struct req r[2][CHAT_TURNS], int diff)
{
	int64_t worst = 0;

	printf("\n### 3. Multi-turn chat replaying the history (%u turns, %u new user tokens and "
	       "up to %u out a turn)\n\n",
	       CHAT_TURNS, CHAT_USER, CHAT_OUT);
	printf("| turn | prompt tokens | new since the last turn's KV | computed, off | computed, on "
	       "| TTFT off (ms) | TTFT on (ms) |\n|---:|---:|---:|---:|---:|---:|---:|\n");
	for (uint32_t t = 0; t < CHAT_TURNS; t++) {
		const struct req *o = &r[0][t], *c = &r[1][t];
		/* the last answer token was sampled, never fed: its K/V was not computed */
		uint32_t seen = t ? r[1][t - 1].n_prompt + r[1][t - 1].n_out - 1 : 0;
		uint32_t comp = c->n_prompt - c->cached;
		if (t > 0 && (int64_t)comp - (c->n_prompt - seen) > worst)
			worst = (int64_t)comp - (c->n_prompt - seen);
		printf("| %u | %u | %u | %u | %u | %.1f | %.1f |\n", t + 1, c->n_prompt,
		       c->n_prompt - seen, o->n_prompt - o->cached, comp, ttft_ms(o), ttft_ms(c));
	}
	printf("\nGoal: with the cache a turn computes only what is new (plus the partial last "
	       "block, < %u): %s (at most %lld more).\n",
	       BLOCK_TOKENS, worst < BLOCK_TOKENS ? "met" : "NOT met", (long long)worst);
	if (diff < 0)
		printf("Answers with and without the cache: identical (all %u turns)\n",
		       CHAT_TURNS);
	else
		printf("Answers with and without the cache: DIFFERENT from turn %d\n", diff + 1);
}

static int
bench_chat(const struct args *a)
{
	static struct req r[2][CHAT_TURNS];
	bool ok = true;
	int diff = -1;

	for (int c = 0; c < 2 && ok; c++)
		ok = chat_run(a, c == 1, r[c]);
	for (uint32_t t = 0; t < CHAT_TURNS && ok && diff < 0; t++)
		if (!same_tokens(&r[0][t], &r[1][t]))
			diff = (int)t;
	if (ok)
		chat_report(r, diff);
	for (int c = 0; c < 2; c++)
		for (uint32_t t = 0; t < CHAT_TURNS; t++)
			req_fini(&r[c][t]);
	return ok && diff < 0 ? 0 : 1;
}

/* ---- main ---- */

static int
usage(void)
{
	fprintf(stderr, "usage: kv_bench MODEL.gguf [THREADS] [--scale X] [--dist uniform|log] "
	                "[--only 1|2|3] [--watermark F]\n");
	return 2;
}

static bool
parse_args(int argc, char **argv, struct args *a)
{
	uint64_t v;

	*a = (struct args){.path = argc > 1 ? argv[1] : NULL,
	                   .scale = 0.25,
	                   .watermark = ENGINE_DEFAULT_KV_WATERMARK};
	for (int i = 2; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : "";
		if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
			if (orch_parse_double(val, 0.01, 1, &a->scale) != ORCH_OK)
				return false;
		} else if (strcmp(argv[i], "--dist") == 0 && i + 1 < argc) {
			if (strcmp(val, "log") != 0 && strcmp(val, "uniform") != 0)
				return false;
			a->dist_log = strcmp(val, "log") == 0;
		} else if (strcmp(argv[i], "--watermark") == 0 && i + 1 < argc) {
			if (orch_parse_double(val, 0, 0.5, &a->watermark) != ORCH_OK)
				return false;
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			if (orch_parse_u64(val, 1, 3, &v) != ORCH_OK)
				return false;
			a->only = (uint32_t)v;
		} else if (orch_parse_u64(argv[i], 1, 256, &v) == ORCH_OK) {
			a->threads = (uint32_t)v;
			continue;
		} else {
			return false;
		}
		i++;
	}
	return a->path != NULL;
}

int
main(int argc, char **argv)
{
	static int (*const bench[3])(const struct args *) = {bench_shared, bench_mixed, bench_chat};
	struct args a;
	int rc = 0;

	if (!parse_args(argc, argv, &a))
		return usage();
	const char *name = strrchr(a.path, '/') ? strrchr(a.path, '/') + 1 : a.path;
	printf("## kv_bench %s, threads %u (0: one per core), blocks of %u tokens\n", name,
	       a.threads, BLOCK_TOKENS);
	for (uint32_t k = 0; k < 3; k++) {
		if (a.only != 0 && a.only != k + 1)
			continue;
		uint64_t t0 = orch_mono_ns();
		rc |= bench[k](&a);
		printf("(benchmark %u: %.0f s)\n", k + 1, (double)(orch_mono_ns() - t0) / 1e9);
		fflush(stdout);
	}
	return rc;
}
