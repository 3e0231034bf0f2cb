/*
 * model.c - architecture detection, hyper-parameters and tensor lookup
 * shared by the per-architecture files.
 *
 * Every hyper-parameter comes from "{arch}.*" metadata. The keys llama.cpp's
 * converter always writes are required and a missing one is an error naming
 * it; the ones it may leave out get llama.cpp's loader defaults
 * (docs/engine.md has the table): attention.head_count_kv = head_count,
 * attention.key_length = value_length = n_embd / head_count,
 * rope.dimension_count = key_length (the converter writes none for qwen2),
 * rope.freq_base = 10000. {arch}.vocab_size is never read: the vocabulary
 * is the row count of token_embd.weight.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"

const char *
model_arch_name(enum model_arch a)
{
	switch (a) {
	case MODEL_LLAMA:
		return "llama";
	case MODEL_QWEN2:
		return "qwen2";
	case MODEL_PHI3:
		return "phi3";
	case MODEL_GPT_OSS:
		return "gpt-oss";
	case MODEL_QWEN3:
		return "qwen3";
	case MODEL_QWEN3MOE:
		return "qwen3moe";
	case MODEL_GEMMA3:
		return "gemma3";
	case MODEL_MISTRAL3:
		return "mistral3";
	}
	return "?";
}

orch_err
model_key_u32(const struct gguf_file *f, const char *arch, const char *suffix, uint32_t *out,
              bool required, struct orch_errinfo *reterr)
{
	char key[128];
	uint64_t v;
	orch_err rv;

	snprintf(key, sizeof(key), "%s.%s", arch, suffix);
	rv = gguf_get_uint(f, key, &v);
	if (rv == ORCH_ENOTFOUND && !required)
		return ORCH_OK;
	if (rv == ORCH_ENOTFOUND)
		return orch_errf(reterr, rv, "%s: required key %s is missing", gguf_name(f), key);
	if (rv != ORCH_OK || v == 0 || v > 1u << 24)
		return orch_errf(reterr, ORCH_ETYPE, "%s: key %s must be an integer 1..16777216",
		                 gguf_name(f), key);
	*out = (uint32_t)v;
	return ORCH_OK;
}

orch_err
model_key_f32(const struct gguf_file *f, const char *arch, const char *suffix, float *out,
              bool required, struct orch_errinfo *reterr)
{
	char key[128];
	double v;
	orch_err rv;

	snprintf(key, sizeof(key), "%s.%s", arch, suffix);
	rv = gguf_get_float(f, key, &v);
	if (rv == ORCH_ENOTFOUND && !required)
		return ORCH_OK;
	if (rv != ORCH_OK)
		return orch_errf(reterr, rv, "%s: %s key %s", gguf_name(f),
		                 rv == ORCH_ENOTFOUND ? "required" : "float", key);
	*out = (float)v;
	return ORCH_OK;
}

/* The head size: attention.key_length, which must equal value_length, else n_embd / n_head. */
static orch_err
read_head_dim(const struct gguf_file *f, const char *arch, struct model_hparams *hp,
              struct orch_errinfo *reterr)
{
	uint32_t k = 0, v = 0;
	orch_err rv;

	if ((rv = model_key_u32(f, arch, "attention.key_length", &k, false, reterr)) ||
	    (rv = model_key_u32(f, arch, "attention.value_length", &v, false, reterr)))
		return rv;
	if (k == 0 && v == 0) {
		if (hp->n_embd % hp->n_head != 0)
			return orch_errf(
			        reterr, ORCH_EINVAL,
			        "%s: %u heads do not divide n_embd %u (and no %s.attention.key_length)",
			        gguf_name(f), hp->n_head, hp->n_embd, arch);
		hp->head_dim = hp->n_embd / hp->n_head;
		return ORCH_OK;
	}
	if (k == 0 || v == 0 || k != v)
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "%s: attention.key_length %u and value_length %u differ, which the engine does not support",
		        gguf_name(f), k, v);
	hp->head_dim = k;
	return ORCH_OK;
}

