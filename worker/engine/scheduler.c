/*
 * scheduler.c - continuous batching.
 *
 * Design notes
 * - A job is WAITING (queued), PREFILL (prompt being fed in chunks) or
 *   DECODE (one sampled token fed per step). Slots are taken in queue order
 *   and given back at on_end.
 * - The first token is sampled from the logits of the last prompt token, in
 *   the step that feeds it; after that each step feeds the previous token.
 * - Text: detok deltas join job->pending; the earliest stop string found
 *   there ends the job with the text before it; otherwise everything but the
 *   longest suffix that could begin a stop string is emitted.
 * - Tokens are sampled per job with Philox keyed by the job's seed and the
 *   token's index, so batch composition never changes a job's tokens.
 * - Paged KV (cfg.kv_blocks > 0, a backend with be_ops.paged): the scheduler
 *   owns the block pool (kv_blocks.h). A job's sequence id is its slot. It
 *   is admitted when the blocks its whole prompt needs are available;
 *   before each step the tokens it feeds are appended to its sequence (a
 *   reported copy-on-write goes to the backend's copy_blocks first) and the
 *   step carries its block table. At every step start a running job's
 *   sequence holds exactly its fed tokens. A failed append fails that job
 *   alone (ORCH_EVRAM); on_end releases its blocks. The default pool
 *   (slots × ceil(n_ctx / block_tokens)) cannot run out; a smaller one can.
 * - Preemption (paged): before a step, while the blocks the step's appends
 *   need exceed the available ones, the youngest running job (the last
 *   submitted) gives its blocks back and goes to the front of the queue. A
 *   job preempted while decoding is fed its prompt and generated tokens
 *   again (hist[0, fed)) without sampling, then decodes on from the token it
 *   had sampled: the client sees a pause, never a lost or repeated token
 *   (its Philox index and detokenizer state did not move). Admission leaves
 *   the running jobs their next step's blocks, so a job is not admitted
 *   only to be preempted at once. A job that cannot grow even alone fails
 *   (ORCH_EVRAM). With cfg.prefix_cache, admission attaches the prompt's
 *   cached leading blocks (kv_resume) and prefill starts after them:
 *   their K/V are what this job would compute (a position's K/V depend
 *   only on the tokens up to it, whatever the batch or chunk).
 * - Sliding windows (cfg.kv_swa_blocks > 0): the window layers have a pool
 *   of their own where sequence i is also slot i. Before a job's tokens are
 *   appended there, the blocks its next query no longer sees (wholly before
 *   pos + 1 - n_swa) are dropped: they stay cached for other prompts. The
 *   pool holds every sequence's most (model_swa_blocks), so it needs no
 *   admission check and never preempts. A prompt resumes after the longest
 *   prefix both pools can give: the full pool's every block, the window
 *   pool's last window (kvb_match_len).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "grammars.h"
#include "scheduler_int.h"
#include "text/tokenizer.h"

orch_err
sched_new(const struct be_ops *ops, struct be_model *b, const struct tok *t, uint32_t n_vocab,
          const struct sched_config *cfg, struct sched **ret, struct orch_errinfo *reterr)
{
	struct sched *s = orch_calloc(1, sizeof(*s));

	if (s == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory for the scheduler");
	*s = (struct sched){.ops = ops, .b = b, .t = t, .n_vocab = n_vocab, .cfg = *cfg};
	s->slots = orch_calloc(cfg->slots, sizeof(*s->slots));
	s->seqs = orch_calloc(cfg->slots, sizeof(*s->seqs));
	s->seq_job = orch_calloc(cfg->slots, sizeof(*s->seq_job));
	s->work = orch_calloc(n_vocab, sizeof(*s->work));
	s->samp = orch_calloc(cfg->slots, sizeof(*s->samp));
	s->ids = orch_calloc(cfg->slots, sizeof(*s->ids));
	if (s->slots == NULL || s->seqs == NULL || s->seq_job == NULL || s->work == NULL ||
	    s->samp == NULL || s->ids == NULL) {
		sched_free(s);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory for the scheduler");
	}
	orch_err rv = cfg->kv_blocks > 0 ? sched_kv_pools(s, reterr) : ORCH_OK;
	if (rv != ORCH_OK) {
		sched_free(s);
		return rv;
	}
	*ret = s;
	return ORCH_OK;
}

void
sched_free(struct sched *s)
{
	if (s == NULL)
		return;
	orch_free(s->slots);
	orch_free(s->seqs);
	orch_free(s->seq_job);
	orch_free(s->work);
	orch_free(s->masked);
	orch_free(s->mask_bits);
	orch_free(s->samp);
	orch_free(s->ids);
	kvb_free(s->kv);
	kvb_free(s->kvw);
	orch_free(s);
}

/*
 * Where a thinking model's output is: before anything (a <think> may open it), in the
 * block, after it (its answer), or never in one. The newlines that follow a tag are
 * dropped as templates write them ("<think>\n", "</think>\n\n").
 */
