/*
 * synth.c - build a preset's tensor list and metadata and write the model.
 *
 * Weights: each tensor draws from its own stream seeded by (seed, name),
 * so a tensor's values do not depend on the others or on --layers.
 * Matrices are N(0, (0.5/√fan_in)²)-ish (Irwin-Hall), so every matmul keeps
 * activations near unit scale; norm weights are 1 ± 0.05, biases ± 0.02.
 * Rows are generated and quantized one at a time into the writer's
 * per-tensor buffer: memory use is one tensor, whatever the model size.
 */
#include "synth.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rng.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf_write.h"
#include "gguf/quant.h"

enum kind { K_WEIGHT, K_NORM, K_BIAS, K_ROPE };

struct stensor {
	char name[64];
	uint32_t type, n_dims;
	uint64_t ne[3]; /* ne[2]: experts (gpt-oss, qwen3moe), else 1 */
	enum kind kind;
};

struct synth {
	const struct synth_preset *p;
	struct synth_mix mix;
	uint64_t seed;
	uint32_t n_layer, n_vocab;
	struct stensor *t;
	size_t n, cap;
};

/*
 * The type of matrix @name: gpt-oss keeps its experts MXFP4, as its files; a router
 * (ffn_gate_inp) stays F32, as llama.cpp's converter and quantizer keep it.
 */
static uint32_t
weight_type(const struct synth *s, const char *name, uint64_t ne0, uint32_t layer)
{
	if (s->p->gpt_oss && strstr(name, "_exps.") != NULL)
		return GGML_TYPE_MXFP4;
	if (strstr(name, "ffn_gate_inp.") != NULL)
		return GGML_TYPE_F32;
	return synth_mix_type(&s->mix, name, ne0, layer, s->n_layer, !s->p->tied);
}

/* Tensor @name of @ne0 × @ne1 (0: 1-D) × @ne2 (0: 2-D at most). */
static orch_err
add3(struct synth *s, const char *name, enum kind kind, uint64_t ne0, uint64_t ne1, uint64_t ne2,
     uint32_t layer)
{
	struct stensor *t;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		t = orch_reallocarray(s->t, cap, sizeof(*t));
		if (t == NULL)
			return ORCH_ENOMEM;
		s->t = t;
		s->cap = cap;
	}
	t = &s->t[s->n++];
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->kind = kind;
	t->n_dims = ne2 ? 3 : ne1 ? 2 : 1;
	t->ne[0] = ne0;
	t->ne[1] = ne1 ? ne1 : 1;
	t->ne[2] = ne2 ? ne2 : 1;
	t->type = kind == K_WEIGHT ? weight_type(s, name, ne0, layer) : GGML_TYPE_F32;
	return ORCH_OK;
}

static orch_err
add(struct synth *s, const char *name, enum kind kind, uint64_t ne0, uint64_t ne1, uint32_t layer)
{
	return add3(s, name, kind, ne0, ne1, 0, layer);
}

/* A gpt-oss block: biased attention with sinks, the router, the experts and their biases. */
static orch_err
add_gpt_oss_layer(struct synth *s, uint32_t l)
{
	const struct synth_preset *p = s->p;
	uint64_t e = p->n_embd, q = (uint64_t)p->head_dim * p->n_head;
	uint64_t kv = (uint64_t)p->head_dim * p->n_head_kv, ff = p->n_ff, ne = p->n_expert;
	char n[64];
	orch_err rv = ORCH_OK;

#define ADD3(suffix, kind, a, b, c)                          \
	do {                                                 \
		snprintf(n, sizeof(n), "blk.%u." suffix, l); \
		if (rv == ORCH_OK)                           \
			rv = add3(s, n, kind, a, b, c, l);   \
	} while (0)
	ADD3("attn_norm.weight", K_NORM, e, 0, 0);
	ADD3("attn_q.weight", K_WEIGHT, e, q, 0);
	ADD3("attn_q.bias", K_BIAS, q, 0, 0);
	ADD3("attn_k.weight", K_WEIGHT, e, kv, 0);
	ADD3("attn_k.bias", K_BIAS, kv, 0, 0);
	ADD3("attn_v.weight", K_WEIGHT, e, kv, 0);
	ADD3("attn_v.bias", K_BIAS, kv, 0, 0);
	ADD3("attn_output.weight", K_WEIGHT, q, e, 0);
	ADD3("attn_output.bias", K_BIAS, e, 0, 0);
	ADD3("attn_sinks.weight", K_BIAS, p->n_head, 0, 0);
	ADD3("post_attention_norm.weight", K_NORM, e, 0, 0);
	ADD3("ffn_gate_inp.weight", K_WEIGHT, e, ne, 0);
	ADD3("ffn_gate_inp.bias", K_BIAS, ne, 0, 0);
	ADD3("ffn_gate_exps.weight", K_WEIGHT, e, ff, ne);
	ADD3("ffn_gate_exps.bias", K_BIAS, ff, ne, 0);
	ADD3("ffn_up_exps.weight", K_WEIGHT, e, ff, ne);
	ADD3("ffn_up_exps.bias", K_BIAS, ff, ne, 0);
	ADD3("ffn_down_exps.weight", K_WEIGHT, ff, e, ne);
	ADD3("ffn_down_exps.bias", K_BIAS, e, ne, 0);
#undef ADD3
	return rv;
}

