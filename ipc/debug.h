#pragma once
/*
 * debug.h - a worker's debug stream (DESIGN.md §3, docs/protocol.md "Debug
 * stream").
 *
 * A worker started with --debug-endpoint URL publishes text records on an
 * NNG pub socket bound to URL. A record is one message, "TOPIC key=value
 * ...", where TOPIC is "log" (the worker's log lines) or "step" (timings of
 * one scheduler step); a subscriber filters on the topic prefix. Pub/sub
 * never blocks the worker: a slow subscriber loses records, the worker does
 * not wait.
 *
 * A state dump travels on a second socket, an NNG rep bound to the control
 * URL derived from URL (ipc_debug_ctl_url): the client sends "dump" and gets
 * one text reply, a "worker ..." line then one "job ..." line per job.
 *
 * The worker side (ipc_debug_open ...) is driven by one thread; the client
 * side (ipc_debug_sub_open, ipc_debug_dump) by its caller.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/sbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest record or request accepted (bytes). */
#define IPC_DEBUG_MAX_MSG (1u << 20)

/*
 * ipc_debug_ctl_url - the control URL for debug URL @url into @buf:
 * "ipc://PATH" gives "ipc://PATH.ctl", "tcp://HOST:PORT" gives
 * "tcp://HOST:PORT+1". ORCH_EINVAL for another scheme, a bad port or a
 * result longer than @n.
 */
orch_err ipc_debug_ctl_url(const char *url, char *buf, size_t n, struct orch_errinfo *reterr);

/* ---- the worker side ---- */

struct ipc_debug;

/* ipc_debug_open - bind the pub socket on @url and the rep socket on its control URL. */
orch_err ipc_debug_open(const char *url, struct ipc_debug **ret, struct orch_errinfo *reterr);

/* ipc_debug_close - close both sockets and free @d (NULL is fine). */
void ipc_debug_close(struct ipc_debug *d);

/*
 * ipc_debug_publish - publish "@topic @text" (@n bytes of text) without
 * waiting; dropped when no subscriber can take it. Thread: any.
 */
void ipc_debug_publish(struct ipc_debug *d, const char *topic, const char *text, size_t n);

/* ipc_debug_publishf - ipc_debug_publish with printf formatting (records up to 4 KiB). */
void ipc_debug_publishf(struct ipc_debug *d, const char *topic, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* ipc_debug_request_fd - polls readable when a request may be waiting; -1 on failure. */
int ipc_debug_request_fd(struct ipc_debug *d);

/*
 * ipc_debug_request - the next waiting request, without blocking, into
 * @buf (NUL-terminated, cut to @n - 1 bytes): true when there is one; the
 * caller must then answer it with ipc_debug_reply before the next.
 */
bool ipc_debug_request(struct ipc_debug *d, char *buf, size_t n);

/* ipc_debug_reply - answer the request taken last. ORCH_EIO when the client is gone. */
orch_err ipc_debug_reply(struct ipc_debug *d, const char *text, size_t n,
                         struct orch_errinfo *reterr);

/* ---- the client side ---- */

struct ipc_debug_sub;

/*
 * ipc_debug_sub_open - subscribe to the stream at @url, to the records
 * whose topic is one of @topics (NULL or empty: all).
 */
orch_err ipc_debug_sub_open(const char *url, const char *const *topics, size_t n_topics,
                            struct ipc_debug_sub **ret, struct orch_errinfo *reterr);

/*
 * ipc_debug_sub_next - the next record into @out (replacing its contents,
 * NUL-terminated), waiting up to @timeout_ms (-1: forever). ORCH_EAGAIN on
 * timeout, ORCH_ECLOSED once closed, ORCH_ENOMEM.
 */
orch_err ipc_debug_sub_next(struct ipc_debug_sub *s, int timeout_ms, struct sbuf *out,
                            struct orch_errinfo *reterr);

/*
 * ipc_debug_sub_close - unsubscribe and free @s (NULL is fine). Only when no
 * more records arrive (the worker gone or quiet): NNG 1.5's nng_close can
 * deadlock on a subscriber records are still arriving at.
 */
void ipc_debug_sub_close(struct ipc_debug_sub *s);

/*
 * ipc_debug_sub_leave - free @s but leave its socket open for the process's
 * exit to end (NULL is fine): what a command that exits next does while
 * records may still arrive.
 */
void ipc_debug_sub_leave(struct ipc_debug_sub *s);

/*
 * ipc_debug_dump - ask the worker whose debug URL is @url for a state dump
 * and put the reply in @out, waiting up to @timeout_ms for it. ORCH_EAGAIN
 * when no answer came in time (no worker there, or a busy one).
 */
orch_err ipc_debug_dump(const char *url, int timeout_ms, struct sbuf *out,
                        struct orch_errinfo *reterr);

/*
 * ipc_debug_add_topic - append @topic ("log" or "step") to @topics, which
 * holds *@n of @max; false when it is neither or there is no room.
 */
bool ipc_debug_add_topic(const char **topics, size_t *n, size_t max, const char *topic);

/* One record of the stream, NUL-terminated, for ipc_debug_follow's caller. */
typedef void ipc_debug_emit_fn(const char *record, void *arg);

/*
 * ipc_debug_follow - the loop of a command-line client: subscribes to @url
 * (@topics as for ipc_debug_sub_open) and calls @emit for each record until
 * @count of them (0: no end), or until no record came for @timeout_ms (-1:
 * wait forever), or an error. Problems go to stderr prefixed with @prog.
 * Returns the exit code: 0 after @count records, else 1. The subscription
 * is left for the process's exit to end (see ipc_debug_sub_close): call it
 * last, then leave main.
 */
int ipc_debug_follow(const char *prog, const char *url, const char *const *topics, size_t n_topics,
                     uint64_t count, int timeout_ms, ipc_debug_emit_fn *emit, void *arg);

#ifdef __cplusplus
}
#endif
