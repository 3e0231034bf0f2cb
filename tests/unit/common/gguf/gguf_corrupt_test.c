/*
 * gguf_corrupt_test.c - every validation check of the reader, one
 * hand-made bad file each (exact code, and the message names the problem
 * and the offset); a truncation sweep over a small file with every value
 * type; and an out-of-memory loop. Run under ASan+UBSan in 'make test'.
 */
#include "base/alloc.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "gguf_bytes.h"
#include "t.h"

/* Open a copy of exactly @n bytes, so ASan sees any read past the end. */
static orch_err
open_bytes(const uint8_t *p, size_t n, struct orch_errinfo *e)
{
	struct gguf_file *f = NULL;
	uint8_t *copy = malloc(n ? n : 1);
	orch_err rv;

	memcpy(copy, p, n);
	rv = gguf_open_mem(copy, n, "bad.gguf", &f, e);
	gguf_close(f);
	free(copy);
	return rv;
}

#define EXPECT(b, code, needle)                                                                    \
	do {                                                                                       \
		struct orch_errinfo e_ = {0};                                                      \
		T_ERR(open_bytes((b)->p, (b)->n, &e_), code);                                      \
		if (strstr(e_.msg, needle) == NULL || strstr(e_.msg, "bad.gguf: offset ") == NULL) \
			T_FAIL_("message \"%s\" lacks \"%s\"", e_.msg, needle);                    \
		free((b)->p);                                                                      \
	} while (0)

/* One tensor record of F32 [@ne0] at @offset, data padded; @n_kv extra keys precede. */
static void
one_tensor(struct gb *b, const char *name, uint32_t type, uint64_t ne0, uint64_t offset,
           size_t data_bytes)
{
	gb_header(b, 3, 1, 0);
	gb_tensor(b, name, 1, &ne0, type, offset);
	gb_pad(b, 32);
	gb_zeros(b, data_bytes);
}

static void
test_header_checks(void)
{
	struct gb b = {0};

	gb_put(&b, "GGUG", 4);
	gb_u32(&b, 3);
	EXPECT(&b, ORCH_EGGUF_MAGIC, "not a GGUF file");
	b = (struct gb){0};
	gb_header(&b, 1, 0, 0);
	EXPECT(&b, ORCH_EGGUF_VERSION, "GGUF v1");
	b = (struct gb){0};
	gb_header(&b, 4, 0, 0);
	EXPECT(&b, ORCH_EGGUF_VERSION, "unknown GGUF version 4");
	b = (struct gb){0};
	gb_header(&b, 0x03000000u, 0, 0);
	EXPECT(&b, ORCH_EGGUF_VERSION, "big-endian");
	b = (struct gb){0};
	gb_header(&b, 3, GGUF_MAX_TENSORS + 1ull, 0);
	EXPECT(&b, ORCH_EGGUF_LIMIT, "tensor count 65537");
	b = (struct gb){0};
	gb_header(&b, 3, 0, GGUF_MAX_KV + 1ull);
	EXPECT(&b, ORCH_EGGUF_LIMIT, "metadata count");
	b = (struct gb){0};
	gb_header(&b, 3, 100, GGUF_MAX_KV); /* counts within the caps, but not in 24 bytes */
	EXPECT(&b, ORCH_EGGUF_TRUNCATED, "cannot fit in the 0 bytes left");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 5); /* promises 5 keys, has none */
	EXPECT(&b, ORCH_EGGUF_TRUNCATED, "truncated");
}

static void
test_metadata_checks(void)
{
	struct gb b = {0};

	gb_header(&b, 3, 0, 1);
	gb_u64(&b, 1u << 20); /* key length > file size */
	gb_zeros(&b, 16);     /* enough bytes for one key, so the length check is reached */
	EXPECT(&b, ORCH_EGGUF_LIMIT, "exceeds the file size");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_str(&b, "");
	gb_zeros(&b, 16);
	EXPECT(&b, ORCH_EGGUF_NAME, "metadata key is empty");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_strn(&b, "a\0b", 3);
	gb_zeros(&b, 16);
	EXPECT(&b, ORCH_EGGUF_NAME, "NUL byte");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_str(&b, "k");
	gb_u32(&b, 13);
	gb_zeros(&b, 8);
	EXPECT(&b, ORCH_EGGUF_VTYPE, "unknown metadata value type 13");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_str(&b, "k");
	gb_u32(&b, GGUF_VTYPE_BOOL);
	gb_u8(&b, 2);
	EXPECT(&b, ORCH_EGGUF_VTYPE, "bool value");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 2);
	gb_kv_u32(&b, "dup", 1);
	gb_kv_u32(&b, "dup", 2);
	EXPECT(&b, ORCH_EGGUF_DUPLICATE, "duplicate metadata key 'dup'");
}

