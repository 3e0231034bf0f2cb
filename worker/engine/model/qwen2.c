/* qwen2.c - Qwen 2/2.5: as llama plus QKV biases, NEOX RoPE, usually tied embeddings. */
#include "model_common.h"

orch_err
model_qwen2_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	static const struct model_layout lay = {.qkv_bias = true};

	m->hp.rope_neox = true;
	return model_map(f, m, &lay, reterr);
}
