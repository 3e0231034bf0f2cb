/*
 * gguf_test.c - the reader on the real files in ../shared/testdata:
 * stories260K (and its quantized and v1 variants) and every vocabulary GGUF.
 */
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "t.h"

static struct gguf_file *
open_ok(const char *rel)
{
	struct gguf_file *f = NULL;
	struct orch_errinfo e = {0};
	orch_err rv = gguf_open(t_path(rel), &f, &e);

	if (rv != ORCH_OK)
		fprintf(stderr, "gguf_open(%s) = %s: %s\n", rel, orch_err_name(rv), e.msg);
	return f;
}

static int
str_is(struct gguf_str s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

static void
test_stories_metadata(void)
{
	struct gguf_file *f = open_ok("models/stories260K.gguf");
	struct gguf_str s;
	uint32_t u;
	float eps;

	T_TRUE(f != NULL);
	T_EQ(gguf_version(f), 3);
	T_EQ(gguf_alignment(f), 32);
	T_EQ(gguf_tensor_count(f), 48);
	T_OK(gguf_get_str(f, "general.architecture", &s));
	T_TRUE(str_is(s, "llama"));
	T_OK(gguf_get_u32(f, "llama.embedding_length", &u));
	T_EQ(u, 64);
	T_OK(gguf_get_u32(f, "llama.block_count", &u));
	T_EQ(u, 5);
	T_OK(gguf_get_u32(f, "llama.attention.head_count", &u));
	T_EQ(u, 8);
	T_OK(gguf_get_u32(f, "llama.attention.head_count_kv", &u));
	T_EQ(u, 4);
	T_OK(gguf_get_u32(f, "llama.rope.dimension_count", &u));
	T_EQ(u, 8);
	T_OK(gguf_get_u32(f, "llama.feed_forward_length", &u));
	T_EQ(u, 172);
	T_OK(gguf_get_u32(f, "llama.context_length", &u));
	T_EQ(u, 2048);
	T_OK(gguf_get_f32(f, "llama.attention.layer_norm_rms_epsilon", &eps));
	T_NEAR(eps, 1e-5, 1e-12);
	T_OK(gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &u));
	T_EQ(u, 1);
	T_OK(gguf_get_u32(f, "tokenizer.ggml.eos_token_id", &u));
	T_EQ(u, 2);
	T_OK(gguf_get_u32(f, "tokenizer.ggml.unknown_token_id", &u));
	T_EQ(u, 0);
	T_OK(gguf_get_str(f, "tokenizer.ggml.model", &s));
	T_TRUE(str_is(s, "llama"));
	gguf_close(f);
}

static void
test_stories_tokens(void)
{
	struct gguf_file *f = open_ok("models/stories260K.gguf");
	const struct gguf_arr *a;

	T_TRUE(f != NULL);
	T_OK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, &a));
	T_EQ(a->n, 512);
	T_TRUE(str_is(a->strs[1], "<s>"));
	T_TRUE(str_is(a->strs[2], "</s>"));
	T_TRUE(str_is(a->strs[3 + 0x41], "<0x41>")); /* byte tokens follow the 3 controls */
	T_OK(gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_VTYPE_FLOAT32, &a));
	T_EQ(a->n, 512);
	T_OK(gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_VTYPE_INT32, &a));
	T_EQ(a->n, 512);
	T_EQ(gguf_arr_int(a, 1), 3); /* <s> is a control token */
	T_EQ(gguf_arr_int(a, 3), 6); /* <0x00> is a byte token */
	/* wrong element type and wrong type are ETYPE, absence is ENOTFOUND */
	T_ERR(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VTYPE_INT32, &a), ORCH_ETYPE);
	T_ERR(gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_VTYPE_STRING, &a), ORCH_ENOTFOUND);
	gguf_close(f);
}

