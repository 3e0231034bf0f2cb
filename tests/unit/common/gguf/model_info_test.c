/*
 * model_info_test.c - the memory estimate's KV cache: full-attention layers
 * hold n_ctx cells a sequence, gpt-oss's sliding-window layers a ring of
 * model_swa_cells() (window + the worker's default step of 512 + slots
 * tokens), read from the keys and the layer pattern as the worker reads
 * them; other architectures' sliding_window keys are not used. With a paged
 * pool (issue 19) the full-attention layers hold blocks instead: by default
 * slots × ceil(n_ctx / block_tokens) of them, or what a byte budget buys.
 */
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "gguf/model_info.h"
#include "t.h"

/* A model's shape keys; swa/pattern 0: the key is absent. */
struct shape {
	const char *arch;
	uint32_t n_layer, swa, pattern;
};

static orch_err
set_keys(struct gguf_writer *w, const struct shape *s)
{
	char k[96];
	orch_err rv = gguf_writer_set_str(w, "general.architecture", s->arch);
	/* gpt-oss-20b's shapes: n_embd 2880, 64 heads, 8 KV heads of 64 */
	static const struct {
		const char *suffix;
		uint32_t v;
	} keys[] = {{"embedding_length", 2880},     {"attention.head_count", 64},
	            {"attention.head_count_kv", 8}, {"attention.key_length", 64},
	            {"feed_forward_length", 2880},  {"context_length", 131072}};

	for (size_t i = 0; rv == ORCH_OK && i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(k, sizeof(k), "%s.%s", s->arch, keys[i].suffix);
		rv = gguf_writer_set_u32(w, k, keys[i].v);
	}
	snprintf(k, sizeof(k), "%s.block_count", s->arch);
	if (rv == ORCH_OK)
		rv = gguf_writer_set_u32(w, k, s->n_layer);
	snprintf(k, sizeof(k), "%s.attention.sliding_window", s->arch);
	if (rv == ORCH_OK && s->swa)
		rv = gguf_writer_set_u32(w, k, s->swa);
	snprintf(k, sizeof(k), "%s.attention.sliding_window_pattern", s->arch);
	if (rv == ORCH_OK && s->pattern)
		rv = gguf_writer_set_u32(w, k, s->pattern);
	return rv;
}

/* *@mi of a metadata-only file with @s's keys. */
static void
info_of(const struct shape *s, struct model_info *mi)
{
	struct gguf_writer *w = NULL;
	struct gguf_file *f = NULL;
	void *buf = NULL;
	size_t size = 0;

	memset(mi, 0, sizeof(*mi));
	T_OK(gguf_writer_new(&w));
	T_OK(set_keys(w, s));
	T_OK(gguf_writer_write_mem(w, NULL, NULL, &buf, &size, NULL));
	T_OK(gguf_open_mem(buf, size, "mem", &f, NULL));
	T_OK(model_info_get(f, mi, NULL));
	gguf_close(f);
	gguf_writer_free(w);
	orch_free(buf);
}

static void
test_swa_cells(void)
{
	T_EQ(model_swa_cells(4096, 128, 513), 641);
	T_EQ(model_swa_cells(642, 128, 513), 641);
	T_EQ(model_swa_cells(641, 128, 513), 641); /* not smaller: n_ctx */
	T_EQ(model_swa_cells(512, 128, 513), 512);
	T_EQ(model_swa_cells(4096, 0, 513), 4096); /* no window */
	T_EQ(model_swa_cells(UINT32_MAX, UINT32_MAX, UINT32_MAX), UINT32_MAX);
}