static void
test_array_checks(void)
{
	struct gb b = {0};

	gb_header(&b, 3, 0, 1);
	gb_str(&b, "a");
	gb_u32(&b, GGUF_VTYPE_ARRAY);
	gb_u32(&b, GGUF_VTYPE_UINT32);
	gb_u64(&b, UINT64_MAX / 2); /* would overflow n × 4 */
	EXPECT(&b, ORCH_EGGUF_LIMIT, "does not fit");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_str(&b, "a");
	gb_u32(&b, GGUF_VTYPE_ARRAY);
	gb_u32(&b, GGUF_VTYPE_STRING);
	gb_u64(&b, 10); /* 10 strings need ≥ 80 bytes */
	gb_str(&b, "x");
	EXPECT(&b, ORCH_EGGUF_TRUNCATED, "does not fit");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_str(&b, "a");
	gb_u32(&b, GGUF_VTYPE_ARRAY);
	gb_u32(&b, GGUF_VTYPE_BOOL);
	gb_u64(&b, 3);
	gb_u8(&b, 0);
	gb_u8(&b, 1);
	gb_u8(&b, 7);
	EXPECT(&b, ORCH_EGGUF_VTYPE, "bool array element");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_str(&b, "a");
	gb_u32(&b, GGUF_VTYPE_ARRAY);
	for (int d = 0; d < 10; d++) { /* arrays of arrays, ten deep */
		gb_u32(&b, GGUF_VTYPE_ARRAY);
		gb_u64(&b, 1);
	}
	gb_zeros(&b, 64);
	EXPECT(&b, ORCH_EGGUF_LIMIT, "nested too deeply");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_str(&b, "a");
	gb_u32(&b, GGUF_VTYPE_ARRAY);
	gb_u32(&b, 99);
	gb_u64(&b, 0);
	EXPECT(&b, ORCH_EGGUF_VTYPE, "unknown metadata value type 99");
}

static void
test_alignment_checks(void)
{
	struct gb b = {0};

	gb_header(&b, 3, 0, 1);
	gb_kv_u32(&b, "general.alignment", 48);
	EXPECT(&b, ORCH_EGGUF_ALIGN, "not a power of two");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_kv_u32(&b, "general.alignment", 0);
	EXPECT(&b, ORCH_EGGUF_ALIGN, "not a power of two");
	b = (struct gb){0};
	gb_header(&b, 3, 0, 1);
	gb_str(&b, "general.alignment");
	gb_u32(&b, GGUF_VTYPE_UINT64);
	gb_u64(&b, 32);
	EXPECT(&b, ORCH_EGGUF_ALIGN, "want uint32");
	b = (struct gb){0};
	one_tensor(&b, "t", GGML_TYPE_F32, 8, 16, 64);
	EXPECT(&b, ORCH_EGGUF_ALIGN, "offset 16 is not a multiple of the alignment 32");
}

