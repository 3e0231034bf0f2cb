/*
 * kv_blocks_test.c - the paged KV block pool (worker/engine/kv_blocks.h):
 * config limits and an OOM sweep, block sizes 1, 7 and 16, exhaustion
 * leaving the state unchanged, prefix matches with and without salt and
 * under another identity seed, leaves-first LRU eviction order, refcounts
 * after fork and free, copy-on-write reports, drop_before, and a randomized
 * model check against a reference of every block's content (ORCH_TEST_SEED replays).
 */
#include <assert.h>
#include <stdint.h>

#include "base/rng.h"
#include "base/sha256.h"
#include "engine/kv_blocks.h"
#include "t.h"

static struct kvb_config
cfg_of(uint32_t n_blocks, uint32_t bt, uint32_t max_seqs, uint32_t max_tokens)
{
	struct kvb_config c = {.n_blocks = n_blocks,
	                       .block_tokens = bt,
	                       .max_seqs = max_seqs,
	                       .max_seq_tokens = max_tokens,
	                       .prefix_cache = true};
	memset(c.seed, 0x5a, sizeof(c.seed));
	return c;
}

static void
fill(int32_t *t, uint32_t n, int32_t base)
{
	for (uint32_t i = 0; i < n; i++)
		t[i] = base + (int32_t)i;
}

static struct kvb *
must_new(struct kvb_config c)
{
	struct kvb *kv = NULL;
	struct orch_errinfo ei = {0};

	if (kvb_new(&c, &kv, &ei) != ORCH_OK) {
		fprintf(stderr, "kvb_new: %s\n", ei.msg);
		abort();
	}
	return kv;
}

#define T_CHECK(kv)                                                  \
	do {                                                         \
		struct orch_errinfo ei_ = {0};                       \
		orch_err rv_ = kvb_check((kv), &ei_);                \
		if (rv_ != ORCH_OK)                                  \
			fprintf(stderr, "kvb_check: %s\n", ei_.msg); \
		T_OK(rv_);                                           \
	} while (0)

static void
test_config(void)
{
	struct kvb_config c = cfg_of(0, 16, 1, 16);
	struct kvb *kv = NULL;
	struct orch_errinfo ei = {0};

	T_ERR(kvb_new(&c, &kv, &ei), ORCH_EINVAL);
	T_TRUE(strstr(ei.msg, "n_blocks") != NULL);
	c = cfg_of(4, KVB_MAX_BLOCK_TOKENS + 1, 1, 16);
	T_ERR(kvb_new(&c, &kv, NULL), ORCH_EINVAL);
	for (int k = 0; k < 2; k++) {
		c = k ? cfg_of(4, 16, 1, 0) : cfg_of(4, 16, 0, 16);
		T_ERR(kvb_new(&c, &kv, NULL), ORCH_EINVAL);
	}
	T_TRUE(kv == NULL);
	c = cfg_of(4, 0, 1, 16);
	T_OK(kvb_new(&c, &kv, NULL));
	T_EQ(kvb_block_tokens(kv), KVB_DEFAULT_BLOCK_TOKENS);
	struct kvb_stats st = kvb_stats(kv);
	T_TRUE(st.total == 4 && st.free == 4 && st.used + st.cached == 0);
	kvb_free(kv);
	kvb_free(NULL);
}

static orch_err
new_and_free(void *ctx)
{
	struct kvb_config *c = ctx;
	struct kvb *kv = NULL;
	orch_err rv = kvb_new(c, &kv, NULL);

	kvb_free(kv);
	return rv;
}

static void
test_oom(void)
{
	struct kvb_config c = cfg_of(64, 16, 4, 256);

	T_TRUE(t_oom_loop(new_and_free, &c, 100) > 0);
}

