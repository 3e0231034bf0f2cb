/*
 * gguf_get.c - lookups and typed accessors over a validated GGUF file.
 */
#include <stdlib.h>
#include <string.h>

#include "gguf_internal.h"

static const struct {
	const char *name;
	size_t size;
} vtypes[GGUF_VTYPE_COUNT] = {
        [GGUF_VTYPE_UINT8] = {"uint8", 1},     [GGUF_VTYPE_INT8] = {"int8", 1},
        [GGUF_VTYPE_UINT16] = {"uint16", 2},   [GGUF_VTYPE_INT16] = {"int16", 2},
        [GGUF_VTYPE_UINT32] = {"uint32", 4},   [GGUF_VTYPE_INT32] = {"int32", 4},
        [GGUF_VTYPE_FLOAT32] = {"float32", 4}, [GGUF_VTYPE_BOOL] = {"bool", 1},
        [GGUF_VTYPE_STRING] = {"string", 0},   [GGUF_VTYPE_ARRAY] = {"array", 0},
        [GGUF_VTYPE_UINT64] = {"uint64", 8},   [GGUF_VTYPE_INT64] = {"int64", 8},
        [GGUF_VTYPE_FLOAT64] = {"float64", 8},
};

const char *
gguf_vtype_name(uint32_t t)
{
	return t < GGUF_VTYPE_COUNT ? vtypes[t].name : "?";
}

size_t
gguf_vtype_size(uint32_t t)
{
	return t < GGUF_VTYPE_COUNT ? vtypes[t].size : 0;
}

void
gguf_decode_scalar(uint32_t type, const uint8_t *b, struct gguf_value *v)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	float f32;

	switch ((enum gguf_vtype)type) {
	case GGUF_VTYPE_UINT8:
		v->v.u = b[0];
		break;
	case GGUF_VTYPE_INT8:
		memcpy(&u8, b, 1);
		v->v.i = (int8_t)u8;
		break;
	case GGUF_VTYPE_UINT16:
	case GGUF_VTYPE_INT16:
		memcpy(&u16, b, 2);
		if (type == GGUF_VTYPE_UINT16)
			v->v.u = u16;
		else
			v->v.i = (int16_t)u16;
		break;
	case GGUF_VTYPE_UINT32:
	case GGUF_VTYPE_INT32:
		memcpy(&u32, b, 4);
		if (type == GGUF_VTYPE_UINT32)
			v->v.u = u32;
		else
			v->v.i = (int32_t)u32;
		break;
	case GGUF_VTYPE_FLOAT32:
		memcpy(&f32, b, 4);
		v->v.f = (double)f32;
		break;
	case GGUF_VTYPE_BOOL:
		v->v.b = b[0] != 0;
		break;
	case GGUF_VTYPE_UINT64:
		memcpy(&v->v.u, b, 8);
		break;
	case GGUF_VTYPE_INT64:
		memcpy(&v->v.i, b, 8);
		break;
	case GGUF_VTYPE_FLOAT64:
		memcpy(&v->v.f, b, 8);
		break;
	case GGUF_VTYPE_STRING:
	case GGUF_VTYPE_ARRAY:
	case GGUF_VTYPE_COUNT:
		break;
	}
}

uint32_t
gguf_version(const struct gguf_file *f)
{
	return f->version;
}

uint32_t
gguf_alignment(const struct gguf_file *f)
{
	return f->alignment;
}

uint64_t
gguf_data_offset(const struct gguf_file *f)
{
	return f->data_offset;
}

uint64_t
gguf_size(const struct gguf_file *f)
{
	return f->size;
}

const char *
gguf_name(const struct gguf_file *f)
{
	return f->name;
}

size_t
gguf_kv_count(const struct gguf_file *f)
{
	return f->n_kv;
}

const struct gguf_kv *
gguf_kv_at(const struct gguf_file *f, size_t i)
{
	return i < f->n_kv ? &f->kvs[i] : NULL;
}

size_t
gguf_tensor_count(const struct gguf_file *f)
{
	return f->n_tensors;
}

const struct gguf_tensor *
gguf_tensor_at(const struct gguf_file *f, size_t i)
{
	return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const struct gguf_kv *
gguf_find_kv_linear(const struct gguf_file *f, const char *key)
{
	for (size_t i = 0; i < f->n_kv; i++)
		if (strcmp(f->kvs[i].key, key) == 0)
			return &f->kvs[i];
	return NULL;
}

static int
cmp_key(const void *key, const void *elem)
{
	return strcmp(key, (*(const struct gguf_kv *const *)elem)->key);
}

static int
cmp_name(const void *name, const void *elem)
{
	return strcmp(name, (*(const struct gguf_tensor *const *)elem)->name);
}

const struct gguf_kv *
gguf_find_kv(const struct gguf_file *f, const char *key)
{
	const struct gguf_kv *const *p = bsearch(key, f->kv_index, f->n_kv, sizeof(*p), cmp_key);

	return p ? *p : NULL;
}

const struct gguf_tensor *
gguf_find_tensor(const struct gguf_file *f, const char *name)
{
	const struct gguf_tensor *const *p =
	        bsearch(name, f->tensor_index, f->n_tensors, sizeof(*p), cmp_name);

	return p ? *p : NULL;
}

static orch_err
get(const struct gguf_file *f, const char *key, enum gguf_vtype type, const struct gguf_value **ret)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);

	if (kv == NULL)
		return ORCH_ENOTFOUND;
	if (kv->value.type != type)
		return ORCH_ETYPE;
	*ret = &kv->value;
	return ORCH_OK;
}

