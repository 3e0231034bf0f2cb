#pragma once
/*
 * params.h - type and range checks of request-body values, shared by the
 * native, OpenAI and admin APIs. evhttp-free: a bad value fills a
 * params_err (code, the parameter's name, the message) the HTTP layer
 * answers with, and the check returns false.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct cJSON;
struct job_request;

/* Why a request was refused: its error code, the parameter ("" for none), the message. */
struct params_err {
	orch_err code;
	char param[256];
	char msg[2048]; /* a schema's refusal lists every place it cannot enforce */
};

/*
 * params_err_json - the JSON body of a refusal of @code with @msg and @param
 * (NULL for none): {"error": {code, message, param, type, retriable}}, as
 * every API answers one. NULL when out of memory.
 */
struct cJSON *params_err_json(orch_err code, const char *param, const char *msg);

/* params_fail - fill @pe (when not NULL) and return false. */
bool params_fail(struct params_err *pe, orch_err code, const char *param, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/*
 * What a request body may hold, so that checking it costs a bounded, linear
 * time on orchd's loop (issue 52): objects and arrays nested at most
 * PARAMS_MAX_DEPTH deep, at most PARAMS_MAX_KEYS keys in one object
 * (chat_template_kwargs, a schema's properties). docs/http-api.md, Limits.
 */
#define PARAMS_MAX_DEPTH 128
#define PARAMS_MAX_KEYS  16384

/*
 * params_body - @n bytes of a request body as a JSON object into *@ret (the
 * caller cJSON_Delete()s it). Refused, with ORCH_EINVAL and why in @pe: no
 * body, ill-formed UTF-8, a NUL byte, not JSON, text after the value, not
 * an object, a "\u0000" escape in any string (param: the top-level key it is
 * under; cJSON would cut the string there), a key twice in one object
 * (param: the key; cJSON would take the first), nesting deeper than
 * PARAMS_MAX_DEPTH or an object of more than PARAMS_MAX_KEYS keys (param: the
 * top-level key it is under). ORCH_ENOMEM.
 */
orch_err params_body(const char *body, size_t n, struct cJSON **ret, struct params_err *pe);

/* params_known - every key of @root is in @names (NULL-terminated). */
bool params_known(const struct cJSON *root, const char *const *names, struct params_err *pe);

/* params_number - optional number in [@lo, @hi] into *@out (left alone when absent). */
bool params_number(const struct cJSON *root, const char *name, double lo, double hi, double *out,
                   struct params_err *pe);

/* params_int - optional integer in [@lo, @hi] into *@out (left alone when absent). */
bool params_int(const struct cJSON *root, const char *name, double lo, double hi, int64_t *out,
                struct params_err *pe);

/* params_string - required (or optional) string; *@out points into @root. */
bool params_string(const struct cJSON *root, const char *name, bool required, const char **out,
                   struct params_err *pe);

/* params_bool - optional boolean into *@out. */
bool params_bool(const struct cJSON *root, const char *name, bool *out, struct params_err *pe);

/*
 * params_stop - "stop": a string or an array of up to ORCH_API_MAX_STOPS
 * strings of 1-ORCH_MAX_STOP_BYTES bytes, copied into @r.
 */
bool params_stop(const struct cJSON *root, struct job_request *r, struct params_err *pe);

/*
 * params_sampling - temperature, top_p, top_k, min_p, the repetition
 * penalty (named @penalty_name), presence_penalty, frequency_penalty,
 * logit_bias (its arrays malloc'd in @r->sp, freed with @r), seed and
 * max_tokens (named @max_name, and
 * @max_alt when not NULL; at most @max_cap, @default_max when absent; 0 only with
 * @r->prompt_only) into @r; @r->max_tokens_given says whether the client gave it.
 */
bool params_sampling(const struct cJSON *root, const char *penalty_name, const char *max_name,
                     const char *max_alt, uint32_t max_cap, uint32_t default_max,
                     struct job_request *r, struct params_err *pe);

/* params_utf8_chars - the number of code points in @s. */
size_t params_utf8_chars(const char *s);
