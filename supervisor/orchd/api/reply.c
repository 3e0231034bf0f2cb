/*
 * reply.c - answering a request (reply.h): JSON bodies and errors in the
 * APIs' one form, on top of the edge's reply_ops.
 */
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "params.h"

const char reply_oom_body[] = "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"out of memory\","
                              "\"param\":null,\"type\":\"server_error\",\"retriable\":false}}\n";

void
reply_send(struct api_req *r, int status, const char *type, const char *body, size_t n)
{
	r->ops->send(r, status, type, body, n, NULL, 0);
}

void
reply_json(struct api_req *r, int status, cJSON *body)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;

	cJSON_Delete(body);
	if (text == NULL)
		return reply_send(r, 500, "application/json", reply_oom_body,
		                  sizeof(reply_oom_body) - 1);
	r->ops->send(r, status, "application/json", text, strlen(text), "\n", 1);
	free(text);
}

void
reply_error(struct api_req *r, orch_err code, const char *param, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_error_job(r, code, param, NULL, msg);
}

void
reply_error_job(struct api_req *r, orch_err code, const char *param, const char *correlation,
                const char *msg)
{
	cJSON *root = params_err_json(code, param, msg);
	cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");

	if (correlation != NULL && e != NULL) /* the log has the details under it */
		cJSON_AddStringToObject(e, "correlation_id", correlation);
	if (code == ORCH_EQUEUE_FULL || code == ORCH_EOVERLOADED)
		reply_retry_after(r, 1);
	if (code == ORCH_EUNAUTHORIZED)
		reply_header(r, "WWW-Authenticate", "Bearer");
	reply_json(r, orch_err_http(code), root);
}

void
reply_params_error(struct api_req *r, const struct params_err *pe)
{
	reply_error(r, pe->code, pe->param[0] ? pe->param : NULL, "%s", pe->msg);
}

void
reply_header(struct api_req *r, const char *name, const char *value)
{
	r->ops->header(r, name, value);
}

void
reply_retry_after(struct api_req *r, unsigned s)
{
	char v[16];

	if (r->retry_after)
		return; /* the first one says it: a response has one */
	snprintf(v, sizeof(v), "%u", s);
	r->retry_after = true;
	reply_header(r, "Retry-After", v);
}

void
reply_hold(struct api_req *r, api_gone_fn gone, void *arg, bool read)
{
	r->ops->hold(r, gone, arg, read);
}

void
reply_release(struct api_req *r)
{
	r->ops->release(r);
}

void
reply_note(struct api_req *r, const char *path, const char *job)
{
	r->ops->note(r, path, job);
}

orch_err
reply_stream_start(struct api_req *r, api_gone_fn gone, void *arg)
{
	return r->ops->stream_start(r, gone, arg);
}

void
reply_stream_head(struct api_req *r)
{
	r->ops->stream_head(r);
}

void
reply_stream_cut(struct api_req *r, const char *text)
{
	r->ops->stream_cut(r, text);
}

void
reply_stream_write(struct api_req *r, const char *data, size_t n)
{
	r->ops->stream_write(r, data, n);
}

void
reply_stream_end(struct api_req *r)
{
	r->ops->stream_end(r);
}
