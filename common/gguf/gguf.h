#pragma once
/*
 * gguf.h - validating, zero-copy reader for GGUF v2/v3 files.
 *
 * gguf_open() maps the file read-only and checks everything before returning:
 * header, limits, every metadata value, the tensor table, each tensor's shape,
 * type, alignment and byte range, and that no two tensors or keys collide.
 * A file that passes can be trusted: tensor data pointers lie inside the
 * mapping and their sizes are exact. Any failure returns a specific
 * ORCH_EGGUF_* code and a message "FILE: offset N: what was wrong".
 *
 * Strings (struct gguf_str) point into the mapping and are not NUL-terminated.
 * Keys and tensor names are copied and NUL-terminated. Everything returned
 * lives until gguf_close().
 *
 * The mapping is MAP_PRIVATE of a file the caller must not truncate while it
 * is open (the kernel would raise SIGBUS on access to a vanished page).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGUF_MAX_TENSORS       65536u
#define GGUF_MAX_KV            (1u << 20)
#define GGUF_MAX_DIMS          4u
#define GGUF_MAX_ARRAY_DEPTH   8u
#define GGUF_MAX_KEY_BYTES     65535u
#define GGUF_MAX_TENSOR_NAME   255u
#define GGUF_DEFAULT_ALIGNMENT 32u

enum gguf_vtype {
	GGUF_VTYPE_UINT8 = 0,
	GGUF_VTYPE_INT8 = 1,
	GGUF_VTYPE_UINT16 = 2,
	GGUF_VTYPE_INT16 = 3,
	GGUF_VTYPE_UINT32 = 4,
	GGUF_VTYPE_INT32 = 5,
	GGUF_VTYPE_FLOAT32 = 6,
	GGUF_VTYPE_BOOL = 7,
	GGUF_VTYPE_STRING = 8,
	GGUF_VTYPE_ARRAY = 9,
	GGUF_VTYPE_UINT64 = 10,
	GGUF_VTYPE_INT64 = 11,
	GGUF_VTYPE_FLOAT64 = 12,
	GGUF_VTYPE_COUNT = 13,
};

/* A string value: bytes in the file, not NUL-terminated, may hold any bytes. */
struct gguf_str {
	const char *ptr;
	uint64_t len;
};

struct gguf_value;

/* An array value. Exactly one of raw/strs/elems is set, by element type. */
struct gguf_arr {
	enum gguf_vtype type;        /* element type */
	uint64_t n;                  /* element count */
	const void *raw;             /* numeric/bool: n packed little-endian elements, unaligned */
	const struct gguf_str *strs; /* STRING: n strings */
	const struct gguf_value *elems; /* ARRAY: n nested array values */
};

struct gguf_value {
	enum gguf_vtype type;
	union {
		uint64_t u;        /* UINT8..UINT64 */
		int64_t i;         /* INT8..INT64 */
		double f;          /* FLOAT32 (exactly), FLOAT64 */
		bool b;            /* BOOL */
		struct gguf_str s; /* STRING */
		struct gguf_arr a; /* ARRAY */
	} v;
};

struct gguf_kv {
	const char *key; /* NUL-terminated copy */
	struct gguf_value value;
	uint64_t offset; /* file offset of the key */
};

struct gguf_tensor {
	const char *name;           /* NUL-terminated copy */
	uint32_t type;              /* enum ggml_type */
	uint32_t n_dims;            /* 1..4 */
	uint64_t ne[GGUF_MAX_DIMS]; /* elements per dim, ne[0] innermost; unused dims are 1 */
	uint64_t n_elements;
	uint64_t offset;  /* relative to the data section, a multiple of the alignment */
	uint64_t nbytes;  /* exact size of the data */
	const void *data; /* inside the mapping */
};

struct gguf_file;

/*
 * gguf_open - map and validate the GGUF file at @path.
 * On success *@ret_f owns the mapping. Errors: ORCH_EIO (open/stat/mmap, with
 * errno text), ORCH_ENOMEM, and the ORCH_EGGUF_* codes. *@ret_f is untouched
 * on failure. Never aborts on any input. Thread: any; the result is read-only
 * and may be shared between threads.
 */
orch_err gguf_open(const char *path, struct gguf_file **ret_f, struct orch_errinfo *reterr);

/*
 * gguf_open_mem - validate an in-memory GGUF image of @size bytes at @data.
 * The caller keeps @data alive and unchanged until gguf_close(). @name is
 * used in messages. Same errors as gguf_open() except ORCH_EIO.
 */
