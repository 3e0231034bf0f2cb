#pragma once
/*
 * scheduler.h - continuous batching over one backend: up to `slots` jobs run
 * together; between steps finished jobs leave and waiting ones enter. A
 * step carries one token for every decoding job plus up to `chunk` prompt
 * tokens of prefilling jobs, so a long prompt cannot stall the others.
 *
 * Per job: sampling (sampler.h), streaming detokenization (detok.h), stop
 * conditions — end-of-generation tokens, max_tokens, a full context, and
 * stop strings matched on the text (a string split across tokens is caught
 * and never emitted: text that could start one is held back). Every
 * accepted job gets exactly one on_end.
 *
 * A job given a harmony parser (gpt-oss) has its output split by message:
 * the text of each on_token call belongs to one message (sched_job_tag),
 * held-back text is released when a message ends, and <|call|> ends the job
 * with ORCH_FINISH_TOOL_CALLS. A chat job's headers and control tokens give
 * no text; a raw prompt's keep theirs, rendered, untagged.
 * Thread: one caller drives a sched (submit, step, cancel); callbacks run on it.
 */
#include "backend.h"
#include "base/finish.h"
#include "base/sbuf.h"
#include "sampler.h"
#include "text/detok.h"
#include "text/harmony.h"
#include "text/think.h"

struct kvb_stats;
struct sched_job;

struct sched_job_ops {
	/*
	 * on_token - generated token @index (@id) and the text it completes (may
	 * be empty: held back as an incomplete character or a possible stop
	 * string start). At the end of a job that did not stop on a stop string,
	 * held-back text comes in one last call with @id -1; so does the text
	 * held back when a harmony message ends.
	 */
	void (*on_token)(void *ctx, struct sched_job *j, uint32_t index, int32_t id,
	                 const char *text, size_t n);
	/* on_logits - optional: the raw logits token @index was sampled from. */
	void (*on_logits)(void *ctx, struct sched_job *j, uint32_t index, const float *logits,
	                  uint32_t n_vocab);
	/*
	 * on_prompt - for a job with prompt_logits: prompt token @pos (1 ≤ @pos <
	 * n_prompt) and the raw logits it was predicted from, each position once,
	 * in order, all before the job's first on_token.
	 */
	void (*on_prompt)(void *ctx, struct sched_job *j, uint32_t pos, const float *logits,
	                  uint32_t n_vocab);
	/* on_end - the job is over (@err set for ORCH_FINISH_ERROR); its slot is free again. */
	void (*on_end)(void *ctx, struct sched_job *j, enum orch_finish why, orch_err err,
	               const char *msg);
};

struct sched_job {
	/* set by the caller before sched_submit; kept alive until on_end */
	uint64_t id;
	const int32_t *prompt;
	uint32_t n_prompt;
	struct samp_params sp;
	uint32_t max_tokens; /* 0: the prompt is fed, nothing sampled; ends ORCH_FINISH_LENGTH */
	const char *const *stops;
	uint32_t n_stops;
	const struct sched_job_ops *ops;
	void *ctx;
	struct harmony *hm; /* harmony_init'ed: split the output by message; NULL: plain text */
	bool hm_raw;        /* with hm: headers and control tokens stay in the text, rendered */
	/* a thinking model's chat (think.h), without hm: what lies between <think> and
	 * </think> is tagged message 0, channel "analysis", what follows message 1, "final";
	 * NULL: plain text */
	const struct think_vocab *tv;
	/* the output continues a raw prompt's text: the space an SPM model's first token starts
	 * with is kept (else it is the dummy prefix, dropped, as a chat's answer has it) */
	bool keep_space;
	const int32_t *script; /* a test hook: the first n_script tokens, instead of sampled ones */
	uint32_t n_script;
	/* paged with the prefix cache: a job shares cached blocks only with jobs of the
	 * same salt (NULL/0: the unsalted pool); kept alive until on_end */
	const void *cache_salt;
	uint32_t cache_salt_len;
	/* constrained decoding: tokens are sampled only from what this grammar allows
	 * next, and the job ends when its output is a sentence nothing can follow
	 * (grammars.h); NULL: none. Kept alive until on_end */
	struct gram_job *gj;
	/* the logits of every prompt position to ops->on_prompt (a prompt's log-probabilities):
	 * its prompt is fed a few positions a step and takes nothing from the prefix cache */
	bool prompt_logits;
	/* results, valid in on_end */
	uint32_t tokens_out;
	uint32_t cached_tokens; /* prompt tokens found in the prefix cache at admission */
	uint32_t preempted;     /* times its blocks were taken back (paged) */
	double prefill_ms, decode_ms;
	/* owner: sched */
	int state;
	uint32_t slot, fed;
	int32_t last;
	int32_t *hist; /* prompt + generated, capacity n_prompt + max_tokens */
	uint32_t n_hist;
	uint64_t arrival; /* submission order: the youngest is preempted first */
	uint32_t refeed;  /* preempted while decoding: hist[0, refeed) is fed again, then decode */
	uint32_t prompt_next; /* prompt_logits: the next position on_prompt is due for */
	struct detok dt;
	struct sbuf pending;
	struct harmony_tag tag; /* with hm or tv: the message the pending text belongs to */
	uint8_t think;          /* with tv: where the output is (scheduler.c) */
	bool think_skip;        /* with tv: the whitespace after a tag is being dropped */
	double t_start, t_first;
	bool cancel;
	struct sched_job *next;
};

