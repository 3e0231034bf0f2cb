/*
 * gemma3.c - Google's Gemma 3 (1B to 27B, the text model), as llama.cpp's converter
 * (conversion/gemma.py, Gemma3Model) writes it and its loader (src/models/gemma3.cpp)
 * reads it:
 * - the token embeddings multiplied by √n_embd;
 * - per layer: RMSNorm (attn_norm), attention with an RMSNorm of each query and key head
 *   (attn_{q,k}_norm) before NEOX RoPE, an RMSNorm of its output (post_attention_norm)
 *   before the residual add; RMSNorm (ffn_norm), GeGLU FFN (tanh GELU of the gate times
 *   up), an RMSNorm of its output (post_ffw_norm) before the residual add;
 * - Gemma's RMSNorm multiplies by (1 + w): the converter adds the 1 to every norm weight,
 *   so the file's weights multiply as they are;
 * - interleaved local and global layers: with attention.sliding_window set, layer il
 *   slides when il % pattern < pattern - 1 (attention.sliding_window_pattern, 6 unless the
 *   file says: five local layers, then a global one); a local layer's RoPE base is
 *   rope.freq_base_swa (10000 unless the file says) and it is never scaled, a global
 *   layer's is rope.freq_base, scaled linearly by 1 / rope.scaling.factor (4B and up);
 * - queries multiplied by 1/√key_length after RoPE (by 1/√(n_embd / head_count) for a
 *   62-layer model, Gemma3-27B's query_pre_attn_scalar: llama.cpp decides by the layer
 *   count, since the converter writes no key for it);
 * - tied output, unless output.weight is present; final_logit_softcapping when the file
 *   has it (no released Gemma 3 does).
 * Refused by name: attn_logit_softcapping (Gemma 2's; llama.cpp's gemma3 would ignore
 * it), a per-layer sliding-window array, RoPE scaling other than linear, a RoPE attention
 * factor, and the tensors of other models sharing the name (vision "v.*"/"mm.*",
 * EmbeddingGemma's dense_2/dense_3).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"
#include "model_common.h"

#define A "gemma3" /* the keys' prefix */

/* RoPE: the local base, and the global layers' linear scaling (llama.cpp's defaults). */
static orch_err
read_rope(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	struct gguf_str st;
	float factor = 0.0f, attn_factor = 1.0f;
	orch_err rv;

	hp->rope_base_swa = 10000.0f;
	if ((rv = model_key_f32(f, A, "rope.freq_base_swa", &hp->rope_base_swa, false, reterr)) ||
	    (rv = model_key_f32(f, A, "rope.scale_linear", &factor, false, reterr)) ||
	    (rv = model_key_f32(f, A, "rope.scaling.factor", &factor, false, reterr)) ||
	    (rv = model_key_f32(f, A, "rope.scaling.attn_factor", &attn_factor, false, reterr)))
		return rv;
	if (attn_factor != 1.0f)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: %s.rope.scaling.attn_factor %g is not supported",
		                 gguf_name(f), A, (double)attn_factor);
	/* a factor is 0 (none) or at least 1e-3: 1/factor of a denormal is infinite */
	if (!(hp->rope_base_swa > 0.0f) || !isfinite(hp->rope_base_swa) || !(factor >= 0.0f) ||
	    !isfinite(factor) || (factor > 0.0f && factor < 1e-3f))
		return orch_errf(reterr, ORCH_EINVAL, "%s: RoPE base %g or scaling factor %g",
		                 gguf_name(f), (double)hp->rope_base_swa, (double)factor);
	/* absent type: llama.cpp's default, linear; read_hparams refused all but none/linear */
	if (gguf_get_str(f, A ".rope.scaling.type", &st) == ORCH_OK && st.len == 4 &&
	    memcmp(st.ptr, "none", 4) == 0)
		factor = 0.0f;
	hp->rope_freq_scale = factor > 0.0f && factor != 1.0f ? 1.0f / factor : 0.0f;
	return ORCH_OK;
}

/* The window: a per-layer array and a pattern of 0 (every layer local) are refused. */
static orch_err
read_window(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	uint64_t v;
	orch_err rv;

	hp->swa_pattern = 6; /* llama.cpp's for gemma3 unless the file says */
	if ((rv = model_key_u32(f, A, "attention.sliding_window", &hp->n_swa, false, reterr)))
		return rv;
	if (hp->n_swa == 0)
		return ORCH_OK; /* every layer global */
	rv = gguf_get_uint(f, A ".attention.sliding_window_pattern", &v);
	if (rv == ORCH_ENOTFOUND)
		return ORCH_OK;
	if (rv != ORCH_OK || v == 0 || v > 1u << 24)
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "%s: %s.attention.sliding_window_pattern: only a positive integer is supported "
		        "(not a per-layer array, not 0)",
		        gguf_name(f), A);
	hp->swa_pattern = (uint32_t)v;
	return ORCH_OK;
}

static orch_err
read_keys(const struct gguf_file *f, struct model_hparams *hp, struct orch_errinfo *reterr)
{
	double cap = 0.0;
	orch_err rv;

	if ((rv = read_rope(f, hp, reterr)) || (rv = read_window(f, hp, reterr)) ||
	    (rv = model_key_f32(f, A, "final_logit_softcapping", &hp->final_softcap, false,
	                        reterr)))
		return rv;
	/* any value but a float 0 (an integer one too) is Gemma 2's capping, not done here */
	rv = gguf_get_float(f, A ".attn_logit_softcapping", &cap);
	if (rv != ORCH_ENOTFOUND && (rv != ORCH_OK || cap != 0.0))
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: %s.attn_logit_softcapping (Gemma 2's) is not supported",
		                 gguf_name(f), A);
	/* 0 (none) or at least 1e-3: the cap divides the logits */
	if (!(hp->final_softcap >= 0.0f) || !isfinite(hp->final_softcap) ||
	    (hp->final_softcap > 0.0f && hp->final_softcap < 1e-3f))
		return orch_errf(reterr, ORCH_EINVAL, "%s: %s.final_logit_softcapping %g",
		                 gguf_name(f), A, (double)hp->final_softcap);
	hp->rope_neox = true;
	hp->ffn_gelu = true;
	hp->embd_scale = sqrtf((float)hp->n_embd);
	/* llama.cpp: Gemma3-27B (62 layers) scales by query_pre_attn_scalar = n_embd / n_head */
	hp->attn_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
	                                   : 1.0f / sqrtf((float)hp->head_dim);
	return ORCH_OK;
}

/* Tensors of what shares the architecture's name but is not its text model. */
static orch_err
refuse_tensors(const struct gguf_file *f, struct orch_errinfo *reterr)
{
	static const char *const prefixes[] = {"v.", "mm.", "a.", "dense_2", "dense_3"};

	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const char *name = gguf_tensor_at(f, i)->name;
		for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++)
			if (strncmp(name, prefixes[k], strlen(prefixes[k])) == 0)
				return orch_errf(
				        reterr, ORCH_EUNSUPPORTED,
				        "%s: tensor %s: gemma3's vision/audio projector "
				        "or EmbeddingGemma's dense layers are not supported "
				        "(text models only)",
				        gguf_name(f), name);
	}
	return ORCH_OK;
}

orch_err
model_gemma3_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	static const struct model_layout lay = {.qk_norm = true, .post_norms = true};
	orch_err rv;

	if ((rv = read_keys(f, &m->hp, reterr)) != ORCH_OK ||
	    (rv = refuse_tensors(f, reterr)) != ORCH_OK)
		return rv;
	return model_map(f, m, &lay, reterr);
}
