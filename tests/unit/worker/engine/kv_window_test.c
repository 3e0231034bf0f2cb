/*
 * kv_window_test.c - the block pool's resumable prefixes (worker/engine/kv_blocks.h):
 * kvb_match_len and kvb_seq_resume in a full-attention pool (every leading block, a
 * limit, a block not cached) and in a sliding-window pool, where a sequence resumes
 * after a length whose window is cached however many earlier blocks were evicted, and
 * attaches those blocks alone; eviction there by age alone; a window of one
 * position, which needs no block; and be_check_batch's checks of the tables.
 */
#include <stdint.h>

#include "engine/backend.h"
#include "engine/kv_blocks.h"
#include "t.h"

static struct kvb *
pool(uint32_t n_blocks, uint32_t window)
{
	struct kvb_config c = {.n_blocks = n_blocks,
	                       .block_tokens = 4,
	                       .max_seqs = 2,
	                       .max_seq_tokens = 64,
	                       .prefix_cache = true,
	                       .window = window};
	struct kvb *kv = NULL;

	memset(c.seed, 0x33, sizeof(c.seed));
	if (kvb_new(&c, &kv, NULL) != ORCH_OK)
		abort();
	return kv;
}

static void
check(const struct kvb *kv)
{
	struct orch_errinfo ei = {0};
	orch_err rv = kvb_check(kv, &ei);

	if (rv != ORCH_OK)
		fprintf(stderr, "kvb_check: %s\n", ei.msg);
	T_OK(rv);
}

/* Feed @n tokens to @seq one at a time, dropping what a window of @w no longer sees. */
static void
feed(struct kvb *kv, uint32_t seq, const int32_t *t, uint32_t n, uint32_t w)
{
	struct kvb_copy cp;

	for (uint32_t k = 0; k < n; k++) {
		uint32_t pos = kvb_seq_len(kv, seq);
		if (w > 0 && pos + 1 > w)
			T_OK(kvb_seq_drop_before(kv, seq, pos + 1 - w));
		T_OK(kvb_seq_append(kv, seq, t + pos, 1, &cp, NULL));
		T_EQ(cp.n_tokens, 0);
	}
}

/* Full attention: every leading block, at most the limit; resume checks what it attaches. */
static void
test_full_pool(void)
{
	struct kvb *kv = pool(16, 0);
	int32_t t[40];
	uint32_t got;

	for (int i = 0; i < 40; i++)
		t[i] = 100 + i;
	feed(kv, 0, t, 20, 0); /* blocks 0..4 keyed */
	kvb_seq_free(kv, 0);
	T_EQ(kvb_match_len(kv, t, 40, NULL, 0, UINT32_MAX), 20);
	T_EQ(kvb_match_len(kv, t, 20, NULL, 0, UINT32_MAX), 16); /* one token left to compute */
	T_EQ(kvb_match_len(kv, t, 40, NULL, 0, 11), 8);          /* the limit, in blocks */
	T_EQ(kvb_match_len(kv, t, 40, "s", 1, UINT32_MAX), 0);   /* another salt */
	T_OK(kvb_seq_match(kv, 1, t, 40, NULL, 0, &got));
	T_EQ(got, 20);
	kvb_seq_free(kv, 1);
	T_ERR(kvb_seq_resume(kv, 0, t, 6, NULL, 0), ORCH_EINVAL); /* not a whole block */
	T_ERR(kvb_seq_resume(kv, 0, t, 24, NULL, 0), ORCH_ENOTFOUND);
	T_EQ(kvb_seq_len(kv, 0), 0);
	T_EQ(kvb_stats(kv).used, 0);
	T_OK(kvb_seq_resume(kv, 0, t, 12, NULL, 0));
	T_TRUE(kvb_seq_len(kv, 0) == 12 && kvb_seq_first_block(kv, 0) == 0);
	T_EQ(kvb_stats(kv).used, 3);
	T_ERR(kvb_seq_resume(kv, 0, t, 0, NULL, 0), ORCH_EINVAL); /* not empty */
	feed(kv, 0, t, 8, 0); /* 20: block 4 is cached already */
	T_EQ(kvb_stats(kv).used, 5);
	check(kv);
	kvb_free(kv);
}