/* What an architecture's file may hold beyond a dense llama-like model. */
struct arch_caps {
	bool moe;    /* {arch}.expert_count > 0 (its loader reads the expert keys) */
	bool yarn;   /* rope.scaling.type = yarn (its loader reads the YaRN keys) */
	bool linear; /* rope.scaling.type = linear (its loader reads the factor) */
};

static orch_err
read_hparams(const struct gguf_file *f, const char *arch, const struct arch_caps *caps,
             struct model_hparams *hp, struct orch_errinfo *reterr)
{
	uint64_t n_expert = 0;
	struct gguf_str st;
	char key[128];
	orch_err rv;

	hp->rope_base = 10000.0f;
	if ((rv = model_key_u32(f, arch, "embedding_length", &hp->n_embd, true, reterr)) ||
	    (rv = model_key_u32(f, arch, "block_count", &hp->n_layer, true, reterr)) ||
	    (rv = model_key_u32(f, arch, "attention.head_count", &hp->n_head, true, reterr)) ||
	    (rv = model_key_u32(f, arch, "feed_forward_length", &hp->n_ff, true, reterr)) ||
	    (rv = model_key_u32(f, arch, "context_length", &hp->n_ctx_train, true, reterr)) ||
	    (rv = model_key_f32(f, arch, "attention.layer_norm_rms_epsilon", &hp->rms_eps, true,
	                        reterr)) ||
	    (rv = model_key_f32(f, arch, "rope.freq_base", &hp->rope_base, false, reterr)))
		return rv;
	/* NaN, a negative epsilon or a base of 0 or less: a model that only ever says NaN */
	if (!(hp->rms_eps >= 0.0f && hp->rms_eps < 1.0f))
		return orch_errf(reterr, ORCH_EINVAL,
		                 "%s: %s.attention.layer_norm_rms_epsilon %g is not in [0, 1)",
		                 gguf_name(f), arch, (double)hp->rms_eps);
	if (!(hp->rope_base > 0.0f) || !isfinite(hp->rope_base))
		return orch_errf(reterr, ORCH_EINVAL, "%s: %s.rope.freq_base %g is not positive",
		                 gguf_name(f), arch, (double)hp->rope_base);
	snprintf(key, sizeof(key), "%s.expert_count", arch);
	if (!caps->moe && gguf_get_uint(f, key, &n_expert) == ORCH_OK && n_expert > 0)
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "%s: %s.expert_count is %llu: mixture-of-experts %s models are not supported",
		        gguf_name(f), arch, (unsigned long long)n_expert, arch);
	hp->n_head_kv = hp->n_head;
	if ((rv = model_key_u32(f, arch, "attention.head_count_kv", &hp->n_head_kv, false, reterr)))
		return rv;
	if (hp->n_head % hp->n_head_kv != 0)
		return orch_errf(reterr, ORCH_EINVAL, "%s: %u KV heads do not divide the %u heads",
		                 gguf_name(f), hp->n_head_kv, hp->n_head);
	if ((rv = read_head_dim(f, arch, hp, reterr)) != ORCH_OK)
		return rv;
	hp->n_rot = hp->head_dim;
	if ((rv = model_key_u32(f, arch, "rope.dimension_count", &hp->n_rot, false, reterr)))
		return rv;
	if (hp->n_rot > hp->head_dim || hp->n_rot % 2 != 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "%s: rope.dimension_count %u does not fit head_dim %u",
		                 gguf_name(f), hp->n_rot, hp->head_dim);
	snprintf(key, sizeof(key), "%s.rope.scaling.type", arch);
	if (gguf_get_str(f, key, &st) == ORCH_OK &&
	    !(st.len == 4 && memcmp(st.ptr, "none", 4) == 0) &&
	    !(caps->yarn && st.len == 4 && memcmp(st.ptr, "yarn", 4) == 0) &&
	    !(caps->linear && st.len == 6 && memcmp(st.ptr, "linear", 6) == 0))
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: rope scaling '%.*s' is not supported", gguf_name(f),
		                 (int)(st.len > 32 ? 32 : st.len), st.ptr);
	return ORCH_OK;
}

