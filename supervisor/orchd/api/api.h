#pragma once
/*
 * api.h - the public job APIs (docs/http-api.md): native (/execute,
 * /cancel, /jobs/ID/events) and OpenAI-compatible (/v1/completions,
 * /v1/chat/completions, /v1/models, /v1/models/ID) and the tokenizer's
 * (/tokenize, /detokenize); handlers for the edge's route table (route.h).
 * Each API gives its jobs a sink (jobs.h); api_stream.c follows a job on a
 * request with it. Thread: the loop.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct api_key;
struct cJSON;
struct api_req;
struct job;
struct job_owner;
struct job_sink;
struct orchd;
struct orchd_config;
struct sbuf;

/* The native API's sink: "id:/event:/data:" SSE events. */
extern const struct job_sink api_native_sink;
/* The OpenAI APIs' sink: "data:" chunks, "data: [DONE]", or one JSON body. */
extern const struct job_sink api_openai_sink;

/* api_native_execute - POST /execute: start a job and stream its events. */
void api_native_execute(struct orchd *d, struct api_req *req, const char *arg);

/* api_native_cancel - POST /cancel {job_id}. */
void api_native_cancel(struct orchd *d, struct api_req *req, const char *arg);

/* api_native_events - GET /jobs/@arg/events: resume after Last-Event-ID. */
void api_native_events(struct orchd *d, struct api_req *req, const char *arg);

/* api_openai_completions - POST /v1/completions. */
void api_openai_completions(struct orchd *d, struct api_req *req, const char *arg);

/* api_openai_chat - POST /v1/chat/completions. */
void api_openai_chat(struct orchd *d, struct api_req *req, const char *arg);

/* api_openai_models - GET /v1/models: the models the caller's key may use. */
void api_openai_models(struct orchd *d, struct api_req *req, const char *arg);

/*
 * api_openai_model - GET /v1/models/@arg: that model's object; 404
 * MODEL_NOT_FOUND when it is not configured or the caller's key may not use it.
 */
void api_openai_model(struct orchd *d, struct api_req *req, const char *arg);

/* api_tokenize - POST /tokenize: text or a chat to token ids (api_tokenize.c). */
void api_tokenize(struct orchd *d, struct api_req *req, const char *arg);

/* api_detokenize - POST /detokenize: token ids to text. */
void api_detokenize(struct orchd *d, struct api_req *req, const char *arg);

/*
 * api_caller - the API key @req authenticated with (the edge let it through),
 * or NULL when no keys are in force; looked up at each call (a reload frees
 * the keys a parse off the loop may outlive).
 */
const struct api_key *api_caller(struct orchd *d, struct api_req *req);

/* api_owner - who @req is, as a job's owner (jobs.h): its key's, or nobody without keys. */
void api_owner(struct orchd *d, struct api_req *req, struct job_owner *ret);

/*
 * api_no_model - answer 404 MODEL_NOT_FOUND for @name, naming the models the
 * caller's key may use (at most a few) and one whose name differs only in case.
 */
void api_no_model(struct orchd *d, struct api_req *req, const char *name);

/*
 * api_only_model - for a request that names no model: the one model @req's caller
 * may use, when there is exactly one (as llama-server does); else NULL, answered
 * 400 "'model' is required".
 */
struct model_entry *api_only_model(struct orchd *d, struct api_req *req);

/* api_room - room for one more stream; else answers 503 OVERLOADED with Retry-After. */
bool api_room(struct orchd *d, struct api_req *req);

/*
 * api_follow - follow @j on @req with its sink: SSE when @streaming (from
 * event @after on), else one answer at the end. Answers 500 when out of memory.
 */
void api_follow(struct orchd *d, struct job *j, struct api_req *req, bool streaming,
                uint32_t after);

/* api_openai_usage - add OpenAI's "usage" object with these counts to @o. */
void api_openai_usage(struct cJSON *o, uint32_t prompt, uint32_t completion, uint32_t cached);

/* api_openai_usage_chunk - the stream's usage chunk (no choices) of @j's response, into @out. */
void api_openai_usage_chunk(const struct job *j, uint32_t prompt, uint32_t completion,
                            uint32_t cached, struct sbuf *out);

/*
 * api_choices_follow - follow @n jobs of one OpenAI request on @req as its
 * choices (api_choices.c): @jobs[i] is choice i, @per_prompt choices per
 * prompt (for the usage: each prompt counted once).
 */
void api_choices_follow(struct orchd *d, struct job **jobs, uint32_t n, uint32_t per_prompt,
                        struct api_req *req, bool streaming);

/* api_follow_many_fn - follow the @n jobs of one request on @req (api_choices_follow's form). */
typedef void (*api_follow_many_fn)(struct orchd *d, struct job **jobs, uint32_t n,
                                   uint32_t per_prompt, struct api_req *req, bool streaming);

/*
 * What an API gives api_start: which request it is (enum request_api), the sink
 * its jobs answer through, and how it follows a request of several jobs (NULL:
 * it takes none). The API above names them; api_stream.c calls no API back.
 */
struct api_kind {
	int api;
	const struct job_sink *sink;
	api_follow_many_fn follow_many;
};

/*
 * api_start - parse @req's body for @k's API, make the job and submit it
 * (placed or queued), then follow it; every refusal is answered here. A
 * body of API_PARSE_OFF_LOOP_BYTES or more, or one that may compile a
 * grammar, is parsed off the loop first (api_parse_then).
 */
void api_start(struct orchd *d, struct api_req *req, const struct api_kind *k);

/*
 * The body size from which parsing it, and compiling its grammar, leaves
 * the loop (issue 52 A1): a 16 KiB body parses in about 0.1 ms, a 4 MiB one
 * in tens of milliseconds, a schema's grammar can take more.
 */
#define API_PARSE_OFF_LOOP_BYTES (16u << 10)

/* api_parse_fn - check a request's body (@n bytes) into @arg under @cfg's limits (any thread). */
typedef void (*api_parse_fn)(const struct orchd_config *cfg, const char *body, size_t n, void *arg);
/* api_cont_fn - on the loop, with @arg parsed: answer or go on (@arg is the function's). */
typedef void (*api_cont_fn)(struct orchd *d, struct api_req *req, void *arg);
/* api_drop_fn - free @arg, unanswered (its client left, or orchd stops). */
typedef void (*api_drop_fn)(void *arg);

/*
 * api_parse_then - @parse(@req's body, @arg), then @cont(@req, @arg): on the
 * loop for a body under API_PARSE_OFF_LOOP_BYTES that names nothing which
 * compiles a grammar (response_format, grammar, guided_*, regex, tools,
 * json_schema: a small schema can expand past 1 MiB); else the parse runs on
 * a helper thread (offload.h) over a copy of the body (the request may go
 * while it runs: a client that closes, orchd that stops), and a client that
 * closes meanwhile is let go, with @drop(@arg), once the parse is back. When
 * no thread can take it: 503 OVERLOADED (retriable) or 500, and @drop(@arg).
 */
void api_parse_then(struct orchd *d, struct api_req *req, api_parse_fn parse, api_cont_fn cont,
                    api_drop_fn drop, void *arg);
