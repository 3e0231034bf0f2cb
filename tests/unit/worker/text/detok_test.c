/*
 * detok_test.c - streaming detokenization: one id at a time gives the same
 * text as decoding all at once, every delta is valid UTF-8, split code
 * points are held back, ill-formed bytes become U+FFFD, and the SPM dummy
 * prefix goes at the start only.
 */
#include "base/utf8.h"
#include "gguf/gguf.h"
#include "t.h"
#include "text/detok.h"
#include "unit/worker/text/tok_load.h"

static const char *const texts[] = {
        "Grüße, 世界 👋\n",
        "naïve café — e\xcc\x81t\xc3\xa9 (combining acute) 한국어 العربية Ελληνικά",
        "🦙🦙 emoji 😀👩‍👩‍👧 ZWJ, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math, ½ ¾ 🇫🇷",
        "  leading spaces and\ttabs\n\nnew lines",
        "日本語のテキストと中文文本混合在一起，还有标点符号。",
};

static void
stream_matches_decode(const char *vocab)
{
	struct tok *t = t_tok(vocab);

	T_TRUE(t != NULL);
	for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
		struct tok_ids ids = {0};
		struct sbuf all = {0}, delta = {0};
		struct detok d;
		char *whole = NULL;
		size_t whole_n = 0;
		T_OK(tok_encode(t, texts[k], strlen(texts[k]), 0, &ids));
		T_OK(tok_decode(t, ids.v, ids.n, TOK_STRIP_PREFIX, &whole, &whole_n));
		detok_init(&d, t, TOK_STRIP_PREFIX);
		for (size_t i = 0; i < ids.n; i++) {
			delta.n = 0;
			T_OK(detok_push(&d, ids.v[i], &delta));
			if (!utf8_valid(delta.p, delta.n))
				T_FAIL_("%s: text %zu: delta %zu is not valid UTF-8", vocab, k, i);
			sbuf_put(&all, delta.p, delta.n);
		}
		T_OK(detok_finish(&d, &all));
		if (all.n != whole_n || memcmp(all.p, whole, whole_n) != 0 ||
		    strcmp(all.p, texts[k]) != 0)
			T_FAIL_("%s: text %zu: streamed \"%s\", decoded \"%s\"", vocab, k, all.p,
			        whole);
		free(whole);
		sbuf_fini(&all);
		sbuf_fini(&delta);
		tok_ids_fini(&ids);
	}
	tok_free(t);
}

static void
test_stream_llama_spm(void)
{
	stream_matches_decode("vocab/ggml-vocab-llama-spm.gguf");
}

static void
test_stream_phi3(void)
{
	stream_matches_decode("vocab/ggml-vocab-phi-3.gguf");
}

static void
test_stream_qwen2(void)
{
	stream_matches_decode("vocab/ggml-vocab-qwen2.gguf");
}

static void
test_stream_gpt2(void)
{
	stream_matches_decode("vocab/ggml-vocab-gpt-2.gguf");
}

/* stories260K's byte tokens: an emoji arrives as four ids. */
static void
test_held_back_and_invalid(void)
{
	struct tok *t = t_tok("models/stories260K.gguf");
	struct sbuf out = {0};
	struct detok d;
	int32_t f0 = 3 + 0xF0, x9f = 3 + 0x9F, xa6 = 3 + 0xA6, x99 = 3 + 0x99, xff = 3 + 0xFF;

	T_TRUE(t != NULL);
	detok_init(&d, t, TOK_STRIP_PREFIX);
	T_OK(detok_push(&d, f0, &out));
	T_OK(detok_push(&d, x9f, &out));
	T_OK(detok_push(&d, xa6, &out));
	T_EQ(out.n, 0); /* nothing until the code point completes */
	T_OK(detok_push(&d, x99, &out));
	T_STREQ(out.p, "🦙");
	out.n = 0;
	T_OK(detok_push(&d, xff, &out)); /* never valid: replaced at once */
	T_STREQ(out.p, UTF8_REPLACEMENT);
	out.n = 0;
	T_OK(detok_push(&d, f0, &out));
	T_OK(detok_push(&d, 3 + 'A', &out)); /* breaks the sequence: F0 is one maximal subpart */
	T_STREQ(out.p, UTF8_REPLACEMENT "A");
	out.n = 0;
	T_OK(detok_push(&d, f0, &out));
	T_OK(detok_push(&d, x9f, &out));
	T_OK(detok_finish(&d, &out)); /* incomplete at the end */
	T_STREQ(out.p, UTF8_REPLACEMENT);
	sbuf_fini(&out);
	tok_free(t);
}

static void
test_prefix_at_start_only(void)
{
	struct tok *t = t_tok("vocab/ggml-vocab-llama-spm.gguf");
	struct tok_ids ids = {0};
	struct sbuf out = {0};
	struct detok d;

	T_TRUE(t != NULL);
	T_OK(tok_encode(t, "Hello world", 11, TOK_ADD_SPECIAL, &ids)); /* BOS ▁Hello ▁world */
	detok_init(&d, t, TOK_STRIP_PREFIX);
	for (size_t i = 0; i < ids.n; i++)
		T_OK(detok_push(&d, ids.v[i], &out));
	T_STREQ(out.p, "Hello world");
	tok_ids_fini(&ids);
	sbuf_fini(&out);
	tok_free(t);
}

int
main(void)
{
	T_RUN(test_stream_llama_spm);
	T_RUN(test_stream_phi3);
	T_RUN(test_stream_qwen2);
	T_RUN(test_stream_gpt2);
	T_RUN(test_held_back_and_invalid);
	T_RUN(test_prefix_at_start_only);
	return t_done();
}
