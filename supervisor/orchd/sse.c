/*
 * sse.c - Server-Sent Events responses (sse.h). State: the pending bytes
 * (at most SSE_MAX_PENDING_BYTES), whether a chunk is in flight, whether
 * the owner ended it. The stream is freed in finish() only: after the end
 * of the reply, or when the connection closes.
 */
#include "sse.h"

#include <stdbool.h>
#include <stdio.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/sbuf.h"
#include "http_conn.h"
#include "orchd.h"

struct sse_stream {
	struct orchd *d;
	struct evhttp_request *req;
	sse_gone_fn gone;
	void *arg;
	struct sbuf pending; /* bytes behind the chunk in flight */
	bool in_flight;      /* a chunk is on its way; its callback sends the next */
	bool ending;         /* sse_end was called: end once the pending bytes are out */
	bool wrote;          /* something was written since the last ping tick */
	const char *cut;     /* what a slow client is cut with; NULL: the native event */
	struct event *ev_ping;
};

static void send_pending(struct sse_stream *s);

/* Free @s: the reply is over or the connection gone (then ours to free when detached). */
static void
finish(struct sse_stream *s, bool end_reply)
{
	struct evhttp_connection *c = evhttp_request_get_connection(s->req);

	if (c)
		http_conn_set_closecb(s->d, c, NULL, NULL);
	if (end_reply || c == NULL)
		evhttp_send_reply_end(s->req);
	if (s->ev_ping)
		event_free(s->ev_ping);
	sbuf_fini(&s->pending);
	orch_free(s);
}

static void
on_close(struct evhttp_connection *conn, void *arg)
{
	struct sse_stream *s = arg;

	(void)conn;
	/* A client gone mid-reply leaves libevent's request detached from its
	 * connection and ours to free, which ending the reply does (finish). */
	if (s->gone && !s->ending)
		s->gone(s, s->arg, "closed");
	finish(s, false);
}

static void
on_chunk_sent(struct evhttp_connection *conn, void *arg)
{
	struct sse_stream *s = arg;

	(void)conn;
	s->in_flight = false;
	if (s->pending.n > 0)
		return send_pending(s);
	if (s->ending)
		finish(s, true);
}

static void
send_pending(struct sse_stream *s)
{
	struct evbuffer *b;

	if (s->in_flight || s->pending.n == 0 || (b = evbuffer_new()) == NULL)
		return;
	evbuffer_add(b, s->pending.p, s->pending.n);
	sbuf_clear(&s->pending);
	s->in_flight = true;
	evhttp_send_reply_chunk_with_cb(s->req, b, on_chunk_sent, s);
	evbuffer_free(b);
}

static void
on_ping(evutil_socket_t fd, short what, void *arg)
{
	struct sse_stream *s = arg;

	(void)fd;
	(void)what;
	if (!s->wrote && !s->in_flight && s->pending.n == 0)
		sse_write(s, ": ping\n\n", 8);
	s->wrote = false;
}

/* A stream's head fields. */
static void
stream_fields(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-cache");
	evhttp_add_header(h, "X-Accel-Buffering", "no");
}

void
sse_head(struct evhttp_request *req)
{
	stream_fields(req);
	evhttp_send_reply(req, 200, "OK", NULL); /* a HEAD: evhttp sends no body */
}

orch_err
sse_start(struct orchd *d, struct evhttp_request *req, sse_gone_fn gone, void *arg,
          struct sse_stream **ret)
{
	struct sse_stream *s = orch_calloc(1, sizeof(*s));
	struct timeval tv = {(time_t)d->cfg.sse_keepalive_s, 0};

	if (s == NULL || (s->ev_ping = event_new(d->base, -1, EV_PERSIST, on_ping, s)) == NULL) {
		orch_free(s);
		return ORCH_ENOMEM;
	}
	s->d = d;
	s->req = req;
	s->gone = gone;
	s->arg = arg;
	stream_fields(req);
	evhttp_send_reply_start(req, 200, "OK");
	http_conn_set_closecb(d, evhttp_request_get_connection(req), on_close, s);
	event_add(s->ev_ping, &tv);
	*ret = s;
	return ORCH_OK;
}

/* The client does not read: drop what waits, tell it why, end, and tell the owner. */
static void
cut(struct sse_stream *s)
{
	static const char msg[] = "event: error\ndata: {\"code\":\"OVERLOADED\",\"message\":"
	                          "\"the client reads too slowly; the stream was cut\","
	                          "\"retriable\":true}\n\n";

	s->d->metrics.sse_slow_clients++;
	orch_log(ORCH_LOG_WARNING, "sse_slow_client", "pending_bytes=%zu max=%u", s->pending.n,
	         SSE_MAX_PENDING_BYTES);
	sbuf_clear(&s->pending);
	if (s->gone)
		s->gone(s, s->arg, "slow");
	s->gone = NULL;
	if (s->cut != NULL)
		sbuf_puts(&s->pending, s->cut);
	else
		sbuf_put(&s->pending, msg, sizeof(msg) - 1);
	s->ending = true;
	/* the chunk in flight may never drain: end now, behind it, with the error event */
	struct evbuffer *b = evbuffer_new();
	if (b) {
		evbuffer_add(b, s->pending.p, s->pending.n);
		evhttp_send_reply_chunk(s->req, b);
		evbuffer_free(b);
	}
	finish(s, true);
}

void
sse_set_cut(struct sse_stream *s, const char *text)
{
	s->cut = text;
}

void
sse_write(struct sse_stream *s, const char *data, size_t n)
{
	if (n == 0)
		return;
	s->wrote = true;
	if (s->pending.n + n > SSE_MAX_PENDING_BYTES)
		return cut(s);
	sbuf_put(&s->pending, data, n);
	send_pending(s);
}

void
sse_end(struct sse_stream *s)
{
	s->ending = true;
	s->gone = NULL;
	send_pending(s);
	if (!s->in_flight)
		finish(s, true);
}
