/*
 * gguf_write.c - GGUF v3 writer.
 *
 * Design notes
 * - Each metadata value is encoded to its wire bytes when it is set; the
 *   writer keeps (key, bytes) pairs. Replacing a key swaps its bytes.
 * - Tensor offsets are assigned at write time, each aligned; the data
 *   section starts at the aligned end of the tensor table.
 * - Output goes through struct sink: a file descriptor or a memory buffer,
 *   so tests get exactly the bytes a file would hold.
 */
#include "gguf_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ggml_type.h"

struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

struct wkv {
	char *key;
	struct buf enc; /* type + value, encoded */
};

struct wtensor {
	char *name;
	uint32_t type, n_dims;
	uint64_t ne[GGUF_MAX_DIMS];
	uint64_t nbytes;
	const void *data;
};

struct gguf_writer {
	uint32_t alignment;
	struct wkv *kvs;
	size_t n_kv, cap_kv;
	struct wtensor *tensors;
	size_t n_tensors, cap_tensors;
};

struct sink {
	int fd;          /* >= 0: write here */
	struct buf *mem; /* else append here */
	const char *path;
	struct orch_errinfo *err;
};

static void
buf_put(struct buf *b, const void *data, size_t n)
{
	if (b->oom)
		return;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap - b->len < n)
			cap *= 2;
		uint8_t *p = orch_reallocarray(b->p, cap, 1);
		if (p == NULL) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n > 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void
buf_u32(struct buf *b, uint32_t x)
{
	buf_put(b, &x, 4);
}

static void
buf_u64(struct buf *b, uint64_t x)
{
	buf_put(b, &x, 8);
}

static void
buf_str(struct buf *b, const void *s, uint64_t len)
{
	buf_u64(b, len);
	buf_put(b, s, (size_t)len);
}

static orch_err encode_value(struct buf *b, const struct gguf_value *v, unsigned depth);

static orch_err
encode_array(struct buf *b, const struct gguf_arr *a, unsigned depth)
{
	size_t sz = gguf_vtype_size(a->type);
	orch_err rv;

	if (a->type >= GGUF_VTYPE_COUNT || depth >= GGUF_MAX_ARRAY_DEPTH)
		return ORCH_EINVAL;
	buf_u32(b, a->type);
	buf_u64(b, a->n);
	if (a->type == GGUF_VTYPE_STRING) {
		for (uint64_t i = 0; i < a->n; i++)
			buf_str(b, a->strs[i].ptr, a->strs[i].len);
	} else if (a->type == GGUF_VTYPE_ARRAY) {
		for (uint64_t i = 0; i < a->n; i++) {
			if (a->elems[i].type != GGUF_VTYPE_ARRAY)
				return ORCH_EINVAL;
			rv = encode_array(b, &a->elems[i].v.a, depth + 1);
			if (rv != ORCH_OK)
				return rv;
		}
	} else {
		if (a->n > SIZE_MAX / sz)
			return ORCH_EINVAL;
		buf_put(b, a->raw, (size_t)a->n * sz);
	}
	return ORCH_OK;
}

static orch_err
encode_value(struct buf *b, const struct gguf_value *v, unsigned depth)
{
	uint8_t x8;
	uint16_t x16;
	uint32_t x32;
	float f;

	buf_u32(b, v->type);
	switch (v->type) {
	case GGUF_VTYPE_UINT8:
	case GGUF_VTYPE_INT8:
		x8 = (uint8_t)(v->type == GGUF_VTYPE_UINT8 ? v->v.u : (uint64_t)v->v.i);
		buf_put(b, &x8, 1);
		return ORCH_OK;
	case GGUF_VTYPE_UINT16:
	case GGUF_VTYPE_INT16:
		x16 = (uint16_t)(v->type == GGUF_VTYPE_UINT16 ? v->v.u : (uint64_t)v->v.i);
		buf_put(b, &x16, 2);
		return ORCH_OK;
	case GGUF_VTYPE_UINT32:
	case GGUF_VTYPE_INT32:
		x32 = (uint32_t)(v->type == GGUF_VTYPE_UINT32 ? v->v.u : (uint64_t)v->v.i);
		buf_put(b, &x32, 4);
		return ORCH_OK;
	case GGUF_VTYPE_FLOAT32:
		f = (float)v->v.f;
		buf_put(b, &f, 4);
		return ORCH_OK;
	case GGUF_VTYPE_BOOL:
		x8 = v->v.b ? 1 : 0;
		buf_put(b, &x8, 1);
		return ORCH_OK;
	case GGUF_VTYPE_STRING:
		buf_str(b, v->v.s.ptr, v->v.s.len);
		return ORCH_OK;
	case GGUF_VTYPE_ARRAY:
		return encode_array(b, &v->v.a, depth);
	case GGUF_VTYPE_UINT64:
	case GGUF_VTYPE_INT64:
	case GGUF_VTYPE_FLOAT64:
		buf_put(b, &v->v, 8); /* u, i and f share the union's first 8 bytes */
		return ORCH_OK;
	case GGUF_VTYPE_COUNT:
		break;
	}
	return ORCH_EINVAL;
}

