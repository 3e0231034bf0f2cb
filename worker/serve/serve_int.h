#pragma once
/*
 * serve_int.h - internal to the serving worker: its state and the functions
 * its files share. serve.c runs the loop and the jobs, serve_start.c the
 * start-up and teardown, serve_debug.c the debug stream.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/filehash.h"
#include "base/limits.h"
#include "base/sbuf.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/grammars.h"
#include "engine/model/model.h"
#include "engine/scheduler.h"
#include "gguf/gguf.h"
#include "ipc/debug.h"
#include "ipc/ipc.h"
#include "serve.h"
#include "text/model_text.h"
#include "text/prompt.h"
#include "text/tokenizer.h"

struct serve_job {
	struct sched_job sj;
	struct harmony hm;     /* a harmony model's parser (sj.hm points here) */
	struct tok_ids script; /* ORCH_FAULT_SCRIPT's tokens (sj.script points here) */
	struct tok_ids ids;
	char *stops[ORCH_MAX_STOPS];
	char *cache_salt;       /* Submit.cache_salt (sj.cache_salt points here); NULL: none */
	struct gram_job gj;     /* Submit.grammar's (sj.gj points here when there is one) */
	struct samp_bias *bias; /* Submit.sampling's logit_bias (sj.sp.bias points here) */
	uint64_t deadline_ms;
	uint64_t submitted_ms; /* monotonic */
	char correlation[64];
	bool timed_out;
	/* Submit.logprobs (serve_logprobs.c): the logits token lp_index was sampled from,
	 * valid until its on_token, their log-sum-exp and the n_top likeliest of them */
	bool logprobs;
	uint32_t n_top, lp_n, lp_index, lp_vocab;
	const float *lp_logits;
	float lp_lse;
	struct samp_cand lp_top[ORCH_MAX_TOP_LOGPROBS];
	/* Submit.echo (serve_echo.c): the prompt's text, detokenized as its entries go out */
	bool echo;
	struct detok echo_dt;
	struct sbuf echo_text;
	struct serve *sv;
	struct serve_job *next;
};

/* A terminal event waiting for the end of the step. */
struct ending {
	struct serve_job *j;
	enum orch_finish why;
	orch_err err;
	char msg[256];
};

/* What the worker says it is (serve_ident.c). */
struct serve_ident {
	const char *build_id;
	const char *path;                /* the model file */
	char model_sha256[SHA256_HEX];   /* "" until known */
	char tokenizer_hash[SHA256_HEX]; /* "" when its data could not be read */
	bool hashing;                    /* @thread computes the model's digest */
	pthread_t thread;
	atomic_bool stop;             /* the thread stops at its next read */
	char hashed[SHA256_HEX];      /* owner: @thread until joined */
	struct filehash_stamp stamp;  /* owner: @thread until joined */
	orch_err hash_rv;             /* owner: @thread until joined */
	struct orch_errinfo hash_err; /* owner: @thread until joined */
	uint64_t hash_started_ms;
};

/* Where bytes are in serve.text (they move until the step ends). */
struct lp_text {
	size_t off, len;
};

/* Where an entry's strings are in serve.text, and its alternatives in serve.tops. */
struct entry_text {
	size_t text, channel, recipient; /* SIZE_MAX: none ("") */
	struct lp_text piece;            /* has_piece: the token's bytes */
	bool has_piece;
	bool prompt; /* a prompt token's entry (serve_echo.c) */
	uint32_t top0, n_top;
};

/* Where the step's entries end, to take back what came after (serve_entries_undo). */
struct serve_mark {
	uint32_t entries;
	size_t text;
	uint32_t tops;
};

struct serve {
	const struct serve_opts *o;
	struct serve_ident id;
	struct ipc_chan *ch;
	struct ipc_debug *dbg; /* NULL without --debug-endpoint */
	uint64_t started_ms;   /* monotonic */
	struct engine *eng;    /* the model, its text side, the backend, the scheduler */
	uint32_t max_jobs;
	struct serve_job *jobs; /* live jobs */
	uint32_t n_jobs;
	/* this step's output */
	Orch__TokenEntry *entries;
	Orch__TokenEntry **entry_ptrs;
	struct entry_text *text_off; /* each entry's strings in @text */
	struct sbuf text;            /* the step's strings, NUL-separated; reused step after step */
	uint32_t n_entries, cap_entries;
	Orch__TopLogprob *tops; /* the entries' alternatives (logprobs), grown as needed */
	Orch__TopLogprob **top_ptrs;
	struct lp_text *top_text; /* each alternative's bytes in @text */
	uint32_t n_tops, cap_tops;
	uint32_t last_entries; /* tokens the last step sent */
	struct ending *endings;
	uint32_t n_endings;
	uint64_t steps;
	bool draining, degraded;
	bool resident;             /* the last residency check passed (always, on the cpu) */
	char residency_error[256]; /* why it did not */
	bool cuda_error;           /* a job failed with CUDA_ERROR: check the context now */
	uint64_t next_check_ms;    /* monotonic: the next residency check */
	int last_pct;
	uint64_t progress_log_ms; /* monotonic: the last load-progress log line (or the start) */
	/* ORCH_FAULT_ADMIT="JOB:N" (test builds): allocation N admitting job JOB fails */
	uint64_t fault_job;
	long fault_n;
};

/* ---- serve_script.c ---- */

/* serve_script - the test hook ORCH_FAULT_SCRIPT: the text @j generates first, if any. */
void serve_script(struct serve *sv, struct serve_job *j);

/* ---- serve_entries.c ---- */

/*
 * serve_entry - a new entry of this step for job @job with the text @n bytes at @text, its
 * strings' places in *@ret_o; NULL when out of memory (then nothing was added).
 */
