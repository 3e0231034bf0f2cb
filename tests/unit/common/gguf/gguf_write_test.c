/*
 * gguf_write_test.c - writer round trips: write, read back with the reader,
 * compare every key and tensor; a file copy of a real model; the fill
 * callback; alignment; refusals; OOM loop.
 */
#include <unistd.h>

#include "base/alloc.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "t.h"

static int
value_eq(const struct gguf_value *a, const struct gguf_value *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case GGUF_VTYPE_STRING:
		return a->v.s.len == b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0;
	case GGUF_VTYPE_ARRAY:
		if (a->v.a.type != b->v.a.type || a->v.a.n != b->v.a.n)
			return 0;
		for (uint64_t i = 0; i < a->v.a.n; i++) {
			if (a->v.a.type == GGUF_VTYPE_STRING) {
				struct gguf_value x = {GGUF_VTYPE_STRING, {.s = a->v.a.strs[i]}};
				struct gguf_value y = {GGUF_VTYPE_STRING, {.s = b->v.a.strs[i]}};
				if (!value_eq(&x, &y))
					return 0;
			} else if (a->v.a.type == GGUF_VTYPE_ARRAY) {
				if (!value_eq(&a->v.a.elems[i], &b->v.a.elems[i]))
					return 0;
			}
		}
		if (a->v.a.raw != NULL)
			return memcmp(a->v.a.raw, b->v.a.raw,
			              (size_t)a->v.a.n * gguf_vtype_size(a->v.a.type)) == 0;
		return 1;
	case GGUF_VTYPE_BOOL:
		return a->v.b == b->v.b;
	case GGUF_VTYPE_FLOAT32:
	case GGUF_VTYPE_FLOAT64:
		return memcmp(&a->v.f, &b->v.f, sizeof(double)) == 0;
	default:
		return a->v.u == b->v.u;
	}
}

/* Every key and tensor of @a is in @b with the same value, shape, type and bytes. */
static void
expect_same(const struct gguf_file *a, const struct gguf_file *b)
{
	T_EQ(gguf_kv_count(a), gguf_kv_count(b));
	T_EQ(gguf_tensor_count(a), gguf_tensor_count(b));
	for (size_t i = 0; i < gguf_kv_count(a); i++) {
		const struct gguf_kv *x = gguf_kv_at(a, i), *y = gguf_kv_at(b, i);
		T_STREQ(x->key, y->key);
		if (!value_eq(&x->value, &y->value))
			T_FAIL_("key %s differs", x->key);
	}
	for (size_t i = 0; i < gguf_tensor_count(a); i++) {
		const struct gguf_tensor *x = gguf_tensor_at(a, i), *y = gguf_tensor_at(b, i);
		T_STREQ(x->name, y->name);
		T_EQ(x->type, y->type);
		T_EQ(x->n_dims, y->n_dims);
		for (int d = 0; d < 4; d++)
			T_EQ(x->ne[d], y->ne[d]);
		T_EQ(x->nbytes, y->nbytes);
		T_TRUE(memcmp(x->data, y->data, (size_t)x->nbytes) == 0);
	}
}

/* Copy every key and tensor of @src into a new writer. */
static orch_err
copy_into(const struct gguf_file *src, struct gguf_writer **ret)
{
	struct gguf_writer *w = NULL;
	orch_err rv = gguf_writer_new(&w);

	for (size_t i = 0; rv == ORCH_OK && i < gguf_kv_count(src); i++)
		rv = gguf_writer_set_value(w, gguf_kv_at(src, i)->key, &gguf_kv_at(src, i)->value);
	for (size_t i = 0; rv == ORCH_OK && i < gguf_tensor_count(src); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(src, i);
		rv = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data);
	}
	if (rv != ORCH_OK) {
		gguf_writer_free(w);
		return rv;
	}
	*ret = w;
	return ORCH_OK;
}

static void
test_copy_real_files(void)
{
	static const char *files[] = {"models/stories260K.gguf", "models/stories260K-Q4_0.gguf",
	                              "vocab/ggml-vocab-qwen2.gguf",
	                              "vocab/ggml-vocab-llama-spm.gguf"};

	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		struct gguf_file *a = NULL, *b = NULL;
		struct gguf_writer *w = NULL;
		char path[] = "/tmp/orch-gguf-write-XXXXXX";
		int fd = mkstemp(path);
		T_TRUE(fd >= 0);
		close(fd);
		T_OK(gguf_open(t_path(files[k]), &a, NULL));
		T_OK(copy_into(a, &w));
		T_OK(gguf_writer_write_file(w, path, NULL, NULL, NULL));
		T_OK(gguf_open(path, &b, NULL));
		expect_same(a, b);
		T_EQ(gguf_version(b), 3);
		gguf_writer_free(w);
		gguf_close(a);
		gguf_close(b);
		unlink(path);
		if (t_failed_checks)
			return;
	}
}

static orch_err
fill_pattern(void *ctx, size_t index, const char *name, void *dst, uint64_t nbytes)
{
	(void)ctx;
	(void)name;
	for (uint64_t i = 0; i < nbytes; i++)
		((uint8_t *)dst)[i] = (uint8_t)(i * 7 + index);
	return ORCH_OK;
}

