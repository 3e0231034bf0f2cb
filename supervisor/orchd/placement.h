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
 * placement_estimate - read @m's file for its memory estimate and where its
 * chat template comes from (m->chat_template_origin, until a Ready says);
 * errors are the file's.
 */
orch_err placement_estimate(struct model_entry *m, struct orch_errinfo *reterr);

/*
 * placement_check - whether @w fits on its device now: PLACE_FIT; PLACE_WAIT
 * when memory is coming back (evicted or unloading models); PLACE_REFUSE
 * with ORCH_EINSUFFICIENT_VRAM and the bytes needed and free in @reterr.
 */
enum place_result placement_check(struct orchd *d, struct worker *w, struct orch_errinfo *reterr);