/* Append in uneven chunks and check every position's mapping and the table. */
static void
check_block_size(uint32_t bt)
{
	struct kvb *kv = must_new(cfg_of(128, bt, 2, 200));
	int32_t t[100];
	struct kvb_copy cp;
	uint32_t n, b, off, done = 0;
	static const uint32_t chunks[] = {1, 2, 7, 16, 17, 3, 54};

	fill(t, 100, 1000);
	for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
		T_OK(kvb_seq_append(kv, 0, t + done, chunks[k], &cp, NULL));
		T_EQ(cp.n_tokens, 0);
		done += chunks[k];
		T_EQ(kvb_seq_len(kv, 0), done);
		const uint32_t *tab = kvb_seq_table(kv, 0, &n);
		T_EQ(n, (done + bt - 1) / bt);
		T_EQ(kvb_stats(kv).used, n);
		for (uint32_t p = 0; p < done; p++) {
			T_OK(kvb_seq_pos(kv, 0, p, &b, &off));
			T_EQ(b, tab[p / bt]);
			T_EQ(off, p % bt);
		}
		T_ERR(kvb_seq_pos(kv, 0, done, &b, &off), ORCH_ERANGE);
		T_CHECK(kv);
	}
	/* every full block is cached under a key, the partial one is not */
	const uint32_t *tab = kvb_seq_table(kv, 0, &n);
	for (uint32_t i = 0; i < n; i++) {
		struct kvb_block_info bi = kvb_block_info(kv, tab[i]);
		T_EQ(bi.ref, 1);
		T_EQ(bi.cached, (i + 1) * bt <= done);
		if (bi.cached)
			T_EQ(kvb_lookup(kv, bi.key), tab[i]);
	}
	kvb_seq_free(kv, 0);
	T_TRUE(kvb_seq_len(kv, 0) == 0 && kvb_stats(kv).used == 0);
	T_EQ(kvb_stats(kv).cached, done / bt);
	T_CHECK(kv);
	kvb_free(kv);
}

static void
test_block_sizes(void)
{
	check_block_size(1);
	check_block_size(16);
	check_block_size(7);
}

static void
test_exhaustion(void)
{
	struct kvb *kv = must_new(cfg_of(4, 4, 2, 20));
	int32_t t[24];
	struct kvb_copy cp;
	struct orch_errinfo ei = {0};
	uint32_t n;

	fill(t, 24, 1);
	T_OK(kvb_seq_append(kv, 0, t, 10, &cp, NULL)); /* 3 blocks */
	T_EQ(kvb_seq_blocks_needed(kv, 1, 8), 2);
	T_EQ(kvb_available(kv), 1);
	struct kvb_stats before = kvb_stats(kv);
	T_ERR(kvb_seq_append(kv, 1, t, 8, &cp, &ei), ORCH_EVRAM);
	T_TRUE(strstr(ei.msg, "2 blocks needed") != NULL);
	T_EQ(kvb_seq_len(kv, 1), 0);
	kvb_seq_table(kv, 1, &n);
	T_EQ(n, 0);
	struct kvb_stats after = kvb_stats(kv);
	T_TRUE(after.used == before.used && after.free == before.free &&
	       after.cached == before.cached);
	T_CHECK(kv);
	/* seq 0 grows into its partial block and the last free one, then no more */
	T_OK(kvb_seq_append(kv, 0, t + 10, 6, &cp, NULL));
	T_EQ(kvb_available(kv), 0);
	T_ERR(kvb_seq_append(kv, 0, t + 16, 1, &cp, NULL), ORCH_EVRAM);
	T_EQ(kvb_seq_len(kv, 0), 16);
	/* the context limit is its own error */
	kvb_seq_free(kv, 0);
	T_ERR(kvb_seq_append(kv, 0, t, 21, &cp, &ei), ORCH_ECONTEXT);
	T_OK(kvb_seq_append(kv, 0, t, 0, &cp, NULL));
	T_ERR(kvb_seq_append(kv, 2, t, 1, &cp, NULL), ORCH_EINVAL);
	T_CHECK(kv);
	kvb_free(kv);
}

