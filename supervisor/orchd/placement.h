#pragma once
/*
 * placement.h - whether a worker fits on its device before it starts, and
 * the model's memory estimate (placement.c's opening comment has the rules).
 */
#include "base/err.h"

struct model_entry;
struct orchd;
struct worker;

enum place_result { PLACE_FIT, PLACE_WAIT, PLACE_REFUSE };

/*
 * placement_check - whether @w fits on its device now: PLACE_FIT; PLACE_WAIT
 * when memory is coming back (evicted or unloading models); PLACE_REFUSE
 * with ORCH_EINSUFFICIENT_VRAM and the bytes needed and free in @reterr.
 */
enum place_result placement_check(struct orchd *d, struct worker *w, struct orch_errinfo *reterr);