/* Tensor @name, or NULL (an error when @required); nothing once *@rv is set. */
static const struct gguf_tensor *
lookup(const struct gguf_file *f, const char *name, bool required, orch_err *rv,
       struct orch_errinfo *reterr)
{
	const struct gguf_tensor *t = *rv == ORCH_OK ? gguf_find_tensor(f, name) : NULL;

	if (*rv == ORCH_OK && t == NULL && required)
		*rv = orch_errf(reterr, ORCH_ENOTFOUND, "%s: tensor %s is missing", gguf_name(f),
		                name);
	return t;
}

/* Whether @t has a type the engine computes with (F32 only for @one_d); else *@rv. */
static bool
type_ok(const struct gguf_file *f, const struct gguf_tensor *t, bool one_d, orch_err *rv,
        struct orch_errinfo *reterr)
{
	if (quant_supported(t->type) && (!one_d || t->type == GGML_TYPE_F32))
		return true;
	*rv = orch_errf(reterr, ORCH_EUNSUPPORTED,
	                "%s: tensor %s has type %s, which the engine does not support%s",
	                gguf_name(f), t->name, ggml_type_name(t->type),
	                one_d ? " for a 1-D tensor (F32 only)" : "");
	return false;
}

const struct gguf_tensor *
model_tensor(const struct gguf_file *f, const char *name, uint64_t ne0, uint64_t ne1, bool required,
             orch_err *rv, struct orch_errinfo *reterr)
{
	const struct gguf_tensor *t = lookup(f, name, required, rv, reterr);

	if (t == NULL)
		return NULL;
	if (t->ne[0] != ne0 || t->ne[1] != (ne1 ? ne1 : 1) || t->n_dims > 2) {
		*rv = orch_errf(reterr, ORCH_EGGUF_SHAPE,
		                "%s: tensor %s is [%llu, %llu], want [%llu, %llu]", gguf_name(f),
		                name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
		                (unsigned long long)ne0, (unsigned long long)(ne1 ? ne1 : 1));
		return NULL;
	}
	return type_ok(f, t, ne1 == 0, rv, reterr) ? t : NULL;
}

const struct gguf_tensor *
model_tensor3(const struct gguf_file *f, const char *name, uint64_t ne0, uint64_t ne1, uint64_t ne2,
              orch_err *rv, struct orch_errinfo *reterr)
{
	const struct gguf_tensor *t = lookup(f, name, true, rv, reterr);

	if (t == NULL)
		return NULL;
	if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2 || t->n_dims > 3) {
		*rv = orch_errf(reterr, ORCH_EGGUF_SHAPE,
		                "%s: tensor %s is [%llu, %llu, %llu], want [%llu, %llu, %llu]",
		                gguf_name(f), name, (unsigned long long)t->ne[0],
		                (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
		                (unsigned long long)ne0, (unsigned long long)ne1,
		                (unsigned long long)ne2);
		return NULL;
	}
	return type_ok(f, t, false, rv, reterr) ? t : NULL;
}