static void
test_match(void)
{
	struct kvb *kv = must_new(cfg_of(16, 16, 3, 128));
	int32_t t[64];
	struct kvb_copy cp;
	uint32_t got, n;

	fill(t, 64, 7);
	T_OK(kvb_seq_match(kv, 0, t, 40, NULL, 0, &got));
	T_EQ(got, 0);
	T_OK(kvb_seq_append(kv, 0, t, 40, &cp, NULL));
	/* a live sequence's blocks match too (shared, ref 2) */
	T_OK(kvb_seq_match(kv, 1, t, 40, NULL, 0, &got));
	T_EQ(got, 32);
	const uint32_t *a = kvb_seq_table(kv, 0, &n);
	const uint32_t *b = kvb_seq_table(kv, 1, &n);
	T_EQ(n, 2);
	T_EQ(a[0], b[0]);
	T_EQ(a[1], b[1]);
	T_EQ(kvb_block_info(kv, a[0]).ref, 2);
	T_OK(kvb_seq_append(kv, 1, t + 32, 8, &cp, NULL));
	T_EQ(cp.n_tokens, 0);
	T_ERR(kvb_seq_match(kv, 1, t, 40, NULL, 0, &got), ORCH_EINVAL); /* not empty */
	kvb_seq_free(kv, 0);
	kvb_seq_free(kv, 1);
	T_EQ(kvb_stats(kv).cached, 2);
	/* exactly two blocks of prompt: one block is left to compute */
	T_OK(kvb_seq_match(kv, 0, t, 32, NULL, 0, &got));
	T_EQ(got, 16);
	kvb_seq_free(kv, 0);
	T_OK(kvb_seq_match(kv, 0, t, 33, NULL, 0, &got));
	T_EQ(got, 32);
	kvb_seq_free(kv, 0);
	T_OK(kvb_seq_match(kv, 0, t, 1, NULL, 0, &got));
	T_EQ(got, 0);
	kvb_seq_free(kv, 0);
	/* another first token: no hit; a salted request: no hit */
	t[0] = 99999;
	T_OK(kvb_seq_match(kv, 0, t, 40, NULL, 0, &got));
	T_EQ(got, 0);
	kvb_seq_free(kv, 0);
	t[0] = 7;
	T_OK(kvb_seq_match(kv, 0, t, 40, "tenant-a", 8, &got));
	T_EQ(got, 0);
	T_OK(kvb_seq_append(kv, 0, t, 40, &cp, NULL)); /* registered under tenant-a */
	kvb_seq_free(kv, 0);
	T_OK(kvb_seq_match(kv, 0, t, 40, "tenant-b", 8, &got));
	T_EQ(got, 0);
	kvb_seq_free(kv, 0);
	T_OK(kvb_seq_match(kv, 0, t, 40, "tenant-a", 8, &got));
	T_EQ(got, 32);
	kvb_seq_free(kv, 0);
	T_OK(kvb_seq_match(kv, 0, t, 40, NULL, 0, &got));
	T_EQ(got, 32); /* the unsalted copy is still cached */
	kvb_seq_free(kv, 0);
	struct kvb_stats st = kvb_stats(kv);
	T_EQ(st.query_tokens, 40 + 40 + 32 + 33 + 1 + 40 + 40 + 40 + 40 + 40);
	T_EQ(st.hit_tokens, 32 + 16 + 32 + 32 + 32);
	T_EQ(st.cached, 4);
	T_CHECK(kv);
	kvb_free(kv);
}

static void
test_seed_and_off(void)
{
	struct kvb_config c = cfg_of(8, 4, 2, 64);
	struct kvb *x = must_new(c), *y, *z;
	int32_t t[12];
	struct kvb_copy cp;
	uint32_t got, n;

	c.seed[0] ^= 1;
	y = must_new(c);
	c.prefix_cache = false;
	z = must_new(c);
	fill(t, 12, 3);
	T_OK(kvb_seq_append(x, 0, t, 12, &cp, NULL));
	T_OK(kvb_seq_append(y, 0, t, 12, &cp, NULL));
	const uint32_t *tx = kvb_seq_table(x, 0, &n);
	const uint32_t *ty = kvb_seq_table(y, 0, &n);
	struct kvb_block_info bx = kvb_block_info(x, tx[0]), by = kvb_block_info(y, ty[0]);
	T_TRUE(bx.cached && by.cached);
	T_TRUE(memcmp(bx.key, by.key, KVB_KEY_BYTES) != 0);
	T_EQ(kvb_lookup(y, bx.key), KVB_NONE);
	/* with the cache off nothing is keyed and nothing matches */
	T_OK(kvb_seq_append(z, 0, t, 12, &cp, NULL));
	T_EQ(kvb_block_info(z, 0).cached, false);
	kvb_seq_free(z, 0);
	T_EQ(kvb_stats(z).free, 8);
	T_OK(kvb_seq_match(z, 0, t, 12, NULL, 0, &got));
	T_EQ(got, 0);
	T_EQ(kvb_stats(z).query_tokens, 0);
	kvb_free(x);
	kvb_free(y);
	kvb_free(z);
}

/* key_of - the key block @i of @seq was registered under. */
static void
key_of(struct kvb *kv, uint32_t seq, uint32_t i, uint8_t key[KVB_KEY_BYTES])
{
	uint32_t n;
	const uint32_t *tab = kvb_seq_table(kv, seq, &n);

	memcpy(key, kvb_block_info(kv, tab[i]).key, KVB_KEY_BYTES);
}

