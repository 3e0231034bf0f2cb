#pragma once
/*
 * wire_send.h - the envelopes orchd sends a worker about its work
 * (docs/protocol.md): Submit, Tokenize and Cancel, built here and queued on
 * the worker (workers_send_env: never waits). Drain is the worker's own
 * (workers_drain); what a worker sends passes wire.h's dispatch. Thread: the loop.
 */
#include <stdint.h>

#include "base/err.h"
#include "proto/orch.pb-c.h"

struct cJSON;
struct job;
struct orchd;
struct worker;

/* wire_send_submit - send @j's Submit to @w. ORCH_EQUEUE_FULL, ORCH_ECLOSED, ORCH_EPROTO. */
orch_err wire_send_submit(struct orchd *d, struct worker *w, const struct job *j);

/*
 * wire_send_tokenize - send @t to @w, with @messages (NULL: none; request_chat.c's
 * array) as its chat; errors as wire_send_submit.
 */
orch_err wire_send_tokenize(struct worker *w, Orch__Tokenize *t, const struct cJSON *messages);

/* wire_send_cancel - send Cancel for job @job_id to @w; errors as wire_send_submit. */
orch_err wire_send_cancel(struct worker *w, uint64_t job_id);
