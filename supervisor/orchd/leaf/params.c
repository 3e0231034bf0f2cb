/*
 * params.c - type and range checks of request-body values (params.h), one
 * message per parameter.
 */
#include "params.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/utf8.h"
#include "job_request.h"

cJSON *
params_err_json(orch_err code, const char *param, const char *msg)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");

	cJSON_AddStringToObject(e, "code", orch_err_wire(code));
	cJSON_AddStringToObject(e, "message", msg);
	if (param)
		cJSON_AddStringToObject(e, "param", param);
	else
		cJSON_AddNullToObject(e, "param");
	/* the field OpenAI clients read: a 429 (queue full, rate) is not the request's fault */
	int http = orch_err_http(code);
	cJSON_AddStringToObject(e, "type",
	                        http == 429  ? "rate_limit_error"
	                        : http < 500 ? "invalid_request_error"
	                                     : "server_error");
	cJSON_AddBoolToObject(e, "retriable", orch_err_retriable(code));
	return e ? root : NULL;
}

bool
params_fail(struct params_err *pe, orch_err code, const char *param, const char *fmt, ...)
{
	va_list ap;

	if (pe == NULL)
		return false;
	pe->code = code;
	snprintf(pe->param, sizeof(pe->param), "%s", param ? param : "");
	va_start(ap, fmt);
	vsnprintf(pe->msg, sizeof(pe->msg), fmt, ap);
	va_end(ap);
	return false;
}

/* ---- the body ---- */

/* Whether @n bytes at @s are JSON whitespace only. */
static bool
blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r\n", s[i]) || s[i] == '\0')
			return false;
	return true;
}

/*
 * The first "\u0000" escape in the strings of the valid JSON text @s: true,
 * with the top-level key it is under in @key ("" when it is in a key or
 * outside the top-level object's values).
 */
static bool
find_nul_escape(const char *s, size_t n, char *key, size_t key_n)
{
	int depth = 0;
	bool in_str = false, is_key = false, key_next = false;
	size_t kstart = 0;

	key[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (in_str && c == '\\') {
			if (n - i >= 6 && memcmp(s + i + 1, "u0000", 5) == 0) {
				if (is_key)
					key[0] = '\0';
				return true;
			}
			i++; /* the escaped character */
		} else if (in_str && c == '"') {
			in_str = false;
			if (is_key)
				snprintf(key, key_n, "%.*s", (int)(i - kstart), s + kstart);
		} else if (in_str) {
			continue;
		} else if (c == '"') {
			in_str = true;
			is_key = depth == 1 && key_next;
			kstart = i + 1;
		} else if (c == '{' || c == '[') {
			if (++depth == 1)
				key_next = c == '{';
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (depth == 1 && (c == ',' || c == ':')) {
			key_next = c == ',';
		}
	}
	return false;
}

static int
cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * A key twice in one object of @v (at any depth), nesting past PARAMS_MAX_DEPTH or an
 * object of more than PARAMS_MAX_KEYS keys, named in @pe (@top: the body's key @v is
 * under; @depth: @v's). One pass and a sort per object: n log n in all.
 */
static bool
unique_keys(const cJSON *v, const char *top, int depth, struct params_err *pe)
{
	const cJSON *it;
	size_t n = 0, k = 0;

	if (depth > PARAMS_MAX_DEPTH)
		return params_fail(pe, ORCH_EINVAL, top,
		                   "%s%.100s%snests objects and arrays deeper than %d levels, the "
		                   "most this server takes",
		                   top ? "'" : "", top ? top : "the body", top ? "' " : " ",
		                   PARAMS_MAX_DEPTH);
	cJSON_ArrayForEach(it, v)
	{
		if ((cJSON_IsObject(it) || cJSON_IsArray(it)) &&
		    !unique_keys(it, top ? top : it->string, depth + 1, pe))
			return false;
		n++;
	}
	if (!cJSON_IsObject(v) || n < 2)
		return true;
	if (n > PARAMS_MAX_KEYS)
		return params_fail(
		        pe, ORCH_EINVAL, top,
		        "%s%.100s%shas an object of %zu keys; this server takes at most %d "
		        "in one object",
		        top ? "'" : "", top ? top : "the body", top ? "' " : " ", n,
		        PARAMS_MAX_KEYS);
	const char **keys = orch_reallocarray(NULL, n, sizeof(*keys));
	if (keys == NULL)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	cJSON_ArrayForEach(it, v) keys[k++] = it->string;
	qsort(keys, n, sizeof(*keys), cmp_keys);
	const char *dup = NULL;
	for (size_t i = 1; i < n && dup == NULL; i++)
		if (strcmp(keys[i - 1], keys[i]) == 0)
			dup = keys[i];
	if (dup != NULL)
		params_fail(pe, ORCH_EINVAL, dup,
		            "'%.200s' appears twice in one object; send each key once", dup);
	orch_free(keys);
	return dup == NULL;
}

/*
 * The deepest nesting of objects and arrays in @p (@n bytes), strings skipped: why
 * cJSON refused a body (it stops at 1000 levels), to say so rather than "not valid".
 */
static size_t
nesting(const char *p, size_t n)
{
	size_t depth = 0, most = 0;
	bool in_str = false;

	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			most = ++depth > most ? depth : most;
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return most;
}

orch_err
params_body(const char *body, size_t n, cJSON **ret, struct params_err *pe)
{
	const char *end = NULL;
	char key[128];
	cJSON *root = NULL;

	*ret = NULL;
	if (n == 0)
		params_fail(pe, ORCH_EINVAL, NULL, "the request has no body; want a JSON object");
	else if (!utf8_valid(body, n))
		params_fail(pe, ORCH_EINVAL, NULL, "the body is not valid UTF-8");
	else if (memchr(body, '\0', n) != NULL)
		params_fail(pe, ORCH_EINVAL, NULL, "the body holds a NUL byte");
	else if ((root = cJSON_ParseWithLengthOpts(body, n, &end, false)) == NULL &&
	         nesting(body, n) > PARAMS_MAX_DEPTH)
		params_fail(pe, ORCH_EINVAL, NULL,
		            "the body's objects and arrays nest deeper than %d levels, the most "
		            "orch takes",
		            PARAMS_MAX_DEPTH);
	else if (root == NULL || !blank(end, n - (size_t)(end - body)))
		params_fail(pe, ORCH_EINVAL, NULL, "the body is not valid JSON");
	else if (!cJSON_IsObject(root))
		params_fail(pe, ORCH_EINVAL, NULL, "the body is not a JSON object");
	else if (find_nul_escape(body, n, key, sizeof(key)))
		params_fail(pe, ORCH_EINVAL, key[0] ? key : NULL,
		            "%s%.100s%sholds a NUL character (\\u0000), which orch does not accept",
		            key[0] ? "'" : "", key, key[0] ? "' " : "a key ");
	else if (unique_keys(root, NULL, 1, pe)) {
		*ret = root;
		return ORCH_OK;
	}
	cJSON_Delete(root);
	return pe ? pe->code : ORCH_EINVAL;
}

bool
params_known(const cJSON *root, const char *const *names, struct params_err *pe)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, root)
	{
		bool ok = false;
		for (const char *const *n = names; *n && !ok; n++)
			ok = strcmp(it->string, *n) == 0;
		if (!ok)
			return params_fail(pe, ORCH_EINVAL, it->string,
			                   "unsupported parameter '%s'", it->string);
	}
	return true;
}

