/*
 * ident.c - a GGUF file's dominant type and metadata digests (ident.h).
 */
#include "ident.h"

#include <string.h>

#include "ggml_type.h"
#include "gguf.h"

const char *
gguf_ftype_name(uint32_t ftype)
{
	/* llama.h's enum llama_ftype, named as llama-quantize takes them; NULL: retired */
	static const char *const names[] = {
	        "F32",    "F16",    "Q4_0",  "Q4_1",    NULL,     NULL,     NULL,       "Q8_0",
	        "Q5_0",   "Q5_1",   "Q2_K",  "Q3_K_S",  "Q3_K_M", "Q3_K_L", "Q4_K_S",   "Q4_K_M",
	        "Q5_K_S", "Q5_K_M", "Q6_K",  "IQ2_XXS", "IQ2_XS", "Q2_K_S", "IQ3_XS",   "IQ3_XXS",
	        "IQ1_S",  "IQ4_NL", "IQ3_S", "IQ3_M",   "IQ2_S",  "IQ2_M",  "IQ4_XS",   "IQ1_M",
	        "BF16",   NULL,     NULL,    NULL,      "TQ1_0",  "TQ2_0",  "MXFP4_MOE"};

	return ftype < sizeof(names) / sizeof(names[0]) ? names[ftype] : NULL;
}

/* The type with the most bytes among @f's tensors of at least @min_dims dimensions; -1: none. */
static int
heaviest(const struct gguf_file *f, uint32_t min_dims)
{
	uint64_t bytes[GGML_TYPE_ID_LIMIT] = {0};
	int best = -1;

	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		if (t->n_dims >= min_dims && t->type < GGML_TYPE_ID_LIMIT)
			bytes[t->type] += t->nbytes;
	}
	for (int ty = 0; ty < GGML_TYPE_ID_LIMIT; ty++)
		if (bytes[ty] > 0 && (best < 0 || bytes[ty] > bytes[best]))
			best = ty;
	return best;
}

const char *
gguf_dominant_type(const struct gguf_file *f)
{
	uint64_t ftype;
	int ty;

	if (gguf_get_uint(f, "general.file_type", &ftype) == ORCH_OK && ftype <= UINT32_MAX &&
	    gguf_ftype_name((uint32_t)ftype) != NULL)
		return gguf_ftype_name((uint32_t)ftype);
	if ((ty = heaviest(f, 2)) < 0 && (ty = heaviest(f, 1)) < 0)
		return NULL;
	return ggml_type_name((uint32_t)ty);
}

static void
put_le(struct sha256 *s, uint64_t v, size_t n)
{
	uint8_t b[8];

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	sha256_update(s, b, n);
}

static void
put_str(struct sha256 *s, const char *p, uint64_t n)
{
	put_le(s, n, 8);
	sha256_update(s, p, (size_t)n);
}

/* One scalar value, little-endian, in its own width. */
static void
put_scalar(struct sha256 *s, const struct gguf_value *v)
{
	size_t n = gguf_vtype_size(v->type);
	float f32;
	uint32_t b32;
	uint64_t b64;

	switch (v->type) {
	case GGUF_VTYPE_FLOAT32:
		f32 = (float)v->v.f; /* exact: it was read as a float */
		memcpy(&b32, &f32, sizeof(b32));
		return put_le(s, b32, 4);
	case GGUF_VTYPE_FLOAT64:
		memcpy(&b64, &v->v.f, sizeof(b64));
		return put_le(s, b64, 8);
	case GGUF_VTYPE_BOOL:
		return put_le(s, v->v.b ? 1 : 0, 1);
	case GGUF_VTYPE_INT8:
	case GGUF_VTYPE_INT16:
	case GGUF_VTYPE_INT32:
	case GGUF_VTYPE_INT64:
		return put_le(s, (uint64_t)v->v.i, n);
	case GGUF_VTYPE_UINT8:
	case GGUF_VTYPE_UINT16:
	case GGUF_VTYPE_UINT32:
	case GGUF_VTYPE_UINT64:
		return put_le(s, v->v.u, n);
	case GGUF_VTYPE_STRING:
	case GGUF_VTYPE_ARRAY:
	case GGUF_VTYPE_COUNT:
		return; /* not scalars: put_value's */
	}
}

static void
put_array(struct sha256 *s, const struct gguf_arr *a)
{
	put_le(s, (uint64_t)a->type, 4);
	put_le(s, a->n, 8);
	if (a->type == GGUF_VTYPE_STRING) {
		for (uint64_t i = 0; i < a->n; i++)
			put_str(s, a->strs[i].ptr, a->strs[i].len);
	} else if (a->type == GGUF_VTYPE_ARRAY) {
		for (uint64_t i = 0; i < a->n; i++)
			put_array(s, &a->elems[i].v.a);
	} else {
		sha256_update(s, a->raw, (size_t)(a->n * gguf_vtype_size(a->type)));
	}
}

static void
put_value(struct sha256 *s, const struct gguf_value *v)
{
	put_le(s, (uint64_t)v->type, 4);
	if (v->type == GGUF_VTYPE_STRING)
		put_str(s, v->v.s.ptr, v->v.s.len);
	else if (v->type == GGUF_VTYPE_ARRAY)
		put_array(s, &v->v.a);
	else
		put_scalar(s, v);
}

void
gguf_kv_sha256(const struct gguf_file *f, const char *prefix, uint8_t out[SHA256_BYTES])
{
	struct sha256 s;
	size_t lp = strlen(prefix);

	sha256_init(&s);
	for (size_t i = 0; i < gguf_kv_count(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		if (strncmp(kv->key, prefix, lp) != 0)
			continue;
		put_str(&s, kv->key, strlen(kv->key));
		put_value(&s, &kv->value);
	}
	sha256_final(&s, out);
}
