#pragma once
/*
 * jobs.h - a job from its request to its terminal event: the events the
 * worker reports (kept, so a dropped stream can resume), who watches them,
 * cancellation when the last watcher goes, and expiry of a finished job.
 * jobs.c knows no response format: the API gives each job a sink.
 * Thread: the loop.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/finish.h"
#include "base/limits.h"
#include "base/sbuf.h"
#include "config.h"
#include "job_request.h"

struct cJSON;
struct event;
struct job;
struct job_lp;
struct model_entry;
struct model_metrics;
struct orchd;
struct toolparse;
struct worker;

/* Which API made the job: the API's business, but for one question: only a native job can be
 * followed again by id, so only native jobs are looked up and kept after they end. */
enum job_kind { JOB_NATIVE, JOB_OAI_COMPLETION, JOB_OAI_CHAT };

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/*
 * A job's events, in the order a stream shows them: EV_STARTED first, always
 * (orchd adds one when the job ends before the worker started it), then
 * EV_TOKEN and, every metrics_every tokens when asked, EV_METRICS; exactly
 * one terminal EV_END or EV_ERROR last. A completion with echo has EV_PROMPT
 * before its first EV_TOKEN, when the worker has sent its prompt back.
 */
enum ev_type { EV_STARTED, EV_TOKEN, EV_END, EV_ERROR, EV_METRICS, EV_PROMPT };

/* One event of a job, kept for streams that attach later (resume). */
struct job_event {
	enum ev_type type;
	uint32_t index;          /* EV_TOKEN: the token's index */
	char *text;              /* EV_TOKEN: the text delta; EV_ERROR: the message */
	orch_err code;           /* EV_ERROR */
	enum orch_finish finish; /* EV_END */
	uint32_t tokens_out;     /* EV_END, EV_METRICS: tokens so far */
	uint32_t prompt_tokens;  /* EV_STARTED (0: the worker never started it), EV_END */
	double decode_ms;        /* EV_END; EV_METRICS: since the first token */
	double prefill_ms;       /* EV_END; EV_METRICS: from EV_STARTED to the first token */
	uint64_t seed;           /* EV_STARTED, EV_END */
	uint64_t unix_ms;        /* EV_STARTED: when (CLOCK_REALTIME) */
	uint32_t msg;            /* EV_TOKEN: 1 + its job_msg's place in j->msgs; 0: none */
	uint32_t cached_tokens;  /* EV_END: of the prompt, taken from the prefix cache */
	uint32_t lp;             /* EV_TOKEN: 1 + its token's place in j->lps; 0: none */
};

/*
 * A harmony message (gpt-oss) of a job's output: the channel and recipient
 * the worker reported for it, once per message; its tokens' events point
 * here. A recipient other than a role is a tool call.
 */
struct job_msg {
	uint32_t wire;             /* its index from the worker */
	char *channel, *recipient; /* "" when none */
	int32_t tool;              /* its place among the job's tool calls; -1: not one */
	uint32_t first_event;      /* the first event with its text; UINT32_MAX until then */
};

/*
 * How a job's events become a response (api.c fills one per API):
 * @format writes event @k as stream text (may write nothing); @body is the
 * whole JSON answer of a request that does not stream; @terminator writes
 * what follows the terminal event (may be NULL); @cut is what ends a stream
 * whose client reads too slowly, in the API's own terminal form (NULL: the
 * native error event, sse.h).
 */
struct job_sink {
	void (*format)(const struct job *j, uint32_t k, struct sbuf *out);
	struct cJSON *(*body)(const struct job *j);
	void (*terminator)(const struct job *j, struct sbuf *out);
	const char *cut;
};

/*
 * Someone following a job (a client stream). @notify runs after each new
 * event (the watcher reads j->events from its own @sent on); @release runs
 * when the job is freed with the watcher still on it (it must let go).
 */
struct job_watch {
	struct job *job;
	uint32_t sent; /* events the watcher has taken */
	void (*notify)(struct job_watch *w);
	void (*release)(struct job_watch *w);
	struct job_watch *next;
};

/* A job's id: 128 random bits (getrandom) as lowercase hex. */
#define JOBS_UID_HEX 32

/* How often one job may go back to the queue after its worker was lost. */
#define JOBS_REQUEUE_MAX 2
/* A job's correlation id: 64 random bits as hex (logs, the worker, error bodies). */
#define JOBS_CORRELATION_HEX 16
/* The bytes of an API key's digest that name a job's owner. */
#define JOBS_OWNER_BYTES 16

/*
 * Who started a job: the first bytes of its API key's digest (keys.h), all
 * zero without keys. The client's job_id is a name in its owner's space: a
 * key's, or without keys the one local owner's (issue 62); the unguessable
 * uid finds the job too.
 */
