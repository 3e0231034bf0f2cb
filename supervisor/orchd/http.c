/*
 * http.c - the public listener (evhttp): limits, API keys, routing, JSON
 * errors and the SSE writer the APIs share.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include "base/alloc.h"
#include "base/log.h"
#include "orchd.h"

static void
count_status(struct orchd *d, int status)
{
	int cls = status / 100;

	if (cls >= 1 && cls <= 5)
		d->metrics.http_responses[cls]++;
}

/* The daemon for replies sent from helpers that do not get it. */
static struct orchd *the_daemon;

void
http_json(struct evhttp_request *req, int status, cJSON *body)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	struct evbuffer *b = evbuffer_new();

	cJSON_Delete(body);
	if (b == NULL || text == NULL) {
		evbuffer_free(b);
		free(text);
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	evbuffer_add(b, text, strlen(text));
	evbuffer_add(b, "\n", 1);
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "application/json");
	const char *reason = status == 200   ? "OK"
	                     : status == 202 ? "Accepted"
	                     : status < 500  ? "Client Error"
	                                     : "Server Error";
	evhttp_send_reply(req, status, reason, b);
	evbuffer_free(b);
	if (the_daemon)
		count_status(the_daemon, status);
}

void
http_error(struct evhttp_request *req, orch_err code, const char *param, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int status = orch_err_http(code);

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(e, "code", orch_err_wire(code));
	cJSON_AddStringToObject(e, "message", msg);
	if (param)
		cJSON_AddStringToObject(e, "param", param);
	else
		cJSON_AddNullToObject(e, "param");
	/* the field OpenAI clients read */
	cJSON_AddStringToObject(e, "type", status < 500 ? "invalid_request_error" : "server_error");
	cJSON_AddBoolToObject(e, "retriable", orch_err_retriable(code));
	if (code == ORCH_EQUEUE_FULL)
		http_retry_after(req, 1);
	http_json(req, status, root);
}

void
http_retry_after(struct evhttp_request *req, unsigned s)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", s);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", v);
}

cJSON *
http_body(struct orchd *d, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t n = evbuffer_get_length(in);
	cJSON *root;

	(void)d;
	if (n == 0) {
		http_error(req, ORCH_EINVAL, NULL, "the request has no body; want a JSON object");
		return NULL;
	}
	const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
	if (p == NULL || (root = cJSON_ParseWithLength(p, n)) == NULL) {
		http_error(req, ORCH_EINVAL, NULL, "the body is not valid JSON");
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		http_error(req, ORCH_EINVAL, NULL, "the body is not a JSON object");
		return NULL;
	}
	return root;
}

void
http_sse_start(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-cache");
	evhttp_add_header(h, "X-Accel-Buffering", "no");
	evhttp_send_reply_start(req, 200, "OK");
	if (the_daemon)
		count_status(the_daemon, 200);
}

void
http_sse_write(struct evhttp_request *req, const char *data, size_t n)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL)
		return;
	evbuffer_add(b, data, n);
	evhttp_send_reply_chunk(req, b);
	evbuffer_free(b);
}

/* ---- the public API ---- */

static bool
authorized(struct orchd *d, struct evhttp_request *req)
{
	if (d->n_api_keys == 0)
		return true;
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	if (h == NULL || strncmp(h, "Bearer ", 7) != 0)
		return false;
	for (uint32_t i = 0; i < d->n_api_keys; i++)
		if (strcmp(h + 7, d->api_keys[i]) == 0)
			return true;
	return false;
}

static void
health(struct evhttp_request *req, bool ready_check, struct orchd *d)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = !ready_check || (models_all_ready(d) && !d->stopping);

	cJSON_AddStringToObject(o, "status", ok ? "ok" : "not ready");
	if (ready_check) {
		cJSON *ms = cJSON_AddObjectToObject(o, "models");
		for (struct model *m = d->models; m; m = m->next)
			cJSON_AddStringToObject(ms, m->cfg.name, models_state_name(m->state));
	}
	if (!ok)
		http_retry_after(req, 5);
	http_json(req, ok ? 200 : 503, o);
}

