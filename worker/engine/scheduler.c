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
#include "scheduler.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "gguf/model_info.h"
#include "grammars.h"
#include "kv_blocks.h"
#include "text/tokenizer.h"

_Static_assert(sizeof(((struct sched_config *)0)->kv_seed) == KVB_SEED_BYTES,
               "sched_config.kv_seed is a kv_blocks seed");

enum { J_WAITING, J_PREFILL, J_DECODE };

struct sched {
	const struct be_ops *ops;
	struct be_model *b;
	const struct tok *t;
	uint32_t n_vocab;
	struct sched_config cfg;
	struct sched_job **slots; /* [slots]: running jobs */
	struct sched_job *waiting, *waiting_tail;
	struct be_seq *seqs;        /* [slots] */
	struct sched_job **seq_job; /* [slots] */
	struct samp_cand *work;     /* [n_vocab] */
	float *masked;              /* [n_vocab]: a constrained job's logits; NULL until one */
	struct be_sample *samp;     /* [slots]: for a backend that samples (forward_sample) */
	int32_t *ids;               /* [slots] */
	struct sched_step_info last;
	struct kvb *kv;  /* paged KV: the block pool, sequence i = slot i; NULL: slots */
	struct kvb *kvw; /* paged sliding-window layers: their pool; NULL: none (or rings) */
	uint64_t arrivals, preemptions;
	uint64_t prompt_queried, prompt_hit; /* first admissions only (a refeed hits itself) */
};

/* The block pools of a paged scheduler: the full layers', and the windows' if any. */
static orch_err
kv_pools(struct sched *s, struct orch_errinfo *reterr)
{
	const struct sched_config *cfg = &s->cfg;
	struct kvb_config kc = {.n_blocks = cfg->kv_blocks,
	                        .block_tokens = cfg->kv_block_tokens,
	                        .max_seqs = cfg->slots,
	                        .max_seq_tokens = cfg->n_ctx,
	                        .prefix_cache = cfg->prefix_cache};
	orch_err rv;

	assert(s->ops->paged && s->ops->copy_blocks != NULL);
	memcpy(kc.seed, cfg->kv_seed, sizeof(kc.seed));
	if ((rv = kvb_new(&kc, &s->kv, reterr)) != ORCH_OK || cfg->kv_swa_blocks == 0)
		return rv;
	uint32_t most = model_swa_blocks(cfg->n_ctx, cfg->n_swa, cfg->chunk + cfg->slots,
	                                 kvb_block_tokens(s->kv));
	if (cfg->n_swa == 0 || cfg->kv_swa_blocks / cfg->slots < most)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "a sliding-window pool of %u blocks for %u sequences of window %u "
		                 "(each may hold %u)",
		                 cfg->kv_swa_blocks, cfg->slots, cfg->n_swa, most);
	kc.n_blocks = cfg->kv_swa_blocks;
	kc.window = cfg->n_swa;
	return kvb_new(&kc, &s->kvw, reterr);
}

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
	orch_err rv = cfg->kv_blocks > 0 ? kv_pools(s, reterr) : ORCH_OK;
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
	orch_free(s->samp);
	orch_free(s->ids);
	kvb_free(s->kv);
	kvb_free(s->kvw);
	orch_free(s);
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
	j->arrival = s->arrivals++;
	j->cancel = false;
	j->pending = (struct sbuf){0};
	detok_init(&j->dt, s->t, TOK_STRIP_PREFIX | (j->hm && j->hm_raw ? TOK_RENDER_SPECIAL : 0));
	j->tag = (struct harmony_tag){.message = HARMONY_NO_MESSAGE};
	if (j->hm)
		harmony_prime(j->hm, j->prompt, j->n_prompt);
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
	return j->hm && j->tag.message != HARMONY_NO_MESSAGE ? &j->tag : NULL;
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

