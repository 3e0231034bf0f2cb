/*
 * http.c - the public listener (evhttp): limits, API keys, the route
 * table, JSON answers and errors. The SSE writer is sse.c's.
 */
#include "http.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api.h"
#include "base/log.h"
#include "base/sbuf.h"
#include "health.h"
#include "http_conn.h"
#include "keys.h"
#include "metrics.h"
#include "models.h"
#include "orchd.h"
#include "params.h"

void
http_count(struct orchd *d, int status)
{
	int cls = status / 100;

	if (cls >= 1 && cls <= 5)
		d->metrics.http_responses[cls]++;
}

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
}

void
http_error(struct evhttp_request *req, orch_err code, const char *param, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	http_error_job(req, code, param, NULL, msg);
}

void
http_error_job(struct evhttp_request *req, orch_err code, const char *param,
               const char *correlation, const char *msg)
{
	cJSON *root = params_err_json(code, param, msg);
	cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");

	if (correlation != NULL && e != NULL) /* the log has the details under it */
		cJSON_AddStringToObject(e, "correlation_id", correlation);
	if (code == ORCH_EQUEUE_FULL || code == ORCH_EOVERLOADED)
		http_retry_after(req, 1);
	if (code == ORCH_EUNAUTHORIZED)
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
		                  "Bearer");
	http_json(req, orch_err_http(code), root);
}

void
http_params_error(struct evhttp_request *req, const struct params_err *pe)
{
	http_error(req, pe->code, pe->param[0] ? pe->param : NULL, "%s", pe->msg);
}

void
http_retry_after(struct evhttp_request *req, unsigned s)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	char v[16];

	if (evhttp_find_header(h, "Retry-After") != NULL)
		return; /* the first one says it: a response has one */
	snprintf(v, sizeof(v), "%u", s);
	evhttp_add_header(h, "Retry-After", v);
}

size_t
http_body(struct evhttp_request *req, const char **ret)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t n = evbuffer_get_length(in);

	*ret = n ? (const char *)evbuffer_pullup(in, (ev_ssize_t)n) : "";
	if (*ret == NULL) {
		*ret = "";
		n = 0;
	}
	return n;
}

bool
http_bearer_ok(struct evhttp_request *req, const char *const *keys, size_t n)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	bool ok = false;

	for (size_t i = 0; i < n; i++) /* keys.c: any case of "Bearer", constant time */
		ok |= keys_token_equal(h, keys[i]);
	return ok;
}

/* Whether @path matches @r; the variable part of a prefix route into @arg. */
static bool
route_match(const struct http_route *r, const char *path, char *arg, size_t n)
{
	size_t lp = strlen(r->path), ls = r->suffix ? strlen(r->suffix) : 0, lpath = strlen(path);

	if (!r->prefix) {
		arg[0] = '\0';
		return strcmp(path, r->path) == 0;
	}
	if (lpath <= lp + ls || strncmp(path, r->path, lp) != 0 ||
	    (ls && strcmp(path + lpath - ls, r->suffix) != 0))
		return false;
	size_t k = lpath - lp - ls;
	if (k >= n || memchr(path + lp, '/', k) != NULL)
		return false;
	memcpy(arg, path + lp, k);
	arg[k] = '\0';
	return true;
}

bool
http_dispatch(struct orchd *d, struct evhttp_request *req, const struct http_route *table, size_t n)
{
	const char *uri = evhttp_request_get_uri(req);
	int cmd = (int)evhttp_request_get_command(req);
	char path[512], arg[256];
	size_t k = strcspn(uri, "?");

	snprintf(path, sizeof(path), "%.*s", (int)(k < sizeof(path) - 1 ? k : sizeof(path) - 1),
	         uri);
	for (size_t i = 0; i < n; i++) {
		if (table[i].method != cmd || !route_match(&table[i], path, arg, sizeof(arg)))
			continue;
		char *dec = arg[0] ? evhttp_uridecode(arg, 0, NULL) : NULL;
		table[i].handler(d, req, dec ? dec : arg);
		free(dec);
		return true;
	}
	return false;
}

/* ---- the public API ---- */

/* GET /health: 200 while the loop runs; the models' and workers' health (health.h). */
static void
on_health(struct orchd *d, struct evhttp_request *req, const char *arg)
{
	(void)arg;
	http_json(req, 200, health_json(d));
}

/* GET /ready: 200 when every preload model is READY, else 503 with each model's state. */
static void
on_ready(struct orchd *d, struct evhttp_request *req, const char *arg)
{
	cJSON *o = cJSON_CreateObject(), *ms;
	bool ok = models_all_ready(d) && !d->stopping;

	(void)arg;
	cJSON_AddStringToObject(o, "status", ok ? "ok" : "not ready");
	ms = cJSON_AddObjectToObject(o, "models");
	for (struct model_entry *m = d->models; m; m = m->next)
		cJSON_AddStringToObject(ms, m->cfg.name, models_state_name(m->state));
	if (!ok)
		http_retry_after(req, 5);
	http_json(req, ok ? 200 : 503, o);
}

