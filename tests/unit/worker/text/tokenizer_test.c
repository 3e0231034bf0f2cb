/*
 * tokenizer_test.c - conformance on every vocabulary in ../shared/testdata/vocab
 * (46 inputs each, 72 for gpt-oss's o200k; ids exact, no special tokens added, special text not
 * parsed), stories260K with BOS, special-token parsing, and round trips.
 */
#include "t.h"

#include "base/alloc.h"
#include "base/rng.h"
#include "base/utf8.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "text/tokenizer.h"
#include "unit/worker/text/tok_load.h"

/* Split @inp on the separator; the trailing empty piece is not a test. */
static size_t
split_inputs(char *inp, size_t n, char **starts, size_t *lens, size_t max)
{
	static const char sep[] = "\n__ggml_vocab_test__\n";
	size_t k = 0, at = 0, sl = sizeof(sep) - 1;

	while (at < n && k < max) {
		char *hit = memmem(inp + at, n - at, sep, sl);
		if (hit == NULL)
			break;
		starts[k] = inp + at;
		lens[k] = (size_t)(hit - (inp + at));
		k++;
		at = (size_t)(hit - inp) + sl;
	}
	return k;
}

static void
print_ids(const char *what, const int32_t *v, size_t n)
{
	fprintf(stderr, "  %s:", what);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %d", v[i]);
	fprintf(stderr, "\n");
}

static void
conformance(const char *vocab, size_t cases)
{
	char path[256], *starts[128], *line;
	size_t lens[128], inp_n, out_n;
	struct tok *t = t_tok(vocab);

	T_TRUE(t != NULL);
	snprintf(path, sizeof(path), "%s.inp", vocab);
	char *inp = t_read_file(t_path(path), &inp_n);
	snprintf(path, sizeof(path), "%s.out", vocab);
	char *outs = t_read_file(t_path(path), &out_n);
	T_TRUE(inp != NULL && outs != NULL);
	size_t n = split_inputs(inp, inp_n, starts, lens, 128);
	T_EQ(n, cases);
	line = outs;
	for (size_t i = 0; i < n; i++) {
		struct tok_ids got = {0};
		int32_t want[512];
		size_t nw = 0;
		char *eol = memchr(line, '\n', (size_t)(outs + out_n - line));
		T_TRUE(eol != NULL);
		for (char *p = line; p < eol && nw < 512;) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			want[nw++] = (int32_t)v;
			p = end;
		}
		T_OK(tok_encode(t, starts[i], lens[i], 0, &got));
		if (got.n != nw || (nw > 0 && memcmp(got.v, want, nw * sizeof(int32_t)) != 0)) {
			T_FAIL_("%s: test %zu (\"%.*s\") differs", vocab, i,
			        (int)(lens[i] > 60 ? 60 : lens[i]), starts[i]);
			print_ids("want", want, nw);
			print_ids("got ", got.v, got.n);
		}
		tok_ids_fini(&got);
		line = eol + 1;
	}
	free(inp);
	free(outs);
	tok_free(t);
}

static void
test_conformance_llama_spm(void)
{
	conformance("vocab/ggml-vocab-llama-spm.gguf", 46);
}

static void
test_conformance_phi3(void)
{
	conformance("vocab/ggml-vocab-phi-3.gguf", 46);
}

static void
test_conformance_qwen2(void)
{
	conformance("vocab/ggml-vocab-qwen2.gguf", 46);
}

static void
test_conformance_gpt2(void)
{
	conformance("vocab/ggml-vocab-gpt-2.gguf", 46);
}

/* gpt-oss's o200k (gpt-4o pre-tokenizer), vectors from the official tiktoken core */
static void
test_conformance_gpt_oss(void)
{
	if (t_path_opt("vocab/ggml-vocab-gpt-oss.gguf") != NULL) /* make deps makes it in a clone */
		conformance("vocab/ggml-vocab-gpt-oss.gguf", 72);
}

static void
test_stories_bos(void)
{
	struct tok *t = t_tok("models/stories260K.gguf");
	struct tok_ids ids = {0};
	static const int32_t want[] = {1, 403, 407, 261, 378};

	T_TRUE(t != NULL);
	T_OK(tok_encode(t, "Once upon a time", 16, TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, &ids));
	T_EQ(ids.n, 5);
	T_TRUE(memcmp(ids.v, want, sizeof(want)) == 0);
	T_EQ(tok_bos(t), 1);
	T_TRUE(tok_is_eog(t, 2));
	tok_ids_fini(&ids);
	tok_free(t);
}

