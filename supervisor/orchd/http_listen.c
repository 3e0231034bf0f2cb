/*
 * http_listen.c - orchd's public listener (evhttp): its limits, CORS, the API
 * key check, shutdown's 503, and its route tables — /health, /ready, /metrics,
 * the chat page, the native and OpenAI APIs, tokenize (404, 405 with Allow,
 * HEAD as GET, OPTIONS). The edge's top: each request becomes a plain
 * api_req (http_exchange.h) that the checks, the routes and the APIs answer.
 */
#include "http_listen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api.h"
#include "base/log.h"
#include "base/sbuf.h"
#include "health.h"
#include "http_conn.h"
#include "http_cors.h"
#include "http_exchange.h"
#include "http_static.h"
#include "keys.h"
#include "metrics.h"
#include "models.h"
#include "orchd.h"
#include "reply.h"
#include "route.h"

/* ---- the public API ---- */

/* GET /health: 200 while the loop runs; the models' and workers' health (health.h). */
static void
on_health(struct orchd *d, struct api_req *req, const char *arg)
{
	(void)arg;
	reply_json(req, 200, health_json(d));
}

/* GET /ready: 200 when every wanted model (models.h) is READY, else 503 with each one's state. */
static void
on_ready(struct orchd *d, struct api_req *req, const char *arg)
{
	cJSON *o = cJSON_CreateObject(), *ms;
	bool ok = models_all_ready(d) && !d->stopping;

	(void)arg;
	cJSON_AddStringToObject(o, "status", ok ? "ok" : "not ready");
	ms = cJSON_AddObjectToObject(o, "models");
	for (struct model_entry *m = d->models; m; m = m->next)
		cJSON_AddStringToObject(ms, m->cfg.name, models_state_name(m->state));
	if (!ok)
		reply_retry_after(req, 5);
	reply_json(req, ok ? 200 : 503, o);
}

static void
on_metrics(struct orchd *d, struct api_req *req, const char *arg)
{
	struct sbuf b = {0};

	(void)arg;
	metrics_render(d, &b);
	if (sbuf_err(&b) != ORCH_OK)
		reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	else
		reply_send(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.n);
	sbuf_fini(&b);
}

/* Without an API key. */
static const struct api_route open_routes[] = {
        {API_GET, "/health", false, NULL, on_health},
        {API_GET, "/ready", false, NULL, on_ready},
        {API_GET, "/metrics", false, NULL, on_metrics},
};

/* The chat page (http_static.h), without an API key, when chat_page is on. */
static const struct api_route page_routes[] = {
        {API_GET, "/", false, NULL, http_static_get},
        {API_GET, "/chat.js", false, NULL, http_static_get},
        {API_GET, "/chat.css", false, NULL, http_static_get},
        {API_GET, "/favicon.svg", false, NULL, http_static_get},
};

/* With an API key (when keys are configured), and not while stopping. */
static const struct api_route api_routes[] = {
        {API_POST, "/execute", false, NULL, api_native_execute},
        {API_POST, "/cancel", false, NULL, api_native_cancel},
        {API_GET, "/jobs/", true, "/events", api_native_events},
        {API_POST, "/v1/completions", false, NULL, api_openai_completions},
        {API_POST, "/v1/chat/completions", false, NULL, api_openai_chat},
        {API_GET, "/v1/models", false, NULL, api_openai_models},
        {API_GET, "/v1/models/", true, NULL, api_openai_model},
        {API_POST, "/tokenize", false, NULL, api_tokenize},
        {API_POST, "/detokenize", false, NULL, api_detokenize},
};

/* A response is out: counted in orch_http_responses_total by its class. */
static void
on_complete(struct evhttp_request *req, void *arg)
{
	struct orchd *d = arg;
	int cls = evhttp_request_get_response_code(req) / 100;

	if (cls >= 1 && cls <= 5)
		d->metrics.http_responses[cls]++;
	http_conn_done(d, req);
}

#define N_OPEN (sizeof(open_routes) / sizeof(open_routes[0]))
#define N_API  (sizeof(api_routes) / sizeof(api_routes[0]))
#define N_PAGE (sizeof(page_routes) / sizeof(page_routes[0]))

/*
 * CORS (http_cors.h): with cors_origins set, every answer varies with
 * Origin, and one to an origin it lets in says so (and shows the fields a
 * client reads). Returns whether @req's origin is let in.
 */
static bool
cors_fields(struct orchd *d, struct api_req *req, const char *origin)
{
	const char *allow = http_cors_allow(&d->cors, origin);

	if (!d->cors.on)
		return false;
	reply_header(req, "Vary", "Origin");
	if (allow == NULL)
		return false;
	reply_header(req, "Access-Control-Allow-Origin", allow);
	reply_header(req, "Access-Control-Expose-Headers", "X-Job-Id, Retry-After");
	return true;
}

/*
 * OPTIONS on a route: 204 with Allow, and for an origin CORS lets in what a
 * preflight asks; 404 where there is no route.
 */