/* Paged: give sequence @seq's blocks back, in both pools. */
static void
kv_seq_free(struct sched *s, uint32_t seq)
{
	if (s->kv != NULL)
		kvb_seq_free(s->kv, seq);
	if (s->kvw != NULL)
		kvb_seq_free(s->kvw, seq);
}

static void
finish(struct sched *s, struct sched_job *j, enum orch_finish why, orch_err err, const char *msg)
{
	double now = (double)orch_mono_ns() / 1e6;

	if (why != ORCH_FINISH_STOP && why != ORCH_FINISH_ERROR && why != ORCH_FINISH_CANCELLED)
		release(j, j->tokens_out ? j->tokens_out - 1 : 0);
	j->prefill_ms = (j->t_first > 0 ? j->t_first : now) - j->t_start;
	j->decode_ms = j->t_first > 0 ? now - j->t_first : 0;
	if (j->state != J_WAITING) {
		s->slots[j->slot] = NULL;
		kv_seq_free(s, j->slot);
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
		finish(s, j, ORCH_FINISH_CANCELLED, ORCH_ECANCELLED, "cancelled");
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

/* A token sampled for @j: emit it and decide whether the job goes on. */
static void
accept_token(struct sched *s, struct sched_job *j, int32_t id)
{
	uint32_t index = j->tokens_out;
	struct orch_errinfo e = {0};
	orch_err rv;

	if (index < j->n_script)
		id = j->script[index];
	if (j->t_first == 0)
		j->t_first = (double)orch_mono_ns() / 1e6;
	if (tok_is_eog(s->t, id)) {
		bool call = j->hm && id == j->hm->v.call;
		finish(s, j, call ? ORCH_FINISH_TOOL_CALLS : ORCH_FINISH_EOS, ORCH_OK, NULL);
		return;
	}
	if (j->gj != NULL && (rv = grammars_feed(j->gj, id, &e)) != ORCH_OK) {
		finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
		return;
	}
	j->tokens_out++;
	j->hist[j->n_hist++] = id;
	bool text = j->hm == NULL || harmony_token(j, index, id); /* else a header: no text */
	if (text && detok_push(&j->dt, id, &j->pending) != ORCH_OK) {
		finish(s, j, ORCH_FINISH_ERROR, ORCH_ENOMEM, "out of memory");
		return;
	}
	if (text && emit_text(j, index, id)) {
		finish(s, j, ORCH_FINISH_STOP, ORCH_OK, NULL);
		return;
	}
	if (j->gj != NULL && grammars_done(j->gj)) { /* nothing but the end could follow */
		/* harmony: a forced call's message ends the turn as <|call|> would */
		bool call = j->hm && j->tag.message != HARMONY_NO_MESSAGE && j->tag.recipient[0];
		finish(s, j, call ? ORCH_FINISH_TOOL_CALLS : ORCH_FINISH_EOS, ORCH_OK, NULL);
		return;
	}
	if (j->tokens_out >= j->max_tokens || j->fed + 1 > s->cfg.n_ctx) {
		finish(s, j, ORCH_FINISH_LENGTH, ORCH_OK, NULL);
		return;
	}
	j->state = J_DECODE;
	j->last = id;
}

/* The tokens a prefilling job feeds: its prompt, or after a preemption what it had fed. */
static const int32_t *
prefill_src(const struct sched_job *j, uint32_t *ret_n)
{
	*ret_n = j->refeed > 0 ? j->refeed : j->n_prompt;
	return j->refeed > 0 ? j->hist : j->prompt;
}

/*
 * Paged: the blocks the next step's appends take (each decoding job one
 * token, prompt chunks as build_batch gives them), and the youngest running
 * job (NULL when none runs).
 */
static uint64_t
step_need(const struct sched *s, struct sched_job **ret_young)
{
	uint64_t need = 0;
	uint32_t budget = s->cfg.chunk;

	*ret_young = NULL;
	for (uint32_t pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < s->cfg.slots; i++) {
			struct sched_job *j = s->slots[i];
			uint32_t n = 1;
			if (j == NULL || j->state != (pass == 0 ? J_DECODE : J_PREFILL))
				continue;
			if (pass == 1) {
				prefill_src(j, &n);
				n = n - j->fed < budget ? n - j->fed : budget;
				budget -= n;
			}
			need += kvb_seq_blocks_needed(s->kv, i, n);
			if (*ret_young == NULL || j->arrival > (*ret_young)->arrival)
				*ret_young = j;
		}
	return need;
}

/* Paged: give @j's blocks back and queue it first again (see the design notes). */
static void
preempt(struct sched *s, struct sched_job *j)
{
	kv_seq_free(s, j->slot);
	s->slots[j->slot] = NULL;
	if (j->state == J_DECODE)
		j->refeed = j->fed;
	j->state = J_WAITING;
	j->fed = 0;
	j->preempted++;
	j->next = s->waiting;
	s->waiting = j;
	if (s->waiting_tail == NULL)
		s->waiting_tail = j;
	s->preemptions++;
}

/*
 * Paged: before a step, preempt the youngest running jobs until the step's
 * appends fit; the last one running that still cannot grow fails.
 */
static void
kv_make_room(struct sched *s)
{
	struct sched_job *young;

	while (s->kv != NULL && step_need(s, &young) > (uint64_t)kvb_available(s->kv)) {
		uint32_t running = 0;
		for (uint32_t i = 0; i < s->cfg.slots; i++)
			running += s->slots[i] != NULL;
		if (running > 1) {
			preempt(s, young);
			continue;
		}
		finish(s, young, ORCH_FINISH_ERROR, ORCH_EVRAM,
		       "the KV cache cannot hold this sequence");
		return;
	}
}

/*
 * Paged: whether the head of the queue may take sequence @seq now: the
 * blocks its whole prompt (or refeed) needs are available beside what the
 * running jobs' next step takes. One that cannot fit even with no job
 * running fails (ORCH_EVRAM); otherwise it waits.
 */
static bool
kv_admit(struct sched *s, uint32_t seq)
{
	struct sched_job *j = s->waiting, *young;
	uint32_t n;

	if (s->kv == NULL)
		return true;
	prefill_src(j, &n);
	uint64_t need = kvb_seq_blocks_needed(s->kv, seq, n) + step_need(s, &young);
	uint64_t reserve = young != NULL ? (uint64_t)(s->cfg.kv_watermark * s->cfg.kv_blocks) : 0;
	if (need + reserve <= (uint64_t)kvb_available(s->kv))
		return true;
	if (young != NULL)
		return false;
	s->waiting = j->next;
	if (s->waiting == NULL)
		s->waiting_tail = NULL;
	finish(s, j, ORCH_FINISH_ERROR, ORCH_EVRAM, "the KV cache cannot hold this prompt");
	return false;
}

/*
 * Paged: start @j's sequence after the longest prefix of its @n @src tokens
 * that every pool holds (0 without the prefix cache); the number of tokens.
 */
static uint32_t
kv_resume(struct sched *s, struct sched_job *j, const int32_t *src, uint32_t n)
{
	const void *salt = j->cache_salt;
	uint32_t sl = j->cache_salt_len, len = 0;
	orch_err rv;

	if (s->kvw == NULL) { /* one pool: match and attach in one pass over the keys */
		rv = kvb_seq_match(s->kv, j->slot, src, n, salt, sl, &len);
	} else {
		len = kvb_match_len(s->kv, src, n, salt, sl, UINT32_MAX);
		len = kvb_match_len(s->kvw, src, n, salt, sl, len);
		rv = kvb_seq_resume(s->kv, j->slot, src, len, salt, sl);
		if (rv == ORCH_OK)
			rv = kvb_seq_resume(s->kvw, j->slot, src, len, salt, sl);
	}
	assert(rv == ORCH_OK); /* a free slot's sequences are empty; the blocks were cached */
	(void)rv;
	return len;
}

static void
admit(struct sched *s)
{
	for (uint32_t i = 0; i < s->cfg.slots && s->waiting != NULL; i++) {
		if (s->slots[i] != NULL)
			continue;
		if (!kv_admit(s, i))
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
			finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
			continue;
		}
		uint32_t n_src;
		const int32_t *src = prefill_src(j, &n_src);
		uint32_t cached = s->kv != NULL ? kv_resume(s, j, src, n_src) : 0;
		j->fed = cached;
		if (j->preempted == 0 && s->kv != NULL) { /* its own blocks do not count */
			j->cached_tokens = cached;
			s->prompt_queried += n_src;
			s->prompt_hit += cached;
		}
	}
}

/* Append @q's tokens to @q's sequence in pool @kv and copy what copy-on-write asks. */
static orch_err
kv_append_pool(struct sched *s, struct kvb *kv, bool swa, const struct be_seq *q,
               struct orch_errinfo *reterr)
{
	struct kvb_copy c = {0};
	orch_err rv;

	assert(kvb_seq_len(kv, q->slot) == q->pos);
	rv = kvb_seq_append(kv, q->slot, q->tokens, q->n_tokens, &c, reterr);
	if (rv == ORCH_OK && c.n_tokens > 0)
		rv = s->ops->copy_blocks(s->b, swa, c.src, c.dst, c.n_tokens, reterr);
	return rv;
}

/*
 * A step that was to compute positions @pos.. of sequence @seq failed: the
 * blocks its appends keyed must not be matched (their rows were never written).
 */
static void
kv_uncache(struct sched *s, uint32_t seq, uint32_t pos)
{
	if (s->kv != NULL)
		kvb_seq_uncache_from(s->kv, seq, pos);
	if (s->kvw != NULL)
		kvb_seq_uncache_from(s->kvw, seq, pos);
}

/*
 * Paged: append @q's tokens to @j's sequences (in the window pool after
 * dropping the blocks no query of the step sees) and give @q the tables.
 * False when that failed: @j is then finished.
 */
static bool
kv_append(struct sched *s, struct sched_job *j, struct be_seq *q)
{
	struct orch_errinfo e = {0};
	orch_err rv;

	if (s->kv == NULL)
		return true;
	if (s->kvw != NULL && q->pos + 1 > s->cfg.n_swa) {
		rv = kvb_seq_drop_before(s->kvw, j->slot, q->pos + 1 - s->cfg.n_swa);
		assert(rv == ORCH_OK); /* the sequence holds pos tokens */
	}
	rv = kv_append_pool(s, s->kv, false, q, &e);
	if (rv == ORCH_OK && s->kvw != NULL)
		rv = kv_append_pool(s, s->kvw, true, q, &e);
	if (rv != ORCH_OK) {
		kv_uncache(s, j->slot, q->pos);
		finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
		return false;
	}
	q->blocks = kvb_seq_table(s->kv, j->slot, &q->n_blocks);
	q->first_block = kvb_seq_first_block(s->kv, j->slot);
	if (s->kvw != NULL) {
		q->swa_blocks = kvb_seq_table(s->kvw, j->slot, &q->n_swa_blocks);
		q->swa_first_block = kvb_seq_first_block(s->kvw, j->slot);
	}
	return true;
}

/* The batch: every decoding job's token, then prompt chunks up to cfg.chunk tokens. */
static uint32_t
build_batch(struct sched *s)
{
	uint32_t n = 0, budget = s->cfg.chunk;

	for (uint32_t pass = 0; pass < 2; pass++) {
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
				const int32_t *src = prefill_src(j, &n_src);
				uint32_t k = n_src - j->fed < budget ? n_src - j->fed : budget;
				if (k == 0)
					continue;
				/* a refeed samples nothing: its next token is already j->last */
				*q = (struct be_seq){.slot = j->slot,
				                     .pos = j->fed,
				                     .tokens = src + j->fed,
				                     .n_tokens = k,
				                     .want_logits =
				                             j->fed + k == n_src && j->refeed == 0};
			}
			if (!kv_append(s, j, q))
				continue;
			budget -= pass == 0 ? 0 : q->n_tokens;
			s->seq_job[n++] = j;
		}
	}
	return n;
}

