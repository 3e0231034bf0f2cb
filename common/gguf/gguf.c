/*
 * gguf.c - GGUF v2/v3 parser and validator.
 *
 * Design notes
 * - Every byte is read through struct cursor, whose reads check bounds
 *   first: nothing past the end of the image is ever touched.
 * - Limits come before allocation: a count read from the file is checked
 *   against its cap and against the bytes left (each element needs at least
 *   its minimum encoded size) before any array is sized from it, so memory
 *   use is bounded by the file size.
 * - Parsed structures live in one bump arena freed with the file; a failure
 *   anywhere frees the arena and leaves no partial state.
 * - Validation order: header, metadata (types, bools, lengths), alignment,
 *   tensor records (name, dims, type, row blocks, sizes), then name
 *   uniqueness, alignment, bounds and overlap of the tensor data.
 */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "ggml_type.h"
#include "gguf_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader assumes a little-endian host"
#endif

struct cursor {
	const uint8_t *p;
	uint64_t size;
	uint64_t pos;
	const char *name;
	struct orch_errinfo *err;
};

/* ---- cursor ---------------------------------------------------------------- */

static orch_err
cur_fail(struct cursor *c, uint64_t at, orch_err code, const char *what)
{
	return orch_errf(c->err, code, "%s: offset %llu: %s", c->name, (unsigned long long)at,
	                 what);
}

static orch_err
cur_bytes(struct cursor *c, uint64_t n, const char *what, const uint8_t **ret)
{
	char msg[160];

	if (n > c->size - c->pos) {
		snprintf(msg, sizeof(msg), "truncated: %s needs %llu bytes, %llu left", what,
		         (unsigned long long)n, (unsigned long long)(c->size - c->pos));
		return cur_fail(c, c->pos, ORCH_EGGUF_TRUNCATED, msg);
	}
	*ret = c->p + c->pos;
	c->pos += n;
	return ORCH_OK;
}

/* A fixed-size little-endian field of @n bytes into @dst. */
static orch_err
cur_read(struct cursor *c, void *dst, size_t n, const char *what)
{
	char msg[160];

	if (n > c->size - c->pos) {
		snprintf(msg, sizeof(msg), "truncated: %s needs %zu bytes, %llu left", what, n,
		         (unsigned long long)(c->size - c->pos));
		return cur_fail(c, c->pos, ORCH_EGGUF_TRUNCATED, msg);
	}
	memcpy(dst, c->p + c->pos, n);
	c->pos += n;
	return ORCH_OK;
}

static orch_err
cur_u32(struct cursor *c, const char *what, uint32_t *ret)
{
	return cur_read(c, ret, 4, what);
}

static orch_err
cur_u64(struct cursor *c, const char *what, uint64_t *ret)
{
	return cur_read(c, ret, 8, what);
}

/* A string: u64 length then bytes. */
static orch_err
cur_str(struct cursor *c, const char *what, struct gguf_str *ret)
{
	uint64_t at = c->pos, len = 0;
	const uint8_t *b = NULL;
	char msg[160];
	orch_err rv;

	rv = cur_u64(c, what, &len);
	if (rv != ORCH_OK)
		return rv;
	if (len > c->size) {
		snprintf(msg, sizeof(msg), "%s length %llu exceeds the file size %llu", what,
		         (unsigned long long)len, (unsigned long long)c->size);
		return cur_fail(c, at, ORCH_EGGUF_LIMIT, msg);
	}
	rv = cur_bytes(c, len, what, &b);
	if (rv != ORCH_OK)
		return rv;
	ret->ptr = (const char *)b;
	ret->len = len;
	return ORCH_OK;
}

/* A key or tensor name: non-empty, no NUL, at most @max bytes; copied with a NUL. */
static orch_err
cur_name(struct cursor *c, struct gguf_file *f, const char *what, uint64_t max, char **ret)
{
	uint64_t at = c->pos;
	struct gguf_str s;
	char msg[160];
	orch_err rv;

	rv = cur_str(c, what, &s);
	if (rv != ORCH_OK)
		return rv;
	if (s.len == 0 || s.len > max || memchr(s.ptr, '\0', s.len) != NULL) {
		snprintf(msg, sizeof(msg), "%s is %s", what,
		         s.len == 0    ? "empty"
		         : s.len > max ? "too long"
		                       : "holding a NUL byte");
		return cur_fail(c, at, s.len > max ? ORCH_EGGUF_LIMIT : ORCH_EGGUF_NAME, msg);
	}
	char *d = arena_alloc(&f->arena, s.len + 1);
	if (d == NULL)
		return orch_errf(c->err, ORCH_ENOMEM, "%s: out of memory", c->name);
	memcpy(d, s.ptr, s.len);
	d[s.len] = '\0';
	*ret = d;
	return ORCH_OK;
}