/*
 * sched_job_tag - in on_token: the harmony message (or think block) the text belongs
 * to; NULL for a job without a parser and text outside any message.
 */
const struct harmony_tag *sched_job_tag(const struct sched_job *j);

struct sched;

/*
 * How a step is filled (docs/configuration.md, scheduler): SCHED_DECODE_FIRST,
 * every decoding job's token and then prompt chunks up to `chunk` tokens (a
 * long prompt never stalls the jobs already streaming); SCHED_PREFILL_FIRST,
 * while a prompt is being fed a step feeds prompts only, up to `chunk` +
 * `slots` tokens, and decoding jobs wait (the first token sooner, the streams
 * pausing meanwhile).
 */
enum sched_policy { SCHED_DECODE_FIRST, SCHED_PREFILL_FIRST };

struct sched_config {
	uint32_t slots, n_ctx,
	        chunk; /* chunk: prompt tokens per step (all prefilling jobs together) */
	enum sched_policy policy;
	/* the backend's be_config.logit_rows: rows beyond one per slot carry prompt_logits
	 * jobs' positions, many a step (0: one position a step) */
	uint32_t logit_rows;
	/* paged KV: the backend's be_config.kv_blocks / kv_block_tokens (0: slots) */
	uint32_t kv_blocks, kv_block_tokens;
	/* paged: the sliding-window layers' pool (be_config.kv_swa_blocks; 0: none), at
	 * least slots × model_swa_blocks(n_ctx, n_swa, chunk + slots, kv_block_tokens),
	 * and the window, n_swa positions */
	uint32_t kv_swa_blocks, n_swa;
	/* paged: reuse cached prompt prefixes (kv_blocks.h) */
	bool prefix_cache;
	/* paged: the share of the pool's blocks a job is admitted only beside, while
	 * others run (room for the running jobs to grow before one is preempted) */
	double kv_watermark;
	uint8_t kv_seed[32]; /* the model and tokenizer identity mixed into every key */
};

/*
 * sched_new - a scheduler over backend @b (made with @ops for the same slots,
 * n_ctx and KV pools, and max_batch_tokens ≥ chunk + slots) and tokenizer
 * @t. With kv_blocks > 0 (@ops must be paged) it owns the block pools and
 * hands every step the sequences' block tables. ORCH_ENOMEM; the pool's
 * ORCH_EINVAL for a bad geometry.
 */
orch_err sched_new(const struct be_ops *ops, struct be_model *b, const struct tok *t,
                   uint32_t n_vocab, const struct sched_config *cfg, struct sched **ret,
                   struct orch_errinfo *reterr);
void sched_free(struct sched *s);

/*
 * sched_submit - queue @j. ORCH_ECONTEXT when its prompt is longer than the
 * context (or empty: ORCH_EINVAL); then no on_end follows. ORCH_ENOMEM.
 */
orch_err sched_submit(struct sched *s, struct sched_job *j, struct orch_errinfo *reterr);

/* sched_cancel - end job @id with ORCH_FINISH_CANCELLED within one step; unknown ids are ignored.
 */
void sched_cancel(struct sched *s, uint64_t id);

/* sched_step - one forward step (nothing when idle). Backend errors end the step's jobs. */
void sched_step(struct sched *s);

/* What the last sched_step did (zeros when it had nothing to run). */
struct sched_step_info {
	uint32_t seqs;           /* sequences in the batch */
	uint32_t decode_seqs;    /* of which decoding (one token each) */
	uint32_t prefill_tokens; /* prompt tokens fed */
	double forward_ms;       /* the backend's forward pass */
	double sample_ms;        /* sampling, detokenization and callbacks */
};

/* sched_last_step - what the last sched_step did. */
void sched_last_step(const struct sched *s, struct sched_step_info *ret);

/* sched_job_state - "waiting", "prefill" or "decode" for a job not yet ended. */
const char *sched_job_state(const struct sched_job *j);

/* sched_usage - running jobs (slots in use) and the KV cells they fill. */
void sched_usage(const struct sched *s, uint32_t *busy, uint64_t *kv_cells);

/*
 * sched_kv_stats - the block pool's counters (kv_blocks.h) into *@ret; false
 * (and zeros) when the scheduler does not page. query_tokens and hit_tokens
 * count jobs' prompts at their first admission only: a preempted job's refeed
 * finding its own blocks is not a hit.
 */
bool sched_kv_stats(const struct sched *s, struct kvb_stats *ret);

/*
 * sched_kv_swa_stats - the sliding-window pool's block counters (query_tokens and
 * hit_tokens are 0: sched_kv_stats counts prompts); false (and zeros) when there is
 * none.
 */
bool sched_kv_swa_stats(const struct sched *s, struct kvb_stats *ret);

/* sched_preemptions - jobs preempted so far (paged KV: their blocks were needed). */
uint64_t sched_preemptions(const struct sched *s);

/* sched_idle - no job is waiting or running. */
bool sched_idle(const struct sched *s);