#define GGUF_GETTER(fn, ctype, vt, field)                                   \
	orch_err fn(const struct gguf_file *f, const char *key, ctype *out) \
	{                                                                   \
		const struct gguf_value *v;                                 \
		orch_err rv = get(f, key, vt, &v);                          \
		if (rv == ORCH_OK)                                          \
			*out = (ctype)v->v.field;                           \
		return rv;                                                  \
	}

GGUF_GETTER(gguf_get_u8, uint8_t, GGUF_VTYPE_UINT8, u)
GGUF_GETTER(gguf_get_i8, int8_t, GGUF_VTYPE_INT8, i)
GGUF_GETTER(gguf_get_u16, uint16_t, GGUF_VTYPE_UINT16, u)
GGUF_GETTER(gguf_get_i16, int16_t, GGUF_VTYPE_INT16, i)
GGUF_GETTER(gguf_get_u32, uint32_t, GGUF_VTYPE_UINT32, u)
GGUF_GETTER(gguf_get_i32, int32_t, GGUF_VTYPE_INT32, i)
GGUF_GETTER(gguf_get_u64, uint64_t, GGUF_VTYPE_UINT64, u)
GGUF_GETTER(gguf_get_i64, int64_t, GGUF_VTYPE_INT64, i)
GGUF_GETTER(gguf_get_f32, float, GGUF_VTYPE_FLOAT32, f)
GGUF_GETTER(gguf_get_f64, double, GGUF_VTYPE_FLOAT64, f)
GGUF_GETTER(gguf_get_bool, bool, GGUF_VTYPE_BOOL, b)
GGUF_GETTER(gguf_get_str, struct gguf_str, GGUF_VTYPE_STRING, s)

orch_err
gguf_get_arr(const struct gguf_file *f, const char *key, enum gguf_vtype elem,
             const struct gguf_arr **out)
{
	const struct gguf_value *v;
	orch_err rv = get(f, key, GGUF_VTYPE_ARRAY, &v);

	if (rv != ORCH_OK)
		return rv;
	if (elem != GGUF_VTYPE_COUNT && v->v.a.type != elem)
		return ORCH_ETYPE;
	*out = &v->v.a;
	return ORCH_OK;
}

static bool
is_signed_int(enum gguf_vtype t)
{
	return t == GGUF_VTYPE_INT8 || t == GGUF_VTYPE_INT16 || t == GGUF_VTYPE_INT32 ||
	       t == GGUF_VTYPE_INT64;
}

static bool
is_unsigned_int(enum gguf_vtype t)
{
	return t == GGUF_VTYPE_UINT8 || t == GGUF_VTYPE_UINT16 || t == GGUF_VTYPE_UINT32 ||
	       t == GGUF_VTYPE_UINT64;
}

orch_err
gguf_get_uint(const struct gguf_file *f, const char *key, uint64_t *out)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);

	if (kv == NULL)
		return ORCH_ENOTFOUND;
	if (is_unsigned_int(kv->value.type)) {
		*out = kv->value.v.u;
		return ORCH_OK;
	}
	if (!is_signed_int(kv->value.type))
		return ORCH_ETYPE;
	if (kv->value.v.i < 0)
		return ORCH_ERANGE;
	*out = (uint64_t)kv->value.v.i;
	return ORCH_OK;
}

orch_err
gguf_get_float(const struct gguf_file *f, const char *key, double *out)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);

	if (kv == NULL)
		return ORCH_ENOTFOUND;
	if (kv->value.type != GGUF_VTYPE_FLOAT32 && kv->value.type != GGUF_VTYPE_FLOAT64)
		return ORCH_ETYPE;
	*out = kv->value.v.f;
	return ORCH_OK;
}

static void
arr_elem(const struct gguf_arr *a, uint64_t i, struct gguf_value *v)
{
	size_t sz = gguf_vtype_size(a->type);

	memset(v, 0, sizeof(*v));
	v->type = a->type;
	if (a->raw != NULL && sz != 0)
		gguf_decode_scalar(a->type, (const uint8_t *)a->raw + i * sz, v);
}

double
gguf_arr_num(const struct gguf_arr *a, uint64_t i)
{
	struct gguf_value v;

	arr_elem(a, i, &v);
	if (is_unsigned_int(v.type))
		return (double)v.v.u;
	if (is_signed_int(v.type))
		return (double)v.v.i;
	if (v.type == GGUF_VTYPE_BOOL)
		return v.v.b ? 1.0 : 0.0;
	return v.v.f;
}

int64_t
gguf_arr_int(const struct gguf_arr *a, uint64_t i)
{
	struct gguf_value v;

	arr_elem(a, i, &v);
	if (is_unsigned_int(v.type))
		return v.v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.v.u;
	if (v.type == GGUF_VTYPE_BOOL)
		return v.v.b;
	return v.v.i;
}
