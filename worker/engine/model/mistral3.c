/*
 * mistral3.c - Mistral's "mistral3" architecture, as llama.cpp's converters
 * (conversion/mistral3.py Ministral3Model, a LlamaModel; conversion/mistral.py
 * MistralModel for Mistral's own format) write it and its loader
 * (src/models/mistral3.cpp) reads it. Two kinds of files carry it:
 * - Mistral Small 3.x (24B): a plain llama decoder under another name;
 * - Ministral 3 (3B, 8B, 14B): the same with YaRN (rope.scaling.type yarn, factor,
 *   original_context_length, yarn_beta_fast/slow, yarn_log_multiplier: HF's
 *   mscale_all_dim) and Llama 4's query temperature (attention.temperature_scale: HF's
 *   llama_4_scaling_beta).
 * The forward pass is llama's: RMSNorm, GQA attention with RoPE in normal mode (pairs
 * 2i, 2i + 1; llama.cpp's LLAMA_ROPE_TYPE_NORM for this architecture), SwiGLU, tied
 * output unless output.weight is present; optional attn_{q,k,v,output}.bias and
 * rope_freqs (Llama 3's frequency factors). With a temperature scale, each query is
 * multiplied after RoPE by log(floor(pos / original_context_length) + 1) · scale + 1
 * (model_attn_temp), the scores still by 1/√head_dim. YaRN's magnitude is llama.cpp's
 * (model_yarn_attn_factor).
 * Refused by name: experts (mistral3 MoE files), RoPE dimensions other than the head's,
 * a temperature scale without an original context, YaRN's ext/attn factor keys and a
 * temperature length (the loader ignores them: a file that sets them means something
 * llama.cpp would not compute), rope_freqs with RoPE scaling, rope.scaling.attn_factor
 * without YaRN, and tensors llama.cpp's loader takes that no converter writes for these
 * models (a fused attn_qkv, FFN biases, LongRoPE factors).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"
#include "model_common.h"

#define A "mistral3" /* the keys' prefix */

/* Keys llama.cpp's mistral3 loader ignores: refused, unless they say what it computes. */
static orch_err
refuse_keys(const struct gguf_file *f, const struct model_hparams *hp, struct orch_errinfo *reterr)
{
	float ext = 1.0f;
	uint32_t len = 0;
	orch_err rv;

	if ((rv = model_key_f32(f, A, "rope.scaling.yarn_ext_factor", &ext, false, reterr)) ||
	    (rv = model_key_u32(f, A, "attention.temperature_length", &len, false, reterr)))
		return rv;
	if (ext != 1.0f)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: %s.rope.scaling.yarn_ext_factor %g is not supported (1 only)",
		                 gguf_name(f), A, (double)ext);
	if (gguf_find_kv(f, A ".rope.scaling.yarn_attn_factor") != NULL)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: %s.rope.scaling.yarn_attn_factor is not supported (llama.cpp "
		                 "derives the factor from yarn_log_multiplier)",
		                 gguf_name(f), A);
	if (len != 0 && len != hp->attn_temp_floor)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: %s.attention.temperature_length %u is not supported (the "
		                 "temperature steps every original_context_length positions)",
		                 gguf_name(f), A, len);
	return ORCH_OK;
}

/* YaRN's keys (rope.scaling.type yarn), with llama.cpp's defaults; its magnitude. */
static orch_err
read_yarn(const struct gguf_file *f, struct model_hparams *hp, float factor, float attn_factor,
          struct orch_errinfo *reterr)
{
	float log_mul = 0.0f;
	orch_err rv;

	hp->yarn_beta_fast = 32.0f;
	hp->yarn_beta_slow = 1.0f;
	if ((rv = model_key_u32(f, A, "rope.scaling.original_context_length", &hp->yarn_orig_ctx,
	                        true, reterr)) ||
	    (rv = model_key_f32(f, A, "rope.scaling.yarn_beta_fast", &hp->yarn_beta_fast, false,
	                        reterr)) ||
	    (rv = model_key_f32(f, A, "rope.scaling.yarn_beta_slow", &hp->yarn_beta_slow, false,
	                        reterr)) ||
	    (rv = model_key_f32(f, A, "rope.scaling.yarn_log_multiplier", &log_mul, false, reterr)))
		return rv;
	if (!(factor >= 1.0f) || !isfinite(factor) || !isfinite(log_mul) ||
	    !isfinite(hp->yarn_beta_fast) || !isfinite(hp->yarn_beta_slow))
		return orch_errf(reterr, ORCH_EINVAL,
		                 "%s: %s YaRN: rope.scaling.factor %g must be at least 1, and the "
		                 "betas and log multiplier finite",
		                 gguf_name(f), A, (double)factor);
	hp->yarn_factor = factor;
	hp->yarn_attn_factor = model_yarn_attn_factor(factor, log_mul, attn_factor);
	return ORCH_OK;
}

