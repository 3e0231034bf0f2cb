#pragma once
/*
 * model.h - a model as the engine sees it: hyper-parameters from GGUF
 * metadata and, per layer, the weight tensors of the architecture, mapped
 * from GGUF tensor names with their shapes checked. One file per
 * architecture (llama.c, qwen2.c, qwen3.c, qwen3moe.c, phi3.c, gpt_oss.c, gemma3.c,
 * mistral3.c) fills it; nothing above this layer knows the tensor names.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

struct gguf_file;
struct gguf_tensor;

enum model_arch {
	MODEL_LLAMA,
	MODEL_QWEN2,
	MODEL_PHI3,
	MODEL_GPT_OSS,
	MODEL_QWEN3,
	MODEL_QWEN3MOE,
	MODEL_GEMMA3,
	MODEL_MISTRAL3
};

/*
 * How a token's router logits become its experts and their weights:
 * - MODEL_MOE_SOFTMAX_CHOSEN (gpt-oss; llama.cpp's SOFTMAX_WEIGHT gating): the top
 *   n_expert_used logits, weighted by a softmax over those logits alone;
 * - MODEL_MOE_SOFTMAX_ALL (qwen3moe; llama.cpp's SOFTMAX gating): a softmax over every
 *   expert's logit, the top n_expert_used probabilities, divided by their sum when
 *   moe_norm_w (Qwen's norm_topk_prob).
 */
enum model_moe_gating { MODEL_MOE_SOFTMAX_CHOSEN, MODEL_MOE_SOFTMAX_ALL };

struct model_hparams {
	enum model_arch arch;
	uint32_t n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx_train;
	uint32_t head_dim, n_rot;
	float rope_base, rms_eps;
	bool rope_neox; /* pairs (i, i + n_rot/2) instead of (2i, 2i + 1) */
	/* YaRN RoPE scaling (yarn_factor 0: none), as ggml_rope_ext takes it */
	float yarn_factor, yarn_beta_fast, yarn_beta_slow;
	uint32_t yarn_orig_ctx;
	float yarn_attn_factor; /* the rotation's magnitude before ggml's own 1 + 0.1 ln factor:
	                           model_yarn_attn_factor's (0: 1) */
	/* mixture of experts (n_expert 0: a dense FFN of n_ff) */
	uint32_t n_expert, n_expert_used, n_ff_exp;
	enum model_moe_gating moe_gating;
	bool moe_norm_w;     /* MODEL_MOE_SOFTMAX_ALL: the chosen weights renormalized to sum 1 */
	bool moe_swiglu_oai; /* gpt-oss's clamped SwiGLU in the experts, else silu(gate) · up */
	/* sliding-window attention: a layer il with il % swa_pattern < swa_pattern - 1 sees
	 * only its last n_swa positions, the query's own included (0: none) */
	uint32_t n_swa, swa_pattern;
	/* gemma3 (0 / false: as the other architectures) */
	float rope_base_swa;   /* a sliding-window layer's RoPE base (0: rope_base) */
	float rope_freq_scale; /* linear RoPE scaling of the other layers' positions (0: none) */
	float embd_scale;      /* the token embeddings multiplied by it (√n_embd) */
	float attn_scale;      /* each query multiplied by it after RoPE, the scores then not by
	                          1/√head_dim */
	float final_softcap;   /* logits = c · tanh(logits / c) */
	bool ffn_gelu;         /* GeGLU: gelu_tanh(gate) · up instead of silu(gate) · up */
	/* mistral3 (Ministral 3): Llama 4's query temperature after RoPE (0: none) */
	float attn_temp_scale;
	uint32_t attn_temp_floor; /* positions per step of the temperature (> 0 with a scale) */
};

/*
 * model_attn_temp - the factor @hp's queries at position @pos are multiplied by after RoPE,
 * as llama.cpp's llm_graph_input_attn_temp computes it (in double, then rounded):
 * log(floor(pos / attn_temp_floor) + 1) · attn_temp_scale + 1. Only for attn_temp_scale != 0.
 */
static inline float
model_attn_temp(const struct model_hparams *hp, uint32_t pos)
{
	float steps = floorf((float)pos / (float)hp->attn_temp_floor);

	return (float)(log((double)steps + 1.0) * (double)hp->attn_temp_scale + 1.0);
}

