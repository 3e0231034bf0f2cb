/*
 * http.c - the public listener (evhttp): limits, CORS, API keys, the route
 * tables (404, 405 with Allow, HEAD as GET, OPTIONS), JSON answers and
 * errors. The SSE writer is sse.c's; the access log http_conn.c's; the chat
 * page's files http_static.c's.
 */
#include "http.h"

#include <errno.h>
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
#include "http_cors.h"
#include "http_static.h"
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

/* The answer when not even an error body can be made. */
static const char oom_body[] = "{\"error\":{\"code\":\"INTERNAL\",\"message\":\"out of memory\","
                               "\"param\":null,\"type\":\"server_error\",\"retriable\":false}}\n";

/* The reason phrases of the statuses orchd sends that libevent's table lacks (its
 * default says "Client Error"); NULL: libevent's own. */
static const char *
reason_of(int status)
{
	switch (status) {
	case 421:
		return "Misdirected Request";
	case 422:
		return "Unprocessable Content";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 499:
		return "Client Closed Request";
	case 504:
		return "Gateway Timeout";
	default:
		return NULL;
	}
}

/* @na bytes at @a and @nb at @b as the body of @status (http_send's rules). */
static void
send2(struct evhttp_request *req, int status, const char *type, const char *a, size_t na,
      const char *b, size_t nb)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *out = evhttp_request_get_output_buffer(req);
	char len[24];

	if (status != 204 && type != NULL)
		evhttp_add_header(h, "Content-Type", type);
	if (status == 204) {
		na = nb = 0; /* evhttp would send a body after it */
	} else if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		snprintf(len, sizeof(len), "%zu", na + nb); /* what GET would send, not sent */
		evhttp_add_header(h, "Content-Length", len);
		na = nb = 0;
	}
	if ((na && evbuffer_add(out, a, na) != 0) || (nb && evbuffer_add(out, b, nb) != 0)) {
		evbuffer_drain(out, evbuffer_get_length(out));
		evhttp_remove_header(h, "Content-Type");
		evhttp_add_header(h, "Content-Type", "application/json");
		status = 500;
		evbuffer_add(out, oom_body, sizeof(oom_body) - 1);
	}
	/* NULL: libevent's reason phrase for the status, where its table has one */
	evhttp_send_reply(req, status, reason_of(status), NULL);
}

void
http_send(struct evhttp_request *req, int status, const char *type, const char *body, size_t n)
{
	send2(req, status, type, body, n, NULL, 0);
}

void
http_json(struct evhttp_request *req, int status, cJSON *body)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;

	cJSON_Delete(body);
	if (text == NULL)
		return http_send(req, 500, "application/json", oom_body, sizeof(oom_body) - 1);
	send2(req, status, "application/json", text, strlen(text), "\n", 1);
	free(text);
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

/* @req's path (the URI before any '?') into @out, cut to @n - 1 bytes. */
static void
req_path(struct evhttp_request *req, char *out, size_t n)
{
	const char *uri = evhttp_request_get_uri(req);
	size_t k = strcspn(uri, "?");

	snprintf(out, n, "%.*s", (int)(k < n - 1 ? k : n - 1), uri);
}

/* Whether a row of @method takes a request of @cmd: HEAD runs the GET row. */
static bool
method_match(int method, int cmd)
{
	return method == cmd || (cmd == EVHTTP_REQ_HEAD && method == EVHTTP_REQ_GET);
}

bool
http_dispatch(struct orchd *d, struct evhttp_request *req, const struct http_route *table, size_t n)
{
	int cmd = (int)evhttp_request_get_command(req);
	char path[512], arg[256];

	req_path(req, path, sizeof(path));
	for (size_t i = 0; i < n; i++) {
		if (!method_match(table[i].method, cmd) ||
		    !route_match(&table[i], path, arg, sizeof(arg)))
			continue;
		char *dec = arg[0] ? evhttp_uridecode(arg, 0, NULL) : NULL;
		table[i].handler(d, req, dec ? dec : arg);
		free(dec);
		return true;
	}
	return false;
}