/*
 * A window of 6 positions over blocks of 4 in a pool of 5: a 40-token
 * sequence runs through 10 blocks, dropping and evicting the oldest, and
 * leaves blocks 5..9 cached. Resuming after L needs the blocks of positions
 * L - 5 .. L - 1: L = 40, 36, 32 and 28 can (blocks 5..9), 24 and less
 * cannot (block 4 was evicted), so a limit of 27 gives 0. A prompt that
 * differs in block 7 changes every key from there on: 28. Attaching takes
 * the window's blocks alone.
 */
static void
test_window_pool(void)
{
	struct kvb *kv = pool(5, 6);
	int32_t t[64], u[64];
	uint32_t n, got;

	for (int i = 0; i < 64; i++)
		t[i] = u[i] = 7 * i + 1;
	feed(kv, 0, t, 40, 6);
	check(kv);
	kvb_seq_free(kv, 0);
	T_EQ(kvb_stats(kv).cached, 5);
	T_EQ(kvb_match_len(kv, t, 48, NULL, 0, UINT32_MAX), 40);
	T_EQ(kvb_match_len(kv, t, 41, NULL, 0, UINT32_MAX), 40);
	T_EQ(kvb_match_len(kv, t, 40, NULL, 0, UINT32_MAX), 36);
	T_EQ(kvb_match_len(kv, t, 48, NULL, 0, 35), 32);
	T_EQ(kvb_match_len(kv, t, 48, NULL, 0, 28), 28);
	T_EQ(kvb_match_len(kv, t, 48, NULL, 0, 27), 0);
	u[30] = -1;
	T_EQ(kvb_match_len(kv, u, 48, NULL, 0, UINT32_MAX), 28);
	T_EQ(kvb_match_len(kv, t, 48, "tenant", 6, UINT32_MAX), 0);
	T_OK(kvb_seq_match(kv, 1, t, 48, NULL, 0, &got));
	T_EQ(got, 40);
	const uint32_t *tab = kvb_seq_table(kv, 1, &n);
	T_TRUE(n == 10 && kvb_seq_first_block(kv, 1) == 8 && tab[7] == KVB_NONE);
	T_TRUE(tab[8] != KVB_NONE && tab[9] != KVB_NONE);
	T_EQ(kvb_stats(kv).used, 2);
	check(kv);
	feed(kv, 1, t, 8, 6); /* on to 48: blocks 10 and 11 evict 5 and 6, the oldest */
	check(kv);
	kvb_seq_free(kv, 1);
	T_ERR(kvb_seq_resume(kv, 0, t, 28, NULL, 0), ORCH_ENOTFOUND);
	T_EQ(kvb_stats(kv).used, 0);
	T_OK(kvb_seq_resume(kv, 0, t, 44, NULL, 0));
	T_TRUE(kvb_seq_len(kv, 0) == 44 && kvb_seq_first_block(kv, 0) == 9);
	T_EQ(kvb_stats(kv).used, 2);
	check(kv);
	kvb_free(kv);
}

/* A window wider than what was fed: the whole prefix is the window; resuming needs it all. */
static void
test_window_wide(void)
{
	struct kvb *kv = pool(8, 64);
	int32_t t[20];

	for (int i = 0; i < 20; i++)
		t[i] = i;
	feed(kv, 0, t, 20, 64);
	kvb_seq_free(kv, 0);
	T_EQ(kvb_match_len(kv, t, 20, NULL, 0, UINT32_MAX), 16);
	T_OK(kvb_seq_resume(kv, 0, t, 16, NULL, 0));
	T_EQ(kvb_seq_first_block(kv, 0), 0);
	T_EQ(kvb_stats(kv).used, 4);
	check(kv);
	kvb_free(kv);
}

/*
 * Eviction in a window pool goes by age alone (window 8, blocks of 4, 12 blocks):
 * a 40-token sequence can resume at 40; an unrelated 24-token one then takes
 * 6 blocks, evicting the 4 oldest (the first sequence's blocks 0..3, released
 * first), not its last window (leaves first would evict blocks 6..9).
 */
