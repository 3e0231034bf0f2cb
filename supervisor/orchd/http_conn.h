#pragma once
/*
 * http_conn.h - the public listener's connections, in front of evhttp
 * (issue 16). evhttp 2.1 has no connection cap, one timeout that every
 * byte resets, lenient parsing, and a listener that retries a failing
 * accept() at once, forever. This layer adds:
 *   - limits: max_connections in all and max_connections_per_client from
 *     one client address; a connection over either is answered 503
 *     OVERLOADED and closed at once, and counted;
 *   - deadlines no byte resets: a request's head within header_timeout_s
 *     (from the connection's accept for its first request, from the head's
 *     first byte after that), its body within body_timeout_s after the
 *     head, and keepalive_timeout_s idle between requests;
 *   - each request's head read as its bytes arrive, before evhttp parses
 *     them (http_head.h): a refused head is answered with its JSON error
 *     and the connection closed; evhttp never reads it;
 *   - when accept() finds no descriptor left (EMFILE, ENFILE): the
 *     listener pauses 100 ms, the connections waiting are taken with a
 *     reserve descriptor and refused (503), one log line per episode (with
 *     the count when it ends), a metric; the open connections go on.
 * It also writes each request's access line (http_access.h): when the
 * answer is out, or the connection closes, or a refused head is answered.
 * The admin listeners do not go through it. Thread: the loop.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

struct evhttp_bound_socket;
struct evhttp_connection;
struct evhttp_request;
struct orchd;

/* http_close_fn - evhttp's connection close callback. */
typedef void (*http_close_fn)(struct evhttp_connection *c, void *arg);

/*
 * http_conn_start - the layer for d->http, before it listens: limits, the
 * Host allow-list (ORCH_EINVAL for a bad allowed_hosts), evhttp's
 * bufferevent callback. ORCH_ENOMEM.
 */
orch_err http_conn_start(struct orchd *d, struct orch_errinfo *reterr);

/* http_conn_listen - take the accept() failures of @bound, d->http's listening socket. */
orch_err http_conn_listen(struct orchd *d, struct evhttp_bound_socket *bound,
                          struct orch_errinfo *reterr);

/*
 * http_conn_checked - whether @req's head went through this layer and was
 * accepted; true for a connection it does not track (the admin listeners).
 * The router calls it first: @req is then the one its access line
 * (http_access.h) is about.
 */
bool http_conn_checked(struct orchd *d, struct evhttp_request *req);

/*
 * http_conn_note - what @req's access line shows: the path (@path, NULL:
 * the request's own) and the job's correlation id (@job, NULL: none yet).
 */
void http_conn_note(struct orchd *d, struct evhttp_request *req, const char *path, const char *job);

/*
 * http_conn_done - @req's response is out (its completion callback): the
 * connection waits for its next request, and bytes the client sent ahead
 * (pipelining) are read as that request's head.
 */
void http_conn_done(struct orchd *d, struct evhttp_request *req);

/*
 * http_conn_watch_close - while @c's request waits for its answer (a
 * handler that answers later, not streaming), see the client close it: evhttp
 * stops reading once a request's body is in, so a close would go unseen
 * until the answer was written. Reading resumes with no read callback (what
 * the client sends ahead stays in the input buffer, as while a stream is
 * written) and no read timeout; writes time out after @write_timeout_s. An EOF
 * fails the connection and its close callback runs.
 */
void http_conn_watch_close(struct evhttp_connection *c, uint32_t write_timeout_s);

/*
 * http_conn_set_closecb - evhttp_connection_set_closecb for a connection
 * this layer may track: it keeps evhttp's close callback for itself and
 * calls @fn(@arg) from it, first. NULL @fn: none.
 */
void http_conn_set_closecb(struct orchd *d, struct evhttp_connection *c, http_close_fn fn,
                           void *arg);

/*
 * http_conn_release - from a close callback, for the request @req its
 * handler still holds: evhttp detaches (and does not free) a request whose
 * client left while it was unanswered, so it is the handler's; this ends it,
 * which frees it. A request still on its connection is left to evhttp.
 */
void http_conn_release(struct evhttp_request *req);

/* http_conn_drop - before evhttp_free(): forget connections not admitted yet. */
void http_conn_drop(struct orchd *d);

/* http_conn_stop - after evhttp_free(): free the layer. */
void http_conn_stop(struct orchd *d);