static void
on_options(struct orchd *d, struct api_req *req, const char *path, bool cors)
{
	unsigned m = api_route_methods(open_routes, N_OPEN, path) |
	             api_route_methods(api_routes, N_API, path) |
	             (d->cfg.chat_page ? api_route_methods(page_routes, N_PAGE, path) : 0);
	char allow[96], age[16];

	if (m == 0)
		return reply_error(req, ORCH_EROUTE_NOT_FOUND, NULL, "no route for OPTIONS %s",
		                   path);
	api_allow_value(m, allow, sizeof(allow));
	reply_header(req, "Allow", allow);
	if (cors) {
		snprintf(age, sizeof(age), "%d", HTTP_CORS_MAX_AGE_S);
		reply_header(req, "Access-Control-Allow-Methods", allow);
		reply_header(req, "Access-Control-Allow-Headers",
		             "Authorization, Content-Type, Last-Event-ID, X-Deadline");
		reply_header(req, "Access-Control-Max-Age", age);
	}
	reply_send(req, 204, NULL, NULL, 0);
}

/* No row of @table takes @req's method at @path: 405 with Allow where another does; false. */
static bool
refuse_method(struct api_req *req, const struct api_route *table, size_t n, const char *path)
{
	unsigned m = api_route_methods(table, n, path);
	const char *name = api_method_name(req->method);
	char allow[96];

	if (m == 0)
		return false;
	api_allow_value(m, allow, sizeof(allow));
	reply_header(req, "Allow", allow);
	reply_error(req, ORCH_EMETHOD, NULL, "%s %s is not served; %s takes %s", name, path, path,
	            allow);
	return true;
}

static void
route(struct evhttp_request *ev, void *arg)
{
	struct orchd *d = arg;
	const char *origin = evhttp_find_header(evhttp_request_get_input_headers(ev), "Origin");
	struct api_req *req;

	evhttp_request_set_on_complete_cb(ev, on_complete, d);
	bool checked = http_conn_checked(d, ev); /* first: the access line is about @ev */
	if (!checked) /* never expected: http_conn.c and evhttp disagree */
		evhttp_add_header(evhttp_request_get_output_headers(ev), "Connection", "close");
	if ((req = http_exchange_new(d, ev)) == NULL)
		return;
	if (!checked)
		return reply_error(req, ORCH_EINVAL, NULL,
		                   "the request was not read by orchd's checks");
	bool cors = cors_fields(d, req, origin);
	if (req->method == API_OPTIONS) /* no key: a browser's preflight never carries one */
		return on_options(d, req, req->path, cors);
	if (api_route_run(d, req, open_routes, N_OPEN) ||
	    refuse_method(req, open_routes, N_OPEN, req->path))
		return;
	if (d->cfg.chat_page && (api_route_run(d, req, page_routes, N_PAGE) ||
	                         refuse_method(req, page_routes, N_PAGE, req->path)))
		return;
	if (d->keys.n > 0 && keys_check(&d->keys, req->authorization) == NULL)
		return reply_error(req, ORCH_EUNAUTHORIZED, NULL,
		                   "a valid 'Authorization: Bearer KEY' is needed");
	if (d->stopping) {
		reply_retry_after(req, 5);
		return reply_error(req, ORCH_EOVERLOADED, NULL, "orchd is shutting down");
	}
	if (api_route_run(d, req, api_routes, N_API) ||
	    refuse_method(req, api_routes, N_API, req->path))
		return;
	reply_error(req, ORCH_EROUTE_NOT_FOUND, NULL, "no route for %s %s",
	            api_method_name(req->method), req->path);
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
	errno = 0;
	if ((*ret = evhttp_bind_socket_with_handle(http, host, (ev_uint16_t)atoi(colon + 1))) ==
	    NULL) {
		int err = errno;
		if (err == EADDRINUSE)
			return orch_errf(reterr, ORCH_EIO,
			                 "cannot listen on %s: the port is in use (another orchd? "
			                 "pick another with --port N or listen in [server])",
			                 addr);
		return orch_errf(reterr, ORCH_EIO, "cannot listen on %s: %s", addr,
		                 err ? strerror(err) : "not an address of this machine");
	}
	return ORCH_OK;
}

orch_err
http_start(struct orchd *d, struct orch_errinfo *reterr)
{
	struct evhttp_bound_socket *bound = NULL;
	orch_err rv;

	if (http_cors_init(&d->cors, d->cfg.cors_origins, reterr) != ORCH_OK)
		return ORCH_EINVAL;
	if ((d->http = evhttp_new(d->base)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	if ((rv = http_conn_start(d, reterr)) != ORCH_OK)
		return rv;
	/* http_conn.c reads each head first, within these limits; evhttp's are a backstop */
	evhttp_set_max_body_size(d->http, d->cfg.max_body_bytes);
	evhttp_set_max_headers_size(d->http, d->cfg.max_header_bytes + 1024u);
	evhttp_set_timeout(d->http, (int)d->cfg.request_timeout_s);
	/* every method evhttp knows reaches route(): 404, 405 with Allow, OPTIONS, HEAD; the
	 * others are refused (501) by http_head.c before evhttp sees them */
	evhttp_set_allowed_methods(d->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
	                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
	                                            EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_default_content_type(d->http, "application/json");
	evhttp_set_gencb(d->http, route, d);
	if ((rv = bind_addr(d->http, d->cfg.listen, &bound, reterr)) != ORCH_OK ||
	    (rv = http_conn_listen(d, bound, reterr)) != ORCH_OK)
		return rv;
	orch_log(ORCH_LOG_INFO, "listening", "addr=%s cors=%s", d->cfg.listen,
	         !d->cors.on   ? "off"
	         : d->cors.any ? "any"
	                       : "listed");
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
