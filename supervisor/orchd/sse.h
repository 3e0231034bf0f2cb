#pragma once
/*
 * sse.h - one Server-Sent Events response (STYLE.md rule 11): 200 with
 * text/event-stream, Cache-Control: no-cache, chunked; one chunk in flight
 * (evhttp_send_reply_chunk_with_cb is the "proceed"), what arrives
 * meanwhile joins the next chunk; ": ping" comments while idle; a bounded
 * buffer: a client that falls SSE_MAX_PENDING_BYTES behind is cut with an
 * error event and counted in orch_sse_slow_clients_total. Freed in one
 * place. Thread: the loop.
 */
#include <stddef.h>

#include "base/err.h"

struct evhttp_request;
struct orchd;
struct sse_stream;

/* The most bytes waiting behind the chunk in flight before the client is cut. */
#define SSE_MAX_PENDING_BYTES (1u << 20)

/*
 * sse_gone_fn - the client went away (@why: "closed") or was cut (@why:
 * "slow"); the stream is freed right after this returns. Not called after sse_end.
 */
typedef void (*sse_gone_fn)(struct sse_stream *s, void *arg, const char *why);

/*
 * sse_start - start the SSE response to @req; @gone (with @arg) is told
 * when the client goes. ORCH_ENOMEM (nothing sent: answer it yourself).
 */
orch_err sse_start(struct orchd *d, struct evhttp_request *req, sse_gone_fn gone, void *arg,
                   struct sse_stream **ret);

/* sse_head - answer a HEAD of a stream's route: the head sse_start would send, no body. */
void sse_head(struct evhttp_request *req);

/*
 * sse_set_cut - @text (static, NUL-terminated) ends the stream instead of the
 * native error event when its client is cut for reading too slowly: the API's
 * own terminal form (an OpenAI error chunk and [DONE]).
 */
void sse_set_cut(struct sse_stream *s, const char *text);

/* sse_write - queue @n bytes of events; sent at once unless a chunk is in flight. */
void sse_write(struct sse_stream *s, const char *data, size_t n);

/* sse_end - send what is queued, end the response and free @s (no more gone call). */
void sse_end(struct sse_stream *s);
