/*
 * gguf_tensors.c - the tensor table: records, shapes, data ranges, and the
 * name indexes with their duplicate checks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ggml_type.h"
#include "gguf_internal.h"

struct tcur {
	const uint8_t *p;
	uint64_t size, pos;
	struct gguf_file *f;
	struct orch_errinfo *err;
};

typedef unsigned long long ull;

static orch_err tfail(struct tcur *c, uint64_t at, orch_err code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static orch_err
tfail(struct tcur *c, uint64_t at, orch_err code, const char *fmt, ...)
{
	char what[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return orch_errf(c->err, code, "%s: offset %llu: %s", c->f->name, (ull)at, what);
}

static orch_err
tread(struct tcur *c, void *dst, uint64_t n, const char *what)
{
	if (n > c->size - c->pos)
		return tfail(c, c->pos, ORCH_EGGUF_TRUNCATED,
		             "truncated: %s needs %llu bytes, %llu left", what, (ull)n,
		             (ull)(c->size - c->pos));
	memcpy(dst, c->p + c->pos, (size_t)n);
	c->pos += n;
	return ORCH_OK;
}

static orch_err
read_name(struct tcur *c, struct gguf_tensor *t)
{
	uint64_t at = c->pos, len = 0;
	orch_err rv;

	rv = tread(c, &len, 8, "tensor name length");
	if (rv != ORCH_OK)
		return rv;
	if (len == 0 || len > GGUF_MAX_TENSOR_NAME)
		return tfail(c, at, len ? ORCH_EGGUF_LIMIT : ORCH_EGGUF_NAME,
		             "tensor name length %llu (allowed 1..%u)", (ull)len,
		             GGUF_MAX_TENSOR_NAME);
	if (len > c->size - c->pos)
		return tfail(c, c->pos, ORCH_EGGUF_TRUNCATED,
		             "truncated: tensor name needs %llu bytes, %llu left", (ull)len,
		             (ull)(c->size - c->pos));
	if (memchr(c->p + c->pos, '\0', (size_t)len) != NULL)
		return tfail(c, at, ORCH_EGGUF_NAME, "tensor name holds a NUL byte");
	char *name = gguf_arena_alloc(c->f, (size_t)len + 1);
	if (name == NULL)
		return orch_errf(c->err, ORCH_ENOMEM, "%s: out of memory", c->f->name);
	memcpy(name, c->p + c->pos, (size_t)len);
	name[len] = '\0';
	c->pos += len;
	t->name = name;
	return ORCH_OK;
}

/* Dims: 1..4 of them, each ≥ 1, product within int64. */
static orch_err
read_dims(struct tcur *c, struct gguf_tensor *t)
{
	uint64_t at = c->pos;
	orch_err rv;

	rv = tread(c, &t->n_dims, 4, "tensor dim count");
	if (rv != ORCH_OK)
		return rv;
	if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
		return tfail(c, at, ORCH_EGGUF_SHAPE, "tensor '%s' has %u dims (allowed 1..%u)",
		             t->name, t->n_dims, GGUF_MAX_DIMS);
	at = c->pos;
	rv = tread(c, t->ne, 8ull * t->n_dims, "tensor dims");
	if (rv != ORCH_OK)
		return rv;
	for (uint32_t d = t->n_dims; d < GGUF_MAX_DIMS; d++)
		t->ne[d] = 1;
	t->n_elements = 1;
	for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
		if (t->ne[d] == 0)
			return tfail(c, at + 8ull * d, ORCH_EGGUF_SHAPE,
			             "tensor '%s' dim %u is zero", t->name, d);
		if (__builtin_mul_overflow(t->n_elements, t->ne[d], &t->n_elements) ||
		    t->n_elements > (uint64_t)INT64_MAX)
			return tfail(c, at, ORCH_EGGUF_SHAPE,
			             "tensor '%s' element count overflows (dim %u = %llu)", t->name,
			             d, (ull)t->ne[d]);
	}
	return ORCH_OK;
}

/* Type id, whole blocks per row, byte size, and the relative offset. */
static orch_err
read_type_size(struct tcur *c, struct gguf_tensor *t)
{
	uint64_t at = c->pos, row_bytes;
	const struct ggml_type_info *ti;
	orch_err rv;

	rv = tread(c, &t->type, 4, "tensor type");
	if (rv != ORCH_OK)
		return rv;
	ti = ggml_type_get(t->type);
	if (ti == NULL)
		return tfail(c, at, ORCH_EGGUF_TTYPE, "tensor '%s' has unknown ggml type id %u",
		             t->name, t->type);
	if (ggml_row_bytes(t->type, t->ne[0], &row_bytes) != ORCH_OK)
		return tfail(
		        c, at, ORCH_EGGUF_SHAPE,
		        "tensor '%s' row of %llu elements is not a whole number of %u-element %s blocks",
		        t->name, (ull)t->ne[0], ti->block_size, ti->name);
	if (__builtin_mul_overflow(row_bytes, t->n_elements / t->ne[0], &t->nbytes))
		return tfail(c, at, ORCH_EGGUF_SHAPE, "tensor '%s' byte size overflows", t->name);
	at = c->pos;
	rv = tread(c, &t->offset, 8, "tensor offset");
	if (rv != ORCH_OK)
		return rv;
	if (t->offset % c->f->alignment != 0)
		return tfail(c, at, ORCH_EGGUF_ALIGN,
		             "tensor '%s' offset %llu is not a multiple of the alignment %u",
		             t->name, (ull)t->offset, c->f->alignment);
	return ORCH_OK;
}

