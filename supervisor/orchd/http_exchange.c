/*
 * http_exchange.c - reply.h over evhttp (http_exchange.h). An exchange is
 * one request's api_req and what answering it needs: the evhttp request,
 * its SSE stream, the held request's close watch. It is freed where reply.h
 * says the request is: with its answer, its stream's end, or its release.
 */
#include "http_exchange.h"

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "base/alloc.h"
#include "http_conn.h"
#include "orchd.h"
#include "reply.h"
#include "sse.h"

#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(API_GET, EVHTTP_REQ_GET) && SAME(API_POST, EVHTTP_REQ_POST) &&
                       SAME(API_HEAD, EVHTTP_REQ_HEAD) && SAME(API_PUT, EVHTTP_REQ_PUT) &&
                       SAME(API_DELETE, EVHTTP_REQ_DELETE) &&
                       SAME(API_OPTIONS, EVHTTP_REQ_OPTIONS) && SAME(API_TRACE, EVHTTP_REQ_TRACE) &&
                       SAME(API_CONNECT, EVHTTP_REQ_CONNECT) && SAME(API_PATCH, EVHTTP_REQ_PATCH),
               "reply.h's methods are libevent's bits");
#undef SAME

struct exchange {
	struct api_req r; /* first: the api_req is the exchange */
	struct orchd *d;
	struct evhttp_request *req;
	struct evhttp_connection *held; /* a held request's connection (its close watch) */
	struct sse_stream *sse;         /* a stream's, until it ends or its client goes */
	bool stream;                    /* a stream: sse.c ends the evhttp request */
	bool evhttps;                   /* closed with the server (evhttp_free): evhttp frees it */
	api_gone_fn gone;
	void *arg;
	char path[512];
};

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

/* No longer held: the close watch goes. */
static void
unhold(struct exchange *x)
{
	if (x->held != NULL)
		http_conn_set_closecb(x->d, x->held, NULL, NULL);
	x->held = NULL;
	x->gone = NULL;
}

static void
x_header(struct api_req *r, const char *name, const char *value)
{
	struct exchange *x = (struct exchange *)r;

	evhttp_add_header(evhttp_request_get_output_headers(x->req), name, value);
}

/* @na bytes at @a and @nb at @b as the body of @status: a HEAD gets the head and
 * Content-Length without the body, a 204 no body and no type, a 304 no body. */
static void
x_send(struct api_req *r, int status, const char *type, const char *a, size_t na, const char *b,
       size_t nb)
{
	struct exchange *x = (struct exchange *)r;
	struct evkeyvalq *h = evhttp_request_get_output_headers(x->req);
	struct evbuffer *out = evhttp_request_get_output_buffer(x->req);
	char len[24];

	unhold(x);
	if (status != 204 && type != NULL)
		evhttp_add_header(h, "Content-Type", type);
	if (status == 204 || status == 304) {
		na = nb = 0; /* evhttp would send a body after a 204; a 304 has none */
	} else if (evhttp_request_get_command(x->req) == EVHTTP_REQ_HEAD) {
		snprintf(len, sizeof(len), "%zu", na + nb); /* what GET would send, not sent */
		evhttp_add_header(h, "Content-Length", len);
		na = nb = 0;
	}
	if ((na && evbuffer_add(out, a, na) != 0) || (nb && evbuffer_add(out, b, nb) != 0)) {
		evbuffer_drain(out, evbuffer_get_length(out));
		evhttp_remove_header(h, "Content-Type");
		evhttp_add_header(h, "Content-Type", "application/json");
		status = 500;
		evbuffer_add(out, reply_oom_body, strlen(reply_oom_body));
	}
	/* NULL: libevent's reason phrase for the status, where its table has one */
	evhttp_send_reply(x->req, status, reason_of(status), NULL);
	orch_free(x);
}

static void
x_stream_head(struct api_req *r)
{
	struct exchange *x = (struct exchange *)r;

	unhold(x);
	sse_head(x->req);
	orch_free(x);
}

static void
on_sse_gone(struct sse_stream *s, void *arg, const char *why)
{
	struct exchange *x = arg;

	(void)s;
	x->sse = NULL; /* freed right after this: sse.c ends the request */
	x->gone(&x->r, x->arg, why);
}