struct job_owner {
	uint8_t id[JOBS_OWNER_BYTES];
	bool keyed;
};

/*
 * What the holder of a job (the registry: models_jobs.c) does when the job
 * ends, is cancelled or is freed: jobs.c never calls into the models, the
 * workers or the wire. models_submit gives a job its holder.
 */
struct job_host {
	/* @j ended: off its model's queue and its worker; what waits may go */
	void (*ended)(struct orchd *d, struct job *j);
	/* tell @j's worker to stop @j; false when that could not be sent */
	bool (*cancel)(struct orchd *d, struct job *j);
	/* @j is about to be freed: off its model's queue */
	void (*freed)(struct orchd *d, struct job *j);
};

/* The model a job is for, as jobs_new takes it. */
struct job_model {
	struct model_entry *entry;
	const char *name;
	struct model_metrics *met;
};

struct job {
	struct orchd *d;
	const struct job_host *host; /* who holds it (models_submit); NULL: nobody yet */
	uint64_t id;                 /* on the wire to the worker; never shown to a client */
	char uid[JOBS_UID_HEX + 1];  /* unguessable: resume and cancel (native), the OpenAI id */
	char ext_id[128];            /* native: the client's job_id; OpenAI: "cmpl-UID" */
	struct job_owner owner;
	enum job_kind kind;
	const struct job_sink *sink;
	struct model_entry *model; /* NULL once the model is removed */
	struct model_metrics *met; /* its model's counters; NULL once the model is removed */
	char model_name[CFG_NAME_MAX];
	struct worker *worker;
	enum job_state state;
	struct job_request req; /* the request (model and job_id as the client sent them) */
	uint64_t affinity;      /* its prompt prefix's key (affinity.h); 0: none, or not yet */
	char correlation[JOBS_CORRELATION_HEX + 1];
	/* what happened */
	struct job_event *events;
	uint32_t n_events, cap_events;
	struct sbuf text;     /* all the text so far (OpenAI stream=false) */
	struct job_msg *msgs; /* harmony messages, or calls read back by @tp, so far */
	struct toolparse *tp; /* reads tool calls back from the text (NULL: none) */
	uint32_t n_msgs, n_tools;
	struct job_lp *lps; /* logprobs: each generated token's (job_logprobs.h) */
	uint32_t n_lps, cap_lps;
	uint32_t out_chars; /* characters of text the job's events carried so far */
	char *echo;         /* completions with echo: the prompt, written before the text */
	/* echo: the prompt's tokens as the worker sent them back (job_logprobs.h) */
	struct job_lp *plps; /* with logprobs: each prompt token's */
	uint32_t n_plps, cap_plps;
	uint32_t prompt_seen;    /* prompt entries taken */
	uint32_t prompt_chars;   /* characters of their text */
	struct sbuf prompt_text; /* their text: the echo of a prompt of token ids */
	uint32_t choice;         /* its index among its request's choices */
	bool grouped;            /* one of several jobs of one request (api_choices.c) */
	uint32_t tokens_out, prompt_tokens;
	uint32_t cached_tokens; /* of the prompt, from the worker's prefix cache (End) */
	uint64_t created_ms, started_ms, first_token_ms, last_token_ms, ended_ms;
	uint64_t started_ns, first_token_ns; /* monotonic, for the metrics events */
	uint64_t created_unix;
	struct job_watch *watches;
	bool cancel_sent;
	struct event *ev_deadline; /* its own deadline (req.deadline_unix_ms); NULL: none */
	uint8_t requeues;          /* times a lost worker's job went back to the queue */
	bool detached;             /* every watcher is gone; waiting resume_grace_s for one */
	struct event *ev_timer;    /* the detach grace; expiry once done */
	struct job *next_all, *next_queue;
	struct job *live_prev, *live_next; /* in orchd.live until its terminal event */
	/* kept for resuming after it ended (jobs_keep.c) */
	bool kept;
	uint64_t kept_bytes;               /* counted in orchd.kept_bytes */
	struct job *kept_prev, *kept_next; /* orchd.kept_head: oldest first */
	char *packed;                      /* the event texts, in one block, once kept */
	size_t packed_bytes;
};

/*
 * jobs_new - a job of @kind for model @m, owned by @owner (NULL: nobody, no keys),
 * taking over @r's contents (left empty), with a fresh uid and correlation
 * id from getrandom(2); NULL when out of memory or without randomness (@r
 * is left as it was; the reason is logged).
 */
