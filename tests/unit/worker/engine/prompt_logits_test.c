/*
 * prompt_logits_test.c - a prompt's log-probabilities (sched_job.prompt_logits,
 * echo with logprobs) on the real stories260K model: every position 1..n-1
 * reported once, in order, before the first token, with the logits a job
 * whose prompt ends just before that position samples from; whether the
 * backend returns every row of a step (the CPU: several positions a step)
 * or only the last (one a step, as on the GPU); with the prefix cache
 * holding the prompt (it is not used: those positions have no logits); next
 * to an ordinary job, which is unchanged; and max_tokens 0, which ends the
 * job after its prompt with nothing generated.
 */
#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "t.h"
#include "text/tokenizer.h"

#define CTX        128
#define VOCAB_MAX  1024
#define PROMPT_MAX 64

struct out {
	int32_t ids[64];
	uint32_t n;
	uint32_t pos[PROMPT_MAX]; /* on_prompt's positions, in call order */
	uint32_t n_pos;
	bool pos_after_token; /* an on_prompt after an on_token */
	float (*prompt_lg)[VOCAB_MAX];
	float first[VOCAB_MAX]; /* the logits token 0 was sampled from */
	uint32_t n_vocab;
	enum orch_finish why;
	bool done;
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
	if (index == 0 && n_vocab <= VOCAB_MAX)
		memcpy(o->first, lg, n_vocab * sizeof(float));
	o->n_vocab = n_vocab;
}

static void
on_prompt(void *ctx, struct sched_job *j, uint32_t pos, const float *lg, uint32_t n_vocab)
{
	struct out *o = ctx;

	(void)j;
	o->pos_after_token |= o->n > 0;
	if (o->n_pos < PROMPT_MAX)
		o->pos[o->n_pos++] = pos;
	if (pos < PROMPT_MAX && n_vocab <= VOCAB_MAX)
		memcpy(o->prompt_lg[pos], lg, n_vocab * sizeof(float));
}

static void
on_end(void *ctx, struct sched_job *j, enum orch_finish why, orch_err err, const char *msg)
{
	struct out *o = ctx;

	(void)j;
	(void)err;
	(void)msg;
	o->why = why;
	o->done = true;
}

static const struct sched_job_ops ops = {
        .on_token = on_token, .on_logits = on_logits, .on_end = on_end, .on_prompt = on_prompt};

/* The CPU backend as one that returns only each sequence's last logits (as the GPU's). */
static struct be_ops last_only;

static struct engine *
open_engine(bool all_rows, uint32_t slots, uint32_t chunk)
{
	struct engine_config cfg = {.model_path = t_path("models/stories260K.gguf"),
	                            .ops = all_rows ? &be_cpu_ops : &last_only,
	                            .slots = slots,
	                            .n_ctx = CTX,
	                            .chunk = chunk,
	                            .threads = 2,
	                            .kv_prefix_cache = true};
	struct engine *e = NULL;
	struct orch_errinfo err = {0};

	last_only = be_cpu_ops;
	last_only.all_logits = false;
	if (engine_open(&cfg, &e, &err) != ORCH_OK)
		fprintf(stderr, "engine_open: %s\n", err.msg);
	return e;
}

static struct sched_job
job(uint64_t id, const int32_t *p, uint32_t n, uint32_t max_tokens, struct out *o)
{
	struct sched_job j = {.id = id,
	                      .prompt = p,
	                      .n_prompt = n,
	                      .max_tokens = max_tokens,
	                      .ops = &ops,
	                      .ctx = o};

	j.sp = samp_defaults();
	j.sp.temperature = 0.0f;
	return j;
}

static void
run_all(struct engine *e)
{
	while (!sched_idle(e->s))
		sched_step(e->s);
}

static struct tok_ids prompt;

/* The logits a job whose prompt is prompt[0, p) samples its first token from, for p ≥ 1. */
static float (*reference(void))[VOCAB_MAX]
{
	float(*ref)[VOCAB_MAX] = calloc(PROMPT_MAX, sizeof(*ref));
	struct engine *e = open_engine(true, 1, 8);
	struct out *o = calloc(1, sizeof(*o));

	if (ref == NULL || e == NULL || o == NULL)
		return NULL;
	for (uint32_t p = 1; p < prompt.n; p++) {
		memset(o, 0, sizeof(*o));
		struct sched_job j = job(100 + p, prompt.v, p, 1, o);
		if (sched_submit(e->s, &j, NULL) != ORCH_OK)
			return NULL;
		run_all(e);
		memcpy(ref[p], o->first, sizeof(ref[p]));
	}
	engine_close(e);
	free(o);
	return ref;
}

static float (*ref)[VOCAB_MAX];

/* @o's prompt positions: 1..n-1 once, in order, before any token, each with ref's logits. */
static void
check_positions(const struct out *o, const char *what)
{
	double worst = 0;

	T_EQ(o->n_pos, prompt.n - 1);
	T_TRUE(!o->pos_after_token);
	for (uint32_t k = 0; k < o->n_pos && k < PROMPT_MAX; k++) {
		T_EQ(o->pos[k], k + 1);
		for (uint32_t i = 0; i < o->n_vocab; i++) {
			double d = fabs((double)o->prompt_lg[k + 1][i] - (double)ref[k + 1][i]);
			worst = d > worst ? d : worst;
		}
	}
	printf("%s: %u positions, worst logit difference %.3g\n", what, o->n_pos, worst);
	T_TRUE(worst <= 1e-4);
}

