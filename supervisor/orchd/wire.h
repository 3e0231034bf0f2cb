#pragma once
/*
 * wire.h - every envelope orchd sends to a worker or takes from one
 * (docs/protocol.md): Submit, Tokenize, Cancel and Drain are built here and
 * queued on the worker (workers_send: never waits); what a worker sends
 * passes one dispatch. Thread: the loop.
 */
#include <stdint.h>

#include "base/err.h"
#include "proto/orch.pb-c.h"

struct cJSON;
struct job;
struct orchd;
struct worker;

/* wire_submit - send @j's Submit to @w. ORCH_EQUEUE_FULL, ORCH_ECLOSED, ORCH_EPROTO. */
orch_err wire_submit(struct orchd *d, struct worker *w, const struct job *j);

/*
 * wire_tokenize - send @t to @w, with @messages (NULL: none; request_chat.c's
 * array) as its chat; errors as wire_submit.
 */
orch_err wire_tokenize(struct worker *w, Orch__Tokenize *t, const struct cJSON *messages);

/* wire_err - the orch_err of a protobuf ErrorCode (ORCH_EINTERNAL for one not known). */
orch_err wire_err(int code);

/* wire_cancel - send Cancel for job @job_id to @w; errors as wire_submit. */
orch_err wire_cancel(struct worker *w, uint64_t job_id);

/* wire_drain - ask @w to finish its jobs and exit. */
orch_err wire_drain(struct worker *w);

/*
 * wire_dispatch - handle one envelope from @w (Hello, LoadProgress, Ready,
 * Heartbeat, Started, TokenBatch, End, Error, TokenizeResult). @env stays
 * the caller's.
 */
void wire_dispatch(struct orchd *d, struct worker *w, const Orch__Envelope *env);