struct job *jobs_new(struct orchd *d, enum job_kind kind, const struct job_sink *sink,
                     const struct job_model *m, struct job_request *r,
                     const struct job_owner *owner);

/*
 * jobs_lookup - the native job (live or kept) that @owner may follow or
 * cancel as @id: its uid (compared in constant time), or, when @owner is
 * keyed, its job_id in that key's space. NULL for anything else, another
 * owner's job included: a caller cannot tell "not yours" from "not there".
 */
struct job *jobs_lookup(struct orchd *d, const char *id, const struct job_owner *owner);

/* jobs_find - the live job with wire id @id, or NULL. */
struct job *jobs_find(struct orchd *d, uint64_t id);

/*
 * jobs_msg - the event msg value (jobs.h) of @j's harmony message @wire with
 * @channel and @recipient (kept from its first sighting); 0 when out of memory.
 */
uint32_t jobs_msg(struct job *j, uint32_t wire, const char *channel, const char *recipient);

/* jobs_event - append an event to @j and notify its watchers; terminal ones end it, once. */
void jobs_event(struct orchd *d, struct job *j, const struct job_event *ev);

/*
 * jobs_metrics_due - after a token counted in @j->tokens_out: append an
 * EV_METRICS event when the request asked for one every metrics_every tokens
 * and this is the next.
 */
void jobs_metrics_due(struct orchd *d, struct job *j);

/*
 * jobs_client_message - what a client is told of error @code whose detail is
 * @detail (orchd's text or a worker's): the detail when the code is about
 * the request or capacity (INVALID_REQUEST, CONTEXT_LENGTH_EXCEEDED,
 * INSUFFICIENT_VRAM, QUEUE_FULL, CANCELLED, INFERENCE_TIMEOUT, ...), less a
 * worker's "job N: " prefix; else a fixed text for the code, so that paths,
 * worker output and internal numbers stay in the log. Returns @detail, @buf
 * (@n bytes) or a static string.
 */
const char *jobs_client_message(orch_err code, const char *detail, char *buf, size_t n);

/*
 * jobs_fail - end @j with error @code unless it has ended. @msg is the
 * detail: the client gets jobs_client_message() of it with the job's
 * correlation id; when that differs, the detail is logged (job_error) under it.
 */
void jobs_fail(struct orchd *d, struct job *j, orch_err code, const char *msg);

/*
 * jobs_error_param - the request field a worker's refusal of @j (@code,
 * @msg) is about, for the error's "param": the grammar's field ("grammar",
 * "response_format", "tool_choice") for a grammar's failure, "logit_bias"
 * for its own; NULL when none is known.
 */
const char *jobs_error_param(const struct job *j, orch_err code, const char *msg);

/* jobs_cancel - the client is gone or asked: cancel in the worker, or drop from the queue. */
void jobs_cancel(struct orchd *d, struct job *j, const char *why);

/*
 * jobs_watch - @w follows @j from event @after on (clamped); its notify runs
 * at once for the events it has not seen.
 */
void jobs_watch(struct orchd *d, struct job *j, struct job_watch *w, uint32_t after);

/*
 * jobs_unwatch - @w stops following. When @client_gone and it was the last
 * watcher of a running job: wait resume_grace_s for another, or cancel.
 */
void jobs_unwatch(struct orchd *d, struct job_watch *w, bool client_gone);

/* jobs_free - release the watchers, unqueue and free @j (out of the kept jobs too). */
void jobs_free(struct orchd *d, struct job *j);

/* ---- finished jobs kept for resuming (jobs_keep.c) ---- */

/*
 * jobs_keep - @j has just ended: keep it for resuming when it is native and
 * retention is on (events_keep_s, events_keep_jobs, events_keep_mib), packed,
 * counted, and with older kept jobs evicted past the caps (never @j itself).
 * False when it is not kept (it goes once nobody follows it).
 */
bool jobs_keep(struct orchd *d, struct job *j);

/*
 * jobs_keep_tick - @j's timer fired after it ended with nobody following:
 * false when it is not kept or its events_keep_s is over (free it); else
 * the timer is set again for the rest and the kept jobs are evicted past
 * the caps, which may free @j: do not touch it after a true.
 */
bool jobs_keep_tick(struct orchd *d, struct job *j);

/* jobs_keep_evict - free the oldest kept jobs nobody follows, but @spare, while over a cap. */
void jobs_keep_evict(struct orchd *d, const struct job *spare);

/* jobs_keep_drop - take @j out of the kept jobs and their counts (when it is freed). */
void jobs_keep_drop(struct orchd *d, struct job *j);

/* jobs_bytes - the memory @j holds, roughly (malloc's overhead estimated). */
uint64_t jobs_bytes(const struct job *j);
