/*
 * gpt_oss.c - OpenAI's gpt-oss (GGUF architecture "gpt-oss"), as llama.cpp's
 * converter writes it and its loader reads it: biases on Q/K/V/O, a learned
 * sink logit per head, layers alternating sliding-window and full causal
 * attention (pattern 2: even layers slide), NEOX RoPE with YaRN scaling,
 * and a mixture of experts per layer (router with bias, top-k experts, each
 * a gated FFN with biases; the expert weights usually MXFP4). The FFN norm
 * is post_attention_norm. Every key and tensor is read from the file; a
 * missing one is named in the error.
 */
#include <stdio.h>
#include <string.h>

#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "model.h"

#define A "gpt-oss" /* the keys' prefix */

/* The expert, window and YaRN keys (llama.cpp's defaults where its loader has one). */
static orch_err
read_keys(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	struct gguf_str st;
	orch_err rv;

	hp->swa_pattern = 2; /* llama.cpp's for gpt-oss unless the file says */
	hp->yarn_beta_fast = 32.0f;
	hp->yarn_beta_slow = 1.0f;
	if ((rv = model_key_u32(f, A, "expert_count", &hp->n_expert, true, reterr)) ||
	    (rv = model_key_u32(f, A, "expert_used_count", &hp->n_expert_used, true, reterr)) ||
	    (rv = model_key_u32(f, A, "expert_feed_forward_length", &hp->n_ff_exp, true, reterr)) ||
	    (rv = model_key_u32(f, A, "attention.sliding_window", &hp->n_swa, true, reterr)) ||
	    (rv = model_key_u32(f, A, "attention.sliding_window_pattern", &hp->swa_pattern, false,
	                        reterr)))
		return rv;
	if (hp->n_expert_used > hp->n_expert || hp->n_expert > 256)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "%s: %u experts used of %u (at most 256 experts)", gguf_name(f),
		                 hp->n_expert_used, hp->n_expert);
	if (gguf_get_str(f, "gpt-oss.rope.scaling.type", &st) == ORCH_OK && st.len == 4 &&
	    memcmp(st.ptr, "yarn", 4) == 0) {
		if ((rv = model_key_f32(f, A, "rope.scaling.factor", &hp->yarn_factor, true,
		                        reterr)) ||
		    (rv = model_key_u32(f, A, "rope.scaling.original_context_length",
		                        &hp->yarn_orig_ctx, true, reterr)) ||
		    (rv = model_key_f32(f, A, "rope.scaling.yarn_beta_fast", &hp->yarn_beta_fast,
		                        false, reterr)) ||
		    (rv = model_key_f32(f, A, "rope.scaling.yarn_beta_slow", &hp->yarn_beta_slow,
		                        false, reterr)))
			return rv;
		if (!(hp->yarn_factor >= 1.0f))
			return orch_errf(reterr, ORCH_EINVAL,
			                 "%s: gpt-oss.rope.scaling.factor must be at least 1",
			                 gguf_name(f));
	}
	hp->rope_neox = true;
	hp->moe_gating = MODEL_MOE_SOFTMAX_CHOSEN;
	hp->moe_swiglu_oai = true;
	return ORCH_OK;
}

static orch_err
map_layer(const struct gguf_file *f, const struct model_hparams *hp, uint32_t il,
          struct model_layer *l, struct orch_errinfo *reterr)
{
	uint64_t e = hp->n_embd, q = (uint64_t)hp->head_dim * hp->n_head;
	uint64_t kv = (uint64_t)hp->head_dim * hp->n_head_kv, ff = hp->n_ff_exp, ne = hp->n_expert;
	orch_err rv = ORCH_OK;
	char n[96];

#define T(suffix, a, b) \
	(snprintf(n, sizeof(n), "blk.%u." suffix, il), model_tensor(f, n, a, b, true, &rv, reterr))
#define T3(suffix, a, b, c) \
	(snprintf(n, sizeof(n), "blk.%u." suffix, il), model_tensor3(f, n, a, b, c, &rv, reterr))
	l->attn_norm = T("attn_norm.weight", e, 0);
	l->wq = T("attn_q.weight", e, q);
	l->bq = T("attn_q.bias", q, 0);
	l->wk = T("attn_k.weight", e, kv);
	l->bk = T("attn_k.bias", kv, 0);
	l->wv = T("attn_v.weight", e, kv);
	l->bv = T("attn_v.bias", kv, 0);
	l->wo = T("attn_output.weight", q, e);
	l->bo = T("attn_output.bias", e, 0);
	l->sinks = T("attn_sinks.weight", hp->n_head, 0);
	l->ffn_norm = T("post_attention_norm.weight", e, 0);
	l->router = T("ffn_gate_inp.weight", e, ne);
	l->router_b = T("ffn_gate_inp.bias", ne, 0);
	l->gate_exps = T3("ffn_gate_exps.weight", e, ff, ne);
	l->up_exps = T3("ffn_up_exps.weight", e, ff, ne);
	l->down_exps = T3("ffn_down_exps.weight", ff, e, ne);
	l->gate_exps_b = T("ffn_gate_exps.bias", ff, ne);
	l->up_exps_b = T("ffn_up_exps.bias", ff, ne);
	l->down_exps_b = T("ffn_down_exps.bias", e, ne);
#undef T
#undef T3
	if (rv == ORCH_OK && l->router->type != GGML_TYPE_F32)
		rv = orch_errf(reterr, ORCH_EUNSUPPORTED,
		               "%s: blk.%u.ffn_gate_inp.weight must be F32", gguf_name(f), il);
	for (int i = 0; rv == ORCH_OK && i < 3; i++) {
		const struct gguf_tensor *b[] = {l->gate_exps_b, l->up_exps_b, l->down_exps_b};
		if (b[i]->type != GGML_TYPE_F32)
			rv = orch_errf(reterr, ORCH_EUNSUPPORTED, "%s: %s must be F32",
			               gguf_name(f), b[i]->name);
	}
	return rv;
}

orch_err
model_gpt_oss_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	struct model_hparams *hp = &m->hp;
	orch_err rv;

	if ((rv = read_keys(f, hp, reterr)) != ORCH_OK ||
	    (rv = model_map_ends(f, m, false, reterr)) != ORCH_OK)
		return rv;
	for (uint32_t il = 0; il < hp->n_layer && rv == ORCH_OK; il++)
		rv = map_layer(f, hp, il, &m->layers[il], reterr);
	return rv;
}
