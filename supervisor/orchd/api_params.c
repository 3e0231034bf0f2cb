/*
 * api_params.c - type and range checks of request bodies, one message per
 * parameter, shared by the native and OpenAI APIs.
 */
#include "api_params.h"

#include <math.h>
#include <string.h>

#include "base/alloc.h"
#include "ipc/ipc.h"

bool
params_known(struct evhttp_request *req, const cJSON *root, const char *const *names)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, root)
	{
		bool ok = false;
		for (const char *const *n = names; *n && !ok; n++)
			ok = strcmp(it->string, *n) == 0;
		if (!ok) {
			http_error(req, ORCH_EINVAL, it->string, "unsupported parameter '%s'",
			           it->string);
			return false;
		}
	}
	return true;
}

bool
params_number(struct evhttp_request *req, const cJSON *root, const char *name, double lo, double hi,
              double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v)) {
		http_error(req, ORCH_EINVAL, name, "'%s' must be a number", name);
		return false;
	}
	if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
		http_error(req, ORCH_EINVAL, name, "'%s' must be in [%g, %g], got %g", name, lo, hi,
		           v->valuedouble);
		return false;
	}
	*out = v->valuedouble;
	return true;
}

bool
params_int(struct evhttp_request *req, const cJSON *root, const char *name, double lo, double hi,
           int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) {
		http_error(req, ORCH_EINVAL, name, "'%s' must be an integer", name);
		return false;
	}
	if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
		http_error(req, ORCH_EINVAL, name, "'%s' must be in [%.0f, %.0f], got %.0f", name,
		           lo, hi, v->valuedouble);
		return false;
	}
	*out = (int64_t)v->valuedouble;
	return true;
}

bool
params_string(struct evhttp_request *req, const cJSON *root, const char *name, bool required,
              const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (v == NULL || cJSON_IsNull(v)) {
		if (required)
			http_error(req, ORCH_EINVAL, name, "'%s' is required", name);
		return !required;
	}
	if (!cJSON_IsString(v)) {
		http_error(req, ORCH_EINVAL, name, "'%s' must be a string", name);
		return false;
	}
	*out = v->valuestring;
	return true;
}

bool
params_bool(struct evhttp_request *req, const cJSON *root, const char *name, bool *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsBool(v)) {
		http_error(req, ORCH_EINVAL, name, "'%s' must be true or false", name);
		return false;
	}
	*out = cJSON_IsTrue(v);
	return true;
}

static bool
add_stop(struct evhttp_request *req, struct job *j, const cJSON *s)
{
	size_t n = strlen(s->valuestring);

	if (n == 0 || n > ORCH_MAX_STOP_BYTES) {
		http_error(req, ORCH_EINVAL, "stop", "each stop string must be 1-%u bytes",
		           ORCH_MAX_STOP_BYTES);
		return false;
	}
	if ((j->stops[j->n_stops] = orch_strndup(s->valuestring, n)) == NULL) {
		http_error(req, ORCH_ENOMEM, NULL, "out of memory");
		return false;
	}
	j->n_stops++;
	return true;
}

bool
params_stop(struct evhttp_request *req, const cJSON *root, struct job *j)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "stop"), *it;

	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (cJSON_IsString(v))
		return add_stop(req, j, v);
	if (!cJSON_IsArray(v)) {
		http_error(req, ORCH_EINVAL, "stop",
		           "'stop' must be a string or an array of strings");
		return false;
	}
	if (cJSON_GetArraySize(v) > (int)ORCH_API_MAX_STOPS) {
		http_error(req, ORCH_EINVAL, "stop", "at most %u stop strings", ORCH_API_MAX_STOPS);
		return false;
	}
	cJSON_ArrayForEach(it, v)
	{
		if (!cJSON_IsString(it)) {
			http_error(req, ORCH_EINVAL, "stop",
			           "'stop' must be a string or an array of strings");
			return false;
		}
		if (!add_stop(req, j, it))
			return false;
	}
	return true;
}

bool
params_sampling(struct orchd *d, struct evhttp_request *req, const cJSON *root,
                const char *penalty_name, const char *max_name, const char *max_alt,
                uint32_t default_max, struct job *j)
{
	double temp = 1.0, top_p = 1.0, min_p = 0.0, penalty = 1.0;
	int64_t top_k = 0, seed = -1, max = default_max;

	if (!params_number(req, root, "temperature", 0, 2, &temp) ||
	    !params_number(req, root, "top_p", 0, 1, &top_p) ||
	    !params_int(req, root, "top_k", 0, 1e6, &top_k) ||
	    !params_number(req, root, "min_p", 0, 1, &min_p) ||
	    !params_number(req, root, penalty_name, 0, 2, &penalty) ||
	    !params_int(req, root, "seed", 0, 9007199254740991.0, &seed) ||
	    !params_int(req, root, max_name, 1, d->cfg.max_tokens, &max) ||
	    (max_alt && !params_int(req, root, max_alt, 1, d->cfg.max_tokens, &max)))
		return false;
	j->sp.temperature = (float)temp;
	j->sp.top_p = (float)top_p;
	j->sp.top_k = (uint32_t)top_k;
	j->sp.min_p = (float)min_p;
	j->sp.repeat_penalty = penalty == 0 ? 1.0f : (float)penalty; /* 0: off, as 1 */
	if (seed >= 0) {
		j->sp.has_seed = true;
		j->sp.seed = (uint64_t)seed;
	}
	j->max_tokens = (uint32_t)max;
	return true;
}

size_t
params_utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0u) != 0x80u;
	return n;
}

void
api_submit(struct orchd *d, struct evhttp_request *req, struct job *j, bool streaming)
{
	struct orch_errinfo e = {0};

	if (models_submit(d, j, &e) != ORCH_OK) {
		http_error(req, e.code, "model", "%s", e.msg);
		jobs_free(d, j);
		return;
	}
	jobs_attach(d, j, req, streaming, 0);
}