/* The EVHTTP_REQ_* methods @table's rows take at @path (with HEAD and OPTIONS); 0: none. */
static unsigned
methods_at(const struct http_route *table, size_t n, const char *path)
{
	char arg[256];
	unsigned m = 0;

	for (size_t i = 0; i < n; i++)
		if (route_match(&table[i], path, arg, sizeof(arg)))
			m |= (unsigned)table[i].method;
	if (m & EVHTTP_REQ_GET)
		m |= EVHTTP_REQ_HEAD;
	return m ? m | EVHTTP_REQ_OPTIONS : 0;
}

static const char *
method_name(int cmd)
{
	static const struct {
		int cmd;
		const char *name;
	} t[] = {{EVHTTP_REQ_GET, "GET"},         {EVHTTP_REQ_HEAD, "HEAD"},
	         {EVHTTP_REQ_POST, "POST"},       {EVHTTP_REQ_PUT, "PUT"},
	         {EVHTTP_REQ_PATCH, "PATCH"},     {EVHTTP_REQ_DELETE, "DELETE"},
	         {EVHTTP_REQ_OPTIONS, "OPTIONS"}, {EVHTTP_REQ_TRACE, "TRACE"},
	         {EVHTTP_REQ_CONNECT, "CONNECT"}};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].cmd == cmd)
			return t[i].name;
	return "?";
}

/* An Allow header's value for @methods into @out (@n bytes). */
static void
allow_value(unsigned methods, char *out, size_t n)
{
	static const int order[] = {EVHTTP_REQ_GET,    EVHTTP_REQ_HEAD,  EVHTTP_REQ_POST,
	                            EVHTTP_REQ_PUT,    EVHTTP_REQ_PATCH, EVHTTP_REQ_DELETE,
	                            EVHTTP_REQ_OPTIONS};
	size_t k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!(methods & (unsigned)order[i]) || k >= n)
			continue;
		int w = snprintf(out + k, n - k, "%s%s", k ? ", " : "", method_name(order[i]));
		k += w > 0 ? (size_t)w : 0;
	}
}

/* ---- the public API ---- */

/* GET /health: 200 while the loop runs; the models' and workers' health (health.h). */
static void
on_health(struct orchd *d, struct evhttp_request *req, const char *arg)
{
	(void)arg;
	http_json(req, 200, health_json(d));
}

/* GET /ready: 200 when every wanted model (models.h) is READY, else 503 with each one's state. */
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

	(void)arg;
	metrics_render(d, &b);
	if (sbuf_err(&b) != ORCH_OK)
		http_error(req, ORCH_ENOMEM, NULL, "out of memory");
	else
		http_send(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.n);
	sbuf_fini(&b);
}

/* Without an API key. */
static const struct http_route open_routes[] = {
        {EVHTTP_REQ_GET, "/health", false, NULL, on_health},
        {EVHTTP_REQ_GET, "/ready", false, NULL, on_ready},
        {EVHTTP_REQ_GET, "/metrics", false, NULL, on_metrics},
};

/* The chat page (http_static.h), without an API key, when chat_page is on. */
static const struct http_route page_routes[] = {
        {EVHTTP_REQ_GET, "/", false, NULL, http_static_get},
        {EVHTTP_REQ_GET, "/chat.js", false, NULL, http_static_get},
        {EVHTTP_REQ_GET, "/chat.css", false, NULL, http_static_get},
        {EVHTTP_REQ_GET, "/favicon.svg", false, NULL, http_static_get},
};

/* With an API key (when keys are configured), and not while stopping. */
static const struct http_route api_routes[] = {
        {EVHTTP_REQ_POST, "/execute", false, NULL, api_native_execute},
        {EVHTTP_REQ_POST, "/cancel", false, NULL, api_native_cancel},
        {EVHTTP_REQ_GET, "/jobs/", true, "/events", api_native_events},
        {EVHTTP_REQ_POST, "/v1/completions", false, NULL, api_openai_completions},
        {EVHTTP_REQ_POST, "/v1/chat/completions", false, NULL, api_openai_chat},
        {EVHTTP_REQ_GET, "/v1/models", false, NULL, api_openai_models},
        {EVHTTP_REQ_GET, "/v1/models/", true, NULL, api_openai_model},
        {EVHTTP_REQ_POST, "/tokenize", false, NULL, api_tokenize},
        {EVHTTP_REQ_POST, "/detokenize", false, NULL, api_detokenize},
};

