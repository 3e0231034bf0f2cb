#pragma once
/*
 * ident.h - what identifies a GGUF model file beyond its bytes: the name of
 * its dominant tensor type ("Q4_K_M", "MXFP4"), and the SHA-256 of a group
 * of its metadata keys (a worker's tokenizer hash is that of the
 * tokenizer.ggml.* keys). Pure functions of an open file.
 */
#include <stdint.h>

#include "base/sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gguf_file;

/*
 * gguf_ftype_name - the name of llama.cpp's general.file_type value
 * @ftype as llama-quantize spells it (0 "F32", 1 "F16", 7 "Q8_0",
 * 15 "Q4_K_M", 38 "MXFP4_MOE"...), or NULL for a value llama.cpp does not
 * define (or no longer does: 4-6, 33-35).
 */
const char *gguf_ftype_name(uint32_t ftype);

/*
 * gguf_dominant_type - the name of @f's dominant type: general.file_type's
 * name when the key holds a known value; otherwise the tensor type holding
 * the most bytes among tensors of two or more dimensions (the weight
 * matrices, stacked experts included; 1-D norms and biases do not count),
 * or among all tensors when there is none; the lowest type id wins a tie.
 * NULL for a file without tensors. The string is static.
 */
const char *gguf_dominant_type(const struct gguf_file *f);

/*
 * gguf_kv_sha256 - the SHA-256 of every metadata pair of @f whose key starts
 * with @prefix, in file order, each as GGUF encodes it: key (u64 length,
 * bytes), value type (u32), value (scalars little-endian; a string as u64
 * length and bytes; an array as element type u32, count u64, elements).
 * For a little-endian file that is the exact bytes of those pairs. No
 * matching key gives the digest of nothing.
 */
void gguf_kv_sha256(const struct gguf_file *f, const char *prefix, uint8_t out[SHA256_BYTES]);

#ifdef __cplusplus
}
#endif