/*
 * model_layer_swa - whether layer @il of @hp attends over a sliding window. Such a layer's
 * KV cache is a ring of model_swa_cells() cells per sequence (gguf/model_info.h).
 */
static inline bool
model_layer_swa(const struct model_hparams *hp, uint32_t il)
{
	return hp->n_swa > 0 && hp->swa_pattern > 0 && il % hp->swa_pattern < hp->swa_pattern - 1;
}

/* YaRN's rotation parameters as ggml_rope_ext takes them (rope.scaling.type yarn). */
struct model_yarn {
	float freq_scale, ext_factor, attn_factor; /* 1 / factor, 1, 1 */
	float corr_dims[2];                        /* the ramp's first and last dimension */
};

/*
 * model_yarn_params - @ret for @n_rot rotated dims, rope @base, @factor over
 * @orig_ctx, @beta_fast and @beta_slow, the rotation's magnitude @attn_factor (0: 1;
 * model_yarn_attn_factor's), with ggml's arithmetic: one function for both backends,
 * so they rotate by the same floats.
 */
void model_yarn_params(uint32_t n_rot, float base, float factor, uint32_t orig_ctx, float beta_fast,
                       float beta_slow, float attn_factor, struct model_yarn *ret);

/*
 * model_yarn_attn_factor - YaRN's attention factor as llama.cpp's context computes it
 * for rope.scaling.type yarn and scaling @factor (≥ 1): with @log_mul (rope.scaling.
 * yarn_log_multiplier, HF's mscale_all_dim) not 0, mscale(factor, 1) / mscale(factor,
 * log_mul), else mscale(factor, 1), where mscale(s, m) = 0.1 · m · ln s + 1; then times
 * 1 / (1 + 0.1 ln factor) (ggml multiplies each rotation by that again) and times
 * @rope_attn_factor (rope.scaling.attn_factor, 1 unless the file says). In float, in
 * llama.cpp's order of operations: 1 for gpt-oss's factor 32, exactly.
 */
float model_yarn_attn_factor(float factor, float log_mul, float rope_attn_factor);

/*
 * model_gelu_table - @tab[h] (65536 floats) = GELU's tanh approximation, as
 * ggml_gelu_f32 computes it in float, of F16 bits h, rounded to F16: ggml's CPU
 * table (GGML_GELU_FP16). One table for both backends (cpu_geglu, cuk_geglu), so
 * their GeGLU gives the same bits whatever the device's tanhf.
 */
void model_gelu_table(float *tab);

/* One layer's tensors; absent ones are NULL (fused or not in this architecture). */
struct model_layer {
	const struct gguf_tensor *attn_norm;       /* [n_embd] */
	const struct gguf_tensor *wq, *wk, *wv;    /* [n_embd, q/kv width] */
	const struct gguf_tensor *wqkv;            /* [n_embd, q + 2 kv] (phi3) */
	const struct gguf_tensor *bq, *bk, *bv;    /* [width] (qwen2) */
	const struct gguf_tensor *q_norm, *k_norm; /* [head_dim]: RMSNorm of each head (qwen3) */
	const struct gguf_tensor *wo;              /* [q width, n_embd] */
	const struct gguf_tensor *ffn_norm;        /* [n_embd] */
	const struct gguf_tensor *w_gate, *w_up;   /* [n_embd, n_ff] */
	const struct gguf_tensor *w_gate_up;       /* [n_embd, 2 n_ff] (phi3: gate first) */
	const struct gguf_tensor *w_down;          /* [n_ff, n_embd] */
	/* gemma3: RMSNorms of the attention's and the FFN's outputs before each residual add */
	const struct gguf_tensor *attn_post_norm, *ffn_post_norm; /* [n_embd] */
	/* gpt-oss */
	const struct gguf_tensor *bo;    /* [n_embd] attn_output.bias */
	const struct gguf_tensor *sinks; /* [n_head] a logit in every softmax's denominator */
	/* mixture of experts (gpt-oss, qwen3moe) */
	const struct gguf_tensor *router;   /* [n_embd, n_expert] ffn_gate_inp (gpt-oss: F32) */
	const struct gguf_tensor *router_b; /* [n_expert] (gpt-oss) */
	/* [n_embd, n_ff_exp, n_expert] gate and up, [n_ff_exp, n_embd, n_expert] down: expert
	 * e's matrix is rows e·ne1 .. (e+1)·ne1 - 1; biases [ne1, n_expert] (gpt-oss) */
	const struct gguf_tensor *gate_exps, *up_exps, *down_exps;
	const struct gguf_tensor *gate_exps_b, *up_exps_b, *down_exps_b;
};

