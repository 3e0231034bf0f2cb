#pragma once
/*
 * bench_tables.h - block tables for the CUDA benchmarks' steps (orch-gpu-bench,
 * orch-gpu-cost): with a paged KV pool, slot s's full-attention table is
 * blocks s·nb .. (s+1)·nb - 1 of the pool (nb = n_ctx / block tokens), and its
 * sliding-window table a ring over its share of the window pool (entry i on
 * block s·most + i % most: a step reads at most @most consecutive entries,
 * model_swa_blocks, so a block is written again only after its window).
 */
#include <stdint.h>

#include "base/err.h"

struct be_seq;
struct engine;

struct bench_tables {
	uint32_t *tab, *swa; /* every slot's tables, nb entries each; NULL: slots, no pool */
	uint32_t nb;
};

/*
 * bench_tables_make - @e's tables into @t (zeroed first). ORCH_ENOMEM, or
 * ORCH_EINVAL when the pool is smaller than slots × nb blocks.
 */
orch_err bench_tables_make(const struct engine *e, struct bench_tables *t,
                           struct orch_errinfo *reterr);

/* bench_tables_seq - point @s (a sequence on @slot) at its tables; nothing without a pool. */
void bench_tables_seq(const struct bench_tables *t, uint32_t slot, struct be_seq *s);

/* bench_tables_free - free @t's tables (a zeroed @t is fine). */
void bench_tables_free(struct bench_tables *t);