/* gpt-oss-20b: 24 layers, the even ones sliding over 128 positions; F16 K and V. */
static void
test_gpt_oss_20b(void)
{
	const struct shape s = {"gpt-oss", 24, 128, 0};
	const uint64_t cell = 2 * 8 * 64 * 2; /* K and V of one position in one layer */
	struct model_info mi;
	struct mem_estimate e;

	info_of(&s, &mi);
	T_TRUE(mi.has_hparams);
	T_EQ(mi.n_swa, 128);
	T_EQ(mi.swa_pattern, 2);
	T_EQ(mi.n_layer_swa, 12);
	mi.weight_bytes = 1000;
	mi.n_vocab = 201088;
	for (uint32_t ctx = 4096; ctx <= 131072; ctx *= 2) {
		T_OK(model_mem_estimate(&mi, ctx, 1, 2, &e));
		T_EQ(e.swa_cells, 128 + 512 + 1);
		T_EQ(e.kv_full, 12 * cell * ctx);
		T_EQ(e.kv_swa, 12 * cell * 641);
		T_EQ(e.kv, e.kv_full + e.kv_swa);
		T_EQ(e.total, e.weights + e.kv + e.overhead);
	}
	T_OK(model_mem_estimate(&mi, 4096, 4, 2, &e)); /* 4 slots: a step of 512 + 4 */
	T_EQ(e.swa_cells, 644);
	T_EQ(e.kv_swa, 4 * 12 * cell * 644);
	T_EQ(e.kv_full, 4 * 12 * cell * 4096);
	T_OK(model_mem_estimate(&mi, 600, 1, 2, &e)); /* the ring would not be smaller */
	T_EQ(e.swa_cells, 600);
	T_EQ(e.kv, 24 * cell * 600);
}

static void
test_patterns(void)
{
	struct model_info mi;
	struct mem_estimate e;
	const struct shape p3 = {"gpt-oss", 24, 128, 3}, p1 = {"gpt-oss", 24, 128, 1};
	const struct shape phi3 = {"phi3", 32, 2047, 0}, none = {"gpt-oss", 24, 0, 0};

	info_of(&p3, &mi); /* il % 3 < 2: two of every three */
	T_EQ(mi.n_layer_swa, 16);
	info_of(&p1, &mi); /* il % 1 < 0: none */
	T_EQ(mi.n_layer_swa, 0);
	info_of(&phi3, &mi); /* phi3's key is written by the converter, not used by the worker */
	T_EQ(mi.n_swa, 0);
	T_EQ(mi.n_layer_swa, 0);
	T_OK(model_mem_estimate(&mi, 4096, 1, 2, &e));
	T_EQ(e.kv_swa, 0);
	T_EQ(e.swa_cells, 0);
	T_EQ(e.kv, e.kv_full);
	info_of(&none, &mi); /* no window key: every layer full */
	T_EQ(mi.n_layer_swa, 0);
	T_TRUE(mi.has_hparams);
	/* gemma3: five local layers, then a global one, unless the file says (26 layers: 22) */
	const struct shape g = {"gemma3", 26, 512, 0}, g2 = {"gemma3", 26, 512, 2};
	info_of(&g, &mi);
	T_EQ(mi.n_swa, 512);
	T_EQ(mi.n_layer_swa, 22);
	T_OK(model_mem_estimate(&mi, 4096, 1, 2, &e));
	T_EQ(e.kv_token_bytes, 4ull * 2 * 8 * 64 * 2); /* the 4 global layers' K and V */
	T_EQ(e.kv_full, e.kv_token_bytes * 4096);
	T_TRUE(e.kv_swa > 0 && e.kv < 26ull * 2 * 8 * 64 * 2 * 4096); /* less than all global */
	info_of(&g2, &mi);
	T_EQ(mi.n_layer_swa, 13);
}

