#pragma once
/*
 * request.h - a request body to a job_request, for each API that starts a
 * job: POST /execute (native), /v1/completions and /v1/chat/completions
 * (OpenAI). evhttp-free (the HTTP request fuzzer drives it). A parameter
 * orch does not know, or one it would have to honour and cannot, is refused
 * naming it; an OpenAI field that cannot change the answer is accepted and
 * noted in job_request.ignored (request_openai.c has the table).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct cJSON;
struct job_request;
struct orchd_config;
struct params_err;

enum request_api { REQUEST_EXECUTE, REQUEST_COMPLETION, REQUEST_CHAT };

/* The longest native job_id. */
#define REQUEST_JOB_ID_MAX 127

/* The largest metrics_every of a native request (0: no metrics events). */
#define REQUEST_METRICS_EVERY_MAX 65536

/* The longest deadline_ms: a day, as request_timeout_s's cap. */
#define REQUEST_DEADLINE_MS_MAX 86400000

/*
 * request_deadline_header - an X-Deadline value @v (RFC 3339, or Unix
 * seconds with an optional fraction) into *@ret_unix_ms; else a 400 on
 * "X-Deadline" in @pe.
 */
bool request_deadline_header(const char *v, uint64_t *ret_unix_ms, struct params_err *pe);

/* The longest cache_salt. */
#define REQUEST_CACHE_SALT_MAX 256

/* The longest grammar a request may give (GBNF bytes). */
#define REQUEST_GRAMMAR_MAX (1 << 20)

/* The most tools a chat request may describe. */
#define REQUEST_TOOLS_MAX 128

/*
 * request_parse - check @body (@n bytes of JSON) for @api under @cfg's caps
 * and fill *@ret (zeroed first; job_request_fini it, also on failure).
 * ORCH_EINVAL (or ORCH_ENOMEM) with the parameter and message in @pe.
 */
orch_err request_parse(enum request_api api, const struct orchd_config *cfg, const char *body,
                       size_t n, struct job_request *ret, struct params_err *pe);

/*
 * request_chat_parse - for request_parse (request_chat.c): a chat body's
 * messages, tools, tool_choice, reasoning_effort and chat_template_kwargs
 * into @r->messages and @r->template_vars.
 */
bool request_chat_parse(const struct orchd_config *cfg, const struct cJSON *root,
                        struct job_request *r, struct params_err *pe);

/*
 * request_openai_fields - for request_parse (request_openai.c): every
 * top-level field of an OpenAI body (@chat: chat completions) against the
 * one table of what orch uses, ignores (named in @r->ignored), takes at its
 * default only, or refuses; stream_options, response_format and modalities
 * checked. The fields it uses are read by the parser after it.
 */
bool request_openai_fields(const struct cJSON *root, bool chat, struct job_request *r,
                           struct params_err *pe);

/*
 * request_response_format - for request_parse (request_grammar.c): a
 * "response_format" value @v: text; json_object or json_schema as a
 * grammar into @r->grammar (refused naming what cannot be enforced).
 */
bool request_response_format(const struct cJSON *v, struct job_request *r, struct params_err *pe);

/*
 * request_tools - for request_chat_parse (request_tools.c): "tools" into
 * @r->tools (not when tool_choice is "none": the template is not told of
 * them), "tool_choice" and "parallel_tool_calls"; a forced call checked
 * (its functions' names and schemas; no grammar, JSON response_format or
 * stop beside it: run after those are parsed).
 */
bool request_tools(const struct cJSON *root, struct job_request *r, struct params_err *pe);

/*
 * request_logprobs - for request_parse (request_logprobs.c): "logprobs" and
 * "top_logprobs" as @api has them into @r->logprobs and @r->top_logprobs.
 */
bool request_logprobs(const struct cJSON *root, enum request_api api, struct job_request *r,
                      struct params_err *pe);

/* Jobs one request may make: "n" times the prompts. */
#define REQUEST_CHOICES_MAX 64

/*
 * request_prompt_one - for request_parse (request_prompt.c): /execute's
 * "prompt" @p, a string or token ids (used as they are, no BOS added),
 * into @r->prompt or @r->prompt_ids.
 */
bool request_prompt_one(const struct orchd_config *cfg, const struct cJSON *p,
                        struct job_request *r, struct params_err *pe);

/*
 * request_prompt - for request_parse (request_prompt.c): a completions
 * body's "prompt" (a string, token ids, or a list of those: the first in
 * @r->prompt or @r->prompt_ids, the list in @r->prompt_list), "n" and "echo".
 */
bool request_prompt(const struct orchd_config *cfg, const struct cJSON *root, struct job_request *r,
                    struct params_err *pe);

/* request_prompt_text_ok - a text prompt of 1 to @max_chars characters (else 400 on "prompt"). */
bool request_prompt_text_ok(const char *p, uint32_t max_chars, struct params_err *pe);

/*
 * request_choices - "n" (1 to REQUEST_CHOICES_MAX; times @n_prompts no more
 * than that) into @r->n_choices.
 */
bool request_choices(const struct cJSON *root, struct job_request *r, uint32_t n_prompts,
                     struct params_err *pe);

/*
 * request_prompt_pick - make prompt @k of @r->prompt_list @r's prompt (nothing
 * without a list); false when out of memory.
 */
bool request_prompt_pick(const struct orchd_config *cfg, struct job_request *r, uint32_t k,
                         struct params_err *pe);

/* request_grammar - for request_parse: an optional "grammar" (GBNF) into @r->grammar. */
bool request_grammar(const struct cJSON *root, struct job_request *r, struct params_err *pe);

/* request_openai_ignored - the names of the fields in @ignored, comma-separated, in @out. */
void request_openai_ignored(uint64_t ignored, char *out, size_t n);