static void
test_shape_checks(void)
{
	struct gb b = {0};
	uint64_t ne[5] = {4, 0, 1, 1, 1};
	uint64_t big[2] = {1ull << 40, 1ull << 40};

	gb_header(&b, 3, 1, 0);
	gb_tensor(&b, "t", 0, ne, GGML_TYPE_F32, 0);
	gb_zeros(&b, 16); /* a record of 0 dims is shorter than the smallest valid one */
	EXPECT(&b, ORCH_EGGUF_SHAPE, "has 0 dims");
	b = (struct gb){0};
	gb_header(&b, 3, 1, 0);
	gb_tensor(&b, "t", 5, ne, GGML_TYPE_F32, 0);
	EXPECT(&b, ORCH_EGGUF_SHAPE, "has 5 dims");
	b = (struct gb){0};
	gb_header(&b, 3, 1, 0);
	gb_tensor(&b, "t", 2, ne, GGML_TYPE_F32, 0);
	EXPECT(&b, ORCH_EGGUF_SHAPE, "dim 1 is zero");
	b = (struct gb){0};
	gb_header(&b, 3, 1, 0);
	gb_tensor(&b, "t", 2, big, GGML_TYPE_F32, 0);
	EXPECT(&b, ORCH_EGGUF_SHAPE, "overflows");
	b = (struct gb){0};
	one_tensor(&b, "w", GGML_TYPE_Q8_0, 33, 0, 64);
	EXPECT(&b, ORCH_EGGUF_SHAPE, "not a whole number of 32-element Q8_0 blocks");
	b = (struct gb){0};
	one_tensor(&b, "old", 4, 32, 0, 64);
	EXPECT(&b, ORCH_EGGUF_TTYPE, "tensor 'old' has unknown ggml type id 4");
	b = (struct gb){0};
	one_tensor(&b, "w", 1000, 32, 0, 64);
	EXPECT(&b, ORCH_EGGUF_TTYPE, "unknown ggml type id 1000");
}

static void
test_tensor_name_checks(void)
{
	struct gb b = {0};
	char longname[300];

	one_tensor(&b, "", GGML_TYPE_F32, 8, 0, 32);
	EXPECT(&b, ORCH_EGGUF_NAME, "tensor name length 0");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	b = (struct gb){0};
	one_tensor(&b, longname, GGML_TYPE_F32, 8, 0, 32);
	EXPECT(&b, ORCH_EGGUF_LIMIT, "tensor name length 299");
	b = (struct gb){0};
	gb_header(&b, 3, 1, 0);
	gb_strn(&b, "a\0", 2);
	gb_zeros(&b, 32);
	EXPECT(&b, ORCH_EGGUF_NAME, "NUL byte");
}

static void
test_data_checks(void)
{
	struct gb b = {0};
	uint64_t ne = 8; /* 32 bytes of F32 */

	one_tensor(&b, "t", GGML_TYPE_F32, 8, 0, 16);
	EXPECT(&b, ORCH_EGGUF_BOUNDS, "runs past the end of the file");
	b = (struct gb){0};
	one_tensor(&b, "t", GGML_TYPE_F32, 8, 1ull << 62, 32);
	EXPECT(&b, ORCH_EGGUF_BOUNDS, "runs past the end of the file");
	b = (struct gb){0};
	gb_header(&b, 3, 2, 0);
	gb_tensor(&b, "a", 1, &ne, GGML_TYPE_F32, 0);
	ne = 16;
	gb_tensor(&b, "b", 1, &ne, GGML_TYPE_F32, 0);
	gb_pad(&b, 32);
	gb_zeros(&b, 64);
	EXPECT(&b, ORCH_EGGUF_OVERLAP, "tensors 'a' and 'b' overlap");
	b = (struct gb){0};
	ne = 8;
	gb_header(&b, 3, 2, 0);
	gb_tensor(&b, "same", 1, &ne, GGML_TYPE_F32, 0);
	gb_tensor(&b, "same", 1, &ne, GGML_TYPE_F32, 32);
	gb_pad(&b, 32);
	gb_zeros(&b, 64);
	EXPECT(&b, ORCH_EGGUF_DUPLICATE, "duplicate tensor name 'same'");
	b = (struct gb){0};
	gb_header(&b, 3, 1, 0);
	gb_tensor(&b, "t", 1, &ne, GGML_TYPE_F32, 0); /* no data section at all */
	EXPECT(&b, ORCH_EGGUF_TRUNCATED, "data section starts at");
}

