#pragma once
/*
 * reply.h - one HTTP request as the API handlers see it (issue 53): a plain
 * value the edge fills once (method, path, query, the headers that matter,
 * the body), and the ways to answer it, which the edge
 * implements (http_exchange.c over evhttp; the unit tests with a recorder).
 * Nothing here names libevent. Thread: the loop.
 *
 * Lifetime: the edge makes a request and keeps it until its answer.
 *  - reply_send, reply_json, reply_error* and reply_stream_head answer it
 *    and free it: the handler does not touch it after.
 *  - reply_stream_start makes it a stream; reply_stream_end ends and frees it.
 *  - reply_hold: the answer comes later; the client may leave first.
 *  - When the client leaves a held request or a stream, its gone function
 *    is called once; the handler then calls reply_release (at once, or
 *    later: a parse still reading the body) and neither answers nor writes.
 */
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct api_req;
struct cJSON;
struct params_err;

/* Methods as bits (the values libevent's EVHTTP_REQ_* have: http_exchange.c checks). */
enum api_method {
	API_GET = 1 << 0,
	API_POST = 1 << 1,
	API_HEAD = 1 << 2,
	API_PUT = 1 << 3,
	API_DELETE = 1 << 4,
	API_OPTIONS = 1 << 5,
	API_TRACE = 1 << 6,
	API_CONNECT = 1 << 7,
	API_PATCH = 1 << 8,
};

/*
 * api_gone_fn - @r's client left (@why: "closed") or, on a stream, was cut
 * for reading too slowly ("slow"). Call reply_release(@r) once, now or later.
 */
typedef void (*api_gone_fn)(struct api_req *r, void *arg, const char *why);

/* What the edge does for each way of answering (reply.c's functions call them). */
struct reply_ops {
	/* add a response header */
	void (*header)(struct api_req *r, const char *name, const char *value);
	/* answer with @status, Content-Type @type (NULL: none), the bytes @a then @b; frees @r */
	void (*send)(struct api_req *r, int status, const char *type, const char *a, size_t na,
	             const char *b, size_t nb);
	/* a HEAD of a stream's route: a stream's head, no body; frees @r */
	void (*stream_head)(struct api_req *r);
	/* start a 200 event stream; ORCH_ENOMEM: nothing sent */
	orch_err (*stream_start)(struct api_req *r, api_gone_fn gone, void *arg);
	/* the static text a slow client's stream is cut with (NULL: the native error event) */
	void (*stream_cut)(struct api_req *r, const char *text);
	void (*stream_write)(struct api_req *r, const char *data, size_t n);
	/* send what is queued, end the stream; frees @r */
	void (*stream_end)(struct api_req *r);
	/* @gone(@arg) when the client leaves before the answer (NULL: no longer); @read: also
	 * see a close while no body is expected (the public API's requests) */
	void (*hold)(struct api_req *r, api_gone_fn gone, void *arg, bool read);
	/* after gone: let the request go; frees @r */
	void (*release)(struct api_req *r);
	/* what the access log shows: the route (@path, NULL: the request's) and the job */
	void (*note)(struct api_req *r, const char *path, const char *job);
};

/* One request; the edge's, filled once before the handler runs. */
struct api_req {
	const struct reply_ops *ops;
	int method;        /* an api_method */
	const char *path;  /* the URI's path, without the query */
	const char *query; /* what follows '?' ("" when none) */
	const char *body;  /* the body's bytes ("" when none) */
	size_t n_body;
	const char *authorization; /* the headers the APIs read; NULL when absent */
	const char *last_event_id;
	const char *x_deadline;
	const char *if_none_match;
	bool retry_after; /* a Retry-After is set (reply_retry_after) */
};

/* The JSON body of a 500 when not even an error body can be made (NUL-terminated). */
extern const char reply_oom_body[];

/* reply_send - answer @r with @status and the @n bytes at @body of Content-Type @type. */
void reply_send(struct api_req *r, int status, const char *type, const char *body, size_t n);

/* reply_json - answer @r with @body (freed) as JSON; 500 when it cannot be printed. */
void reply_json(struct api_req *r, int status, struct cJSON *body);

/* reply_error - a JSON error body {error:{code,message,param}} with the code's HTTP status. */
void reply_error(struct api_req *r, orch_err code, const char *param, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/*
 * reply_error_job - reply_error with the message @msg as it is, and, when
 * @correlation is not NULL, the job's "correlation_id" (the log has its details).
 */
void reply_error_job(struct api_req *r, orch_err code, const char *param, const char *correlation,
                     const char *msg);

/* reply_params_error - reply_error for a refused request (params.h). */
void reply_params_error(struct api_req *r, const struct params_err *pe);

/* reply_header - add the response header @name: @value. */
void reply_header(struct api_req *r, const char *name, const char *value);

/* reply_retry_after - add "Retry-After: @s" unless @r's response has one. */
void reply_retry_after(struct api_req *r, unsigned s);

/* reply_hold - the answer comes later (reply_ops.hold); @gone NULL: no longer held. */
void reply_hold(struct api_req *r, api_gone_fn gone, void *arg, bool read);

/* reply_release - after @r's gone call: let it go (freed). */
void reply_release(struct api_req *r);

/* reply_note - what @r's access line shows: the route @path (NULL: its own), job @job. */
void reply_note(struct api_req *r, const char *path, const char *job);

/* reply_stream_start - a 200 event stream; ORCH_ENOMEM: nothing sent (answer it). */
orch_err reply_stream_start(struct api_req *r, api_gone_fn gone, void *arg);

/* reply_stream_head - answer a HEAD of a stream's route (frees @r). */
void reply_stream_head(struct api_req *r);

/* reply_stream_cut - the API's own end for a slow client (@text static). */
void reply_stream_cut(struct api_req *r, const char *text);

/* reply_stream_write - queue @n bytes of events. */
void reply_stream_write(struct api_req *r, const char *data, size_t n);

/* reply_stream_end - end the stream (frees @r). */
void reply_stream_end(struct api_req *r);
