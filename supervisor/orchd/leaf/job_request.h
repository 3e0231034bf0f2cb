#pragma once
/*
 * job_request.h - a parsed request: what the APIs read from a body
 * (request.c, params.c), before it is moved into a job (jobs.h).
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "config.h"
#include "proto/orch.pb-c.h"

struct cJSON;

/* tool_choice "required" or a named function: the answer must be a call (request_tools.c). */
enum tool_force { TOOL_FORCE_NO, TOOL_FORCE_ANY, TOOL_FORCE_NAMED };

/* A parsed request: what the APIs read from a body (request.c), moved into a job. */
struct job_request {
	char job_id[128]; /* native: the client's; "" for OpenAI */
	char model[CFG_NAME_MAX];
	char *prompt;
	int32_t *prompt_ids; /* completions: the prompt as token ids (then prompt is NULL) */
	uint32_t n_prompt_ids;
	struct cJSON *prompt_list; /* completions: several prompts, a job per prompt and choice */
	uint32_t n_choices;        /* "n": choices per prompt (1 when absent) */
	bool echo;                 /* completions: the prompt leads the text */
	bool prompt_only;          /* completions' echo with max_tokens 0: nothing generated */
	struct cJSON *messages;    /* chat: [{role, content[, extra]}] (request_chat.c) */
	char *template_vars;       /* chat: NULL or a JSON object of more template variables */
	Orch__SamplingParams sp;
	char *stops[ORCH_API_MAX_STOPS];
	uint32_t n_stops, max_tokens;
	bool max_tokens_given; /* the client's: over the context is refused, not cut (worker) */
	bool stream, include_usage;
	bool literal_prompt; /* "parse_special": false: special-token text in the prompt stays text
	                      */
	uint32_t resume_grace_s;
	uint32_t metrics_every; /* native: a metrics event every N tokens; 0: none */
	char *cache_salt;     /* NULL or the client's: the prefix cache is shared only within it */
	uint32_t deadline_ms; /* "deadline_ms": from when orchd took the request; 0: none */
	uint64_t deadline_unix_ms; /* the job's deadline (X-Deadline, deadline_ms); 0: none */
	char *grammar;       /* NULL or GBNF the output must match (grammar, response_format) */
	struct cJSON *tools; /* chat: the tools the template is told of; NULL: none */
	enum tool_force tool_force; /* tool_choice */
	char *tool_fn;              /* TOOL_FORCE_NAMED: the function to call */
	bool single_tool;           /* parallel_tool_calls false: at most one call */
	bool grammar_call;          /* the grammar is a forced harmony call (Submit.grammar_call) */
	const char *grammar_param;  /* the field the grammar came from (static; kept past
	                               job_request_fini, for the error a worker's refusal makes) */
	bool logprobs;              /* each token's log-probability (request_logprobs.c) */
	uint32_t top_logprobs;      /* with logprobs: the likeliest alternatives, 0-20 */
	uint64_t ignored; /* OpenAI: the fields accepted and ignored, bits of request_openai.c's
	                     table */
};

/* job_request_fini - free what @r holds (NULL-safe fields); @r may be reused after. */
void job_request_fini(struct job_request *r);

/*
 * job_request_copy - @dst as a deep copy of @src (each choice of a request its own,
 * without parsing the body and compiling its grammar again). ORCH_ENOMEM: @dst
 * holds nothing then.
 */
orch_err job_request_copy(const struct job_request *src, struct job_request *dst);