static void
test_lru_leaves_first(void)
{
	struct kvb *kv = must_new(cfg_of(6, 2, 3, 64));
	int32_t a[6], b[4], c[12];
	uint8_t ka[3][KVB_KEY_BYTES], kb[2][KVB_KEY_BYTES];
	struct kvb_copy cp;
	fill(a, 6, 100);
	fill(b, 4, 200);
	fill(c, 12, 300);
	T_OK(kvb_seq_append(kv, 0, a, 6, &cp, NULL)); /* a0 <- a1 <- a2 */
	T_OK(kvb_seq_append(kv, 1, b, 4, &cp, NULL)); /* b0 <- b1 */
	for (uint32_t i = 0; i < 3; i++)
		key_of(kv, 0, i, ka[i]);
	for (uint32_t i = 0; i < 2; i++)
		key_of(kv, 1, i, kb[i]);
	T_EQ(kvb_block_info(kv, kvb_lookup(kv, ka[0])).children, 1);
	T_EQ(kvb_block_info(kv, kvb_lookup(kv, ka[2])).children, 0);
	kvb_seq_free(kv, 0); /* a released before b: older */
	kvb_seq_free(kv, 1);
	T_EQ(kvb_stats(kv).cached, 5);
	T_EQ(kvb_stats(kv).free, 1);
	/* one block per append: the free one, then leaves oldest first */
	const uint8_t *order[] = {NULL, ka[2], ka[1], ka[0], kb[1], kb[0]};
	for (uint32_t k = 0; k < 6; k++) {
		T_OK(kvb_seq_append(kv, 2, c + 2 * k, 2, &cp, NULL));
		if (order[k] != NULL)
			T_EQ(kvb_lookup(kv, order[k]), KVB_NONE);
		for (uint32_t j = k + 1; j < 6; j++)
			T_TRUE(kvb_lookup(kv, order[j]) != KVB_NONE);
		T_CHECK(kv);
	}
	T_EQ(kvb_stats(kv).evictions, 5);
	T_EQ(kvb_stats(kv).used, 6);
	kvb_free(kv);
}

static void
test_fork_cow(void)
{
	struct kvb *kv = must_new(cfg_of(8, 4, 3, 64));
	int32_t t[16];
	struct kvb_copy cp;
	uint32_t n, x, y;

	fill(t, 16, 50);
	T_OK(kvb_seq_append(kv, 0, t, 6, &cp, NULL));
	const uint32_t *t0 = kvb_seq_table(kv, 0, &n);
	x = t0[0];
	y = t0[1];
	T_OK(kvb_seq_fork(kv, 1, 0));
	T_EQ(kvb_seq_len(kv, 1), 6);
	T_EQ(kvb_block_info(kv, x).ref, 2);
	T_EQ(kvb_block_info(kv, y).ref, 2);
	T_ERR(kvb_seq_fork(kv, 1, 0), ORCH_EINVAL); /* dst not empty */
	T_ERR(kvb_seq_fork(kv, 0, 0), ORCH_EINVAL);
	T_ERR(kvb_seq_fork(kv, 3, 0), ORCH_EINVAL);
	T_EQ(kvb_seq_blocks_needed(kv, 1, 1), 1); /* the copy */
	T_EQ(kvb_seq_blocks_needed(kv, 1, 3), 2);
	T_OK(kvb_seq_append(kv, 1, t + 6, 1, &cp, NULL));
	T_EQ(cp.src, y);
	T_EQ(cp.n_tokens, 2);
	T_TRUE(cp.dst != y && cp.dst != x);
	const uint32_t *t1 = kvb_seq_table(kv, 1, &n);
	T_EQ(t1[0], x);
	T_EQ(t1[1], cp.dst);
	T_EQ(kvb_block_info(kv, y).ref, 1);
	T_EQ(kvb_block_info(kv, cp.dst).ref, 1);
	T_OK(kvb_seq_append(kv, 0, t + 6, 1, &cp, NULL)); /* y is private again */
	T_EQ(cp.n_tokens, 0);
	/* both fill block 1 with the same tokens: one is cached, one stays private */
	T_OK(kvb_seq_append(kv, 0, t + 7, 1, &cp, NULL));
	T_OK(kvb_seq_append(kv, 1, t + 7, 1, &cp, NULL));
	T_TRUE(kvb_block_info(kv, y).cached);
	T_EQ(kvb_block_info(kv, t1[1]).cached, false);
	/* a fork at a block boundary copies nothing */
	T_OK(kvb_seq_fork(kv, 2, 0));
	T_OK(kvb_seq_append(kv, 2, t + 8, 3, &cp, NULL));
	T_EQ(cp.n_tokens, 0);
	kvb_seq_free(kv, 0);
	T_EQ(kvb_block_info(kv, x).ref, 2);
	T_EQ(kvb_block_info(kv, y).ref, 1);
	kvb_seq_free(kv, 1);
	kvb_seq_free(kv, 2);
	T_EQ(kvb_stats(kv).used, 0);
	T_EQ(kvb_stats(kv).cached, 2); /* x and y */
	T_CHECK(kv);
	kvb_free(kv);
}

