/*
 * request.c - request bodies to job requests (request.h): the native
 * /execute and the OpenAI completions and chat completions.
 */
#include "request.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "config.h"
#include "jobs.h"
#include "params.h"

static const char *const execute_keys[] = {"job_id",
                                           "model",
                                           "prompt",
                                           "max_tokens",
                                           "temperature",
                                           "top_p",
                                           "top_k",
                                           "min_p",
                                           "repetition_penalty",
                                           "presence_penalty",
                                           "frequency_penalty",
                                           "logit_bias",
                                           "stop",
                                           "seed",
                                           "resume_grace_s",
                                           "metrics_every",
                                           "parse_special",
                                           "cache_salt",
                                           "grammar",
                                           "guided_regex",
                                           "regex",
                                           "response_format",
                                           "logprobs",
                                           "top_logprobs",
                                           "user",
                                           "ignore_eos",
                                           "deadline_ms",
                                           NULL};

/*
 * "cache_salt" (optional, both APIs): the prefix cache shares this request's
 * prompt blocks only with requests of the same salt, so a tenant's prompts
 * cannot be detected by another's time to first token (vLLM's field).
 */
static bool
parse_cache_salt(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	const char *salt = NULL;

	if (!params_string(root, "cache_salt", false, &salt, pe))
		return false;
	if (salt == NULL)
		return true;
	if (salt[0] == '\0' || strlen(salt) > REQUEST_CACHE_SALT_MAX)
		return params_fail(pe, ORCH_EINVAL, "cache_salt", "'cache_salt' must be 1-%d bytes",
		                   REQUEST_CACHE_SALT_MAX);
	if ((r->cache_salt = orch_strndup(salt, strlen(salt))) == NULL)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	return true;
}

/*
 * "deadline_ms" (optional, both APIs; orch's): the job ends with
 * DEADLINE_EXCEEDED this many milliseconds after orchd took the request
 * (api_stream.c makes it a time, with X-Deadline).
 */
static bool
parse_deadline(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	int64_t ms = 0;

	if (!params_int(root, "deadline_ms", 1, REQUEST_DEADLINE_MS_MAX, &ms, pe))
		return false;
	r->deadline_ms = (uint32_t)ms;
	return true;
}

/*
 * "parse_special" (default true): special-token text in a raw prompt becomes
 * those tokens, as llama.cpp does; false keeps it text.
 */
static bool
parse_special(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	bool on = true;

	if (!params_bool(root, "parse_special", &on, pe))
		return false;
	r->literal_prompt = !on;
	return true;
}

static bool
parse_execute(const struct orchd_config *cfg, const cJSON *root, struct job_request *r,
              struct params_err *pe)
{
	const char *job_id = NULL, *model = NULL, *user = NULL;
	int64_t grace = 0, every = 0;

	if (!params_known(root, execute_keys, pe) ||
	    !params_string(root, "job_id", true, &job_id, pe) ||
	    !params_string(root, "model", true, &model, pe) ||
	    !params_string(root, "user", false, &user, pe) || /* OpenAI's: taken, not used */
	    !params_int(root, "resume_grace_s", 0, 300, &grace, pe) ||
	    !params_int(root, "metrics_every", 0, REQUEST_METRICS_EVERY_MAX, &every, pe))
		return false;
	if (job_id[0] == '\0' || strlen(job_id) > REQUEST_JOB_ID_MAX)
		return params_fail(pe, ORCH_EINVAL, "job_id", "'job_id' must be 1-%d bytes",
		                   REQUEST_JOB_ID_MAX);
	const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "response_format");
	if (!request_prompt_one(cfg, cJSON_GetObjectItemCaseSensitive(root, "prompt"), r, pe) ||
	    !parse_special(root, r, pe) || !parse_cache_salt(root, r, pe) ||
	    !parse_deadline(root, r, pe) ||
	    (rf != NULL && !cJSON_IsNull(rf) && !request_response_format(rf, r, pe)) ||
	    !request_grammar(root, r, pe) || !request_logprobs(root, REQUEST_EXECUTE, r, pe))
		return false;
	if (strlen(model) >= sizeof(r->model))
		return params_fail(pe, ORCH_EMODEL_NOT_FOUND, "model",
		                   "model '%.64s...' is not configured", model);
	snprintf(r->job_id, sizeof(r->job_id), "%s", job_id);
	snprintf(r->model, sizeof(r->model), "%s", model);
	r->resume_grace_s = (uint32_t)grace;
	r->metrics_every = (uint32_t)every;
	r->stream = true;
	return params_sampling(root, "repetition_penalty", "max_tokens", NULL, cfg->max_tokens, 256,
	                       r, pe) &&
	       params_stop(root, r, pe);
}

/* ---- OpenAI ---- */

static bool
parse_openai(const struct orchd_config *cfg, const cJSON *root, bool chat, struct job_request *r,
             struct params_err *pe)
{
	const char *model = NULL;

	if (!request_openai_fields(root, chat, r, pe) ||
	    !params_string(root, "model", false, &model, pe) ||
	    !params_bool(root, "stream", &r->stream, pe) || !parse_cache_salt(root, r, pe) ||
	    !parse_deadline(root, r, pe) || !request_grammar(root, r, pe) ||
	    !request_logprobs(root, chat ? REQUEST_CHAT : REQUEST_COMPLETION, r, pe))
		return false;
	if (model != NULL && strlen(model) >= sizeof(r->model))
		return params_fail(pe, ORCH_EMODEL_NOT_FOUND, "model",
		                   "model '%.64s...' is not configured", model);
	/* none: the one model served (api_only_model), as llama-server takes it */
	snprintf(r->model, sizeof(r->model), "%s", model ? model : "");
	/* completions' echo with max_tokens 0: the prompt alone (its log-probabilities) */
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "max_tokens");
	r->prompt_only = !chat && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "echo")) &&
	                 cJSON_IsNumber(mt) && mt->valuedouble == 0;
	return params_sampling(root, "repetition_penalty", "max_tokens",
	                       chat ? "max_completion_tokens" : NULL, cfg->max_tokens,
	                       chat ? cfg->max_tokens : 16, r, pe) &&
	       params_stop(root, r, pe) &&
	       (chat ? request_chat_parse(cfg, root, r, pe) && request_choices(root, r, 1, pe)
	             : parse_special(root, r, pe) && request_prompt(cfg, root, r, pe));
}

orch_err
request_parse(enum request_api api, const struct orchd_config *cfg, const char *body, size_t n,
              struct job_request *ret, struct params_err *pe)
{
	cJSON *root;
	bool ok = false;

	memset(ret, 0, sizeof(*ret));
	orch__sampling_params__init(&ret->sp);
	orch_err rv = params_body(body, n, &root, pe);
	if (rv != ORCH_OK)
		return rv;
	switch (api) {
	case REQUEST_EXECUTE:
		ok = parse_execute(cfg, root, ret, pe);
		break;
	case REQUEST_COMPLETION:
	case REQUEST_CHAT:
		ok = parse_openai(cfg, root, api == REQUEST_CHAT, ret, pe);
		break;
	}
	cJSON_Delete(root);
	if (ok && ret->grammar != NULL && ret->n_stops > 0) /* a stop would cut a sentence */
		ok = params_fail(
		        pe, ORCH_EINVAL, "stop",
		        "'stop' cannot be combined with a grammar or a JSON response_format: "
		        "the output would end in the middle of a sentence (the grammar ends "
		        "the output itself)");
	return ok ? ORCH_OK : pe ? pe->code : ORCH_EINVAL;
}
