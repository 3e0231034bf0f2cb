#pragma once
/*
 * api_logprobs.h - a job's log-probabilities (job_logprobs.h) as each API
 * writes them (docs/http-api.md "Log-probabilities"): chat's
 * {content: [{token, logprob, bytes, top_logprobs}], refusal}, the legacy
 * completions' {tokens, token_logprobs, top_logprobs, text_offset}, and the
 * native token event's logprob and top_logprobs. Thread: the loop.
 */
#include <stdint.h>

struct cJSON;
struct job;
struct job_event;

/*
 * api_lp_openai - the "logprobs" value of an OpenAI choice covering events
 * [@from, @to) of @j: null when the job asked for none, else the API's
 * object over the tokens of those events that have one.
 */
struct cJSON *api_lp_openai(const struct job *j, uint32_t from, uint32_t to);

/* api_lp_native - add token event @ev's "logprob", "bytes" and "top_logprobs" to @o. */
void api_lp_native(struct cJSON *o, const struct job *j, const struct job_event *ev);