/* ---- metadata values ------------------------------------------------------- */

static orch_err parse_value(struct cursor *c, struct gguf_file *f, uint32_t type, unsigned depth,
                            struct gguf_value *ret);

static orch_err
parse_vtype(struct cursor *c, uint32_t *ret)
{
	uint64_t at = c->pos;
	char msg[96];
	orch_err rv = cur_u32(c, "value type", ret);

	if (rv != ORCH_OK)
		return rv;
	if (*ret >= GGUF_VTYPE_COUNT) {
		snprintf(msg, sizeof(msg), "unknown metadata value type %u", *ret);
		return cur_fail(c, at, ORCH_EGGUF_VTYPE, msg);
	}
	return ORCH_OK;
}

/* Fixed-size scalar of @type at the cursor into @ret. */
static orch_err
parse_scalar(struct cursor *c, uint32_t type, struct gguf_value *ret)
{
	size_t n = gguf_vtype_size(type);
	uint64_t at = c->pos;
	const uint8_t *b = NULL;
	orch_err rv;

	rv = cur_bytes(c, n, gguf_vtype_name(type), &b);
	if (rv != ORCH_OK)
		return rv;
	ret->type = (enum gguf_vtype)type;
	if (type == GGUF_VTYPE_BOOL && b[0] > 1)
		return cur_fail(c, at, ORCH_EGGUF_VTYPE, "bool value is neither 0 nor 1");
	gguf_decode_scalar(type, b, ret);
	return ORCH_OK;
}

static orch_err
parse_array_elems(struct cursor *c, struct gguf_file *f, struct gguf_arr *a, unsigned depth)
{
	const uint8_t *b = NULL;
	orch_err rv;

	if (a->type == GGUF_VTYPE_STRING) {
		struct gguf_str *s = arena_alloc(&f->arena, (size_t)a->n * sizeof(*s));
		if (s == NULL)
			return orch_errf(c->err, ORCH_ENOMEM, "%s: out of memory", c->name);
		for (uint64_t i = 0; i < a->n; i++) {
			rv = cur_str(c, "array string", &s[i]);
			if (rv != ORCH_OK)
				return rv;
		}
		a->strs = s;
		return ORCH_OK;
	}
	if (a->type == GGUF_VTYPE_ARRAY) {
		struct gguf_value *v = arena_alloc(&f->arena, (size_t)a->n * sizeof(*v));
		if (v == NULL)
			return orch_errf(c->err, ORCH_ENOMEM, "%s: out of memory", c->name);
		for (uint64_t i = 0; i < a->n; i++) {
			rv = parse_value(c, f, GGUF_VTYPE_ARRAY, depth + 1, &v[i]);
			if (rv != ORCH_OK)
				return rv;
		}
		a->elems = v;
		return ORCH_OK;
	}
	uint64_t at = c->pos;
	rv = cur_bytes(c, a->n * gguf_vtype_size(a->type), "array data", &b);
	if (rv != ORCH_OK)
		return rv;
	if (a->type == GGUF_VTYPE_BOOL) {
		for (uint64_t i = 0; i < a->n; i++)
			if (b[i] > 1)
				return cur_fail(c, at + i, ORCH_EGGUF_VTYPE,
				                "bool array element is neither 0 nor 1");
	}
	a->raw = b;
	return ORCH_OK;
}

/* Array header (element type, count) and elements. */
static orch_err
parse_array(struct cursor *c, struct gguf_file *f, unsigned depth, struct gguf_arr *a)
{
	uint64_t at = c->pos, min_bytes;
	uint32_t et = 0;
	char msg[160];
	orch_err rv;

	if (depth >= GGUF_MAX_ARRAY_DEPTH)
		return cur_fail(c, at, ORCH_EGGUF_LIMIT, "arrays nested too deeply");
	rv = parse_vtype(c, &et);
	if (rv != ORCH_OK)
		return rv;
	rv = cur_u64(c, "array length", &a->n);
	if (rv != ORCH_OK)
		return rv;
	a->type = (enum gguf_vtype)et;
	/* Every element takes at least this many bytes: bound n by the bytes left. */
	size_t min_elem = et == GGUF_VTYPE_STRING  ? 8
	                  : et == GGUF_VTYPE_ARRAY ? 12
	                                           : gguf_vtype_size(et);
	if (a->n > c->size || __builtin_mul_overflow(a->n, (uint64_t)min_elem, &min_bytes) ||
	    min_bytes > c->size - c->pos) {
		snprintf(msg, sizeof(msg),
		         "%sarray of %llu %s elements does not fit in the %llu bytes left",
		         a->n > c->size ? "" : "truncated: ", (unsigned long long)a->n,
		         gguf_vtype_name(et), (unsigned long long)(c->size - c->pos));
		return cur_fail(c, at, a->n > c->size ? ORCH_EGGUF_LIMIT : ORCH_EGGUF_TRUNCATED,
		                msg);
	}
	return parse_array_elems(c, f, a, depth);
}

