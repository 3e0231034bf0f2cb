#pragma once
/*
 * gguf_internal.h - what the reader's files (gguf.c, gguf_tensors.c,
 * gguf_get.c) share. Not for use outside common/gguf*.
 */
#include "base/arena.h"
#include "gguf.h"

struct gguf_file {
	const uint8_t *base; /* the image: the mapping or the caller's buffer */
	uint64_t size;
	void *map; /* non-NULL when we own an mmap of map_bytes */
	size_t map_bytes;
	char *name;
	uint32_t version;
	uint32_t alignment;
	uint64_t data_offset;
	size_t n_kv, n_tensors;
	struct gguf_kv *kvs;                     /* n_kv, file order */
	struct gguf_tensor *tensors;             /* n_tensors, file order */
	const struct gguf_kv **kv_index;         /* sorted by key */
	const struct gguf_tensor **tensor_index; /* sorted by name */
	struct arena arena;
};

/* gguf_arena_alloc - @n bytes that live until gguf_close(@f); NULL on OOM. */
void *gguf_arena_alloc(struct gguf_file *f, size_t n);

/* gguf_decode_scalar - the fixed-size value of @type at @b into @v (type already set). */
void gguf_decode_scalar(uint32_t type, const uint8_t *b, struct gguf_value *v);

/* gguf_find_kv_linear - lookup before the index exists (used for general.alignment). */
const struct gguf_kv *gguf_find_kv_linear(const struct gguf_file *f, const char *key);

/*
 * gguf_parse_tensors - read f->n_tensors records at *@pos of the @size-byte
 * image @p, check each, place the data section and check every tensor's range.
 */
orch_err gguf_parse_tensors(const uint8_t *p, uint64_t size, uint64_t *pos, struct gguf_file *f,
                            struct orch_errinfo *reterr);

/* gguf_build_index - sorted indexes of keys and tensor names; rejects duplicates. */
orch_err gguf_build_index(struct gguf_file *f, struct orch_errinfo *reterr);
