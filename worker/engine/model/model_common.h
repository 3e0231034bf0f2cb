#pragma once
/* model_common.h - the layer mapper the per-architecture files share (model_layers.c). */
#include "model.h"

struct model_layout {
	bool qkv_bias;   /* attn_{q,k,v}.bias */
	bool fused_qkv;  /* attn_qkv */
	bool fused_ffn;  /* ffn_up holds gate then up */
	bool qk_norm;    /* attn_{q,k}_norm: RMSNorm of each query and key head before RoPE */
	bool moe;        /* ffn_gate_inp and ffn_{gate,up,down}_exps instead of a dense FFN */
	bool post_norms; /* post_attention_norm and post_ffw_norm (gemma3) */
	bool opt_bias;   /* attn_{q,k,v,output}.bias where present (mistral3) */
};

/* model_map - embeddings, output, and every layer's tensors per @lay; shapes checked. */
orch_err model_map(const struct gguf_file *f, struct model *m, const struct model_layout *lay,
                   struct orch_errinfo *reterr);
