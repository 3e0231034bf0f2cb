#pragma once
/*
 * wire.h - the one dispatch of what a worker sends (docs/protocol.md): its
 * life (Hello, LoadProgress, Ready, Heartbeat) to its worker and model, its
 * jobs' events to the jobs, tokenize answers to tokenize.h. It sits above the
 * registry; workers hand it each envelope through their hooks (core.h).
 * What orchd sends is wire_send.h's. Thread: the loop.
 */
#include <stdint.h>

#include "base/err.h"
#include "proto/orch.pb-c.h"

struct orchd;
struct worker;

/*
 * wire_dispatch - handle one envelope from @w (Hello, LoadProgress, Ready,
 * Heartbeat, Started, TokenBatch, End, Error, TokenizeResult). @env stays
 * the caller's.
 */
void wire_dispatch(struct orchd *d, struct worker *w, const Orch__Envelope *env);
