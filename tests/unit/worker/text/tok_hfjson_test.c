/*
 * tok_hfjson_test.c - the hf-json backend against the GGUF one: a
 * tokenizer.json written from each byte-level BPE vocabulary by
 * orch-tokjson gives identical ids on every conformance input (and the
 * expected ones); malformed and unsupported files are refused by name.
 */
#include "t.h"

#include <unistd.h>

#include "gguf/gguf.h"
#include "text/tokenizer.h"
#include "tokjson.h"

static char *
split_next(char **p, char *end, size_t *len)
{
	static const char sep[] = "\n__ggml_vocab_test__\n";
	char *hit = memmem(*p, (size_t)(end - *p), sep, sizeof(sep) - 1);
	char *s = *p;

	if (hit == NULL)
		return NULL;
	*len = (size_t)(hit - s);
	*p = hit + sizeof(sep) - 1;
	return s;
}

static void
same_ids(const char *vocab, bool pairs)
{
	char json[64], rel[128];
	struct gguf_file *f = NULL;
	struct tok *g = NULL, *h = NULL;
	struct orch_errinfo e = {0};
	size_t n = 0, len;

	snprintf(json, sizeof(json), "/tmp/orch-tokjson-%d.json", (int)getpid());
	snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf", vocab);
	T_OK(gguf_open(t_path(rel), &f, &e));
	T_OK(tok_load_gguf(f, &g, &e));
	T_OK(tokjson_write(f, json, pairs, &e));
	if (tok_load_hf_json(json, &h, &e) != ORCH_OK)
		T_FAIL_("%s: %s", vocab, e.msg);
	T_TRUE(h != NULL);
	T_EQ(tok_n_vocab(h), tok_n_vocab(g));
	snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf.inp", vocab);
	char *inp = t_read_file(t_path(rel), &n), *p = inp, *s;
	int tests = 0;

	T_TRUE(inp != NULL);
	while ((s = split_next(&p, inp + n, &len)) != NULL) {
		struct tok_ids a = {0}, b = {0};
		T_OK(tok_encode(g, s, len, 0, &a));
		T_OK(tok_encode(h, s, len, 0, &b));
		if (a.n != b.n || (a.n && memcmp(a.v, b.v, a.n * sizeof(int32_t)) != 0))
			T_FAIL_("%s: input %d (\"%.*s\"): backends differ", vocab, tests,
			        (int)(len > 40 ? 40 : len), s);
		tok_ids_fini(&a);
		tok_ids_fini(&b);
		tests++;
	}
	T_EQ(tests, 46);
	/* special tokens parse the same way */
	struct tok_ids a = {0}, b = {0};
	T_OK(tok_encode(g, "<|endoftext|>x", 14, TOK_PARSE_SPECIAL, &a));
	T_OK(tok_encode(h, "<|endoftext|>x", 14, TOK_PARSE_SPECIAL, &b));
	T_TRUE(a.n == b.n && memcmp(a.v, b.v, a.n * sizeof(int32_t)) == 0);
	tok_ids_fini(&a);
	tok_ids_fini(&b);
	free(inp);
	tok_free(g);
	tok_free(h);
	gguf_close(f);
	unlink(json);
}

static void
test_qwen2(void)
{
	same_ids("qwen2", false);
}

static void
test_gpt2_pairs(void)
{
	same_ids("gpt-2", true);
}

static void
expect_refused(const char *content, orch_err code, const char *needle)
{
	char path[64];
	struct tok *t = NULL;
	struct orch_errinfo e = {0};

	snprintf(path, sizeof(path), "/tmp/orch-badtok-%d.json", (int)getpid());
	FILE *fp = fopen(path, "w");
	fputs(content, fp);
	fclose(fp);
	orch_err rv = tok_load_hf_json(path, &t, &e);
	if (rv != code || strstr(e.msg, needle) == NULL)
		T_FAIL_("want %s \"%s\", got %s \"%s\"", orch_err_name(code), needle,
		        orch_err_name(rv), e.msg);
	T_TRUE(t == NULL);
	unlink(path);
}

static void
test_refusals(void)
{
	struct tok *t = NULL;
	struct orch_errinfo e = {0};

	T_ERR(tok_load_hf_json("/nonexistent/tokenizer.json", &t, &e), ORCH_EIO);
	expect_refused("{\"model\": {", ORCH_EINVAL, "malformed JSON at byte");
	expect_refused("{\"model\": {\"type\": \"Unigram\"}}", ORCH_EUNSUPPORTED,
	               "'Unigram' is not supported");
	expect_refused("{\"model\": {\"type\": \"BPE\"}}", ORCH_EINVAL,
	               "model.vocab or model.merges");
	expect_refused(
	        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Whitespace\"}}",
	        ORCH_EUNSUPPORTED, "'Whitespace' is not supported");
	expect_refused(
	        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -3}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
	        ORCH_EINVAL, "vocab id of 'a'");
	expect_refused(
	        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}}",
	        ORCH_EUNSUPPORTED, "does not compile");
}

/* A tokenizer.json with two added tokens: <X> with rstrip @strip, <Y> with lstrip @strip. */
static void
strip_tokenizer(bool strip, struct tok **ret)
{
	static const char fmt[] =
	        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"\\u010a\": 2, "
	        "\"\\u0120\": 3}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}, "
	        "\"added_tokens\": [{\"id\": 4, \"content\": \"<X>\", \"special\": true, \"rstrip\": "
	        "%s, \"lstrip\": false}, {\"id\": 5, \"content\": \"<Y>\", \"special\": true, "
	        "\"lstrip\": %s}]}";
	const char *v = strip ? "true" : "false";
	char path[64];

	*ret = NULL;
	snprintf(path, sizeof(path), "/tmp/orch-striptok-%d.json", (int)getpid());
	FILE *fp = fopen(path, "w");
	T_TRUE(fp != NULL);
	fprintf(fp, fmt, v, v);
	fclose(fp);
	T_OK(tok_load_hf_json(path, ret, NULL));
	unlink(path);
}

/* added_tokens' lstrip/rstrip: the whitespace beside a matched token is swallowed. */
static void
test_added_token_strip(void)
{
	static const int32_t want[] = {4, 0, 5, 1}, plain[] = {4, 2, 0, 3, 5, 1};
	struct tok *t = NULL;
	struct tok_ids ids = {0};

	strip_tokenizer(true, &t);
	T_TRUE(t != NULL);
	T_OK(tok_encode(t, "<X>\na <Y>b", 10, TOK_PARSE_SPECIAL, &ids));
	T_EQ(ids.n, 4);
	T_TRUE(memcmp(ids.v, want, sizeof(want)) == 0);
	tok_ids_fini(&ids);
	tok_free(t);
	strip_tokenizer(false, &t);
	T_TRUE(t != NULL);
	T_OK(tok_encode(t, "<X>\na <Y>b", 10, TOK_PARSE_SPECIAL, &ids));
	T_EQ(ids.n, 6);
	T_TRUE(memcmp(ids.v, plain, sizeof(plain)) == 0);
	tok_ids_fini(&ids);
	tok_free(t);
}

int
main(void)
{
	T_RUN(test_qwen2);
	T_RUN(test_gpt2_pairs);
	T_RUN(test_refusals);
	T_RUN(test_added_token_strip);
	return t_done();
}
