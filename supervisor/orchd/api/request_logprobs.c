/*
 * request_logprobs.c - the logprobs fields (request.h): chat and the native
 * /execute take "logprobs" (a boolean) and "top_logprobs" (0-20, only with
 * logprobs true, as OpenAI says); completions take "logprobs" as the count of
 * alternatives (0-20: OpenAI stops at 5, vLLM at 20), the chosen token's own
 * log-probability coming with any count, 0 included (false: none).
 */
#include <cjson/cJSON.h>

#include "base/limits.h"
#include "jobs.h"
#include "params.h"
#include "request.h"

static bool
chat_logprobs(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	int64_t n = 0;

	if (!params_bool(root, "logprobs", &r->logprobs, pe) ||
	    !params_int(root, "top_logprobs", 0, ORCH_MAX_TOP_LOGPROBS, &n, pe))
		return false;
	if (n > 0 && !r->logprobs)
		return params_fail(pe, ORCH_EINVAL, "top_logprobs",
		                   "'top_logprobs' needs 'logprobs': true");
	r->top_logprobs = (uint32_t)n;
	return true;
}

static bool
completion_logprobs(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "logprobs");
	int64_t n = -1; /* absent, null or false: none */

	if (cJSON_IsFalse(v))
		return true;
	if (!params_int(root, "logprobs", 0, ORCH_MAX_TOP_LOGPROBS, &n, pe))
		return false;
	if (n < 0)
		return true;
	r->logprobs = true;
	r->top_logprobs = (uint32_t)n;
	return true;
}

bool
request_logprobs(const cJSON *root, enum request_api api, struct job_request *r,
                 struct params_err *pe)
{
	return api == REQUEST_COMPLETION ? completion_logprobs(root, r, pe)
	                                 : chat_logprobs(root, r, pe);
}
