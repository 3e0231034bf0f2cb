/*
 * paged_copy.c - paged_copy_check (paged_copy.h).
 */
#include "paged_copy.h"

#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/engine.h"
#include "t.h"

/* The logits of @tok at position @pos of slot 0, reading (and writing) block @blk of each
 * pool, into @out. */
static void
step(struct engine *e, const int32_t *tok, uint32_t n, uint32_t pos, uint32_t blk, float *out)
{
	struct be_seq q = {.slot = 0,
	                   .pos = pos,
	                   .tokens = tok,
	                   .n_tokens = n,
	                   .want_logits = true,
	                   .blocks = &blk,
	                   .n_blocks = 1};
	struct orch_errinfo err = {0};
	const float *lg = NULL;

	if (e->kv_swa_blocks > 0) {
		q.swa_blocks = &blk;
		q.n_swa_blocks = 1;
	}
	T_OK(e->ops->forward(e->b, &q, 1, &lg, &err));
	if (lg != NULL)
		memcpy(out, lg, e->m.hp.n_vocab * sizeof(float));
}

/* copy_blocks in each pool the engine has. */
static orch_err
copy(struct engine *e, uint32_t src, uint32_t dst, uint32_t n)
{
	struct orch_errinfo err = {0};
	orch_err rv = e->ops->copy_blocks(e->b, false, src, dst, n, &err);

	if (rv == ORCH_OK && e->kv_swa_blocks > 0)
		rv = e->ops->copy_blocks(e->b, true, src, dst, n, &err);
	return rv;
}

static void
check(struct engine *e)
{
	uint32_t bt = e->kv_block_tokens, n = bt - 1, V = e->m.hp.n_vocab;
	int32_t toks[64], next = 3;
	float *l0 = malloc(V * sizeof(float)), *l1 = malloc(V * sizeof(float));
	struct orch_errinfo err = {0};

	T_TRUE(l0 && l1 && e->ops->paged && e->ops->copy_blocks && e->kv_blocks >= 3 &&
	       (e->kv_swa_blocks == 0 || e->kv_swa_blocks >= 3) && bt >= 2 && bt <= 64 &&
	       e->n_ctx > bt);
	for (uint32_t i = 0; i < n; i++)
		toks[i] = 1 + (int32_t)(i * 37 % 400); /* in every test model's vocabulary */
	step(e, toks, n, 0, 0, l0);
	T_OK(copy(e, 0, 1, n));
	step(e, &next, 1, n, 1, l1); /* through the copy */
	step(e, &next, 1, n, 0, l0); /* through the original */
	if (memcmp(l0, l1, V * sizeof(float)) != 0)
		T_FAIL_("%s backend: logits through a copied block differ", e->ops->name);
	T_OK(copy(e, 0, 2, n / 2)); /* half the rows: the rest are not the prompt's */
	step(e, &next, 1, n, 2, l1);
	if (memcmp(l0, l1, V * sizeof(float)) == 0)
		T_FAIL_("%s backend: half a copy gives the whole copy's logits", e->ops->name);
	T_ERR(e->ops->copy_blocks(e->b, false, 0, e->kv_blocks, 1, &err), ORCH_EINVAL);
	T_ERR(e->ops->copy_blocks(e->b, false, 1, 1, 1, &err), ORCH_EINVAL);
	T_ERR(e->ops->copy_blocks(e->b, false, 0, 1, bt + 1, &err), ORCH_EINVAL);
	if (e->kv_swa_blocks == 0)
		T_ERR(e->ops->copy_blocks(e->b, true, 0, 1, 1, &err), ORCH_EINVAL);
	printf("%s backend: copy_blocks (%u rows, blocks of %u%s) gives the original's logits\n",
	       e->ops->name, n, bt, e->kv_swa_blocks ? ", both pools" : "");
	free(l0);
	free(l1);
}

bool
paged_copy_check(struct engine *e)
{
	int before = t_failed_checks; /* t.h's counts are this file's own */

	check(e);
	return t_failed_checks == before;
}