enum { THINK_START, THINK_IN, THINK_OUT, THINK_NONE };

static void
think_enter(struct sched_job *j, uint8_t where)
{
	j->think = where;
	j->tag = (struct harmony_tag){.message = where == THINK_IN ? 0 : 1};
	snprintf(j->tag.channel, sizeof(j->tag.channel), "%s",
	         where == THINK_IN ? "analysis" : "final");
}

orch_err
sched_submit(struct sched *s, struct sched_job *j, struct orch_errinfo *reterr)
{
	if (j->n_prompt == 0)
		return orch_errf(reterr, ORCH_EINVAL, "the prompt is empty");
	if (j->n_prompt > s->cfg.n_ctx) /* the message reaches the client: no job number in it */
		return orch_errf(reterr, ORCH_ECONTEXT,
		                 "a prompt of %u tokens exceeds the context of %u", j->n_prompt,
		                 s->cfg.n_ctx);
	j->hist = orch_calloc((size_t)j->n_prompt + j->max_tokens + 1, sizeof(*j->hist));
	if (j->hist == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	memcpy(j->hist, j->prompt, j->n_prompt * sizeof(*j->hist));
	j->n_hist = j->n_prompt;
	j->state = J_WAITING;
	j->fed = j->tokens_out = j->refeed = j->cached_tokens = j->preempted = 0;
	j->prompt_next = 1;
	j->arrival = s->arrivals++;
	j->cancel = false;
	j->pending = (struct sbuf){0};
	detok_init(&j->dt, s->t,
	           (j->keep_space ? 0 : TOK_STRIP_PREFIX) |
	                   (j->hm && j->hm_raw ? TOK_RENDER_SPECIAL : 0));
	j->tag = (struct harmony_tag){.message = HARMONY_NO_MESSAGE};
	if (j->hm)
		harmony_prime(j->hm, j->prompt, j->n_prompt);
	j->think = THINK_START;
	if (j->tv && think_prompt_open(j->tv, j->prompt, j->n_prompt)) /* the template opened it */
		think_enter(j, THINK_IN);
	j->t_start = (double)orch_mono_ns() / 1e6;
	j->t_first = 0;
	j->next = NULL;
	if (s->waiting_tail)
		s->waiting_tail->next = j;
	else
		s->waiting = j;
	s->waiting_tail = j;
	return ORCH_OK;
}

const struct harmony_tag *
sched_job_tag(const struct sched_job *j)
{
	return (j->hm || j->tv) && j->tag.message != HARMONY_NO_MESSAGE ? &j->tag : NULL;
}

/* Release all the text held back (an incomplete character becomes U+FFFD) as token @index's. */
static void
release(struct sched_job *j, uint32_t index)
{
	detok_finish(&j->dt, &j->pending);
	if (j->pending.n > 0 && j->ops->on_token)
		j->ops->on_token(j->ctx, j, index, -1, j->pending.p, j->pending.n);
	j->pending.n = 0;
}

void
sched_finish(struct sched *s, struct sched_job *j, enum orch_finish why, orch_err err,
             const char *msg)
{
	double now = (double)orch_mono_ns() / 1e6;

	if (why != ORCH_FINISH_STOP && why != ORCH_FINISH_ERROR && why != ORCH_FINISH_CANCELLED)
		release(j, j->tokens_out ? j->tokens_out - 1 : 0);
	j->prefill_ms = (j->t_first > 0 ? j->t_first : now) - j->t_start;
	j->decode_ms = j->t_first > 0 ? now - j->t_first : 0;
	if (j->state != J_WAITING) {
		s->slots[j->slot] = NULL;
		sched_kv_seq_free(s, j->slot);
	}
	sbuf_fini(&j->pending);
	orch_free(j->hist);
	j->hist = NULL;
	j->ops->on_end(j->ctx, j, why, err, msg);
}

void
sched_cancel(struct sched *s, uint64_t id)
{
	for (struct sched_job **pp = &s->waiting; *pp != NULL; pp = &(*pp)->next) {
		struct sched_job *j = *pp;
		if (j->id != id)
			continue;
		*pp = j->next;
		if (s->waiting_tail == j) {
			s->waiting_tail = NULL;
			for (struct sched_job *k = s->waiting; k != NULL; k = k->next)
				s->waiting_tail = k;
		}
		sched_finish(s, j, ORCH_FINISH_CANCELLED, ORCH_ECANCELLED, "cancelled");
		return;
	}
	for (uint32_t i = 0; i < s->cfg.slots; i++)
		if (s->slots[i] != NULL && s->slots[i]->id == id)
			s->slots[i]->cancel = true;
}

/* Length of the longest suffix of @p that begins some stop string. */
static size_t
stop_prefix_hold(const struct sched_job *j, const char *p, size_t n)
{
	size_t hold = 0;

	for (uint32_t k = 0; k < j->n_stops; k++) {
		size_t sl = strlen(j->stops[k]);
		for (size_t len = sl > n ? n : sl - 1; len > hold; len--)
			if (memcmp(p + n - len, j->stops[k], len) == 0) {
				hold = len;
				break;
			}
	}
	return hold;
}

/* Emit what is safe of the pending text; true when a stop string was hit. */
static bool
emit_text(struct sched_job *j, uint32_t index, int32_t id)
{
	const char *p = j->pending.p ? j->pending.p : "";
	size_t n = j->pending.n, cut = n, hold;
	bool stop = false;

	for (uint32_t k = 0; k < j->n_stops; k++) {
		const char *hit =
		        j->stops[k][0] ? memmem(p, n, j->stops[k], strlen(j->stops[k])) : NULL;
		if (hit != NULL && (size_t)(hit - p) < cut) {
			cut = (size_t)(hit - p);
			stop = true;
		}
	}
	hold = stop ? 0 : stop_prefix_hold(j, p, n);
	cut = stop ? cut : n - hold;
	if (j->ops->on_token)
		j->ops->on_token(j->ctx, j, index, id, p, cut);
	if (!stop && hold > 0)
		memmove(j->pending.p, j->pending.p + cut, hold);
	j->pending.n = stop ? 0 : hold;
	return stop;
}

/*
 * Harmony: feed @id to @j's parser; when the text now belongs to another
 * message (or to none), release what the last one held back first. Whether
 * the token has text: content, or anything in a raw prompt's output. A
 * chat job's header and control tokens are reported without text.
 */
static bool
harmony_token(struct sched_job *j, uint32_t index, int32_t id)
{
	static const struct harmony_tag none = {.message = HARMONY_NO_MESSAGE};
	bool content = harmony_feed(j->hm, id) == HARMONY_CONTENT;
	const struct harmony_tag *tag = content ? harmony_tag(j->hm) : &none;

	if (tag->message != j->tag.message) {
		release(j, index);
		j->tag = *tag;
	}
	if (!content && !j->hm_raw && j->ops->on_token)
		j->ops->on_token(j->ctx, j, index, id, "", 0);
	return content || j->hm_raw;
}

/* A thinking model's token: a tag moves the job, without text; false: no text. */
static bool
think_token(struct sched_job *j, uint32_t index, int32_t id)
{
	bool tag = (id == j->tv->open && j->think == THINK_START) ||
	           (id == j->tv->close && j->think == THINK_IN);
	if (tag) {
		release(j, index); /* the text so far keeps the message it was in */
		think_enter(j, id == j->tv->open ? THINK_IN : THINK_OUT);
		j->think_skip = true;
	} else if (j->think == THINK_START) {
		j->think = THINK_NONE; /* an answer without thinking: plain text */
	}
	if (!tag && j->think_skip) { /* the newlines a template writes after a tag */
		char piece[32];
		size_t n = tok_piece(j->dt.t, id, 0, piece, sizeof(piece)), k = 0;
		/* newlines only (an indentation is the answer's): tok_piece says the whole
		 * length, of which @piece holds at most its size */
		while (n <= sizeof(piece) && k < n && (piece[k] == '\n' || piece[k] == '\r'))
			k++;
		if (n > 0 && k == n)
			tag = true; /* all newlines: dropped */
		else
			j->think_skip = false;
	}
	if (tag && j->ops->on_token)
		j->ops->on_token(j->ctx, j, index, id, "", 0);
	return !tag;
}

/* A token sampled for @j: emit it and decide whether the job goes on. */
static void
accept_token(struct sched *s, struct sched_job *j, int32_t id)
{
	uint32_t index = j->tokens_out;
	struct orch_errinfo e = {0};
	orch_err rv;

	if (index < j->n_script)
		id = j->script[index];
	if (id == SAMP_NONE && (j->sp.n_bias > 0 || j->gj != NULL)) { /* no candidate left */
		sched_finish(
		        s, j, ORCH_FINISH_ERROR, ORCH_EINVAL,
		        "no token could be sampled: logit_bias and the grammar left none above "
		        "-inf (or the model's logits are NaN)");
		return;
	}
	if (id == SAMP_NONE) {
		sched_finish(s, j, ORCH_FINISH_ERROR, ORCH_EINTERNAL,
		             "no token could be sampled: every logit was NaN or -inf (the model's "
		             "weights or numerics are broken)");
		return;
	}
	if (j->t_first == 0)
		j->t_first = (double)orch_mono_ns() / 1e6;
	if (tok_is_eog(s->t, id)) {
		bool call = j->hm && id == j->hm->v.call;
		sched_finish(s, j, call ? ORCH_FINISH_TOOL_CALLS : ORCH_FINISH_EOS, ORCH_OK, NULL);
		return;
	}
	if (j->gj != NULL && (rv = grammars_feed(j->gj, id, &e)) != ORCH_OK) {
		sched_finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
		return;
	}
	j->tokens_out++;
	j->hist[j->n_hist++] = id;
	bool text = j->hm   ? harmony_token(j, index, id) /* else a header: no text */
	            : j->tv ? think_token(j, index, id)   /* else a tag: no text */
	                    : true;
	if (text && detok_push(&j->dt, id, &j->pending) != ORCH_OK) {
		sched_finish(s, j, ORCH_FINISH_ERROR, ORCH_ENOMEM, "out of memory");
		return;
	}
	if (text && emit_text(j, index, id)) {
		sched_finish(s, j, ORCH_FINISH_STOP, ORCH_OK, NULL);
		return;
	}
	if (j->gj != NULL && grammars_done(j->gj)) { /* nothing but the end could follow */
		/* harmony: a forced call's message ends the turn as <|call|> would */
		bool call = j->hm && j->tag.message != HARMONY_NO_MESSAGE && j->tag.recipient[0];
		sched_finish(s, j, call ? ORCH_FINISH_TOOL_CALLS : ORCH_FINISH_EOS, ORCH_OK, NULL);
		return;
	}
	if (j->tokens_out >= j->max_tokens || j->fed + 1 > s->cfg.n_ctx) {
		sched_finish(s, j, ORCH_FINISH_LENGTH, ORCH_OK, NULL);
		return;
	}
	j->state = J_DECODE;
	j->last = id;
}

/* The tokens a prefilling job feeds: its prompt, or after a preemption what it had fed. */
const int32_t *
sched_prefill_src(const struct sched_job *j, uint32_t *ret_n)
{
	*ret_n = j->refeed > 0 ? j->refeed : j->n_prompt;
	return j->refeed > 0 ? j->hist : j->prompt;
}

uint32_t
sched_spare_rows(const struct sched *s)
{
	return s->cfg.logit_rows > s->cfg.slots ? s->cfg.logit_rows - s->cfg.slots : 0;
}

/* Whether @j's prompt log-probabilities are still due at position j->prompt_next. */
static bool
prompt_due(const struct sched_job *j)
{
	return j->prompt_logits && j->refeed == 0 && j->prompt_next < j->n_prompt;
}

uint32_t
sched_chunk(const struct sched_job *j, uint32_t budget, uint32_t *spare, struct sched_rows *ret)
{
	uint32_t n_src;

	sched_prefill_src(j, &n_src);
	uint32_t k = n_src - j->fed < budget ? n_src - j->fed : budget;
	*ret = (struct sched_rows){0};
	if (k > 0 && prompt_due(j)) { /* row r gives position r + 1's logits */
		k = k < 1 + *spare ? k : 1 + *spare;
		*spare -= k - 1;
		*ret = (struct sched_rows){.want_logits = true, .all_logits = k > 1};
	}
	ret->want_logits |= k > 0 && j->fed + k == n_src && j->refeed == 0;
	return k;
}

static void
admit(struct sched *s)
{
	for (uint32_t i = 0; i < s->cfg.slots && s->waiting != NULL; i++) {
		if (s->slots[i] != NULL)
			continue;
		if (!sched_kv_admit(s, i))
			break;
		struct sched_job *j = s->waiting;
		s->waiting = j->next;
		if (s->waiting == NULL)
			s->waiting_tail = NULL;
		j->slot = i;
		j->state = J_PREFILL;
		s->slots[i] = j;
		/* a backend that allocates a slot's KV on first use: VRAM_OOM fails this job only
		 */
		struct orch_errinfo e = {0};
		orch_err rv = s->ops->reserve ? s->ops->reserve(s->b, i, &e) : ORCH_OK;
		if (rv != ORCH_OK) {
			sched_finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
			continue;
		}
		uint32_t n_src;
		const int32_t *src = sched_prefill_src(j, &n_src);
		/* a prompt whose every position's logits are due computes them all */
		bool lookup = s->kv != NULL && !prompt_due(j);
		uint32_t cached = lookup ? sched_kv_resume(s, j, src, n_src) : 0;
		j->fed = cached;
		if (j->preempted == 0 && lookup) { /* its own blocks do not count */
			j->cached_tokens = cached;
			s->prompt_queried += n_src;
			s->prompt_hit += cached;
		}
	}
}

/* Whether a job is feeding its prompt (prefill_first's steps are then prompts only). */
static bool
any_prefill(const struct sched *s)
{
	for (uint32_t i = 0; i < s->cfg.slots; i++)
		if (s->slots[i] != NULL && s->slots[i]->state == J_PREFILL)
			return true;
	return false;
}

/*
 * The batch: every decoding job's token, then prompt chunks up to cfg.chunk
 * tokens; with SCHED_PREFILL_FIRST while a prompt is fed, prompt chunks only,
 * up to cfg.chunk + cfg.slots tokens (the step's rows the decodes would take).
 */
static uint32_t
build_batch(struct sched *s)
{
	uint32_t n = 0, budget = s->cfg.chunk, spare = sched_spare_rows(s), first = 0;

	if (s->cfg.policy == SCHED_PREFILL_FIRST && any_prefill(s)) {
		first = 1;
		budget += s->cfg.slots;
	}
	for (uint32_t pass = first; pass < 2; pass++) {
		for (uint32_t i = 0; i < s->cfg.slots; i++) {
			struct sched_job *j = s->slots[i];
			if (j == NULL || j->state != (pass == 0 ? J_DECODE : J_PREFILL))
				continue;
			struct be_seq *q = &s->seqs[n];
			if (pass == 0) {
				*q = (struct be_seq){.slot = j->slot,
				                     .pos = j->fed,
				                     .tokens = &j->last,
				                     .n_tokens = 1,
				                     .want_logits = true};
			} else {
				uint32_t n_src;
				const int32_t *src = sched_prefill_src(j, &n_src);
				struct sched_rows r;
				/* a refeed samples nothing: its next token is already j->last */
				uint32_t k = sched_chunk(j, budget, &spare, &r);
				if (k == 0)
					continue;
				*q = (struct be_seq){.slot = j->slot,
				                     .pos = j->fed,
				                     .tokens = src + j->fed,
				                     .n_tokens = k,
				                     .want_logits = r.want_logits,
				                     .all_logits = r.all_logits};
			}
			if (!sched_kv_append(s, j, q))
				continue;
			budget -= pass == 0 ? 0 : q->n_tokens;
			s->seq_job[n++] = j;
		}
	}
	return n;
}

/*
 * The tokens @j may take now, its grammar's less those logit_bias bans, into
 * row @row of s->mask_bits (*@ret_bits). An error when none is left; the
 * caller finishes @j with it (or, before a step, samples on the host, which
 * meets it again).
 */
static orch_err
job_mask(struct sched *s, struct sched_job *j, uint32_t row, const uint32_t **ret_bits,
         struct orch_errinfo *e)
{
	uint64_t words = (s->n_vocab + 31) / 32;
	uint32_t allowed = 0, *bits;
	orch_err rv;

	if (s->mask_bits == NULL &&
	    (s->mask_bits = orch_calloc(s->cfg.slots * words, sizeof(uint32_t))) == NULL)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	bits = s->mask_bits + row * words;
	if ((rv = grammars_mask(j->gj, s->n_vocab, !j->dt.started && !j->keep_space, bits, &allowed,
	                        e)) != ORCH_OK)
		return rv;
	for (uint32_t i = 0; i < j->sp.n_bias; i++) { /* a ban on an allowed token leaves fewer */
		uint32_t id = (uint32_t)j->sp.bias[i].id, bit = 1u << (id % 32);
		if (j->sp.bias[i].bias <= -100.0f && id < s->n_vocab && (bits[id / 32] & bit)) {
			bits[id / 32] &= ~bit; /* once, however often it is listed */
			allowed--;
		}
	}
	if (allowed == 0)
		return orch_errf(
		        e, ORCH_EINVAL,
		        "no token is left here: the grammar allows only tokens that logit_bias bans");
	*ret_bits = bits;
	return ORCH_OK;
}

/* @lg with what @j may not take at -inf (s->masked); NULL: @j ended with the error. */
static const float *
constrain(struct sched *s, struct sched_job *j, const float *lg)
{
	struct orch_errinfo e = {0};
	const uint32_t *bits = NULL;
	orch_err rv;

	if (s->masked == NULL && (s->masked = orch_calloc(s->n_vocab, sizeof(float))) == NULL)
		rv = orch_errf(&e, ORCH_ENOMEM, "out of memory");
	else
		rv = job_mask(s, j, 0, &bits, &e);
	if (rv != ORCH_OK) {
		sched_finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
		return NULL;
	}
	for (uint32_t i = 0; i < s->n_vocab; i++)
		s->masked[i] = (bits[i / 32] >> (i % 32)) & 1 ? lg[i] : -INFINITY;
	return s->masked;
}

/*
 * Whether step @n's sampling can run on the device: the backend can, no job
 * wants the raw logits or prompt log-probabilities, none has more logit_bias
 * entries than a device sampler takes; s->samp filled, with the allowed tokens
 * of each constrained job that samples (a mask that fails leaves the step to
 * the host sampler, which finishes that job with the error).
 */
static bool
device_sampling(struct sched *s, uint32_t n)
{
	struct orch_errinfo e = {0};
	bool dev = s->ops->forward_sample != NULL;

	for (uint32_t i = 0; i < n && dev; i++) {
		struct sched_job *j = s->seq_job[i];
		dev = j->ops->on_logits == NULL && j->sp.n_bias <= BE_SAMPLE_MAX_BIAS &&
		      !j->prompt_logits && j->max_tokens > 0;
		s->samp[i] = (struct be_sample){&j->sp, j->hist, j->n_hist, j->tokens_out, NULL};
	}
	for (uint32_t i = 0; i < n && dev; i++) /* the masks once the step is the device's */
		if (s->seq_job[i]->gj != NULL && s->seqs[i].want_logits)
			dev = job_mask(s, s->seq_job[i], i, &s->samp[i].mask, &e) == ORCH_OK;
	return dev;
}

/*
 * The rows @q's step returned for @j from @lg: the prompt positions they predict go to
 * on_prompt; then the row to sample from, or NULL when the prompt is not all fed yet, or
 * when it is and the job wants no token (max_tokens 0: it ends here).
 */
static const float *
prompt_rows(struct sched *s, struct sched_job *j, const struct be_seq *q, const float *lg)
{
	uint32_t rows = q->all_logits ? q->n_tokens : 1;
	uint32_t p = q->pos + q->n_tokens - rows; /* row 0's position: it predicts p + 1 */

	for (uint32_t r = 0; r < rows && j->state == J_PREFILL && !j->cancel; r++, p++)
		if (j->prompt_logits && p + 1 == j->prompt_next && p + 1 < j->n_prompt) {
			j->ops->on_prompt(j->ctx, j, p + 1, lg + (uint64_t)r * s->n_vocab,
			                  s->n_vocab);
			j->prompt_next++;
		}
	/* a job cancelled here (on_prompt could not keep a position) samples nothing more */
	if ((j->state == J_PREFILL && j->fed < j->n_prompt) || j->cancel)
		return NULL;
	if (j->max_tokens == 0) {
		sched_finish(s, j, ORCH_FINISH_LENGTH, ORCH_OK, NULL);
		return NULL;
	}
	return lg + (uint64_t)(rows - 1) * s->n_vocab;
}

void
sched_step(struct sched *s)
{
	struct orch_errinfo e = {0};
	const float *logits = NULL;
	uint32_t n, row = 0;

	for (uint32_t i = 0; i < s->cfg.slots; i++)
		if (s->slots[i] != NULL && s->slots[i]->cancel)
			sched_finish(s, s->slots[i], ORCH_FINISH_CANCELLED, ORCH_ECANCELLED,
			             "cancelled");
	admit(s);
	sched_kv_make_room(s);
	s->last = (struct sched_step_info){0};
	if ((n = build_batch(s)) == 0)
		return;
	s->last.seqs = n;
	for (uint32_t i = 0; i < n; i++) {
		if (s->seq_job[i]->state == J_DECODE)
			s->last.decode_seqs++;
		else
			s->last.prefill_tokens += s->seqs[i].n_tokens;
	}
	bool dev_sample = device_sampling(s, n);
	double t0 = (double)orch_mono_ns() / 1e6;
	orch_err rv = dev_sample ? s->ops->forward_sample(s->b, s->seqs, n, s->samp, s->ids, &e)
	                         : s->ops->forward(s->b, s->seqs, n, &logits, &e);
	double t1 = (double)orch_mono_ns() / 1e6;
	s->last.forward_ms = t1 - t0;
	for (uint32_t i = 0; i < n; i++) {
		struct sched_job *j = s->seq_job[i];
		if (rv != ORCH_OK) {
			sched_kv_uncache(s, j->slot, s->seqs[i].pos);
			sched_finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
			continue;
		}
		j->fed += s->seqs[i].n_tokens;
		if (j->refeed > 0 && j->fed == j->refeed) { /* back where it was preempted */
			j->state = J_DECODE;
			j->refeed = 0;
		}
		if (!s->seqs[i].want_logits)
			continue;
		if (dev_sample) {
			accept_token(s, j, s->ids[row++]);
			continue;
		}
		const float *lg = logits + (uint64_t)row * s->n_vocab;
		row += s->seqs[i].all_logits ? s->seqs[i].n_tokens : 1;
		if ((lg = prompt_rows(s, j, &s->seqs[i], lg)) == NULL)
			continue;
		if (j->ops->on_logits)
			j->ops->on_logits(j->ctx, j, j->tokens_out, lg, s->n_vocab);
		if (j->gj != NULL && (lg = constrain(s, j, lg)) == NULL)
			continue;
		accept_token(s, j,
		             samp_sample(&j->sp, lg, s->n_vocab, j->hist, j->n_hist, j->tokens_out,
		                         s->work));
	}
	s->last.sample_ms = (double)orch_mono_ns() / 1e6 - t1;
}

void
sched_last_step(const struct sched *s, struct sched_step_info *ret)
{
	*ret = s->last;
}

const char *
sched_job_state(const struct sched_job *j)
{
	return j->state == J_DECODE ? "decode" : j->state == J_PREFILL ? "prefill" : "waiting";
}

void
sched_usage(const struct sched *s, uint32_t *busy, uint64_t *kv_cells)
{
	*busy = 0;
	*kv_cells = 0;
	for (uint32_t i = 0; i < s->cfg.slots; i++) {
		if (s->slots[i] == NULL)
			continue;
		(*busy)++;
		*kv_cells += s->slots[i]->fed;
	}
}

bool
sched_idle(const struct sched *s)
{
	if (s->waiting != NULL)
		return false;
	for (uint32_t i = 0; i < s->cfg.slots; i++)
		if (s->slots[i] != NULL)
			return false;
	return true;
}