orch_err gguf_open_mem(const void *data, size_t size, const char *name, struct gguf_file **ret_f,
                       struct orch_errinfo *reterr);

/* gguf_close - unmap and free everything; NULL is fine. */
void gguf_close(struct gguf_file *f);

/* gguf_version - 2 or 3. */
uint32_t gguf_version(const struct gguf_file *f);

/* gguf_alignment - general.alignment, or 32 when absent. */
uint32_t gguf_alignment(const struct gguf_file *f);

/* gguf_data_offset - file offset of the tensor data section. */
uint64_t gguf_data_offset(const struct gguf_file *f);

/* gguf_size - file size in bytes. */
uint64_t gguf_size(const struct gguf_file *f);

/* gguf_name - the path or name the file was opened with. */
const char *gguf_name(const struct gguf_file *f);

/* gguf_kv_count / gguf_kv_at - iterate metadata in file order; @i < count. */
size_t gguf_kv_count(const struct gguf_file *f);
const struct gguf_kv *gguf_kv_at(const struct gguf_file *f, size_t i);

/* gguf_find_kv - the entry named @key, or NULL. O(log n). */
const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key);

/* gguf_tensor_count / gguf_tensor_at - iterate tensors in file order; @i < count. */
size_t gguf_tensor_count(const struct gguf_file *f);
const struct gguf_tensor *gguf_tensor_at(const struct gguf_file *f, size_t i);

/* gguf_find_tensor - the tensor named @name, or NULL. O(log n). */
const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name);

/*
 * Typed accessors: ORCH_OK and *out set; ORCH_ENOTFOUND when @key is absent;
 * ORCH_ETYPE when it holds another type (*out untouched in both cases).
 */
orch_err gguf_get_u8(const struct gguf_file *f, const char *key, uint8_t *out);
orch_err gguf_get_i8(const struct gguf_file *f, const char *key, int8_t *out);
orch_err gguf_get_u16(const struct gguf_file *f, const char *key, uint16_t *out);
orch_err gguf_get_i16(const struct gguf_file *f, const char *key, int16_t *out);
orch_err gguf_get_u32(const struct gguf_file *f, const char *key, uint32_t *out);
orch_err gguf_get_i32(const struct gguf_file *f, const char *key, int32_t *out);
orch_err gguf_get_u64(const struct gguf_file *f, const char *key, uint64_t *out);
orch_err gguf_get_i64(const struct gguf_file *f, const char *key, int64_t *out);
orch_err gguf_get_f32(const struct gguf_file *f, const char *key, float *out);
orch_err gguf_get_f64(const struct gguf_file *f, const char *key, double *out);
orch_err gguf_get_bool(const struct gguf_file *f, const char *key, bool *out);
orch_err gguf_get_str(const struct gguf_file *f, const char *key, struct gguf_str *out);

/*
 * gguf_get_arr - the array at @key whose elements have type @elem
 * (GGUF_VTYPE_COUNT: any). ORCH_ETYPE when it is not an array of @elem.
 */
orch_err gguf_get_arr(const struct gguf_file *f, const char *key, enum gguf_vtype elem,
                      const struct gguf_arr **out);

/*
 * gguf_get_uint - any unsigned or signed integer value at @key, widened.
 * ORCH_ETYPE for non-integers, ORCH_ERANGE for a negative value.
 * Writers differ on u32 vs i32 for counts; model code uses this.
 */
orch_err gguf_get_uint(const struct gguf_file *f, const char *key, uint64_t *out);

/* gguf_get_float - a FLOAT32 or FLOAT64 value at @key as double. */
orch_err gguf_get_float(const struct gguf_file *f, const char *key, double *out);

/* gguf_arr_num - element @i (< a->n) of a numeric or bool array as double. */
double gguf_arr_num(const struct gguf_arr *a, uint64_t i);

/* gguf_arr_int - element @i (< a->n) of an integer or bool array as int64 (u64 above INT64_MAX
 * saturates). */
int64_t gguf_arr_int(const struct gguf_arr *a, uint64_t i);

/* gguf_vtype_name - "uint32", "string", ... ("?" when out of range). */
const char *gguf_vtype_name(uint32_t t);

/* gguf_vtype_size - bytes of one fixed-size value of type @t; 0 for STRING, ARRAY and unknown. */
size_t gguf_vtype_size(uint32_t t);

#ifdef __cplusplus
}
#endif
