#pragma once
/*
 * paged_copy.h - one check of a backend's copy_blocks (backend.h) that the
 * CPU tests (engine_test, gpt_oss_test) and the GPU test (gpu_model_test)
 * share, run on an engine opened with a paged KV cache.
 */
#include <stdbool.h>

struct engine;

/*
 * paged_copy_check - on @e (paged, pools of at least 3 blocks of 2+ tokens,
 * n_ctx past one block): a prompt shorter than a block computed in block 0
 * (of each pool), its rows copied into block 1 with copy_blocks, then the
 * next token's logits through block 1 equal those through block 0 bit for
 * bit; a copy of half the rows into block 2 gives other logits (the check
 * sees a copy that does nothing); a block out of a pool, a block onto itself
 * and more rows than a block are ORCH_EINVAL. Whether every check passed
 * (t.h's counters are per file: the caller T_TRUEs the result).
 */
bool paged_copy_check(struct engine *e);