bool
params_number(const cJSON *root, const char *name, double lo, double hi, double *out,
              struct params_err *pe)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v))
		return params_fail(pe, ORCH_EINVAL, name, "'%s' must be a number", name);
	if (!(v->valuedouble >= lo && v->valuedouble <= hi))
		return params_fail(pe, ORCH_EINVAL, name, "'%s' must be in [%g, %g], got %g", name,
		                   lo, hi, v->valuedouble);
	*out = v->valuedouble;
	return true;
}

bool
params_int(const cJSON *root, const char *name, double lo, double hi, int64_t *out,
           struct params_err *pe)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return params_fail(pe, ORCH_EINVAL, name, "'%s' must be an integer", name);
	if (!(v->valuedouble >= lo && v->valuedouble <= hi))
		return params_fail(pe, ORCH_EINVAL, name, "'%s' must be in [%.0f, %.0f], got %.15g",
		                   name, lo, hi, v->valuedouble);
	*out = (int64_t)v->valuedouble;
	return true;
}

bool
params_string(const cJSON *root, const char *name, bool required, const char **out,
              struct params_err *pe)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (v == NULL || cJSON_IsNull(v)) {
		if (required)
			return params_fail(pe, ORCH_EINVAL, name, "'%s' is required", name);
		return true;
	}
	if (!cJSON_IsString(v))
		return params_fail(pe, ORCH_EINVAL, name, "'%s' must be a string", name);
	*out = v->valuestring;
	return true;
}

bool
params_bool(const cJSON *root, const char *name, bool *out, struct params_err *pe)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsBool(v))
		return params_fail(pe, ORCH_EINVAL, name, "'%s' must be true or false", name);
	*out = cJSON_IsTrue(v);
	return true;
}

static bool
add_stop(struct job_request *r, const cJSON *s, struct params_err *pe)
{
	size_t n = strlen(s->valuestring);

	if (n == 0 || n > ORCH_MAX_STOP_BYTES)
		return params_fail(pe, ORCH_EINVAL, "stop", "each stop string must be 1-%u bytes",
		                   ORCH_MAX_STOP_BYTES);
	if (r->n_stops == ORCH_API_MAX_STOPS)
		return params_fail(pe, ORCH_EINVAL, "stop", "at most %u stop strings",
		                   ORCH_API_MAX_STOPS);
	if ((r->stops[r->n_stops] = orch_strndup(s->valuestring, n)) == NULL)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	r->n_stops++;
	return true;
}

