/*
 * phi3.c - Phi-3: fused attn_qkv, gate and up fused in ffn_up (gate first),
 * NEOX RoPE. The long-context variants (LongRoPE: rope_factors_long/short
 * tensors, a context beyond the original one) are refused until supported.
 */
#include "gguf/gguf.h"
#include "model_common.h"

orch_err
model_phi3_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	static const struct model_layout lay = {.fused_qkv = true, .fused_ffn = true};
	uint64_t orig = 0;

	gguf_get_uint(f, "phi3.rope.scaling.original_context_length", &orig);
	if (gguf_find_tensor(f, "rope_factors_long.weight") != NULL ||
	    gguf_find_tensor(f, "rope_factors_short.weight") != NULL ||
	    (orig != 0 && m->hp.n_ctx_train > orig))
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "%s: phi3 long-rope scaling (context %u beyond the original %llu, or rope_factors_long/short tensors) is not supported",
		        gguf_name(f), m->hp.n_ctx_train, (unsigned long long)orig);
	m->hp.rope_neox = true;
	return model_map(f, m, &lay, reterr);
}
