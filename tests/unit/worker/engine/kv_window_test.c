/*
 * kv_window_test.c - the block pool's resumable prefixes (worker/engine/kv_blocks.h):
 * kvb_match_len and kvb_seq_resume in a full-attention pool (every leading block, a
 * limit, a block not cached) and in a sliding-window pool, where a sequence resumes
 * after a length whose window is cached however many earlier blocks were evicted, and
 * attaches those blocks alone.
 */
#include <stdint.h>

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

int
main(void)
{
	T_RUN(test_full_pool);
	T_RUN(test_window_pool);
	T_RUN(test_window_wide);
	return t_done();
}
