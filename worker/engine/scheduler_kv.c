/*
 * scheduler_kv.c - the scheduler's paged KV cache (scheduler_int.h): the
 * block pools, admission by free blocks, preemption of the youngest job,
 * the prefix cache's resume, and each step's appends (the design notes in
 * scheduler.c say how they fit together).
 */
#include <assert.h>
#include <string.h>

#include "gguf/model_info.h"
#include "scheduler_int.h"

/* The block pools of a paged scheduler: the full layers', and the windows' if any. */
orch_err
sched_kv_pools(struct sched *s, struct orch_errinfo *reterr)
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

/* Paged: give sequence @seq's blocks back, in both pools. */
void
sched_kv_seq_free(struct sched *s, uint32_t seq)
{
	if (s->kv != NULL)
		kvb_seq_free(s->kv, seq);
	if (s->kvw != NULL)
		kvb_seq_free(s->kvw, seq);
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
	uint32_t budget = s->cfg.chunk, spare = sched_spare_rows(s);
	struct sched_rows c;

	*ret_young = NULL;
	for (uint32_t pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < s->cfg.slots; i++) {
			struct sched_job *j = s->slots[i];
			uint32_t n = 1;
			if (j == NULL || j->state != (pass == 0 ? J_DECODE : J_PREFILL))
				continue;
			if (pass == 1) {
				n = sched_chunk(j, budget, &spare, &c);
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
	sched_kv_seq_free(s, j->slot);
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
void
sched_kv_make_room(struct sched *s)
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
		sched_finish(s, young, ORCH_FINISH_ERROR, ORCH_EVRAM,
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
bool
sched_kv_admit(struct sched *s, uint32_t seq)
{
	struct sched_job *j = s->waiting, *young;
	uint32_t n;

	if (s->kv == NULL)
		return true;
	sched_prefill_src(j, &n);
	uint64_t need = kvb_seq_blocks_needed(s->kv, seq, n) + step_need(s, &young);
	uint64_t reserve = young != NULL ? (uint64_t)(s->cfg.kv_watermark * s->cfg.kv_blocks) : 0;
	if (need + reserve <= (uint64_t)kvb_available(s->kv))
		return true;
	if (young != NULL)
		return false;
	s->waiting = j->next;
	if (s->waiting == NULL)
		s->waiting_tail = NULL;
	sched_finish(s, j, ORCH_FINISH_ERROR, ORCH_EVRAM, "the KV cache cannot hold this prompt");
	return false;
}

/*
 * Paged: start @j's sequence after the longest prefix of its @n @src tokens
 * that every pool holds (0 without the prefix cache); the number of tokens.
 */
uint32_t
sched_kv_resume(struct sched *s, struct sched_job *j, const int32_t *src, uint32_t n)
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
void
sched_kv_uncache(struct sched *s, uint32_t seq, uint32_t pos)
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
bool
sched_kv_append(struct sched *s, struct sched_job *j, struct be_seq *q)
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
		sched_kv_uncache(s, j->slot, q->pos);
		sched_finish(s, j, ORCH_FINISH_ERROR, rv, e.msg);
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
