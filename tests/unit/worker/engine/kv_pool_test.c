/*
 * kv_pool_test.c - the paged KV pool's size and what the prefix cache tells
 * (issue 19) on the real stories260K model: a budget in bytes buys
 * floor(budget / block) blocks (F16 and F32 K/V), a budget below one
 * sequence of the context is refused saying what fits, a fraction of the
 * free memory opens; a job reports the prompt tokens it found cached, and a
 * cache salt shares blocks only within the salt, with the same tokens.
 */
#include <string.h>

#include "engine/engine.h"
#include "engine/kv_blocks.h"
#include "engine/scheduler.h"
#include "gguf/model_info.h"
#include "t.h"

#define CTX 128

struct out {
	int32_t ids[64];
	uint32_t n;
	enum orch_finish why;
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
on_end(void *ctx, struct sched_job *j, enum orch_finish why, orch_err err, const char *msg)
{
	(void)j;
	(void)err;
	(void)msg;
	((struct out *)ctx)->why = why;
}

static const struct sched_job_ops ops = {.on_token = on_token, .on_logits = NULL, .on_end = on_end};

static struct engine_config
config(uint32_t block_tokens)
{
	return (struct engine_config){.model_path = t_path("models/stories260K.gguf"),
	                              .ops = &be_cpu_ops,
	                              .slots = 2,
	                              .n_ctx = CTX,
	                              .chunk = 16,
	                              .threads = 2,
	                              .kv_block_tokens = block_tokens,
	                              .kv_prefix_cache = true};
}

/* K and V of one block of @bt tokens over the model's layers, as orchd's estimate has it. */
static uint64_t
block_bytes(struct engine *e, uint32_t bt, uint32_t elem)
{
	struct model_info mi;

	if (model_info_get(e->f, &mi, NULL) != ORCH_OK)
		return 0;
	return model_kv_block_bytes(&mi, bt, elem);
}

static void
test_budget(void)
{
	for (int f32 = 0; f32 < 2; f32++) {
		struct engine_config cfg = config(16);
		struct engine *e = NULL;
		cfg.kv_f32 = f32 == 1;
		T_OK(engine_open(&cfg, &e, NULL)); /* the default: slots × ceil(n_ctx / 16) */
		T_EQ(e->kv_blocks, 2 * CTX / 16);
		uint64_t block = block_bytes(e, 16, f32 ? 4 : 2);
		T_TRUE(block > 0);
		engine_close(e);
		cfg.kv_cache_bytes = 37 * block + block / 2; /* 37 and a half blocks */
		T_OK(engine_open(&cfg, &e, NULL));
		T_EQ(e->kv_blocks, 37);
		T_EQ(e->kv_block_tokens, 16);
		struct kvb_stats st;
		T_TRUE(sched_kv_stats(e->s, &st));
		T_EQ(st.total, 37);
		engine_close(e);
	}
}

static void
test_budget_too_small(void)
{
	struct engine_config cfg = config(16);
	struct engine *e = NULL;
	struct orch_errinfo err = {0};

	T_OK(engine_open(&cfg, &e, NULL));
	uint64_t block = block_bytes(e, 16, 2);
	engine_close(e);
	e = NULL;
	cfg.kv_cache_bytes = (CTX / 16) * block - 1; /* one sequence of the context, less a byte */
	T_ERR(engine_open(&cfg, &e, &err), ORCH_EINVAL);
	T_TRUE(e == NULL);
	printf("refused: %s\n", err.msg);
	T_TRUE(strstr(err.msg, "less than one sequence of the context (128 tokens") != NULL);
	T_TRUE(strstr(err.msg, "holds 112 tokens") != NULL);
	cfg.kv_cache_bytes += 1; /* exactly one sequence */
	T_OK(engine_open(&cfg, &e, NULL));
	T_EQ(e->kv_blocks, CTX / 16);
	engine_close(e);
}

/* A fraction is of the total memory less the weights and working memory: exactly. */
static void
test_fraction(void)
{
	struct engine_config cfg = config(16);
	struct engine *e = NULL;
	struct be_info info = {0};
	struct model_info mi;
	struct mem_estimate est;
	struct mem_kv none = {.pool_bytes = 1, .block_tokens = 16};

	be_cpu_ops.info("cpu", &info);
	T_TRUE(info.mem_free > 0 && info.mem_total >= info.mem_free);
	cfg.kv_cache_fraction = 0.001;
	T_OK(engine_open(&cfg, &e, NULL));
	uint64_t block = block_bytes(e, 16, 2);
	T_OK(model_info_get(e->f, &mi, NULL));
	T_OK(model_mem_estimate_kv(&mi, CTX, 2, 2, &none, &est));
	uint64_t rest = est.weights + est.overhead + est.kv_swa;
	uint64_t want = (uint64_t)(0.001 * (double)(info.mem_total - rest)) / block;
	printf("fraction 0.001 of %llu MiB: %u blocks of %llu bytes (want %llu)\n",
	       (unsigned long long)(info.mem_total >> 20), e->kv_blocks, (unsigned long long)block,
	       (unsigned long long)want);
	T_EQ(e->kv_blocks, want);
	T_TRUE(e->kv_blocks > 2 * CTX / 16); /* more than the default pool: the fraction counted */
	engine_close(e);
	/* a budget past what a pool addresses is cut at MODEL_MAX_KV_POOL_TOKENS positions */
	struct mem_kv huge = {.pool_bytes = (uint64_t)1 << 50, .block_tokens = 16};
	T_OK(model_mem_estimate_kv(&mi, CTX, 2, 2, &huge, &est));
	T_TRUE(est.kv_pool_capped && est.kv_pool_tokens == MODEL_MAX_KV_POOL_TOKENS);
}

/* Run @p (with @salt) alone on @e; its tokens into @o, its cached prompt tokens returned. */
static uint32_t
run(struct engine *e, const int32_t *p, uint32_t n, const char *salt, struct out *o)
{
	struct sched_job j = {.id = 1, .prompt = p, .n_prompt = n, .max_tokens = 8, .ops = &ops};

	memset(o, 0, sizeof(*o));
	j.ctx = o;
	j.sp = samp_defaults();
	j.sp.temperature = 0.0f;
	j.cache_salt = salt;
	j.cache_salt_len = salt ? (uint32_t)strlen(salt) : 0;
	if (sched_submit(e->s, &j, NULL) != ORCH_OK)
		return UINT32_MAX;
	while (!sched_idle(e->s))
		sched_step(e->s);
	return j.cached_tokens;
}

static void
test_cached_tokens_and_salt(void)
{
	static const struct {
		const char *salt;
		uint32_t cached;
	} runs[] = {{NULL, 0},       {NULL, 32},     {"tenant-a", 0}, {"tenant-a", 32},
	            {"tenant-b", 0}, {"tenant-", 0}, {NULL, 32}};
	struct engine_config cfg = config(16);
	struct engine *e = NULL;
	struct out ref, o;
	int32_t p[40];

	p[0] = 1;
	for (uint32_t i = 1; i < 40; i++)
		p[i] = 300 + (int32_t)(i * 11 % 90);
	T_OK(engine_open(&cfg, &e, NULL));
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		uint32_t cached = run(e, p, 40, runs[k].salt, k == 0 ? &ref : &o);
		T_EQ(cached, runs[k].cached);
		if (k > 0) { /* the same tokens whether the prompt came from the cache or not */
			T_EQ(o.why, ORCH_FINISH_LENGTH);
			T_EQ(o.n, ref.n);
			T_TRUE(memcmp(o.ids, ref.ids, ref.n * sizeof(int32_t)) == 0);
		}
	}
	engine_close(e);
	cfg.kv_prefix_cache = false; /* off: nothing is ever cached */
	T_OK(engine_open(&cfg, &e, NULL));
	T_EQ(run(e, p, 40, NULL, &o), 0);
	T_EQ(run(e, p, 40, NULL, &o), 0);
	engine_close(e);
}

int
main(void)
{
	T_RUN(test_budget);
	T_RUN(test_budget_too_small);
	T_RUN(test_fraction);
	T_RUN(test_cached_tokens_and_salt);
	return t_done();
}