static void
test_stories_tensors(void)
{
	struct gguf_file *f = open_ok("models/stories260K.gguf");
	const struct gguf_tensor *t;
	uint64_t total = 0;

	T_TRUE(f != NULL);
	t = gguf_find_tensor(f, "token_embd.weight");
	T_TRUE(t != NULL);
	T_EQ(t->type, GGML_TYPE_F32);
	T_EQ(t->n_dims, 2);
	T_EQ(t->ne[0], 64);
	T_EQ(t->ne[1], 512);
	T_EQ(t->nbytes, 64 * 512 * 4);
	t = gguf_find_tensor(f, "blk.4.ffn_down.weight");
	T_TRUE(t != NULL);
	T_EQ(t->ne[0], 172);
	T_EQ(t->ne[1], 64);
	T_TRUE(gguf_find_tensor(f, "output.weight") != NULL);
	T_TRUE(gguf_find_tensor(f, "blk.5.attn_q.weight") == NULL);
	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		t = gguf_tensor_at(f, i);
		T_TRUE(gguf_find_tensor(f, t->name) == t);
		T_EQ(t->offset % 32, 0);
		T_TRUE((const char *)t->data >= (const char *)t->data - t->offset);
		total += t->n_elements;
	}
	T_TRUE(gguf_tensor_at(f, gguf_tensor_count(f)) == NULL);
	T_TRUE(total > 250000 && total < 300000); /* "about 260K parameters" */
	/* the embedding's first value matches the bytes at its data offset */
	float first;
	size_t size;
	unsigned char *raw = t_read_file(t_path("models/stories260K.gguf"), &size);
	t = gguf_find_tensor(f, "token_embd.weight");
	T_TRUE(raw != NULL);
	memcpy(&first, raw + gguf_data_offset(f) + t->offset, 4);
	T_TRUE(memcmp(&first, t->data, 4) == 0);
	free(raw);
	gguf_close(f);
}

static void
test_stories_quantized(void)
{
	static const struct {
		const char *file;
		uint32_t type;
	} cases[] = {{"models/stories260K-Q8_0.gguf", GGML_TYPE_Q8_0},
	             {"models/stories260K-Q4_0.gguf", GGML_TYPE_Q4_0}};

	for (size_t c = 0; c < 2; c++) {
		struct gguf_file *f = open_ok(cases[c].file);
		size_t nq = 0, nf = 0;
		T_TRUE(f != NULL);
		T_EQ(gguf_tensor_count(f), 48);
		for (size_t i = 0; i < gguf_tensor_count(f); i++) {
			const struct gguf_tensor *t = gguf_tensor_at(f, i);
			nq += t->type == cases[c].type;
			nf += t->type == GGML_TYPE_F32;
		}
		T_EQ(nq, 32); /* SOURCE.md: 32 quantized, 16 F32 */
		T_EQ(nf, 16);
		gguf_close(f);
	}
}

static void
test_v1_refused(void)
{
	struct gguf_file *f = NULL;
	struct orch_errinfo e = {0};

	T_ERR(gguf_open(t_path("models/stories260K-ggufv1-f32.gguf"), &f, &e), ORCH_EGGUF_VERSION);
	T_TRUE(f == NULL);
	T_TRUE(strstr(e.msg, "GGUF v1") != NULL);
	T_TRUE(strstr(e.msg, "stories260K-ggufv1-f32.gguf") != NULL);
	T_TRUE(strstr(e.msg, "offset 4") != NULL);
}