static void
test_drop_before(void)
{
	struct kvb *kv = must_new(cfg_of(5, 4, 2, 64));
	int32_t t[24];
	struct kvb_copy cp;
	uint32_t n, b, off;

	fill(t, 24, 9);
	T_OK(kvb_seq_append(kv, 0, t, 10, &cp, NULL));
	T_ERR(kvb_seq_drop_before(kv, 0, 11), ORCH_EINVAL);
	T_OK(kvb_seq_drop_before(kv, 0, 3)); /* block 0 still holds 3 */
	T_EQ(kvb_seq_first_block(kv, 0), 0);
	T_OK(kvb_seq_drop_before(kv, 0, 5));
	T_EQ(kvb_seq_first_block(kv, 0), 1);
	const uint32_t *tab = kvb_seq_table(kv, 0, &n);
	T_EQ(n, 3);
	T_EQ(tab[0], KVB_NONE);
	T_ERR(kvb_seq_pos(kv, 0, 3, &b, &off), ORCH_ERANGE);
	T_OK(kvb_seq_pos(kv, 0, 4, &b, &off));
	T_EQ(kvb_seq_len(kv, 0), 10);
	/* block 0 is cached-free but inner: block 1 (in use) names it as parent */
	T_EQ(kvb_stats(kv).cached, 1);
	T_OK(kvb_seq_drop_before(kv, 0, 2)); /* backwards: nothing */
	T_EQ(kvb_seq_first_block(kv, 0), 1);
	T_CHECK(kv);
	/* the window moves on while the sequence grows; freed blocks get reused */
	for (uint32_t p = 10; p < 24; p++) {
		T_OK(kvb_seq_append(kv, 0, t + p, 1, &cp, NULL));
		T_OK(kvb_seq_drop_before(kv, 0, p + 1 - 6));
		T_CHECK(kv);
	}
	T_EQ(kvb_seq_first_block(kv, 0), (24 - 6) / 4);
	/* drop all (at a block boundary) and keep going */
	T_OK(kvb_seq_drop_before(kv, 0, 24));
	T_EQ(kvb_stats(kv).used, 0);
	T_OK(kvb_seq_append(kv, 0, t, 2, &cp, NULL));
	T_OK(kvb_seq_pos(kv, 0, 25, &b, &off));
	T_EQ(off, 1);
	kvb_seq_free(kv, 0);
	T_EQ(kvb_stats(kv).used, 0);
	T_CHECK(kv);
	kvb_free(kv);
}

/* An inner block whose child is in use is evicted when nothing else is left. */
static void
test_evict_inner(void)
{
	struct kvb *kv = must_new(cfg_of(3, 2, 2, 64));
	int32_t t[8];
	struct kvb_copy cp;
	uint8_t k0[KVB_KEY_BYTES], k1[KVB_KEY_BYTES];
	uint32_t got;

	fill(t, 8, 1);
	T_OK(kvb_seq_append(kv, 0, t, 4, &cp, NULL));
	key_of(kv, 0, 0, k0);
	key_of(kv, 0, 1, k1);
	T_OK(kvb_seq_drop_before(kv, 0, 2));
	T_OK(kvb_seq_append(kv, 1, t + 4, 4, &cp, NULL)); /* the free block, then block 0 */
	T_EQ(kvb_lookup(kv, k0), KVB_NONE);
	T_TRUE(kvb_lookup(kv, k1) != KVB_NONE); /* an orphan now */
	T_CHECK(kv);
	kvb_seq_free(kv, 1);
	kvb_seq_free(kv, 0);
	/* the prefix comes back in a new block; its orphan is reachable again */
	T_OK(kvb_seq_match(kv, 0, t, 5, NULL, 0, &got));
	T_EQ(got, 0);
	T_OK(kvb_seq_append(kv, 0, t, 2, &cp, NULL));
	kvb_seq_free(kv, 0);
	T_OK(kvb_seq_match(kv, 0, t, 5, NULL, 0, &got));
	T_EQ(got, 4);
	kvb_seq_free(kv, 0);
	T_CHECK(kv);
	kvb_free(kv);
}

/* ---- the randomized model check ----------------------------------------------- */

#define M_SEQS   6
#define M_MAXTOK 160
#define M_BLOCKS 48
#define M_BT_MAX 16
#define M_REG    (1u << 15)

struct m_reg {
	uint8_t key[KVB_KEY_BYTES];
	int32_t tok[M_BT_MAX];
	int salt;
	bool used;
};