static orch_err
add_layer(struct synth *s, uint32_t l)
{
	const struct synth_preset *p = s->p;
	uint64_t hd = p->head_dim ? p->head_dim : p->n_embd / p->n_head;
	uint64_t q = hd * p->n_head, kv = hd * p->n_head_kv;
	char n[64];
	orch_err rv = ORCH_OK;

#define ADD(suffix, kind, a, b)                              \
	do {                                                 \
		snprintf(n, sizeof(n), "blk.%u." suffix, l); \
		if (rv == ORCH_OK)                           \
			rv = add(s, n, kind, a, b, l);       \
	} while (0)
	ADD("attn_norm.weight", K_NORM, p->n_embd, 0);
	if (p->fused) {
		ADD("attn_qkv.weight", K_WEIGHT, p->n_embd, q + 2 * kv);
	} else {
		ADD("attn_q.weight", K_WEIGHT, p->n_embd, q);
		ADD("attn_k.weight", K_WEIGHT, p->n_embd, kv);
		ADD("attn_v.weight", K_WEIGHT, p->n_embd, kv);
	}
	if (p->qkv_bias) {
		ADD("attn_q.bias", K_BIAS, q, 0);
		ADD("attn_k.bias", K_BIAS, kv, 0);
		ADD("attn_v.bias", K_BIAS, kv, 0);
	}
	if (p->qk_norm) {
		ADD("attn_q_norm.weight", K_NORM, hd, 0);
		ADD("attn_k_norm.weight", K_NORM, hd, 0);
	}
	ADD("attn_output.weight", K_WEIGHT, q, p->n_embd);
	if (p->gemma3)
		ADD("post_attention_norm.weight", K_NORM, p->n_embd, 0);
	ADD("ffn_norm.weight", K_NORM, p->n_embd, 0);
#undef ADD
	if (p->n_expert > 0) { /* qwen3moe: the router and the experts, stacked */
		uint64_t e = p->n_embd, ff = p->n_ff_exp, ne = p->n_expert;
#define ADD3(suffix, a, b, c)                                  \
	do {                                                   \
		snprintf(n, sizeof(n), "blk.%u." suffix, l);   \
		if (rv == ORCH_OK)                             \
			rv = add3(s, n, K_WEIGHT, a, b, c, l); \
	} while (0)
		ADD3("ffn_gate_inp.weight", e, ne, 0);
		ADD3("ffn_gate_exps.weight", e, ff, ne);
		ADD3("ffn_up_exps.weight", e, ff, ne);
		ADD3("ffn_down_exps.weight", ff, e, ne);
#undef ADD3
		return rv;
	}
#define ADD(suffix, kind, a, b)                              \
	do {                                                 \
		snprintf(n, sizeof(n), "blk.%u." suffix, l); \
		if (rv == ORCH_OK)                           \
			rv = add(s, n, kind, a, b, l);       \
	} while (0)
	if (p->fused) {
		ADD("ffn_up.weight", K_WEIGHT, p->n_embd, 2ull * p->n_ff);
	} else {
		ADD("ffn_gate.weight", K_WEIGHT, p->n_embd, p->n_ff);
		ADD("ffn_up.weight", K_WEIGHT, p->n_embd, p->n_ff);
	}
	ADD("ffn_down.weight", K_WEIGHT, p->n_ff, p->n_embd);
	if (p->gemma3)
		ADD("post_ffw_norm.weight", K_NORM, p->n_embd, 0);
#undef ADD
	return rv;
}