orch_err
model_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr)
{
	static const struct {
		const char *name;
		enum model_arch arch;
		orch_err (*load)(const struct gguf_file *, struct model *, struct orch_errinfo *);
		struct arch_caps caps;
	} archs[] = {
	        {"llama", MODEL_LLAMA, model_llama_load, {0}},
	        {"qwen2", MODEL_QWEN2, model_qwen2_load, {0}},
	        {"phi3", MODEL_PHI3, model_phi3_load, {0}},
	        {"gpt-oss", MODEL_GPT_OSS, model_gpt_oss_load, {.moe = true, .yarn = true}},
	        {"qwen3", MODEL_QWEN3, model_qwen3_load, {0}},
	        {"qwen3moe", MODEL_QWEN3MOE, model_qwen3moe_load, {.moe = true}},
	        {"gemma3", MODEL_GEMMA3, model_gemma3_load, {.linear = true}},
	        {"mistral3", MODEL_MISTRAL3, model_mistral3_load, {.yarn = true, .linear = true}}};
	struct gguf_str a;
	char arch[64];
	orch_err rv;

	memset(m, 0, sizeof(*m));
	if (gguf_get_str(f, "general.architecture", &a) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOTFOUND, "%s: general.architecture is missing",
		                 gguf_name(f));
	snprintf(arch, sizeof(arch), "%.*s", (int)(a.len > 60 ? 60 : a.len), a.ptr);
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
		if (strcmp(arch, archs[i].name) != 0)
			continue;
		m->hp.arch = archs[i].arch;
		if ((rv = read_hparams(f, arch, &archs[i].caps, &m->hp, reterr)) != ORCH_OK)
			return rv;
		m->layers = orch_calloc(m->hp.n_layer, sizeof(*m->layers));
		if (m->layers == NULL)
			return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
		if ((rv = archs[i].load(f, m, reterr)) != ORCH_OK)
			model_free(m);
		return rv;
	}
	return orch_errf(
	        reterr, ORCH_EUNSUPPORTED,
	        "%s: architecture '%s' is not supported (supported: llama, qwen2, qwen3, qwen3moe, "
	        "gemma3, mistral3, phi3, gpt-oss)",
	        gguf_name(f), arch);
}

void
model_free(struct model *m)
{
	orch_free(m->layers);
	m->layers = NULL;
}

/* ggml's corrected dimension: where @rotations full turns fit the original context. */
static float
corr_dim(uint32_t n_dims, uint32_t orig_ctx, float rotations, float base)
{
	return (float)n_dims * logf((float)orig_ctx / (rotations * 2 * (float)M_PI)) /
	       (2 * logf(base));
}

void
model_yarn_params(uint32_t n_rot, float base, float factor, uint32_t orig_ctx, float beta_fast,
                  float beta_slow, float attn_factor, struct model_yarn *ret)
{
	float start = floorf(corr_dim(n_rot, orig_ctx, beta_fast, base));
	float end = ceilf(corr_dim(n_rot, orig_ctx, beta_slow, base));

	ret->freq_scale = 1.0f / factor;
	ret->ext_factor = 1.0f; /* llama.cpp's for rope.scaling.type yarn */
	ret->attn_factor = attn_factor > 0.0f ? attn_factor : 1.0f;
	ret->corr_dims[0] = start > 0 ? start : 0;
	ret->corr_dims[1] = end < (float)(n_rot - 1) ? end : (float)(n_rot - 1);
}

/* llama.cpp's get_mscale (llama-context.cpp), in its order of operations. */
static float
yarn_mscale(float scale, float mscale)
{
	return scale <= 1.0f ? 1.0f : 0.1f * mscale * logf(scale) + 1.0f;
}

float
model_yarn_attn_factor(float factor, float log_mul, float rope_attn_factor)
{
	float f = 1.0f / (1.0f / factor); /* llama.cpp's 1 / cparams.rope_freq_scale */
	float a = log_mul != 0.0f ? yarn_mscale(f, 1.0f) / yarn_mscale(f, log_mul)
	                          : yarn_mscale(f, 1.0f);

	a *= 1.0f / (1.0f + 0.1f * logf(f)); /* ggml's rope multiplies by that again */
	return a * rope_attn_factor;
}

/* GELU's tanh approximation in float, as ggml_gelu_f32 (the CPU's order of operations). */
static float
gelu_tanh(float x)
{
	return 0.5f * x * (1.0f + tanhf(0.79788456080286535588f * x * (1.0f + 0.044715f * x * x)));
}

void
model_gelu_table(float *tab)
{
	for (uint32_t h = 0; h < 65536; h++)
		tab[h] = fp16_to_f32(fp16_from_f32(gelu_tanh(fp16_to_f32((uint16_t)h))));
}
