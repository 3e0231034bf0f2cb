#include "ggml_type.h"

#include <stddef.h>
#include <strings.h>

/* Block layouts as ggml defines them (ggml-common.h); sizes are sums of the fields. */
static const struct ggml_type_info types[GGML_TYPE_ID_LIMIT] = {
        [GGML_TYPE_F32] = {"F32", 1, 4, false},
        [GGML_TYPE_F16] = {"F16", 1, 2, false},
        [GGML_TYPE_Q4_0] = {"Q4_0", 32, 2 + 16, true},
        [GGML_TYPE_Q4_1] = {"Q4_1", 32, 2 + 2 + 16, true},
        [GGML_TYPE_Q5_0] = {"Q5_0", 32, 2 + 4 + 16, true},
        [GGML_TYPE_Q5_1] = {"Q5_1", 32, 2 + 2 + 4 + 16, true},
        [GGML_TYPE_Q8_0] = {"Q8_0", 32, 2 + 32, true},
        [GGML_TYPE_Q8_1] = {"Q8_1", 32, 2 + 2 + 32, true},
        [GGML_TYPE_Q2_K] = {"Q2_K", QK_K, 16 + 64 + 2 + 2, true},
        [GGML_TYPE_Q3_K] = {"Q3_K", QK_K, 32 + 64 + 12 + 2, true},
        [GGML_TYPE_Q4_K] = {"Q4_K", QK_K, 2 + 2 + 12 + 128, true},
        [GGML_TYPE_Q5_K] = {"Q5_K", QK_K, 2 + 2 + 12 + 32 + 128, true},
        [GGML_TYPE_Q6_K] = {"Q6_K", QK_K, 128 + 64 + 16 + 2, true},
        [GGML_TYPE_Q8_K] = {"Q8_K", QK_K, 4 + 256 + 32, true},
        [GGML_TYPE_IQ2_XXS] = {"IQ2_XXS", QK_K, 2 + 64, true},
        [GGML_TYPE_IQ2_XS] = {"IQ2_XS", QK_K, 2 + 64 + 8, true},
        [GGML_TYPE_IQ3_XXS] = {"IQ3_XXS", QK_K, 2 + 96, true},
        [GGML_TYPE_IQ1_S] = {"IQ1_S", QK_K, 2 + 32 + 16, true},
        [GGML_TYPE_IQ4_NL] = {"IQ4_NL", 32, 2 + 16, true},
        [GGML_TYPE_IQ3_S] = {"IQ3_S", QK_K, 2 + 64 + 8 + 32 + 4, true},
        [GGML_TYPE_IQ2_S] = {"IQ2_S", QK_K, 2 + 64 + 8 + 8, true},
        [GGML_TYPE_IQ4_XS] = {"IQ4_XS", QK_K, 2 + 2 + 4 + 128, true},
        [GGML_TYPE_I8] = {"I8", 1, 1, false},
        [GGML_TYPE_I16] = {"I16", 1, 2, false},
        [GGML_TYPE_I32] = {"I32", 1, 4, false},
        [GGML_TYPE_I64] = {"I64", 1, 8, false},
        [GGML_TYPE_F64] = {"F64", 1, 8, false},
        [GGML_TYPE_IQ1_M] = {"IQ1_M", QK_K, 32 + 16 + 8, true},
        [GGML_TYPE_BF16] = {"BF16", 1, 2, false},
        [GGML_TYPE_TQ1_0] = {"TQ1_0", QK_K, 48 + 4 + 2, true},
        [GGML_TYPE_TQ2_0] = {"TQ2_0", QK_K, 64 + 2, true},
        [GGML_TYPE_MXFP4] = {"MXFP4", 32, 1 + 16, true},
        [GGML_TYPE_NVFP4] = {"NVFP4", 64, 4 + 32, true},
        [GGML_TYPE_Q1_0] = {"Q1_0", 128, 2 + 16, true},
};

const struct ggml_type_info *
ggml_type_get(uint32_t id)
{
	if (id >= GGML_TYPE_ID_LIMIT || types[id].name == NULL)
		return NULL;
	return &types[id];
}

const char *
ggml_type_name(uint32_t id)
{
	const struct ggml_type_info *t = ggml_type_get(id);

	return t ? t->name : "?";
}

orch_err
ggml_type_by_name(const char *name, uint32_t *ret_id)
{
	for (uint32_t id = 0; id < GGML_TYPE_ID_LIMIT; id++) {
		if (types[id].name != NULL && strcasecmp(types[id].name, name) == 0) {
			*ret_id = id;
			return ORCH_OK;
		}
	}
	return ORCH_ENOTFOUND;
}

orch_err
ggml_row_bytes(uint32_t id, uint64_t ne0, uint64_t *ret_bytes)
{
	const struct ggml_type_info *t = ggml_type_get(id);
	uint64_t bytes;

	if (t == NULL)
		return ORCH_EGGUF_TTYPE;
	if (ne0 % t->block_size != 0)
		return ORCH_EGGUF_SHAPE;
	if (__builtin_mul_overflow(ne0 / t->block_size, (uint64_t)t->block_bytes, &bytes))
		return ORCH_EGGUF_SHAPE;
	*ret_bytes = bytes;
	return ORCH_OK;
}
