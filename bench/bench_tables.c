/*
 * bench_tables.c - block tables for the CUDA benchmarks' steps (bench_tables.h).
 */
#include "bench_tables.h"

#include <stdlib.h>

#include "engine/backend.h"
#include "engine/engine.h"

orch_err
bench_tables_make(const struct engine *e, struct bench_tables *t, struct orch_errinfo *reterr)
{
	*t = (struct bench_tables){0};
	if (e->kv_blocks == 0)
		return ORCH_OK;
	t->nb = (e->n_ctx + e->kv_block_tokens - 1) / e->kv_block_tokens;
	if (e->kv_blocks < (uint64_t)e->slots * t->nb)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "a pool of %u KV blocks is smaller than %u slots × %u blocks",
		                 e->kv_blocks, e->slots, t->nb);
	t->tab = calloc((uint64_t)e->slots * t->nb, sizeof(uint32_t));
	t->swa = calloc((uint64_t)e->slots * t->nb, sizeof(uint32_t));
	if (t->tab == NULL || t->swa == NULL) {
		bench_tables_free(t);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	uint32_t most = e->kv_swa_blocks / e->slots;
	for (uint32_t s = 0; s < e->slots; s++)
		for (uint32_t i = 0; i < t->nb; i++) {
			t->tab[s * t->nb + i] = s * t->nb + i;
			t->swa[s * t->nb + i] = most ? s * most + i % most : 0;
		}
	return ORCH_OK;
}

void
bench_tables_seq(const struct bench_tables *t, uint32_t slot, struct be_seq *s)
{
	if (t->tab == NULL)
		return;
	s->blocks = t->tab + (uint64_t)slot * t->nb;
	s->swa_blocks = t->swa + (uint64_t)slot * t->nb;
	s->n_blocks = s->n_swa_blocks = t->nb;
}

void
bench_tables_free(struct bench_tables *t)
{
	free(t->tab);
	free(t->swa);
	*t = (struct bench_tables){0};
}
