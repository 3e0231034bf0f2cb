/*
 * ident_test.c - a GGUF file's dominant type (general.file_type's name, else
 * the heaviest type among tensors of 2+ dimensions) and the digest of a
 * group of metadata keys, checked against the SHA-256 of those pairs' exact
 * bytes in the written file (and in the real stories260K model).
 */
#include <string.h>

#include "base/alloc.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "gguf/ident.h"
#include "t.h"

static void
test_ftype_names(void)
{
	T_STREQ(gguf_ftype_name(0), "F32");
	T_STREQ(gguf_ftype_name(1), "F16");
	T_STREQ(gguf_ftype_name(2), "Q4_0");
	T_STREQ(gguf_ftype_name(7), "Q8_0");
	T_STREQ(gguf_ftype_name(15), "Q4_K_M");
	T_STREQ(gguf_ftype_name(18), "Q6_K");
	T_STREQ(gguf_ftype_name(32), "BF16");
	T_STREQ(gguf_ftype_name(38), "MXFP4_MOE");
	T_TRUE(gguf_ftype_name(4) == NULL); /* retired values */
	T_TRUE(gguf_ftype_name(34) == NULL);
	T_TRUE(gguf_ftype_name(39) == NULL);
	T_TRUE(gguf_ftype_name(1024) == NULL);
}

struct t_tensor {
	const char *name;
	uint32_t type, n_dims;
	uint64_t ne[4];
};

static orch_err
zero_fill(void *ctx, size_t index, const char *name, void *dst, uint64_t nbytes)
{
	(void)ctx;
	(void)index;
	(void)name;
	memset(dst, 0, (size_t)nbytes);
	return ORCH_OK;
}

/* *@ret: the dominant type of a file made of @ts (and general.file_type @ftype when >= 0). */
static void
dominant_of(const struct t_tensor *ts, size_t n, long ftype, const char **ret)
{
	struct gguf_writer *w = NULL;
	struct gguf_file *f = NULL;
	void *buf = NULL;
	size_t size = 0;
	*ret = "(not computed)";
	T_OK(gguf_writer_new(&w));
	if (ftype >= 0)
		T_OK(gguf_writer_set_u32(w, "general.file_type", (uint32_t)ftype));
	for (size_t i = 0; i < n; i++)
		T_OK(gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].n_dims, ts[i].ne,
		                            NULL));
	T_OK(gguf_writer_write_mem(w, zero_fill, NULL, &buf, &size, NULL));
	T_OK(gguf_open_mem(buf, size, "mem", &f, NULL));
	if (f != NULL)
		*ret = gguf_dominant_type(f);
	gguf_close(f);
	gguf_writer_free(w);
	orch_free(buf);
}

static const char *
dominant(const struct t_tensor *ts, size_t n, long ftype)
{
	const char *name;

	dominant_of(ts, n, ftype, &name);
	return name;
}

static void
test_dominant(void)
{
	const struct t_tensor mixed[] = {
	        {"norm", GGML_TYPE_F32, 1, {8192, 1, 1, 1}}, /* 32 KiB, but 1-D */
	        {"q", GGML_TYPE_Q8_0, 2, {64, 32, 1, 1}},    /* 32 rows of 2 blocks: 2176 B */
	        {"emb", GGML_TYPE_F16, 2, {32, 32, 1, 1}},   /* 2048 B */
	        {"out", GGML_TYPE_Q4_0, 2, {32, 32, 1, 1}},  /* 576 B */
	};
	const struct t_tensor experts[] = {
	        {"attn", GGML_TYPE_F32, 2, {32, 16, 1, 1}},   /* 2048 B */
	        {"exps", GGML_TYPE_MXFP4, 3, {64, 32, 8, 1}}, /* 256 rows of 2×17 B: 8704 B */
	};
	const struct t_tensor tie[] = {
	        {"a", GGML_TYPE_F16, 2, {32, 2, 1, 1}}, /* 128 B */
	        {"b", GGML_TYPE_F32, 2, {32, 1, 1, 1}}, /* 128 B */
	};
	const struct t_tensor flat[] = {{"v", GGML_TYPE_F16, 1, {64, 1, 1, 1}}};

	T_STREQ(dominant(mixed, 4, -1), "Q8_0");
	T_STREQ(dominant(mixed, 4, 15), "Q4_K_M"); /* general.file_type wins */
	T_STREQ(dominant(mixed, 4, 0), "F32");
	T_STREQ(dominant(mixed, 4, 5), "Q8_0"); /* a retired value: the tensors decide */
	T_STREQ(dominant(mixed, 4, 4000), "Q8_0");
	T_STREQ(dominant(experts, 2, -1), "MXFP4");
	T_STREQ(dominant(tie, 2, -1), "F32"); /* the lower type id */
	T_STREQ(dominant(flat, 1, -1), "F16");
	T_TRUE(dominant(NULL, 0, -1) == NULL);
	T_STREQ(dominant(NULL, 0, 7), "Q8_0");
}