static orch_err
build_tensors(struct synth *s)
{
	const struct synth_preset *p = s->p;
	orch_err rv = add(s, "token_embd.weight", K_WEIGHT, p->n_embd, s->n_vocab, 0);

	if (rv == ORCH_OK && p->llama3_rope)
		rv = add(s, "rope_freqs.weight", K_ROPE, p->n_rot / 2, 0, 0);
	for (uint32_t l = 0; l < s->n_layer && rv == ORCH_OK; l++)
		rv = p->gpt_oss ? add_gpt_oss_layer(s, l) : add_layer(s, l);
	if (rv == ORCH_OK)
		rv = add(s, "output_norm.weight", K_NORM, p->n_embd, 0, 0);
	if (rv == ORCH_OK && !p->tied)
		rv = add(s, "output.weight", K_WEIGHT, p->n_embd, s->n_vocab, 0);
	return rv;
}

static orch_err
set_hparams(struct gguf_writer *w, const struct synth *s)
{
	const struct synth_preset *p = s->p;
	char k[128];
	orch_err rv = ORCH_OK;

#define KEY(suffix) (snprintf(k, sizeof(k), "%s." suffix, p->arch), k)
	if ((rv = gguf_writer_set_u32(w, KEY("context_length"), p->n_ctx)) ||
	    (rv = gguf_writer_set_u32(w, KEY("embedding_length"), p->n_embd)) ||
	    (rv = gguf_writer_set_u32(w, KEY("block_count"), s->n_layer)) ||
	    (rv = gguf_writer_set_u32(w, KEY("feed_forward_length"), p->n_ff)) ||
	    (rv = gguf_writer_set_u32(w, KEY("attention.head_count"), p->n_head)) ||
	    (rv = gguf_writer_set_u32(w, KEY("attention.head_count_kv"), p->n_head_kv)) ||
	    (rv = gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), p->rms_eps)) ||
	    (rv = gguf_writer_set_f32(w, KEY("rope.freq_base"), p->rope_base)) ||
	    (rv = gguf_writer_set_u32(w, KEY("rope.dimension_count"), p->n_rot)) ||
	    (rv = gguf_writer_set_u32(w, KEY("vocab_size"), s->n_vocab)))
		return rv;
	if (p->n_ctx_orig)
		rv = gguf_writer_set_u32(w, KEY("rope.scaling.original_context_length"),
		                         p->n_ctx_orig);
	if (rv == ORCH_OK && p->head_dim && !p->gpt_oss && /* qwen3: its own head size */
	    ((rv = gguf_writer_set_u32(w, KEY("attention.key_length"), p->head_dim)) ||
	     (rv = gguf_writer_set_u32(w, KEY("attention.value_length"), p->head_dim))))
		return rv;
	if (rv == ORCH_OK && p->n_expert > 0 && !p->gpt_oss && /* qwen3moe */
	    ((rv = gguf_writer_set_u32(w, KEY("expert_count"), p->n_expert)) ||
	     (rv = gguf_writer_set_u32(w, KEY("expert_used_count"), p->n_expert_used)) ||
	     (rv = gguf_writer_set_u32(w, KEY("expert_feed_forward_length"), p->n_ff_exp))))
		return rv;
	if (rv == ORCH_OK && p->gemma3 &&
	    ((rv = gguf_writer_set_f32(w, KEY("rope.freq_base_swa"), 10000.0f)) ||
	     (rv = gguf_writer_set_u32(w, KEY("attention.sliding_window"), p->n_swa))))
		return rv;
	if (rv == ORCH_OK && p->rope_linear > 0 &&
	    ((rv = gguf_writer_set_str(w, KEY("rope.scaling.type"), "linear")) ||
	     (rv = gguf_writer_set_f32(w, KEY("rope.scaling.factor"), p->rope_linear))))
		return rv;
	if (rv == ORCH_OK && p->yarn_factor > 0 && !p->gpt_oss && /* mistral3 */
	    ((rv = gguf_writer_set_str(w, KEY("rope.scaling.type"), "yarn")) ||
	     (rv = gguf_writer_set_f32(w, KEY("rope.scaling.factor"), p->yarn_factor)) ||
	     (rv = gguf_writer_set_u32(w, KEY("rope.scaling.original_context_length"),
	                               p->yarn_orig_ctx)) ||
	     (rv = gguf_writer_set_f32(w, KEY("rope.scaling.yarn_beta_fast"), 32.0f)) ||
	     (rv = gguf_writer_set_f32(w, KEY("rope.scaling.yarn_beta_slow"), 1.0f)) ||
	     (rv = gguf_writer_set_f32(w, KEY("rope.scaling.yarn_log_multiplier"),
	                               p->yarn_log_mul))))
		return rv;
	if (rv == ORCH_OK && p->attn_temp_scale > 0 &&
	    (rv = gguf_writer_set_f32(w, KEY("attention.temperature_scale"), p->attn_temp_scale)))
		return rv;
	if (rv == ORCH_OK && p->gpt_oss &&
	    ((rv = gguf_writer_set_u32(w, KEY("attention.key_length"), p->head_dim)) ||
	     (rv = gguf_writer_set_u32(w, KEY("attention.value_length"), p->head_dim)) ||
	     (rv = gguf_writer_set_u32(w, KEY("expert_count"), p->n_expert)) ||
	     (rv = gguf_writer_set_u32(w, KEY("expert_used_count"), p->n_expert_used)) ||
	     (rv = gguf_writer_set_u32(w, KEY("expert_feed_forward_length"), p->n_ff)) ||
	     (rv = gguf_writer_set_u32(w, KEY("attention.sliding_window"), p->n_swa)) ||
	     (rv = gguf_writer_set_str(w, KEY("rope.scaling.type"), "yarn")) ||
	     (rv = gguf_writer_set_f32(w, KEY("rope.scaling.factor"), p->yarn_factor)) ||
	     (rv = gguf_writer_set_u32(w, KEY("rope.scaling.original_context_length"),
	                               p->yarn_orig_ctx))))
		return rv;