/* The reference: what every sequence holds and what every block's rows contain. */
struct model {
	struct kvb *kv;
	uint32_t bt;
	struct rng r;
	uint8_t seed[KVB_SEED_BYTES];
	int32_t prefix[3][M_MAXTOK];
	int32_t tok[M_SEQS][M_MAXTOK];
	uint8_t keys[M_SEQS][M_MAXTOK][KVB_KEY_BYTES]; /* chain key of each full block */
	uint32_t len[M_SEQS], first[M_SEQS];
	int salt[M_SEQS]; /* 0: none, 1: "alpha", 2: "beta" */
	int32_t content[M_BLOCKS][M_BT_MAX];
	int salt_of[M_BLOCKS];
	struct m_reg *reg; /* [M_REG]: every key ever registered, with its block's tokens */
	long op;
};

#define M_REQ(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "model op %ld: %s: ", m->op, #cond); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			return -1;                                           \
		}                                                            \
	} while (0)

static const char *const m_salts[] = {NULL, "alpha", "beta"};

/* m_key - the documented derivation (kv_blocks.h), computed independently. */
static void
m_key(const struct model *m, const uint8_t *parent, int salt, const int32_t *t,
      uint8_t out[KVB_KEY_BYTES])
{
	uint8_t zero[KVB_KEY_BYTES] = {0}, d[SHA256_BYTES], flag = salt != 0;
	struct sha256 h;

	sha256_init(&h);
	sha256_update(&h, m->seed, KVB_SEED_BYTES);
	sha256_update(&h, parent ? parent : zero, KVB_KEY_BYTES);
	sha256_update(&h, &flag, 1);
	if (salt) {
		sha256_buf(m_salts[salt], strlen(m_salts[salt]), d);
		sha256_update(&h, d, SHA256_BYTES);
	}
	for (uint32_t i = 0; i < m->bt; i++) {
		uint8_t le[4] = {(uint8_t)t[i], (uint8_t)((uint32_t)t[i] >> 8),
		                 (uint8_t)((uint32_t)t[i] >> 16), (uint8_t)((uint32_t)t[i] >> 24)};
		sha256_update(&h, le, 4);
	}
	sha256_final(&h, d);
	memcpy(out, d, KVB_KEY_BYTES);
}

static struct m_reg *
m_reg_slot(struct model *m, const uint8_t key[KVB_KEY_BYTES])
{
	uint32_t i;

	memcpy(&i, key, sizeof(i));
	for (i &= M_REG - 1; m->reg[i].used && memcmp(m->reg[i].key, key, KVB_KEY_BYTES) != 0;
	     i = (i + 1) & (M_REG - 1))
		;
	return &m->reg[i];
}

static uint32_t
m_urand(struct model *m, uint32_t n)
{
	return (uint32_t)(rng_next(&m->r) % n);
}

/* m_seal - the model's keys of the blocks of @s filled between @from and len. */
static int
m_seal(struct model *m, uint32_t s, uint32_t from)
{
	for (uint32_t i = from / m->bt; (i + 1) * m->bt <= m->len[s]; i++) {
		m_key(m, i ? m->keys[s][i - 1] : NULL, m->salt[s], m->tok[s] + i * m->bt,
		      m->keys[s][i]);
		struct m_reg *g = m_reg_slot(m, m->keys[s][i]);
		if (!g->used) {
			g->used = true;
			memcpy(g->key, m->keys[s][i], KVB_KEY_BYTES);
			memcpy(g->tok, m->tok[s] + i * m->bt, m->bt * sizeof(int32_t));
			g->salt = m->salt[s];
		}
		M_REQ(memcmp(g->tok, m->tok[s] + i * m->bt, m->bt * 4) == 0, "key collision");
	}
	return 0;
}

static int
m_append(struct model *m, uint32_t s, const int32_t *t, uint32_t n)
{
	uint32_t old = m->len[s], nt, need = kvb_seq_blocks_needed(m->kv, s, n);
	uint32_t avail = kvb_available(m->kv), before[M_MAXTOK], b, off;
	struct kvb_stats st = kvb_stats(m->kv);
	struct kvb_copy cp;
	const uint32_t *tab = kvb_seq_table(m->kv, s, &nt);
	orch_err rv;

	memcpy(before, tab, nt * sizeof(*tab));
	rv = kvb_seq_append(m->kv, s, t, n, &cp, NULL);
	if (rv != ORCH_OK) {
		M_REQ(rv == (old + n > M_MAXTOK ? ORCH_ECONTEXT : ORCH_EVRAM), "%s",
		      orch_err_name(rv));
		M_REQ(rv == ORCH_ECONTEXT || need > avail, "need %u avail %u", need, avail);
		struct kvb_stats st2 = kvb_stats(m->kv);
		tab = kvb_seq_table(m->kv, s, &nt);
		M_REQ(kvb_seq_len(m->kv, s) == old && memcmp(tab, before, nt * 4) == 0 &&
		              st2.used == st.used && st2.cached == st.cached && st2.free == st.free,
		      "state changed by a failed append");
		return 1;
	}
	M_REQ(need <= avail, "need %u avail %u", need, avail);
	if (cp.n_tokens) {
		M_REQ(cp.n_tokens == old % m->bt, "copy of %u rows at len %u", cp.n_tokens, old);
		memcpy(m->content[cp.dst], m->content[cp.src], cp.n_tokens * sizeof(int32_t));
		m->salt_of[cp.dst] = m->salt_of[cp.src];
	}
	for (uint32_t k = 0; k < n; k++) {
		m->tok[s][old + k] = t[k];
		M_REQ(kvb_seq_pos(m->kv, s, old + k, &b, &off) == ORCH_OK, "pos %u", old + k);
		m->content[b][off] = t[k];
		m->salt_of[b] = m->salt[s];
	}
	m->len[s] = old + n;
	return m_seal(m, s, old);
}

