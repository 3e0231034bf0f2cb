#pragma once
/*
 * http_access.h - the public listener's access log (issue 18): one line at
 * info level per request, those the HTTP edge refuses included, when its
 * answer is out (a stream: when it ends) or its connection closes:
 *
 *   event=http_access method=GET path=/v1/models status=200 bytes=412 ms=0.8
 *   job=CORRELATION|- [end=closed|deadline]
 *
 * path: the request target up to its query, cut at HTTP_ACCESS_PATH_MAX
 * bytes ("-" when there is none); a job's id in /jobs/ID/... is a
 * capability and is logged as a hash of it ("/jobs/{id:1a2b3c4d}/events"),
 * also when the request is refused before a route sees it (401, 405,
 * OPTIONS, the edge's limits); a route that takes it logs its pattern. Never the query, a header,
 * the body or the prompt. status: the answer's (0: none was sent). bytes: what was written to the
 * socket for the answer, its head included. ms: from the request's first byte to its answer's last
 * byte (or the close). job: the correlation id of the job the request made or followed (the key of
 * orchd's job lines), "-" for none. end: the answer did not complete: the client went away
 * (closed), or the request was cut at a deadline (deadline). A connection refused before it sent
 * anything (over a limit) is counted in the metrics, not logged here. Pure: no libevent. Thread:
 * the loop.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_ACCESS_METHOD_MAX 16
#define HTTP_ACCESS_PATH_MAX   200

/* One request's line in the making (one per connection: requests there take turns). */
struct http_access {
	bool open; /* a request is in progress */
	char method[HTTP_ACCESS_METHOD_MAX];
	char path[HTTP_ACCESS_PATH_MAX + 1];
	char job[24];
	uint64_t start_ns; /* monotonic */
	uint64_t bytes;
};

/* http_access_begin - a request's first byte arrived at @now_ns (monotonic): a new line. */
void http_access_begin(struct http_access *a, uint64_t now_ns);

/*
 * http_access_head - the method and path from the head read so far (@n
 * bytes at @head; a refused one may end anywhere): "-" for what it lacks.
 */
void http_access_head(struct http_access *a, const char *head, size_t n);

/*
 * http_access_note - what the route knows: the path to log (@path; NULL
 * leaves it) and the job's correlation id (@job; NULL leaves it).
 */
void http_access_note(struct http_access *a, const char *path, const char *job);

/* http_access_sent - @n more bytes of the answer went out. */
void http_access_sent(struct http_access *a, uint64_t n);

/*
 * http_access_end - log the open request's line with @status and @end
 * (NULL: the answer is complete) at @now_ns, and close it; nothing when
 * none is open.
 */
void http_access_end(struct http_access *a, int status, const char *end, uint64_t now_ns);
