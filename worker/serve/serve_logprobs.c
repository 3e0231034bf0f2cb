/*
 * serve_logprobs.c - a job's log-probabilities (Submit.logprobs): the
 * scheduler's on_logits hands the raw logits a token is sampled from; they
 * stay valid until that token's on_token in the same step, where its entry
 * gets the token's log-probability, its bytes and the top alternatives.
 *
 * The distribution is the model's own: the softmax of the raw logits,
 * before logit bias, penalties, temperature or a grammar's mask (vLLM's
 * default, llama-server's n_probs). NaN logits count as impossible.
 */
#include <math.h>
#include <string.h>

#include "base/alloc.h"
#include "serve_int.h"

/* Whether candidate @a ranks before @b: the larger logit, then the lower id. */
static bool
before(float la, int32_t ia, float lb, int32_t ib)
{
	return la > lb || (la == lb && ia < ib);
}

/* Insert (@id, @x) into @j's top list when it ranks among the first n_top. */
static void
top_insert(struct serve_job *j, int32_t id, float x)
{
	uint32_t n = j->lp_n, k;

	if (n == j->n_top && !before(x, id, j->lp_top[n - 1].logit, j->lp_top[n - 1].id))
		return;
	k = n < j->n_top ? n++ : n - 1;
	while (k > 0 && before(x, id, j->lp_top[k - 1].logit, j->lp_top[k - 1].id)) {
		j->lp_top[k] = j->lp_top[k - 1];
		k--;
	}
	j->lp_top[k] = (struct samp_cand){id, x, 0};
	j->lp_n = n;
}

void
serve_lp_logits(void *ctx, struct sched_job *sj, uint32_t index, const float *logits,
                uint32_t n_vocab)
{
	struct serve_job *j = ctx;
	float max = -INFINITY;
	double sum = 0;

	(void)sj;
	for (uint32_t i = 0; i < n_vocab; i++)
		if (logits[i] > max) /* false for NaN */
			max = logits[i];
	j->lp_n = 0;
	for (uint32_t i = 0; i < n_vocab; i++) {
		if (!(logits[i] > -INFINITY))
			continue;
		sum += exp((double)logits[i] - (double)max);
		if (j->n_top > 0)
			top_insert(j, (int32_t)i, logits[i]);
	}
	j->lp_logits = logits;
	j->lp_vocab = n_vocab;
	j->lp_index = index;
	j->lp_lse = sum > 0 ? (float)((double)max + log(sum)) : INFINITY;
}

/*
 * @x's log-probability: -inf (as -9999, JSON has no infinity) when
 * impossible; never above 0 (rounding can put the likeliest a hair over).
 */
static float
logprob(const struct serve_job *j, float x)
{
	float lp = x - j->lp_lse;

	return lp > 0.0f ? 0.0f : lp > -9999.0f ? lp : -9999.0f;
}

/* Token @id's bytes appended to the step's text; its place in *@ret. */
static bool
put_piece(struct serve *sv, int32_t id, unsigned flags, struct lp_text *ret)
{
	char buf[256], *big = NULL;
	size_t n = tok_piece(sv->eng->mt.tok, id, flags, buf, sizeof(buf));

	ret->off = sv->text.n;
	ret->len = n < IPC_MAX_PIECE ? n : IPC_MAX_PIECE; /* the channel takes no more of it */
	if (n <= sizeof(buf)) {
		sbuf_put(&sv->text, buf, n);
	} else if ((big = orch_malloc(n)) != NULL) {
		tok_piece(sv->eng->mt.tok, id, flags, big, n);
		sbuf_put(&sv->text, big, n);
		orch_free(big);
	} else {
		return false;
	}
	return !sv->text.oom;
}

/* Room for @n more alternatives in the step's arrays. */
static bool
tops_room(struct serve *sv, uint32_t n)
{
	uint32_t cap = sv->cap_tops ? sv->cap_tops : 64;

	if (sv->n_tops + n <= sv->cap_tops)
		return true;
	while (cap < sv->n_tops + n)
		cap *= 2;
	Orch__TopLogprob *t = orch_reallocarray(sv->tops, cap, sizeof(*t));
	if (t != NULL)
		sv->tops = t;
	struct lp_text *o = t ? orch_reallocarray(sv->top_text, cap, sizeof(*o)) : NULL;
	if (o != NULL)
		sv->top_text = o;
	Orch__TopLogprob **p = o ? orch_reallocarray(sv->top_ptrs, cap, sizeof(*p)) : NULL;
	if (p == NULL)
		return false;
	sv->top_ptrs = p;
	sv->cap_tops = cap;
	return true;
}

bool
serve_lp_piece(struct serve *sv, struct entry_text *o, int32_t id, unsigned flags)
{
	o->has_piece = true;
	return put_piece(sv, id, flags, &o->piece);
}

bool
serve_lp_entry(struct serve *sv, struct serve_job *j, Orch__TokenEntry *e, struct entry_text *o,
               uint32_t index, int32_t id)
{
	if (!j->logprobs || id < 0 || j->lp_logits == NULL || j->lp_index != index ||
	    (uint32_t)id >= j->lp_vocab)
		return true;
	e->has_logprob = true;
	e->logprob = logprob(j, j->lp_logits[id]);
	o->top0 = sv->n_tops;
	o->n_top = 0;
	/* a prompt token's bytes as its text shows it, a control token rendered, and so its
	 * alternatives' (one token, one spelling, in a completion's top_logprobs object) */
	unsigned flags = o->prompt ? TOK_RENDER_SPECIAL : 0;
	if (!serve_lp_piece(sv, o, id, flags) || !tops_room(sv, j->lp_n))
		return false;
	for (uint32_t k = 0; k < j->lp_n; k++) {
		Orch__TopLogprob *t = &sv->tops[sv->n_tops];
		orch__top_logprob__init(t);
		t->token_id = j->lp_top[k].id;
		t->logprob = logprob(j, j->lp_top[k].logit);
		if (!put_piece(sv, t->token_id, flags, &sv->top_text[sv->n_tops]))
			return false;
		sv->n_tops++;
		o->n_top++;
	}
	j->lp_logits = NULL; /* the backend's buffer: not to be read after this step */
	return true;
}

void
serve_lp_fix(struct serve *sv, uint32_t i)
{
	const struct entry_text *o = &sv->text_off[i];
	Orch__TokenEntry *e = &sv->entries[i];

	if (o->has_piece) {
		e->piece.data = (uint8_t *)sv->text.p + o->piece.off;
		e->piece.len = o->piece.len;
	}
	if (!e->has_logprob)
		return;
	e->n_top_logprobs = o->n_top;
	e->top_logprobs = o->n_top ? &sv->top_ptrs[o->top0] : NULL;
	for (uint32_t k = o->top0; k < o->top0 + o->n_top; k++) {
		sv->tops[k].piece.data = (uint8_t *)sv->text.p + sv->top_text[k].off;
		sv->tops[k].piece.len = sv->top_text[k].len;
		sv->top_ptrs[k] = &sv->tops[k];
	}
}
