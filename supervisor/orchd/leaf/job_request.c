/*
 * job_request.c - freeing and copying a parsed request (job_request.h).
 */
#include "job_request.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"

void
job_request_fini(struct job_request *r)
{
	for (uint32_t i = 0; i < r->n_stops; i++)
		orch_free(r->stops[i]);
	r->n_stops = 0;
	orch_free(r->prompt);
	r->prompt = NULL;
	orch_free(r->prompt_ids);
	r->prompt_ids = NULL;
	r->n_prompt_ids = 0;
	cJSON_Delete(r->prompt_list);
	r->prompt_list = NULL;
	cJSON_Delete(r->messages);
	r->messages = NULL;
	free(r->template_vars); /* cJSON's printing: malloc */
	r->template_vars = NULL;
	orch_free(r->cache_salt);
	r->cache_salt = NULL;
	free(r->grammar); /* request_grammar.c's: malloc */
	r->grammar = NULL;
	cJSON_Delete(r->tools);
	r->tools = NULL;
	orch_free(r->tool_fn);
	r->tool_fn = NULL;
	free(r->sp.bias_tokens); /* params.c's logit_bias: malloc */
	free(r->sp.bias_values);
	r->sp.bias_tokens = NULL;
	r->sp.bias_values = NULL;
	r->sp.n_bias_tokens = r->sp.n_bias_values = 0;
}

/* A malloc'd copy of the malloc'd @s (cJSON's and the grammar's strings); NULL for NULL. */
static char *
dup_malloc(const char *s, bool *oom)
{
	char *c = s != NULL ? strdup(s) : NULL;

	*oom |= s != NULL && c == NULL;
	return c;
}

/* A malloc'd copy of @n elements of @size at @p; NULL for none. */
static void *
dup_array(const void *p, size_t n, size_t size, bool *oom)
{
	void *c = n > 0 && p != NULL ? malloc(n * size) : NULL;

	if (c != NULL)
		memcpy(c, p, n * size);
	*oom |= n > 0 && p != NULL && c == NULL;
	return c;
}

/* A copy of the cJSON value @v; NULL for NULL. */
static struct cJSON *
dup_json(const struct cJSON *v, bool *oom)
{
	cJSON *c = v != NULL ? cJSON_Duplicate(v, true) : NULL;

	*oom |= v != NULL && c == NULL;
	return c;
}

/* An orch_alloc'd copy of @s; NULL for NULL. */
static char *
dup_orch(const char *s, bool *oom)
{
	char *c = s != NULL ? orch_strndup(s, strlen(s)) : NULL;

	*oom |= s != NULL && c == NULL;
	return c;
}

orch_err
job_request_copy(const struct job_request *src, struct job_request *dst)
{
	bool oom = false;

	*dst = *src;
	for (uint32_t i = 0; i < src->n_stops; i++)
		dst->stops[i] = dup_orch(src->stops[i], &oom);
	dst->prompt = dup_orch(src->prompt, &oom);
	dst->prompt_ids = NULL;
	if (src->n_prompt_ids > 0) {
		dst->prompt_ids = orch_reallocarray(NULL, src->n_prompt_ids, sizeof(int32_t));
		if (dst->prompt_ids != NULL)
			memcpy(dst->prompt_ids, src->prompt_ids,
			       src->n_prompt_ids * sizeof(int32_t));
		oom |= dst->prompt_ids == NULL;
	}
	dst->prompt_list = dup_json(src->prompt_list, &oom);
	dst->messages = dup_json(src->messages, &oom);
	dst->template_vars = dup_malloc(src->template_vars, &oom);
	dst->cache_salt = dup_orch(src->cache_salt, &oom);
	dst->grammar = dup_malloc(src->grammar, &oom);
	dst->tools = dup_json(src->tools, &oom);
	dst->tool_fn = dup_orch(src->tool_fn, &oom);
	dst->sp.bias_tokens = dup_array(src->sp.bias_tokens, src->sp.n_bias_tokens,
	                                sizeof(*src->sp.bias_tokens), &oom);
	dst->sp.bias_values = dup_array(src->sp.bias_values, src->sp.n_bias_values,
	                                sizeof(*src->sp.bias_values), &oom);
	if (!oom)
		return ORCH_OK;
	job_request_fini(dst);
	return ORCH_ENOMEM;
}