static struct out *
new_out(void)
{
	struct out *o = calloc(1, sizeof(*o));

	if (o != NULL && (o->prompt_lg = calloc(PROMPT_MAX, sizeof(*o->prompt_lg))) == NULL) {
		free(o);
		return NULL;
	}
	return o;
}

static void
free_out(struct out *o)
{
	if (o != NULL)
		free(o->prompt_lg);
	free(o);
}

/* Every position, whether a step returns every row or only the last; chunks of 8 or 32. */
static void
test_positions(void)
{
	for (int all = 0; all < 2; all++)
		for (uint32_t chunk = 8; chunk <= 32; chunk *= 4) {
			struct engine *e = open_engine(all == 1, 1, chunk);
			struct out *o = new_out();
			T_TRUE(e != NULL && o != NULL);
			struct sched_job j = job(1, prompt.v, (uint32_t)prompt.n, 4, o);
			j.prompt_logits = true;
			T_OK(sched_submit(e->s, &j, NULL));
			uint32_t steps = 0;
			for (; !sched_idle(e->s); steps++)
				sched_step(e->s);
			char what[64];
			snprintf(what, sizeof(what), "%s, chunk %u, %u steps",
			         all ? "every row" : "last row only", chunk, steps);
			check_positions(o, what);
			T_EQ(o->n, 4);
			T_EQ(o->why, ORCH_FINISH_LENGTH);
			/* one position a step without every row; else the spare rows' worth */
			if (all == 0)
				T_EQ(steps, (uint32_t)prompt.n - 1 + 4);
			else
				T_TRUE(steps < (uint32_t)prompt.n / 2);
			free_out(o);
			engine_close(e);
		}
}

/* A cached prompt is computed again (its positions need logits), and nothing is found. */
static void
test_prefix_cache_unused(void)
{
	struct engine *e = open_engine(true, 2, 16);
	struct out *a = new_out(), *b = new_out();

	T_TRUE(e != NULL && a != NULL && b != NULL);
	struct sched_job ja = job(1, prompt.v, (uint32_t)prompt.n, 2, a);
	T_OK(sched_submit(e->s, &ja, NULL));
	run_all(e);
	struct sched_job jb = job(2, prompt.v, (uint32_t)prompt.n, 2, b);
	jb.prompt_logits = true;
	T_OK(sched_submit(e->s, &jb, NULL));
	run_all(e);
	T_EQ(jb.cached_tokens, 0);
	check_positions(b, "after the same prompt was cached");
	struct sched_job jc = job(3, prompt.v, (uint32_t)prompt.n, 2, a); /* an ordinary job hits */
	T_OK(sched_submit(e->s, &jc, NULL));
	run_all(e);
	T_TRUE(jc.cached_tokens > 0);
	free_out(a);
	free_out(b);
	engine_close(e);
}

/* Beside an ordinary job, which generates what it does alone. */
static void
test_beside(void)
{
	struct engine *e = open_engine(true, 2, 16);
	struct out *alone = new_out(), *a = new_out(), *b = new_out();
	static const int32_t other[] = {1, 400, 20, 33, 99, 7};

	T_TRUE(e != NULL && alone != NULL && a != NULL && b != NULL);
	struct sched_job j0 = job(1, other, 6, 16, alone);
	T_OK(sched_submit(e->s, &j0, NULL));
	run_all(e);
	struct sched_job ja = job(2, other, 6, 16, a);
	struct sched_job jb = job(3, prompt.v, (uint32_t)prompt.n, 16, b);
	jb.prompt_logits = true;
	T_OK(sched_submit(e->s, &jb, NULL));
	T_OK(sched_submit(e->s, &ja, NULL));
	run_all(e);
	T_EQ(a->n, alone->n);
	T_TRUE(memcmp(a->ids, alone->ids, alone->n * sizeof(int32_t)) == 0);
	check_positions(b, "beside another job");
	free_out(alone);
	free_out(a);
	free_out(b);
	engine_close(e);
}

/* max_tokens 0: the prompt's positions, no token, finish LENGTH. */
static void
test_prompt_only(void)
{
	for (int lp = 0; lp < 2; lp++) {
		struct engine *e = open_engine(true, 1, 16);
		struct out *o = new_out();
		T_TRUE(e != NULL && o != NULL);
		struct sched_job j = job(1, prompt.v, (uint32_t)prompt.n, 0, o);
		j.prompt_logits = lp == 1;
		T_OK(sched_submit(e->s, &j, NULL));
		run_all(e);
		T_TRUE(o->done);
		T_EQ(o->why, ORCH_FINISH_LENGTH);
		T_EQ(o->n, 0);
		T_EQ(j.tokens_out, 0);
		T_EQ(o->n_pos, lp ? (uint32_t)prompt.n - 1 : 0);
		if (lp)
			check_positions(o, "max_tokens 0");
		free_out(o);
		engine_close(e);
	}
}

int
main(void)
{
	static const char text[] =
	        "Once upon a time, there was a little girl named Lily. She loved to play "
	        "outside in the park with her friends. One day, she saw a big";
	struct engine *e = open_engine(true, 1, 8);

	if (e == NULL ||
	    tok_encode(e->mt.tok, text, strlen(text), TOK_ADD_SPECIAL, &prompt) != ORCH_OK ||
	    prompt.n < 10 || prompt.n >= PROMPT_MAX)
		return 1;
	engine_close(e);
	printf("prompt: %zu tokens\n", prompt.n);
	if ((ref = reference()) == NULL)
		return 1;
	T_RUN(test_positions);
	T_RUN(test_prefix_cache_unused);
	T_RUN(test_beside);
	T_RUN(test_prompt_only);
	free(ref);
	tok_ids_fini(&prompt);
	return t_done();
}