static void
on_metrics(struct orchd *d, struct evhttp_request *req, const char *arg)
{
	struct sbuf b = {0};
	struct evbuffer *out = evbuffer_new();

	(void)arg;
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
}

/* Without an API key. */
static const struct http_route open_routes[] = {
        {EVHTTP_REQ_GET, "/health", false, NULL, on_health},
        {EVHTTP_REQ_GET, "/ready", false, NULL, on_ready},
        {EVHTTP_REQ_GET, "/metrics", false, NULL, on_metrics},
};

/* With an API key (when keys are configured), and not while stopping. */
static const struct http_route api_routes[] = {
        {EVHTTP_REQ_POST, "/execute", false, NULL, api_native_execute},
        {EVHTTP_REQ_POST, "/cancel", false, NULL, api_native_cancel},
        {EVHTTP_REQ_GET, "/jobs/", true, "/events", api_native_events},
        {EVHTTP_REQ_POST, "/v1/completions", false, NULL, api_openai_completions},
        {EVHTTP_REQ_POST, "/v1/chat/completions", false, NULL, api_openai_chat},
        {EVHTTP_REQ_GET, "/v1/models", false, NULL, api_openai_models},
};

static void
on_complete(struct evhttp_request *req, void *arg)
{
	http_count(arg, evhttp_request_get_response_code(req));
	http_conn_done(arg, req);
}

static void
route(struct evhttp_request *req, void *arg)
{
	struct orchd *d = arg;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);

	evhttp_request_set_on_complete_cb(req, on_complete, d);
	if (!http_conn_checked(d, req)) { /* never expected: http_conn.c and evhttp disagree */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		return http_error(req, ORCH_EINVAL, NULL,
		                  "the request was not read by orchd's checks");
	}
	if (http_dispatch(d, req, open_routes, sizeof(open_routes) / sizeof(open_routes[0])))
		return;
	if (d->keys.n > 0 &&
	    keys_check(&d->keys, evhttp_find_header(evhttp_request_get_input_headers(req),
	                                            "Authorization")) == NULL)
		return http_error(req, ORCH_EUNAUTHORIZED, NULL,
		                  "a valid 'Authorization: Bearer KEY' is needed");
	if (d->stopping) {
		http_retry_after(req, 5);
		return http_error(req, ORCH_EOVERLOADED, NULL, "orchd is shutting down");
	}
	if (http_dispatch(d, req, api_routes, sizeof(api_routes) / sizeof(api_routes[0])))
		return;
	http_error(req, ORCH_EROUTE_NOT_FOUND, NULL, "no route for %s %s",
	           cmd == EVHTTP_REQ_GET    ? "GET"
	           : cmd == EVHTTP_REQ_POST ? "POST"
	                                    : "this method on",
	           evhttp_request_get_uri(req));
}

/* Bind "HOST:PORT" on @http; the bound socket into *@ret. */
static orch_err
bind_addr(struct evhttp *http, const char *addr, struct evhttp_bound_socket **ret,
          struct orch_errinfo *reterr)
{
	char host[128];
	const char *colon = strrchr(addr, ':');

	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
		return orch_errf(reterr, ORCH_EINVAL, "listen address '%s': want HOST:PORT", addr);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if ((*ret = evhttp_bind_socket_with_handle(http, host, (ev_uint16_t)atoi(colon + 1))) ==
	    NULL)
		return orch_errf(reterr, ORCH_EIO,
		                 "cannot listen on %s (in use, or not an address here)", addr);
	return ORCH_OK;
}

orch_err
http_start(struct orchd *d, struct orch_errinfo *reterr)
{
	struct evhttp_bound_socket *bound = NULL;
	orch_err rv;

	if ((d->http = evhttp_new(d->base)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	if ((rv = http_conn_start(d, reterr)) != ORCH_OK)
		return rv;
	/* http_conn.c reads each head first, within these limits; evhttp's are a backstop */
	evhttp_set_max_body_size(d->http, d->cfg.max_body_bytes);
	evhttp_set_max_headers_size(d->http, d->cfg.max_header_bytes + 1024u);
	evhttp_set_timeout(d->http, (int)d->cfg.request_timeout_s);
	evhttp_set_allowed_methods(d->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
	evhttp_set_default_content_type(d->http, "application/json");
	evhttp_set_gencb(d->http, route, d);
	if ((rv = bind_addr(d->http, d->cfg.listen, &bound, reterr)) != ORCH_OK ||
	    (rv = http_conn_listen(d, bound, reterr)) != ORCH_OK)
		return rv;
	orch_log(ORCH_LOG_INFO, "listening", "addr=%s", d->cfg.listen);
	return ORCH_OK;
}

void
http_stop(struct orchd *d)
{
	if (d->http) {
		http_conn_drop(d);
		evhttp_free(d->http);
	}
	d->http = NULL;
	http_conn_stop(d);
}