Orch__TokenEntry *serve_entry(struct serve *sv, uint64_t job, const char *text, size_t n,
                              struct entry_text **ret_o);

/* serve_entries_mark - where the step's entries end now. */
struct serve_mark serve_entries_mark(const struct serve *sv);

/* serve_entries_undo - drop every entry, string and alternative added after @m. */
void serve_entries_undo(struct serve *sv, struct serve_mark m);

/* serve_entries_send - send the step's entries (TokenBatches of IPC_MAX_BATCH) and clear them. */
void serve_entries_send(struct serve *sv, uint64_t sampled_ns);

/* ---- serve_echo.c ---- */

/*
 * serve_echo_start - at admission of a job with Submit.echo: the entry of its first prompt
 * token, and without logprobs those of all of them (with logprobs, the others come from
 * serve_echo_logits as the prompt is computed). False when out of memory (nothing added).
 */
bool serve_echo_start(struct serve *sv, struct serve_job *j);

/* serve_echo_logits - the scheduler's on_prompt: prompt token @pos's entry, with its logprob. */
void serve_echo_logits(void *ctx, struct sched_job *sj, uint32_t pos, const float *logits,
                       uint32_t n_vocab);

/* ---- serve_logprobs.c ---- */

/* serve_lp_logits - the scheduler's on_logits for a job with logprobs. */
void serve_lp_logits(void *ctx, struct sched_job *sj, uint32_t index, const float *logits,
                     uint32_t n_vocab);

/*
 * serve_lp_entry - in on_token: when @j wants logprobs and @id is the token
 * its last logits were for, fill entry @e's logprob (its bytes and
 * alternatives go to the step's buffers, placed in @o). False when out of
 * memory.
 */
bool serve_lp_entry(struct serve *sv, struct serve_job *j, Orch__TokenEntry *e,
                    struct entry_text *o, uint32_t index, int32_t id);

/* serve_lp_piece - token @id's bytes (tok_piece's @flags) for entry @o. False: out of memory. */
bool serve_lp_piece(struct serve *sv, struct entry_text *o, int32_t id, unsigned flags);

/* serve_lp_fix - at the end of the step: point entry @i's bytes and alternatives home. */
void serve_lp_fix(struct serve *sv, uint32_t i);

/* ---- serve_tokenize.c ---- */

/* serve_tokenize - answer a Tokenize (text or chat to ids, or ids to text) at once. */
void serve_tokenize(struct serve *sv, const Orch__Tokenize *m);

/*
 * serve_grammar - @m's grammar (none: nothing) started for @j, whose prompt
 * is encoded: on a harmony chat, wrapped in the messages around the answer
 * or the call it shapes (serve_grammar.c). ORCH_EINVAL (a grammar that does
 * not compile or cannot apply there), ORCH_EVRAM (out of memory).
 */
orch_err serve_grammar(struct serve *sv, struct serve_job *j, const Orch__Submit *m,
                       struct orch_errinfo *e);

/* serve_prompt_msgs - @n chat messages as the prompt's (orch_free it); NULL: out of memory. */
struct prompt_msg *serve_prompt_msgs(Orch__ChatMessage *const *m, size_t n);

/* ---- serve.c ---- */

/* serve_send - send @env to the supervisor; a failure is logged. */
void serve_send(struct serve *sv, Orch__Envelope *env);

/* serve_send_error - an Error for @job (0: the worker) with @code and @msg. */
void serve_send_error(struct serve *sv, uint64_t job, orch_err code, const char *msg);

/* serve_job_free - unlink @j from the live jobs and free it. */
void serve_job_free(struct serve *sv, struct serve_job *j);

/* serve_status - the heartbeat's numbers (also the state dump's). */
void serve_status(struct serve *sv, Orch__Heartbeat *hb);

/* ---- serve_start.c ---- */

/* serve_hello - send Hello. */
void serve_hello(struct serve *sv);

/* serve_progress - LoadProgress at every 5 % mark @done of @total crosses. */
void serve_progress(void *ctx, uint64_t done, uint64_t total);

/* serve_load - open, check and load the model, and allocate the step buffers. */
orch_err serve_load(struct serve *sv, struct orch_errinfo *e);

/* serve_ready - send Ready. */
void serve_ready(struct serve *sv);

/* serve_teardown - free everything serve_load and the jobs hold, close the channels. */
void serve_teardown(struct serve *sv);

/* ---- serve_ident.c ---- */

/*
 * serve_ident_start - the build id, the tokenizer hash, and the model's
 * digest from its cache, or a thread that computes it; before Hello.
 */
void serve_ident_start(struct serve *sv);

/* serve_ident_finish - wait for the thread, keep its digest and cache it; before Ready. */
void serve_ident_finish(struct serve *sv);

/* serve_ident_stop - stop the thread, if any, and wait for it (a failed load). */
void serve_ident_stop(struct serve *sv);

/* serve_fault_residency - test builds: ORCH_FAULT_RESIDENCY names a file that exists now. */
bool serve_fault_residency(void);

/* serve_fault_residency_armed - test builds: ORCH_FAULT_RESIDENCY is set at all. */
bool serve_fault_residency_armed(void);

/* ---- serve_debug.c ---- */

/* serve_debug_open - bind --debug-endpoint and send log lines there too. */
orch_err serve_debug_open(struct serve *sv, struct orch_errinfo *e);

/* serve_debug_close - stop sending log lines there and close it (nothing when not open). */
void serve_debug_close(struct serve *sv);

/* serve_debug_step - publish the timings of the step that just ran. */
void serve_debug_step(struct serve *sv, double step_ms, double flush_ms);

/* serve_debug_poll - answer the waiting state-dump requests. */
void serve_debug_poll(struct serve *sv);