static orch_err
parse_value(struct cursor *c, struct gguf_file *f, uint32_t type, unsigned depth,
            struct gguf_value *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->type = (enum gguf_vtype)type;
	if (type == GGUF_VTYPE_STRING)
		return cur_str(c, "string value", &ret->v.s);
	if (type == GGUF_VTYPE_ARRAY)
		return parse_array(c, f, depth, &ret->v.a);
	return parse_scalar(c, type, ret);
}

static orch_err
parse_kvs(struct cursor *c, struct gguf_file *f)
{
	orch_err rv;

	for (size_t i = 0; i < f->n_kv; i++) {
		struct gguf_kv *kv = &f->kvs[i];
		char *key = NULL;
		uint32_t type = 0;

		kv->offset = c->pos;
		rv = cur_name(c, f, "metadata key", GGUF_MAX_KEY_BYTES, &key);
		if (rv != ORCH_OK)
			return rv;
		kv->key = key;
		rv = parse_vtype(c, &type);
		if (rv != ORCH_OK)
			return rv;
		rv = parse_value(c, f, type, 0, &kv->value);
		if (rv != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}

/* ---- header ---------------------------------------------------------------- */

static orch_err
parse_version(struct cursor *c, struct gguf_file *f)
{
	uint32_t v = 0;
	char msg[200];
	orch_err rv = cur_u32(c, "version", &v);

	if (rv != ORCH_OK)
		return rv;
	if (v == 2 || v == 3) {
		f->version = v;
		return ORCH_OK;
	}
	if (v == 1)
		return cur_fail(
		        c, 4, ORCH_EGGUF_VERSION,
		        "GGUF v1 is not supported (obsolete format with 32-bit counts); convert the model with a current llama.cpp");
	if ((v & 0xffffu) == 0 && __builtin_bswap32(v) <= 3)
		snprintf(msg, sizeof(msg),
		         "big-endian GGUF (version %u byte-swapped) is not supported",
		         __builtin_bswap32(v));
	else
		snprintf(msg, sizeof(msg), "unknown GGUF version %u (supported: 2, 3)", v);
	return cur_fail(c, 4, ORCH_EGGUF_VERSION, msg);
}

static orch_err
parse_header(struct cursor *c, struct gguf_file *f)
{
	const uint8_t *magic = NULL;
	uint64_t n_tensors = 0, n_kv = 0;
	char msg[160];
	orch_err rv;

	rv = cur_bytes(c, 4, "magic", &magic);
	if (rv != ORCH_OK)
		return rv;
	if (memcmp(magic, "GGUF", 4) != 0) {
		if (memcmp(magic, "FUGG", 4) == 0)
			return cur_fail(c, 0, ORCH_EGGUF_VERSION,
			                "big-endian GGUF is not supported");
		return cur_fail(c, 0, ORCH_EGGUF_MAGIC, "not a GGUF file (magic is not \"GGUF\")");
	}
	rv = parse_version(c, f);
	if (rv != ORCH_OK)
		return rv;
	if ((rv = cur_u64(c, "tensor count", &n_tensors)) != ORCH_OK ||
	    (rv = cur_u64(c, "metadata count", &n_kv)) != ORCH_OK)
		return rv;
	if (n_tensors > GGUF_MAX_TENSORS || n_kv > GGUF_MAX_KV) {
		snprintf(msg, sizeof(msg), "%s count %llu exceeds the limit %u",
		         n_tensors > GGUF_MAX_TENSORS ? "tensor" : "metadata",
		         (unsigned long long)(n_tensors > GGUF_MAX_TENSORS ? n_tensors : n_kv),
		         n_tensors > GGUF_MAX_TENSORS ? GGUF_MAX_TENSORS : GGUF_MAX_KV);
		return cur_fail(c, n_tensors > GGUF_MAX_TENSORS ? 8 : 16, ORCH_EGGUF_LIMIT, msg);
	}
	/*
	 * The smallest key/value takes 14 bytes (length, 1-byte key, type, 1-byte
	 * value) and the smallest tensor record 33: counts the rest of the file
	 * cannot hold are refused before anything is sized from them.
	 */
	if (n_kv * 14 + n_tensors * 33 > c->size - c->pos) {
		snprintf(
		        msg, sizeof(msg),
		        "truncated: %llu keys and %llu tensor records cannot fit in the %llu bytes left",
		        (unsigned long long)n_kv, (unsigned long long)n_tensors,
		        (unsigned long long)(c->size - c->pos));
		return cur_fail(c, 8, ORCH_EGGUF_TRUNCATED, msg);
	}
	f->n_tensors = (size_t)n_tensors;
	f->n_kv = (size_t)n_kv;
	f->kvs = arena_alloc(&f->arena, (f->n_kv ? f->n_kv : 1) * sizeof(*f->kvs));
	f->tensors =
	        arena_alloc(&f->arena, (f->n_tensors ? f->n_tensors : 1) * sizeof(*f->tensors));
	if (f->kvs == NULL || f->tensors == NULL)
		return orch_errf(c->err, ORCH_ENOMEM, "%s: out of memory", c->name);
	memset(f->kvs, 0, (f->n_kv ? f->n_kv : 1) * sizeof(*f->kvs));
	return ORCH_OK;
}

/* general.alignment: a u32, non-zero power of two. */
static orch_err
parse_alignment(struct cursor *c, struct gguf_file *f)
{
	const struct gguf_kv *kv = gguf_find_kv_linear(f, "general.alignment");
	char msg[160];

	f->alignment = GGUF_DEFAULT_ALIGNMENT;
	if (kv == NULL)
		return ORCH_OK;
	if (kv->value.type != GGUF_VTYPE_UINT32) {
		snprintf(msg, sizeof(msg), "general.alignment has type %s, want uint32",
		         gguf_vtype_name(kv->value.type));
		return cur_fail(c, kv->offset, ORCH_EGGUF_ALIGN, msg);
	}
	if (kv->value.v.u == 0 || (kv->value.v.u & (kv->value.v.u - 1)) != 0) {
		snprintf(msg, sizeof(msg), "general.alignment %llu is not a power of two",
		         (unsigned long long)kv->value.v.u);
		return cur_fail(c, kv->offset, ORCH_EGGUF_ALIGN, msg);
	}
	f->alignment = (uint32_t)kv->value.v.u;
	return ORCH_OK;
}

/* ---- open / close ---------------------------------------------------------- */

static orch_err
parse_all(struct cursor *c, struct gguf_file *f)
{
	orch_err rv;

	if ((rv = parse_header(c, f)) != ORCH_OK || (rv = parse_kvs(c, f)) != ORCH_OK ||
	    (rv = parse_alignment(c, f)) != ORCH_OK ||
	    (rv = gguf_parse_tensors(c->p, c->size, &c->pos, f, c->err)) != ORCH_OK ||
	    (rv = gguf_build_index(f, c->err)) != ORCH_OK)
		return rv;
	return ORCH_OK;
}

void *
gguf_arena_alloc(struct gguf_file *f, size_t n)
{
	return arena_alloc(&f->arena, n);
}

orch_err
gguf_open_mem(const void *data, size_t size, const char *name, struct gguf_file **ret_f,
              struct orch_errinfo *reterr)
{
	struct gguf_file *f = NULL;
	struct cursor c = {data, size, 0, name, reterr};
	orch_err rv;

	f = orch_calloc(1, sizeof(*f));
	if (f == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "%s: out of memory", name);
	f->base = data;
	f->size = size;
	f->name = orch_strndup(name, strlen(name));
	if (f->name == NULL) {
		rv = orch_errf(reterr, ORCH_ENOMEM, "%s: out of memory", name);
		goto out;
	}
	c.name = f->name;
	rv = parse_all(&c, f);
	if (rv != ORCH_OK)
		goto out;
	*ret_f = f;
	f = NULL;
out:
	gguf_close(f);
	return rv;
}

orch_err
gguf_open(const char *path, struct gguf_file **ret_f, struct orch_errinfo *reterr)
{
	struct gguf_file *f = NULL;
	void *map = MAP_FAILED;
	struct stat st;
	int fd = -1;
	orch_err rv;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return orch_errf(reterr, ORCH_EIO, "%s: open: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: stat: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: not a regular file", path);
		goto out;
	}
	if (st.st_size < 4) {
		rv = orch_errf(
		        reterr, ORCH_EGGUF_TRUNCATED,
		        "%s: offset 0: truncated: file has %lld bytes, too short for a GGUF header",
		        path, (long long)st.st_size);
		goto out;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: mmap: %s", path, strerror(errno));
		goto out;
	}
	rv = gguf_open_mem(map, (size_t)st.st_size, path, &f, reterr);
	if (rv != ORCH_OK)
		goto out;
	f->map = map;
	f->map_bytes = (size_t)st.st_size;
	map = MAP_FAILED;
	*ret_f = f;
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	return rv;
}

void
gguf_close(struct gguf_file *f)
{
	if (f == NULL)
		return;
	if (f->map != NULL)
		munmap(f->map, f->map_bytes);
	orch_free(f->kv_index);
	orch_free(f->tensor_index);
	arena_free(&f->arena);
	orch_free(f->name);
	orch_free(f);
}