static void
m_free(struct model *m, uint32_t s)
{
	kvb_seq_free(m->kv, s);
	m->len[s] = m->first[s] = 0;
	m->salt[s] = 0;
}

/* m_start - a new request on empty @s: match a prompt from a shared prefix, compute the rest. */
static int
m_start(struct model *m, uint32_t s)
{
	int32_t p[M_MAXTOK];
	uint32_t n = m_urand(m, 120), tail = m_urand(m, 30) + 1, got;
	const int32_t *pre = m->prefix[m_urand(m, 3)];

	memcpy(p, pre, n * sizeof(int32_t));
	for (uint32_t i = 0; i < tail; i++)
		p[n + i] = (int32_t)m_urand(m, 40);
	n += tail;
	m->salt[s] = m_urand(m, 4) == 0 ? (int)m_urand(m, 2) + 1 : 0;
	const char *salt = m_salts[m->salt[s]];
	M_REQ(kvb_seq_match(m->kv, s, p, n, salt, salt ? (uint32_t)strlen(salt) : 0, &got) ==
	              ORCH_OK,
	      "match");
	M_REQ(got % m->bt == 0 && got < n && kvb_seq_len(m->kv, s) == got, "got %u of %u", got, n);
	memcpy(m->tok[s], p, got * sizeof(int32_t));
	m->len[s] = got;
	if (m_seal(m, s, 0) < 0)
		return -1;
	if (got / m->bt < (n - 1) / m->bt) { /* the next block must not be cached */
		uint8_t k[KVB_KEY_BYTES];
		m_key(m, got ? m->keys[s][got / m->bt - 1] : NULL, m->salt[s], p + got, k);
		M_REQ(kvb_lookup(m->kv, k) == KVB_NONE, "match stopped at %u of %u", got, n);
	}
	for (uint32_t done = got; done < n;) {
		uint32_t c = m_urand(m, n - done) + 1;
		int rv = m_append(m, s, p + done, c);
		if (rv < 0)
			return -1;
		if (rv > 0) { /* out of blocks: preempt it */
			m_free(m, s);
			return 0;
		}
		done += c;
	}
	return 0;
}

/* m_verify - every sequence reads its own tokens; every cached block holds what its key says. */
static int
m_verify(struct model *m)
{
	struct orch_errinfo ei = {0};
	uint32_t b, off;

	M_REQ(kvb_check(m->kv, &ei) == ORCH_OK, "%s", ei.msg);
	for (uint32_t s = 0; s < M_SEQS; s++) {
		M_REQ(kvb_seq_len(m->kv, s) == m->len[s] &&
		              kvb_seq_first_block(m->kv, s) == m->first[s],
		      "seq %u len/first", s);
		for (uint32_t p = m->first[s] * m->bt; p < m->len[s]; p++) {
			M_REQ(kvb_seq_pos(m->kv, s, p, &b, &off) == ORCH_OK, "seq %u pos %u", s, p);
			M_REQ(m->content[b][off] == m->tok[s][p] && m->salt_of[b] == m->salt[s],
			      "seq %u pos %u: block %u row %u holds %d, want %d", s, p, b, off,
			      m->content[b][off], m->tok[s][p]);
		}
	}
	for (b = 0; b < M_BLOCKS; b++) {
		struct kvb_block_info bi = kvb_block_info(m->kv, b);
		if (!bi.cached)
			continue;
		struct m_reg *g = m_reg_slot(m, bi.key);
		M_REQ(g->used, "block %u: a key nobody registered", b);
		M_REQ(memcmp(g->tok, m->content[b], m->bt * 4) == 0 && g->salt == m->salt_of[b],
		      "block %u: content differs from its key's", b);
	}
	return 0;
}

