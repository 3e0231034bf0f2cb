#pragma once
/*
 * core.h - the core's wiring. Its modules depend downward only: wire's
 * dispatch and tokenize above the registry (models, models_jobs), the
 * registry above placement, workers and wire_send. Where a lower module must
 * tell a higher one something it calls a hook it owns (workers.h's
 * worker_hooks, models.h's model_hooks); core.c, above them all, points
 * those hooks at their handlers. Thread: the loop.
 */

struct orchd;

/* core_init - install the core's hooks in @d; before any model is added. */
void core_init(struct orchd *d);