static void
metrics(struct orchd *d, struct evhttp_request *req)
{
	struct sbuf b = {0};
	struct evbuffer *out = evbuffer_new();

	metrics_render(d, &b);
	if (out == NULL || sbuf_err(&b) != ORCH_OK) {
		evbuffer_free(out);
		sbuf_fini(&b);
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	evbuffer_add(out, b.p, b.n);
	sbuf_fini(&b);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
	count_status(d, 200);
}

static void
route(struct evhttp_request *req, void *arg)
{
	struct orchd *d = arg;
	const char *uri = evhttp_request_get_uri(req);
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	char path[512];
	size_t n = strcspn(uri, "?");

	snprintf(path, sizeof(path), "%.*s", (int)(n < sizeof(path) - 1 ? n : sizeof(path) - 1),
	         uri);
	bool get = cmd == EVHTTP_REQ_GET, post = cmd == EVHTTP_REQ_POST;
	if (strcmp(path, "/health") == 0 && get)
		return health(req, false, d);
	if (strcmp(path, "/ready") == 0 && get)
		return health(req, true, d);
	if (strcmp(path, "/metrics") == 0 && get)
		return metrics(d, req);
	if (!authorized(d, req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
		                  "Bearer");
		cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
		cJSON_AddStringToObject(e, "code", "UNAUTHORIZED");
		cJSON_AddStringToObject(e, "message",
		                        "a valid 'Authorization: Bearer KEY' is needed");
		cJSON_AddStringToObject(e, "type", "invalid_request_error");
		return http_json(req, 401, root);
	}
	if (d->stopping) {
		http_retry_after(req, 5);
		return http_error(req, ORCH_EQUEUE_FULL, NULL, "orchd is shutting down");
	}
	if (strcmp(path, "/execute") == 0 && post)
		return api_native_execute(d, req);
	if (strcmp(path, "/cancel") == 0 && post)
		return api_native_cancel(d, req);
	if (strncmp(path, "/jobs/", 6) == 0 && get) {
		char id[256];
		const char *rest = path + 6, *slash = strchr(rest, '/');
		if (slash && strcmp(slash, "/events") == 0 && slash > rest &&
		    (size_t)(slash - rest) < sizeof(id)) {
			snprintf(id, sizeof(id), "%.*s", (int)(slash - rest), rest);
			char *dec = evhttp_uridecode(id, 0, NULL);
			api_native_events(d, req, dec ? dec : id);
			free(dec);
			return;
		}
	}
	if (strcmp(path, "/v1/completions") == 0 && post)
		return api_openai_completions(d, req, false);
	if (strcmp(path, "/v1/chat/completions") == 0 && post)
		return api_openai_completions(d, req, true);
	if (strcmp(path, "/v1/models") == 0 && get)
		return api_openai_models(d, req);
	http_error(req, ORCH_ENOTFOUND, NULL, "no route for %s %s",
	           cmd == EVHTTP_REQ_GET    ? "GET"
	           : cmd == EVHTTP_REQ_POST ? "POST"
	                                    : "this method on",
	           path);
}

/* Bind "HOST:PORT" on @http. */
static orch_err
bind_addr(struct evhttp *http, const char *addr, struct orch_errinfo *reterr)
{
	char host[128];
	const char *colon = strrchr(addr, ':');

	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
		return orch_errf(reterr, ORCH_EINVAL, "listen address '%s': want HOST:PORT", addr);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (evhttp_bind_socket(http, host, (ev_uint16_t)atoi(colon + 1)) != 0)
		return orch_errf(reterr, ORCH_EIO,
		                 "cannot listen on %s (in use, or not an address here)", addr);
	return ORCH_OK;
}

orch_err
http_start(struct orchd *d, struct orch_errinfo *reterr)
{
	orch_err rv;

	the_daemon = d;
	if ((d->http = evhttp_new(d->base)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	evhttp_set_max_body_size(d->http, d->cfg.max_body_bytes);
	evhttp_set_max_headers_size(d->http, d->cfg.max_header_bytes);
	evhttp_set_timeout(d->http, (int)d->cfg.request_timeout_s);
	evhttp_set_allowed_methods(d->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
	evhttp_set_default_content_type(d->http, "application/json");
	evhttp_set_gencb(d->http, route, d);
	if ((rv = bind_addr(d->http, d->cfg.listen, reterr)) != ORCH_OK)
		return rv;
	orch_log(ORCH_LOG_INFO, "listening", "addr=%s", d->cfg.listen);
	return ORCH_OK;
}

void
http_stop(struct orchd *d)
{
	if (d->http)
		evhttp_free(d->http);
	d->http = NULL;
}