#undef KEY
	return rv;
}

static orch_err
set_metadata(struct gguf_writer *w, const struct synth *s)
{
	orch_err rv;
	bool quantized = ggml_type_get(s->mix.base)->quantized || s->p->gpt_oss;
	/* gpt-oss: llama.cpp's MOSTLY_MXFP4_MOE, what its converter writes for the real files */
	uint32_t ftype = s->p->gpt_oss ? 38 : s->mix.ftype;

	if ((rv = gguf_writer_set_str(w, "general.architecture", s->p->arch)) ||
	    (rv = gguf_writer_set_str(w, "general.name", s->p->name)) ||
	    (rv = gguf_writer_set_u32(w, "general.file_type", ftype)) ||
	    (quantized && (rv = gguf_writer_set_u32(w, "general.quantization_version", 2))) ||
	    (rv = gguf_writer_set_str(w, "orch.synth.preset", s->p->name)) ||
	    (rv = gguf_writer_set_str(w, "orch.synth.quant", s->mix.name)) ||
	    (rv = gguf_writer_set_u64(w, "orch.synth.seed", s->seed)))
		return rv;
	return set_hparams(w, s);
}

/* Llama 3 rope scaling factors (factor 32, low 1, high 4, original context 8192). */
static void
llama3_rope_factors(const struct synth_preset *p, float *out, uint64_t n)
{
	const double factor = 32, lo = 1, hi = 4, old_ctx = 8192;
	const double lo_wavelen = old_ctx / lo, hi_wavelen = old_ctx / hi;

	for (uint64_t i = 0; i < n; i++) {
		double freq = 1.0 / pow((double)p->rope_base, (double)(2 * i) / (double)p->n_rot);
		double wavelen = 2 * M_PI / freq;
		if (wavelen < hi_wavelen) {
			out[i] = 1.0f;
		} else if (wavelen > lo_wavelen) {
			out[i] = (float)factor;
		} else {
			double smooth = (old_ctx / wavelen - lo) / (hi - lo);
			out[i] = (float)(1.0 / ((1 - smooth) / factor + smooth));
		}
	}
}

static void
gen_row(const struct synth *s, const struct stensor *t, struct rng *r, float *row)
{
	float std = 0.5f / sqrtf((float)t->ne[0]);

	for (uint64_t i = 0; i < t->ne[0]; i++) {
		float x = rng_normalish(r);
		row[i] = t->kind == K_WEIGHT ? std * x
		         : t->kind == K_NORM ? 1.0f + 0.05f * x
		                             : 0.02f * x;
	}
	if (t->kind == K_ROPE)
		llama3_rope_factors(s->p, row, t->ne[0]);
}

