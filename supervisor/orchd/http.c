/*
 * http.c - answers over evhttp: JSON bodies and errors, reason phrases, the
 * response counters, bearer tokens, and route tables as data (matching,
 * dispatch, the methods a path takes). The public listener that uses them is
 * http_listen.c; the SSE writer sse.c; the access log http_conn.c.
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

#include "base/log.h"
#include "base/sbuf.h"
#include "http_conn.h"
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
	char msg[2048];
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

void
http_req_path(struct evhttp_request *req, char *out, size_t n)
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

	http_req_path(req, path, sizeof(path));
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

unsigned
http_methods_at(const struct http_route *table, size_t n, const char *path)
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

const char *
http_method_name(int cmd)
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

void
http_allow_value(unsigned methods, char *out, size_t n)
{
	static const int order[] = {EVHTTP_REQ_GET,    EVHTTP_REQ_HEAD,  EVHTTP_REQ_POST,
	                            EVHTTP_REQ_PUT,    EVHTTP_REQ_PATCH, EVHTTP_REQ_DELETE,
	                            EVHTTP_REQ_OPTIONS};
	size_t k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!(methods & (unsigned)order[i]) || k >= n)
			continue;
		int w = snprintf(out + k, n - k, "%s%s", k ? ", " : "", http_method_name(order[i]));
		k += w > 0 ? (size_t)w : 0;
	}
}