static orch_err
x_stream_start(struct api_req *r, api_gone_fn gone, void *arg)
{
	struct exchange *x = (struct exchange *)r;

	unhold(x); /* sse.c watches the close from here */
	if (sse_start(x->d, x->req, on_sse_gone, x, &x->sse) != ORCH_OK)
		return ORCH_ENOMEM;
	x->stream = true;
	x->gone = gone;
	x->arg = arg;
	return ORCH_OK;
}

static void
x_stream_cut(struct api_req *r, const char *text)
{
	struct exchange *x = (struct exchange *)r;

	if (x->sse != NULL)
		sse_set_cut(x->sse, text);
}

static void
x_stream_write(struct api_req *r, const char *data, size_t n)
{
	struct exchange *x = (struct exchange *)r;

	if (x->sse != NULL)
		sse_write(x->sse, data, n);
}

static void
x_stream_end(struct api_req *r)
{
	struct exchange *x = (struct exchange *)r;

	if (x->sse != NULL)
		sse_end(x->sse);
	orch_free(x);
}

static void
on_close(struct evhttp_connection *c, void *arg)
{
	struct exchange *x = arg;
	api_gone_fn gone = x->gone;

	(void)c;
	/* a client that left detaches its unanswered request, which is then ours to end; when
	 * the server is freed (orchd stops) the request is still on its connection, and evhttp
	 * frees it right after this callback */
	x->evhttps = evhttp_request_get_connection(x->req) != NULL;
	x->held = NULL; /* evhttp's callback is spent */
	x->gone = NULL;
	gone(&x->r, x->arg, "closed");
}

static void
x_hold(struct api_req *r, api_gone_fn gone, void *arg, bool read)
{
	struct exchange *x = (struct exchange *)r;
	struct evhttp_connection *c = evhttp_request_get_connection(x->req);

	if (gone == NULL || c == NULL)
		return unhold(x);
	x->held = c;
	x->gone = gone;
	x->arg = arg;
	http_conn_set_closecb(x->d, c, on_close, x);
	if (read)
		http_conn_watch_close(c, x->d->cfg.request_timeout_s);
}

static void
x_release(struct api_req *r)
{
	struct exchange *x = (struct exchange *)r;

	unhold(x);
	if (!x->stream && !x->evhttps)
		http_conn_release(x->req);
	orch_free(x);
}

static void
x_note(struct api_req *r, const char *path, const char *job)
{
	struct exchange *x = (struct exchange *)r;

	http_conn_note(x->d, x->req, path, job);
}

static const struct reply_ops ops = {
        .header = x_header,
        .send = x_send,
        .stream_head = x_stream_head,
        .stream_start = x_stream_start,
        .stream_cut = x_stream_cut,
        .stream_write = x_stream_write,
        .stream_end = x_stream_end,
        .hold = x_hold,
        .release = x_release,
        .note = x_note,
};

struct api_req *
http_exchange_new(struct orchd *d, struct evhttp_request *req)
{
	struct exchange *x = orch_calloc(1, sizeof(*x));
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	const char *uri = evhttp_request_get_uri(req);
	size_t k = strcspn(uri, "?"), n = evbuffer_get_length(body);

	if (x == NULL) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
		                  "application/json");
		evbuffer_add(evhttp_request_get_output_buffer(req), reply_oom_body,
		             strlen(reply_oom_body));
		evhttp_send_reply(req, 500, NULL, NULL);
		return NULL;
	}
	x->d = d;
	x->req = req;
	snprintf(x->path, sizeof(x->path), "%.*s",
	         (int)(k < sizeof(x->path) - 1 ? k : sizeof(x->path) - 1), uri);
	x->r = (struct api_req){
	        .ops = &ops,
	        .method = (int)evhttp_request_get_command(req),
	        .path = x->path,
	        .query = uri[k] == '?' ? uri + k + 1 : "",
	        .body = n ? (const char *)evbuffer_pullup(body, (ev_ssize_t)n) : "",
	        .n_body = n,
	        .authorization = evhttp_find_header(in, "Authorization"),
	        .last_event_id = evhttp_find_header(in, "Last-Event-ID"),
	        .x_deadline = evhttp_find_header(in, "X-Deadline"),
	        .if_none_match = evhttp_find_header(in, "If-None-Match"),
	};
	if (x->r.body == NULL) { /* evbuffer_pullup out of memory: as http_body did */
		x->r.body = "";
		x->r.n_body = 0;
	}
	return &x->r;
}