orch_err
gguf_writer_new(struct gguf_writer **ret_w)
{
	struct gguf_writer *w = orch_calloc(1, sizeof(*w));

	if (w == NULL)
		return ORCH_ENOMEM;
	w->alignment = GGUF_DEFAULT_ALIGNMENT;
	*ret_w = w;
	return ORCH_OK;
}

void
gguf_writer_free(struct gguf_writer *w)
{
	if (w == NULL)
		return;
	for (size_t i = 0; i < w->n_kv; i++) {
		orch_free(w->kvs[i].key);
		orch_free(w->kvs[i].enc.p);
	}
	for (size_t i = 0; i < w->n_tensors; i++)
		orch_free(w->tensors[i].name);
	orch_free(w->kvs);
	orch_free(w->tensors);
	orch_free(w);
}

static orch_err
grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return ORCH_OK;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *p = orch_reallocarray(*arr, ncap, elem);
	if (p == NULL)
		return ORCH_ENOMEM;
	*arr = p;
	*cap = ncap;
	return ORCH_OK;
}

orch_err
gguf_writer_set_value(struct gguf_writer *w, const char *key, const struct gguf_value *v)
{
	struct buf enc = {0};
	size_t i;
	orch_err rv;

	if (key == NULL || key[0] == '\0')
		return ORCH_EINVAL;
	rv = encode_value(&enc, v, 0);
	if (rv == ORCH_OK && enc.oom)
		rv = ORCH_ENOMEM;
	if (rv != ORCH_OK)
		goto out;
	for (i = 0; i < w->n_kv; i++)
		if (strcmp(w->kvs[i].key, key) == 0)
			break;
	if (i < w->n_kv) {
		orch_free(w->kvs[i].enc.p);
		w->kvs[i].enc = enc;
		return ORCH_OK;
	}
	rv = grow((void **)&w->kvs, &w->cap_kv, w->n_kv, sizeof(*w->kvs));
	if (rv != ORCH_OK)
		goto out;
	w->kvs[w->n_kv].key = orch_strndup(key, strlen(key));
	if (w->kvs[w->n_kv].key == NULL) {
		rv = ORCH_ENOMEM;
		goto out;
	}
	w->kvs[w->n_kv++].enc = enc;
	return ORCH_OK;
out:
	orch_free(enc.p);
	return rv;
}

orch_err
gguf_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t x)
{
	struct gguf_value v = {.type = GGUF_VTYPE_UINT32, .v.u = x};

	return gguf_writer_set_value(w, key, &v);
}

orch_err
gguf_writer_set_i32(struct gguf_writer *w, const char *key, int32_t x)
{
	struct gguf_value v = {.type = GGUF_VTYPE_INT32, .v.i = x};

	return gguf_writer_set_value(w, key, &v);
}

orch_err
gguf_writer_set_u64(struct gguf_writer *w, const char *key, uint64_t x)
{
	struct gguf_value v = {.type = GGUF_VTYPE_UINT64, .v.u = x};

	return gguf_writer_set_value(w, key, &v);
}

orch_err
gguf_writer_set_f32(struct gguf_writer *w, const char *key, float x)
{
	struct gguf_value v = {.type = GGUF_VTYPE_FLOAT32, .v.f = (double)x};

	return gguf_writer_set_value(w, key, &v);
}

orch_err
gguf_writer_set_bool(struct gguf_writer *w, const char *key, bool x)
{
	struct gguf_value v = {.type = GGUF_VTYPE_BOOL, .v.b = x};

	return gguf_writer_set_value(w, key, &v);
}

orch_err
gguf_writer_set_str(struct gguf_writer *w, const char *key, const char *s)
{
	struct gguf_value v = {.type = GGUF_VTYPE_STRING, .v.s = {s, strlen(s)}};

	return gguf_writer_set_value(w, key, &v);
}