static void
test_vocab_files(void)
{
	static const struct {
		const char *file, *model, *pre, *arch;
		uint64_t n_vocab;
	} v[] = {
	        {"vocab/ggml-vocab-llama-spm.gguf", "llama", "default", "llama", 32000},
	        {"vocab/ggml-vocab-phi-3.gguf", "llama", "default", "phi3", 32064},
	        {"vocab/ggml-vocab-qwen2.gguf", "gpt2", "qwen2", "qwen2", 151936},
	        {"vocab/ggml-vocab-gpt-2.gguf", "gpt2", "gpt-2", "gpt2", 50257},
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct gguf_file *f = open_ok(v[i].file);
		const struct gguf_arr *a;
		struct gguf_str s;
		T_TRUE(f != NULL);
		T_EQ(gguf_tensor_count(f), 0);
		T_OK(gguf_get_str(f, "general.architecture", &s));
		T_TRUE(str_is(s, v[i].arch));
		T_OK(gguf_get_str(f, "tokenizer.ggml.model", &s));
		T_TRUE(str_is(s, v[i].model));
		T_OK(gguf_get_str(f, "tokenizer.ggml.pre", &s));
		T_TRUE(str_is(s, v[i].pre));
		T_OK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, &a));
		T_EQ(a->n, v[i].n_vocab);
		if (strcmp(v[i].model, "gpt2") == 0) {
			T_OK(gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_VTYPE_STRING, &a));
			T_TRUE(a->n > 1000);
		}
		gguf_close(f);
	}
}

static void
test_accessors(void)
{
	struct gguf_file *f = open_ok("vocab/ggml-vocab-llama-spm.gguf");
	uint64_t u64;
	uint32_t u32 = 7;
	int32_t i32 = 7;
	bool b;
	double d;

	T_TRUE(f != NULL);
	T_OK(gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &b));
	T_TRUE(b);
	T_OK(gguf_get_bool(f, "tokenizer.ggml.add_eos_token", &b));
	T_TRUE(!b);
	T_ERR(gguf_get_i32(f, "llama.vocab_size", &i32), ORCH_ETYPE);
	T_EQ(i32, 7); /* untouched on failure */
	T_ERR(gguf_get_u32(f, "no.such.key", &u32), ORCH_ENOTFOUND);
	T_EQ(u32, 7);
	T_OK(gguf_get_uint(f, "llama.vocab_size", &u64));
	T_EQ(u64, 32000);
	T_ERR(gguf_get_uint(f, "general.name", &u64), ORCH_ETYPE);
	T_OK(gguf_get_float(f, "llama.attention.layer_norm_rms_epsilon", &d));
	T_NEAR(d, 1e-5, 1e-12);
	T_TRUE(gguf_find_kv(f, "general.name") != NULL);
	T_TRUE(gguf_kv_at(f, gguf_kv_count(f)) == NULL);
	for (size_t i = 0; i < gguf_kv_count(f); i++)
		T_TRUE(gguf_find_kv(f, gguf_kv_at(f, i)->key) == gguf_kv_at(f, i));
	gguf_close(f);
}

static void
test_chat_template_key(void)
{
	struct gguf_file *f = open_ok("vocab/ggml-vocab-qwen2.gguf");
	size_t n = 0;
	char *want = t_read_file(t_path("templates/ggml-vocab-qwen2.chat_template.jinja"), &n);
	struct gguf_str s;

	T_TRUE(f != NULL && want != NULL);
	T_OK(gguf_get_str(f, "tokenizer.chat_template", &s));
	T_EQ(s.len, n);
	T_TRUE(memcmp(s.ptr, want, n) == 0);
	free(want);
	gguf_close(f);
}

static void
test_not_found_and_not_regular(void)
{
	struct gguf_file *f = NULL;
	struct orch_errinfo e = {0};

	T_ERR(gguf_open("/nonexistent/model.gguf", &f, &e), ORCH_EIO);
	T_TRUE(strstr(e.msg, "/nonexistent/model.gguf") != NULL);
	T_ERR(gguf_open("/tmp", &f, &e), ORCH_EIO);
	T_TRUE(strstr(e.msg, "not a regular file") != NULL);
	T_TRUE(f == NULL);
}

int
main(void)
{
	T_RUN(test_stories_metadata);
	T_RUN(test_stories_tokens);
	T_RUN(test_stories_tensors);
	T_RUN(test_stories_quantized);
	T_RUN(test_v1_refused);
	T_RUN(test_vocab_files);
	T_RUN(test_accessors);
	T_RUN(test_chat_template_key);
	T_RUN(test_not_found_and_not_regular);
	return t_done();
}