static orch_err
fill(void *ctx, size_t index, const char *name, void *dst, uint64_t nbytes)
{
	const struct synth *s = ctx;
	const struct stensor *t = &s->t[index];
	uint64_t row_bytes;
	struct rng r;
	float *row;
	orch_err rv = ORCH_OK;

	uint64_t rows = t->ne[1] * t->ne[2];
	if (ggml_row_bytes(t->type, t->ne[0], &row_bytes) != ORCH_OK ||
	    row_bytes * rows != nbytes || strcmp(name, t->name) != 0)
		return ORCH_EINTERNAL;
	row = orch_calloc((size_t)t->ne[0], sizeof(*row));
	if (row == NULL)
		return ORCH_ENOMEM;
	rng_seed_str(&r, s->seed, t->name);
	for (uint64_t i = 0; i < rows && rv == ORCH_OK; i++) {
		gen_row(s, t, &r, row);
		rv = quant_row(t->type, row, (uint8_t *)dst + i * row_bytes, t->ne[0]);
	}
	orch_free(row);
	return rv;
}

static orch_err
check_opts(const struct synth_opts *o, struct synth *s, struct orch_errinfo *reterr)
{
	const char *quant = o->quant ? o->quant : "F32";

	s->p = synth_preset_find(o->preset ? o->preset : "");
	if (s->p == NULL)
		return orch_errf(
		        reterr, ORCH_EINVAL,
		        "unknown preset '%s' (presets: qwen2.5-0.5b, qwen3-0.6b, qwen3-30b-a3b, "
		        "gemma3-1b, gemma3-12b, ministral3-3b, mistral-small-3, phi3-mini-4k, "
		        "llama-3.2-1b, gpt-oss-20b, tiny-llama, tiny-qwen2, tiny-qwen3, "
		        "tiny-qwen3moe, tiny-gemma3, tiny-mistral3, tiny-phi3, tiny-gpt-oss, "
		        "tiny-gpt-oss-narrow)",
		        o->preset ? o->preset : "");
	if (synth_mix_parse(quant, &s->mix) != ORCH_OK)
		return orch_errf(
		        reterr, ORCH_EINVAL,
		        "unknown quant '%s' (types: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K; mixes: Q4_K_M Q8_0)",
		        quant);
	if (o->metadata_from != NULL && o->vocab_path != NULL)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "--vocab and --metadata-from both give the vocabulary: use one");
	if (o->layers > 1024)
		return orch_errf(reterr, ORCH_EINVAL, "--layers %u is out of range 1..1024",
		                 o->layers);
	s->n_layer = o->layers ? o->layers : s->p->n_layer;
	s->seed = o->seed;
	return ORCH_OK;
}

orch_err
synth_write(const struct synth_opts *o, struct orch_errinfo *reterr)
{
	struct synth s = {0};
	struct gguf_writer *w = NULL;
	orch_err rv;

	if ((rv = check_opts(o, &s, reterr)) != ORCH_OK)
		return rv;
	s.n_vocab = s.p->n_vocab;
	if ((rv = gguf_writer_new(&w)) != ORCH_OK)
		return orch_errf(reterr, rv, "out of memory");
	if ((rv = set_metadata(w, &s)) != ORCH_OK) {
		orch_errf(reterr, rv, "setting metadata failed");
		goto out;
	}
	const char *vocab = o->metadata_from ? o->metadata_from : o->vocab_path;
	if ((rv = synth_vocab_write(w, vocab, s.p->n_vocab, &s.n_vocab, reterr)))
		goto out;
	/* The vocabulary decides the embedding rows; vocab_size is replaced in place. */
	char key[96];
	snprintf(key, sizeof(key), "%s.vocab_size", s.p->arch);
	if ((rv = gguf_writer_set_u32(w, key, s.n_vocab)) != ORCH_OK) {
		orch_errf(reterr, rv, "setting metadata failed");
		goto out;
	}
	if (o->metadata_from != NULL &&
	    (rv = synth_meta_from(&w, s.p->arch, o->metadata_from, reterr)) != ORCH_OK)
		goto out;
	rv = build_tensors(&s);
	for (size_t i = 0; i < s.n && rv == ORCH_OK; i++)
		rv = gguf_writer_add_tensor(w, s.t[i].name, s.t[i].type, s.t[i].n_dims, s.t[i].ne,
		                            NULL);
	if (rv != ORCH_OK) {
		orch_errf(reterr, rv, "building the tensor list failed");
		goto out;
	}
	rv = gguf_writer_write_file(w, o->out, fill, &s, reterr);
out:
	gguf_writer_free(w);
	orch_free(s.t);
	return rv;
}