/* @lg with what @j's grammar forbids masked out (s->masked); NULL: @j ended with the error. */
static const float *
constrain(struct sched *s, struct sched_job *j, const float *lg)
{
	struct orch_errinfo e = {0};
	orch_err rv;

	if (s->masked == NULL && (s->masked = orch_calloc(s->n_vocab, sizeof(float))) == NULL) {
		finish(s, j, ORCH_FINISH_ERROR, ORCH_ENOMEM, "out of memory");
		return NULL;
	}
	uint32_t allowed = 0;
	if ((rv = grammars_constrain(j->gj, lg, s->n_vocab, !j->dt.started, s->masked, &allowed,
	                             &e)) != ORCH_OK) {
		finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
		return NULL;
	}
	for (uint32_t i = 0; i < j->sp.n_bias; i++) /* a ban on an allowed token leaves fewer */
		if (j->sp.bias[i].bias <= -100.0f && s->masked[j->sp.bias[i].id] > -INFINITY) {
			s->masked[j->sp.bias[i].id] =
			        -INFINITY; /* once, however often it is listed */
			allowed--;
		}
	if (allowed == 0) {
		finish(s, j, ORCH_FINISH_ERROR, ORCH_EINVAL,
		       "no token is left here: the grammar allows only tokens that logit_bias bans");
		return NULL;
	}
	return s->masked;
}