/* m_step - one random operation. */
static int
m_step(struct model *m)
{
	uint32_t s = m_urand(m, M_SEQS), d = m_urand(m, M_SEQS), op = m_urand(m, 10);
	int32_t t[12];

	if (m->len[s] == 0)
		return m_start(m, s);
	if (op < 4) { /* decode or a chunk, sometimes following a prefix */
		uint32_t n = m_urand(m, 4) ? 1 : m_urand(m, 12) + 1;
		for (uint32_t i = 0; i < n; i++)
			t[i] = (int32_t)m_urand(m, 40);
		if (m_urand(m, 2) && m->len[s] + n < M_MAXTOK)
			memcpy(t, m->prefix[0] + m->len[s], n * sizeof(int32_t));
		int rv = m_append(m, s, t, n);
		if (rv > 0)
			m_free(m, s);
		return rv < 0 ? -1 : 0;
	}
	if (op < 6 && m->len[d] == 0 && d != s) {
		M_REQ(kvb_seq_fork(m->kv, d, s) == ORCH_OK, "fork %u <- %u", d, s);
		memcpy(m->tok[d], m->tok[s], sizeof(m->tok[s]));
		memcpy(m->keys[d], m->keys[s], sizeof(m->keys[s]));
		m->len[d] = m->len[s];
		m->first[d] = m->first[s];
		m->salt[d] = m->salt[s];
		return 0;
	}
	if (op < 8) {
		uint32_t pos = m_urand(m, m->len[s] + 1);
		M_REQ(kvb_seq_drop_before(m->kv, s, pos) == ORCH_OK, "drop %u", pos);
		if (pos / m->bt > m->first[s])
			m->first[s] = pos / m->bt;
		return 0;
	}
	m_free(m, s);
	return 0;
}

/* model_run - @n_ops random operations on a pool of @bt-token blocks; the count, or -1. */
static long
model_run(uint64_t seed, uint32_t bt, long n_ops)
{
	struct model *m = calloc(1, sizeof(*m));
	struct kvb_config c = cfg_of(M_BLOCKS, bt, M_SEQS, M_MAXTOK);
	long rv = n_ops;

	assert(m != NULL && bt <= M_BT_MAX);
	m->reg = calloc(M_REG, sizeof(*m->reg));
	assert(m->reg != NULL);
	rng_seed(&m->r, seed);
	for (uint32_t i = 0; i < KVB_SEED_BYTES; i++)
		c.seed[i] = m->seed[i] = (uint8_t)rng_next(&m->r);
	m->kv = must_new(c);
	m->bt = bt;
	for (uint32_t k = 0; k < 3; k++)
		for (uint32_t i = 0; i < M_MAXTOK; i++)
			m->prefix[k][i] = (int32_t)m_urand(m, 40);
	memcpy(m->prefix[1], m->prefix[0], 2 * sizeof(int32_t)); /* a shared start */
	for (m->op = 0; m->op < n_ops; m->op++) {
		if (m_step(m) < 0 || m_verify(m) < 0) {
			rv = -1;
			break;
		}
	}
	struct kvb_stats st = kvb_stats(m->kv);
	if (rv > 0)
		printf("block_tokens %u: %ld operations, hits %llu of %llu prompt tokens, "
		       "%llu evictions\n",
		       bt, n_ops, (unsigned long long)st.hit_tokens,
		       (unsigned long long)st.query_tokens, (unsigned long long)st.evictions);
	kvb_free(m->kv);
	free(m->reg);
	free(m);
	return rv;
}

static void
test_random(void)
{
	uint64_t seed =
	        getenv("ORCH_TEST_SEED") ? strtoull(getenv("ORCH_TEST_SEED"), NULL, 0) : 20240519;
	static const uint32_t sizes[] = {1, 7, 16};

	printf("kv_blocks random model check: seed %llu (ORCH_TEST_SEED to replay)\n",
	       (unsigned long long)seed);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		long ops = model_run(seed + k, sizes[k], 20000);
		T_EQ(ops, 20000); /* the failing operation is printed above */
	}
}

int
main(void)
{
	T_RUN(test_config);
	T_RUN(test_oom);
	T_RUN(test_block_sizes);
	T_RUN(test_exhaustion);
	T_RUN(test_match);
	T_RUN(test_seed_and_off);
	T_RUN(test_lru_leaves_first);
	T_RUN(test_fork_cow);
	T_RUN(test_drop_before);
	T_RUN(test_evict_inner);
	T_RUN(test_random);
	return t_done();
}