/* The SHA-256 of @f's bytes from key @first's offset to key @after's. */
static void
range_digest(const void *image, const struct gguf_file *f, const char *first, const char *after,
             uint8_t out[SHA256_BYTES])
{
	const struct gguf_kv *a = gguf_find_kv(f, first), *b = gguf_find_kv(f, after);

	T_TRUE(a != NULL && b != NULL && a->offset < b->offset);
	if (a && b)
		sha256_buf((const char *)image + a->offset, (size_t)(b->offset - a->offset), out);
}

/* A small tokenizer's metadata; @score0 and @tmpl vary it. */
static void
tok_file(float score0, const char *tmpl, void **ret_buf, struct gguf_file **ret_f)
{
	static const char *const tokens[] = {"<unk>", "<s>", "</s>", "a", "b", "ab"};
	static const char *const merges[] = {"a b"};
	float scores[6] = {score0, 0, 0, -1, -2, -0.5f};
	int32_t types[6] = {2, 3, 3, 1, 1, 1};
	struct gguf_writer *w = NULL;
	size_t size = 0;

	T_OK(gguf_writer_new(&w));
	T_OK(gguf_writer_set_str(w, "general.architecture", "llama"));
	T_OK(gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2"));
	T_OK(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", tokens, 6));
	T_OK(gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VTYPE_FLOAT32, scores, 6));
	T_OK(gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VTYPE_INT32, types, 6));
	T_OK(gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, 1));
	T_OK(gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1));
	T_OK(gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true));
	T_OK(gguf_writer_set_str(w, "tokenizer.chat_template", tmpl));
	T_OK(gguf_writer_write_mem(w, NULL, NULL, ret_buf, &size, NULL));
	T_OK(gguf_open_mem(*ret_buf, size, "tok", ret_f, NULL));
	gguf_writer_free(w);
}

static void
test_kv_digest(void)
{
	uint8_t d[SHA256_BYTES], want[SHA256_BYTES], other[SHA256_BYTES], empty[SHA256_BYTES];
	void *buf = NULL, *buf2 = NULL;
	struct gguf_file *f = NULL, *g = NULL;

	tok_file(0, "{{ x }}", &buf, &f);
	T_TRUE(f != NULL);
	if (f == NULL)
		return;
	gguf_kv_sha256(f, "tokenizer.ggml.", d);
	range_digest(buf, f, "tokenizer.ggml.model", "tokenizer.chat_template", want);
	T_TRUE(memcmp(d, want, sizeof(d)) == 0);
	/* another chat template: the same tokenizer */
	tok_file(0, "{{ y }}", &buf2, &g);
	gguf_kv_sha256(g, "tokenizer.ggml.", other);
	T_TRUE(memcmp(d, other, sizeof(d)) == 0);
	gguf_close(g);
	orch_free(buf2);
	/* another score: another tokenizer */
	tok_file(0.25f, "{{ x }}", &buf2, &g);
	gguf_kv_sha256(g, "tokenizer.ggml.", other);
	T_TRUE(memcmp(d, other, sizeof(d)) != 0);
	gguf_close(g);
	orch_free(buf2);
	/* no key with the prefix: the digest of nothing */
	gguf_kv_sha256(f, "nothing.", d);
	sha256_buf(NULL, 0, empty);
	T_TRUE(memcmp(d, empty, sizeof(d)) == 0);
	gguf_close(f);
	orch_free(buf);
}

/* stories260K: the digest is that of its tokenizer.ggml.* pairs' bytes (each ends where the next
 * key starts; none is the file's last). */
static void
test_kv_digest_real(void)
{
	size_t size = 0;
	const char *image = t_read_file(t_path("models/stories260K.gguf"), &size);
	struct gguf_file *f = NULL;
	struct sha256 s;
	uint8_t d[SHA256_BYTES], want[SHA256_BYTES];
	uint32_t n = 0;

	T_TRUE(image != NULL);
	T_OK(gguf_open(t_path("models/stories260K.gguf"), &f, NULL));
	if (f == NULL || image == NULL)
		return;
	sha256_init(&s);
	for (size_t i = 0; i + 1 < gguf_kv_count(f); i++) {
		uint64_t a = gguf_kv_at(f, i)->offset, b = gguf_kv_at(f, i + 1)->offset;
		if (strncmp(gguf_kv_at(f, i)->key, "tokenizer.ggml.", 15) == 0) {
			sha256_update(&s, image + a, (size_t)(b - a));
			n++;
		}
	}
	sha256_final(&s, want);
	T_EQ(n, 9); /* tokens, scores, token_type, model and five ids */
	gguf_kv_sha256(f, "tokenizer.ggml.", d);
	T_TRUE(memcmp(d, want, sizeof(d)) == 0);
	T_STREQ(gguf_dominant_type(f), "F32");
	gguf_close(f);
	free((void *)(uintptr_t)image);
}

int
main(void)
{
	T_RUN(test_ftype_names);
	T_RUN(test_dominant);
	T_RUN(test_kv_digest);
	T_RUN(test_kv_digest_real);
	return t_done();
}
