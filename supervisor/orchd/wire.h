#pragma once
/*
 * wire.h - every envelope orchd sends to a worker or takes from one
 * (docs/protocol.md): Submit, Cancel and Drain are built here and
 * queued on the worker (workers_send: never waits); what a worker sends
 * passes one dispatch. Thread: the loop.
 */
#include <stdint.h>

#include "base/err.h"
#include "proto/orch.pb-c.h"

struct job;
struct orchd;
struct worker;

/* wire_submit - send @j's Submit to @w. ORCH_EQUEUE_FULL, ORCH_ECLOSED, ORCH_EPROTO. */
orch_err wire_submit(struct orchd *d, struct worker *w, const struct job *j);

/* wire_cancel - send Cancel for job @job_id to @w; errors as wire_submit. */
orch_err wire_cancel(struct worker *w, uint64_t job_id);

/* wire_drain - ask @w to finish its jobs and exit. */
orch_err wire_drain(struct worker *w);

/*
 * wire_dispatch - handle one envelope from @w (Hello, LoadProgress, Ready,
 * Heartbeat, Started, TokenBatch, End, Error). @env stays the caller's.
 */
void wire_dispatch(struct orchd *d, struct worker *w, const Orch__Envelope *env);
