/*
 * qwen3.c - Qwen 3 (dense): as llama, no QKV biases, an RMSNorm of each query and key
 * head (attn_{q,k}_norm, over head_dim, before RoPE), NEOX RoPE, and a head size of its
 * own (attention.key_length: Qwen3-0.6B's queries are 2,048 wide on a 1,024-wide model).
 */
#include "model_common.h"

orch_err
model_qwen3_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	static const struct model_layout lay = {.qk_norm = true};

	m->hp.rope_neox = true;
	return model_map(f, m, &lay, reterr);
}