static int
cmp_tensor_offset(const void *a, const void *b)
{
	const struct gguf_tensor *x = *(const struct gguf_tensor *const *)a;
	const struct gguf_tensor *y = *(const struct gguf_tensor *const *)b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Each range inside the data section; sorted by offset, none overlapping. */
static orch_err
check_ranges(struct tcur *c)
{
	struct gguf_file *f = c->f;
	const struct gguf_tensor **by_off = NULL;
	uint64_t avail = f->size - f->data_offset;
	orch_err rv = ORCH_OK;

	for (size_t i = 0; i < f->n_tensors; i++) {
		const struct gguf_tensor *t = &f->tensors[i];
		if (t->offset > avail || t->nbytes > avail - t->offset)
			return tfail(
			        c, f->data_offset + t->offset, ORCH_EGGUF_BOUNDS,
			        "tensor '%s' data (%llu bytes at data offset %llu) runs past the end of the file",
			        t->name, (ull)t->nbytes, (ull)t->offset);
		f->tensors[i].data = f->base + f->data_offset + t->offset;
	}
	by_off = orch_calloc(f->n_tensors ? f->n_tensors : 1, sizeof(*by_off));
	if (by_off == NULL)
		return orch_errf(c->err, ORCH_ENOMEM, "%s: out of memory", f->name);
	for (size_t i = 0; i < f->n_tensors; i++)
		by_off[i] = &f->tensors[i];
	qsort(by_off, f->n_tensors, sizeof(*by_off), cmp_tensor_offset);
	for (size_t i = 1; i < f->n_tensors; i++) {
		const struct gguf_tensor *a = by_off[i - 1], *b = by_off[i];
		if (a->offset + a->nbytes > b->offset) {
			rv = tfail(c, f->data_offset + b->offset, ORCH_EGGUF_OVERLAP,
			           "tensors '%s' and '%s' overlap", a->name, b->name);
			break;
		}
	}
	orch_free(by_off);
	return rv;
}

orch_err
gguf_parse_tensors(const uint8_t *p, uint64_t size, uint64_t *pos, struct gguf_file *f,
                   struct orch_errinfo *reterr)
{
	struct tcur c = {p, size, *pos, f, reterr};
	orch_err rv;

	memset(f->tensors, 0, f->n_tensors * sizeof(*f->tensors));
	for (size_t i = 0; i < f->n_tensors; i++) {
		struct gguf_tensor *t = &f->tensors[i];
		if ((rv = read_name(&c, t)) != ORCH_OK || (rv = read_dims(&c, t)) != ORCH_OK ||
		    (rv = read_type_size(&c, t)) != ORCH_OK)
			return rv;
	}
	/* The data section starts at the next multiple of the alignment. */
	uint64_t a = f->alignment;
	f->data_offset = (c.pos + a - 1) / a * a;
	*pos = c.pos;
	if (f->n_tensors == 0)
		return ORCH_OK;
	if (f->data_offset > size)
		return tfail(&c, c.pos, ORCH_EGGUF_TRUNCATED,
		             "truncated: data section starts at %llu, past the end (%llu)",
		             (ull)f->data_offset, (ull)size);
	return check_ranges(&c);
}

static int
cmp_kv(const void *a, const void *b)
{
	return strcmp((*(const struct gguf_kv *const *)a)->key,
	              (*(const struct gguf_kv *const *)b)->key);
}

static int
cmp_tensor_name(const void *a, const void *b)
{
	return strcmp((*(const struct gguf_tensor *const *)a)->name,
	              (*(const struct gguf_tensor *const *)b)->name);
}

orch_err
gguf_build_index(struct gguf_file *f, struct orch_errinfo *reterr)
{
	f->kv_index = orch_calloc(f->n_kv ? f->n_kv : 1, sizeof(*f->kv_index));
	f->tensor_index = orch_calloc(f->n_tensors ? f->n_tensors : 1, sizeof(*f->tensor_index));
	if (f->kv_index == NULL || f->tensor_index == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "%s: out of memory", f->name);
	for (size_t i = 0; i < f->n_kv; i++)
		f->kv_index[i] = &f->kvs[i];
	for (size_t i = 0; i < f->n_tensors; i++)
		f->tensor_index[i] = &f->tensors[i];
	qsort(f->kv_index, f->n_kv, sizeof(*f->kv_index), cmp_kv);
	qsort(f->tensor_index, f->n_tensors, sizeof(*f->tensor_index), cmp_tensor_name);
	for (size_t i = 1; i < f->n_kv; i++) {
		if (strcmp(f->kv_index[i - 1]->key, f->kv_index[i]->key) == 0)
			return orch_errf(reterr, ORCH_EGGUF_DUPLICATE,
			                 "%s: offset %llu: duplicate metadata key '%s'", f->name,
			                 (unsigned long long)f->kv_index[i]->offset,
			                 f->kv_index[i]->key);
	}
	for (size_t i = 1; i < f->n_tensors; i++) {
		if (strcmp(f->tensor_index[i - 1]->name, f->tensor_index[i]->name) == 0)
			return orch_errf(
			        reterr, ORCH_EGGUF_DUPLICATE,
			        "%s: offset %llu: duplicate tensor name '%s'", f->name,
			        (unsigned long long)(f->data_offset + f->tensor_index[i]->offset),
			        f->tensor_index[i]->name);
	}
	return ORCH_OK;
}
