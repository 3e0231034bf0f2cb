#pragma once
/*
 * api_params.h - request-body checks the native and OpenAI APIs share.
 * Each takes the request and, on a bad value, answers it with 400
 * INVALID_REQUEST naming the parameter and returns false.
 */
#include <stdbool.h>
#include <stdint.h>

#include "orchd.h"

/* params_known - every key of @root is in @names (NULL-terminated). */
bool params_known(struct evhttp_request *req, const cJSON *root, const char *const *names);

/* params_number - optional number in [@lo, @hi] into *@out (left alone when absent). */
bool params_number(struct evhttp_request *req, const cJSON *root, const char *name, double lo,
                   double hi, double *out);

/* params_int - optional integer in [@lo, @hi] into *@out (left alone when absent). */
bool params_int(struct evhttp_request *req, const cJSON *root, const char *name, double lo,
                double hi, int64_t *out);

/* params_string - required (or optional) string; *@out points into @root. */
bool params_string(struct evhttp_request *req, const cJSON *root, const char *name, bool required,
                   const char **out);

/* params_bool - optional boolean into *@out. */
bool params_bool(struct evhttp_request *req, const cJSON *root, const char *name, bool *out);

/* params_stop - "stop": a string or an array of up to ORCH_API_MAX_STOPS strings, copied into @j.
 */
bool params_stop(struct evhttp_request *req, const cJSON *root, struct job *j);

/*
 * params_sampling - temperature, top_p, top_k, min_p, the repetition
 * penalty (named @penalty_name), seed and max_tokens (named @max_name, and
 * @max_alt when not NULL) into @j, with the server's caps.
 */
bool params_sampling(struct orchd *d, struct evhttp_request *req, const cJSON *root,
                     const char *penalty_name, const char *max_name, const char *max_alt,
                     uint32_t default_max, struct job *j);

/* params_utf8_chars - the number of code points in @s. */
size_t params_utf8_chars(const char *s);

/*
 * api_submit - hand @j to its model (placed or queued) and follow it on
 * @req; when refused (queue full, model failed) answer the error and free @j.
 */
void api_submit(struct orchd *d, struct evhttp_request *req, struct job *j, bool streaming);
