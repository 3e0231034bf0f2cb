#pragma once
/*
 * scheduler_int.h - internal to the scheduler: its state, and what
 * scheduler.c (jobs, batches, steps) and scheduler_kv.c (the paged KV
 * cache's pools, admission, preemption and appends) share.
 */
#include "kv_blocks.h"
#include "scheduler.h"

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
	uint32_t *mask_bits;    /* [slots][(n_vocab + 31) / 32]: constrained rows' allowed tokens */
	struct be_sample *samp; /* [slots]: for a backend that samples (forward_sample) */
	int32_t *ids;           /* [slots] */
	struct sched_step_info last;
	struct kvb *kv;  /* paged KV: the block pool, sequence i = slot i; NULL: slots */
	struct kvb *kvw; /* paged sliding-window layers: their pool; NULL: none (or rings) */
	uint64_t arrivals, preemptions;
	uint64_t prompt_queried, prompt_hit; /* first admissions only (a refeed hits itself) */
};

/* sched_finish - end @j (its one on_end) and free its slot and blocks. */
void sched_finish(struct sched *s, struct sched_job *j, enum orch_finish why, orch_err err,
                  const char *msg);

/* sched_prefill_src - the tokens a prefilling job feeds: its prompt, or after a preemption
 * what it had fed. */
const int32_t *sched_prefill_src(const struct sched_job *j, uint32_t *ret_n);

/* The logits a prefilling job's chunk asks for (sched_chunk). */
struct sched_rows {
	bool want_logits, all_logits; /* be_seq's */
};

/*
 * sched_chunk - the tokens @j feeds next, at most @budget, and which logits the step
 * returns for them: the last when its prompt ends there; all of them while its prompt's
 * log-probabilities are due (prompt_logits), where up to *@spare extra rows (which it
 * takes) let it feed more than one position. build_batch and the paged KV's accounting
 * both count with it.
 */
uint32_t sched_chunk(const struct sched_job *j, uint32_t budget, uint32_t *spare,
                     struct sched_rows *ret);

/* sched_spare_rows - the logit rows a step has beyond one per slot. */
uint32_t sched_spare_rows(const struct sched *s);

/* ---- scheduler_kv.c (paged KV; each is a no-op or true without pools) ---- */

/* sched_kv_pools - the block pools of a paged scheduler: the full layers', and the windows'. */
orch_err sched_kv_pools(struct sched *s, struct orch_errinfo *reterr);

/* sched_kv_seq_free - give sequence @seq's blocks back, in both pools. */
void sched_kv_seq_free(struct sched *s, uint32_t seq);

/* sched_kv_make_room - preempt the youngest running jobs until the step's appends fit. */
void sched_kv_make_room(struct sched *s);

/* sched_kv_admit - whether the head of the queue may take sequence @seq now. */
bool sched_kv_admit(struct sched *s, uint32_t seq);

/* sched_kv_resume - start @j's sequence after its longest cached prefix; its length. */
uint32_t sched_kv_resume(struct sched *s, struct sched_job *j, const int32_t *src, uint32_t n);

/* sched_kv_uncache - a failed step's blocks from @pos on must not be matched. */
void sched_kv_uncache(struct sched *s, uint32_t seq, uint32_t pos);

/* sched_kv_append - append @q's tokens to @j's sequences and give @q the tables; false: @j
 * was finished. */
bool sched_kv_append(struct sched *s, struct sched_job *j, struct be_seq *q);
