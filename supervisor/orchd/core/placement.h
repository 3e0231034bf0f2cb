#pragma once
/*
 * placement.h - whether a worker fits on its device before it starts, and
 * the model's memory estimate (placement.c's opening comment has the rules).
 */
#include <stdint.h>

#include "base/err.h"

struct model_entry;
struct orchd;
struct worker;

enum place_result { PLACE_FIT, PLACE_WAIT, PLACE_REFUSE };

#define PLACE_EVICT_MAX 64

/* The idle models placement_check chose to evict, least recently used first. */
struct place_evict {
	struct model_entry *v[PLACE_EVICT_MAX];
	uint32_t n;
};

/*
 * placement_check - whether @w fits on its device now: PLACE_FIT; PLACE_WAIT
 * when memory is coming back (unloading models, or the idle ones it chose in
 * @ev, which the caller unloads now); PLACE_REFUSE with
 * ORCH_EINSUFFICIENT_VRAM and the bytes needed and free in @reterr.
 */
enum place_result placement_check(struct orchd *d, struct worker *w, struct place_evict *ev,
                                  struct orch_errinfo *reterr);