orch_err
gguf_writer_set_arr(struct gguf_writer *w, const char *key, enum gguf_vtype elem, const void *data,
                    uint64_t n)
{
	struct gguf_value v = {.type = GGUF_VTYPE_ARRAY};

	if (gguf_vtype_size(elem) == 0)
		return ORCH_EINVAL;
	v.v.a.type = elem;
	v.v.a.n = n;
	v.v.a.raw = data;
	return gguf_writer_set_value(w, key, &v);
}

orch_err
gguf_writer_set_arr_str(struct gguf_writer *w, const char *key, const char *const *strs, uint64_t n)
{
	struct gguf_value v = {.type = GGUF_VTYPE_ARRAY};
	struct gguf_str *s = orch_calloc(n ? (size_t)n : 1, sizeof(*s));
	orch_err rv;

	if (s == NULL || n > SIZE_MAX / sizeof(*s)) {
		orch_free(s);
		return ORCH_ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++) {
		s[i].ptr = strs[i];
		s[i].len = strlen(strs[i]);
	}
	v.v.a.type = GGUF_VTYPE_STRING;
	v.v.a.n = n;
	v.v.a.strs = s;
	rv = gguf_writer_set_value(w, key, &v);
	orch_free(s);
	return rv;
}

orch_err
gguf_writer_set_alignment(struct gguf_writer *w, uint32_t alignment)
{
	if (alignment == 0 || (alignment & (alignment - 1)) != 0)
		return ORCH_EINVAL;
	w->alignment = alignment;
	if (alignment == GGUF_DEFAULT_ALIGNMENT)
		return ORCH_OK;
	return gguf_writer_set_u32(w, "general.alignment", alignment);
}

orch_err
gguf_writer_add_tensor(struct gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                       const uint64_t *ne, const void *data)
{
	struct wtensor t = {0};
	uint64_t rows = 1, row_bytes;

	if (name == NULL || name[0] == '\0' || strlen(name) > GGUF_MAX_TENSOR_NAME || n_dims == 0 ||
	    n_dims > GGUF_MAX_DIMS)
		return ORCH_EINVAL;
	for (size_t i = 0; i < w->n_tensors; i++)
		if (strcmp(w->tensors[i].name, name) == 0)
			return ORCH_EINVAL;
	for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
		t.ne[d] = d < n_dims ? ne[d] : 1;
		if (t.ne[d] == 0 || (d > 0 && __builtin_mul_overflow(rows, t.ne[d], &rows)))
			return ORCH_EINVAL;
	}
	if (ggml_row_bytes(type, t.ne[0], &row_bytes) != ORCH_OK ||
	    __builtin_mul_overflow(row_bytes, rows, &t.nbytes))
		return ORCH_EINVAL;
	if (grow((void **)&w->tensors, &w->cap_tensors, w->n_tensors, sizeof(*w->tensors)))
		return ORCH_ENOMEM;
	t.name = orch_strndup(name, strlen(name));
	if (t.name == NULL)
		return ORCH_ENOMEM;
	t.type = type;
	t.n_dims = n_dims;
	t.data = data;
	w->tensors[w->n_tensors++] = t;
	return ORCH_OK;
}

uint64_t
gguf_writer_tensor_bytes(const struct gguf_writer *w, size_t index)
{
	return index < w->n_tensors ? w->tensors[index].nbytes : 0;
}

