#pragma once
/*
 * ggml_type.h - every tensor type a current GGUF file can hold.
 *
 * The ids are ggml's (enum ggml_type); they are what a GGUF tensor record
 * stores. A tensor of ne0 elements per row takes ne0 / block_size blocks of
 * block_bytes each. Ids ggml has retired (4, 5, 31-33, 36-38) are unknown here,
 * as they are to ggml.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ggml_type {
	GGML_TYPE_F32 = 0,
	GGML_TYPE_F16 = 1,
	GGML_TYPE_Q4_0 = 2,
	GGML_TYPE_Q4_1 = 3,
	GGML_TYPE_Q5_0 = 6,
	GGML_TYPE_Q5_1 = 7,
	GGML_TYPE_Q8_0 = 8,
	GGML_TYPE_Q8_1 = 9,
	GGML_TYPE_Q2_K = 10,
	GGML_TYPE_Q3_K = 11,
	GGML_TYPE_Q4_K = 12,
	GGML_TYPE_Q5_K = 13,
	GGML_TYPE_Q6_K = 14,
	GGML_TYPE_Q8_K = 15,
	GGML_TYPE_IQ2_XXS = 16,
	GGML_TYPE_IQ2_XS = 17,
	GGML_TYPE_IQ3_XXS = 18,
	GGML_TYPE_IQ1_S = 19,
	GGML_TYPE_IQ4_NL = 20,
	GGML_TYPE_IQ3_S = 21,
	GGML_TYPE_IQ2_S = 22,
	GGML_TYPE_IQ4_XS = 23,
	GGML_TYPE_I8 = 24,
	GGML_TYPE_I16 = 25,
	GGML_TYPE_I32 = 26,
	GGML_TYPE_I64 = 27,
	GGML_TYPE_F64 = 28,
	GGML_TYPE_IQ1_M = 29,
	GGML_TYPE_BF16 = 30,
	GGML_TYPE_TQ1_0 = 34,
	GGML_TYPE_TQ2_0 = 35,
	GGML_TYPE_MXFP4 = 39,
	GGML_TYPE_NVFP4 = 40,
	GGML_TYPE_Q1_0 = 41,
};

#define GGML_TYPE_ID_LIMIT 42  /* one past the largest known id */
#define QK_K               256 /* super-block size of the K, IQ and TQ types */

struct ggml_type_info {
	const char *name;     /* "Q4_K", as llama.cpp prints it */
	uint32_t block_size;  /* elements per block */
	uint32_t block_bytes; /* bytes per block */
	bool quantized;
};

/* ggml_type_get - the description of type id @id, or NULL when ggml has no such type. */
const struct ggml_type_info *ggml_type_get(uint32_t id);

/* ggml_type_name - the name of @id, or "?" when unknown. */
const char *ggml_type_name(uint32_t id);

/* ggml_type_by_name - the id whose name is @name (case-insensitive) into *@ret_id; ORCH_ENOTFOUND
 * otherwise. */
orch_err ggml_type_by_name(const char *name, uint32_t *ret_id);

/*
 * ggml_row_bytes - bytes of one row of @ne0 elements of type @id.
 * ORCH_EGGUF_TTYPE for an unknown id, ORCH_EGGUF_SHAPE when @ne0 is not a
 * whole number of blocks. *@ret_bytes is set only on success.
 */
orch_err ggml_row_bytes(uint32_t id, uint64_t ne0, uint64_t *ret_bytes);

#ifdef __cplusplus
}
#endif