static void
test_window_lru(void)
{
	struct kvb *kv = pool(12, 8);
	int32_t t[48], u[48];

	for (int i = 0; i < 48; i++) {
		t[i] = 3 * i;
		u[i] = 1000 + i;
	}
	feed(kv, 0, t, 40, 0); /* kept whole: 10 blocks, released in order at the free */
	kvb_seq_free(kv, 0);
	T_EQ(kvb_match_len(kv, t, 48, NULL, 0, UINT32_MAX), 40);
	feed(kv, 1, u, 24, 0);
	T_EQ(kvb_stats(kv).evictions, 4);
	T_EQ(kvb_match_len(kv, t, 48, NULL, 0, UINT32_MAX), 40);
	kvb_seq_free(kv, 1);
	check(kv);
	kvb_free(kv);
}

/* A window of one position: a query sees itself alone, so any length resumes. */
static void
test_window_one(void)
{
	struct kvb *kv = pool(4, 1);
	int32_t t[24];

	for (int i = 0; i < 24; i++)
		t[i] = i + 5;
	feed(kv, 0, t, 20, 1);
	kvb_seq_free(kv, 0);
	T_EQ(kvb_match_len(kv, t, 24, NULL, 0, UINT32_MAX), 20);
	T_OK(kvb_seq_resume(kv, 0, t, 16, NULL, 0));
	T_EQ(kvb_stats(kv).used, 0); /* nothing to attach */
	check(kv);
	kvb_free(kv);
}

/*
 * be_check_batch: one sequence at position 20, one token, blocks of 4, a window
 * of 8 (it reads positions 13..20: its window table may start at block 3, not 4),
 * a full table from block 0 (never later), every block in its pool.
 */
static void
test_check_tables(void)
{
	struct be_config cfg = {.slots = 2,
	                        .n_ctx = 64,
	                        .max_batch_tokens = 8,
	                        .kv_blocks = 8,
	                        .kv_block_tokens = 4,
	                        .kv_swa_blocks = 6};
	uint32_t full[6] = {0, 1, 2, 3, 4, 5}, win[6] = {KVB_NONE, KVB_NONE, KVB_NONE, 1, 2, 3};
	int32_t tok = 7;
	struct be_seq q = {.slot = 1,
	                   .pos = 20,
	                   .tokens = &tok,
	                   .n_tokens = 1,
	                   .blocks = full,
	                   .n_blocks = 6,
	                   .swa_blocks = win,
	                   .n_swa_blocks = 6,
	                   .swa_first_block = 3};
	struct orch_errinfo ei = {0};
	uint32_t T;

	T_OK(be_check_batch(&cfg, 100, 8, &q, 1, &T, NULL));
	T_EQ(T, 1);
	q.swa_first_block = 4; /* position 13 is in block 3 */
	T_ERR(be_check_batch(&cfg, 100, 8, &q, 1, &T, &ei), ORCH_EINVAL);
	T_TRUE(strstr(ei.msg, "sliding-window block table") != NULL);
	q.swa_first_block = 3;
	win[5] = 6; /* outside the window pool */
	T_ERR(be_check_batch(&cfg, 100, 8, &q, 1, &T, &ei), ORCH_EINVAL);
	T_TRUE(strstr(ei.msg, "not in the sliding-window pool") != NULL);
	win[5] = 3;
	q.swa_blocks = NULL;
	T_ERR(be_check_batch(&cfg, 100, 8, &q, 1, &T, NULL), ORCH_EINVAL);
	q.swa_blocks = win;
	q.first_block = 1; /* full attention reads from position 0 */
	T_ERR(be_check_batch(&cfg, 100, 8, &q, 1, &T, NULL), ORCH_EINVAL);
	q.first_block = 0;
	q.n_swa_blocks = 5; /* position 20 is in entry 5 */
	T_ERR(be_check_batch(&cfg, 100, 8, &q, 1, &T, NULL), ORCH_EINVAL);
	q.n_swa_blocks = 6;
	cfg.kv_swa_blocks = 0; /* rings: the window table is not looked at */
	q.swa_blocks = NULL;
	T_OK(be_check_batch(&cfg, 100, 8, &q, 1, &T, NULL));
}

int
main(void)
{
	T_RUN(test_full_pool);
	T_RUN(test_window_pool);
	T_RUN(test_window_wide);
	T_RUN(test_window_lru);
	T_RUN(test_window_one);
	T_RUN(test_check_tables);
	return t_done();
}