/* RoPE: none, linear (llama.cpp's default type when a factor is set) or YaRN. */
static orch_err
read_rope(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	struct gguf_str st = {"linear", 6};
	float factor = 0.0f, attn_factor = 1.0f;
	orch_err rv;

	if ((rv = model_key_f32(f, A, "rope.scale_linear", &factor, false, reterr)) ||
	    (rv = model_key_f32(f, A, "rope.scaling.factor", &factor, false, reterr)) ||
	    (rv = model_key_f32(f, A, "rope.scaling.attn_factor", &attn_factor, false, reterr)))
		return rv;
	if (!(attn_factor > 0.0f) || !isfinite(attn_factor))
		return orch_errf(reterr, ORCH_EINVAL, "%s: %s.rope.scaling.attn_factor %g",
		                 gguf_name(f), A, (double)attn_factor);
	gguf_get_str(f, A ".rope.scaling.type", &st); /* read_hparams: none, linear or yarn */
	if (st.len == 4 && memcmp(st.ptr, "yarn", 4) == 0)
		return read_yarn(f, hp, factor, attn_factor, reterr);
	if (attn_factor != 1.0f)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: %s.rope.scaling.attn_factor %g without YaRN is not supported",
		                 gguf_name(f), A, (double)attn_factor);
	if (st.len == 4 && memcmp(st.ptr, "none", 4) == 0)
		factor = 0.0f;
	/* a factor is 0 (none) or at least 1e-3: 1/factor of a denormal is infinite */
	if (!(factor >= 0.0f) || !isfinite(factor) || (factor > 0.0f && factor < 1e-3f))
		return orch_errf(reterr, ORCH_EINVAL, "%s: %s.rope.scaling.factor %g", gguf_name(f),
		                 A, (double)factor);
	hp->rope_freq_scale = factor > 0.0f && factor != 1.0f ? 1.0f / factor : 0.0f;
	return ORCH_OK;
}

/* Llama 4's query temperature: its scale, and the original context it steps by. */
static orch_err
read_temp(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	orch_err rv;

	if ((rv = model_key_f32(f, A, "attention.temperature_scale", &hp->attn_temp_scale, false,
	                        reterr)))
		return rv;
	if (!isfinite(hp->attn_temp_scale))
		return orch_errf(reterr, ORCH_EINVAL, "%s: %s.attention.temperature_scale %g",
		                 gguf_name(f), A, (double)hp->attn_temp_scale);
	if (hp->attn_temp_scale == 0.0f)
		return ORCH_OK;
	if ((rv = model_key_u32(f, A, "rope.scaling.original_context_length", &hp->attn_temp_floor,
	                        false, reterr)))
		return rv;
	if (hp->attn_temp_floor == 0)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: %s.attention.temperature_scale without "
		                 "%s.rope.scaling.original_context_length is not supported",
		                 gguf_name(f), A, A);
	return ORCH_OK;
}

static orch_err
read_keys(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	orch_err rv;

	if ((rv = read_rope(f, hp, reterr)) || (rv = read_temp(f, hp, reterr)) ||
	    (rv = refuse_keys(f, hp, reterr)))
		return rv;
	if (hp->n_rot != hp->head_dim) /* llama.cpp asserts it for this architecture */
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: %s.rope.dimension_count %u differs from the head size %u",
		                 gguf_name(f), A, hp->n_rot, hp->head_dim);
	hp->rope_neox = false;
	return ORCH_OK;
}

/* Tensors llama.cpp's mistral3 loader would take but orch does not compute. */
static orch_err
refuse_tensors(const struct gguf_file *f, const struct model *m, struct orch_errinfo *reterr)
{
	static const char *const kinds[] = {".attn_qkv.", ".ffn_gate.bias", ".ffn_up.bias",
	                                    ".ffn_down.bias", "rope_factors_"};

	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const char *name = gguf_tensor_at(f, i)->name;
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (strstr(name, kinds[k]) != NULL)
				return orch_errf(reterr, ORCH_EUNSUPPORTED,
				                 "%s: tensor %s (a fused QKV, an FFN bias or "
				                 "LongRoPE factors) is not supported for %s",
				                 gguf_name(f), name, A);
	}
	if (m->rope_freqs != NULL && (m->hp.yarn_factor > 0 || m->hp.rope_freq_scale > 0))
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "%s: rope_freqs.weight together with RoPE scaling is not supported",
		        gguf_name(f));
	return ORCH_OK;
}

orch_err
model_mistral3_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	static const struct model_layout lay = {.opt_bias = true};
	orch_err rv;

	if ((rv = read_keys(f, &m->hp, reterr)) != ORCH_OK ||
	    (rv = model_map(f, m, &lay, reterr)) != ORCH_OK)
		return rv;
	return refuse_tensors(f, m, reterr);
}