static uint64_t
pad_to(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

static orch_err
sink_put(struct sink *s, const void *data, uint64_t n)
{
	const uint8_t *p = data;

	if (s->fd < 0) {
		buf_put(s->mem, data, (size_t)n);
		return s->mem->oom ? orch_errf(s->err, ORCH_ENOMEM, "gguf writer: out of memory")
		                   : ORCH_OK;
	}
	while (n > 0) {
		size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
		ssize_t k = write(s->fd, p, chunk);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return orch_errf(s->err, ORCH_EIO, "%s: write: %s", s->path,
			                 k < 0 ? strerror(errno) : "short write");
		p += k;
		n -= (uint64_t)k;
	}
	return ORCH_OK;
}

static orch_err
sink_pad(struct sink *s, uint64_t from, uint64_t to)
{
	static const uint8_t zeros[256];

	while (from < to) {
		uint64_t n = to - from > sizeof(zeros) ? sizeof(zeros) : to - from;
		orch_err rv = sink_put(s, zeros, n);
		if (rv != ORCH_OK)
			return rv;
		from += n;
	}
	return ORCH_OK;
}

/* Header, metadata and tensor table into @h. */
static orch_err
encode_head(const struct gguf_writer *w, struct buf *h)
{
	uint64_t off = 0;

	buf_put(h, "GGUF", 4);
	buf_u32(h, 3);
	buf_u64(h, w->n_tensors);
	buf_u64(h, w->n_kv);
	for (size_t i = 0; i < w->n_kv; i++) {
		buf_str(h, w->kvs[i].key, strlen(w->kvs[i].key));
		buf_put(h, w->kvs[i].enc.p, w->kvs[i].enc.len);
	}
	for (size_t i = 0; i < w->n_tensors; i++) {
		const struct wtensor *t = &w->tensors[i];
		buf_str(h, t->name, strlen(t->name));
		buf_u32(h, t->n_dims);
		buf_put(h, t->ne, 8u * t->n_dims);
		buf_u32(h, t->type);
		buf_u64(h, off);
		off = pad_to(off + t->nbytes, w->alignment);
	}
	return h->oom ? ORCH_ENOMEM : ORCH_OK;
}

static orch_err
write_tensor(struct gguf_writer *w, size_t i, struct sink *s, gguf_fill_fn fill, void *ctx)
{
	const struct wtensor *t = &w->tensors[i];
	void *tmp = NULL;
	orch_err rv;

	if (t->data != NULL)
		return sink_put(s, t->data, t->nbytes);
	if (fill == NULL)
		return orch_errf(s->err, ORCH_EINVAL, "gguf writer: tensor '%s' has no data",
		                 t->name);
	if (t->nbytes > SIZE_MAX || (tmp = orch_malloc((size_t)t->nbytes)) == NULL)
		return orch_errf(s->err, ORCH_ENOMEM, "gguf writer: out of memory for tensor '%s'",
		                 t->name);
	rv = fill(ctx, i, t->name, tmp, t->nbytes);
	if (rv != ORCH_OK)
		orch_errf(s->err, rv, "gguf writer: filling tensor '%s' failed", t->name);
	else
		rv = sink_put(s, tmp, t->nbytes);
	orch_free(tmp);
	return rv;
}

static orch_err
write_all(struct gguf_writer *w, struct sink *s, gguf_fill_fn fill, void *ctx)
{
	struct buf h = {0};
	uint64_t pos;
	orch_err rv;

	rv = encode_head(w, &h);
	if (rv != ORCH_OK) {
		rv = orch_errf(s->err, rv, "gguf writer: out of memory");
		goto out;
	}
	if ((rv = sink_put(s, h.p, h.len)) != ORCH_OK)
		goto out;
	pos = pad_to(h.len, w->alignment);
	if (w->n_tensors > 0 && (rv = sink_pad(s, h.len, pos)) != ORCH_OK)
		goto out;
	for (size_t i = 0; i < w->n_tensors; i++) {
		uint64_t end = pos + w->tensors[i].nbytes;
		if ((rv = write_tensor(w, i, s, fill, ctx)) != ORCH_OK ||
		    (rv = sink_pad(s, end, pad_to(end, w->alignment))) != ORCH_OK)
			goto out;
		pos = pad_to(end, w->alignment);
	}
out:
	orch_free(h.p);
	return rv;
}

orch_err
gguf_writer_write_mem(struct gguf_writer *w, gguf_fill_fn fill, void *ctx, void **ret_buf,
                      size_t *ret_size, struct orch_errinfo *reterr)
{
	struct buf mem = {0};
	struct sink s = {-1, &mem, "memory", reterr};
	orch_err rv = write_all(w, &s, fill, ctx);

	if (rv != ORCH_OK) {
		orch_free(mem.p);
		return rv;
	}
	*ret_buf = mem.p;
	*ret_size = mem.len;
	return ORCH_OK;
}

orch_err
gguf_writer_write_file(struct gguf_writer *w, const char *path, gguf_fill_fn fill, void *ctx,
                       struct orch_errinfo *reterr)
{
	char tmp[4096];
	struct sink s = {-1, NULL, path, reterr};
	orch_err rv;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return orch_errf(reterr, ORCH_EINVAL, "%s: path too long", path);
	s.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (s.fd < 0)
		return orch_errf(reterr, ORCH_EIO, "%s: open: %s", tmp, strerror(errno));
	rv = write_all(w, &s, fill, ctx);
	if (close(s.fd) < 0 && rv == ORCH_OK)
		rv = orch_errf(reterr, ORCH_EIO, "%s: close: %s", tmp, strerror(errno));
	if (rv == ORCH_OK && rename(tmp, path) < 0)
		rv = orch_errf(reterr, ORCH_EIO, "%s: rename: %s", path, strerror(errno));
	if (rv != ORCH_OK)
		unlink(tmp);
	return rv;
}