/* Overflow is ORCH_ERANGE and leaves the result alone; a non-integer window key is an error. */
static void
test_errors(void)
{
	const struct shape s = {"gpt-oss", 24, 128, 0};
	struct model_info mi;
	struct mem_estimate e = {.kv = 7};
	struct gguf_writer *w = NULL;
	struct gguf_file *f = NULL;
	struct orch_errinfo err = {0};
	void *buf = NULL;
	size_t size = 0;

	info_of(&s, &mi);
	T_ERR(model_mem_estimate(&mi, UINT32_MAX, UINT32_MAX, UINT32_MAX, &e), ORCH_ERANGE);
	T_EQ(e.kv, 7);
	T_OK(gguf_writer_new(&w));
	T_OK(set_keys(w, &(struct shape){"gpt-oss", 24, 0, 0}));
	T_OK(gguf_writer_set_str(w, "gpt-oss.attention.sliding_window", "128"));
	T_OK(gguf_writer_write_mem(w, NULL, NULL, &buf, &size, NULL));
	T_OK(gguf_open_mem(buf, size, "mem", &f, NULL));
	T_ERR(model_info_get(f, &mi, &err), ORCH_ETYPE);
	T_TRUE(strstr(err.msg, "gpt-oss.attention.sliding_window") != NULL);
	gguf_close(f);
	gguf_writer_free(w);
	orch_free(buf);
}

/* 4 full-attention layers of 8 KV heads of 64: K and V of a position, F16. */
#define TOKEN_BYTES_4 (2ull * 4 * 8 * 64 * 2)

static void
test_block_bytes(void)
{
	const struct shape llama = {"llama", 4, 0, 0}, oss = {"gpt-oss", 24, 128, 0};
	struct model_info mi;

	info_of(&llama, &mi);
	T_EQ(model_kv_block_bytes(&mi, 16, 2), 16 * TOKEN_BYTES_4); /* 128 KiB */
	T_EQ(model_kv_block_bytes(&mi, 16, 4), 32 * TOKEN_BYTES_4); /* F32 */
	T_EQ(model_kv_block_bytes(&mi, 1, 2), TOKEN_BYTES_4);
	T_EQ(model_kv_block_bytes(&mi, 0, 2), 0);
	info_of(&oss, &mi); /* gpt-oss-20b: 12 full layers, 24 KiB a position */
	T_EQ(model_kv_block_bytes(&mi, 16, 2), 16ull * 24576);
	mi.head_dim = mi.n_head_kv = UINT32_MAX; /* overflow */
	T_EQ(model_kv_block_bytes(&mi, 256, UINT32_MAX), 0);
	mi.has_hparams = false;
	T_EQ(model_kv_block_bytes(&mi, 16, 2), 0);
}

/* The default pool: every slot can fill its context, n_ctx rounded up to whole blocks. */
static void
test_pool_default(void)
{
	const struct shape llama = {"llama", 4, 0, 0};
	struct model_info mi;
	struct mem_estimate plain, e;

	info_of(&llama, &mi);
	mi.weight_bytes = 1000;
	mi.n_vocab = 32000;
	T_OK(model_mem_estimate(&mi, 4096, 3, 2, &plain));
	T_EQ(plain.kv_token_bytes, TOKEN_BYTES_4);
	T_EQ(plain.kv_blocks, 0);
	T_EQ(plain.kv_block_tokens, 0);
	T_EQ(plain.kv_pool_tokens, 0);
	T_OK(model_mem_estimate_kv(&mi, 4096, 3, 2, &(struct mem_kv){0}, &e));
	T_EQ(e.kv_block_tokens, MODEL_DEFAULT_KV_BLOCK_TOKENS);
	T_EQ(e.kv_blocks, 3 * 256);
	T_EQ(e.kv_pool_tokens, 3 * 4096);
	T_EQ(e.kv_full, plain.kv_full); /* a multiple of the block: the same bytes */
	T_EQ(e.kv, plain.kv);
	T_EQ(e.overhead, plain.overhead);
	T_EQ(e.total, plain.total);
	T_OK(model_mem_estimate_kv(&mi, 4096, 3, 2, NULL, &e)); /* NULL: the defaults */
	T_EQ(e.kv_blocks, 3 * 256);
	T_OK(model_mem_estimate_kv(&mi, 1000, 3, 2, NULL, &e)); /* 62.5 blocks a slot */
	T_EQ(e.kv_blocks, 3 * 63);
	T_EQ(e.kv_pool_tokens, 3 * 63 * 16);
	T_EQ(e.kv_full, 3 * 63 * 16 * TOKEN_BYTES_4);
	T_EQ(e.total, e.weights + e.kv + e.overhead);
	T_OK(model_mem_estimate_kv(&mi, 1000, 2, 2, &(struct mem_kv){.block_tokens = 7}, &e));
	T_EQ(e.kv_block_tokens, 7);
	T_EQ(e.kv_blocks, 2 * 143); /* ceil(1000 / 7) */
	T_EQ(e.kv_full, 2 * 143 * 7 * TOKEN_BYTES_4);
}

