/*
 * qwen3moe.c - Qwen 3 mixture of experts (Qwen3-30B-A3B, Qwen3-235B-A22B): qwen3's
 * attention (per-head q/k RMSNorm before NEOX RoPE, a head size of its own) and, in
 * every layer, a mixture of experts instead of the dense FFN: a router without bias
 * (ffn_gate_inp), a softmax over all experts' logits, the top expert_used_count
 * probabilities renormalized to sum 1, each chosen expert a SwiGLU FFN without biases
 * (ffn_{gate,up,down}_exps, stacked), no shared expert.
 *
 * The keys are those llama.cpp's converter writes for a Qwen3MoeForCausalLM
 * checkpoint (Qwen3MoeModel -> Qwen2MoeModel -> TextModel): the dense keys,
 * expert_count, expert_used_count and expert_feed_forward_length (moe_intermediate_size;
 * when absent, llama.cpp's default feed_forward_length / expert_used_count). The expert
 * keys other MoE families carry are read too, so a file that needs what this engine
 * does not do is refused by name: a shared expert, expert groups, a gating function
 * other than softmax, a weight scale other than 1, per-layer expert counts.
 * expert_weights_norm (never written for qwen3moe; llama.cpp always renormalizes) is
 * honoured when present: false keeps the chosen probabilities as they are (Hugging
 * Face's norm_topk_prob false).
 */
#include <stdio.h>

#include "gguf/gguf.h"
#include "model_common.h"

#define A "qwen3moe" /* the keys' prefix */

/* A key @suffix that is present and not @ok refuses the file, naming it and @what. */
static orch_err
refuse_key(const struct gguf_file *f, const char *suffix, bool ok, const char *what,
           struct orch_errinfo *reterr)
{
	if (ok)
		return ORCH_OK;
	return orch_errf(reterr, ORCH_EUNSUPPORTED, "%s: %s.%s: %s is not supported", gguf_name(f),
	                 A, suffix, what);
}

/* An integer key: 0 when absent; UINT64_MAX when an array or not an integer. */
static uint64_t
uint_or_zero(const struct gguf_file *f, const char *suffix)
{
	char key[96];
	uint64_t v = 0;
	orch_err rv;

	snprintf(key, sizeof(key), "%s.%s", A, suffix);
	rv = gguf_get_uint(f, key, &v);
	return rv == ORCH_OK ? v : rv == ORCH_ENOTFOUND ? 0 : UINT64_MAX;
}

/* The expert keys other MoE families use, each refused unless it says what qwen3moe does. */
static orch_err
refuse_variants(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	uint64_t gating = uint_or_zero(f, "expert_gating_func");
	orch_err norm_rv = gguf_get_bool(f, A ".expert_weights_norm", &hp->moe_norm_w);
	double scale = 1.0;
	orch_err rv;

	if (gguf_get_float(f, A ".expert_weights_scale", &scale) == ORCH_ETYPE)
		scale = -1.0;
	if ((rv = refuse_key(f, "expert_weights_norm", norm_rv != ORCH_ETYPE,
	                     "a value other than a bool", reterr)) ||
	    (rv = refuse_key(f, "expert_shared_count", uint_or_zero(f, "expert_shared_count") == 0,
	                     "a shared expert", reterr)) ||
	    (rv = refuse_key(f, "expert_shared_feed_forward_length",
	                     uint_or_zero(f, "expert_shared_feed_forward_length") == 0,
	                     "a shared expert", reterr)) ||
	    (rv = refuse_key(f, "expert_group_count", uint_or_zero(f, "expert_group_count") <= 1,
	                     "routing by expert groups", reterr)) ||
	    (rv = refuse_key(f, "expert_gating_func", gating == 0 || gating == 1,
	                     "a gating function other than softmax (1)", reterr)) ||
	    (rv = refuse_key(f, "expert_weights_scale", scale == 0.0 || scale == 1.0,
	                     "scaling the expert weights", reterr)))
		return rv;
	return ORCH_OK;
}

static orch_err
read_keys(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	orch_err rv;

	hp->moe_norm_w = true; /* llama.cpp's for qwen3moe, and every Qwen3 MoE checkpoint's */
	if ((rv = model_key_u32(f, A, "expert_count", &hp->n_expert, true, reterr)) ||
	    (rv = model_key_u32(f, A, "expert_used_count", &hp->n_expert_used, true, reterr)))
		return rv;
	hp->n_ff_exp = hp->n_ff / hp->n_expert_used; /* llama.cpp's default */
	if ((rv = model_key_u32(f, A, "expert_feed_forward_length", &hp->n_ff_exp, false, reterr)))
		return rv;
	if (hp->n_expert_used > hp->n_expert || hp->n_expert > 256 || hp->n_ff_exp == 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "%s: %u experts used of %u, %u wide (at most 256 experts)",
		                 gguf_name(f), hp->n_expert_used, hp->n_expert, hp->n_ff_exp);
	if ((rv = refuse_variants(f, hp, reterr)) != ORCH_OK)
		return rv;
	hp->moe_gating = MODEL_MOE_SOFTMAX_ALL;
	hp->rope_neox = true;
	return ORCH_OK;
}

orch_err
model_qwen3moe_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	static const struct model_layout lay = {.qk_norm = true, .moe = true};
	orch_err rv;

	if ((rv = read_keys(f, &m->hp, reterr)) != ORCH_OK)
		return rv;
	if (gguf_find_tensor(f, "blk.0.ffn_gate_shexp.weight") != NULL ||
	    gguf_find_tensor(f, "blk.0.ffn_gate_inp_shexp.weight") != NULL)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: blk.0.ffn_*_shexp: a shared expert is not supported",
		                 gguf_name(f));
	return model_map(f, m, &lay, reterr);
}
