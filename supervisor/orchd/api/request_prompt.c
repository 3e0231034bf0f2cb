/*
 * request_prompt.c - a completions request's prompt and choices (request.h):
 * "prompt" as a string, an array of token ids, or an array of several
 * prompts (strings or token-id arrays), as OpenAI takes it; "n" choices of
 * each; "echo". A request of several prompts or choices becomes one job per
 * (prompt, choice): api_choices.c.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "config.h"
#include "jobs.h"
#include "params.h"
#include "request.h"

/* Whether @a is an array of numbers only (a token-id prompt; possibly empty). */
static bool
is_ids(const cJSON *a)
{
	const cJSON *it;

	if (!cJSON_IsArray(a))
		return false;
	cJSON_ArrayForEach(it, a)
	{
		if (!cJSON_IsNumber(it))
			return false;
	}
	return true;
}

bool
request_prompt_text_ok(const char *p, uint32_t max_chars, struct params_err *pe)
{
	if (params_utf8_chars(p) > max_chars) /* "" is taken: the worker starts from BOS */
		return params_fail(pe, ORCH_EINVAL, "prompt",
		                   "'prompt' must be at most %u characters", max_chars);
	return true;
}

/* Token ids: 1 to @max of them, each an integer in [0, 2^31). */
static bool
ids_ok(const cJSON *a, uint32_t max, struct params_err *pe)
{
	const cJSON *it;
	int n = cJSON_GetArraySize(a);

	if (n == 0 || (uint32_t)n > max)
		return params_fail(pe, ORCH_EINVAL, "prompt",
		                   "a token-id 'prompt' must hold 1-%u token ids", max);
	cJSON_ArrayForEach(it, a)
	{
		double v = it->valuedouble;
		if (!(v >= 0 && v < 2147483648.0) || v != (double)(int64_t)v)
			return params_fail(pe, ORCH_EINVAL, "prompt",
			                   "'prompt' token ids must be integers >= 0");
	}
	return true;
}

/* One prompt @p (a string or token ids) checked and copied into @r. */
static bool
take(const struct orchd_config *cfg, const cJSON *p, struct job_request *r, struct params_err *pe)
{
	if (cJSON_IsString(p)) {
		if (!request_prompt_text_ok(p->valuestring, cfg->max_prompt_chars, pe))
			return false;
		if ((r->prompt = orch_strndup(p->valuestring, strlen(p->valuestring))) == NULL)
			return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
		return true;
	}
	if (!is_ids(p))
		return params_fail(
		        pe, ORCH_EINVAL, "prompt",
		        "'prompt' must be a string, an array of token ids, or an array of "
		        "those");
	if (!ids_ok(p, cfg->max_prompt_chars, pe))
		return false;
	uint32_t n = (uint32_t)cJSON_GetArraySize(p), k = 0;
	const cJSON *it;
	if ((r->prompt_ids = orch_calloc(n, sizeof(*r->prompt_ids))) == NULL)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	cJSON_ArrayForEach(it, p) r->prompt_ids[k++] = (int32_t)it->valuedouble;
	r->n_prompt_ids = n;
	return true;
}

bool
request_prompt_one(const struct orchd_config *cfg, const cJSON *p, struct job_request *r,
                   struct params_err *pe)
{
	if (p == NULL || cJSON_IsNull(p))
		return params_fail(pe, ORCH_EINVAL, "prompt", "'prompt' is required");
	if (!cJSON_IsString(p) && !is_ids(p))
		return params_fail(pe, ORCH_EINVAL, "prompt",
		                   "'prompt' must be a string or an array of token ids");
	return take(cfg, p, r, pe);
}

bool
request_choices(const cJSON *root, struct job_request *r, uint32_t n_prompts, struct params_err *pe)
{
	int64_t n = 1;

	if (!params_int(root, "n", 1, REQUEST_CHOICES_MAX, &n, pe))
		return false;
	if ((uint64_t)n * n_prompts > REQUEST_CHOICES_MAX)
		return params_fail(pe, ORCH_EINVAL, "n",
		                   "'n' (%lld) times the prompts (%u) is over %d choices in one "
		                   "request",
		                   (long long)n, n_prompts, REQUEST_CHOICES_MAX);
	r->n_choices = (uint32_t)n;
	return true;
}

bool
request_prompt(const struct orchd_config *cfg, const cJSON *root, struct job_request *r,
               struct params_err *pe)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt"), *it;
	uint32_t n_prompts = 1;

	if (cJSON_IsArray(p) && !is_ids(p)) { /* several prompts (or one in an array) */
		n_prompts = (uint32_t)cJSON_GetArraySize(p);
		if (n_prompts == 0)
			return params_fail(pe, ORCH_EINVAL, "prompt", "'prompt' is an empty array");
		cJSON_ArrayForEach(it, p)
		{
			struct job_request tmp = {0};
			bool ok = take(cfg, it, &tmp, pe);
			job_request_fini(&tmp);
			if (!ok)
				return false;
		}
		if (n_prompts > 1 && (r->prompt_list = cJSON_Duplicate(p, true)) == NULL)
			return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
		p = cJSON_GetArrayItem(p, 0);
	} else if (p == NULL || cJSON_IsNull(p)) {
		return params_fail(pe, ORCH_EINVAL, "prompt", "'prompt' is required");
	}
	if (!request_choices(root, r, n_prompts, pe) || !params_bool(root, "echo", &r->echo, pe) ||
	    !take(cfg, p, r, pe))
		return false;
	return true;
}

bool
request_prompt_pick(const struct orchd_config *cfg, struct job_request *r, uint32_t k,
                    struct params_err *pe)
{
	const cJSON *p = r->prompt_list ? cJSON_GetArrayItem(r->prompt_list, (int)k) : NULL;

	if (p == NULL)
		return true;
	orch_free(r->prompt);
	orch_free(r->prompt_ids);
	r->prompt = NULL;
	r->prompt_ids = NULL;
	r->n_prompt_ids = 0;
	return take(cfg, p, r, pe);
}
