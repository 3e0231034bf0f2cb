/*
 * request_openai.c - which OpenAI request fields orch takes (request.h):
 * one table, the one docs/http-api.md prints ("OpenAI fields").
 *
 * Each field is used (request.c and request_chat.c read it), ignored
 * (accepted, named in the request's debug log line: it cannot change the
 * text the caller gets), taken only at its default (anything else would
 * change the result, so it is refused naming the field), checked by its own
 * rule (response_format: request_grammar.c; modalities, stream_options), or refused outright
 * with the reason. A field the table does not name is refused: a typo
 * ("temprature") must not be dropped silently.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jobs.h"
#include "params.h"
#include "request.h"

enum rule {
	R_USE,     /* read by the parser: its type and range are checked there */
	R_IGNORE,  /* accepted whatever its value; logged at debug level */
	R_DEFAULT, /* accepted at its default only */
	R_CHECK,   /* its own check below */
	R_REFUSE,  /* refused whatever its value (but null), with .why */
};

enum { A_CMPL = 1, A_CHAT = 2, A_BOTH = 3 };

static const struct field {
	const char *name;
	unsigned char apis;
	enum rule rule;
	const char *why; /* R_REFUSE; R_DEFAULT: why only the default (NULL: no reason given) */
} fields[] = {
        {"model", A_BOTH, R_USE, NULL},
        {"prompt", A_CMPL, R_USE, NULL},
        {"messages", A_CHAT, R_USE, NULL},
        {"max_tokens", A_BOTH, R_USE, NULL},
        {"max_completion_tokens", A_CHAT, R_USE, NULL},
        {"temperature", A_BOTH, R_USE, NULL},
        {"top_p", A_BOTH, R_USE, NULL},
        {"stop", A_BOTH, R_USE, NULL},
        {"stream", A_BOTH, R_USE, NULL},
        {"seed", A_BOTH, R_USE, NULL},
        {"top_k", A_BOTH, R_USE, NULL},
        {"min_p", A_BOTH, R_USE, NULL},
        {"repetition_penalty", A_BOTH, R_USE, NULL},
        {"presence_penalty", A_BOTH, R_USE, NULL},
        {"frequency_penalty", A_BOTH, R_USE, NULL},
        {"logit_bias", A_BOTH, R_USE, NULL},
        {"ignore_eos", A_BOTH, R_USE, NULL},
        {"parse_special", A_CMPL, R_USE, NULL},
        {"cache_salt", A_BOTH, R_USE, NULL},
        {"deadline_ms", A_BOTH, R_USE, NULL},
        {"grammar", A_BOTH, R_USE, NULL},
        {"guided_regex", A_BOTH, R_USE, NULL},
        {"regex", A_BOTH, R_USE, NULL},
        {"tools", A_CHAT, R_USE, NULL},
        {"tool_choice", A_CHAT, R_USE, NULL},
        {"reasoning_effort", A_CHAT, R_USE, NULL},
        {"chat_template_kwargs", A_CHAT, R_USE, NULL},
        {"stream_options", A_BOTH, R_CHECK, NULL},
        {"response_format", A_BOTH, R_CHECK, NULL},
        {"modalities", A_CHAT, R_CHECK, NULL},
        {"user", A_BOTH, R_IGNORE, NULL},
        {"store", A_BOTH, R_IGNORE, NULL},
        {"metadata", A_BOTH, R_IGNORE, NULL},
        {"service_tier", A_BOTH, R_IGNORE, NULL},
        {"parallel_tool_calls", A_CHAT, R_USE, NULL},
        {"prediction", A_CHAT, R_IGNORE, NULL},
        {"prompt_cache_key", A_BOTH, R_IGNORE, NULL},
        {"safety_identifier", A_BOTH, R_IGNORE, NULL},
        {"n", A_BOTH, R_USE, NULL},
        {"best_of", A_CMPL, R_DEFAULT, NULL},

        {"logprobs", A_BOTH, R_USE, NULL},
        {"top_logprobs", A_CHAT, R_USE, NULL},
        {"echo", A_CMPL, R_USE, NULL},
        {"suffix", A_CMPL, R_DEFAULT,
         "orch has no fill-in-the-middle (insert) completions; send the text before the "
         "insertion point as the prompt"},
        {"audio", A_CHAT, R_DEFAULT, NULL},
        {"web_search_options", A_CHAT, R_REFUSE, "orch has no web search"},
        {"functions", A_CHAT, R_REFUSE, "it is deprecated; send 'tools'"},
        {"function_call", A_CHAT, R_REFUSE, "it is deprecated; send 'tool_choice'"},
};