void
sched_step(struct sched *s)
{
	struct orch_errinfo e = {0};
	const float *logits = NULL;
	uint32_t n, row = 0;

	for (uint32_t i = 0; i < s->cfg.slots; i++)
		if (s->slots[i] != NULL && s->slots[i]->cancel)
			finish(s, s->slots[i], ORCH_FINISH_CANCELLED, ORCH_ECANCELLED, "cancelled");
	admit(s);
	kv_make_room(s);
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
	/* sampling on the device when the backend can, no job wants the raw logits, no job
	 * is constrained and none uses a step only the host sampler has (samp_host_only) */
	bool dev_sample = s->ops->forward_sample != NULL;
	for (uint32_t i = 0; i < n && dev_sample; i++) {
		struct sched_job *j = s->seq_job[i];
		dev_sample = j->ops->on_logits == NULL && j->gj == NULL && !samp_host_only(&j->sp);
		s->samp[i] = (struct be_sample){&j->sp, j->hist, j->n_hist, j->tokens_out};
	}
	double t0 = (double)orch_mono_ns() / 1e6;
	orch_err rv = dev_sample ? s->ops->forward_sample(s->b, s->seqs, n, s->samp, s->ids, &e)
	                         : s->ops->forward(s->b, s->seqs, n, &logits, &e);
	double t1 = (double)orch_mono_ns() / 1e6;
	s->last.forward_ms = t1 - t0;
	for (uint32_t i = 0; i < n; i++) {
		struct sched_job *j = s->seq_job[i];
		if (rv != ORCH_OK) {
			kv_uncache(s, j->slot, s->seqs[i].pos);
			finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
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
		const float *lg = logits + (uint64_t)row++ * s->n_vocab;
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

uint64_t
sched_preemptions(const struct sched *s)
{
	return s->preemptions;
}

bool
sched_kv_stats(const struct sched *s, struct kvb_stats *ret)
{
	*ret = s->kv != NULL ? kvb_stats(s->kv) : (struct kvb_stats){0};
	ret->query_tokens = s->prompt_queried; /* prompts, not a preempted job's refeed */
	ret->hit_tokens = s->prompt_hit;
	return s->kv != NULL;
}

bool
sched_kv_swa_stats(const struct sched *s, struct kvb_stats *ret)
{
	*ret = s->kvw != NULL ? kvb_stats(s->kvw) : (struct kvb_stats){0};
	return s->kvw != NULL;
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