static void
test_every_type_and_alignment(void)
{
	struct gguf_writer *w = NULL;
	struct gguf_file *f = NULL;
	const struct gguf_arr *arr;
	void *img = NULL;
	size_t n = 0, k = 0;
	static const uint16_t u16s[3] = {1, 2, 65535};
	static const char *strs[3] = {"x", "", "\xe2\x96\x81hello"};
	uint64_t ne[2];

	T_OK(gguf_writer_new(&w));
	T_OK(gguf_writer_set_alignment(w, 64));
	T_OK(gguf_writer_set_u32(w, "a.u32", 7));
	T_OK(gguf_writer_set_i32(w, "a.i32", -7));
	T_OK(gguf_writer_set_u64(w, "a.u64", UINT64_MAX));
	T_OK(gguf_writer_set_f32(w, "a.f32", 0.25f));
	T_OK(gguf_writer_set_bool(w, "a.bool", true));
	T_OK(gguf_writer_set_str(w, "a.str", "value"));
	T_OK(gguf_writer_set_str(w, "a.str", "replaced")); /* same key: replaced in place */
	T_OK(gguf_writer_set_arr(w, "a.u16s", GGUF_VTYPE_UINT16, u16s, 3));
	T_OK(gguf_writer_set_arr_str(w, "a.strs", strs, 3));
	/* one tensor of every type a block can be built for, data from the fill callback */
	for (uint32_t id = 0; id < GGML_TYPE_ID_LIMIT; id++) {
		const struct ggml_type_info *ti = ggml_type_get(id);
		char name[32];
		if (ti == NULL)
			continue;
		ne[0] = ti->block_size * 2;
		ne[1] = 3;
		snprintf(name, sizeof(name), "t.%s", ti->name);
		T_OK(gguf_writer_add_tensor(w, name, id, 2, ne, NULL));
		k++;
	}
	T_OK(gguf_writer_write_mem(w, fill_pattern, NULL, &img, &n, NULL));
	T_OK(gguf_open_mem(img, n, "mem", &f, NULL));
	T_EQ(gguf_alignment(f), 64);
	T_EQ(gguf_tensor_count(f), k);
	T_EQ(gguf_kv_count(f), 9); /* 8 set + general.alignment */
	struct gguf_str s;
	T_OK(gguf_get_str(f, "a.str", &s));
	T_TRUE(s.len == 8 && memcmp(s.ptr, "replaced", 8) == 0);
	T_OK(gguf_get_arr(f, "a.u16s", GGUF_VTYPE_UINT16, &arr));
	T_EQ(gguf_arr_int(arr, 2), 65535);
	T_OK(gguf_get_arr(f, "a.strs", GGUF_VTYPE_STRING, &arr));
	T_EQ(arr->strs[2].len, 8);
	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		T_EQ(t->offset % 64, 0);
		T_EQ(((const uint8_t *)t->data)[1], (uint8_t)(7 + i));
	}
	gguf_close(f);
	orch_free(img);
	gguf_writer_free(w);
}

static void
test_refusals(void)
{
	struct gguf_writer *w = NULL;
	uint64_t ne[2] = {33, 1}, ok[1] = {32};
	struct orch_errinfo e = {0};
	void *img = NULL;
	size_t n;

	T_OK(gguf_writer_new(&w));
	T_ERR(gguf_writer_set_alignment(w, 48), ORCH_EINVAL);
	T_ERR(gguf_writer_set_u32(w, "", 1), ORCH_EINVAL);
	T_ERR(gguf_writer_add_tensor(w, "bad", GGML_TYPE_Q8_0, 2, ne, NULL), ORCH_EINVAL);
	T_ERR(gguf_writer_add_tensor(w, "bad", 4, 1, ok, NULL), ORCH_EINVAL);
	T_ERR(gguf_writer_add_tensor(w, "bad", GGML_TYPE_F32, 5, ok, NULL), ORCH_EINVAL);
	T_OK(gguf_writer_add_tensor(w, "t", GGML_TYPE_F32, 1, ok, NULL));
	T_ERR(gguf_writer_add_tensor(w, "t", GGML_TYPE_F32, 1, ok, NULL), ORCH_EINVAL);
	T_ERR(gguf_writer_write_mem(w, NULL, NULL, &img, &n, &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "tensor 't' has no data") != NULL);
	T_ERR(gguf_writer_write_file(w, "/nonexistent-dir/x.gguf", fill_pattern, NULL, &e),
	      ORCH_EIO);
	T_TRUE(strstr(e.msg, "/nonexistent-dir/x.gguf.tmp") != NULL);
	gguf_writer_free(w);
}

static orch_err
copy_and_write(void *ctx)
{
	struct gguf_writer *w = NULL;
	void *img = NULL;
	size_t n;
	orch_err rv = copy_into(ctx, &w);

	if (rv == ORCH_OK)
		rv = gguf_writer_write_mem(w, NULL, NULL, &img, &n, NULL);
	gguf_writer_free(w);
	orch_free(img);
	return rv;
}

static void
test_writer_oom_loop(void)
{
	struct gguf_file *src = NULL;

	T_OK(gguf_open(t_path("models/stories260K.gguf"), &src, NULL));
	long faults = t_oom_loop(copy_and_write, src, 5000);
	gguf_close(src);
	T_TRUE(faults > 10);
}

int
main(void)
{
	T_RUN(test_copy_real_files);
	T_RUN(test_every_type_and_alignment);
	T_RUN(test_refusals);
	T_RUN(test_writer_oom_loop);
	return t_done();
}