#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))
_Static_assert(N_FIELDS <= 64, "job_request.ignored has a bit per field");

static const struct field *
field_of(const char *name, unsigned char api)
{
	for (size_t i = 0; i < N_FIELDS; i++)
		if ((fields[i].apis & api) && strcmp(fields[i].name, name) == 0)
			return &fields[i];
	return NULL;
}

/* Whether @v is @name's default: absent, null, false, 0, "", {} or [] (best_of: 1). */
static bool
is_default(const char *name, const cJSON *v)
{
	if (cJSON_IsNull(v))
		return true;
	if (strcmp(name, "best_of") == 0)
		return cJSON_IsNumber(v) && v->valuedouble == 1;
	return cJSON_IsFalse(v) || (cJSON_IsNumber(v) && v->valuedouble == 0) ||
	       (cJSON_IsString(v) && v->valuestring[0] == '\0') ||
	       ((cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child == NULL);
}

/* modalities: ["text"] (or none); orch makes no audio. */
static bool
modalities(const cJSON *v, struct params_err *pe)
{
	const cJSON *it;

	if (!cJSON_IsArray(v))
		return params_fail(pe, ORCH_EINVAL, "modalities",
		                   "'modalities' must be an array of strings");
	cJSON_ArrayForEach(it, v)
	{
		if (!cJSON_IsString(it) || strcmp(it->valuestring, "text") != 0)
			return params_fail(
			        pe, ORCH_EINVAL, "modalities",
			        "'modalities' may only be [\"text\"]: orch makes no audio");
	}
	return true;
}

/* stream_options: include_usage is used; include_obfuscation is ignored (no padding). */
static bool
stream_options(const cJSON *v, struct job_request *r, struct params_err *pe)
{
	static const char *const keys[] = {"include_usage", "include_obfuscation", NULL};
	bool obf = false;

	if (!cJSON_IsObject(v))
		return params_fail(pe, ORCH_EINVAL, "stream_options",
		                   "'stream_options' must be an object");
	return params_known(v, keys, pe) &&
	       params_bool(v, "include_usage", &r->include_usage, pe) &&
	       params_bool(v, "include_obfuscation", &obf, pe);
}

static bool
check(const cJSON *v, struct job_request *r, struct params_err *pe)
{
	if (strcmp(v->string, "response_format") == 0)
		return request_response_format(v, r, pe);
	if (strcmp(v->string, "modalities") == 0)
		return modalities(v, pe);
	return stream_options(v, r, pe);
}

/* Note @f in @r->ignored. */
static void
note_ignored(struct job_request *r, const struct field *f)
{
	r->ignored |= 1ull << (f - fields);
}

void
request_openai_ignored(uint64_t ignored, char *out, size_t n)
{
	size_t k = 0;

	if (n > 0)
		out[0] = '\0';
	for (size_t i = 0; i < N_FIELDS && k + 1 < n; i++)
		if (ignored & (1ull << i)) {
			int w = snprintf(out + k, n - k, "%s%s", k ? "," : "", fields[i].name);
			if (w < 0 || (size_t)w >= n - k) {
				out[k] = '\0';
				break;
			}
			k += (size_t)w;
		}
}

static bool
one(const cJSON *v, bool chat, struct job_request *r, struct params_err *pe)
{
	const struct field *f = field_of(v->string, chat ? A_CHAT : A_CMPL);

	if (f == NULL)
		return params_fail(
		        pe, ORCH_EINVAL, v->string,
		        "unsupported parameter '%.200s' (docs/http-api.md lists the ones "
		        "orch takes)",
		        v->string);
	if (cJSON_IsNull(v) && f->rule != R_USE)
		return true;
	switch (f->rule) {
	case R_USE:
		return true;
	case R_IGNORE:
		note_ignored(r, f);
		return true;
	case R_DEFAULT:
		if (is_default(f->name, v))
			return true;
		if (f->why != NULL)
			return params_fail(pe, ORCH_EINVAL, f->name, "'%s' is not supported: %s",
			                   f->name, f->why);
		return params_fail(pe, ORCH_EINVAL, f->name,
		                   "'%s' is not supported by orch (only its default)", f->name);
	case R_CHECK:
		return check(v, r, pe);
	case R_REFUSE:
		return params_fail(pe, ORCH_EINVAL, f->name, "'%s' is not supported: %s", f->name,
		                   f->why);
	}
	return true;
}

bool
request_openai_fields(const cJSON *root, bool chat, struct job_request *r, struct params_err *pe)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, root)
	{
		if (!one(it, chat, r, pe))
			return false;
	}
	return true;
}
