#pragma once
/*
 * gguf_write.h - GGUF v3 writer.
 *
 * Collect metadata and tensor records, then write the file in one pass:
 * header, metadata, tensor table, padding to the alignment, then each
 * tensor's data, each padded to the alignment, as llama.cpp lays them out.
 * Tensor data comes either from a pointer given to gguf_writer_add_tensor()
 * or, when that pointer is NULL, from a fill callback at write time, so a
 * multi-gigabyte model is produced one tensor at a time.
 */
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gguf_writer;

/* gguf_writer_new - an empty writer (alignment 32). ORCH_ENOMEM. */
orch_err gguf_writer_new(struct gguf_writer **ret_w);

/* gguf_writer_free - free @w and its copies of keys and values; NULL is fine. */
void gguf_writer_free(struct gguf_writer *w);

/*
 * gguf_writer_set_value - set @key to a deep copy of @v (any type, nested
 * arrays included; strings may hold any bytes). Setting an existing key
 * replaces its value in place, keeping its position. ORCH_EINVAL for an empty
 * key or a malformed value, ORCH_ENOMEM.
 */
orch_err gguf_writer_set_value(struct gguf_writer *w, const char *key, const struct gguf_value *v);

/* Scalar shorthands for gguf_writer_set_value(). */
orch_err gguf_writer_set_u32(struct gguf_writer *w, const char *key, uint32_t x);
orch_err gguf_writer_set_i32(struct gguf_writer *w, const char *key, int32_t x);
orch_err gguf_writer_set_u64(struct gguf_writer *w, const char *key, uint64_t x);
orch_err gguf_writer_set_f32(struct gguf_writer *w, const char *key, float x);
orch_err gguf_writer_set_bool(struct gguf_writer *w, const char *key, bool x);
orch_err gguf_writer_set_str(struct gguf_writer *w, const char *key, const char *s);

/* gguf_writer_set_arr - array of @n fixed-size elements of type @elem, packed at @data. */
orch_err gguf_writer_set_arr(struct gguf_writer *w, const char *key, enum gguf_vtype elem,
                             const void *data, uint64_t n);

/* gguf_writer_set_arr_str - array of @n NUL-terminated strings. */
orch_err gguf_writer_set_arr_str(struct gguf_writer *w, const char *key, const char *const *strs,
                                 uint64_t n);

/*
 * gguf_writer_set_alignment - data alignment (a power of two); writes
 * general.alignment unless it is the default 32. ORCH_EINVAL otherwise.
 */
orch_err gguf_writer_set_alignment(struct gguf_writer *w, uint32_t alignment);

/*
 * gguf_writer_add_tensor - append a tensor record. @ne has @n_dims (1..4)
 * non-zero dims, ne[0] a whole number of blocks of @type. @data (may be
 * NULL: filled at write time) must stay valid until the write. ORCH_EINVAL
 * for a bad name, shape or type or a duplicate name; ORCH_ENOMEM.
 */
orch_err gguf_writer_add_tensor(struct gguf_writer *w, const char *name, uint32_t type,
                                uint32_t n_dims, const uint64_t *ne, const void *data);

/* gguf_writer_tensor_bytes - data size of tensor @index (in add order). */
uint64_t gguf_writer_tensor_bytes(const struct gguf_writer *w, size_t index);

/*
 * gguf_fill_fn - write the @nbytes of tensor @index (@name) into @dst.
 * Returning non-OK aborts the write with that code.
 */
typedef orch_err (*gguf_fill_fn)(void *ctx, size_t index, const char *name, void *dst,
                                 uint64_t nbytes);

/*
 * gguf_writer_write_file - write the file to @path (via @path.tmp and a rename,
 * so a failed write leaves no partial file). Tensors added without data are
 * filled by @fill (which may be NULL when all have data). ORCH_EIO with errno
 * text, ORCH_ENOMEM, ORCH_EINVAL (missing data and no @fill), or @fill's code.
 */
orch_err gguf_writer_write_file(struct gguf_writer *w, const char *path, gguf_fill_fn fill,
                                void *ctx, struct orch_errinfo *reterr);

/*
 * gguf_writer_write_mem - the same file image in a new buffer, *@ret_buf
 * (free with orch_free) of *@ret_size bytes.
 */
orch_err gguf_writer_write_mem(struct gguf_writer *w, gguf_fill_fn fill, void *ctx, void **ret_buf,
                               size_t *ret_size, struct orch_errinfo *reterr);

#ifdef __cplusplus
}
#endif