static void
test_special_parsing(void)
{
	struct tok *t = t_tok("vocab/ggml-vocab-qwen2.gguf");
	struct tok_ids a = {0}, b = {0};
	const char *s = "<|endoftext|>hi";

	T_TRUE(t != NULL);
	int32_t eot = tok_find(t, "<|endoftext|>", 13);
	T_TRUE(eot >= 0);
	T_OK(tok_encode(t, s, strlen(s), TOK_PARSE_SPECIAL, &a));
	T_TRUE(a.n >= 2 && a.v[0] == eot);
	T_OK(tok_encode(t, s, strlen(s), 0, &b));
	T_TRUE(b.n > a.n && b.v[0] != eot); /* tokenized as plain text */
	tok_ids_fini(&a);
	tok_ids_fini(&b);
	tok_free(t);
}

/* @rel's metadata with @key set to the string @val (NULL: dropped), as a tokenizer in *@ret. */
static void
load_changed_to(const char *rel, const char *key, const char *val, struct tok **ret)
{
	struct gguf_file *f = NULL, *g = NULL;
	struct gguf_writer *w = NULL;
	struct orch_errinfo e = {0};
	struct tok *t = NULL;
	void *buf = NULL;
	size_t size = 0;

	*ret = NULL;
	T_OK(gguf_open(t_path(rel), &f, NULL));
	T_OK(gguf_writer_new(&w));
	for (size_t i = 0; i < gguf_kv_count(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		if (strcmp(kv->key, key) != 0 && strcmp(kv->key, "general.alignment") != 0)
			T_OK(gguf_writer_set_value(w, kv->key, &kv->value));
	}
	if (val != NULL)
		T_OK(gguf_writer_set_str(w, key, val));
	T_OK(gguf_writer_write_mem(w, NULL, NULL, &buf, &size, NULL));
	T_OK(gguf_open_mem(buf, size, "changed.gguf", &g, NULL));
	if (tok_load_gguf(g, &t, &e) != ORCH_OK)
		fprintf(stderr, "%s changed: %s\n", rel, e.msg);
	gguf_close(g);
	free(buf);
	gguf_writer_free(w);
	gguf_close(f);
	*ret = t;
}

static struct tok *
load_changed(const char *rel, const char *key, const char *val)
{
	struct tok *t = NULL;

	load_changed_to(rel, key, val, &t);
	return t;
}

static bool
starts_with_bos(const struct tok *t, const char *s)
{
	struct tok_ids ids = {0};
	bool bos =
	        tok_encode(t, s, strlen(s), TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, &ids) == ORCH_OK &&
	        ids.n > 0 && ids.v[0] == tok_bos(t);

	tok_ids_fini(&ids);
	return bos;
}

/*
 * Without tokenizer.ggml.add_bos_token, BOS follows llama.cpp's default for
 * the pre-tokenizer: none for qwen2 (the real file has no such key), one for
 * the Llama 3 names and tekken; an explicit key always wins.
 */
static void
test_add_bos_defaults(void)
{
	static const char *const llama3[] = {"llama-bpe", "llama3", "llama-v3", "tekken"};
	struct tok *t = t_tok("vocab/ggml-vocab-qwen2.gguf");

	T_TRUE(t != NULL);
	T_TRUE(!starts_with_bos(t, "Hello"));
	tok_free(t);
	for (size_t i = 0; i < sizeof(llama3) / sizeof(llama3[0]); i++) {
		t = load_changed("vocab/ggml-vocab-qwen2.gguf", "tokenizer.ggml.pre", llama3[i]);
		T_TRUE(t != NULL);
		T_TRUE(starts_with_bos(t, "Hello"));
		tok_free(t);
	}
	t = load_changed("vocab/ggml-vocab-gpt-2.gguf", "tokenizer.ggml.pre", "gpt-2");
	T_TRUE(t != NULL);
	T_TRUE(!starts_with_bos(t, "Hello"));
	tok_free(t);
	/* SentencePiece: BOS unless the file says otherwise */
	t = load_changed("vocab/ggml-vocab-llama-spm.gguf", "tokenizer.ggml.add_bos_token", NULL);
	T_TRUE(t != NULL);
	T_TRUE(starts_with_bos(t, "Hello"));
	tok_free(t);
}

/*
 * phi-3's special tokens swallow the whitespace after them, as llama.cpp
 * tokenizes it (SOURCE-realmeta.md, prompt 2: 34 ids); recognised by
 * general.name, so the same vocabulary under another name keeps the newlines.
 */
static void
test_phi3_rstrip(void)
{
	static const char chat[] =
	        "<|user|>\nYou are a helpful assistant. What is the capital of France? Answer in "
	        "one word, and then give one short reason why. Keep it brief.<|end|>\n"
	        "<|assistant|>\n";
	static const int32_t head[] = {1, 32010, 887}, tail[] = {29889, 32007, 32001};
	struct tok *t = t_tok("vocab/ggml-vocab-phi-3.gguf");
	struct tok_ids ids = {0}, other = {0};

	T_TRUE(t != NULL);
	T_OK(tok_encode(t, chat, strlen(chat), TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, &ids));
	T_EQ(ids.n, 34);
	T_TRUE(memcmp(ids.v, head, sizeof(head)) == 0);
	T_TRUE(memcmp(ids.v + ids.n - 3, tail, sizeof(tail)) == 0);
	tok_free(t);
	t = load_changed("vocab/ggml-vocab-phi-3.gguf", "general.name", "Mini");
	T_TRUE(t != NULL);
	T_OK(tok_encode(t, chat, strlen(chat), TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, &other));
	T_TRUE(other.n > ids.n);
	/* <unk>, <s> and <|endoftext|> keep what follows them */
	tok_free(t);
	t = t_tok("vocab/ggml-vocab-phi-3.gguf");
	tok_ids_fini(&other);
	T_OK(tok_encode(t, "<|endoftext|>\nA", 15, TOK_PARSE_SPECIAL, &other));
	T_TRUE(other.n >= 3 && other.v[0] == 32000);
	tok_ids_fini(&other);
	T_OK(tok_encode(t, "<|end|>\nA", 9, TOK_PARSE_SPECIAL, &other));
	T_EQ(other.n, 2);
	T_EQ(other.v[0], 32007);
	tok_ids_fini(&other);
	tok_ids_fini(&ids);
	tok_free(t);
}

static int
round_trip(const struct tok *t, const char *s, size_t n)
{
	struct tok_ids ids = {0};
	char *out = NULL;
	size_t len = 0;
	int ok = tok_encode(t, s, n, 0, &ids) == ORCH_OK &&
	         tok_decode(t, ids.v, ids.n, TOK_STRIP_PREFIX, &out, &len) == ORCH_OK && len == n &&
	         (n == 0 || memcmp(out, s, n) == 0);

	tok_ids_fini(&ids);
	free(out);
	return ok;
}

static void
test_round_trips(void)
{
	static const char *vocabs[] = {"vocab/ggml-vocab-qwen2.gguf",
	                               "vocab/ggml-vocab-gpt-2.gguf"};
	static const uint32_t ranges[][2] = {{0x20, 0x7e},     {0xa0, 0x24f},      {0x300, 0x36f},
	                                     {0x4e00, 0x9fff}, {0x1f300, 0x1f64f}, {0x3040, 0x30ff},
	                                     {0x0400, 0x04ff}};
	uint64_t seed =
	        getenv("ORCH_TEST_SEED") ? strtoull(getenv("ORCH_TEST_SEED"), NULL, 0) : 1234;

	for (size_t v = 0; v < 2; v++) {
		struct tok *t = t_tok(vocabs[v]);
		char *starts[64];
		size_t lens[64], n;
		char *inp = t_read_file(t_path("vocab/ggml-vocab-qwen2.gguf.inp"), &n);
		T_TRUE(t != NULL && inp != NULL);
		size_t k = split_inputs(inp, n, starts, lens, 64);
		for (size_t i = 0; i < k; i++)
			if (!round_trip(t, starts[i], lens[i]))
				T_FAIL_("%s: input %zu does not round-trip", vocabs[v], i);
		struct rng r;
		rng_seed(&r, seed);
		for (int i = 0; i < 300; i++) { /* random valid UTF-8 from mixed scripts */
			char s[256];
			size_t m = 0;
			while (m < 200) {
				const uint32_t *rg = ranges[rng_next(&r) % 7];
				m += utf8_encode(
				        rg[0] + (uint32_t)(rng_next(&r) % (rg[1] - rg[0] + 1)),
				        s + m);
			}
			if (!round_trip(t, s, m))
				T_FAIL_("%s: random string %d (seed %llu) does not round-trip",
				        vocabs[v], i, (unsigned long long)seed);
		}
		free(inp);
		tok_free(t);
	}
}

/* The GPT-2 vocabulary with tokenizer.ggml.pre replaced by @pre (image in *@img). */
static struct tok *
gpt2_with_pre(const char *pre, void **img)
{
	struct gguf_file *f = NULL, *g = NULL;
	struct gguf_writer *w = NULL;
	struct tok *t = NULL;
	size_t n;

	if (gguf_open(t_path("vocab/ggml-vocab-gpt-2.gguf"), &f, NULL) != ORCH_OK ||
	    gguf_writer_new(&w) != ORCH_OK)
		return NULL;
	for (size_t i = 0; i < gguf_kv_count(f); i++)
		gguf_writer_set_value(w, gguf_kv_at(f, i)->key, &gguf_kv_at(f, i)->value);
	gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
	if (gguf_writer_write_mem(w, NULL, NULL, img, &n, NULL) == ORCH_OK &&
	    gguf_open_mem(*img, n, pre, &g, NULL) == ORCH_OK)
		tok_load_gguf(g, &t, NULL);
	gguf_close(g);
	gguf_close(f);
	gguf_writer_free(w);
	return t;
}

/* Whether the encoding of @s has a token boundary at byte @at. */
static int
boundary_at(const struct tok *t, const char *s, size_t at)
{
	struct tok_ids ids = {0};
	char piece[256];
	size_t off = 0;
	int hit = 0;

	tok_encode(t, s, strlen(s), 0, &ids);
	for (size_t i = 0; i < ids.n && off <= at; i++) {
		hit |= off == at;
		off += tok_piece(t, ids.v[i], 0, piece, sizeof(piece));
	}
	tok_ids_fini(&ids);
	return hit || off == at;
}

/* The pre-tokenizers without a conformance vocabulary: where their regexes must split. */
static void
test_pretokenizer_splits(void)
{
	void *img[5] = {0};
	struct tok *llama3 = gpt2_with_pre("llama-bpe", &img[0]);
	struct tok *o200k = gpt2_with_pre("gpt-4o", &img[1]);
	struct tok *qwen = gpt2_with_pre("qwen2", &img[2]);
	struct tok *bad = gpt2_with_pre("no-such-pre", &img[3]);
	struct tok *tekken = gpt2_with_pre("tekken", &img[4]);

	T_TRUE(llama3 && o200k && qwen && tekken && bad == NULL);
	/* tekken (Mistral): gpt-4o's case-aware words without contractions, single digits */
	T_TRUE(boundary_at(tekken, "HelloWorld", 5));
	T_TRUE(boundary_at(tekken, "123", 1) && boundary_at(tekken, "123", 2));
	T_TRUE(boundary_at(tekken, "DON'T", 3));
	T_TRUE(boundary_at(llama3, "1234567", 3) &&
	       boundary_at(llama3, "1234567", 6));                          /* \p{N}{1,3} */
	T_TRUE(boundary_at(qwen, "123", 1) && boundary_at(qwen, "123", 2)); /* \p{N} */
	T_TRUE(boundary_at(o200k, "HelloWorld", 5));                        /* case-aware words */
	T_TRUE(boundary_at(o200k, "12345", 3));
	T_TRUE(boundary_at(llama3, "DON'T", 3) && boundary_at(qwen, "IT'S", 2)); /* (?i:'t|'s) */
	T_TRUE(boundary_at(qwen, "ñandú123", 7)); /* Unicode letters, then digits */
	tok_free(llama3);
	tok_free(o200k);
	tok_free(qwen);
	tok_free(tekken);
	for (int i = 0; i < 5; i++)
		orch_free(img[i]);
}

static orch_err
load_and_encode(void *ctx)
{
	struct tok *t = NULL;
	struct tok_ids ids = {0};
	orch_err rv = tok_load_gguf(ctx, &t, NULL);

	if (rv == ORCH_OK)
		rv = tok_encode(t, "Hello world, 世界 <|endoftext|>", 33, TOK_PARSE_SPECIAL, &ids);
	tok_ids_fini(&ids);
	tok_free(t);
	return rv;
}

/* Every allocation of loading and encoding may fail: ORCH_ENOMEM, no leak (ASan). */
static void
test_oom(void)
{
	static const char *files[] = {"models/stories260K.gguf", "vocab/ggml-vocab-gpt-2.gguf"};

	for (size_t i = 0; i < 2; i++) {
		struct gguf_file *f = NULL;
		T_OK(gguf_open(t_path(files[i]), &f, NULL));
		long faults = t_oom_loop(load_and_encode, f, 10000);
		gguf_close(f);
		T_TRUE(faults > 5);
	}
}

int
main(void)
{
	T_RUN(test_conformance_llama_spm);
	T_RUN(test_conformance_phi3);
	T_RUN(test_conformance_qwen2);
	T_RUN(test_conformance_gpt2);
	T_RUN(test_conformance_gpt_oss);
	T_RUN(test_stories_bos);
	T_RUN(test_special_parsing);
	T_RUN(test_add_bos_defaults);
	T_RUN(test_phi3_rstrip);
	T_RUN(test_round_trips);
	T_RUN(test_pretokenizer_splits);
	T_RUN(test_oom);
	return t_done();
}
