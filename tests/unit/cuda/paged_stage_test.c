/*
 * paged_stage_test.c - the CUDA backend's block-table staging
 * (cu_stage_tables, cuda_paged.c), which runs on the host and so is tested
 * here without a device: three sequences grow in steps of 1 to 9 tokens
 * through a real block pool and a sliding-window pool (kv_blocks.h, blocks
 * of 7, a window of 20, the window's blocks dropped before each append as
 * the scheduler drops them); after each step's staging, every position
 * every token reads or writes, found the way the kernels find it
 * (kv.cuh: entry tbl[t] + p / bt of the staged tables, in uint32
 * arithmetic), is the block the sequence's own table gives, and no entry
 * read lies outside the step's staged tables. Built with the CUDA code;
 * needs no GPU.
 */
#include <string.h>

#include "base/rng.h"
#include "cuda_int.h"
#include "engine/kv_blocks.h"
#include "gguf/model_info.h"
#include "t.h"

enum { SEQS = 3, BT = 7, CTX = 200, WIN = 20, STEP_MAX = 9 };

/* The block of position @p through the staged table starting at @start (kv.cuh's rule). */
static uint32_t
staged_block(const struct be_model *b, uint32_t start, uint32_t p, uint32_t lo, uint32_t hi,
             bool *ok)
{
	uint32_t e = start + p / BT; /* uint32: a window table's start may wrap */

	*ok = *ok && e >= lo && e < hi;
	return e >= lo && e < hi ? b->h_tab[e] : KVB_NONE;
}

static void
test_staging(void)
{
	struct kvb *full = NULL, *win = NULL;
	uint32_t most = model_swa_blocks(CTX, WIN, SEQS * STEP_MAX, BT);
	struct kvb_config fc = {.n_blocks = SEQS * ((CTX + BT - 1) / BT),
	                        .block_tokens = BT,
	                        .max_seqs = SEQS,
	                        .max_seq_tokens = CTX};
	struct kvb_config wc = fc;
	struct be_model b = {0};
	struct rng r;
	int32_t toks[STEP_MAX] = {0};
	uint32_t checked = 0, len = 0;

	wc.n_blocks = SEQS * most;
	wc.window = WIN;
	T_OK(kvb_new(&fc, &full, NULL));
	T_OK(kvb_new(&wc, &win, NULL));
	b.cfg = (struct be_config){.slots = SEQS,
	                           .n_ctx = CTX,
	                           .max_batch_tokens = SEQS * STEP_MAX,
	                           .kv_blocks = fc.n_blocks,
	                           .kv_block_tokens = BT,
	                           .kv_swa_blocks = wc.n_blocks};
	b.paged = true;
	b.nb_max = (CTX + BT - 1) / BT;
	b.tab_cap = (uint32_t)cu_tab_entries(&b.cfg);
	b.h_tab = calloc(b.tab_cap, sizeof(uint32_t));
	b.h.tbl = calloc(SEQS * STEP_MAX, sizeof(uint32_t));
	b.h.swa_tbl = calloc(SEQS * STEP_MAX, sizeof(uint32_t));
	T_TRUE(b.h_tab && b.h.tbl && b.h.swa_tbl);
	rng_seed(&r, 7);
	while (len + STEP_MAX <= CTX) {
		struct be_seq q[SEQS];
		uint32_t t = 0;
		b.tab_n = 2 * b.nb_max; /* as stage_batch: after the padding tables */
		for (uint32_t s = 0; s < SEQS; s++) {
			uint32_t n = 1 + (uint32_t)(rng_next(&r) % STEP_MAX),
			         pos = kvb_seq_len(full, s);
			if (pos + n > CTX)
				n = CTX - pos;
			if (pos + 1 > WIN) /* the scheduler's drop (sched_kv_append) */
				T_OK(kvb_seq_drop_before(win, s, pos + 1 - WIN));
			struct kvb_copy c;
			T_OK(kvb_seq_append(full, s, toks, n, &c, NULL));
			T_OK(kvb_seq_append(win, s, toks, n, &c, NULL));
			q[s] = (struct be_seq){
			        .slot = s, .pos = pos, .tokens = toks, .n_tokens = n};
			q[s].blocks = kvb_seq_table(full, s, &q[s].n_blocks);
			q[s].first_block = kvb_seq_first_block(full, s);
			q[s].swa_blocks = kvb_seq_table(win, s, &q[s].n_swa_blocks);
			q[s].swa_first_block = kvb_seq_first_block(win, s);
			len = pos + n > len ? pos + n : len;
		}
		uint32_t T = 0;
		T_OK(be_check_batch(&b.cfg, 512, WIN, q, SEQS, &T, NULL));
		for (uint32_t s = 0; s < SEQS; s++) {
			cu_stage_tables(&b, &q[s], t);
			t += q[s].n_tokens;
		}
		T_TRUE(b.tab_n <= b.tab_cap);
		bool ok = true;
		for (uint32_t s = 0, t0 = 0; s < SEQS; t0 += q[s].n_tokens, s++)
			for (uint32_t k = 0; k < q[s].n_tokens; k++) {
				uint32_t p_t = q[s].pos + k, lo = 2 * b.nb_max;
				for (uint32_t p = 0; p <= p_t;
				     p++) { /* a full layer reads [0, p_t] */
					uint32_t blk = staged_block(&b, b.h.tbl[t0 + k], p, lo,
					                            b.tab_n, &ok);
					ok = ok && blk == q[s].blocks[p / BT];
					checked++;
				}
				for (uint32_t p = p_t + 1 > WIN ? p_t + 1 - WIN : 0; p <= p_t;
				     p++) {
					uint32_t blk = staged_block(&b, b.h.swa_tbl[t0 + k], p, lo,
					                            b.tab_n, &ok);
					ok = ok && blk == q[s].swa_blocks[p / BT] &&
					     blk < wc.n_blocks;
					checked++;
				}
			}
		if (!ok) {
			T_FAIL_("a staged table gives another row than the sequence's (length %u)",
			        len);
			break;
		}
	}
	if (checked > 0 && len + STEP_MAX > CTX)
		printf("staged tables: %u position lookups as the kernels make them, all the "
		       "sequences' own blocks\n",
		       checked);
	kvb_free(full);
	kvb_free(win);
	free(b.h_tab);
	free(b.h.tbl);
	free(b.h.swa_tbl);
}

int
main(void)
{
	T_RUN(test_staging);
	return t_done();
}
