#pragma once
/*
 * job_logprobs.h - a job's log-probabilities (logprobs): what the worker
 * reported for each generated token (TokenEntry.logprob, its bytes, its
 * likeliest alternatives), kept in the job for its formats
 * (api_logprobs.c). Thread: the loop.
 */
#include <stdbool.h>
#include <stdint.h>

#include "proto/orch.pb-c.h"

struct cJSON;
struct job;

/* A token, its bytes (NUL-terminated, may be part of a UTF-8 character) and log-probability. */
struct job_lp_tok {
	int32_t id;
	float logprob;
	uint32_t len;
	const char *bytes;
};

/* A generated token's log-probability and its alternatives, most likely first. */
struct job_lp {
	struct job_lp_tok tok;
	struct job_lp_tok *top;
	uint32_t n_top;
	uint32_t text_offset; /* characters of the job's text before this token's event (a prompt
	                         token's: of the prompt's text before it) */
	void *mem;            /* one block: @top and every byte string */
};

/*
 * job_lp_add - keep @t's log-probability in @j; its place plus one (an
 * event's lp), or 0 when out of memory (the token then has none).
 */
uint32_t job_lp_add(struct job *j, const Orch__TokenEntry *t);

/*
 * job_lp_prompt - take prompt entry @t (TokenEntry.prompt, completions' echo)
 * into @j: its text, and with logprobs its log-probability (NaN for the
 * first token, which has none). Entries come in order; one seen already (the
 * job went to another worker) is ignored. True when it was the prompt's last:
 * then @j->echo holds the prompt (a prompt of ids: their text).
 */
bool job_lp_prompt(struct job *j, const Orch__TokenEntry *t);

/* job_lp_free - free @j's log-probabilities. */
void job_lp_free(struct job *j);

/* job_lp_bytes - the memory @j's log-probabilities take (jobs_bytes). */
uint64_t job_lp_bytes(const struct job *j);

/*
 * job_lp_string - @tok's bytes as a JSON string value: invalid UTF-8 (a
 * token that is part of a character) as U+FFFD, as OpenAI shows it.
 */
struct cJSON *job_lp_string(const struct job_lp_tok *tok);

/* job_lp_byte_array - @tok's bytes as a JSON array of numbers (OpenAI's "bytes"). */
struct cJSON *job_lp_byte_array(const struct job_lp_tok *tok);
