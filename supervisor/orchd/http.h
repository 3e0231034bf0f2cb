#pragma once
/*
 * http.h - answers over evhttp: JSON answers and errors, bearer-token checks,
 * route tables as data (http_listen.h is the public listener). Thread: the loop.
 */
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct cJSON;
struct evhttp;
struct evhttp_request;
struct orchd;
struct params_err;

/* http_handler_fn - a route's handler; @arg is the path's variable part ("" for exact routes). */
typedef void (*http_handler_fn)(struct orchd *d, struct evhttp_request *req, const char *arg);

/*
 * One route: @method (EVHTTP_REQ_*), @path matched exactly, or as a prefix
 * when @prefix (then the rest up to @suffix, URI-decoded, is the handler's
 * argument, and the path must end with @suffix).
 */
struct http_route {
	int method;
	const char *path;
	bool prefix;
	const char *suffix;
	http_handler_fn handler;
};

/*
 * http_dispatch - run the route of @table (@n rows) matching @req (a HEAD
 * runs the GET row: http_send leaves the body out); false when none does
 * (nothing answered).
 */
bool http_dispatch(struct orchd *d, struct evhttp_request *req, const struct http_route *table,
                   size_t n);

/* http_bearer_ok - whether @req carries "Authorization: Bearer K" for one of @keys. */
bool http_bearer_ok(struct evhttp_request *req, const char *const *keys, size_t n);

/* http_req_path - @req's path (the URI before any '?') into @out, cut to @n - 1 bytes. */
void http_req_path(struct evhttp_request *req, char *out, size_t n);

/* http_methods_at - the EVHTTP_REQ_* methods @table's rows take at @path (with HEAD and
 * OPTIONS); 0: none. */
unsigned http_methods_at(const struct http_route *table, size_t n, const char *path);

/* http_method_name - "GET", "POST", ... for an EVHTTP_REQ_* @cmd; "?" for another. */
const char *http_method_name(int cmd);

/* http_allow_value - an Allow header's value for @methods into @out (@n bytes). */
void http_allow_value(unsigned methods, char *out, size_t n);

/* http_error - a JSON error body {error:{code,message,param}} with the code's HTTP status. */
void http_error(struct evhttp_request *req, orch_err code, const char *param, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/*
 * http_error_job - http_error with the message @msg as it is, and, when
 * @correlation is not NULL, the job's "correlation_id" (the log has its details).
 */
void http_error_job(struct evhttp_request *req, orch_err code, const char *param,
                    const char *correlation, const char *msg);

/* http_params_error - http_error for a refused request (params.h). */
void http_params_error(struct evhttp_request *req, const struct params_err *pe);

/* http_json - send @body (freed) with @status (http_send's rules); 500 when out of memory. */
void http_json(struct evhttp_request *req, int status, struct cJSON *body);

/*
 * http_send - answer @req with @status and the @n bytes at @body, of
 * Content-Type @type (NULL: none). A HEAD gets the same head, Content-Length
 * the body's, and no body; a 204 no body and no type. The reason phrase is
 * the standard one.
 */
void http_send(struct evhttp_request *req, int status, const char *type, const char *body,
               size_t n);

/* http_body - the request body's bytes (pulled up) into *@ret and their count. */
size_t http_body(struct evhttp_request *req, const char **ret);

/* http_retry_after - add "Retry-After: @s" unless @req's response has one. */
void http_retry_after(struct evhttp_request *req, unsigned s);

/* http_count - count a response of @status in orch_http_responses_total. */
void http_count(struct orchd *d, int status);