/* A small file with every value type, nested arrays and three tensors. */
static orch_err
small_file(void **ret, size_t *ret_n)
{
	static const float w[64] = {1, 2, 3};
	static const uint8_t q[34 * 2] = {0};
	static const int32_t ints[3] = {-1, 0, 7};
	struct gguf_value nested[2] = {{.type = GGUF_VTYPE_ARRAY}, {.type = GGUF_VTYPE_ARRAY}};
	struct gguf_value outer = {.type = GGUF_VTYPE_ARRAY};
	const char *strs[2] = {"ab", ""};
	struct gguf_writer *wr = NULL;
	uint64_t ne2[2] = {32, 2}, ne1[1] = {64};
	orch_err rv;

	nested[0].v.a = (struct gguf_arr){.type = GGUF_VTYPE_INT32, .n = 3, .raw = ints};
	nested[1].v.a = (struct gguf_arr){.type = GGUF_VTYPE_INT32, .n = 0, .raw = ints};
	outer.v.a = (struct gguf_arr){.type = GGUF_VTYPE_ARRAY, .n = 2, .elems = nested};
	if ((rv = gguf_writer_new(&wr)) != ORCH_OK)
		return rv;
	for (uint32_t t = 0; t < GGUF_VTYPE_COUNT && rv == ORCH_OK; t++) {
		struct gguf_value v = {.type = (enum gguf_vtype)t, .v.u = 1};
		char key[32];
		snprintf(key, sizeof(key), "k.%s", gguf_vtype_name(t));
		if (t == GGUF_VTYPE_STRING)
			v.v.s = (struct gguf_str){"hi", 2};
		if (t == GGUF_VTYPE_ARRAY)
			v = outer;
		rv = gguf_writer_set_value(wr, key, &v);
	}
	if (rv == ORCH_OK)
		rv = gguf_writer_set_arr_str(wr, "k.strs", strs, 2);
	if (rv == ORCH_OK)
		rv = gguf_writer_add_tensor(wr, "f", GGML_TYPE_F32, 1, ne1, w);
	if (rv == ORCH_OK)
		rv = gguf_writer_add_tensor(wr, "q", GGML_TYPE_Q8_0, 2, ne2, q);
	if (rv == ORCH_OK)
		rv = gguf_writer_add_tensor(wr, "g", GGML_TYPE_F32, 1, ne1, w);
	if (rv == ORCH_OK)
		rv = gguf_writer_write_mem(wr, NULL, NULL, ret, ret_n, NULL);
	gguf_writer_free(wr);
	return rv;
}

static void
test_truncation_sweep(void)
{
	void *img = NULL;
	size_t n = 0;
	struct gguf_file *f = NULL;
	uint64_t min_valid = 0;

	T_OK(small_file(&img, &n));
	T_OK(gguf_open_mem(img, n, "small", &f, NULL));
	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		uint64_t end = gguf_data_offset(f) + t->offset + t->nbytes;
		min_valid = end > min_valid ? end : min_valid;
	}
	gguf_close(f);
	T_TRUE(min_valid <= n);
	for (size_t cut = 0; cut < n; cut++) {
		struct orch_errinfo e = {0};
		orch_err rv = open_bytes(img, cut, &e);
		/* Only the padding after the last tensor is optional. */
		if (cut < min_valid && rv == ORCH_OK)
			T_FAIL_("cut at %zu of %zu accepted", cut, n);
		if (cut >= min_valid && rv != ORCH_OK)
			T_FAIL_("cut at %zu (≥ %llu) refused: %s", cut,
			        (unsigned long long)min_valid, e.msg);
		if (t_failed_checks)
			break;
	}
	free(img);
}

struct image {
	void *p;
	size_t n;
};

static orch_err
open_image(void *ctx)
{
	const struct image *img = ctx;
	struct gguf_file *f = NULL;
	orch_err rv = gguf_open_mem(img->p, img->n, "small", &f, NULL);

	gguf_close(f);
	return rv;
}

static void
test_oom_loop(void)
{
	struct image img = {0};

	T_OK(small_file(&img.p, &img.n));
	long faults = t_oom_loop(open_image, &img, 1000);
	free(img.p);
	T_TRUE(faults > 2);
}

int
main(void)
{
	T_RUN(test_header_checks);
	T_RUN(test_metadata_checks);
	T_RUN(test_array_checks);
	T_RUN(test_alignment_checks);
	T_RUN(test_shape_checks);
	T_RUN(test_tensor_name_checks);
	T_RUN(test_data_checks);
	T_RUN(test_truncation_sweep);
	T_RUN(test_oom_loop);
	return t_done();
}