struct model {
	struct model_hparams hp;
	const struct gguf_tensor *tok_embd;    /* [n_embd, n_vocab] */
	const struct gguf_tensor *output_norm; /* [n_embd] */
	const struct gguf_tensor *output;      /* [n_embd, n_vocab]; tok_embd when tied */
	const struct gguf_tensor *rope_freqs;  /* [n_rot/2] or NULL (Llama 3 scaling) */
	struct model_layer *layers;            /* [n_layer] */
};

/*
 * model_load - describe the model in @f (which must outlive it). Errors name
 * what is wrong: ORCH_EUNSUPPORTED for an unknown general.architecture or a
 * rope scaling variant orch does not implement, ORCH_ENOTFOUND for a missing
 * key or tensor, ORCH_EGGUF_SHAPE for a tensor of the wrong shape,
 * ORCH_EUNSUPPORTED for a tensor type the engine cannot compute with.
 */
orch_err model_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr);

/* model_free - free what model_load allocated; the struct may be reused. */
void model_free(struct model *m);

/*
 * model_for_each_tensor - @fn on each distinct tensor of @m: the embedding,
 * output norm, output (unless tied), rope factors, then each layer's.
 */
void model_for_each_tensor(const struct model *m, void (*fn)(const struct gguf_tensor *, void *),
                           void *ctx);

/*
 * model_arch_name - "llama", "qwen2", "phi3", "gpt-oss", "qwen3", "qwen3moe", "gemma3",
 * "mistral3".
 */
const char *model_arch_name(enum model_arch a);

/* ---- for the per-architecture files ---- */

/* model_tensor - tensor @name with dims @ne0 × @ne1 (@ne1 0: 1-D); NULL and an error when @required
 * and absent. */
const struct gguf_tensor *model_tensor(const struct gguf_file *f, const char *name, uint64_t ne0,
                                       uint64_t ne1, bool required, orch_err *rv,
                                       struct orch_errinfo *reterr);

/*
 * model_key_u32, model_key_f32 - key "@arch.@suffix" into *@out: an integer
 * 1..2^24, a float; when absent, an error naming it if @required, else
 * ORCH_OK with *@out unchanged (the caller's default).
 */
orch_err model_key_u32(const struct gguf_file *f, const char *arch, const char *suffix,
                       uint32_t *out, bool required, struct orch_errinfo *reterr);
orch_err model_key_f32(const struct gguf_file *f, const char *arch, const char *suffix, float *out,
                       bool required, struct orch_errinfo *reterr);

/*
 * model_map_ends - token_embd.weight (its rows are the vocabulary),
 * output_norm.weight and output.weight, shapes checked; with @tied_ok an
 * absent output.weight means tied embeddings, else it is an error.
 */
orch_err model_map_ends(const struct gguf_file *f, struct model *m, bool tied_ok,
                        struct orch_errinfo *reterr);

/* model_tensor3 - model_tensor for a 3-D tensor of @ne0 × @ne1 × @ne2 (experts), required. */
const struct gguf_tensor *model_tensor3(const struct gguf_file *f, const char *name, uint64_t ne0,
                                        uint64_t ne1, uint64_t ne2, orch_err *rv,
                                        struct orch_errinfo *reterr);

orch_err model_llama_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr);
orch_err model_qwen2_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr);
orch_err model_qwen3_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr);
orch_err model_qwen3moe_load(const struct gguf_file *f, struct model *m,
                             struct orch_errinfo *reterr);
orch_err model_phi3_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr);
orch_err model_gpt_oss_load(const struct gguf_file *f, struct model *m,
                            struct orch_errinfo *reterr);
orch_err model_gemma3_load(const struct gguf_file *f, struct model *m, struct orch_errinfo *reterr);
orch_err model_mistral3_load(const struct gguf_file *f, struct model *m,
                             struct orch_errinfo *reterr);