/* A byte budget: floor(pool / block) blocks, whatever the slots and the context. */
static void
test_pool_budget(void)
{
	const struct shape llama = {"llama", 4, 0, 0};
	const uint64_t block = 16 * TOKEN_BYTES_4;
	struct model_info mi;
	struct mem_estimate e;

	info_of(&llama, &mi);
	T_OK(model_mem_estimate_kv(&mi, 4096, 1, 2, &(struct mem_kv){.pool_bytes = 64ull << 20},
	                           &e));
	T_EQ(e.kv_blocks, 512);
	T_EQ(e.kv_pool_tokens, 512 * 16);
	T_EQ(e.kv_full, 512 * block);
	T_EQ(e.kv, e.kv_full);
	T_OK(model_mem_estimate_kv(&mi, 4096, 8, 2,
	                           &(struct mem_kv){.pool_bytes = (64ull << 20) + block - 1}, &e));
	T_EQ(e.kv_blocks, 512); /* a partial block buys nothing */
	T_EQ(e.kv_full, 512 * block);
	T_OK(model_mem_estimate_kv(&mi, 4096, 1, 4,
	                           &(struct mem_kv){.pool_bytes = 64ull << 20, .block_tokens = 256},
	                           &e));
	T_EQ(e.kv_blocks, 16); /* F32, 256 positions: 8 MiB blocks */
	T_EQ(e.kv_pool_tokens, 16 * 256);
	T_OK(model_mem_estimate_kv(&mi, 4096, 1, 2, &(struct mem_kv){.pool_bytes = block - 1}, &e));
	T_EQ(e.kv_blocks, 0);
	T_EQ(e.kv_full, 0);
}

/* gpt-oss: the pool holds the 12 full layers; the 12 sliding layers keep a ring a slot. */
static void
test_pool_swa(void)
{
	const struct shape s = {"gpt-oss", 24, 128, 0};
	const uint64_t cell = 2 * 8 * 64 * 2;
	struct model_info mi;
	struct mem_estimate plain, e;

	info_of(&s, &mi);
	T_OK(model_mem_estimate(&mi, 4096, 4, 2, &plain));
	T_OK(model_mem_estimate_kv(&mi, 4096, 4, 2, NULL, &e));
	T_EQ(e.kv_token_bytes, 12 * cell);
	T_EQ(e.kv_blocks, 4 * 256);
	/* the window's pool: 4 × model_swa_blocks = ceil((128 + 516 - 2) / 16) + 1 = 42 blocks
	 * each, where the rings have 128 + 516 = 644 cells */
	T_EQ(plain.swa_cells, 644);
	T_EQ(plain.kv_swa, 4 * 12 * cell * 644);
	T_EQ(model_swa_blocks(4096, 128, 516, 16), 42);
	T_EQ(e.swa_cells, 42 * 16);
	T_EQ(e.kv_swa, 4 * 12 * cell * 42 * 16);
	T_EQ(e.kv_full, plain.kv_full);
	uint64_t paged_swa = e.kv_swa;
	T_OK(model_mem_estimate_kv(&mi, 4096, 4, 2, &(struct mem_kv){.pool_bytes = 16ull << 20},
	                           &e));
	T_EQ(e.kv_blocks, (16ull << 20) / (16 * 12 * cell));
	T_EQ(e.kv_full, e.kv_blocks * 16 * 12 * cell);
	T_EQ(e.kv_swa, paged_swa); /* outside the budget */
	T_EQ(e.kv, e.kv_full + e.kv_swa);
}

