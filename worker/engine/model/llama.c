/* llama.c - Llama 1/2/3 (and stories260K): RMSNorm, GQA, RoPE in normal mode, SwiGLU. */
#include "model_common.h"

orch_err
model_llama_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	static const struct model_layout lay = {0};

	m->hp.rope_neox = false;
	return model_map(f, m, &lay, reterr);
}