bool
params_stop(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "stop"), *it;

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (cJSON_IsString(v))
		return add_stop(r, v, pe);
	if (!cJSON_IsArray(v))
		return params_fail(pe, ORCH_EINVAL, "stop",
		                   "'stop' must be a string or an array of strings");
	if (cJSON_GetArraySize(v) > (int)ORCH_API_MAX_STOPS)
		return params_fail(pe, ORCH_EINVAL, "stop", "at most %u stop strings",
		                   ORCH_API_MAX_STOPS);
	cJSON_ArrayForEach(it, v)
	{
		if (!cJSON_IsString(it))
			return params_fail(pe, ORCH_EINVAL, "stop",
			                   "'stop' must be a string or an array of strings");
		if (!add_stop(r, it, pe))
			return false;
	}
	return true;
}

/* Whether @root has @name, not null. */
static bool
given(const cJSON *root, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	return v != NULL && !cJSON_IsNull(v);
}

/*
 * "logit_bias": an object of token ids (decimal strings, as OpenAI sends
 * them) to numbers in [-100, 100], at most ORCH_MAX_LOGIT_BIAS of them, into
 * @r->sp (malloc'd; the worker checks the ids against its vocabulary).
 */
static bool
logit_bias(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "logit_bias"), *it;
	size_t n = 0;

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsObject(v))
		return params_fail(pe, ORCH_EINVAL, "logit_bias",
		                   "'logit_bias' must be an object of token ids to biases");
	cJSON_ArrayForEach(it, v) n++;
	if (n > ORCH_MAX_LOGIT_BIAS)
		return params_fail(pe, ORCH_EINVAL, "logit_bias",
		                   "'logit_bias' has %zu entries; at most %u", n,
		                   ORCH_MAX_LOGIT_BIAS);
	if (n == 0)
		return true;
	r->sp.bias_tokens = malloc(n * sizeof(*r->sp.bias_tokens));
	r->sp.bias_values = malloc(n * sizeof(*r->sp.bias_values));
	if (r->sp.bias_tokens == NULL || r->sp.bias_values == NULL)
		return params_fail(pe, ORCH_ENOMEM, "logit_bias", "out of memory");
	cJSON_ArrayForEach(it, v)
	{
		char *end = NULL;
		long id = strtol(it->string, &end, 10);
		if (it->string[0] < '0' || it->string[0] > '9' || *end != '\0' || id > INT32_MAX)
			return params_fail(
			        pe, ORCH_EINVAL, "logit_bias",
			        "'logit_bias' keys are token ids (0, 1, ...), got '%.32s'",
			        it->string);
		if (!cJSON_IsNumber(it) || !(it->valuedouble >= -100 && it->valuedouble <= 100))
			return params_fail(
			        pe, ORCH_EINVAL, "logit_bias",
			        "'logit_bias' values are numbers in [-100, 100] (token %ld)", id);
		r->sp.bias_tokens[r->sp.n_bias_tokens++] = (int32_t)id;
		r->sp.bias_values[r->sp.n_bias_values++] = (float)it->valuedouble;
	}
	return true;
}

bool
params_sampling(const cJSON *root, const char *penalty_name, const char *max_name,
                const char *max_alt, uint32_t max_cap, uint32_t default_max, struct job_request *r,
                struct params_err *pe)
{
	double temp = 1.0, top_p = 1.0, min_p = 0.0, penalty = 1.0, presence = 0, frequency = 0;
	int64_t top_k = 0, seed = -1, max = default_max;
	bool ignore_eos = false;

	if (!params_number(root, "temperature", 0, 2, &temp, pe) ||
	    !params_number(root, "top_p", 0, 1, &top_p, pe) ||
	    !params_int(root, "top_k", 0, 1e6, &top_k, pe) ||
	    !params_number(root, "min_p", 0, 1, &min_p, pe) ||
	    !params_number(root, penalty_name, 0, 2, &penalty, pe) ||
	    !params_number(root, "presence_penalty", -2, 2, &presence, pe) ||
	    !params_number(root, "frequency_penalty", -2, 2, &frequency, pe) ||
	    !params_int(root, "seed", 0, 9007199254740991.0, &seed, pe) ||
	    !params_bool(root, "ignore_eos", &ignore_eos, pe) ||
	    !params_int(root, max_name, r->prompt_only ? 0 : 1, max_cap, &max, pe) ||
	    (max_alt && !params_int(root, max_alt, 1, max_cap, &max, pe)))
		return false;
	orch__sampling_params__init(&r->sp);
	r->sp.temperature = (float)temp;
	r->sp.top_p = (float)top_p;
	r->sp.top_k = (uint32_t)top_k;
	r->sp.min_p = (float)min_p;
	r->sp.repeat_penalty = penalty == 0 ? 1.0f : (float)penalty; /* 0: off, as 1 */
	r->sp.presence_penalty = (float)presence;
	r->sp.frequency_penalty = (float)frequency;
	r->sp.ignore_eos = ignore_eos;
	if (seed >= 0) {
		r->sp.has_seed = true;
		r->sp.seed = (uint64_t)seed;
	}
	r->max_tokens = (uint32_t)max;
	r->max_tokens_given = given(root, max_name) || (max_alt && given(root, max_alt));
	return logit_bias(root, r, pe);
}

size_t
params_utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0u) != 0x80u;
	return n;
}