/* Every layer slides (1 layer, pattern 2): blocks of 0 bytes, no blocks, the window pool alone. */
static void
test_pool_all_sliding(void)
{
	const struct shape s = {"gpt-oss", 1, 128, 0};
	struct model_info mi;
	struct mem_estimate e;

	info_of(&s, &mi);
	T_EQ(mi.n_layer_swa, 1);
	T_EQ(model_kv_block_bytes(&mi, 16, 2), 0);
	T_OK(model_mem_estimate_kv(&mi, 4096, 2, 2, NULL, &e));
	T_EQ(e.kv_token_bytes, 0);
	T_EQ(e.kv_blocks, 0);
	T_EQ(e.kv_pool_tokens, 0);
	T_EQ(e.kv_full, 0);
	T_EQ(e.kv, e.kv_swa);
	T_EQ(e.kv_swa, 2ull * 2 * 8 * 64 * 2 * 41 * 16); /* 2 × ceil(640 / 16) + 1 blocks */
	/* model_swa_blocks: the span's blocks, at most the context's */
	T_EQ(model_swa_blocks(4096, 128, 1, 16), 9); /* 128 positions, unaligned: 9 blocks */
	T_EQ(model_swa_blocks(4096, 1, 1, 16), 1);
	T_EQ(model_swa_blocks(100, 128, 512, 16), 7); /* ceil(100 / 16) */
	T_EQ(model_swa_blocks(4096, 128, 1, 1), 128);
	T_OK(model_mem_estimate_kv(&mi, 4096, 2, 2, &(struct mem_kv){.pool_bytes = 1ull << 30},
	                           &e));
	T_EQ(e.kv_blocks, 0);
}

/* Overflow, a block over 256 positions and a pool past 32-bit cells: ORCH_ERANGE, *ret kept. */
static void
test_pool_errors(void)
{
	const struct shape llama = {"llama", 4, 0, 0};
	struct model_info mi;
	struct mem_estimate e = {.kv = 7};

	info_of(&llama, &mi);
	T_ERR(model_mem_estimate_kv(&mi, 4096, 1, 2, &(struct mem_kv){.block_tokens = 257}, &e),
	      ORCH_ERANGE);
	T_OK(model_mem_estimate_kv(&mi, 4096, 1, 2, &(struct mem_kv){.block_tokens = 256}, &e));
	e.kv = 7;
	T_ERR(model_mem_estimate_kv(&mi, UINT32_MAX, UINT32_MAX, 2, NULL, &e), ORCH_ERANGE);
	/* a budget past what a pool addresses is cut there, not refused */
	T_OK(model_mem_estimate_kv(&mi, 4096, 1, 2, &(struct mem_kv){.pool_bytes = UINT64_MAX},
	                           &e));
	T_TRUE(e.kv_pool_capped && e.kv_pool_tokens == MODEL_MAX_KV_POOL_TOKENS);
	e.kv = 7;
	T_ERR(model_mem_estimate_kv(&mi, UINT32_MAX, UINT32_MAX, UINT32_MAX, NULL, &e),
	      ORCH_ERANGE);
	mi.head_dim = UINT32_MAX; /* a position fits in 64 bits, a block of 256 does not */
	mi.n_head_kv = 1u << 20;
	T_ERR(model_mem_estimate_kv(&mi, 1, 1, 4,
	                            &(struct mem_kv){.pool_bytes = UINT64_MAX, .block_tokens = 256},
	                            &e),
	      ORCH_ERANGE);
	T_EQ(e.kv, 7);
	mi.has_hparams = false;
	T_ERR(model_mem_estimate_kv(&mi, 4096, 1, 2, NULL, &e), ORCH_ENOTFOUND);
}

int
main(void)
{
	T_RUN(test_swa_cells);
	T_RUN(test_gpt_oss_20b);
	T_RUN(test_patterns);
	T_RUN(test_errors);
	T_RUN(test_block_bytes);
	T_RUN(test_pool_default);
	T_RUN(test_pool_budget);
	T_RUN(test_pool_swa);
	T_RUN(test_pool_all_sliding);
	T_RUN(test_pool_errors);
	return t_done();
}