static void
on_complete(struct evhttp_request *req, void *arg)
{
	http_count(arg, evhttp_request_get_response_code(req));
	http_conn_done(arg, req);
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
cors_fields(struct orchd *d, struct evhttp_request *req)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	const char *allow = http_cors_allow(
	        &d->cors, evhttp_find_header(evhttp_request_get_input_headers(req), "Origin"));

	if (!d->cors.on)
		return false;
	evhttp_add_header(out, "Vary", "Origin");
	if (allow == NULL)
		return false;
	evhttp_add_header(out, "Access-Control-Allow-Origin", allow);
	evhttp_add_header(out, "Access-Control-Expose-Headers", "X-Job-Id, Retry-After");
	return true;
}

/*
 * OPTIONS on a route: 204 with Allow, and for an origin CORS lets in what a
 * preflight asks; 404 where there is no route.
 */
static void
on_options(struct orchd *d, struct evhttp_request *req, const char *path, bool cors)
{
	unsigned m = methods_at(open_routes, N_OPEN, path) | methods_at(api_routes, N_API, path) |
	             (d->cfg.chat_page ? methods_at(page_routes, N_PAGE, path) : 0);
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	char allow[96], age[16];

	if (m == 0)
		return http_error(req, ORCH_EROUTE_NOT_FOUND, NULL, "no route for OPTIONS %s",
		                  path);
	allow_value(m, allow, sizeof(allow));
	evhttp_add_header(out, "Allow", allow);
	if (cors) {
		snprintf(age, sizeof(age), "%d", HTTP_CORS_MAX_AGE_S);
		evhttp_add_header(out, "Access-Control-Allow-Methods", allow);
		evhttp_add_header(out, "Access-Control-Allow-Headers",
		                  "Authorization, Content-Type, Last-Event-ID, X-Deadline");
		evhttp_add_header(out, "Access-Control-Max-Age", age);
	}
	http_send(req, 204, NULL, NULL, 0);
}

/* No row of @table takes @req's method at @path: 405 with Allow where another does; false. */
static bool
refuse_method(struct evhttp_request *req, const struct http_route *table, size_t n,
              const char *path)
{
	unsigned m = methods_at(table, n, path);
	const char *name = method_name((int)evhttp_request_get_command(req));
	char allow[96];

	if (m == 0)
		return false;
	allow_value(m, allow, sizeof(allow));
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", allow);
	http_error(req, ORCH_EMETHOD, NULL, "%s %s is not served; %s takes %s", name, path, path,
	           allow);
	return true;
}

static void
route(struct evhttp_request *req, void *arg)
{
	struct orchd *d = arg;
	int cmd = (int)evhttp_request_get_command(req);
	char path[512];

	evhttp_request_set_on_complete_cb(req, on_complete, d);
	if (!http_conn_checked(d, req)) { /* never expected: http_conn.c and evhttp disagree */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		return http_error(req, ORCH_EINVAL, NULL,
		                  "the request was not read by orchd's checks");
	}
	req_path(req, path, sizeof(path));
	bool cors = cors_fields(d, req);
	if (cmd == EVHTTP_REQ_OPTIONS) /* no key: a browser's preflight never carries one */
		return on_options(d, req, path, cors);
	if (http_dispatch(d, req, open_routes, N_OPEN) ||
	    refuse_method(req, open_routes, N_OPEN, path))
		return;
	if (d->cfg.chat_page && (http_dispatch(d, req, page_routes, N_PAGE) ||
	                         refuse_method(req, page_routes, N_PAGE, path)))
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
	if (http_dispatch(d, req, api_routes, N_API) || refuse_method(req, api_routes, N_API, path))
		return;
	http_error(req, ORCH_EROUTE_NOT_FOUND, NULL, "no route for %s %s", method_name(cmd), path);
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
